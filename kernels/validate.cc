#include "kernels/validate.h"

#include <cmath>
#include <string>

#include "kernels/index_coding.h"
#include "kernels/wire_format.h"

namespace geotb::kernels {

void validate_compress_args(const float* acc, const float* residual, size_t n, const CompressConfig& cfg) {
  auto bad = [](const std::string& m) { throw KernelError("compress_ef: " + m); };
  if (!(cfg.density > 0.0 && cfg.density <= 1.0))
    bad("CompressConfig.density=" + std::to_string(cfg.density) + " outside (0, 1]");
  if (cfg.block == 0 || cfg.block > kMaxBlock)
    bad("CompressConfig.block=" + std::to_string(cfg.block) + " outside [1, " + std::to_string(kMaxBlock) + "]");
  if (static_cast<uint8_t>(cfg.values) > static_cast<uint8_t>(ValueCoding::kFloat32))
    bad("CompressConfig.values=" + std::to_string(static_cast<int>(cfg.values)) + " unknown");
  if (static_cast<uint8_t>(cfg.rounding) > static_cast<uint8_t>(Rounding::kStochastic))
    bad("CompressConfig.rounding=" + std::to_string(static_cast<int>(cfg.rounding)) + " unknown");
  if (static_cast<uint8_t>(cfg.topk) > static_cast<uint8_t>(TopkMode::kSampledThreshold))
    bad("CompressConfig.topk=" + std::to_string(static_cast<int>(cfg.topk)) + " unknown");
  if (n > kMaxElements) bad("n=" + std::to_string(n) + " exceeds " + std::to_string(kMaxElements));
  if (n > 0 && (acc == nullptr || residual == nullptr)) bad("null acc or residual with n=" + std::to_string(n));
}

void throw_non_finite(const float* v, size_t n, size_t count) {
  size_t first = 0;
  while (first < n && std::isfinite(v[first])) ++first;
  throw KernelError("compress_ef: " + std::to_string(count) + " non-finite value(s) in acc + residual, first at index " +
                    std::to_string(first) + " (residual now holds acc + residual)");
}

}  // namespace geotb::kernels
