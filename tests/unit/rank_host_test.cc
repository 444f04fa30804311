// run_rank (engine/rank_host.h): the rules one rank's run follows in every network mode, on a
// scripted host. One rank (naive_ddp over a one-site fabric), a learner whose "loss" is the sum of
// the example indices it was given (so the series shows exactly where the sampler was), a fault
// agent that kills the worker at a chosen step and vetoes a chosen checkpoint. No libtorch.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "emulator/inproc/fabric.h"
#include "engine/checkpoint/worker_state.h"
#include "engine/faults/rejoin.h"
#include "engine/rank_host.h"
#include "engine/strategies/table.h"
#include "engine/transport/emulated.h"
#include "strategy_fixtures.h"

using namespace geotb;
using namespace geotb::engine;

namespace {

constexpr int kSteps = 10;
constexpr size_t kExamples = 40;

/// Loss = the sum of the batch's labels, which are the example indices.
class IndexLearner final : public Learner {
 public:
  size_t num_params() const override { return x_.size(); }
  float* params() override { return x_.data(); }
  float* grads() override { return g_.data(); }
  double forward_backward(const float*, const int64_t* y, size_t n) override {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += static_cast<double>(y[i]);
    return sum;
  }
  double accuracy(const Dataset&) override { return 0; }

 private:
  std::vector<float> x_ = {1, 2}, g_ = {0.5f, -0.25f};
};

Dataset indexed_data() {
  Dataset d;
  d.size = kExamples;
  d.rows = d.cols = 1;
  for (size_t i = 0; i < kExamples; ++i) {
    d.images.push_back(0);
    d.labels.push_back(static_cast<int64_t>(i));
  }
  return d;
}

/// Kills the worker in its first life before step `kill_at`'s synchronisation; vetoes the
/// checkpoint after `veto` steps.
class ScriptedFaults final : public FaultHooks {
 public:
  ScriptedFaults(int kill_at, int veto) : kill_at_(kill_at), veto_(veto) {}
  void step_begins(WorkerEnv&, int) override {}
  void before_sync(WorkerEnv&, int step) override {
    if (step == kill_at_ && !killed_) {
      killed_ = true;
      throw WorkerKilled("killed by the test");
    }
  }
  bool recover(WorkerEnv&, int, BatchSampler&) override { return false; }
  bool record_all() const override { return false; }
  std::optional<uint64_t> reepoch_due(WorkerEnv&, int) override { return std::nullopt; }
  void at_reepoch(WorkerEnv&, int, const StateBuffers&) override {}
  void before_rewind(WorkerEnv&, BatchSampler&) override {}
  void after_rewind(WorkerEnv&, BatchSampler&, uint64_t) override {}
  void done(WorkerEnv&) override {}
  bool checkpoint_cannot_complete(int steps) const override { return steps == veto_; }

 private:
  const int kill_at_, veto_;
  bool killed_ = false;
};

enum class Back { kNever, kFromCheckpoint, kHanded };

/// Checkpoints every 2 steps (with WAN counters {7, 8, 9}), kept in memory; after a kill, back
/// (`back`) from its checkpoint after 4 steps, or handed that state as a timeline restart would.
class ScriptedHost final : public RankHost {
 public:
  ScriptedHost(FaultHooks* faults, Back back) : faults_(faults), back_(back) {}

  std::chrono::nanoseconds start_line() override {
    ++starts;
    return clock_.now();
  }
  std::chrono::nanoseconds restart_line(std::chrono::nanoseconds elapsed) override {
    restart_elapsed.push_back(elapsed);
    return clock_.now();
  }
  void finish_line() override { ++finishes; }
  FaultHooks* faults() override { return faults_; }
  bool checkpoints() const override { return true; }
  bool checkpoint_due(int steps) override {
    asked.push_back(steps);
    return steps % 2 == 0;
  }
  std::optional<WanCounters> checkpoint_wan_counters() override { return WanCounters{7, 8, 9, std::nullopt}; }
  void checkpoint_commit(int steps, const StateBuffers& state) override { committed[steps] = state; }
  bool rewinds() const override { return false; }
  const StateBuffers* rewind(int) override { return nullptr; }
  std::optional<RankRejoin> after_kill(WorkerEnv& env, const WorkerRecord& rec) override {
    ++kills;
    if (back_ == Back::kNever) return std::nullopt;
    handed = committed.at(4);
    committed_loss = rec.loss;
    RankRejoin j;
    j.state = &handed;
    j.from_checkpoint = back_ == Back::kFromCheckpoint;
    j.steps = 4;
    // Back from its own checkpoint its series are the checkpoint's: run_rank drops these (poisoned
    // here, so that keeping them would show).
    const std::vector<double> series = j.from_checkpoint ? std::vector<double>(rec.loss.size(), -1.0) : rec.loss;
    j.life = FirstLife{env.times, env.exchanges, FirstLife::Series{series, rec.step_end_s, 5, 4}};
    return j;
  }

  int starts = 0, finishes = 0, kills = 0;
  std::vector<int> asked;
  std::map<int, StateBuffers> committed;
  std::vector<std::chrono::nanoseconds> restart_elapsed;
  StateBuffers handed;
  std::vector<double> committed_loss;  // the first life's series at its kill

 private:
  emu::SteadyClock clock_;
  FaultHooks* faults_;
  const Back back_;
};

struct RankRun {
  RankEnd end;
  WorkerRecord rec;
};

RankRun run_one(ScriptedHost& host) {
  const model::RankLayout layout({1});
  emu::SteadyClock clock;
  emu::FabricConfig fc;
  fc.site_of = {0};
  emu::Fabric fabric(fc, clock);
  EmulatedTransport net(fabric, 0, std::chrono::seconds(5));
  IndexLearner learner;
  Sgd opt(SgdConfig{}, learner.num_params());
  test::Group g(1, learner.num_params());
  test::FakeIntra intra(g, 0);
  WorkerEnv env = test::fixture_env(0, layout, learner, opt, net, intra, clock);
  env.grad_tensors = {learner.num_params()};
  StrategyConfig scfg;
  scfg.name = "naive_ddp";
  WorkloadSpec work;
  work.steps = kSteps;
  work.batch_per_worker = 2;
  work.eval_points = 1;
  const Dataset data = indexed_data();
  std::vector<uint32_t> shard;
  for (uint32_t i = 0; i < kExamples; ++i) shard.push_back(i);
  RankRun r;
  r.end = run_rank(host, RankPlan{scfg, work, data, shard, nullptr, nullptr}, env, r.rec);
  return r;
}

TEST(RunRank, CheckpointsTheHostScheduleWithTheFaultsVetoAndItsWanCounters) {
  ScriptedFaults faults(/*kill_at=*/-1, /*veto=*/6);
  ScriptedHost host(&faults, Back::kNever);
  const RankRun r = run_one(host);
  EXPECT_EQ(r.end, RankEnd::kFinished);
  EXPECT_EQ(host.starts, 1);
  EXPECT_EQ(host.finishes, 1);
  // The schedule is asked at every boundary but the last, in order, whatever the veto says.
  EXPECT_EQ(host.asked, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  std::vector<int> steps;
  for (const auto& [s, state] : host.committed) {
    steps.push_back(s);
    const std::optional<WanCounters> c = wan_counters_of(state);
    ASSERT_TRUE(c) << s;
    EXPECT_EQ(c->messages, 7u);
    EXPECT_EQ(c->payload_bytes, 8u);
    EXPECT_EQ(c->wire_bytes, 9u);
    EXPECT_EQ(resume_point(state).steps_done, s);
  }
  EXPECT_EQ(steps, (std::vector<int>{2, 4, 8}));  // 6 vetoed
}

TEST(RunRank, AKillWithoutRestartEndsTheRankWithoutTheFinishLine) {
  ScriptedFaults faults(/*kill_at=*/5, /*veto=*/-1);
  ScriptedHost host(&faults, Back::kNever);
  const RankRun r = run_one(host);
  EXPECT_EQ(r.end, RankEnd::kKilled);
  EXPECT_EQ(host.kills, 1);
  EXPECT_EQ(host.finishes, 0);
  EXPECT_EQ(host.asked, (std::vector<int>{1, 2, 3, 4, 5}));  // killed in step 5, after boundary 5
  EXPECT_TRUE(std::isnan(r.rec.loss[5]));
  EXPECT_FALSE(std::isnan(r.rec.loss[4]));
}

TEST(RunRank, BackFromItsOwnCheckpointItRetrainsAsTheFaultFreeRunAndCheckpointsOn) {
  ScriptedFaults none(/*kill_at=*/-1, /*veto=*/-1);
  ScriptedHost reference_host(&none, Back::kNever);
  const RankRun reference = run_one(reference_host);

  ScriptedFaults faults(/*kill_at=*/5, /*veto=*/-1);
  ScriptedHost host(&faults, Back::kFromCheckpoint);
  const RankRun r = run_one(host);
  EXPECT_EQ(r.end, RankEnd::kFinished);
  EXPECT_EQ(host.kills, 1);
  EXPECT_EQ(host.starts, 1);  // the start line once; the restart its own start
  ASSERT_EQ(host.restart_elapsed.size(), 1u);
  EXPECT_EQ(host.restart_elapsed[0], resume_point(host.committed.at(4)).elapsed);
  // Its checkpoint's sampler position: the same batches as without the kill, so the same series.
  EXPECT_EQ(r.rec.loss, reference.rec.loss);
  // Checkpoints go on after it (a full recovery's restart heals every death before its boundary),
  // from the boundary after its checkpoint's.
  EXPECT_EQ(host.asked, (std::vector<int>{1, 2, 3, 4, 5, 5, 6, 7, 8, 9}));
  EXPECT_EQ(host.committed.size(), 4u);  // 2, 4, 6, 8
}

TEST(RunRank, HandedAGroupStateItWalksItsOwnShardAfreshAndTakesNoCheckpoints) {
  ScriptedFaults faults(/*kill_at=*/5, /*veto=*/-1);
  ScriptedHost host(&faults, Back::kHanded);
  const RankRun r = run_one(host);
  EXPECT_EQ(r.end, RankEnd::kFinished);
  EXPECT_EQ(host.asked, (std::vector<int>{1, 2, 3, 4, 5}));  // none after the restart
  // The handed state's sampler was replaced by the worker's own, on the restart's stream.
  StateBuffers expected = host.committed.at(4);
  std::vector<uint32_t> shard;
  for (uint32_t i = 0; i < kExamples; ++i) shard.push_back(i);
  own_sampler(expected, shard, WorkloadSpec{}.seed, 0, 1, 4);
  ASSERT_EQ(host.handed.entries.size(), expected.entries.size());
  for (size_t i = 0; i < expected.entries.size(); ++i) {
    EXPECT_EQ(host.handed.entries[i].name, expected.entries[i].name);
    EXPECT_EQ(host.handed.entries[i].bytes, expected.entries[i].bytes) << expected.entries[i].name;
  }
  // And it trains on it: step 4's batch is the first of a fresh sampler on stream rank + world * (4 + 1).
  BatchSampler fresh(shard, WorkloadSpec{}.seed, 5);
  std::vector<uint32_t> idx;
  fresh.next(2, idx);
  EXPECT_EQ(r.rec.loss[4], static_cast<double>(idx[0] + idx[1]));
  ScriptedFaults none(-1, -1);
  ScriptedHost reference_host(&none, Back::kNever);
  EXPECT_NE(r.rec.loss[4], run_one(reference_host).rec.loss[4]);  // (not the batch it had before)
  // Its own series before the boundary: its first life's (steps 0-3 here: the boundary is 4).
  for (int s = 0; s < 4; ++s) EXPECT_EQ(r.rec.loss[static_cast<size_t>(s)], host.committed_loss[static_cast<size_t>(s)]) << s;
}

}  // namespace
