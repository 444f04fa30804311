// The process modes' fault agent (FaultAgent over SocketFaultPort, engine/faults/socket_port.h) in
// one process: four ranks on threads, each with its real SocketTransport over loopback and its
// agent wired to it as process_worker.cc wires them (on_peer_failed, the "recovering" notices,
// attach, full recovery over a store). The scenario's kill fires in the victim's before_sync; from
// then on the survivors' transports hear nothing from it (SocketTransportConfig::deaf_to, a host
// gone silent), so they declare it after timeout + confirmation of silence. Checked exactly: the
// kill's record, the detection's times against the silence the transport measured, which receive
// fails how (the dead peer's own, or one interrupted by a member's notice), the agreement, the
// ring, each survivor's inherited shard and sampler stream, the resume records, and the full
// recovery's decision and boundary; a DC leader's death: its survivor takes over its address and
// gets what was sent to it; and a timeline restart: the new incarnation revived at its new address,
// handed its group, heard again.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "engine/collectives/store.h"
#include "engine/data/fashion_mnist.h"
#include "engine/checkpoint/state.h"
#include "engine/faults/socket_port.h"
#include "engine/faults/rejoin.h"
#include "engine/faults/shrink.h"
#include "engine/transport/socket/socket_transport.h"
#include "engine/transport/transport.h"
#include "engine/worker_loop.h"

namespace geotb::engine {
namespace {

using namespace std::chrono_literals;

constexpr int kWorld = 4;
constexpr int kVictim = 3;
constexpr int kKillStep = 2;
constexpr uint64_t kSeed = 7;
constexpr uint64_t kStepTag = 7;  // the test's stand-in for a step's synchronisation

model::FaultPlan plan_with_a_host_kill(int dc, int worker) {
  model::FaultPlan p;
  p.heartbeats = true;
  p.heartbeat.interval = 50ms;
  p.heartbeat.timeout = 200ms;
  p.heartbeat.confirmation = 100ms;  // peer_timeout 300 ms
  p.heartbeat.witnesses = 0;         // the observer's own silence decides: how "silence"
  p.shard = "redistribute";
  p.full_recovery.above_fraction = 0.2;  // 1 dead of 4 is more than 0.8: the first death decides
  model::FaultEvent kill;
  kill.kind = model::FaultEvent::Kind::kKill;
  kill.dc = dc;
  kill.worker = worker;
  kill.at_step = kKillStep;
  kill.scope = "host";
  p.events.push_back(kill);
  return p;
}

/// Rank r's agent config, as process_worker.cc makes it.
FaultAgentConfig config(const model::FaultPlan& plan, const FaultGroups& groups, int r,
                        const std::vector<std::vector<uint32_t>>& all_shards) {
  return {plan, groups, r, std::make_shared<const std::vector<std::vector<uint32_t>>>(all_shards), kSeed,
          std::make_shared<const RestartSchedule>(restart_schedule(plan, groups.layout))};
}

std::vector<std::vector<uint32_t>> shards() {
  std::vector<std::vector<uint32_t>> s(kWorld);
  for (uint32_t r = 0; r < kWorld; ++r)
    for (uint32_t i = 0; i < 25; ++i) s[r].push_back(100 * r + i);
  return s;
}

/// Rank r's transport as process_worker.cc configures it for node faults (heartbeats every 50 ms,
/// a peer silent for 300 ms failed), its callbacks into `port`.
SocketTransportConfig transport_config(int r, int world, SocketFaultPort& port) {
  SocketTransportConfig tc;
  tc.rank = r;
  tc.world = world;
  tc.listen_host = "127.0.0.1";
  tc.streams = 1;
  tc.heartbeat = 50ms;
  tc.peer_timeout = 300ms;  // timeout + confirmation, as process_worker.cc derives it
  tc.recv_timeout = 5s;  // a receive the test expects returns at once; a broken one fails fast
  tc.connect_timeout = 20s;
  tc.on_peer_failed = [&port](int peer, const std::string& why, std::optional<std::chrono::milliseconds> silent,
                               const std::string& how) { port.peer_failed(peer, why, silent, how); };
  tc.notice_tag = SocketFaultPort::kRecoveringTag;
  tc.on_notice = [&port](int peer, std::vector<uint8_t> bytes) { port.peer_notice(peer, bytes); };
  return tc;
}

/// Every rank's agent and transport, wired as process_worker.cc wires them; the survivors'
/// transports hear nothing from `victim` once `victim_dead` is set (a host gone silent).
struct Ranks {
  std::vector<std::unique_ptr<ProcessFaultAgent>> agents;
  std::vector<std::unique_ptr<SocketTransport>> socks;
  std::vector<SocketEndpoint> peers;

  Ranks(const model::FaultPlan& plan, const FaultGroups& groups, const std::vector<std::vector<uint32_t>>& all_shards,
        const emu::Clock& clock, std::atomic<bool>& victim_dead, int victim) {
    const int world = groups.world();
    for (int r = 0; r < world; ++r)
      agents.push_back(std::make_unique<ProcessFaultAgent>(config(plan, groups, r, all_shards), clock));
    for (int r = 0; r < world; ++r) {
      SocketTransportConfig tc = transport_config(r, world, agents[static_cast<size_t>(r)]->port);
      if (r != victim) tc.deaf_to = [&victim_dead, victim](int p) { return p == victim && victim_dead.load(); };
      socks.push_back(std::make_unique<SocketTransport>(tc));
    }
    for (int r = 0; r < world; ++r) peers.push_back({"127.0.0.1", socks[static_cast<size_t>(r)]->port()});
  }

  /// Rank r's part before the start line: full recovery enabled (when `store`), the transport
  /// started and attached, every watched pair connected.
  void connect(int r, const FaultGroups& groups, std::shared_ptr<StoreHandle> store, RestartIo io = {}) {
    SocketFaultPort& port = agents[static_cast<size_t>(r)]->port;
    SocketTransport& sock = *socks[static_cast<size_t>(r)];
    if (store) port.enable_full_recovery(std::move(store), "t/");
    sock.start(peers);
    port.attach(sock, 300ms);
    port.set_endpoints(peers, std::move(io));
    for (int p : groups.watched_by(r))
      if (!sock.await_streams(p, 20s)) throw std::runtime_error("streams to " + std::to_string(p) + " not open");
  }
};

/// Rank r's worker as the agent sees it: every rank in the ring, each DC's local rank 0 leading.
WorkerEnv env_for(const FaultGroups& g, int r, Transport& net, const emu::Clock& clock) {
  WorkerEnv env;
  env.rank = r;
  env.world = g.world();
  env.num_dcs = g.layout.dcs();
  env.layout = g.layout;
  env.dc_leaders = g.layout.leaders();
  for (int x = 0; x < g.world(); ++x) env.ring.push_back(x);
  env.net = &net;
  env.clock = &clock;
  return env;
}

/// What one survivor saw, read after every thread joined.
struct Seen {
  std::string failed_with;  // the step's receive: "dead" (PeerDeadError) or "interrupted" (PeerDeclaredDead)
  bool recovered = false;
  std::vector<int> ring;
  std::vector<std::vector<uint32_t>> batches;  // the sampler after recover
  bool rewinds_at_3 = false;
  model::RankFaultLog log;
  std::string error;
};

/// Every rank on its own thread: connected (Ranks::connect), its worker (env_for) and sampler
/// made, then at a common start line, started; then `body(r, faults, transport, env, sampler,
/// seen[r])`. An exception is seen[r].error, and `on_error` runs (to release ranks waiting on it).
/// `io`: how restarted ranks' addresses are found and their coordinators announced.
template <class Body, class OnError>
std::vector<std::thread> run_ranks(Ranks& ranks, const FaultGroups& groups, std::shared_ptr<StoreHandle> store,
                                   const std::vector<std::vector<uint32_t>>& all_shards, const emu::Clock& clock,
                                   std::barrier<>& start_line, std::vector<Seen>& seen, Body body, OnError on_error,
                                   const RestartIo& io = {}) {
  std::vector<std::thread> threads;
  for (int r = 0; r < groups.world(); ++r) {
    threads.emplace_back([&, store, body, on_error, io, r] {
      const size_t i = static_cast<size_t>(r);
      ProcessFaultAgent& pf = *ranks.agents[i];
      try {
        ranks.connect(r, groups, store, io);
        AgentGuardedTransport guarded(*ranks.socks[i], &pf.port);
        WorkerEnv env = env_for(groups, r, guarded, clock);
        BatchSampler sampler(all_shards[i], kSeed, static_cast<uint64_t>(r));
        start_line.arrive_and_wait();
        pf.port.started(clock.now());
        body(r, pf, guarded, env, sampler, seen[i]);
      } catch (const std::exception& e) {
        seen[i].error = e.what();
        on_error();
      }
    });
  }
  return threads;
}

TEST(ProcessFaultAgent, ASilentHostIsDeclaredTheGroupShrinksAroundItAndFullRecoveryIsDecided) {
  const model::FaultPlan plan = plan_with_a_host_kill(0, kVictim);
  const FaultGroups groups{model::RankLayout(std::vector<int>{kWorld}), false};  // one DC: its group
  const auto all_shards = shards();
  const emu::SteadyClock clock;
  auto store = make_inprocess_store();
  std::atomic<bool> victim_dead{false};

  Ranks ranks(plan, groups, all_shards, clock, victim_dead, kVictim);
  auto& agents = ranks.agents;

  std::barrier start_line(kWorld);
  std::atomic<bool> survivors_done{false};
  std::vector<Seen> seen(kWorld);
  std::optional<int> victim_killed_at;
  std::vector<std::thread> threads = run_ranks(ranks, groups, store, all_shards, clock, start_line, seen,
      [&](int r, ProcessFaultAgent& pf, AgentGuardedTransport& guarded, WorkerEnv& env, BatchSampler& sampler, Seen& me) {
      for (int step = 0; step < kKillStep; ++step) {
        EXPECT_FALSE(pf.port.rewind_due(step));
        pf.agent.step_begins(env, step);
        pf.agent.before_sync(env, step);
      }
      EXPECT_FALSE(pf.port.rewind_due(kKillStep));
      pf.agent.step_begins(env, kKillStep);
      if (r == kVictim) {
        // Well after every rank's start, so that its last heartbeat heard is after each one's
        // start too (a detection's last_heard_s is clamped to the start).
        clock.sleep_until(clock.now() + 200ms);
        EXPECT_THROW(pf.agent.before_sync(env, kKillStep), WorkerKilled);
        victim_killed_at = pf.port.log().killed_at_step;
        victim_dead = true;  // a host gone silent: its sockets stay open, nothing it sends is heard
        while (!survivors_done) std::this_thread::sleep_for(10ms);
        return;
      }
      pf.agent.before_sync(env, kKillStep);
      // The step's synchronisation: ranks 1 and 2 wait for the victim itself; rank 0 (the
      // group's coordinator) for rank 1, which the victim's death does not fail on its own.
      try {
        (void)guarded.recv(r == 0 ? 1 : kVictim, kStepTag);
        me.failed_with = "returned";
      } catch (const PeerDeclaredDead&) {
        me.failed_with = "interrupted";
      } catch (const PeerDeadError&) {
        me.failed_with = "dead";
      }
      me.recovered = pf.agent.recover(env, kKillStep, sampler);
      me.ring = env.ring;
      std::vector<uint32_t> batch;
      for (int b = 0; b < 5; ++b) {
        sampler.next(4, batch);
        me.batches.push_back(batch);
      }
      me.rewinds_at_3 = pf.port.rewind_due(kKillStep + 1);
      pf.agent.done(env);
      me.log = pf.port.log();
      }, [] {});
  for (int r = 0; r < kWorld; ++r)
    if (r != kVictim) threads[static_cast<size_t>(r)].join();
  survivors_done = true;
  threads[kVictim].join();

  EXPECT_EQ(victim_killed_at, kKillStep);
  EXPECT_TRUE(agents[kVictim]->port.was_killed());
  const std::set<int> dead{kVictim};
  for (int r = 0; r < kWorld; ++r) {
    if (r == kVictim) continue;
    SCOPED_TRACE("rank " + std::to_string(r));
    const Seen& me = seen[static_cast<size_t>(r)];
    ASSERT_EQ(me.error, "");
    // Ranks 1, 2: the receive from the dead peer failed on its own; rank 0's, from a live member,
    // was interrupted by that member's notice that it recovers from rank 3.
    EXPECT_EQ(me.failed_with, r == 0 ? "interrupted" : "dead");
    EXPECT_TRUE(me.recovered);
    EXPECT_EQ(me.ring, (std::vector<int>{0, 1, 2}));
    EXPECT_TRUE(agents[static_cast<size_t>(r)]->port.recovered_from(kVictim));
    EXPECT_TRUE(agents[static_cast<size_t>(r)]->port.saw_a_death());
    // Its shard grown by its share of the victim's, walked on the first recovery's stream.
    BatchSampler expected(inherit_shards(groups, r, all_shards[static_cast<size_t>(r)], all_shards, dead, {kVictim}),
                          kSeed, redistributed_stream(r, kWorld, 1));
    std::vector<uint32_t> batch;
    for (const auto& got : me.batches) {
      expected.next(4, batch);
      EXPECT_EQ(got, batch);
    }
    // One detection: the victim, by silence, declared once the 300 ms the transport measured
    // without a frame had passed; suspected 200 ms (the timeout) after it was last heard.
    ASSERT_EQ(me.log.detections.size(), 1u);
    const model::Detection& d = me.log.detections[0];
    EXPECT_EQ(d.observer, r);
    EXPECT_EQ(d.peer, kVictim);
    EXPECT_EQ(d.how, "silence");
    EXPECT_GT(d.last_heard_s, 0.1);
    EXPECT_GE(d.at_s - d.last_heard_s, 0.300 - 1e-9);
    EXPECT_NEAR(d.suspected_s, d.last_heard_s + 0.200, 1e-9);
    // One resume at the kill's step, in the group of 3 that rank 0 coordinates.
    ASSERT_EQ(me.log.resumed.size(), 1u);
    const model::RankFaultLog::Resume& res = me.log.resumed[0];
    EXPECT_EQ(res.peers, (std::vector<int>{kVictim}));
    EXPECT_EQ(res.step, kKillStep);
    EXPECT_EQ(res.group_size, 3);
    EXPECT_EQ(res.coordinator, r == 0);
    EXPECT_FALSE(res.took_over);
    EXPECT_GE(res.at_s, d.at_s);
    // Full recovery: rank 0's count (the coordinator's) crossed the threshold and decided; every
    // survivor had published boundary 2, so all go back at 3.
    EXPECT_TRUE(me.rewinds_at_3);
    ASSERT_EQ(me.log.rewound.has_value(), r == 0);
    if (r == 0) {
      EXPECT_EQ(me.log.rewound->dead, 1);
      ASSERT_TRUE(me.log.rewound->decided_at_s);
      EXPECT_GE(*me.log.rewound->decided_at_s, d.at_s);
    }
  }
}

TEST(ProcessFaultAgent, ADeadDcLeadersSurvivorTakesOverItsAddressAndGetsWhatWasSentToIt) {
  // Two DCs of two, per-DC groups; DC 0's leader (rank 0) is killed at step 2. Rank 1, its group's
  // survivor, declares it, leads DC 0 and takes over its address. Rank 2, DC 1's leader, watches
  // rank 0 too: it records the death and does not recover. What rank 2 had sent rank 0 at step 1
  // (kept for a successor, kKeptForSuccessor) reaches rank 1.
  model::FaultPlan plan = plan_with_a_host_kill(0, 0);
  plan.full_recovery.above_fraction = 1;  // off
  const FaultGroups groups{model::RankLayout(std::vector<int>{2, 2}), false};
  const auto all_shards = shards();
  const emu::SteadyClock clock;
  std::atomic<bool> victim_dead{false};
  Ranks ranks(plan, groups, all_shards, clock, victim_dead, 0);
  constexpr uint64_t kRoundTag = 9;

  std::barrier start_line(kWorld);
  std::atomic<bool> rank1_done{false};
  std::vector<Seen> seen(kWorld);
  std::vector<int> leaders_after;
  std::vector<uint8_t> round_at_successor;
  std::vector<std::thread> threads = run_ranks(ranks, groups, nullptr, all_shards, clock, start_line, seen,
      [&](int r, ProcessFaultAgent& pf, AgentGuardedTransport& guarded, WorkerEnv& env, BatchSampler& sampler, Seen& me) {
      for (int step = 0; step <= kKillStep; ++step) {
        pf.agent.step_begins(env, step);
        if (step == 1 && r == 2) guarded.send(0, kRoundTag, {42});  // DC 1's round to DC 0's leader
        if (step == kKillStep && r == 0) {
          clock.sleep_until(clock.now() + 200ms);
          EXPECT_THROW(pf.agent.before_sync(env, step), WorkerKilled);
          victim_dead = true;
          while (!rank1_done) std::this_thread::sleep_for(10ms);
          return;
        }
        pf.agent.before_sync(env, step);
      }
      if (r == 1) {
        try {
          (void)guarded.recv(0, kStepTag);
        } catch (const PeerDeadError&) {
          me.failed_with = "dead";
        }
        me.recovered = pf.agent.recover(env, kKillStep, sampler);
        me.ring = env.ring;
        leaders_after = env.dc_leaders;
        round_at_successor = ranks.socks[1]->recv(2, kRoundTag);  // addressed to rank 0, sent again to its successor
        rank1_done = true;
      } else if (r == 2) {
        // DC 1's leader: records rank 0's death (its detection), recovers nothing.
        const auto until = clock.now() + 10s;
        while (pf.port.log().detections.empty() && clock.now() < until) std::this_thread::sleep_for(10ms);
        while (!rank1_done && clock.now() < until) std::this_thread::sleep_for(10ms);
      } else {
        while (!rank1_done) std::this_thread::sleep_for(10ms);
      }
      pf.agent.done(env);
      me.log = pf.port.log();
      }, [&] { rank1_done = true; });
  for (auto& t : threads) t.join();

  for (int r = 1; r < kWorld; ++r) EXPECT_EQ(seen[static_cast<size_t>(r)].error, "") << "rank " << r;
  EXPECT_EQ(ranks.agents[0]->port.log().killed_at_step, kKillStep);
  const Seen& successor = seen[1];
  EXPECT_EQ(successor.failed_with, "dead");
  EXPECT_TRUE(successor.recovered);
  EXPECT_EQ(successor.ring, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(leaders_after, (std::vector<int>{1, 2}));
  EXPECT_EQ(round_at_successor, (std::vector<uint8_t>{42}));
  ASSERT_EQ(successor.log.resumed.size(), 1u);
  EXPECT_EQ(successor.log.resumed[0].peers, (std::vector<int>{0}));
  EXPECT_EQ(successor.log.resumed[0].group_size, 1);
  EXPECT_TRUE(successor.log.resumed[0].coordinator);
  EXPECT_EQ(successor.log.resumed[0].took_over, 0);
  // DC 1's leader: one detection of rank 0, no recovery; rank 3 watches only its own group.
  ASSERT_EQ(seen[2].log.detections.size(), 1u);
  EXPECT_EQ(seen[2].log.detections[0].peer, 0);
  EXPECT_EQ(seen[2].log.detections[0].how, "silence");
  EXPECT_TRUE(seen[2].log.resumed.empty());
  EXPECT_FALSE(ranks.agents[2]->port.recovered_from(0));
  EXPECT_TRUE(seen[3].log.detections.empty());
  EXPECT_TRUE(seen[3].log.resumed.empty());
  // The reporting rank is the lowest the timeline never kills.
  EXPECT_TRUE(ranks.agents[1]->port.record_all());
  EXPECT_FALSE(ranks.agents[2]->port.record_all());
}

TEST(ProcessFaultAgent, ARestartedRankIsRevivedAtItsNewAddressAndHandedItsGroup) {
  // One DC of 4; rank 3 killed at step 2 (silent), the survivors shrink; restarted at step 4 as a
  // new incarnation at a new port. At boundary 4 every survivor revives it at the address it
  // published (addr/3/1, over a store as process_worker.cc's RestartIo), its group takes it back,
  // and rank 0, its coordinator, announces itself (rejoin/3/1) and hands it the grown group, the
  // ring, the Gloo prefix, every address and the state. Then both directions work and nobody
  // declares it again.
  model::FaultPlan plan = plan_with_a_host_kill(0, kVictim);
  plan.full_recovery.above_fraction = 1;  // off
  model::FaultEvent back;
  back.kind = model::FaultEvent::Kind::kRestart;
  back.dc = 0;
  back.worker = kVictim;
  back.at_step = 4;
  plan.events.push_back(back);
  plan.shard = "drop";
  const FaultGroups groups{model::RankLayout(std::vector<int>{kWorld}), false};
  const auto all_shards = shards();
  const emu::SteadyClock clock;
  auto store = make_inprocess_store();
  std::atomic<bool> victim_dead{false};
  Ranks ranks(plan, groups, all_shards, clock, victim_dead, kVictim);
  RestartIo io{[&](int r, int n) {
                 const std::string a = string_of(store_get(*store, "addr/" + std::to_string(r) + "/" + std::to_string(n)));
                 return SocketEndpoint{a.substr(0, a.rfind(':')), static_cast<uint16_t>(std::stoi(a.substr(a.rfind(':') + 1)))};
               },
               [&](int r, int n, int coordinator) {
                 store_add(*store, "rejoin/" + std::to_string(r) + "/" + std::to_string(n), coordinator + 1);
               }};
  constexpr uint64_t kHelloTag = 11;
  StateBuffers state;
  StateWriter(state, "params.").u64("x", 42);

  std::barrier start_line(kWorld);
  std::atomic<int> recovered{0};
  std::atomic<bool> hello_read{false};
  std::vector<Seen> seen(kWorld);
  std::optional<RejoinMessage> handed;
  model::RankFaultLog reborn_log;
  std::vector<std::vector<int>> rings(kWorld);
  std::vector<uint8_t> hello;
  std::vector<std::thread> threads = run_ranks(ranks, groups, nullptr, all_shards, clock, start_line, seen,
      [&](int r, ProcessFaultAgent& pf, AgentGuardedTransport& guarded, WorkerEnv& env, BatchSampler& sampler, Seen& me) {
        for (int step = 0; step < kKillStep; ++step) {
          pf.agent.step_begins(env, step);
          pf.agent.before_sync(env, step);
        }
        pf.agent.step_begins(env, kKillStep);
        if (r == kVictim) {
          clock.sleep_until(clock.now() + 200ms);
          EXPECT_THROW(pf.agent.before_sync(env, kKillStep), WorkerKilled);
          victim_dead = true;
          EXPECT_TRUE(pf.port.restarted_after(kKillStep));
          // Its process is gone once the survivors recovered; a new one starts at a new port.
          while (recovered < kWorld - 1) std::this_thread::sleep_for(10ms);
          ranks.socks[kVictim].reset();
          victim_dead = false;
          ProcessFaultAgent reborn(config(plan, groups, kVictim, all_shards), clock);
          SocketTransport sock(transport_config(kVictim, kWorld, reborn.port));
          store_set(*store, "addr/3/1", bytes_of("127.0.0.1:" + std::to_string(sock.port())));
          int64_t from = 0;
          for (const auto until = clock.now() + 10s; (from = store_add(*store, "rejoin/3/1", 0)) == 0;) {
            if (clock.now() > until) throw std::runtime_error("no coordinator announced itself in 10 s");
            std::this_thread::sleep_for(10ms);
          }
          RejoinMessage m = decode_rejoin(sock.recv(static_cast<int>(from - 1), kRejoinTag));
          std::vector<SocketEndpoint> peers;
          for (int p = 0; p < kWorld; ++p) {
            const std::string& a = m.words.at(static_cast<size_t>(p) + 1);
            peers.push_back({"127.0.0.1", static_cast<uint16_t>(std::stoi(a.substr(a.rfind(':') + 1)))});
          }
          sock.start(peers);
          reborn.port.attach(sock, 300ms);
          reborn.port.set_endpoints(peers, io);
          reborn.port.started(clock.now());
          reborn.agent.rejoined(m.members, m.steps, true);
          for (int p : groups.watched_by(kVictim))
            if (!sock.await_streams(p, 20s)) throw std::runtime_error("streams to " + std::to_string(p) + " not open");
          sock.send(1, kHelloTag, bytes_of("back"));
          handed = std::move(m);
          while (!hello_read) std::this_thread::sleep_for(10ms);
          clock.sleep_until(clock.now() + 500ms);  // heartbeats both ways: nobody declares anybody
          reborn.agent.done(env);
          reborn_log = reborn.port.log();
          return;
        }
        pf.agent.before_sync(env, kKillStep);
        try {
          (void)guarded.recv(kVictim, kStepTag);
        } catch (const PeerDeadError&) {
          me.failed_with = "dead";
        }
        me.recovered = pf.agent.recover(env, kKillStep, sampler);
        ++recovered;
        for (int step = kKillStep + 1; step <= 4; ++step) {
          if (const std::optional<uint64_t> epoch = pf.agent.reepoch_due(env, step)) {
            EXPECT_EQ(*epoch, 1u);
            EXPECT_EQ(step, 4);
            pf.agent.at_reepoch(env, step, state);
          }
        }
        rings[static_cast<size_t>(r)] = env.ring;
        if (r == 1) {
          hello = guarded.recv(kVictim, kHelloTag);
          hello_read = true;
        }
        while (!hello_read) std::this_thread::sleep_for(10ms);
        clock.sleep_until(clock.now() + 500ms);
        pf.agent.done(env);
        me.log = pf.port.log();
      },
      [&] {
        hello_read = true;
        recovered = kWorld;
      },
      io);
  for (auto& t : threads) t.join();

  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(seen[static_cast<size_t>(r)].error, "") << "rank " << r;
  ASSERT_TRUE(handed);
  EXPECT_EQ(handed->tag_epoch, 1u);
  EXPECT_EQ(handed->steps, 4);
  EXPECT_EQ(handed->members, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(handed->ring, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(handed->words.size(), 5u);
  EXPECT_EQ(handed->words[0], "rejoin-4");
  ASSERT_TRUE(handed->state.find("params.x"));
  EXPECT_EQ(StateReader(handed->state, "params.").u64("x"), 42u);
  EXPECT_EQ(hello, bytes_of("back"));
  for (int r = 0; r < kVictim; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const Seen& me = seen[static_cast<size_t>(r)];
    EXPECT_EQ(me.failed_with, "dead");
    EXPECT_TRUE(me.recovered);
    EXPECT_EQ(rings[static_cast<size_t>(r)], (std::vector<int>{0, 1, 2, 3}));
    EXPECT_FALSE(ranks.agents[static_cast<size_t>(r)]->port.recovered_from(kVictim));
    ASSERT_EQ(me.log.detections.size(), 1u);  // the kill's; the new incarnation is heard
    ASSERT_EQ(me.log.handed.size(), r == 0 ? 1u : 0u);
    if (r == 0) {
      EXPECT_EQ(me.log.handed[0].rank, kVictim);
      EXPECT_EQ(me.log.handed[0].step, 4);
      EXPECT_EQ(me.log.handed[0].group_size, 4);
      EXPECT_FALSE(me.log.handed[0].from_checkpoint);
    }
  }
  EXPECT_TRUE(reborn_log.detections.empty());
  EXPECT_TRUE(reborn_log.rejoined_at_s);
}

}  // namespace
}  // namespace geotb::engine
