// The bulk-transfer (fluid) model of MessageLink against its segment-by-segment model, on paths
// and sizes where both run: for each case, the delivery instant of the last message in each model,
// their ratio, and the host time each took. docs/guide/represented.md: messages above
// SegmentConfig::fluid_above_bytes go through the fluid model; this is how far that moves them.
//   fluid_vs_segments            (every case; about a minute on one core)
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "emulator/inproc/event_queue.h"
#include "emulator/inproc/message_link.h"
#include "emulator/link/link_model.h"

namespace {

using namespace geotb::emu;

struct Case {
  std::string name;
  double rate_bps;
  double rtt_s;
  double loss;
  uint64_t bytes;
  int messages;       // sent one after another, `gap_s` of idle after each delivery
  double gap_s;
  bool both_ways;     // the same messages the other way at the same instants (a ring's two directions)
  bool reno = false;  // Reno instead of CUBIC
};

struct Outcome {
  double last_delivery_s = 0;
  double host_s = 0;
};

Outcome run(const Case& c, bool fluid) {
  const auto t0 = std::chrono::steady_clock::now();
  LinkConfig lc;
  lc.rate_bps = c.rate_bps;
  lc.delay = Nanos{static_cast<int64_t>(c.rtt_s / 2 * 1e9)};
  if (c.loss > 0) lc.loss = LossConfig{LossConfig::Kind::kBernoulli, c.loss};
  LinkModel ab(lc, RandomStream(7, 0)), ba(lc, RandomStream(7, 1));
  SegmentConfig s;
  s.fluid_above_bytes = fluid ? (uint64_t{64} << 20) : UINT64_MAX;
  if (c.reno) s.cc = CcAlgorithm::kReno;
  EventQueue q;
  MessageLink a(ab, s, &ba, &q), b(ba, s, &ab, &q);
  Nanos last{0};
  int done_a = 0;
  std::vector<Nanos> next_at;
  a.set_on_done([&](uint64_t, const MessageVerdict& v) {
    last = std::max(last, v.deliver_at);
    if (++done_a < c.messages) next_at.push_back(v.deliver_at + Nanos{static_cast<int64_t>(c.gap_s * 1e9)});
  });
  b.set_on_done([&](uint64_t, const MessageVerdict& v) { last = std::max(last, v.deliver_at); });
  auto send = [&](Nanos at) {
    q.run_until(at);
    a.enqueue(at, c.bytes);
    if (c.both_ways) b.enqueue(at, c.bytes);
  };
  send(Nanos{0});
  while (!q.empty() || !next_at.empty()) {
    if (!next_at.empty() && (q.empty() || next_at.front() <= q.next_time())) {
      const Nanos at = next_at.front();
      next_at.erase(next_at.begin());
      send(at);
      continue;
    }
    q.run_next();
  }
  Outcome o;
  o.last_delivery_s = std::chrono::duration<double>(last).count();
  o.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

}  // namespace

int main() {
  const std::vector<Case> cases = {
      {"10G 30ms, 100 MB, fresh", 10e9, 0.030, 0, 100'000'000, 1, 0, false},
      {"10G 30ms, 1 GB, fresh", 10e9, 0.030, 0, 1'000'000'000, 1, 0, false},
      {"10G 30ms, 4 x 1 GB, 8.8 s idle", 10e9, 0.030, 0, 1'000'000'000, 4, 8.8, false},
      {"10G 30ms, 1 GB both ways", 10e9, 0.030, 0, 1'000'000'000, 1, 0, true},
      {"1G 30ms, 1 GB", 1e9, 0.030, 0, 1'000'000'000, 1, 0, false},
      {"1G 50ms, 1e-3 loss, 100 MB, reno", 1e9, 0.050, 1e-3, 100'000'000, 1, 0, false, true},
      {"1G 50ms, 1e-3 loss, 100 MB", 1e9, 0.050, 1e-3, 100'000'000, 1, 0, false},
      {"1G 20ms, 1e-4 loss, 500 MB", 1e9, 0.020, 1e-4, 500'000'000, 1, 0, false},
      {"400G 10us (LAN), 1 GB", 400e9, 10e-6, 0, 1'000'000'000, 1, 0, false},
      {"400G 10us (LAN), 2 x 4 GB both ways, 1 s idle", 400e9, 10e-6, 0, 4'000'000'000, 2, 1.0, true},
  };
  fmt::print("{:<34} {:>12} {:>12} {:>9} {:>10} {:>10}\n", "case", "segments s", "fluid s", "ratio", "host seg",
             "host fluid");
  for (const Case& c : cases) {
    const Outcome g = run(c, false), f = run(c, true);
    fmt::print("{:<34} {:>12.4f} {:>12.4f} {:>9.4f} {:>9.2f}s {:>9.3f}s\n", c.name, g.last_delivery_s, f.last_delivery_s,
               f.last_delivery_s / g.last_delivery_s, g.host_s, f.host_s);
  }
}
