// Device index coding and chunked CRC-32 (kernels/cuda/wire_device.h). Same bytes as the host
// coder (kernels/index_coding.cc) and zlib's crc32: the gpu suite compares whole messages.
#include <cub/cub.cuh>

#include "kernels/cuda/wire_device.h"
#include "kernels/crc32_gf2.h"

namespace geotb::kernels::cuda::wire {
namespace {

// Gap coded for entry j: the first index itself, then idx[j] - idx[j-1] - 1.
__device__ inline uint32_t gap_at(const uint32_t* __restrict__ sel, uint64_t j) {
  return j == 0 ? sel[0] : sel[j] - sel[j - 1] - 1u;
}

__device__ inline uint64_t varint_len(uint32_t x) {
  return 1u + (x >= (1u << 7)) + (x >= (1u << 14)) + (x >= (1u << 21)) + (x >= (1u << 28));
}

__global__ void varint_len_kernel(const uint32_t* __restrict__ sel, uint64_t k, uint64_t* __restrict__ len) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    len[j] = varint_len(gap_at(sel, j));
}

__global__ void varint_total_kernel(const uint64_t* __restrict__ off, const uint64_t* __restrict__ len, uint64_t k,
                                    uint64_t* __restrict__ total) {
  *total = off[k - 1] + len[k - 1];
}

__global__ void varint_write_kernel(const uint32_t* __restrict__ sel, uint64_t k, const uint64_t* __restrict__ off,
                                    uint8_t* __restrict__ out) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    uint32_t x = gap_at(sel, j);
    uint8_t* p = out + off[j];
    while (x >= 0x80u) {
      *p++ = static_cast<uint8_t>(x | 0x80u);
      x >>= 7;
    }
    *p = static_cast<uint8_t>(x);
  }
}

// Bit i of the bitmap is bit i % 8 of byte i / 8, i.e. bit i % 32 of little-endian word i / 32.
__global__ void bitmap_kernel(const uint32_t* __restrict__ sel, uint64_t k, uint32_t* __restrict__ words) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    atomicOr(&words[sel[j] >> 5], 1u << (sel[j] & 31u));
}

// crc32_shift(kCrcPiece << l) for each level l of the chunk's tree, passed by value to the kernel.
struct CrcLevelShifts {
  uint32_t op[8];
};
static_assert(kCrcThreads == 256, "CrcLevelShifts holds log2(kCrcThreads) levels");

CrcLevelShifts crc_level_shifts() {
  CrcLevelShifts s{};
  for (unsigned l = 0; l < 8; ++l) s.op[l] = crc32_shift(kCrcPiece << l);
  return s;
}

// One thread block per kCrcChunk-byte chunk (grid-stride over chunks): each of its kCrcThreads
// threads takes the CRC of one kCrcPiece-byte piece with the table in shared memory, then the
// block combines the pieces pairwise in log2(kCrcThreads) levels (crc32_tree_step, the GF(2)
// shift of kernels/crc32_gf2.h, with each level's operator for full subtrees computed on the host).
// Pieces are aligned to the chunk's end: in the short last chunk the first non-empty piece is the
// short one and the empty ones precede it, so no node needs a general shift (which costs ~10 us of
// serial work each: 8 of them made a 16 KiB block take 100 us).
__global__ void __launch_bounds__(kCrcThreads)
    crc_chunks_kernel(const uint8_t* __restrict__ body, uint64_t len, uint32_t* __restrict__ out, uint64_t chunks,
                      CrcLevelShifts level_shift) {
  __shared__ uint32_t table[256];
  __shared__ uint32_t part[kCrcThreads], plen[kCrcThreads];
  const unsigned t = threadIdx.x;
  for (unsigned i = t; i < 256; i += blockDim.x) table[i] = crc32_table_entry(i);
  __syncthreads();
  for (uint64_t ch = blockIdx.x; ch < chunks; ch += gridDim.x) {
    const uint64_t c0 = ch * kCrcChunk, c1 = min(len, c0 + kCrcChunk);
    // piece t is [c1 + piece - from_end - piece, c1 + piece - from_end), clipped at c0
    const uint64_t from_end = static_cast<uint64_t>(kCrcThreads - t) * kCrcPiece;
    uint32_t crc = 0, n = 0;
    if (c1 - c0 + kCrcPiece > from_end) {
      const uint64_t b1 = c1 + kCrcPiece - from_end;
      const uint64_t b0 = b1 - c0 >= kCrcPiece ? b1 - kCrcPiece : c0;
      uint32_t c = 0xFFFFFFFFu;
#pragma unroll 8
      for (uint64_t p = b0; p < b1; ++p) c = table[(c ^ body[p]) & 0xFFu] ^ (c >> 8);
      crc = c ^ 0xFFFFFFFFu;
      n = static_cast<uint32_t>(b1 - b0);
    }
    part[t] = crc;
    plen[t] = n;
    __syncthreads();
    for (unsigned stride = 1, l = 0; stride < kCrcThreads; stride <<= 1, ++l) {
      if (t % (2 * stride) == 0)
        crc32_tree_step(part, plen, t, stride, level_shift.op[l], static_cast<uint32_t>(kCrcPiece << l));
      __syncthreads();
    }
    if (t == 0) out[ch] = part[0];
    __syncthreads();  // part and plen are reused by the next chunk
  }
}

// ---- decoding -----------------------------------------------------------------------------------

// mark[p] = 1 where byte p ends a varint (high bit clear).
__global__ void varint_ends_kernel(const uint8_t* __restrict__ in, uint64_t len, uint32_t* __restrict__ mark) {
  for (uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; p < len;
       p += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    mark[p] = (in[p] & 0x80u) == 0;
}

// The section must hold exactly `want` counted items and end on one (no truncated or trailing bytes).
__global__ void count_check_kernel(const uint32_t* __restrict__ rank, const uint32_t* __restrict__ mark, uint64_t len,
                                   uint64_t want, bool last_must_count, uint32_t* __restrict__ flag) {
  const uint64_t total = static_cast<uint64_t>(rank[len - 1]) + mark[len - 1];
  if (total != want || (last_must_count && mark[len - 1] == 0)) *flag = 1;
}

__global__ void varint_endpos_kernel(const uint32_t* __restrict__ mark, const uint32_t* __restrict__ rank, uint64_t len,
                                     uint64_t k, uint64_t* __restrict__ endpos) {
  for (uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; p < len;
       p += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    if (mark[p] && rank[p] < k) endpos[rank[p]] = p;
}

// Entry j's varint: at most 5 bytes, the fifth below 0x10 (32 bits), no trailing zero byte
// (canonical). gap[j] = value + 1, so the running sum minus 1 is the index.
__global__ void varint_value_kernel(const uint8_t* __restrict__ in, uint64_t len, const uint64_t* __restrict__ endpos,
                                    uint64_t k, uint64_t* __restrict__ gap, uint32_t* __restrict__ flag) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint64_t start = j == 0 ? 0 : endpos[j - 1] + 1, end = endpos[j];
    uint64_t x = 0;
    if (end >= len || start > end || end - start >= 5) {
      *flag = 1;
    } else {
      for (uint64_t p = start; p <= end; ++p) {
        const unsigned shift = static_cast<unsigned>(7 * (p - start));
        const uint8_t byte = in[p];
        if (shift == 28 && (byte & 0xF0u) != 0) *flag = 1;
        x |= static_cast<uint64_t>(byte & 0x7Fu) << shift;
      }
      if (end > start && in[end] == 0) *flag = 1;
    }
    gap[j] = x + 1;
  }
}

__global__ void index_from_sum_kernel(const uint64_t* __restrict__ sum, uint64_t k, uint64_t n,
                                      uint32_t* __restrict__ idx, uint32_t* __restrict__ flag) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint64_t i = sum[j] - 1;  // increasing in j, so entry k - 1 bounds them all
    if (j == k - 1 && i >= n) *flag = 1;
    idx[j] = static_cast<uint32_t>(i);
  }
}

// Bitmap: exactly ceil(n/8) bytes, zero padding past n.
__global__ void bitmap_shape_kernel(const uint8_t* __restrict__ in, uint64_t len, uint64_t n,
                                    uint32_t* __restrict__ flag) {
  if (len != (n + 7) / 8 || (n % 8 != 0 && (in[len - 1] >> (n % 8)) != 0)) *flag = 1;
}

__global__ void popcount_kernel(const uint8_t* __restrict__ in, uint64_t len, uint32_t* __restrict__ count) {
  for (uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; p < len;
       p += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    count[p] = __popc(in[p]);
}

__global__ void bitmap_expand_kernel(const uint8_t* __restrict__ in, uint64_t len, const uint32_t* __restrict__ rank,
                                     uint64_t k, uint32_t* __restrict__ idx) {
  for (uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; p < len;
       p += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    uint64_t r = rank[p];
    for (unsigned m = in[p]; m != 0 && r < k; m &= m - 1) idx[r++] = static_cast<uint32_t>(8 * p + __ffs(m) - 1);
  }
}

__global__ void check_scales_kernel(const float* __restrict__ scales, uint64_t nb, uint32_t* __restrict__ flag) {
  for (uint64_t b = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; b < nb;
       b += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    if (!(scales[b] >= 0.0f) || !isfinite(scales[b])) *flag = 1;
}

__global__ void check_codes_kernel(const int8_t* __restrict__ q, uint64_t k, uint32_t* __restrict__ flag) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    if (q[j] == -128) *flag = 1;
}

__global__ void check_floats_kernel(const float* __restrict__ f, uint64_t k, uint32_t* __restrict__ flag) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    if (!isfinite(f[j])) *flag = 1;
}

}  // namespace

void queue_varint_size(const uint32_t* sel, uint64_t k, IndexScratch& s, uint64_t* host_total, cudaStream_t st) {
  s.len.reserve(k);
  s.off.reserve(k);
  s.total.reserve(1);
  varint_len_kernel<<<grid_for(k), kThreads, 0, st>>>(sel, k, s.len.p);
  GEOTB_CUDA_CHECK(cudaGetLastError());
  with_temp(s.temp, [&](void* t, size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, s.len.p, s.off.p, static_cast<int64_t>(k), st);
  });
  varint_total_kernel<<<1, 1, 0, st>>>(s.off.p, s.len.p, k, s.total.p);
  GEOTB_CUDA_CHECK(cudaGetLastError());
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(host_total, s.total.p, sizeof(uint64_t), cudaMemcpyDeviceToHost, st));
}

void queue_encode_indices(IndexCoding coding, const uint32_t* sel, uint64_t k, uint64_t n, IndexScratch& s,
                          uint8_t* out, cudaStream_t st) {
  if (coding == IndexCoding::kBitmap) {
    const uint64_t bytes = bitmap_index_bytes(n);
    GEOTB_CUDA_CHECK(cudaMemsetAsync(out, 0, (bytes + 3) / 4 * 4, st));
    bitmap_kernel<<<grid_for(k), kThreads, 0, st>>>(sel, k, reinterpret_cast<uint32_t*>(out));
  } else {
    varint_write_kernel<<<grid_for(k), kThreads, 0, st>>>(sel, k, s.off.p, out);
  }
  GEOTB_CUDA_CHECK(cudaGetLastError());
}

void queue_crc_chunks(const uint8_t* body, uint64_t len, uint32_t* out, cudaStream_t st) {
  const uint64_t chunks = crc_chunks(len);
  if (chunks == 0) return;
  const unsigned grid = static_cast<unsigned>(std::min<uint64_t>(chunks, 65535));
  static const CrcLevelShifts shifts = crc_level_shifts();
  crc_chunks_kernel<<<grid, kCrcThreads, 0, st>>>(body, len, out, chunks, shifts);
  GEOTB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace geotb::kernels::cuda::wire

namespace geotb::kernels::cuda::wire {

void queue_decode_indices(IndexCoding coding, const uint8_t* in, uint64_t len, uint64_t n, uint64_t k,
                          DecodeScratch& s, uint32_t* idx, uint32_t* flag, cudaStream_t st) {
  if (len == 0) {  // k >= 1 indices cannot come from nothing
    GEOTB_CUDA_CHECK(cudaMemsetAsync(flag, 0xFF, sizeof(uint32_t), st));
    return;
  }
  s.mark.reserve(len);
  s.rank.reserve(len);
  auto scan = [&] {
    with_temp(s.temp, [&](void* t, size_t& b) {
      return cub::DeviceScan::ExclusiveSum(t, b, s.mark.p, s.rank.p, static_cast<int64_t>(len), st);
    });
  };
  if (coding == IndexCoding::kBitmap) {
    bitmap_shape_kernel<<<1, 1, 0, st>>>(in, len, n, flag);
    popcount_kernel<<<grid_for(len), kThreads, 0, st>>>(in, len, s.mark.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
    scan();
    count_check_kernel<<<1, 1, 0, st>>>(s.rank.p, s.mark.p, len, k, false, flag);
    bitmap_expand_kernel<<<grid_for(len), kThreads, 0, st>>>(in, len, s.rank.p, k, idx);
    GEOTB_CUDA_CHECK(cudaGetLastError());
    return;
  }
  s.endpos.reserve(k);
  s.gap.reserve(k);
  s.sum.reserve(k);
  varint_ends_kernel<<<grid_for(len), kThreads, 0, st>>>(in, len, s.mark.p);
  GEOTB_CUDA_CHECK(cudaGetLastError());
  scan();
  count_check_kernel<<<1, 1, 0, st>>>(s.rank.p, s.mark.p, len, k, true, flag);
  // Where the count is wrong some endpos stay unwritten: zero them so every read stays in bounds.
  GEOTB_CUDA_CHECK(cudaMemsetAsync(s.endpos.p, 0, k * sizeof(uint64_t), st));
  varint_endpos_kernel<<<grid_for(len), kThreads, 0, st>>>(s.mark.p, s.rank.p, len, k, s.endpos.p);
  varint_value_kernel<<<grid_for(k), kThreads, 0, st>>>(in, len, s.endpos.p, k, s.gap.p, flag);
  GEOTB_CUDA_CHECK(cudaGetLastError());
  with_temp(s.temp, [&](void* t, size_t& b) {
    return cub::DeviceScan::InclusiveSum(t, b, s.gap.p, s.sum.p, static_cast<int64_t>(k), st);
  });
  index_from_sum_kernel<<<grid_for(k), kThreads, 0, st>>>(s.sum.p, k, n, idx, flag);
  GEOTB_CUDA_CHECK(cudaGetLastError());
}

void queue_check_values(ValueCoding values, const float* scales, uint64_t nb, const void* vals, uint64_t k,
                        uint32_t* flag, cudaStream_t st) {
  if (values == ValueCoding::kInt8) {
    if (nb) check_scales_kernel<<<grid_for(nb), kThreads, 0, st>>>(scales, nb, flag);
    check_codes_kernel<<<grid_for(k), kThreads, 0, st>>>(static_cast<const int8_t*>(vals), k, flag);
  } else {
    check_floats_kernel<<<grid_for(k), kThreads, 0, st>>>(static_cast<const float*>(vals), k, flag);
  }
  GEOTB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace geotb::kernels::cuda::wire
