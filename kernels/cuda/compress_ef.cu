// CUDA compress_ef: the CPU algorithm (kernels/topk.h) step by step on the device, producing the
// same bits. Thresholds and the k-th key are derived on the host from small device results
// (sample keys, histograms) with the shared host code, so both backends make the same decisions.
#include <cub/cub.cuh>

#include <algorithm>
#include <string>

#include "kernels/cuda/compress_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/quantize.h"
#include "kernels/topk.h"
#include "kernels/validate.h"
#include "kernels/wire_format.h"

namespace geotb::kernels::cuda {
namespace {

constexpr int kThreads = 256;

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
  ~DevArray() {
    if (p) cudaFree(p);  // errors ignored: may run after the runtime shut down
  }
};

struct Workspace {
  DevArray<uint32_t> sample_keys, hist;
  DevArray<unsigned long long> counters;  // [0] candidates, [1] non-finite, [2] count >= t_est
  DevArray<uint32_t> cidx, cidx_sorted, eq, eqrank, keep, pos, sel;
  DevArray<float> cval, cval_sorted, vals, scales;
  DevArray<int8_t> q;
  DevArray<unsigned char> temp;
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

unsigned grid_for(uint64_t n) {
  uint64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<uint64_t>(blocks, 1, 65535ull * 16));
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

// All lanes of a warp run the same number of iterations, so full-warp ballots are safe.
__global__ void ef_pass_kernel(const float* __restrict__ acc, float* __restrict__ res, uint64_t n,
                               uint32_t t_low, uint32_t* __restrict__ cidx, float* __restrict__ cval,
                               uint64_t cap, unsigned long long* __restrict__ counters) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const unsigned lane = threadIdx.x & 31u;
  for (uint64_t base = blockIdx.x * static_cast<uint64_t>(blockDim.x); base < n; base += stride) {
    const uint64_t i = base + threadIdx.x;
    const bool in = i < n;
    float v = 0.0f;
    uint32_t key = 0;
    if (in) {
      v = __fadd_rn(acc[i], res[i]);
      res[i] = v;
      key = magnitude_key(v);
    }
    const unsigned bad = __ballot_sync(0xFFFFFFFFu, in && key >= kNonFiniteKey);
    if (bad && lane == 0) atomicAdd(&counters[1], static_cast<unsigned long long>(__popc(bad)));
    const unsigned hits = __ballot_sync(0xFFFFFFFFu, in && key >= t_low);
    if (hits) {
      unsigned long long slot0 = 0;
      if (lane == 0) slot0 = atomicAdd(&counters[0], static_cast<unsigned long long>(__popc(hits)));
      slot0 = __shfl_sync(0xFFFFFFFFu, slot0, 0);
      if (in && key >= t_low) {
        const unsigned long long slot = slot0 + __popc(hits & ((1u << lane) - 1u));
        if (slot < cap) {
          cidx[slot] = static_cast<uint32_t>(i);
          cval[slot] = v;
        }
      }
    }
  }
}

__global__ void hist_high_kernel(const float* __restrict__ v, uint64_t c, uint32_t* __restrict__ hist) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    atomicAdd(&hist[magnitude_key(v[j]) >> 16], 1u);
}

__global__ void hist_low_kernel(const float* __restrict__ v, uint64_t c, uint32_t high, uint32_t* __restrict__ hist) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint32_t key = magnitude_key(v[j]);
    if ((key >> 16) == high) atomicAdd(&hist[key & 0xFFFFu], 1u);
  }
}

__global__ void count_at_least_kernel(const float* __restrict__ v, uint64_t c, uint32_t t,
                                      unsigned long long* __restrict__ counter) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    if (magnitude_key(v[j]) >= t) atomicAdd(counter, 1ull);
}

__global__ void mark_equal_kernel(const float* __restrict__ v, uint64_t c, uint32_t t, uint32_t* __restrict__ eq) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < c;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    eq[j] = magnitude_key(v[j]) == t;
}

// exact: keep key > t, or key == t among the first take_equal equal keys (lowest indices);
// at_least: keep key >= t.
__global__ void mark_keep_kernel(const float* __restrict__ v, uint64_t c, uint32_t t, bool at_least,
                                 uint64_t take_equal, const uint32_t* __restrict__ eqrank, uint32_t* __restrict__ keep) {
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

// Bin b (from the top) of a histogram where the running count first reaches k; `above` gets the
// count of larger bins. Same walk as kth_largest_key on the CPU.
uint32_t walk_from_top(const std::vector<uint32_t>& hist, uint32_t bins, size_t k, size_t& above) {
  uint32_t b = bins;
  while (above + hist[b - 1] < k) above += hist[--b];
  return b - 1;
}

template <class F>
void with_temp(Workspace& w, F&& f) {
  size_t bytes = 0;
  GEOTB_CUDA_CHECK(f(static_cast<void*>(nullptr), bytes));
  w.temp.reserve(bytes);
  GEOTB_CUDA_CHECK(f(static_cast<void*>(w.temp.p), bytes));
}

void exclusive_sum(Workspace& w, const uint32_t* in, uint32_t* out, uint64_t c, cudaStream_t st) {
  with_temp(w, [&](void* t, size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, in, out, static_cast<int64_t>(c), st);
  });
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

  // 1. sample -> thresholds (host, shared code)
  SampleThresholds th;
  th.expected_candidates = n;
  if (n >= kSampleMinElements) {
    const uint64_t s = kSampleChunks * kSampleChunk;
    w.sample_keys.reserve(s);
    sample_kernel<<<static_cast<unsigned>((s + kThreads - 1) / kThreads), kThreads, 0, st>>>(d_acc, d_res, n, seed,
                                                                                           w.sample_keys.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
    std::vector<uint32_t> keys(s);
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(keys.data(), w.sample_keys.p, 4 * s, cudaMemcpyDeviceToHost, st));
    GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
    th = thresholds_from_sample(keys.data(), s, n, k);
  }

  // 2. fused pass: v = acc + residual -> residual, candidates (unordered)
  const size_t cap = std::min<size_t>(n, 2 * th.expected_candidates + 4096);
  w.cidx.reserve(cap);
  w.cval.reserve(cap);
  w.counters.reserve(3);
  GEOTB_CUDA_CHECK(cudaMemsetAsync(w.counters.p, 0, 3 * sizeof(unsigned long long), st));
  ef_pass_kernel<<<grid_for(n), kThreads, 0, st>>>(d_acc, d_res, n, th.t_low, w.cidx.p, w.cval.p, cap, w.counters.p);
  GEOTB_CUDA_CHECK(cudaGetLastError());
  unsigned long long counters[2];
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(counters, w.counters.p, sizeof counters, cudaMemcpyDeviceToHost, st));
  GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
  const uint64_t c = counters[0];
  if (counters[1] != 0)
    throw KernelError("compress_ef (cuda): " + std::to_string(counters[1]) +
                      " non-finite value(s) in acc + residual (residual now holds acc + residual)");

  // 3. candidates in index order (the CPU collects them in that order)
  const uint64_t stored = std::min<uint64_t>(c, cap);
  w.cidx_sorted.reserve(cap);
  w.cval_sorted.reserve(cap);
  int end_bit = 1;
  while (end_bit < 32 && (static_cast<uint64_t>(n - 1) >> end_bit) != 0) ++end_bit;
  if (c <= cap) {
    with_temp(w, [&](void* t, size_t& b) {
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
      count_at_least_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cval_sorted.p, stored, th.t_est, w.counters.p + 2);
      GEOTB_CUDA_CHECK(cudaGetLastError());
      unsigned long long e = 0;
      GEOTB_CUDA_CHECK(cudaMemcpyAsync(&e, w.counters.p + 2, sizeof e, cudaMemcpyDeviceToHost, st));
      GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
      at_est = e;
    }
    target = std::clamp<uint64_t>(at_est, sampled_k_min(k, n), sampled_k_max(k, n));
    take_all_at_est = target == at_est;
  }

  // 5. selection, ascending index order, into w.sel / w.vals
  const uint64_t kk = target;
  w.sel.reserve(kk);
  w.vals.reserve(kk);
  if (c <= cap && c >= target) {
    uint32_t t_key = th.t_est;
    uint64_t take_equal = 0;
    if (!take_all_at_est) {
      // k-th largest key of the candidates: two histogram levels, walked on the host
      w.hist.reserve(1u << 16);
      std::vector<uint32_t> hist(1u << 16);
      size_t above = 0;
      GEOTB_CUDA_CHECK(cudaMemsetAsync(w.hist.p, 0, 4u << 16, st));
      hist_high_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cval_sorted.p, stored, w.hist.p);
      GEOTB_CUDA_CHECK(cudaGetLastError());
      GEOTB_CUDA_CHECK(cudaMemcpyAsync(hist.data(), w.hist.p, 4u << 15, cudaMemcpyDeviceToHost, st));
      GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
      const uint32_t b1 = walk_from_top(hist, 1u << 15, target, above);
      GEOTB_CUDA_CHECK(cudaMemsetAsync(w.hist.p, 0, 4u << 16, st));
      hist_low_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cval_sorted.p, stored, b1, w.hist.p);
      GEOTB_CUDA_CHECK(cudaGetLastError());
      GEOTB_CUDA_CHECK(cudaMemcpyAsync(hist.data(), w.hist.p, 4u << 16, cudaMemcpyDeviceToHost, st));
      GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
      const uint32_t b2 = walk_from_top(hist, 1u << 16, target, above);
      t_key = (b1 << 16) | b2;
      take_equal = target - above;
    }
    w.eq.reserve(stored);
    w.eqrank.reserve(stored);
    w.keep.reserve(stored);
    w.pos.reserve(stored);
    if (!take_all_at_est) {
      mark_equal_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cval_sorted.p, stored, t_key, w.eq.p);
      GEOTB_CUDA_CHECK(cudaGetLastError());
      exclusive_sum(w, w.eq.p, w.eqrank.p, stored, st);
    }
    mark_keep_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cval_sorted.p, stored, t_key, take_all_at_est, take_equal,
                                                           w.eqrank.p, w.keep.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
    exclusive_sum(w, w.keep.p, w.pos.p, stored, st);
    compact_kernel<<<grid_for(stored), kThreads, 0, st>>>(w.cidx_sorted.p, w.cval_sorted.p, stored, w.keep.p, w.pos.p,
                                                         w.sel.p, w.vals.p);
    GEOTB_CUDA_CHECK(cudaGetLastError());
  } else {
    // The sample misjudged the tensor: exact selection over all of it, on the host (rare path).
    ++t_fallbacks;
    std::vector<float> v(n);
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(v.data(), d_res, 4 * n, cudaMemcpyDeviceToHost, st));
    GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
    std::vector<uint32_t> sel;
    topk_exact(v.data(), n, target, sel);
    std::vector<float> vals(sel.size());
    for (size_t j = 0; j < sel.size(); ++j) vals[j] = v[sel[j]];
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.sel.p, sel.data(), 4 * kk, cudaMemcpyHostToDevice, st));
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(w.vals.p, vals.data(), 4 * kk, cudaMemcpyHostToDevice, st));
    GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
  }

  // 6. quantise + residual update, then fetch the sent data and encode on the host
  std::vector<uint32_t> sel(kk);
  std::vector<float> scales, fvals;
  std::vector<int8_t> q;
  if (cfg.values == ValueCoding::kInt8) {
    const uint64_t nb = num_blocks(kk, cfg.block);
    w.scales.reserve(nb);
    w.q.reserve(kk);
    const unsigned grid = static_cast<unsigned>(std::clamp<uint64_t>(nb, 1, 65535ull * 16));
    quantize_kernel<<<grid, kThreads, 0, st>>>(w.sel.p, w.vals.p, kk, cfg.block, cfg.rounding, cfg.seed, w.scales.p,
                                               w.q.p, d_res);
    GEOTB_CUDA_CHECK(cudaGetLastError());
    scales.resize(nb);
    q.resize(kk);
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(scales.data(), w.scales.p, 4 * nb, cudaMemcpyDeviceToHost, st));
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(q.data(), w.q.p, kk, cudaMemcpyDeviceToHost, st));
  } else {
    zero_sent_kernel<<<grid_for(kk), kThreads, 0, st>>>(w.sel.p, kk, d_res);
    GEOTB_CUDA_CHECK(cudaGetLastError());
    fvals.resize(kk);
    GEOTB_CUDA_CHECK(cudaMemcpyAsync(fvals.data(), w.vals.p, 4 * kk, cudaMemcpyDeviceToHost, st));
  }
  GEOTB_CUDA_CHECK(cudaMemcpyAsync(sel.data(), w.sel.p, 4 * kk, cudaMemcpyDeviceToHost, st));
  GEOTB_CUDA_CHECK(cudaStreamSynchronize(st));
  stats.k = kk;
  stats.index_bytes = encode_wire(n, kk, cfg.block, cfg.values, sel.data(), scales.data(), q.data(), fvals.data(), wire);
  stats.wire_bytes = wire.size();
  return stats;
}

}  // namespace geotb::kernels::cuda
