// Grow-only buffers for the CUDA backend's per-thread workspaces (include from .cu files only):
// a call reuses what the previous one allocated, so a steady-state call allocates nothing.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "kernels/cuda/cuda_check.h"

namespace geotb::kernels::cuda {

/// Device memory (cudaMalloc) for at least `n` elements after reserve(n).
template <class T>
struct DevArray {
  T* p = nullptr;
  size_t cap = 0;
  void reserve(size_t n) {
    if (n <= cap && p) return;
    if (p) cudaFree(p);
    p = nullptr;
    GEOTB_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
    cap = n;
  }
  DevArray() = default;
  DevArray(const DevArray&) = delete;
  DevArray& operator=(const DevArray&) = delete;
  ~DevArray() {
    if (p) cudaFree(p);  // errors ignored: may run after the runtime shut down
  }
};

/// Page-locked host memory (cudaMallocHost): device-to-host copies into it are true DMA and
/// cudaMemcpyAsync stays asynchronous.
template <class T>
struct PinnedArray {
  T* p = nullptr;
  size_t cap = 0;
  void reserve(size_t n) {
    if (n <= cap && p) return;
    if (p) cudaFreeHost(p);
    p = nullptr;
    GEOTB_CUDA_CHECK(cudaMallocHost(&p, std::max<size_t>(n, 1) * sizeof(T)));
    cap = n;
  }
  PinnedArray() = default;
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  ~PinnedArray() {
    if (p) cudaFreeHost(p);
  }
};

/// Runs a CUB entry point twice: once to size its temporary storage, once to do the work.
template <class F>
void with_temp(DevArray<unsigned char>& temp, F&& f) {
  size_t bytes = 0;
  GEOTB_CUDA_CHECK(f(static_cast<void*>(nullptr), bytes));
  temp.reserve(bytes);
  GEOTB_CUDA_CHECK(f(static_cast<void*>(temp.p), bytes));
}

}  // namespace geotb::kernels::cuda
