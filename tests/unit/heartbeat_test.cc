// The heartbeat detector's indirect probes (engine/faults/heartbeat.h) on a virtual-time fabric of
// three sites, A = {0}, B = {1, 2}, C = {3}, without training: every rank watches every other (one
// world group, as naive_ddp's) and asks FaultGroups::witnesses about a suspect. Whom a rank asks,
// on exact layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "emulator/inproc/fabric.h"
#include "emulator/inproc/virtual_time.h"
#include "engine/faults/heartbeat.h"
#include "engine/faults/shrink.h"

namespace geotb::engine {
namespace {

using namespace std::chrono_literals;
using Nanos = std::chrono::nanoseconds;

TEST(Witnesses, SiteMatesOverTheirLanAndOneThirdSite) {
  const FaultGroups three{model::RankLayout({1, 2, 1}), true};  // A = {0}, B = {1, 2}, C = {3}
  EXPECT_EQ(three.witnesses(0, 1, 3), (std::vector<int>{2, 3}));  // B's other member, C's first
  EXPECT_EQ(three.witnesses(0, 1, 1), (std::vector<int>{3}));     // the third site's first
  EXPECT_EQ(three.witnesses(2, 1, 3), (std::vector<int>{0, 3}));  // a LAN suspect: the other sites
  EXPECT_EQ(three.witnesses(0, 3, 3), (std::vector<int>{1}));     // alone in C: B's first only
  EXPECT_EQ(three.witnesses(0, 1, 0), (std::vector<int>{}));
  const FaultGroups two{model::RankLayout({4, 4}), true};
  EXPECT_EQ(two.witnesses(0, 5, 3), (std::vector<int>{4, 6, 7}));  // no third site: mates only
  EXPECT_EQ(two.witnesses(0, 5, 2), (std::vector<int>{4, 6}));
  EXPECT_EQ(two.witnesses(0, 1, 3), (std::vector<int>{2, 3, 4}));  // a LAN suspect: not the observer; the other site's first
  const FaultGroups pairs{model::RankLayout({1, 1}), true};
  EXPECT_EQ(pairs.witnesses(0, 1, 3), (std::vector<int>{}));       // nobody else: its silence decides
  const FaultGroups four{model::RankLayout({1, 1, 1, 1}), true};
  EXPECT_EQ(four.witnesses(0, 1, 3), (std::vector<int>{2, 3}));    // alone: every third site's first
}

// Three sites A = {0}, B = {1, 2}, C = {3}; WAN links of 15 ms one way between every pair, the
// A<->B pair cut (down) when `cut_ab`; a LAN of 10 us. `c_up` false: C cut off too.
emu::FabricConfig three_sites(bool cut_ab, bool c_up = true) {
  emu::FabricConfig fc;
  fc.num_sites = 3;
  fc.site_of = {0, 1, 1, 2};
  fc.lan.rate_bps = 0;
  fc.lan.delay = 10us;
  emu::LinkConfig wan;
  wan.rate_bps = 1e9;
  wan.delay = 15ms;
  emu::LinkConfig ab = wan, c = wan;
  ab.up = !cut_ab;
  c.up = c_up;
  fc.wan = {{0, 1, ab}, {1, 0, ab}, {0, 2, c}, {2, 0, c}, {1, 2, c}, {2, 1, c}};
  return fc;
}

struct Outcome {
  std::vector<model::Detection> detections;
  uint64_t sent = 0;
  /// The detections `observer` made, in order.
  std::vector<model::Detection> by(int observer) const {
    std::vector<model::Detection> out;
    for (const auto& d : detections)
      if (d.observer == observer) out.push_back(d);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.peer < b.peer; });
    return out;
  }
};

// Every rank's monitor for `run_for` of virtual time, each watching every other (asking their
// witnesses when `witnesses` > 0); rank 1 is killed at `kill_at` when set.
Outcome run_monitors(const emu::FabricConfig& fc, int witnesses, Nanos run_for, std::optional<Nanos> kill_at = {}) {
  emu::VirtualScheduler sched;
  emu::VirtualClock clock(sched);
  emu::Fabric fabric(fc, clock, sched);
  const FaultGroups groups{model::RankLayout({1, 2, 1}), true};
  model::HeartbeatConfig cfg;  // 2 s, 3 s, 2 s, 30 s
  cfg.witnesses = witnesses;
  std::mutex mu;
  Outcome out;
  std::vector<std::unique_ptr<HeartbeatMonitor>> m;
  for (int r = 0; r < 4; ++r) {
    const std::vector<int> peers = groups.watched_by(r);
    std::map<int, std::vector<int>> w;
    for (int p : peers) w[p] = groups.witnesses(r, p, witnesses);
    m.push_back(std::make_unique<HeartbeatMonitor>(
        fabric, sched, r, peers, cfg, true,
        [&](const model::Detection& d) {
          std::lock_guard<std::mutex> lk(mu);
          out.detections.push_back(d);
        },
        std::set<int>{}, w));
  }
  const auto driver = sched.add_actor("driver", 0ns);  // first: monitors wait for start() meanwhile
  for (auto& x : m) x->create();
  for (auto& x : m) x->start(0ns, 0ns);
  std::thread th([&] {
    sched.bind(driver);
    if (kill_at) {
      sched.charge(driver, *kill_at);
      fabric.kill_endpoint(1);
      m[1]->stop();  // from an actor: it must not hold the monitor back (HeartbeatMonitor::stop)
      sched.charge(driver, run_for - *kill_at);
    } else {
      sched.charge(driver, run_for);
    }
    sched.act(driver, [](Nanos) {});  // wait until every actor is past run_for
    for (auto& x : m) x->stop();
    sched.finish(driver);
  });
  th.join();
  for (auto& x : m) out.sent += x->sent();
  fabric.close();
  return out;
}

// A path cut while both ends live: A<->B is down, so rank 0 and B's ranks 1 and 2 cannot hear
// each other, but C's rank 3 (a witness over A<->C and C<->B) hears both: nobody is declared in
// 120 s. Without witnesses the same run declares both sides at timeout + confirmation (never
// heard: suspected at 3 s, declared at 5 s), as the lossy path did.
TEST(Heartbeats, OneObserversPathCutIsNotADeathWhenAWitnessHearsIt) {
  const Outcome with = run_monitors(three_sites(true), 3, 120s);
  EXPECT_TRUE(with.detections.empty()) << with.detections.size() << " declared, first: rank "
                                       << with.detections.front().observer << " declared rank "
                                       << with.detections.front().peer << " at " << with.detections.front().at_s << " s";
  const Outcome without = run_monitors(three_sites(true), 0, 120s);
  const auto by0 = without.by(0);
  ASSERT_EQ(by0.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(by0[static_cast<size_t>(i)].peer, i + 1);
    EXPECT_EQ(by0[static_cast<size_t>(i)].how, "silence");
    EXPECT_DOUBLE_EQ(by0[static_cast<size_t>(i)].at_s, 5.0);
  }
  EXPECT_EQ(without.by(1).size(), 1u);  // rank 0
  EXPECT_EQ(without.by(3).size(), 0u);
  EXPECT_GT(with.sent, without.sent);  // the requests and answers cost datagrams
}

// Rank 1 killed at 10 s, every path up: every other rank declares it within the detector's bound
// (timeout + confirmation + the last heartbeat's one-way delay), on a witness's word (they could
// not reach it either), and nobody else is declared.
TEST(Heartbeats, DeadSuspectIsDeclaredWithinTheBoundOnAWitnessWord) {
  const Outcome o = run_monitors(three_sites(false), 3, 60s, 10s);
  ASSERT_EQ(o.detections.size(), 3u);
  for (int observer : {0, 2, 3}) {
    const auto mine = o.by(observer);
    ASSERT_EQ(mine.size(), 1u) << observer;
    const model::Detection& d = mine[0];
    EXPECT_EQ(d.peer, 1);
    EXPECT_EQ(d.how, "witness");
    // Rank 1's last heartbeat left at 8 s (every 2 s from 0; the kill comes first at 10 s: the
    // driver is the lowest actor): 15 ms later over the WAN, 10 us over B's LAN.
    EXPECT_NEAR(d.last_heard_s, observer == 2 ? 8.00001 : 8.015, 1e-4) << observer;
    EXPECT_NEAR(d.suspected_s, d.last_heard_s + 3.0, 1e-9);
    EXPECT_GE(d.at_s - 10.0, 3.0 + 2.0 - 2.0);
    EXPECT_LE(d.at_s - 10.0, 3.0 + 2.0 + 0.015 + 1e-9) << observer;
  }
}

// Site A cut off from both others. Rank 0 hears nobody, witnesses included, and cannot tell
// dead sites from a cut: it declares each peer "unreachable" exactly faults.heartbeat.unreachable
// (30 s) after the suspicion, not after the confirmation. The others reach rank 0 through no
// path either, and a witness of theirs says so: they declare it at timeout + confirmation.
TEST(Heartbeats, SiteNobodyAnswersForIsDeclaredUnreachableAfterItsBound) {
  emu::FabricConfig fc = three_sites(true);
  for (auto& l : fc.wan)
    if (l.from == 0 || l.to == 0) l.config.up = false;
  const Outcome o = run_monitors(fc, 3, 60s);
  const auto by0 = o.by(0);
  ASSERT_EQ(by0.size(), 3u);
  for (const auto& d : by0) {
    EXPECT_EQ(d.how, "unreachable");
    EXPECT_DOUBLE_EQ(d.suspected_s, 3.0);
    EXPECT_DOUBLE_EQ(d.at_s, 33.0);
  }
  for (int observer : {1, 2, 3}) {
    ASSERT_EQ(o.by(observer).size(), 1u) << observer;
    EXPECT_EQ(o.by(observer)[0].peer, 0);
    EXPECT_EQ(o.by(observer)[0].how, "witness");
    EXPECT_DOUBLE_EQ(o.by(observer)[0].at_s, 5.0);
  }
}

}  // namespace
}  // namespace geotb::engine
