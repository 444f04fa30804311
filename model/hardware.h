// Compute derived from the hardware instead of guessed: a catalog of accelerators (vendor peak
// dense BF16 FLOP/s and memory bandwidth, each entry citing its datasheet) and the derivation of a
// compute profile from it (docs/guide/clocks.md, scenario `compute.gpu`):
//
//   step_time = 6 · params · tokens_per_worker_per_step / (peak_dense_bf16_flops · mfu)
//
// 6 FLOPs per parameter and token: 2 for the forward pass, 4 for the backward (Kaplan et al.,
// "Scaling Laws for Neural Language Models", 2020, section 2.1; the convention MFU is defined
// with in Chowdhery et al., "PaLM", 2022, appendix B). Per-element charges of the virtual clock:
//   reduce   = 12 bytes (two float32 read, one written) / memory bandwidth;
//   compress = this repository's measured H200 figure (docs/measurements/gpu-kernels.md: 64M
//              float32 elements at density 1 %, 97.23 G elements/s) scaled by the ratio of the
//              H200's memory bandwidth to the GPU's (an extrapolation, labelled as such).
// Pure data and arithmetic: no engine, no JSON beyond the report mapping.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace geotb::model {

struct GpuSpec {
  std::string_view name;           ///< catalog key, lower case ("h100-sxm")
  std::string_view display;        ///< "NVIDIA H100 SXM5 80GB"
  double peak_dense_bf16_flops;    ///< FLOP/s, dense BF16 tensor throughput (no structured sparsity)
  double memory_bytes_per_s;       ///< HBM bandwidth, bytes per second
  std::string_view source;         ///< the datasheet both figures are from
  /// GPU-to-GPU bandwidth inside a server (NVLink, Infinity Fabric), bytes per second per
  /// direction per GPU: what a worker of several GPUs shards its model over.
  double interconnect_bytes_per_s = 0;
  std::string_view interconnect_source;
};

/// Every accelerator geotb can derive compute for.
const std::vector<GpuSpec>& gpu_catalog();
/// The entry named `name` (case-insensitive), or nullptr.
const GpuSpec* find_gpu(std::string_view name);
/// "a100-sxm-80gb, h100-pcie, ...": the catalog's keys, for error messages.
std::string gpu_names();

/// The H200's compression rate measured in this repository (elements of the dense float32 tensor
/// per second, 64M elements at density 1 %): 97.23 G/s, ci/gpu-check.sh on 2026-12-04 17:33 UTC
/// with the device-side coding and CRC tree (75.16 G/s before the tree, 11.91 G/s before either).
inline constexpr double kH200CompressElementsPerS = 97.23e9;
inline constexpr double kH200MemoryBytesPerS = 4.8e12;

/// A compute profile derived from the hardware, with every input (the report's
/// context.compute_profile.derived).
struct ComputeDerivation {
  std::string gpu;                     ///< catalog key
  double peak_dense_bf16_flops = 0;    ///< FLOP/s
  std::string peak_source;
  double mfu = 0;                      ///< model FLOPs utilisation, (0, 1]
  double params = 0;                   ///< parameters of the model whose compute is charged
  double tokens_per_worker_per_step = 0;
  /// GPUs one worker stands for (docs/guide/represented.md): they hold one replica, sharded
  /// FSDP-style over the server's interconnect, and share its tokens.
  int gpus_per_worker = 1;
  double compute_s = 0;                ///< 6 N T / (gpus * peak * mfu)
  /// gpus_per_worker > 1: the sharding traffic per GPU and step (bf16 parameters all-gathered for
  /// the forward and the backward pass, gradients reduce-scattered: 3 (g - 1) / g * 2 N bytes)
  /// over the interconnect; FSDP prefetches it behind the compute, so a step takes the longer.
  double shard_comm_s = 0;
  std::string shard_source;
  double step_time_s = 0;              ///< max(compute_s, shard_comm_s)
  double reduce_ns_per_element = 0;
  std::string reduce_source;
  double compress_ns_per_element = 0;
  std::string compress_source;

  bool operator==(const ComputeDerivation&) const = default;
};
void to_json(nlohmann::json& j, const ComputeDerivation& d);
void from_json(const nlohmann::json& j, ComputeDerivation& d);

inline constexpr const char* kStepTimeFormula =
    "max(6 * params * tokens_per_worker_per_step / (gpus_per_worker * peak_dense_bf16_flops * mfu), "
    "3 * (gpus_per_worker - 1) / gpus_per_worker * 2 * params / interconnect_bytes_per_s)";

/// The derivation for `gpu` (inputs already validated: mfu in (0, 1], params > 0, tokens > 0,
/// gpus_per_worker >= 1).
ComputeDerivation derive_compute(const GpuSpec& gpu, double mfu, double params, double tokens_per_worker_per_step,
                                 int gpus_per_worker = 1);

/// "8.03e9", "70B", "1.5B", "124M", "7K" or a JSON number as a count (K, M, B, T: powers of
/// 1000); nullopt and `why` for anything else.
std::optional<double> parse_count(std::string_view text, std::string* why);

}  // namespace geotb::model
