// Measurements of this machine's compute, for a compute profile (`geotb calibrate`,
// docs/guide/gpu.md): one training step of a scenario's model, an element-wise reduction and one
// transformer block, each on a chosen device ("cpu", "cuda", "cuda:N"). Wall time around
// synchronised work: on a GPU every sample waits for the device before and after.
// libtorch is behind model/torch_learner.cc (the timing loop and the step) and
// model/torch_calibrate.cc (the rest).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/learner.h"
#include "model/report.h"

namespace geotb::engine {

/// Describes `device` (device_error(device) must be empty) for the report's `context.device` and a
/// profile's "device". On the CPU: name = the CPU's model name, multiprocessors = its hardware
/// threads, memory_bytes = 0, compute_capability and driver empty.
model::DeviceContext device_info(const std::string& device);

/// Seconds per repetition: median, minimum and maximum of `reps` samples after the warm-up.
struct Timing {
  double median_s = 0, min_s = 0, max_s = 0;
  int reps = 0;
};
/// The median, minimum and maximum of `samples` (throws std::invalid_argument when empty).
inline Timing summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(samples.begin(), samples.end());
  Timing t;
  t.reps = static_cast<int>(samples.size());
  const size_t n = samples.size();
  t.median_s = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  t.min_s = samples.front();
  t.max_s = samples.back();
  return t;
}

/// Times `work` on `device`: `warmup` untimed calls, then `reps` timed ones, each sample the wall
/// time from a synchronised device to a synchronised device.
Timing time_synchronised(const std::string& device, int warmup, int reps, const std::function<void()>& work);

/// One training step of `m` on m.device: forward and backward on `batch` random examples, then the
/// plain SGD update p -= 0.01 g on the device, all on the device (no host mirrors: what a GPU
/// training system does; geotb's own replay adds a copy each way, docs/guide/gpu.md).
Timing time_training_step(const ModelConfig& m, size_t batch, int warmup, int reps, uint64_t seed);

/// a += b on `n` float32 elements on `device`: the element-wise sum of an allreduce.
Timing time_reduce(const std::string& device, size_t n, int warmup, int reps);

/// One decoder block at a stated size: RMSNorm, causal multi-head self-attention
/// (scaled_dot_product_attention), RMSNorm, SwiGLU MLP; no biases. The default is Llama 3 8B's
/// width (4096, 32 heads, FFN 14336) without its grouped-query attention.
struct BlockConfig {
  int64_t d_model = 4096;
  int64_t heads = 32;
  int64_t ffn = 14336;
  int64_t seq = 2048;
  int64_t batch = 1;
  std::string dtype = "bf16";  ///< "bf16" or "fp32": parameters and activations
};
/// Empty if valid, else "block.field: value: why".
std::string validate(const BlockConfig& b);
struct BlockTiming {
  Timing time;          ///< forward + backward of batch x seq tokens
  double params = 0;    ///< 4 d^2 + 3 d ffn + 2 d
  /// Training FLOPs counted as 3 x forward: 3 tokens (2 (4 d^2 + 3 d ffn) + 2 seq d), the last term
  /// causal attention's scores and weighted sum (half of 4 seq d).
  double flops = 0;
};
BlockTiming time_transformer_block(const BlockConfig& b, const std::string& device, int warmup, int reps,
                                   uint64_t seed);

}  // namespace geotb::engine
