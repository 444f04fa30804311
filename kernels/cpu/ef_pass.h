// The streaming pass of the CPU compress_ef (internal; exposed for tests):
//   v = acc[i] + residual[i]; residual[i] = v; (i, v) appended to (cidx, cval) if key(v) >= t_low.
// Candidates are appended in index order; the first min(count, cap) are stored and all are counted
// (a count above cap means "overflow": the caller falls back). non_finite counts Inf/NaN values of v.
#pragma once

#include <cstddef>
#include <cstdint>

namespace geotb::kernels::cpu {

struct PassResult {
  size_t candidates;  ///< elements with key >= t_low (may exceed cap: then only cap were stored)
  size_t non_finite;
};

/// Dispatches to the AVX2 version when the CPU has it, else the portable one.
PassResult ef_pass(const float* acc, float* res, size_t n, uint32_t t_low, uint32_t* cidx, float* cval, size_t cap);

/// Portable C++ (auto-vectorised inner loop).
PassResult ef_pass_portable(const float* acc, float* res, size_t n, uint32_t t_low, uint32_t* cidx, float* cval,
                            size_t cap);

/// True when ef_pass_avx2 may be called on this machine.
bool has_avx2();

/// AVX2 intrinsics (x86-64 only; aborts elsewhere). Same results as ef_pass_portable.
PassResult ef_pass_avx2(const float* acc, float* res, size_t n, uint32_t t_low, uint32_t* cidx, float* cval,
                        size_t cap);

}  // namespace geotb::kernels::cpu
