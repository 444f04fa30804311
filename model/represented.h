// The represented model (scenario `workload.represents`): the model whose communication and
// compute a run's timing stands for, beside the small model that really trains (`workload.model`,
// which gives the accuracy). docs/guide/represented.md, docs/guide/represented.md.
//
// A catalog entry gives the parameter count by the architecture's layer formula, from the
// published configuration (each entry cites it); an explicit declaration gives a count or a list
// of tensor shapes. The engine scales every tensor-carrying message and every per-element compute
// charge by represented / trained parameters (engine/transport/transport.h send_data, the
// embedded cluster's compute charge); the arithmetic runs on the trained model.
// Pure data and arithmetic: no engine, no JSON beyond the report mapping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace geotb::model {

/// A decoder-only transformer as its configuration file describes it.
struct TransformerShape {
  uint64_t layers = 0;
  uint64_t hidden = 0;         ///< d_model
  uint64_t heads = 0;
  uint64_t kv_heads = 0;       ///< grouped-query attention (= heads without GQA)
  uint64_t ffn = 0;            ///< MLP inner width
  uint64_t vocab = 0;
  uint64_t positions = 0;      ///< learned position embeddings (GPT-2); 0: rotary (Llama)
  bool gated_mlp = false;      ///< SwiGLU: gate, up and down projections (Llama); else fc + proj (GPT-2)
  bool biases = false;         ///< linear layers and norms with biases (GPT-2's LayerNorm); else RMSNorm, no bias
  bool tied_embeddings = false;
};

/// Parameters of `s` by its layer formula:
///   embeddings  vocab·d (+ positions·d) (+ vocab·d for an untied output head)
///   per layer   attention d·d (q) + 2·d·kv_heads·(d/heads) (k, v) + d·d (o), MLP (2 or 3)·d·ffn,
///               norms 2·d (GPT-2: ·2 for the bias, plus every linear layer's bias)
///   final norm  d (·2 with bias)
uint64_t transformer_params(const TransformerShape& s);
/// The same parameters as tensors (elements each), in the Hugging Face parameter order of a Llama
/// (token embedding, per layer: input norm, q, k, v, o, post-attention norm, then gate, up, down
/// or fc, proj, each weight followed by its bias; the final norm; an untied output head). GPT-2's
/// fused c_attn is counted as its q, k and v parts. What DDP's buckets are cut from.
std::vector<uint64_t> transformer_tensors(const TransformerShape& s);
/// The same tensors' shapes as PyTorch holds them (a linear layer's weight is (out, in), an
/// embedding (vocab, d), a norm (d)): what PowerSGD views as matrices.
std::vector<std::vector<int64_t>> transformer_shapes(const TransformerShape& s);

struct RepresentedEntry {
  std::string_view name;       ///< catalog key ("llama3-70b")
  std::string_view display;    ///< "Llama 3 70B"
  TransformerShape shape;
  uint64_t sequence_length;    ///< the published context length: tokens per sample
  std::string_view source;     ///< the configuration the shape is from
};

const std::vector<RepresentedEntry>& represented_catalog();
/// The entry named `name` (case-insensitive), or nullptr.
const RepresentedEntry* find_represented(std::string_view name);
/// "gpt2-124m, gpt2-1.5b, ...": the catalog's keys, for error messages.
std::string represented_names();

/// What a run represents (the report's context.represented_model).
struct RepresentedModel {
  std::string name;            ///< catalog key, or the scenario's name for an explicit model
  uint64_t params = 0;         ///< parameters (float32 gradient elements per replica)
  std::string how;             ///< "catalog layer formula", "declared count" or "declared tensors"
  std::string source;          ///< where the count comes from
  uint64_t sequence_length = 0;  ///< tokens per sample (0: not a language model)
  uint64_t trained_params = 0; ///< the trained proxy's parameters
  /// represented / trained parameters: what every tensor message and per-element charge is scaled by.
  double scale() const { return trained_params ? static_cast<double>(params) / static_cast<double>(trained_params) : 1.0; }
  bool operator==(const RepresentedModel&) const = default;
};
void to_json(nlohmann::json& j, const RepresentedModel& r);
void from_json(const nlohmann::json& j, RepresentedModel& r);

/// Parameters of a list of tensor shapes (each a list of positive dimensions); throws
/// std::invalid_argument naming the tensor and dimension for an empty shape or a dimension <= 0.
uint64_t tensor_params(const std::vector<std::vector<int64_t>>& shapes);

}  // namespace geotb::model
