// CUDA compress_ef: the CPU algorithm (kernels/topk.h) step by step on the device, producing the
// same bits. Every decision the CPU makes on the host is made on the device from the same data:
// the sample thresholds are ranks of the sorted sample (sample_ranks), the k-th key comes from a
// three-pass radix select (kernels/radix_select.h). The message body (indices, scales, values) is
// coded and checksummed on the device; the host writes the 40-byte header, combines the CRC pieces
// and copies the body out of pinned memory. Four stream synchronisations per call (three in exact
// mode), each to read a count the next launch is sized by; no allocation once the workspace has
// grown.
#include <cub/cub.cuh>

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cuda/compress_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arrays.h"
#include "kernels/cuda/wire_device.h"
#include "kernels/quantize.h"
#include "kernels/radix_select.h"
#include "kernels/topk.h"
#include "kernels/validate.h"
#include "kernels/wire_format.h"

namespace geotb::kernels::cuda {
namespace {

constexpr int kItems = 8;  // elements per thread and tile in the fused pass (2048 per tile)

// Device-side scalars of one call: [0] t_low, [1] t_est, [2] t_key, [3] take_equal.
// [4] above: during the k-th key's search, how many keys are above the prefix found so far.
enum Param { kTLow = 0, kTEst = 1, kTKey = 2, kTakeEqual = 3, kAbove = 4, kParams = 5 };
// Counters read by the host: [0] candidates, [1] non-finite, [2] candidates >= t_est, [3] varint bytes.
struct HostCounters {
  unsigned long long candidates, non_finite, at_est;
  uint64_t varint_bytes;
};

struct Workspace {
  DevArray<uint32_t> sample_keys, sample_sorted, hist;
  DevArray<unsigned long long> counters, params;
  DevArray<uint32_t> cidx, cidx_sorted, eq, eqrank, keep, pos, sel;
  DevArray<float> cval, cval_sorted, vals, scales;
  DevArray<int8_t> q;
  DevArray<unsigned char> temp;
  DevArray<uint8_t> body;
  DevArray<uint32_t> crcs;
  wire::IndexScratch index;
  PinnedArray<HostCounters> host;
  PinnedArray<uint8_t> host_body;
  PinnedArray<uint32_t> host_crcs;
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

thread_local uint64_t t_fallbacks = 0;

// ---- kernels ---------------------------------------------------------------------------------

__global__ void sample_kernel(const float* __restrict__ acc, const float* __restrict__ res, uint64_t n,
                              uint64_t seed, uint32_t* __restrict__ keys) {
  const uint64_t t = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (t >= kSampleChunks * kSampleChunk) return;
  const uint64_t i = sample_chunk_start(seed, t / kSampleChunk, n) + t % kSampleChunk;
  keys[t] = magnitude_key(__fadd_rn(acc[i], res[i]));
}

// t_low and t_est from the sample sorted in descending order (thresholds_from_sample's ranks).
__global__ void thresholds_kernel(const uint32_t* __restrict__ sorted_desc, uint64_t r_low, uint64_t r_est,
                                  unsigned long long* __restrict__ params) {
  const uint32_t t_low = r_low ? sorted_desc[r_low - 1] : 0u;
  uint32_t t_est = sorted_desc[r_est - 1];
  if (t_est < t_low) t_est = t_low;  // ties in the sample
  params[kTLow] = t_low;
  params[kTEst] = t_est;
}

// Fused pass: v = acc + residual -> residual; candidates (key >= t_low) into unordered slots.
// A block handles tiles of kThreads * kItems elements; one atomicAdd per tile reserves the
// tile's slots, a block scan hands them out.
__global__ void __launch_bounds__(kThreads)
    ef_pass_kernel(const float* __restrict__ acc, float* __restrict__ res, uint64_t n,
                   const unsigned long long* __restrict__ params, uint32_t* __restrict__ cidx,
                   float* __restrict__ cval, uint64_t cap, unsigned long long* __restrict__ counters) {
  using Scan = cub::BlockScan<unsigned, kThreads>;
  __shared__ typename Scan::TempStorage scan_tmp;
  __shared__ unsigned long long s_base;
  const uint32_t t_low = static_cast<uint32_t>(params[kTLow]);
  const uint64_t tile = static_cast<uint64_t>(kThreads) * kItems;
  unsigned bad = 0;
  for (uint64_t base = blockIdx.x * tile; base < n; base += static_cast<uint64_t>(gridDim.x) * tile) {
    float a[kItems], r[kItems];
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const uint64_t i = base + it * kThreads + threadIdx.x;
      a[it] = i < n ? acc[i] : 0.0f;
      r[it] = i < n ? res[i] : 0.0f;
    }
    unsigned hits = 0;
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const uint64_t i = base + it * kThreads + threadIdx.x;
      if (i < n) {
        r[it] = __fadd_rn(a[it], r[it]);
        res[i] = r[it];
        const uint32_t key = magnitude_key(r[it]);
        bad += key >= kNonFiniteKey;
        if (key >= t_low) hits |= 1u << it;
      }
    }
    unsigned offset = 0, total = 0;
    Scan(scan_tmp).ExclusiveSum(static_cast<unsigned>(__popc(hits)), offset, total);
    if (threadIdx.x == 0 && total) s_base = atomicAdd(&counters[0], static_cast<unsigned long long>(total));
    __syncthreads();
    if (total) {
      unsigned long long slot = s_base + offset;
#pragma unroll
      for (int it = 0; it < kItems; ++it)
        if (hits & (1u << it)) {
          if (slot < cap) {
            cidx[slot] = static_cast<uint32_t>(base + it * kThreads + threadIdx.x);
            cval[slot] = r[it];
          }
          ++slot;
        }
    }
    __syncthreads();  // scan_tmp and s_base are reused by the next tile
  }
  if (bad) atomicAdd(&counters[1], static_cast<unsigned long long>(bad));
}

// How many of v[0..c) have a key >= params[kTEst]; one atomicAdd per block.
__global__ void __launch_bounds__(kThreads)
    count_at_least_kernel(const float* __restrict__ v, uint64_t c, const unsigned long long* __restrict__ params,
                          unsigned long long* __restrict__ counter) {
  using Reduce = cub::BlockReduce<unsigned, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const uint32_t t = static_cast<uint32_t>(params[kTEst]);
  unsigned mine = 0;
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    mine += magnitude_key(v[j]) >= t;
  const unsigned sum = Reduce(tmp).Sum(mine);
  if (threadIdx.x == 0 && sum) atomicAdd(counter, static_cast<unsigned long long>(sum));
}

// The target-th largest key of the candidates (kth_largest_key's answer, found by radix select):
// three passes over bit fields [20, 31), [9, 20) and [0, 9) of the 31-bit key. A pass counts, per
// value of its field, the keys whose higher bits equal the prefix found so far (kth_hist_kernel,
// shared-memory histograms merged into `hist`), then picks the field value at which the count from
// the top reaches the target (kth_find_kernel); `above` collects the keys of the bins above it.
constexpr unsigned kKthMaxBins = 1u << 11;  // the widest field of kRadixFields
static_assert(kRadixFields[0].bits <= 11 && kRadixFields[1].bits <= 11 && kRadixFields[2].bits <= 11);

__global__ void __launch_bounds__(kThreads)
    kth_hist_kernel(const float* __restrict__ v, uint64_t c, const unsigned long long* __restrict__ params,
                    unsigned shift, unsigned bits, uint32_t* __restrict__ hist) {
  __shared__ uint32_t sh[kKthMaxBins];
  const unsigned nb = 1u << bits, hi = shift + bits;  // hi <= 31: the fields above this one
  for (unsigned i = threadIdx.x; i < nb; i += blockDim.x) sh[i] = 0;
  __syncthreads();
  const uint32_t prefix = static_cast<uint32_t>(params[kTKey]);
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint32_t key = magnitude_key(v[j]);
    if ((key >> hi) == (prefix >> hi)) atomicAdd(&sh[(key >> shift) & (nb - 1)], 1u);
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < nb; i += blockDim.x)
    if (sh[i]) atomicAdd(&hist[i], sh[i]);
}

// One block: the bins from the top, kKthMaxBins / kThreads per thread, a block scan of their
// counts; the one bin where above + (count of the bins before it) < target <= that + its count
// extends the prefix. The last pass also sets take_equal = target - above.
__global__ void __launch_bounds__(kThreads)
    kth_find_kernel(const uint32_t* __restrict__ hist, unsigned shift, unsigned bits, uint64_t target,
                    unsigned long long* __restrict__ params) {
  constexpr unsigned kPer = kKthMaxBins / kThreads;
  using Scan = cub::BlockScan<unsigned long long, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const unsigned nb = 1u << bits;
  const unsigned long long above0 = params[kAbove];
  unsigned long long mine[kPer], sum = 0;
#pragma unroll
  for (unsigned i = 0; i < kPer; ++i) {
    const unsigned r = threadIdx.x * kPer + i;  // rank from the top: bin nb - 1 - r
    mine[i] = r < nb ? hist[nb - 1 - r] : 0;
    sum += mine[i];
  }
  unsigned long long before = 0;
  Scan(tmp).ExclusiveSum(sum, before);  // every thread has read params[kAbove] before anyone writes it
  unsigned long long acc = above0 + before;
#pragma unroll
  for (unsigned i = 0; i < kPer; ++i) {
    const unsigned r = threadIdx.x * kPer + i;
    if (r < nb && acc < target && acc + mine[i] >= target) {
      params[kTKey] |= static_cast<unsigned long long>(nb - 1 - r) << shift;
      params[kAbove] = acc;
      if (shift == 0) params[kTakeEqual] = target - acc;
    }
    acc += mine[i];
  }
}

__global__ void mark_equal_kernel(const float* __restrict__ v, uint64_t c, const unsigned long long* __restrict__ params,
                                  uint32_t* __restrict__ eq) {
  const uint32_t t = static_cast<uint32_t>(params[kTKey]);
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    eq[j] = magnitude_key(v[j]) == t;
}

// exact: keep key > t_key, or key == t_key among the first take_equal equal keys (lowest
// indices); at_least: keep key >= t_est.
__global__ void mark_keep_kernel(const float* __restrict__ v, uint64_t c, bool at_least,
                                 const unsigned long long* __restrict__ params, const uint32_t* __restrict__ eqrank,
                                 uint32_t* __restrict__ keep) {
  const uint32_t t = static_cast<uint32_t>(params[at_least ? kTEst : kTKey]);
  const uint64_t take_equal = at_least ? 0 : params[kTakeEqual];
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint32_t key = magnitude_key(v[j]);
    keep[j] = at_least ? key >= t : (key > t || (key == t && eqrank[j] < take_equal));
  }
}

__global__ void compact_kernel(const uint32_t* __restrict__ idx, const float* __restrict__ v, uint64_t c,
                               const uint32_t* __restrict__ keep, const uint32_t* __restrict__ pos,
                               uint32_t* __restrict__ sel, float* __restrict__ vals) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    if (keep[j]) {
      sel[pos[j]] = idx[j];
      vals[pos[j]] = v[j];
    }
}

// One thread block per quantisation block (grid-stride over blocks).
__global__ void quantize_kernel(const uint32_t* __restrict__ sel, const float* __restrict__ vals, uint64_t k,
                                uint32_t block, Rounding rounding, uint64_t seed, float* __restrict__ scales,
                                int8_t* __restrict__ q, float* __restrict__ res) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ float s_scale;
  const uint64_t nb = (k + block - 1) / block;
  for (uint64_t b = blockIdx.x; b < nb; b += gridDim.x) {
    const uint64_t b0 = b * block, b1 = min(k, b0 + block);
    float m = 0.0f;
    for (uint64_t j = b0 + threadIdx.x; j < b1; j += blockDim.x) m = fmaxf(m, fabsf(vals[j]));
    m = Reduce(tmp).Reduce(m, [](float a, float c) { return fmaxf(a, c); });  // max: exact, any order
    if (threadIdx.x == 0) {
      s_scale = block_scale(m);
      scales[b] = s_scale;
    }
    __syncthreads();
    const float s = s_scale;
    for (uint64_t j = b0 + threadIdx.x; j < b1; j += blockDim.x) {
      const int8_t code = quantize_one(vals[j], s, rounding, seed, sel[j]);
      q[j] = code;
      res[sel[j]] = __fsub_rn(vals[j], __fmul_rn(static_cast<float>(code), s));
    }
    __syncthreads();  // s_scale and tmp are reused by the next block
  }
}

__global__ void zero_sent_kernel(const uint32_t* __restrict__ sel, uint64_t k, float* __restrict__ res) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    res[sel[j]] = 0.0f;
}

// ---- host helpers ------------------------------------------------------------------------------

void exclusive_sum(Workspace& w, const uint32_t* in, uint32_t* out, uint64_t c, cudaStream_t st) {
  with_temp(w.temp, [&](void* t, size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, in, out, static_cast<int64_t>(c), st);
  });
}

void sort_keys_descending(Workspace& w, const uint32_t* in, uint32_t* out, uint64_t c, cudaStream_t st) {
  with_temp(w.temp, [&](void* t, size_t& b) {
    return cub::DeviceRadixSort::SortKeysDescending(t, b, in, out, static_cast<int64_t>(c), 0, 32, st);
  });
}

void sync(cudaStream_t st) { GEOTB_CUDA_CHECK(cudaStreamSynchronize(st)); }

// Selection over the whole tensor on the host, for the rare call whose sample misjudged it.
void host_fallback(Workspace& w, const float* d_res, size_t n, uint64_t target, cudaStream_t st) {
  ++t_fallbacks;
  std::vector<float> v(n);
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(v.data(), d_res, 4 * n, cudaMemcpyDeviceToHost, st));
  sync(st);
  std::vector<uint32_t> sel;
  topk_exact(v.data(), n, target, sel);
  std::vector<float> vals(sel.size());
  for (size_t j = 0; j < sel.size(); ++j) vals[j] = v[sel[j]];
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.sel.p, sel.data(), 4 * sel.size(), cudaMemcpyHostToDevice, st));
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.vals.p, vals.data(), 4 * sel.size(), cudaMemcpyHostToDevice, st));
  sync(st);  // the host vectors die here
}

}  // namespace

uint64_t compress_fallbacks_cuda() { return t_fallbacks; }

CompressStats compress_ef(const float* d_acc, float* d_res, size_t n, const CompressConfig& cfg,
                          std::vector<uint8_t>& wire, void* stream) {
  validate_compress_args(d_acc, d_res, n, cfg);
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  Workspace& w = workspace();
  const uint64_t k = topk_count(n, cfg.density);
  CompressStats stats;
  stats.n = n;
  if (n == 0) {
    stats.index_bytes = encode_wire(0, 0, cfg.block, cfg.values, nullptr, nullptr, nullptr, nullptr, wire);
    stats.wire_bytes = wire.size();
    return stats;
  }
  const bool sampled = cfg.topk == TopkMode::kSampledThreshold;
  const uint64_t seed = sampled ? cfg.seed : kExactSampleSeed;
  w.host.reserve(1);
  HostCounters& hc = *w.host.p;
  w.params.reserve(kParams);
  w.counters.reserve(3);

  // 1. sample -> thresholds, on the device (the ranks depend on s, n and k only)
  uint64_t expected = n;
  if (n >= kSampleMinElements) {
    const uint64_t s = kSampleChunks * kSampleChunk;
    const SampleRanks ranks = sample_ranks(s, n, k);
    expected = ranks.expected_candidates;
    w.sample_keys.reserve(s);
    w.sample_sorted.reserve(s);
    sample_kernel<<<static_cast<unsigned>((s + kThreads - 1) / kThreads), kThreads, 0, st>>>(d_acc, d_res, n, seed,
                                                                                           w.sample_keys.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
    sort_keys_descending(w, w.sample_keys.p, w.sample_sorted.p, s, st);
    thresholds_kernel<<<1, 1, 0, st>>>(w.sample_sorted.p, ranks.r_low, ranks.r_est, w.params.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
  } else {
    GEOTB_CUDA_CHECK(cudaMemsetAsync(w.params.p, 0, kParams * sizeof(unsigned long long), st));  // t_low = t_est = 0
  }

  // 2. fused pass: v = acc + residual -> residual, candidates (unordered)
  const size_t cap = std::min<size_t>(n, 2 * expected + 4096);
  w.cidx.reserve(cap);
  w.cval.reserve(cap);
  GEOTB_CUDA_CHECK(cudaMemsetAsync(w.counters.p, 0, 3 * sizeof(unsigned long long), st));
  {
    const uint64_t tiles = (n + kThreads * kItems - 1) / (kThreads * kItems);
    const unsigned grid = static_cast<unsigned>(std::clamp<uint64_t>(tiles, 1, 8192));
    ef_pass_kernel<<<grid, kThreads, 0, st>>>(d_acc, d_res, n, w.params.p, w.cidx.p, w.cval.p, cap, w.counters.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
  }
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(&hc, w.counters.p, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, st));
  sync(st);  // (1)
  const uint64_t c = hc.candidates;
  if (hc.non_finite != 0)
    throw KernelError("compress_ef (cuda): " + std::to_string(hc.non_finite) +
                      " non-finite value(s) in acc + residual (residual now holds acc + residual)");

  // 3. candidates in index order (the CPU collects them in that order)
  const uint64_t stored = std::min<uint64_t>(c, cap);
  w.cidx_sorted.reserve(cap);
  w.cval_sorted.reserve(cap);
  int end_bit = 1;
  while (end_bit < 32 && (static_cast<uint64_t>(n - 1) >> end_bit) != 0) ++end_bit;
  if (c <= cap) {
    with_temp(w.temp, [&](void* t, size_t& b) {
      return cub::DeviceRadixSort::SortPairs(t, b, w.cidx.p, w.cidx_sorted.p, w.cval.p, w.cval_sorted.p,
                                             static_cast<int64_t>(stored), 0, end_bit, st);
    });
  }

  // 4. target count (sampled mode)
  uint64_t target = k;
  bool take_all_at_est = false;
  if (sampled && n >= kSampleMinElements) {
    uint64_t at_est = sampled_k_max(k, n) + 1;  // overflow: surely above the bound
    if (c <= cap) {
      count_at_least_kernel<<<std::min(grid_for(stored), 1024u), kThreads, 0, st>>>(w.cval_sorted.p, stored,
                                                                                      w.params.p, w.counters.p + 2);
      GEOTB_CUDA_CHECK(cudaGetLastError());
      GEOTB_CUDA_CHECK(cudaMemcpyAsync(&hc.at_est, w.counters.p + 2, sizeof(unsigned long long),
                                       cudaMemcpyDeviceToHost, st));
      sync(st);  // (2)
      at_est = hc.at_est;
    }
    target = std::clamp<uint64_t>(at_est, sampled_k_min(k, n), sampled_k_max(k, n));
    take_all_at_est = target == at_est;
  }

  // 5. selection, ascending index order, into w.sel / w.vals
  const uint64_t kk = target;
  w.sel.reserve(kk);
  w.vals.reserve(kk);
  if (c <= cap && c >= target) {
    w.keep.reserve(stored);
    w.pos.reserve(stored);
    if (!take_all_at_est) {
      // the target-th largest key of the candidates and the ranks among keys equal to it
      w.eq.reserve(stored);
      w.eqrank.reserve(stored);
      w.hist.reserve(kKthMaxBins);
      GEOTB_CUDA_CHECK(cudaMemsetAsync(w.params.p + kTKey, 0, sizeof(unsigned long long), st));
      GEOTB_CUDA_CHECK(cudaMemsetAsync(w.params.p + kAbove, 0, sizeof(unsigned long long), st));
      const unsigned hist_grid = std::min(grid_for(stored), 256u);
      for (const RadixField f : kRadixFields) {  // kernels/radix_select.h: the CPU's reference of these passes
        GEOTB_CUDA_CHECK(cudaMemsetAsync(w.hist.p, 0, sizeof(uint32_t) << f.bits, st));
        kth_hist_kernel<<<hist_grid, kThreads, 0, st>>>(w.cval_sorted.p, stored, w.params.p, f.shift, f.bits, w.hist.p);
        kth_find_kernel<<<1, kThreads, 0, st>>>(w.hist.p, f.shift, f.bits, target, w.params.p);
        GEOTB_CUDA_CHECK(cudaGetLastError());
      }
      mark_equal_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cval_sorted.p, stored, w.params.p, w.eq.p);
      GEOTB_CUDA_CHECK(cudaGetLastError());
      exclusive_sum(w, w.eq.p, w.eqrank.p, stored, st);
    }
    mark_keep_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cval_sorted.p, stored, take_all_at_est, w.params.p,
                                                           w.eqrank.p, w.keep.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
    exclusive_sum(w, w.keep.p, w.pos.p, stored, st);
    compact_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cidx_sorted.p, w.cval_sorted.p, stored, w.keep.p, w.pos.p,
                                                         w.sel.p, w.vals.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
  } else {
    host_fallback(w, d_res, n, target, st);
  }

  // 6. quantise + residual update; the index section's size decides the coding
  const bool int8 = cfg.values == ValueCoding::kInt8;
  const uint64_t nb = int8 ? num_blocks(kk, cfg.block) : 0;
  if (int8) {
    w.scales.reserve(nb);
    w.q.reserve(kk);
    const unsigned grid = static_cast<unsigned>(std::clamp<uint64_t>(nb, 1, 65535ull * 16));
    quantize_kernel<<<grid, kThreads, 0, st>>>(w.sel.p, w.vals.p, kk, cfg.block, cfg.rounding, cfg.seed, w.scales.p,
                                               w.q.p, d_res);
  } else {
    zero_sent_kernel<<<grid_for(kk), kThreads, 0, st>>>(w.sel.p, kk, d_res);
  }
  GEOTB_CUDA_CHECK(cudaGetLastError());
  wire::queue_varint_size(w.sel.p, kk, w.index, &hc.varint_bytes, st);
  sync(st);  // (3)
  const uint64_t bitmap_bytes = bitmap_index_bytes(n);
  const IndexCoding coding = bitmap_bytes < hc.varint_bytes ? IndexCoding::kBitmap : IndexCoding::kDeltaVarint;
  const uint64_t ib = coding == IndexCoding::kBitmap ? bitmap_bytes : hc.varint_bytes;  // choose_index_coding
  const uint64_t value_bytes = int8 ? kk : 4 * kk;
  const uint64_t body_len = ib + 4 * nb + value_bytes;

  // 7. the body on the device: indices | scales | values, then its CRC pieces
  w.body.reserve((body_len + 3) / 4 * 4 + 4);
  wire::queue_encode_indices(coding, w.sel.p, kk, n, w.index, w.body.p, st);
  if (int8) {
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.body.p + ib, w.scales.p, 4 * nb, cudaMemcpyDeviceToDevice, st));
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.body.p + ib + 4 * nb, w.q.p, kk, cudaMemcpyDeviceToDevice, st));
  } else {
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.body.p + ib, w.vals.p, 4 * kk, cudaMemcpyDeviceToDevice, st));
  }
  const uint64_t chunks = wire::crc_chunks(body_len);
  w.crcs.reserve(chunks);
  wire::queue_crc_chunks(w.body.p, body_len, w.crcs.p, st);
  w.host_body.reserve(body_len);
  w.host_crcs.reserve(chunks);
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.host_body.p, w.body.p, body_len, cudaMemcpyDeviceToHost, st));
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.host_crcs.p, w.crcs.p, 4 * chunks, cudaMemcpyDeviceToHost, st));
  sync(st);  // (4)

  // 8. header and checksum on the host; the body out of pinned memory
  WireHeader h;
  h.values = cfg.values;
  h.indices = coding;
  h.n = n;
  h.k = kk;
  h.block = cfg.block;
  h.index_bytes = ib;
  wire.resize(kWireHeaderBytes + body_len);
  write_wire_header(h, wire.data());
  h.crc = wire_crc_from_chunks(wire.data(), w.host_crcs.p, body_len, wire::kCrcChunk);
  write_wire_header(h, wire.data());
  std::memcpy(wire.data() + kWireHeaderBytes, w.host_body.p, body_len);
  stats.k = kk;
  stats.index_bytes = ib;
  stats.wire_bytes = wire.size();
  return stats;
}

}  // namespace geotb::kernels::cuda
