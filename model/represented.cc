#include "model/represented.h"

#include <fmt/format.h>

#include <stdexcept>

#include "model/catalog.h"
#include "model/json_fields.h"

namespace geotb::model {

namespace f = field;

uint64_t transformer_params(const TransformerShape& s) {
  const uint64_t d = s.hidden, head_dim = s.heads ? d / s.heads : 0, kv = s.kv_heads * head_dim;
  const uint64_t b = s.biases ? 1 : 0;
  uint64_t embed = s.vocab * d + s.positions * d;
  if (!s.tied_embeddings) embed += s.vocab * d;
  const uint64_t attn = (d * d + b * d) * 2 + (d * kv + b * kv) * 2;  // q, o; k, v
  const uint64_t mlp = s.gated_mlp ? 3 * d * s.ffn : (d * s.ffn + b * s.ffn) + (s.ffn * d + b * d);
  const uint64_t norms = 2 * d * (1 + b);
  return embed + s.layers * (attn + mlp + norms) + d * (1 + b);
}

std::vector<std::vector<int64_t>> transformer_shapes(const TransformerShape& s) {
  const auto d = static_cast<int64_t>(s.hidden), head_dim = s.heads ? d / static_cast<int64_t>(s.heads) : 0,
             kv = static_cast<int64_t>(s.kv_heads) * head_dim, ffn = static_cast<int64_t>(s.ffn),
             vocab = static_cast<int64_t>(s.vocab);
  std::vector<std::vector<int64_t>> t;
  auto linear = [&](int64_t in, int64_t out) {
    t.push_back({out, in});
    if (s.biases) t.push_back({out});
  };
  auto norm = [&] {
    t.push_back({d});
    if (s.biases) t.push_back({d});
  };
  t.push_back({vocab, d});
  if (s.positions) t.push_back({static_cast<int64_t>(s.positions), d});
  for (uint64_t l = 0; l < s.layers; ++l) {
    norm();
    linear(d, d);
    linear(d, kv);
    linear(d, kv);
    linear(d, d);
    norm();
    if (s.gated_mlp) {
      linear(d, ffn);
      linear(d, ffn);
      linear(ffn, d);
    } else {
      linear(d, ffn);
      linear(ffn, d);
    }
  }
  norm();
  if (!s.tied_embeddings) t.push_back({vocab, d});
  return t;
}

std::vector<uint64_t> transformer_tensors(const TransformerShape& s) {
  std::vector<uint64_t> t;
  for (const auto& shape : transformer_shapes(s)) t.push_back(tensor_params({shape}));
  return t;
}

const std::vector<RepresentedEntry>& represented_catalog() {
  // Shapes from each model's published configuration; the counts they give are the ones the
  // model cards state (tests/unit/represented_test.cc checks them to the parameter).
  static const std::vector<RepresentedEntry> catalog = {
      {"gpt2-124m", "GPT-2 124M", {12, 768, 12, 12, 3072, 50257, 1024, false, true, true}, 1024,
       "OpenAI GPT-2 small (Radford et al. 2019), Hugging Face openai-community/gpt2 config.json: n_layer 12, "
       "n_embd 768, n_head 12, n_positions 1024, vocab 50257, tied embeddings: 124,439,808 parameters"},
      {"gpt2-1.5b", "GPT-2 1.5B (XL)", {48, 1600, 25, 25, 6400, 50257, 1024, false, true, true}, 1024,
       "OpenAI GPT-2 XL, Hugging Face openai-community/gpt2-xl config.json: n_layer 48, n_embd 1600, n_head 25, "
       "n_positions 1024, vocab 50257, tied embeddings: 1,557,611,200 parameters"},
      {"tinyllama-1.1b", "TinyLlama 1.1B", {22, 2048, 32, 4, 5632, 32000, 0, true, false, false}, 2048,
       "TinyLlama/TinyLlama-1.1B (Zhang et al. 2024) config.json: 22 layers, hidden 2048, 32 heads, 4 KV heads, "
       "intermediate 5632, vocab 32000, untied: 1,100,048,384 parameters (the 1.1B model of OpenDiLoCo)"},
      {"llama3-8b", "Llama 3 8B", {32, 4096, 32, 8, 14336, 128256, 0, true, false, false}, 8192,
       "Meta Llama 3 8B, Hugging Face meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32 heads, "
       "8 KV heads, intermediate 14336, vocab 128256, untied: 8,030,261,248 parameters"},
      {"llama3-70b", "Llama 3 70B", {80, 8192, 64, 8, 28672, 128256, 0, true, false, false}, 8192,
       "Meta Llama 3 70B, Hugging Face meta-llama/Meta-Llama-3-70B config.json: 80 layers, hidden 8192, 64 heads, "
       "8 KV heads, intermediate 28672, vocab 128256, untied: 70,553,706,496 parameters"},
      {"llama3.1-405b", "Llama 3.1 405B", {126, 16384, 128, 8, 53248, 128256, 0, true, false, false}, 8192,
       "Meta Llama 3.1 405B, Hugging Face meta-llama/Llama-3.1-405B config.json: 126 layers, hidden 16384, 128 "
       "heads, 8 KV heads, intermediate 53248, vocab 128256, untied: 405,853,388,800 parameters (pre-training "
       "sequence length 8192, Llama 3 paper section 3.4)"},
  };
  return catalog;
}

const RepresentedEntry* find_represented(std::string_view name) { return find_in_catalog(represented_catalog(), name); }

std::string represented_names() { return catalog_names(represented_catalog()); }

uint64_t tensor_params(const std::vector<std::vector<int64_t>>& shapes) {
  uint64_t total = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].empty()) throw std::invalid_argument(fmt::format("tensors[{}]: empty shape", i));
    uint64_t n = 1;
    for (size_t k = 0; k < shapes[i].size(); ++k) {
      if (shapes[i][k] <= 0)
        throw std::invalid_argument(fmt::format("tensors[{}][{}]: {}: must be > 0", i, k, shapes[i][k]));
      n *= static_cast<uint64_t>(shapes[i][k]);
    }
    total += n;
  }
  return total;
}

void to_json(nlohmann::json& j, const RepresentedModel& r) {
  j = {{"name", r.name},
       {"params", r.params},
       {"how", r.how},
       {"source", r.source},
       {"sequence_length", r.sequence_length},
       {"trained_params", r.trained_params},
       {"scale", r.scale()}};
}

void from_json(const nlohmann::json& j, RepresentedModel& r) {
  r.name = f::str(j, "name");
  r.params = f::count(j, "params");
  if (r.params == 0) f::fail("params", "must be > 0");
  r.how = f::str(j, "how");
  r.source = f::str(j, "source");
  r.sequence_length = f::count(j, "sequence_length");
  r.trained_params = f::count(j, "trained_params");
  (void)f::nonneg(j, "scale");  // written for readers: params / trained_params
}

}  // namespace geotb::model
