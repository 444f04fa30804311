// What the CUDA backend's .cu files share (include from .cu files only): grow-only buffers for
// their per-thread workspaces (a call reuses what the previous one allocated, so a steady-state call
// allocates nothing), the CUB temporary-storage idiom, and the shape of a grid-stride launch.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"

namespace geotb::kernels::cuda {

/// Where a GrowBuffer's memory lives: the device (cudaMalloc), or page-locked host memory
/// (cudaMallocHost), into which device-to-host copies are true DMA and cudaMemcpyAsync stays
/// asynchronous.
enum class Memory { kDevice, kPinnedHost };

/// At least `n` elements of T after reserve(n); freed on destruction (errors ignored: it may run
/// after the runtime shut down).
template <class T, Memory M>
struct GrowBuffer {
  T* p = nullptr;
  size_t cap = 0;
  void reserve(size_t n) {
    if (n <= cap && p) return;
    release();
    const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
    void* q = nullptr;
    if constexpr (M == Memory::kDevice) {
      GEOTB_CUDA_CHECK(cudaMalloc(&q, bytes));
    } else {
      GEOTB_CUDA_CHECK(cudaMallocHost(&q, bytes));
    }
    p = static_cast<T*>(q);
    cap = n;
  }
  GrowBuffer() = default;
  GrowBuffer(const GrowBuffer&) = delete;
  GrowBuffer& operator=(const GrowBuffer&) = delete;
  ~GrowBuffer() { release(); }

 private:
  void release() {
    if (!p) return;
    if constexpr (M == Memory::kDevice) {
      cudaFree(p);
    } else {
      cudaFreeHost(p);
    }
    p = nullptr;
    cap = 0;
  }
};

template <class T>
using DevArray = GrowBuffer<T, Memory::kDevice>;
template <class T>
using PinnedArray = GrowBuffer<T, Memory::kPinnedHost>;

/// Threads per block of the backend's grid-stride kernels, and the grid for n items: one thread
/// per item up to 65535 x 16 blocks.
inline constexpr int kThreads = 256;
inline unsigned grid_for(uint64_t n) {
  const uint64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<uint64_t>(blocks, 1, 65535ull * 16));
}

/// Runs a CUB entry point twice: once to size its temporary storage, once to do the work.
template <class F>
void with_temp(DevArray<unsigned char>& temp, F&& f) {
  size_t bytes = 0;
  GEOTB_CUDA_CHECK(f(static_cast<void*>(nullptr), bytes));
  temp.reserve(bytes);
  GEOTB_CUDA_CHECK(f(static_cast<void*>(temp.p), bytes));
}

}  // namespace geotb::kernels::cuda
