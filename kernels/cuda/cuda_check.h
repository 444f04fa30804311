// Error checking for the CUDA backend (include from .cu files only).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "kernels/compress.h"

namespace geotb::kernels::cuda {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw KernelError(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace geotb::kernels::cuda

#define GEOTB_CUDA_CHECK(x) ::geotb::kernels::cuda::check((x), #x)
