// CUDA compression kernels against the device's copy bandwidth.
//
// Rates are elements of the dense float32 tensor per second of wall time (host clock around
// synchronous calls; the wire is produced in / consumed from host memory, so PCIe transfers of the
// compressed message and the host-side index coding + crc are included):
//   BM_GpuCompress/n/ppm     cuda::compress_ef, density = ppm / 1e6, residual carried over
//   BM_GpuDecompress/n/ppm   cuda::decompress_add of one such message
//   BM_DeviceCopy/n          cudaMemcpyAsync device-to-device of the same 4n bytes + synchronize
// Counter vs_device_copy = our rate / device-copy rate, the reference measured in this process
// right before first use for each size (mean over >= 3 runs and >= 0.2 s).
// torch::topk on CUDA is measured separately by ci/gpu-check.sh (Python torch, where present).
// Exits 77 without a CUDA device.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "kernels/compress.h"
#include "kernels/cuda/compress_cuda.h"
#include "kernels/topk.h"

namespace {

namespace kc = geotb::kernels::cuda;
using geotb::kernels::CompressConfig;

std::vector<float> host_input(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.0f, seed == 1 ? 1.0f : 0.3f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

const kc::DeviceBuffer& device_input(size_t n) {
  static std::map<size_t, kc::DeviceBuffer> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    auto h = host_input(n, 1);
    kc::DeviceBuffer b(4 * n);
    b.upload(h.data(), 4 * n);
    it = cache.emplace(n, std::move(b)).first;
  }
  return it->second;
}

double copy_rate(size_t n) {
  static std::map<size_t, double> cache;
  if (!cache.count(n)) {
    const auto& src = device_input(n);
    kc::DeviceBuffer dst(4 * n);
    auto once = [&] {
      kc::device_copy(dst.get(), src.get(), 4 * n);
      kc::synchronize();
    };
    once();
    using clk = std::chrono::steady_clock;
    int runs = 0;
    double el = 0;
    auto t0 = clk::now();
    while (runs < 3 || el < 0.2) {
      once();
      ++runs;
      el = std::chrono::duration<double>(clk::now() - t0).count();
    }
    cache[n] = static_cast<double>(n) * runs / el;
  }
  return cache[n];
}

struct LoopTimer {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

void finish(benchmark::State& st, size_t n, double secs) {
  const double elements = static_cast<double>(n) * static_cast<double>(st.iterations());
  st.counters["vs_device_copy"] = elements / secs / copy_rate(n);
  st.SetItemsProcessed(static_cast<int64_t>(elements));
}

void BM_GpuCompress(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  CompressConfig cfg;
  cfg.density = static_cast<double>(st.range(1)) * 1e-6;
  copy_rate(n);
  const auto& acc = device_input(n);
  auto h_res = host_input(n, 2);
  kc::DeviceBuffer res(4 * n);
  res.upload(h_res.data(), 4 * n);
  std::vector<uint8_t> wire;
  geotb::kernels::CompressStats s;
  kc::compress_ef(acc.f32(), res.f32(), n, cfg, wire);  // warm-up: workspace allocation
  LoopTimer t;
  for (auto _ : st) s = kc::compress_ef(acc.f32(), res.f32(), n, cfg, wire);
  const double secs = t.seconds();
  st.counters["k"] = static_cast<double>(s.k);
  st.counters["wire_bytes"] = static_cast<double>(s.wire_bytes);
  finish(st, n, secs);
}

void BM_GpuDecompress(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  CompressConfig cfg;
  cfg.density = static_cast<double>(st.range(1)) * 1e-6;
  copy_rate(n);
  auto acc = host_input(n, 1), res = host_input(n, 2);
  std::vector<uint8_t> wire;
  geotb::kernels::compress_ef(acc.data(), res.data(), n, cfg, wire);
  kc::DeviceBuffer dst(4 * n);
  kc::device_copy(dst.get(), device_input(n).get(), 4 * n);
  kc::decompress_add(wire.data(), wire.size(), dst.f32(), n, 1.0f);
  LoopTimer t;
  for (auto _ : st) kc::decompress_add(wire.data(), wire.size(), dst.f32(), n, 1.0f);
  finish(st, n, t.seconds());
}

void BM_DeviceCopy(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  const auto& src = device_input(n);
  kc::DeviceBuffer dst(4 * n);
  for (auto _ : st) {
    kc::device_copy(dst.get(), src.get(), 4 * n);
    kc::synchronize();
  }
  st.SetItemsProcessed(static_cast<int64_t>(n) * st.iterations());
  st.SetBytesProcessed(static_cast<int64_t>(n) * 4 * st.iterations());
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1 << 20, 16 << 20, 64 << 20})
    for (int64_t ppm : {1000, 10000, 50000}) b->Args({n, ppm});
}

BENCHMARK(BM_DeviceCopy)->Arg(1 << 20)->Arg(16 << 20)->Arg(64 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_GpuCompress)->Apply(sizes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_GpuDecompress)->Apply(sizes)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  if (!kc::device_available()) {
    std::printf("no CUDA device: GPU benchmarks not measured\n");
    return 77;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
