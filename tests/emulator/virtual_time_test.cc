// The virtual-time scheduler and the fabric in virtual-time mode. No libtorch: this binary also
// runs under ThreadSanitizer. Exact times: compute is charged as declared (charge()).
#include "emulator/inproc/virtual_time.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <random>
#include <thread>

#include "emulator/inproc/fabric.h"

using namespace geotb;
using namespace std::chrono_literals;
using emu::Nanos;
using emu::VirtualScheduler;

namespace {


// Runs fn(actor) on one thread (or fiber) per actor, every actor registered at t = 0 before any
// starts.
void run_actors(VirtualScheduler& s, int n, const std::function<void(int)>& fn) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back(s.add_actor("actor " + std::to_string(i), 0ns));
  std::vector<emu::ActorThread> th;
  for (int i = 0; i < n; ++i)
    th.push_back(s.start("actor " + std::to_string(i), [&, i] {
      s.bind(ids[static_cast<size_t>(i)]);
      fn(ids[static_cast<size_t>(i)]);
      s.finish(ids[static_cast<size_t>(i)]);
    }));
  for (auto& t : th) t.join();
}

// Holds a thread back until another has got somewhere (a host interleaving a test forces). Fibers
// run one at a time on one thread, in a fixed order: there the latch is not waited for.
void hold(const VirtualScheduler& s, std::latch& l) {
  if (s.actors() == VirtualScheduler::Actors::kThreads) l.wait();
}

// Every test runs with the actors as OS threads and as fibers (where the build has them: under
// ThreadSanitizer both parameters run threads).
class VirtualTime : public ::testing::TestWithParam<VirtualScheduler::Actors> {};
std::string actors_name(const ::testing::TestParamInfo<VirtualScheduler::Actors>& i) {
  return i.param == VirtualScheduler::Actors::kFibers ? "Fibers" : "Threads";
}
class VirtualTimeFabric : public VirtualTime {};

TEST_P(VirtualTime, ActionsRunInVirtualTimeOrderWhateverTheThreadOrder) {
  // Actor 0 acts at 10 ms, actor 1 at 5 ms. Actor 1's thread is held back until actor 0 has asked
  // to act, so in real time actor 0 asks first; the scheduler must still run actor 1's action first.
  VirtualScheduler s(GetParam());
  std::vector<std::pair<int, Nanos>> order;
  std::latch zero_asking(1);
  run_actors(s, 2, [&](int a) {
    if (a == 0) {
      s.charge(a, 10ms);
      zero_asking.count_down();
      s.act(a, [&](Nanos t) { order.emplace_back(a, t); });
    } else {
      hold(s, zero_asking);
      s.charge(a, 5ms);
      s.act(a, [&](Nanos t) { order.emplace_back(a, t); });
    }
  });
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], std::make_pair(1, Nanos(5ms)));
  EXPECT_EQ(order[1], std::make_pair(0, Nanos(10ms)));
}

TEST_P(VirtualTime, TiesGoToTheLowerActorId) {
  VirtualScheduler s(GetParam());
  std::vector<int> order;
  std::latch one_first(1);
  run_actors(s, 2, [&](int a) {
    if (a == 0) hold(s, one_first);
    s.charge(a, 7ms);
    if (a == 1) one_first.count_down();
    s.act(a, [&](Nanos) { order.push_back(a); });
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
}

TEST_P(VirtualTime, WaitAdvancesToTheEventInstantAndNeverBack) {
  VirtualScheduler s(GetParam());
  std::optional<Nanos> posted;
  Nanos t_late{0}, t_early{0};
  run_actors(s, 2, [&](int a) {
    if (a == 0) {
      s.charge(a, 20ms);
      const Nanos now = s.now(a);
      s.update([&] { posted = now; });
    } else {
      s.charge(a, 5ms);
      ASSERT_TRUE(s.wait(a, [&] { return posted; }, std::nullopt, "hand-off"));
      t_late = s.now(a);  // 5 ms -> 20 ms
      s.charge(a, 30ms);  // 50 ms
      ASSERT_TRUE(s.wait(a, [&] { return posted; }, std::nullopt, "hand-off again"));
      t_early = s.now(a);  // the event at 20 ms does not move it back
    }
  });
  EXPECT_EQ(t_late, 20ms);
  EXPECT_EQ(t_early, 50ms);
}

TEST_P(VirtualTime, DeadlineFiresOnlyWhenNobodyCanActEarlier) {
  VirtualScheduler s(GetParam());
  std::optional<Nanos> posted;
  bool got = false, timed_out_ok = true;
  Nanos t1{0}, t2{0};
  run_actors(s, 2, [&](int a) {
    if (a == 0) {
      s.charge(a, 50ms);
      const Nanos now = s.now(a);
      s.update([&] { posted = now; });
    } else {
      // The hand-off comes at 50 ms, before the 100 ms deadline: no timeout.
      got = s.wait(a, [&] { return posted; }, 100ms, "hand-off");
      t1 = s.now(a);
      // Nothing else will come: times out at exactly 50 ms + 30 ms once actor 0 has finished.
      std::optional<Nanos> never;
      timed_out_ok = s.wait(a, [&] { return never; }, t1 + 30ms, "nothing");
      t2 = s.now(a);
    }
  });
  EXPECT_TRUE(got);
  EXPECT_EQ(t1, 50ms);
  EXPECT_FALSE(timed_out_ok);
  EXPECT_EQ(t2, 80ms);
}

TEST_P(VirtualTime, DeadlockIsReportedWithEveryActorsState) {
  VirtualScheduler s(GetParam());
  std::atomic<int> reported{0};
  std::string msg;
  std::mutex mu;
  run_actors(s, 2, [&](int a) {
    std::optional<Nanos> never;
    try {
      s.wait(a, [&] { return never; }, std::nullopt, a == 0 ? "recv from rank 1 tag 5" : "recv from rank 0 tag 6");
    } catch (const emu::DeadlockError& e) {
      reported++;
      std::lock_guard<std::mutex> lk(mu);
      msg = e.what();
    }
  });
  EXPECT_EQ(reported.load(), 2);
  EXPECT_NE(msg.find("actor 0 (actor 0): blocked at t = 0 s in recv from rank 1 tag 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("actor 1 (actor 1): blocked at t = 0 s in recv from rank 0 tag 6"), std::string::npos) << msg;
}

TEST_P(VirtualTime, AbortWakesEveryWaiter) {
  VirtualScheduler s(GetParam());
  std::atomic<int> aborted{0};
  const int waiter = s.add_actor("waiter", 0ns);
  const int other = s.add_actor("other", 0ns);
  emu::ActorThread w = s.start("waiter", [&] {
    s.bind(waiter);
    std::optional<Nanos> never;
    try {
      s.wait(waiter, [&] { return never; }, std::nullopt, "forever");
    } catch (const emu::SchedulerAborted& e) {
      if (std::string(e.what()) == "fabric closed") aborted++;
    }
  });
  // "other" is running (bound 0): no deadlock while it lives; it aborts the run instead.
  emu::ActorThread o = s.start("other", [&] {
    s.bind(other);
    s.abort("fabric closed");
    s.finish(other);
  });
  o.join();
  w.join();
  EXPECT_EQ(aborted.load(), 1);
}

TEST_P(VirtualTime, ManyActorsActInNonDecreasingVirtualTimeUnderRandomThreadTiming) {
  // 8 actors, each 200 times: declared compute of a random length, a random real-time yield or
  // sleep (perturbs the OS schedule), then an action. Every action must come in (t, id) order.
  VirtualScheduler s(GetParam());
  std::vector<std::pair<Nanos, int>> log;
  run_actors(s, 8, [&](int a) {
    std::mt19937_64 rng(static_cast<uint64_t>(a) * 7919 + 1);
    for (int i = 0; i < 200; ++i) {
      s.charge(a, Nanos(1 + rng() % 1000));
      if (rng() % 4 == 0) std::this_thread::yield();
      if (rng() % 50 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      s.act(a, [&](Nanos t) { log.emplace_back(t, a); });
    }
  });
  ASSERT_EQ(log.size(), 1600u);
  for (size_t i = 1; i < log.size(); ++i) ASSERT_LE(log[i - 1], log[i]) << "action " << i;
}

// A network as the scheduler sees it: events at fixed instants, each making `delivered` its instant.
struct ScriptedNetwork final : emu::VirtualNetwork {
  std::vector<Nanos> events;
  size_t next = 0;
  std::optional<Nanos> delivered;
  std::optional<Nanos> next_event() override {
    return next < events.size() ? std::optional<Nanos>(events[next]) : std::nullopt;
  }
  bool run_next() override {
    delivered = events[next++];
    return true;
  }
};

// The network runs an event only when no actor can act before it: actor 0 acts at 2 ms before the
// 5 ms event has run; the event wakes actor 1 (blocked, no deadline) at 5 ms, before actor 0 acts
// at 12 ms. With the network's queue empty and actor 1 blocked on something that never comes, the
// scheduler reports a deadlock (once actor 0 is done), not before.
TEST_P(VirtualTime, TheNetworkRunsBetweenActorsAndDeadlockWaitsForItsQueue) {
  VirtualScheduler s(GetParam());
  ScriptedNetwork net;
  net.events = {5ms};
  s.set_network(&net);
  std::vector<std::pair<int, Nanos>> acts;  // (actor, instant), under the scheduler's lock
  size_t run_at_2ms = 99;
  Nanos woke{0};
  bool deadlock = false;
  run_actors(s, 2, [&](int a) {
    if (a == 0) {
      s.charge(a, 2ms);
      s.act(a, [&](Nanos t) {
        run_at_2ms = net.next;
        acts.push_back({a, t});
      });
      s.charge(a, 10ms);
      s.act(a, [&](Nanos t) { acts.push_back({a, t}); });
    } else {
      s.wait(a, [&] { return net.delivered; }, std::nullopt, "the network's delivery");
      woke = s.now(a);
      s.act(a, [&](Nanos t) { acts.push_back({a, t}); });
      try {
        s.wait(a, [] { return std::optional<Nanos>{}; }, std::nullopt, "nothing");
      } catch (const emu::DeadlockError&) {
        deadlock = true;
      }
    }
  });
  s.set_network(nullptr);
  EXPECT_EQ(run_at_2ms, 0u);
  EXPECT_EQ(woke, 5ms);
  ASSERT_EQ(acts.size(), 3u);
  EXPECT_EQ(acts[0], std::make_pair(0, Nanos{2ms}));
  EXPECT_EQ(acts[1], std::make_pair(1, Nanos{5ms}));
  EXPECT_EQ(acts[2], std::make_pair(0, Nanos{12ms}));
  EXPECT_TRUE(deadlock);
}

// ---- the fabric in virtual-time mode ----

emu::FabricConfig two_sites(int per_site, double wan_bps, Nanos wan_delay) {
  emu::FabricConfig fc;
  fc.num_sites = 2;
  for (int r = 0; r < 2 * per_site; ++r) fc.site_of.push_back(r / per_site);
  fc.lan.rate_bps = 0;
  fc.lan.delay = 0ns;
  emu::LinkConfig wan;
  wan.rate_bps = wan_bps;
  wan.delay = wan_delay;
  fc.wan = {{0, 1, wan}, {1, 0, wan}};  // site 0 -> 1, then 1 -> 0
  return fc;
}

TEST_P(VirtualTimeFabric, ReceiverAdvancesToTheModelsDeliveryInstant) {
  VirtualScheduler s(GetParam());
  emu::VirtualClock clock(s);
  emu::Fabric f(two_sites(1, 1e9, 15ms), clock, s);
  Nanos t_recv{0};
  run_actors(s, 2, [&](int a) {
    if (a == 0) {
      s.charge(a, 3ms);
      f.send(0, 1, 7, std::vector<uint8_t>(1448, 0xab));
    } else {
      auto m = f.recv(1, 0, 7, 1s);
      ASSERT_TRUE(m.has_value());
      EXPECT_EQ(m->size(), 1448u);
      t_recv = clock.now();
    }
  });
  // Sent at 3 ms; one segment of 1448 + 52 + 38 bytes = 12,304 ns at 1 Gbit/s; 15 ms one way.
  EXPECT_EQ(t_recv, 3ms + 12304ns + 15ms);
}

TEST_P(VirtualTimeFabric, SendersShareTheWanSerializerInVirtualTimeOrder) {
  // Ranks 0 and 1 (site 0) both send 100 segments to rank 2 (site 1). Rank 1 sends at 1 ms, rank
  // 0 at 2 ms; rank 1's thread is made to start last in real time. The serializer must take rank
  // 1's message first: it arrives after 100 segment times, rank 0's after 200.
  VirtualScheduler s(GetParam());
  emu::VirtualClock clock(s);
  emu::FabricConfig fc = two_sites(2, 1e9, 10ms);
  fc.segments.tcp = false;  // every segment offered at the send (no slow start): the order is what is tested
  emu::Fabric f(fc, clock, s);
  std::latch zero_sent_request(1);
  Nanos from0{0}, from1{0};
  const size_t bytes = 100 * 1448;
  run_actors(s, 4, [&](int a) {
    if (a == 0) {
      s.charge(a, 2ms);
      zero_sent_request.count_down();
      f.send(0, 2, 1, std::vector<uint8_t>(bytes));
    } else if (a == 1) {
      hold(s, zero_sent_request);
      s.charge(a, 1ms);
      f.send(1, 2, 1, std::vector<uint8_t>(bytes));
    } else if (a == 2) {
      ASSERT_TRUE(f.recv(2, 0, 1, 10s).has_value());
      from0 = clock.now();
      ASSERT_TRUE(f.recv(2, 1, 1, 10s).has_value());
      from1 = clock.now();  // already delivered: no move back
    }
  });
  const Nanos seg = 12304ns;
  EXPECT_EQ(from0, 1ms + 200 * seg + 10ms);
  EXPECT_EQ(from1, from0);  // received after rank 0's message, which came later
}

// Both directions in one simulation (message_link_test.cc, MessageLinkBothWays, the same case on
// a bare event queue): 11-segment messages each way at 0 over 1 Gbit/s with no propagation delay
// and a 10-segment initial window. Each side's first flight occupies its direction until 10 kSeg,
// so each side's ACKs for the other's flight queue behind it; the 11th segment then waits behind
// the other side's 10 ACKs: received at 11 kSeg + 10 kAck, against 11 kSeg when only one sends.
TEST_P(VirtualTimeFabric, BothDirectionsSimulatedTogether) {
  const Nanos seg = 12304ns, ack = 720ns;
  for (bool both : {false, true}) {
    VirtualScheduler s(GetParam());
    emu::VirtualClock clock(s);
    emu::FabricConfig fc = two_sites(1, 1e9, 0ns);
    fc.segments.cc = emu::CcAlgorithm::kReno;
    fc.segments.receive_window = false;
    emu::Fabric f(fc, clock, s);
    Nanos at0{0}, at1{0};
    run_actors(s, 2, [&](int a) {
      if (a == 0 || both) f.send(a, 1 - a, 3, std::vector<uint8_t>(11 * 1448));
      if (a == 1 || both) {
        ASSERT_TRUE(f.recv(a, 1 - a, 3, 10s).has_value());
        (a == 0 ? at0 : at1) = clock.now();
      }
    });
    EXPECT_EQ(at1, both ? 11 * seg + 10 * ack : 11 * seg) << both;
    if (both) {
      EXPECT_EQ(at0, 11 * seg + 10 * ack);
    }
  }
}

// poll takes a message delivered by the caller's instant and nothing later, and never moves the
// caller's clock, whatever order the host runs the actors in. The message leaves at 3 ms and is
// delivered at 3 ms + 12,304 ns + 15 ms; rank 1 polls at 10 ms (nothing yet), at exactly one
// nanosecond before the delivery (nothing), at the delivery instant (the message), then again
// (nothing left).
TEST_P(VirtualTimeFabric, PollTakesOnlyWhatIsDeliveredByNowAndNeverWaits) {
  VirtualScheduler s(GetParam());
  emu::VirtualClock clock(s);
  emu::Fabric f(two_sites(1, 1e9, 15ms), clock, s);
  const Nanos delivered = 3ms + 12304ns + 15ms;
  std::vector<std::pair<Nanos, bool>> polls;
  run_actors(s, 2, [&](int a) {
    if (a == 0) {
      s.charge(a, 3ms);
      f.send(0, 1, 7, std::vector<uint8_t>(1448, 0xab));
      return;
    }
    auto poll_at = [&](Nanos t) {
      s.charge(a, t - clock.now());
      const auto m = f.poll(1, 0, 7);
      polls.emplace_back(clock.now(), m.has_value() && m->size() == 1448);
    };
    poll_at(10ms);
    poll_at(delivered - 1ns);
    poll_at(delivered);
    poll_at(delivered);
  });
  ASSERT_EQ(polls.size(), 4u);
  EXPECT_EQ(polls[0], std::make_pair(Nanos{10ms}, false));
  EXPECT_EQ(polls[1], std::make_pair(delivered - 1ns, false));
  EXPECT_EQ(polls[2], std::make_pair(delivered, true));
  EXPECT_EQ(polls[3], std::make_pair(delivered, false));
}

TEST_P(VirtualTimeFabric, RecvTimeoutIsVirtual) {
  VirtualScheduler s(GetParam());
  emu::VirtualClock clock(s);
  emu::Fabric f(two_sites(1, 1e9, 1ms), clock, s);
  Nanos t{0};
  bool got = true;
  const auto t0 = std::chrono::steady_clock::now();
  run_actors(s, 2, [&](int a) {
    if (a == 1) {
      got = f.recv(1, 0, 9, 120s).has_value();  // nobody sends: 120 s of virtual time
      t = clock.now();
    }
  });
  EXPECT_FALSE(got);
  EXPECT_EQ(t, 120s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 60s);  // it did not wait 120 s of real time
}

TEST_P(VirtualTimeFabric, CloseWakesAReceiverWithNothing) {
  VirtualScheduler s(GetParam());
  emu::VirtualClock clock(s);
  emu::Fabric f(two_sites(1, 1e9, 1ms), clock, s);
  std::optional<std::vector<uint8_t>> m = std::vector<uint8_t>{1};
  run_actors(s, 2, [&](int a) {
    if (a == 1) m = f.recv(1, 0, 9, 120s);
    else f.close();
  });
  EXPECT_FALSE(m.has_value());
  EXPECT_TRUE(f.closed());
}

// A DC leader's successor (Fabric::take_over). Sites 0 = {0, 1}, 1 = {2, 3}; 10 ms one way, the
// window-less model (each message one segment, settled at its send: exact instants). Rank 2 sends
// tags 5 and 6 to rank 0, which takes tag 5 only and dies at 11 ms (its own blocked recv ends
// then). At 20 ms rank 1 takes over rank 0's address: its notices reach ranks 2 and 3 at 30 ms, and
// rank 2 sends tags 5 and 6 again, to rank 1 now. Rank 1's tag 7, sent right after the notices,
// is received by rank 2 as rank 0's; rank 2's tag 8 to rank 0, sent after, reaches rank 1.
TEST_P(VirtualTimeFabric, TakeOverRedirectsAndResendsWhatTheDeadHadNotTaken) {
  VirtualScheduler s(GetParam());
  emu::VirtualClock clock(s);
  emu::FabricConfig fc = two_sites(2, 1e9, 10ms);
  fc.segments.tcp = false;
  emu::Fabric f(fc, clock, s);
  f.retain_cross_site(4);
  auto one = [](uint8_t v) { return std::vector<uint8_t>{v}; };
  std::optional<std::vector<uint8_t>> dead_recv = one(0), got5, got6, got7, got8;
  Nanos dead_woke{0}, t7{0};
  run_actors(s, 4, [&](int a) {
    if (a == 0) {
      ASSERT_TRUE(f.recv(0, 2, 5, 1s).has_value());
      s.charge(a, 11ms - clock.now());
      f.kill_endpoint(0);
      dead_recv = f.recv(0, 2, 99, 10s);  // its sockets are gone: ends at once
      dead_woke = clock.now();
    } else if (a == 1) {
      s.charge(a, 20ms);
      f.take_over(1, 0, {2, 3});
      f.send(1, 2, 7, one(7));
      got6 = f.recv(1, 2, 6, 1s);
      got5 = f.recv(1, 2, 5, 1s);  // taken by the dead before: a duplicate nobody else wants
      got8 = f.recv(1, 2, 8, 1s);
    } else if (a == 2) {
      f.send(2, 0, 5, one(5));
      f.send(2, 0, 6, one(6));
      got7 = f.recv(2, 0, 7, 1s);  // from rank 1, as rank 0's
      t7 = clock.now();
      f.send(2, 0, 8, one(8));
    }
  });
  EXPECT_FALSE(dead_recv.has_value());
  EXPECT_EQ(dead_woke, 11ms);
  ASSERT_TRUE(got5 && got6 && got7 && got8);
  EXPECT_EQ(*got5, one(5));
  EXPECT_EQ(*got6, one(6));
  EXPECT_EQ(*got7, one(7));
  EXPECT_EQ(*got8, one(8));
  // Site 0 -> 1 serializes the notices to ranks 2 and 3 (8 bytes: 98 on the wire, 784 ns each),
  // then tag 7 (1 byte: 91 bytes, 728 ns); 10 ms one way.
  EXPECT_EQ(t7, 20ms + 784ns + 784ns + 728ns + 10ms);
  EXPECT_EQ(f.address_of(2, 0), 1);
  EXPECT_EQ(f.address_of(3, 0), 1);
  EXPECT_EQ(f.address_of(2, 1), 1);
  EXPECT_EQ(f.address_of(1, 0), 0);  // its own site was not told
}

// A fiber may switch inside a catch block while another throws and catches (the shrink agreement
// runs in one): each must rethrow its own exception, and each sees its own actor after a switch.
// Actor 0 rethrows while actor 1 is inside its own catch block, then actor 1 rethrows.
TEST_P(VirtualTime, EachActorKeepsItsOwnExceptionAndActorAcrossSwitches) {
  VirtualScheduler s(GetParam());
  bool caught[2] = {false, false};  // each is in its catch block (set under update)
  bool rethrew0 = false;
  std::string rethrown[2];
  int current_after[2] = {-1, -1};
  int uncaught[2] = {-1, -1};
  auto flag = [&](const bool& f) {
    return [&f]() -> std::optional<Nanos> { return f ? std::optional<Nanos>(1ms) : std::nullopt; };
  };
  run_actors(s, 2, [&](int a) {
    try {
      throw std::runtime_error(a == 0 ? "error of actor 0" : "error of actor 1");
    } catch (const std::exception&) {
      s.update([&] { caught[a] = true; });
      if (a == 0) s.wait(a, flag(caught[1]), std::nullopt, "actor 1 in its catch block");
      if (a == 1) s.wait(a, flag(rethrew0), std::nullopt, "actor 0's rethrow");
      current_after[a] = s.current();
      uncaught[a] = std::uncaught_exceptions();
      try {
        throw;
      } catch (const std::exception& e) {
        rethrown[a] = e.what();
      }
      if (a == 0) s.update([&] { rethrew0 = true; });
    }
  });
  EXPECT_EQ(rethrown[0], "error of actor 0");
  EXPECT_EQ(rethrown[1], "error of actor 1");
  EXPECT_EQ(current_after[0], 0);
  EXPECT_EQ(current_after[1], 1);
  EXPECT_EQ(uncaught[0], 0);
  EXPECT_EQ(uncaught[1], 0);
}

// An actor joins another it started, after waiting for its last action as the engine does (a join
// keeps the joiner running at its instant: joined earlier, an action of the child after that
// instant would wait for it forever). With fibers the joiner is suspended while the child ends.
TEST_P(VirtualTime, AnActorJoinsTheActorItStarted) {
  VirtualScheduler s(GetParam());
  std::vector<std::pair<std::string, Nanos>> log;
  std::optional<Nanos> child_done;
  run_actors(s, 1, [&](int a) {
    s.charge(a, 3ms);
    const int child = s.add_actor("child", s.now(a));
    emu::ActorThread th = s.start("child", [&] {
      s.bind(child);
      s.charge(child, 4ms);
      s.act(child, [&](Nanos t) {
        log.emplace_back("child", t);
        child_done = t;
      });
      s.finish(child);
    });
    s.charge(a, 1ms);
    s.act(a, [&](Nanos t) { log.emplace_back("parent", t); });
    s.wait(a, [&] { return child_done; }, std::nullopt, "the child's action");
    th.join();
    s.act(a, [&](Nanos t) { log.emplace_back("parent after join", t); });
  });
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0], std::make_pair(std::string("parent"), Nanos(4ms)));
  EXPECT_EQ(log[1], std::make_pair(std::string("child"), Nanos(7ms)));
  EXPECT_EQ(log[2], std::make_pair(std::string("parent after join"), Nanos(7ms)));
}

INSTANTIATE_TEST_SUITE_P(Actors, VirtualTime,
                         ::testing::Values(VirtualScheduler::Actors::kThreads, VirtualScheduler::Actors::kFibers),
                         actors_name);
INSTANTIATE_TEST_SUITE_P(Actors, VirtualTimeFabric,
                         ::testing::Values(VirtualScheduler::Actors::kThreads, VirtualScheduler::Actors::kFibers),
                         actors_name);

}  // namespace
