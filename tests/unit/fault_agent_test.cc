// FaultAgent (engine/faults/fault_agent.h), the one node-fault state machine of every network
// mode, over a scripted FaultPort that logs each call: what the agent asks its port, in which
// order and with which arguments, at the timeline's slow events and kills, at a restart's
// boundary and at full recovery's regrowth (before or after the restore, as each mode needs).
// The modes' own ports run in kill_tiny (embedded), process_agent_tests and kill_process
// (sockets). No libtorch.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include "engine/faults/fault_agent.h"
#include "engine/result.h"

using namespace geotb;
using namespace geotb::engine;
using namespace std::chrono_literals;

namespace {

std::string ints(const std::vector<int>& v) {
  std::string s = "[";
  for (int x : v) {
    if (s.size() > 1) s += ',';
    s += std::to_string(x);
  }
  s += ']';
  return s;
}

std::string ints(const std::set<int>& v) { return ints(std::vector<int>(v.begin(), v.end())); }

/// Logs every call the agent makes; a clock set by the test; a fixed answer for the rest.
class ScriptedPort final : public FaultPort {
 public:
  std::vector<std::string> calls;
  Nanos clock{0};
  bool is_fenced = false;
  RecoveryRestart recovery{{2, 3}, 6};
  std::vector<StateBuffers> handed_state;

  Nanos now() override { return clock; }
  Nanos t0() override { return 10s; }
  size_t record_slow(const model::FaultRecord& r) override {
    calls.push_back("record_slow step " + std::to_string(r.step) + " factor " + std::to_string(r.factor.value_or(0)).substr(0, 3) +
                    " at " + std::to_string(r.at_s).substr(0, 3));
    return 7;
  }
  void slow_ended(size_t record, double until_s) override {
    calls.push_back("slow_ended " + std::to_string(record) + " at " + std::to_string(until_s).substr(0, 3));
  }
  void killed(int step, Nanos) override { calls.push_back("killed " + std::to_string(step)); }
  void resumed(const std::vector<int>&, int, const std::vector<int>&, std::optional<int>) override {
    calls.push_back("resumed");
  }
  bool record_all() const override { return true; }
  bool checkpoint_cannot_complete(int steps) const override { return steps == 4; }
  void rewound() override { calls.push_back("rewound"); }
  void step_begins(WorkerEnv&) override {}
  void set_factor(double factor) override { calls.push_back("set_factor " + std::to_string(factor).substr(0, 3)); }
  void after_compute(WorkerEnv&) override {}
  void done(WorkerEnv&) override { calls.push_back("done"); }
  bool fenced() const override { return is_fenced; }
  bool death_pending() override {
    calls.push_back("death_pending");
    return false;
  }
  std::set<int> declared() override { return {}; }
  void handled(const std::set<int>& h) override { calls.push_back("handled " + ints(h)); }
  void leave_group(WorkerEnv&, const std::vector<int>&, const std::set<int>&) override {}
  bool agreement_failed(const TransportError&) override { return false; }
  void join_group(WorkerEnv&, const std::vector<int>&, const std::set<int>&) override {}
  RejoinMessage restart_message(WorkerEnv&, int steps, uint64_t tag_epoch, bool full_recovery) override {
    calls.push_back("restart_message " + std::to_string(steps) + " epoch " + std::to_string(tag_epoch) +
                    (full_recovery ? " full" : ""));
    RejoinMessage m;
    m.tag_epoch = tag_epoch;
    m.steps = steps;
    m.group_tags = 99;
    return m;
  }
  void revive(const std::vector<int>& back_all, int steps, bool) override {
    calls.push_back("revive " + ints(back_all) + " at " + std::to_string(steps));
  }
  void take_back(WorkerEnv&, const GrownGroup& g, const RejoinMessage& m, bool) override {
    calls.push_back("take_back " + ints(g.back) + " group " + ints(g.group) + " tags " + std::to_string(m.group_tags));
  }
  void hand_over(WorkerEnv&, int r, RejoinMessage m, const char* policy, bool from_checkpoint) override {
    calls.push_back("hand_over " + std::to_string(r) + " " + policy + " members " + ints(m.members) + " ring " +
                    ints(m.ring) + " steps " + std::to_string(m.steps) + (from_checkpoint ? " from_checkpoint" : ""));
    handed_state.push_back(m.state);
  }
  void taken_back(WorkerEnv&, const GrownGroup& g, const RejoinMessage&, bool full_recovery) override {
    calls.push_back("taken_back " + ints(g.back) + (full_recovery ? " full" : ""));
  }
  std::set<int> restart_sites(WorkerEnv&, int steps, const StateBuffers&, const std::set<int>& handled) override {
    calls.push_back("restart_sites " + std::to_string(steps) + " handled " + ints(handled));
    return {};
  }
  RecoveryRestart restarted_by_recovery() override { return recovery; }
  void rejoined(const std::set<int>& handled, int steps) override {
    calls.push_back("rejoined " + ints(handled) + " at " + std::to_string(steps));
  }
};

model::FaultEvent event(model::FaultEvent::Kind kind, int worker, int at_step) {
  model::FaultEvent e;
  e.kind = kind;
  e.dc = 0;
  e.worker = worker;
  e.at_step = at_step;
  return e;
}

/// Rank `rank` of 4 workers in data centers of `workers` (per-DC groups), with `plan`.
FaultAgentConfig config(const model::FaultPlan& plan, int rank, std::vector<int> workers = {4}) {
  FaultAgentConfig c;
  c.plan = plan;
  c.groups = FaultGroups{model::RankLayout(std::move(workers)), false};
  c.rank = rank;
  c.shards = std::make_shared<const std::vector<std::vector<uint32_t>>>(
      std::vector<std::vector<uint32_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  c.seed = 5;
  c.restarts = std::make_shared<const RestartSchedule>(restart_schedule(plan, c.groups.layout));
  return c;
}

WorkerEnv env_of(int rank, std::vector<int> ring) {
  WorkerEnv env;
  env.rank = rank;
  env.world = 4;
  env.ring = std::move(ring);
  return env;
}

TEST(FaultAgent, TheTimelinesSlowEventAndKillGoThroughThePort) {
  model::FaultPlan plan;
  model::FaultEvent slow = event(model::FaultEvent::Kind::kSlow, 1, 2);
  slow.factor = 3;
  slow.steps = 2;
  plan.events = {slow, event(model::FaultEvent::Kind::kKill, 1, 5)};
  ScriptedPort port;
  FaultAgent agent(config(plan, 1), port);
  WorkerEnv env = env_of(1, {0, 1, 2, 3});
  for (int step = 0; step < 5; ++step) {
    port.clock = 10s + std::chrono::seconds(step);  // step s begins s seconds into training
    agent.step_begins(env, step);
    agent.before_sync(env, step);
  }
  EXPECT_EQ(port.calls, (std::vector<std::string>{"record_slow step 2 factor 3.0 at 2.0", "set_factor 3.0",
                                                   "slow_ended 7 at 4.0", "set_factor 1.0"}));
  port.calls.clear();
  agent.step_begins(env, 5);
  try {
    agent.before_sync(env, 5);
    FAIL() << "the kill at step 5 did not fire";
  } catch (const WorkerKilled& e) {
    EXPECT_STREQ(e.what(), "rank 1 killed by the scenario's timeline at step 5");
  }
  EXPECT_EQ(port.calls, (std::vector<std::string>{"killed 5"}));
  // Each kill fires once: the step redone alive after a rewind does not die again.
  EXPECT_NO_THROW(agent.before_sync(env, 5));
  EXPECT_TRUE(agent.record_all());
  EXPECT_TRUE(agent.checkpoint_cannot_complete(4));  // the port's answer
  EXPECT_FALSE(agent.checkpoint_cannot_complete(3));
  FaultAgentConfig unscheduled = config(plan, 1);
  unscheduled.restarts = nullptr;  // the owner computes the restart schedule once
  EXPECT_THROW(FaultAgent(unscheduled, port), std::invalid_argument);
}

TEST(FaultAgent, AFencedRankDiesAtItsNextSynchronisationAndARecoveryWithoutADeathIsNone) {
  ScriptedPort port;
  FaultAgent agent(config(model::FaultPlan{}, 2), port);
  WorkerEnv env = env_of(2, {0, 1, 2, 3});
  BatchSampler sampler({4, 5}, 5, 2);
  EXPECT_FALSE(agent.recover(env, 0, sampler));  // nothing declared: the step's failure is the run's
  EXPECT_EQ(port.calls, (std::vector<std::string>{"death_pending"}));
  port.is_fenced = true;
  try {
    agent.before_sync(env, 3);
    FAIL() << "a fenced rank went on";
  } catch (const WorkerKilled& e) {
    EXPECT_STREQ(e.what(), "rank 2 fenced: declared dead by a peer at step 3");
  }
}

TEST(FaultAgent, ARestartedProcessReplaysNoKillOfItsPredecessor) {
  model::FaultPlan plan;
  plan.events = {event(model::FaultEvent::Kind::kKill, 2, 5)};
  WorkerEnv env = env_of(2, {0, 1, 2, 3});
  {
    ScriptedPort port;
    FaultAgent in_process(config(plan, 2), port);  // restarted in its own thread: its timeline knows
    in_process.rejoined({0, 1, 2, 3}, 3, false);
    EXPECT_THROW(in_process.before_sync(env, 5), WorkerKilled);
  }
  ScriptedPort port;
  FaultAgent successor(config(plan, 2), port);
  successor.rejoined({0, 1, 2}, 3, true);  // its coordinator's group: rank 3 still dead
  EXPECT_NO_THROW(successor.before_sync(env, 5));
  EXPECT_EQ(port.calls, (std::vector<std::string>{"rejoined [3] at 3"}));
}

TEST(FaultAgent, AtARestartsBoundaryTheGroupGrowsAndOnlyTheCoordinatorHandsOver) {
  model::FaultPlan plan;
  plan.events = {event(model::FaultEvent::Kind::kKill, 2, 1), event(model::FaultEvent::Kind::kRestart, 2, 3)};
  StateBuffers state;
  state.entries.push_back({"params", {1, 2, 3}});
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ScriptedPort port;
    FaultAgent agent(config(plan, rank), port);
    agent.rejoined({0, 1, 3}, 1, false);  // rank 2 handled as dead here
    WorkerEnv env = env_of(rank, {0, 1, 3});
    EXPECT_FALSE(agent.reepoch_due(env, 2));
    ASSERT_EQ(agent.reepoch_due(env, 3), std::optional<uint64_t>(1));
    port.calls.clear();
    agent.at_reepoch(env, 3, state);
    std::vector<std::string> want{"restart_message 3 epoch 1", "restart_sites 3 handled [2]", "revive [2] at 3",
                                  "take_back [2] group [0,1,2,3] tags 99"};
    if (rank == 0) want.push_back("hand_over 2 rejoin members [0,1,2,3] ring [0,1,2,3] steps 3");
    want.push_back("taken_back [2]");
    EXPECT_EQ(port.calls, want);
    EXPECT_EQ(env.ring, (std::vector<int>{0, 1, 2, 3}));
    if (rank == 0) {
      ASSERT_EQ(port.handed_state.size(), 1u);
      EXPECT_EQ(port.handed_state[0].entries.at(0).bytes, (std::vector<uint8_t>{1, 2, 3}));
    }
  }
  // Another data center's restart: every rank revives the restarted and passes the boundary with
  // the others (the process modes' full recovery waits there), its own group unchanged.
  ScriptedPort port;
  FaultAgent agent(config(plan, 0, {2, 2}), port);  // rank 2 is dc 1's leader: another group
  WorkerEnv env = env_of(0, {0, 1, 3});
  agent.at_reepoch(env, 3, state);
  EXPECT_EQ(port.calls, (std::vector<std::string>{"restart_message 3 epoch 1", "restart_sites 3 handled []",
                                                   "revive [2] at 3", "taken_back []"}));
  EXPECT_EQ(env.ring, (std::vector<int>{0, 1, 3}));
}

TEST(FaultAgent, FullRecoverysRestartedRejoinAfterTheRestoreOrBeforeIt) {
  model::FaultPlan plan;
  plan.events = {event(model::FaultEvent::Kind::kKill, 2, 1), event(model::FaultEvent::Kind::kKill, 3, 1)};
  plan.full_recovery.above_fraction = 0.25;
  plan.full_recovery.then = "restarts";
  ASSERT_TRUE(plan.full_recovery_restarts(4));
  const std::vector<std::string> regrowth{"restart_message 6 epoch {E} full", "revive [2,3] at 6",
                                          "take_back [2,3] group [0,1,2,3] tags 99",
                                          "hand_over 2 full_recovery members [0,1,2,3] ring [0,1,2,3] steps 6 from_checkpoint",
                                          "hand_over 3 full_recovery members [0,1,2,3] ring [0,1,2,3] steps 6 from_checkpoint",
                                          "taken_back [2,3] full"};
  auto with_epoch = [&](const std::string& e) {
    std::vector<std::string> v = regrowth;
    v[0].replace(v[0].find("{E}"), 3, e);
    return v;
  };
  BatchSampler sampler({0, 1}, 5, 0);
  {  // the embedded mode: after the restore, in the loop's new tag epoch
    ScriptedPort port;
    FaultAgent agent(config(plan, 0), port);
    agent.rejoined({0, 1}, 1, false);
    WorkerEnv env = env_of(0, {0, 1});
    port.calls.clear();
    agent.before_rewind(env, sampler);
    EXPECT_TRUE(port.calls.empty());
    agent.after_rewind(env, sampler, 4);
    std::vector<std::string> want{"rewound"};
    for (const std::string& c : with_epoch("4")) want.push_back(c);
    EXPECT_EQ(port.calls, want);
    EXPECT_EQ(env.ring, (std::vector<int>{0, 1, 2, 3}));
  }
  // The process modes: before it (their Gloo group must exist when the strategy is made), in
  // tag epoch 1, which the loop must then be in.
  ScriptedPort port;
  FaultAgentConfig process = config(plan, 0);
  process.regrow_before_restore = true;
  FaultAgent agent(process, port);
  agent.rejoined({0, 1}, 1, false);
  WorkerEnv env = env_of(0, {0, 1});
  port.calls.clear();
  agent.before_rewind(env, sampler);
  EXPECT_EQ(port.calls, with_epoch("1"));
  port.calls.clear();
  agent.after_rewind(env, sampler, 1);
  EXPECT_EQ(port.calls, (std::vector<std::string>{"rewound"}));
  try {
    agent.after_rewind(env, sampler, 2);
    FAIL() << "a rewind into another tag epoch than the restarted were told went on";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "rank 0: full recovery in tag epoch 2, but its restarted ranks were told 1");
  }
}

}  // namespace
