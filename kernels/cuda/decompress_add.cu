// CUDA decompress_add: the message is validated and its indices decoded on the host (the shared
// decoder), then one kernel scatter-adds. Indices are unique, so no atomics are needed.
#include <string>

#include "kernels/cuda/compress_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/wire_format.h"

namespace geotb::kernels::cuda {
namespace {

__global__ void scatter_add_kernel(const uint32_t* __restrict__ idx, const int8_t* __restrict__ q,
                                   const float* __restrict__ scales, const float* __restrict__ fvals, uint64_t k,
                                   uint32_t block, float alpha, float* __restrict__ dst) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    // same roundings as the CPU: alpha * (float(q) * s), then the add
    const float x = q ? __fmul_rn(static_cast<float>(q[j]), scales[j / block]) : fvals[j];
    dst[idx[j]] = __fadd_rn(dst[idx[j]], __fmul_rn(alpha, x));
  }
}

}  // namespace

void decompress_add(const uint8_t* wire, size_t wire_len, float* d_dst, size_t n, float alpha, void* stream) {
  thread_local std::vector<uint32_t> idx;
  const WireView v = decode_wire(wire, wire_len, n, idx);
  const uint64_t k = v.header.k;
  if (k == 0) return;
  if (d_dst == nullptr) throw KernelError("decompress_add (cuda): null dst");
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  const bool int8 = v.header.values == ValueCoding::kInt8;
  const uint64_t nb = int8 ? num_blocks(k, v.header.block) : 0;
  // one device allocation: indices | scales | values
  const size_t bytes = 4 * k + 4 * nb + (int8 ? k : 4 * k);
  thread_local DeviceBuffer buf;
  if (buf.bytes() < bytes) buf = DeviceBuffer(bytes);
  uint8_t* base = static_cast<uint8_t*>(buf.get());
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(base, idx.data(), 4 * k, cudaMemcpyHostToDevice, st));
  if (int8) {
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(base + 4 * k, v.scales, 4 * nb, cudaMemcpyHostToDevice, st));
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(base + 4 * k + 4 * nb, v.values, k, cudaMemcpyHostToDevice, st));
  } else {
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(base + 4 * k, v.values, 4 * k, cudaMemcpyHostToDevice, st));
  }
  const auto* d_idx = reinterpret_cast<const uint32_t*>(base);
  const auto* d_scales = int8 ? reinterpret_cast<const float*>(base + 4 * k) : nullptr;
  const auto* d_q = int8 ? reinterpret_cast<const int8_t*>(base + 4 * k + 4 * nb) : nullptr;
  const auto* d_f = int8 ? nullptr : reinterpret_cast<const float*>(base + 4 * k);
  const unsigned grid = static_cast<unsigned>(std::min<uint64_t>((k + 255) / 256, 65535ull * 16));
  scatter_add_kernel<<<grid, 256, 0, st>>>(d_idx, d_q, d_scales, d_f, k, v.header.block, alpha, d_dst);
  GEOTB_CUDA_CHECK(cudaGetLastError());
  GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
}

}  // namespace geotb::kernels::cuda
