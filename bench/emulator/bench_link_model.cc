// Cost of the link model per frame, as a ratio to a reference measured in the same run: copying
// a 64-byte header (what the data plane does to a frame anyway). Printed as the counter
// "x_memcpy64" = ns per offer() / ns per 64-byte copy.
#include <benchmark/benchmark.h>

#include <cstring>

#include "emulator/link/link_model.h"

namespace {

using geotb::emu::LinkConfig;
using geotb::emu::LinkModel;
using geotb::emu::LossConfig;
using geotb::emu::Nanos;
using geotb::emu::RandomStream;


void BM_Memcpy64(benchmark::State& s) {
  alignas(64) char a[128] = {1}, b[128];
  for (auto _ : s) {
    std::memcpy(b, a, 64);
    benchmark::DoNotOptimize(b);
    benchmark::ClobberMemory();
    a[0] ^= b[1];
  }
}
BENCHMARK(BM_Memcpy64);

void offer_loop(benchmark::State& s, const LinkConfig& c) {
  LinkModel m(c, RandomStream(1, 0));
  m.reserve(4096);
  int64_t t = 0;
  for (auto _ : s) {
    t += 100;
    benchmark::DoNotOptimize(m.offer(Nanos{t}, 1462));
  }
  s.SetItemsProcessed(s.iterations());
}

void BM_OfferPlain(benchmark::State& s) {
  LinkConfig c;
  c.rate_bps = 10e9;
  c.delay = std::chrono::milliseconds(15);
  c.queue_packets = 1000;
  offer_loop(s, c);
}
BENCHMARK(BM_OfferPlain);

void BM_OfferGilbertJitter(benchmark::State& s) {
  LinkConfig c;
  c.rate_bps = 10e9;
  c.delay = std::chrono::milliseconds(15);
  c.queue_packets = 1000;
  c.loss = LossConfig{LossConfig::Kind::kGilbertElliott, 0, 0.01, 0.25, 0, 1};
  c.jitter = {geotb::emu::JitterConfig::Kind::kNormal, std::chrono::microseconds(100)};
  offer_loop(s, c);
}
BENCHMARK(BM_OfferGilbertJitter);

// Reports every benchmark's time also as a multiple of BM_Memcpy64 (run first).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> out = runs;
    for (Run& r : out) {
      const double ns = r.GetAdjustedRealTime();
      if (r.benchmark_name() == "BM_Memcpy64") ref_ = ns;
      if (ref_ > 0) r.counters["x_memcpy64"] = benchmark::Counter(ns / ref_);
    }
    ConsoleReporter::ReportRuns(out);
  }

 private:
  double ref_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();
  return 0;
}
