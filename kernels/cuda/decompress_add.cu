// CUDA decompress_add. The host checks the 40-byte header (check_wire_header); the body goes to
// the device once, where its CRC pieces, index decoding and value checks run. If anything there
// disagrees with the message, the host decoder (decode_wire) runs on it and throws the exact error
// the CPU backend would; dst is written only after every check passed. One kernel scatter-adds
// (indices are unique, so no atomics). Two stream synchronisations per call; no allocation once
// the workspace has grown.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cuda/compress_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arrays.h"
#include "kernels/cuda/wire_device.h"
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

struct Workspace {
  PinnedArray<uint8_t> host_body;
  PinnedArray<uint32_t> host_crcs;
  PinnedArray<uint32_t> host_flag;
  DevArray<uint8_t> body;
  DevArray<uint32_t> crcs, flag, idx;
  DevArray<float> scales, fvals;
  wire::DecodeScratch decode;
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

thread_local uint64_t t_disagreements = 0;

}  // namespace

uint64_t decompress_disagreements_cuda() { return t_disagreements; }

void decompress_add(const uint8_t* wire, size_t wire_len, float* d_dst, size_t n, float alpha, void* stream) {
  const WireHeader h = check_wire_header(wire, wire_len, n);
  const uint64_t k = h.k;
  const uint64_t body_len = wire_len - kWireHeaderBytes;
  if (k == 0 || body_len >= (1ull << 32)) {  // n == 0, or a section too long for 32-bit ranks
    thread_local std::vector<uint32_t> idx;
    decode_wire(wire, wire_len, n, idx);  // validates; throws on defects
    if (k == 0) return;
    throw KernelError("decompress_add (cuda): message of " + std::to_string(wire_len) + " bytes is too long");
  }
  if (d_dst == nullptr) throw KernelError("decompress_add (cuda): null dst");
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  Workspace& w = workspace();
  const bool int8 = h.values == ValueCoding::kInt8;
  const uint64_t nb = int8 ? num_blocks(k, h.block) : 0;
  const uint64_t ib = h.index_bytes;
  const uint64_t chunks = wire::crc_chunks(body_len);

  // the body to the device, through pinned memory
  w.host_body.reserve(body_len);
  w.host_crcs.reserve(chunks);
  w.host_flag.reserve(1);
  std::memcpy(w.host_body.p, wire + kWireHeaderBytes, body_len);
  w.body.reserve(body_len);
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.body.p, w.host_body.p, body_len, cudaMemcpyHostToDevice, st));

  // checks: CRC pieces, indices, values (aligned copies of the scales / float values)
  w.crcs.reserve(chunks);
  w.flag.reserve(1);
  w.idx.reserve(k);
  GEOTB_CUDA_CHECK(cudaMemsetAsync(w.flag.p, 0, sizeof(uint32_t), st));
  wire::queue_crc_chunks(w.body.p, body_len, w.crcs.p, st);
  wire::queue_decode_indices(h.indices, w.body.p, ib, n, k, w.decode, w.idx.p, w.flag.p, st);
  const void* vals = nullptr;
  if (int8) {
    w.scales.reserve(nb);
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.scales.p, w.body.p + ib, 4 * nb, cudaMemcpyDeviceToDevice, st));
    vals = w.body.p + ib + 4 * nb;
  } else {
    w.fvals.reserve(k);
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.fvals.p, w.body.p + ib, 4 * k, cudaMemcpyDeviceToDevice, st));
    vals = w.fvals.p;
  }
  wire::queue_check_values(h.values, w.scales.p, nb, vals, k, w.flag.p, st);
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.host_crcs.p, w.crcs.p, 4 * chunks, cudaMemcpyDeviceToHost, st));
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.host_flag.p, w.flag.p, sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
  GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
  const bool crc_ok = wire_crc_from_chunks(wire, w.host_crcs.p, body_len, wire::kCrcChunk) == h.crc;
  if (!crc_ok || *w.host_flag.p != 0) {
    // The host decoder throws the defect's own message. Should it accept the message after all,
    // its indices are used (the scales and values on the device are the message's own bytes).
    thread_local std::vector<uint32_t> idx;
    decode_wire(wire, wire_len, n, idx);
    ++t_disagreements;
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.idx.p, idx.data(), 4 * k, cudaMemcpyHostToDevice, st));
  }

  const auto* d_q = int8 ? static_cast<const int8_t*>(vals) : nullptr;
  scatter_add_kernel<<<grid_for(k), kThreads, 0, st>>>(w.idx.p, d_q, int8 ? w.scales.p : nullptr, int8 ? nullptr : w.fvals.p,
                                           k, h.block, alpha, d_dst);
  GEOTB_CUDA_CHECK(cudaGetLastError());
  GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
}

}  // namespace geotb::kernels::cuda
