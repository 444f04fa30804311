#include "model/hardware.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "model/catalog.h"
#include "model/json_fields.h"

namespace geotb::model {

namespace f = field;

const std::vector<GpuSpec>& gpu_catalog() {
  // Dense BF16: the datasheets list tensor throughput "with sparsity" (2:4 structured); the dense
  // figure is half of it, which NVIDIA's footnote states ("Specifications 1/2 lower without
  // sparsity") and AMD's table lists beside it.
  static const std::vector<GpuSpec> catalog = {
      {"a100-sxm-80gb", "NVIDIA A100 SXM4 80GB", 312e12, 2.039e12,
       "NVIDIA A100 Tensor Core GPU datasheet (2021): BF16 Tensor Core 312 TFLOPS (624 with sparsity), "
       "GPU memory bandwidth 2,039 GB/s (80GB SXM)",
       300e9, "NVIDIA A100 datasheet: NVLink 600 GB/s (bidirectional), 300 GB/s per direction"},
      {"h100-pcie", "NVIDIA H100 PCIe 80GB", 756e12, 2.0e12,
       "NVIDIA H100 Tensor Core GPU datasheet (2023): BF16 Tensor Core 1,513 TFLOPS with sparsity (756 "
       "dense), GPU memory bandwidth 2 TB/s (H100 PCIe)",
       300e9, "NVIDIA H100 datasheet: NVLink bridge 600 GB/s (H100 PCIe, bidirectional), 300 GB/s per direction"},
      {"h100-sxm", "NVIDIA H100 SXM5 80GB", 989e12, 3.35e12,
       "NVIDIA H100 Tensor Core GPU datasheet (2023): BF16 Tensor Core 1,979 TFLOPS with sparsity (989 "
       "dense), GPU memory bandwidth 3.35 TB/s (H100 SXM)",
       450e9, "NVIDIA H100 datasheet: NVLink 900 GB/s (H100 SXM, bidirectional), 450 GB/s per direction"},
      {"h200-sxm", "NVIDIA H200 SXM 141GB", 989e12, 4.8e12,
       "NVIDIA H200 Tensor Core GPU datasheet (2024): BF16 Tensor Core 1,979 TFLOPS with sparsity (989 "
       "dense), GPU memory bandwidth 4.8 TB/s (H200 SXM)",
       450e9, "NVIDIA H200 datasheet: NVLink 900 GB/s (bidirectional), 450 GB/s per direction"},
      {"mi300x", "AMD Instinct MI300X", 1307.4e12, 5.3e12,
       "AMD Instinct MI300X accelerator data sheet (2023): peak BF16 1307.4 TFLOPS dense (2614.9 with "
       "sparsity), peak memory bandwidth 5.3 TB/s",
       448e9, "AMD Instinct MI300X data sheet: peak Infinity Fabric link bandwidth 896 GB/s (7 links, "
       "bidirectional), 448 GB/s per direction"},
  };
  return catalog;
}

const GpuSpec* find_gpu(std::string_view name) { return find_in_catalog(gpu_catalog(), name); }

std::string gpu_names() { return catalog_names(gpu_catalog()); }

ComputeDerivation derive_compute(const GpuSpec& gpu, double mfu, double params, double tokens, int gpus_per_worker) {
  ComputeDerivation d;
  d.gpu = std::string(gpu.name);
  d.peak_dense_bf16_flops = gpu.peak_dense_bf16_flops;
  d.peak_source = std::string(gpu.source);
  d.mfu = mfu;
  d.params = params;
  d.tokens_per_worker_per_step = tokens;
  d.gpus_per_worker = gpus_per_worker;
  d.compute_s = 6 * params * tokens / (gpus_per_worker * gpu.peak_dense_bf16_flops * mfu);
  if (gpus_per_worker > 1 && gpu.interconnect_bytes_per_s > 0) {
    d.shard_comm_s = 3.0 * (gpus_per_worker - 1) / gpus_per_worker * 2 * params / gpu.interconnect_bytes_per_s;
    d.shard_source = fmt::format("FSDP over {} GPUs: 3 x ({} - 1) / {} x 2 bytes x params per GPU at {:g} GB/s ({})",
                                 gpus_per_worker, gpus_per_worker, gpus_per_worker, gpu.interconnect_bytes_per_s / 1e9,
                                 gpu.interconnect_source);
  }
  d.step_time_s = std::max(d.compute_s, d.shard_comm_s);
  d.reduce_ns_per_element = 12 / gpu.memory_bytes_per_s * 1e9;
  d.reduce_source = fmt::format("12 bytes per element (two float32 read, one written) at the memory bandwidth, {:g} "
                                "GB/s ({})",
                                gpu.memory_bytes_per_s / 1e9, gpu.display);
  d.compress_ns_per_element = 1e9 / kH200CompressElementsPerS * (kH200MemoryBytesPerS / gpu.memory_bytes_per_s);
  d.compress_source = fmt::format(
      "measured on an H200 (docs/measurements/gpu-kernels.md: 64M elements at density 1 %, {:g} G elements/s), "
      "scaled by memory bandwidth {:g} / {:g} GB/s: an extrapolation for other GPUs",
      kH200CompressElementsPerS / 1e9, kH200MemoryBytesPerS / 1e9, gpu.memory_bytes_per_s / 1e9);
  return d;
}

std::optional<double> parse_count(std::string_view text, std::string* why) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  double scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': case 'k': scale = 1e3; break;
      case 'M': scale = 1e6; break;
      case 'B': case 'G': scale = 1e9; break;
      case 'T': scale = 1e12; break;
      default: break;
    }
    if (scale != 1) s.remove_suffix(1);
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    if (why) *why = "expected a count: a number, optionally with K, M, B (or G) or T (powers of 1000), e.g. \"70B\"";
    return std::nullopt;
  }
  v *= scale;
  if (!std::isfinite(v) || v <= 0) {
    if (why) *why = "must be > 0";
    return std::nullopt;
  }
  return v;
}

void to_json(nlohmann::json& j, const ComputeDerivation& d) {
  j = {{"formula", std::string("step_time = ") + kStepTimeFormula},
       {"gpu", d.gpu},
       {"peak_dense_bf16_flops", d.peak_dense_bf16_flops},
       {"peak_source", d.peak_source},
       {"mfu", d.mfu},
       {"params", d.params},
       {"tokens_per_worker_per_step", d.tokens_per_worker_per_step},
       {"gpus_per_worker", d.gpus_per_worker},
       {"compute_s", d.compute_s},
       {"shard_comm_s", d.shard_comm_s},
       {"shard_source", d.shard_source},
       {"step_time_s", d.step_time_s},
       {"reduce_ns_per_element", d.reduce_ns_per_element},
       {"reduce_source", d.reduce_source},
       {"compress_ns_per_element", d.compress_ns_per_element},
       {"compress_source", d.compress_source}};
}

void from_json(const nlohmann::json& j, ComputeDerivation& d) {
  d.gpu = f::str(j, "gpu");
  d.peak_dense_bf16_flops = f::nonneg(j, "peak_dense_bf16_flops");
  d.peak_source = f::str(j, "peak_source");
  d.mfu = f::nonneg(j, "mfu");
  if (!(d.mfu > 0 && d.mfu <= 1)) f::fail("mfu", fmt::format("must be in (0, 1], got {}", d.mfu));
  d.params = f::nonneg(j, "params");
  d.tokens_per_worker_per_step = f::nonneg(j, "tokens_per_worker_per_step");
  d.step_time_s = f::nonneg(j, "step_time_s");
  // Reports written before workers of several GPUs: one GPU, the step all compute.
  d.gpus_per_worker = f::has(j, "gpus_per_worker") ? static_cast<int>(f::integer(j, "gpus_per_worker")) : 1;
  if (d.gpus_per_worker < 1) f::fail("gpus_per_worker", fmt::format("must be >= 1, got {}", d.gpus_per_worker));
  d.compute_s = f::has(j, "compute_s") ? f::nonneg(j, "compute_s") : d.step_time_s;
  d.shard_comm_s = f::has(j, "shard_comm_s") ? f::nonneg(j, "shard_comm_s") : 0;
  d.shard_source = f::has(j, "shard_source") ? f::str(j, "shard_source") : "";
  d.reduce_ns_per_element = f::nonneg(j, "reduce_ns_per_element");
  d.reduce_source = f::str(j, "reduce_source");
  d.compress_ns_per_element = f::nonneg(j, "compress_ns_per_element");
  d.compress_source = f::str(j, "compress_source");
  (void)f::str(j, "formula");  // written for readers; the value is the constant
}

}  // namespace geotb::model
