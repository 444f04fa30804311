#include <utility>

#include "kernels/cuda/compress_cuda.h"
#include "kernels/cuda/cuda_check.h"

namespace geotb::kernels::cuda {

bool device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver / no device" error
    return false;
  }
  return count > 0;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  GEOTB_CUDA_CHECK(cudaMalloc(&p_, bytes ? bytes : 1));
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (bytes > bytes_) throw KernelError("DeviceBuffer::upload: " + std::to_string(bytes) + " bytes > capacity");
  GEOTB_CUDA_CHECK(cudaMemcpy(p_, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  if (bytes > bytes_) throw KernelError("DeviceBuffer::download: " + std::to_string(bytes) + " bytes > capacity");
  GEOTB_CUDA_CHECK(cudaMemcpy(host, p_, bytes, cudaMemcpyDeviceToHost));
}

void device_copy(void* dst, const void* src, size_t bytes, void* stream) {
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
}

void synchronize() { GEOTB_CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace geotb::kernels::cuda
