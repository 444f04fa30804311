// Argument validation shared by the CPU and CUDA entry points (the boundary: the hot paths
// trust what passes here).
#pragma once

#include <cstddef>

#include "kernels/compress.h"

namespace geotb::kernels {

/// Throws KernelError naming the field and value if cfg or the buffers break the contract:
/// density finite in (0, 1]; block in [1, kMaxBlock]; enums in range; n <= kMaxElements;
/// acc/residual non-null when n > 0.
void validate_compress_args(const float* acc, const float* residual, size_t n, const CompressConfig& cfg);

/// Throws KernelError for `count` non-finite values in v[0..n) (reports the first one).
[[noreturn]] void throw_non_finite(const float* v, size_t n, size_t count);

}  // namespace geotb::kernels
