// CPU compression kernels against the memory limit and against what a user would write.
//
// Rates are elements of the dense float32 tensor per second of wall time, one thread:
//   BM_Compress/n/ppm      compress_ef, whole path (EF add, top-k, INT8, index coding, crc32),
//                          density = ppm / 1e6, residual carried from iteration to iteration
//   BM_Decompress/n/ppm    decompress_add of one such message (validate, crc, decode, scatter-add)
//   BM_Memcpy/n            memcpy of the same 4n bytes (the memory-bandwidth limit)
//   BM_NthElementTopk/n/ppm  |v| into a scratch array + std::nth_element (exact top-k, no coding)
//   BM_TorchTopk/n/ppm     torch::topk(from_blob(v).abs(), k) (libtorch, its default threads)
// User counters on BM_Compress / BM_Decompress: vs_memcpy = our rate / memcpy rate and
// vs_torch_topk = our rate / torch::topk rate, both references measured in this process by
// reference_rate() (mean over >= 3 runs and >= 0.3 s): memcpy right before and right after each
// benchmark's timed loop (mean of the two, also reported as memcpy_items_per_second), torch::topk
// once per (n, k), before the first benchmark that needs it.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "kernels/compress.h"
#include "kernels/topk.h"
#include "torch_topk.h"

namespace {

using geotb::kernels::CompressConfig;

const std::vector<float>& input(size_t n, uint64_t seed) {
  static std::map<std::pair<size_t, uint64_t>, std::vector<float>> cache;
  auto& v = cache[{n, seed}];
  if (v.size() != n) {
    std::mt19937_64 g(seed);
    std::normal_distribution<float> d(0.0f, seed == 1 ? 1.0f : 0.3f);
    v.resize(n);
    for (auto& x : v) x = d(g);
  }
  return v;
}

template <class F>
double reference_rate(size_t n, F&& f) {
  using clk = std::chrono::steady_clock;
  f();  // warm up: page faults, caches
  int runs = 0;
  auto t0 = clk::now();
  double el = 0;
  while (runs < 3 || el < 0.3) {
    f();
    ++runs;
    el = std::chrono::duration<double>(clk::now() - t0).count();
  }
  return static_cast<double>(n) * runs / el;
}

// Measured right before and right after each benchmark's timed loop (the mean of the two is
// the reference), so that load drifting on a shared machine affects both sides alike.
double memcpy_rate(size_t n) {
  const auto& src = input(n, 1);
  static std::vector<float> dst;
  dst.resize(n);
  return reference_rate(n, [&] {
    std::memcpy(dst.data(), src.data(), 4 * n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  });
}

double torch_rate(size_t n, size_t k) {
  static std::map<std::pair<size_t, size_t>, double> cache;
  if (!geotb::bench::torch_available()) return 0;
  if (!cache.count({n, k})) {
    const auto& v = input(n, 1);
    cache[{n, k}] = reference_rate(n, [&] { benchmark::DoNotOptimize(geotb::bench::torch_topk_abs(v.data(), n, k)); });
  }
  return cache[{n, k}];
}

CompressConfig config(int64_t ppm) {
  CompressConfig cfg;
  cfg.density = static_cast<double>(ppm) * 1e-6;
  return cfg;
}

// Wall time of the timed loop, measured here so that the ratios are plain numbers.
struct LoopTimer {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

void set_ratios(benchmark::State& st, size_t n, size_t k, double loop_seconds, double memcpy_before) {
  const double elements = static_cast<double>(n) * static_cast<double>(st.iterations());
  const double ours = elements / loop_seconds;
  const double memcpy_ref = 0.5 * (memcpy_before + memcpy_rate(n));
  st.counters["memcpy_items_per_second"] = memcpy_ref;
  st.counters["vs_memcpy"] = ours / memcpy_ref;
  const double tr = torch_rate(n, k);
  if (tr > 0) st.counters["vs_torch_topk"] = ours / tr;
  st.SetItemsProcessed(static_cast<int64_t>(elements));
  st.SetBytesProcessed(static_cast<int64_t>(elements) * 4);
}

void BM_Compress(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  const CompressConfig cfg = config(st.range(1));
  const size_t k = geotb::kernels::topk_count(n, cfg.density);
  torch_rate(n, k);  // references first, outside the timed loop
  const double memcpy_before = memcpy_rate(n);
  const auto& acc = input(n, 1);
  std::vector<float> res = input(n, 2);
  std::vector<uint8_t> wire;
  geotb::kernels::CompressStats s;
  const uint64_t fallbacks = geotb::kernels::compress_fallbacks();
  LoopTimer timer;
  for (auto _ : st) {
    s = geotb::kernels::compress_ef(acc.data(), res.data(), n, cfg, wire);
    benchmark::DoNotOptimize(wire.data());
  }
  const double secs = timer.seconds();
  st.counters["fallbacks"] = static_cast<double>(geotb::kernels::compress_fallbacks() - fallbacks);
  st.counters["k"] = static_cast<double>(s.k);
  st.counters["wire_bytes"] = static_cast<double>(s.wire_bytes);
  st.counters["index_bytes"] = static_cast<double>(s.index_bytes);
  set_ratios(st, n, k, secs, memcpy_before);
}

void BM_Decompress(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  const CompressConfig cfg = config(st.range(1));
  const size_t k = geotb::kernels::topk_count(n, cfg.density);
  torch_rate(n, k);
  const auto& acc = input(n, 1);
  std::vector<float> res = input(n, 2);
  std::vector<uint8_t> wire;
  geotb::kernels::compress_ef(acc.data(), res.data(), n, cfg, wire);
  std::vector<float> dst(n, 0.0f);
  const double memcpy_before = memcpy_rate(n);
  LoopTimer timer;
  for (auto _ : st) {
    geotb::kernels::decompress_add(wire.data(), wire.size(), dst.data(), n, 1.0f);
    benchmark::DoNotOptimize(dst.data());
  }
  const double secs = timer.seconds();
  set_ratios(st, n, k, secs, memcpy_before);
}

void BM_Memcpy(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  const auto& src = input(n, 1);
  std::vector<float> dst(n);
  for (auto _ : st) {
    std::memcpy(dst.data(), src.data(), 4 * n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<int64_t>(n) * st.iterations());
  st.SetBytesProcessed(static_cast<int64_t>(n) * 4 * st.iterations());
}

void BM_NthElementTopk(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  const size_t k = geotb::kernels::topk_count(n, config(st.range(1)).density);
  const auto& v = input(n, 1);
  std::vector<float> mag(n);
  for (auto _ : st) {
    for (size_t i = 0; i < n; ++i) mag[i] = std::fabs(v[i]);
    std::nth_element(mag.begin(), mag.begin() + static_cast<std::ptrdiff_t>(k - 1), mag.end(), std::greater<float>());
    benchmark::DoNotOptimize(mag[k - 1]);
  }
  st.SetItemsProcessed(static_cast<int64_t>(n) * st.iterations());
}

void BM_TorchTopk(benchmark::State& st) {
  if (!geotb::bench::torch_available()) {
    st.SkipWithError("built without libtorch");
    return;
  }
  const size_t n = static_cast<size_t>(st.range(0));
  const size_t k = geotb::kernels::topk_count(n, config(st.range(1)).density);
  const auto& v = input(n, 1);
  for (auto _ : st) benchmark::DoNotOptimize(geotb::bench::torch_topk_abs(v.data(), n, k));
  st.SetItemsProcessed(static_cast<int64_t>(n) * st.iterations());
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1 << 20, 16 << 20, 64 << 20})
    for (int64_t ppm : {1000, 10000, 50000}) b->Args({n, ppm});
}

BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(16 << 20)->Arg(64 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Compress)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Decompress)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NthElementTopk)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TorchTopk)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("torch_topk", geotb::bench::torch_available() ? "libtorch" : "not built");
  benchmark::AddCustomContext("torch_threads", std::to_string(geotb::bench::torch_threads()));
  benchmark::AddCustomContext("our_threads", "1");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
