// CUDA backend of the compression kernels: the contract of kernels/compress.h on device buffers.
// No CUDA headers here (streams are passed as void*), so plain C++ code can call it.
//
// Results are bit-identical to the CPU backend for every mode (kExact and kSampledThreshold,
// nearest and stochastic rounding, INT8 and float32): the same sample positions, the same
// thresholds (the shared rank rule, sample_ranks), the same candidate set in the same order,
// and IEEE-rounded arithmetic with no FMA contraction (--fmad=false, explicit _rn intrinsics).
//
// Threading: each host thread has its own device workspace; calls are synchronous (they return
// after the work queued on `stream` has finished). The wire is produced / consumed in host memory:
// the body is coded and checked on the device, only the 40-byte header and the CRC combination run
// on the host, and the body crosses the bus once through pinned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/compress.h"

namespace geotb::kernels::cuda {

/// True if the CUDA runtime finds at least one usable device.
bool device_available();

/// compress_ef with d_acc and d_residual in device memory (n floats each).
CompressStats compress_ef(const float* d_acc, float* d_residual, size_t n, const CompressConfig& cfg,
                          std::vector<uint8_t>& wire, void* stream = nullptr);

/// Like compress_fallbacks() for this backend (this thread's count of whole-tensor selections).
uint64_t compress_fallbacks_cuda();

/// decompress_add into d_dst (device memory, n floats). The message is validated as decode_wire
/// does (header on the host, body on the device, the host decoder's message on any defect) before
/// d_dst is touched; on KernelError d_dst is unchanged.
void decompress_add(const uint8_t* wire, size_t wire_len, float* d_dst, size_t n, float alpha,
                    void* stream = nullptr);

/// How many messages this thread's decompress_add flagged on the device that the host decoder then
/// accepted (it goes on with the host's indices). Always 0 unless the device checks are wrong; the
/// gpu suite asserts it.
uint64_t decompress_disagreements_cuda();

/// Minimal owning device buffer for tests and benchmarks (cudaMalloc / cudaFree).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  float* f32() const { return static_cast<float*>(p_); }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

/// Device-to-device copy of `bytes` (the bandwidth reference of the GPU benchmark).
void device_copy(void* dst, const void* src, size_t bytes, void* stream = nullptr);
/// Waits for the device.
void synchronize();

}  // namespace geotb::kernels::cuda
