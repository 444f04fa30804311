// Checkpoint and resume (docs/guide/checkpoints.md): a run checkpointed after k steps and resumed from
// that checkpoint ends with bit-identical weights, series and exchange log to the run that went
// through, for every strategy of the table that runs embedded (overlap on and off); every saved
// strategy buffer matters (a strategy forgetting it would fail the identity); truncated, corrupt
// and mismatched checkpoints are refused with their messages, before anything is restored.
// 2 DCs x 2 workers, a 32-unit MLP, 25 steps, virtual clock: each run takes well under a second.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "engine/checkpoint/file.h"
#include "engine/checkpoint/schedule.h"
#include "engine/checkpoint/worker_state.h"
#include "engine/cluster.h"
#include "tests/unit/engine_fixtures.h"

using namespace geotb::engine;
namespace fs = std::filesystem;

namespace {

ClusterSpec cluster() {
  return fixtures::two_dcs(2, 10e9, std::chrono::microseconds(50), 1e9, std::chrono::milliseconds(20));
}

WorkloadSpec work() { return fixtures::small_mlp(25, 7, 5); }

// 500 training examples per rank: epochs turn over.
const Datasets& data() { return fixtures::fashion_subset(2000, 300); }

using fixtures::TempDir;

constexpr const char* kHash = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

RunOptions options() {
  RunOptions o;
  o.clock = ClockMode::kVirtual;
  ComputeProfile p;
  p.step_time = std::chrono::milliseconds(5);
  o.compute = {p};
  return o;
}

/// options() writing a checkpoint every `every` steps (0: on request only) under `dir`.
RunOptions checkpointing(const std::string& dir, int every) {
  RunOptions o = options();
  o.checkpoint.dir = dir;
  o.checkpoint.every_steps = every;
  o.checkpoint.scenario_hash = kHash;
  return o;
}

struct Outcome {
  geotb::model::StrategyRun run;
  std::vector<float> x;
};

Outcome run(const StrategyConfig& s, const RunOptions& o) {
  Outcome out;
  out.run = run_strategy(cluster(), work(), s, data(), o, &out.x);
  return out;
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

CheckpointHeader expect(const std::string& strategy) { return {.scenario_hash = kHash, .strategy = strategy, .world = 4}; }

std::vector<StrategyConfig> embedded_strategies() {
  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = 5;
  hier.density = 0.05;
  StrategyConfig hier_blocking = hier;
  hier_blocking.overlap = false;
  StrategyConfig hierarchical{"hierarchical"};
  hierarchical.K = 4;
  StrategyConfig local{"local_sgd"};
  local.tau = 4;
  local.warmup_steps = 6;
  local.warmup_tau = 2;
  local.momentum_sync = "averaged";
  StrategyConfig local_prox = local;  // FedProx: its anchor (the last average) is checkpointed
  local_prox.fedprox_mu = 0.01;
  // SCAFFOLD: c, c_d, the steps taken in the round and the last average are checkpointed (with
  // local momentum: the other local_sgd cases average it). scaffold_lr "effective": with the
  // paper's η and momentum 0.9 the control variates grow without bound (docs/guide/strategies.md).
  StrategyConfig local_scaffold = local;
  local_scaffold.scaffold = true;
  local_scaffold.scaffold_lr = "effective";
  local_scaffold.momentum_sync = "local";
  StrategyConfig diloco{"diloco"};
  diloco.H = 7;
  diloco.outer_lr = 0.7;
  diloco.outer_momentum = 0.9;
  StrategyConfig diloco_int8 = diloco;
  diloco_int8.wire = "int8";
  // Both on diloco's inner steps: Δc_d travels after the INT8 pseudo-gradient.
  StrategyConfig diloco_drift = diloco_int8;
  diloco_drift.fedprox_mu = 0.01;
  diloco_drift.scaffold = true;
  diloco_drift.scaffold_lr = "effective";
  // "K": "auto" (strategies/adaptive_k.h): on this link K moves from 1 to 4 at the third round
  // (step 2), so its rule's state, the measurements collected and the interval's bookkeeping are
  // checkpointed.
  StrategyConfig hier_auto = hier;
  hier_auto.K_auto = true;
  hier_auto.K_max = 32;
  // powersgd: rounds every 3 steps, compressed from the third (step 8): at step 12 its warm Q,
  // the error and the iteration are state; without warm start the seed stream instead of Q.
  StrategyConfig powersgd{"powersgd"};
  powersgd.K = 3;
  powersgd.powersgd.rank = 2;
  powersgd.powersgd.start_iter = 2;
  StrategyConfig powersgd_cold = powersgd;
  powersgd_cold.powersgd.warm_start = false;
  // QSGD: the anchor, the steps since the last round and the round counter (the key of the
  // stochastic rounding's stream) are checkpointed; 16 levels, so that a round's draws show.
  StrategyConfig qsgd{"qsgd"};
  qsgd.K = 5;
  qsgd.levels = 16;
  return {StrategyConfig{"naive_ddp"}, StrategyConfig{"lan"}, hier, hier_blocking, hier_auto, hierarchical, local,
          local_prox, local_scaffold, diloco, diloco_int8, diloco_drift, powersgd, powersgd_cold, qsgd};
}

std::string label(const StrategyConfig& s) {
  return s.name + (s.overlap ? "" : " (blocking)") + (s.wire == "int8" ? " (int8)" : "") + (s.K_auto ? " (auto K)" : "") +
         (s.fedprox_mu > 0 ? " (FedProx)" : "") + (s.scaffold ? " (SCAFFOLD)" : "") +
         (s.name == "powersgd" && !s.powersgd.warm_start ? " (no warm start)" : "");
}

std::vector<int> k_sequence(const geotb::model::StrategyRun& r) {
  std::vector<int> ks;
  for (const auto& e : r.exchanges) ks.push_back(e.K);
  return ks;
}

// Every strategy that runs embedded: checkpoints after 6, 12, 18 and 24 steps leave the run
// bit-identical to one without any; resuming from step 12 (hier: mid-round, round 10 in flight
// with overlap) and from step 24 ends bit-identical too, with the same series and exchanges.
TEST(Checkpoint, TheModesWanCountersRoundTripAndAreAbsentWhenNotWritten) {
  StateBuffers s;
  StateWriter(s, "params.").u64("x", 1);
  EXPECT_FALSE(wan_counters_of(s));  // a rank file without them
  const StateBuffers fabric = with_wan_counters(s, {11, 2200, 2300, 4});
  const std::optional<WanCounters> a = wan_counters_of(fabric);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->messages, 11u);
  EXPECT_EQ(a->payload_bytes, 2200u);
  EXPECT_EQ(a->wire_bytes, 2300u);
  EXPECT_EQ(a->retransmissions, 4u);
  const std::optional<WanCounters> b = wan_counters_of(with_wan_counters(s, {5, 6, 7, std::nullopt}));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->wire_bytes, 7u);
  EXPECT_FALSE(b->retransmissions);  // the process modes do not count them
  EXPECT_TRUE(fabric.find("params.x"));  // the worker's own buffers kept
}

TEST(Checkpoint, ResumedRunsEndBitIdenticalForEveryStrategy) {
  for (const StrategyConfig& s : embedded_strategies()) {
    SCOPED_TRACE(label(s));
    const Outcome plain = run(s, options());
    TempDir dir;
    RunOptions o = checkpointing(dir.str(), 6);
    std::vector<int> written;
    o.checkpoint.written = [&](int step, const std::string&) { written.push_back(step); };
    const Outcome through = run(s, o);
    EXPECT_EQ(written, (std::vector<int>{6, 12, 18, 24}));
    EXPECT_TRUE(bit_identical(through.x, plain.x)) << "checkpointing changed the run";
    EXPECT_EQ(through.run.series.loss, plain.run.series.loss);

    for (int k : {12, 24}) {
      SCOPED_TRACE("resumed from step " + std::to_string(k));
      const Checkpoint c = load_checkpoint(checkpoint_step_dir(dir.str(), s.name, k), expect(s.name));
      EXPECT_EQ(c.header.step, k);
      RunOptions ro = options();
      ro.checkpoint.resume = &c;
      const Outcome resumed = run(s, ro);
      EXPECT_TRUE(bit_identical(resumed.x, plain.x)) << "resumed weights differ";
      EXPECT_EQ(resumed.run.series.loss, plain.run.series.loss);
      ASSERT_EQ(resumed.run.series.test_accuracy.size(), plain.run.series.test_accuracy.size());
      for (size_t i = 0; i < plain.run.series.test_accuracy.size(); ++i)
        EXPECT_EQ(resumed.run.series.test_accuracy[i].accuracy, plain.run.series.test_accuracy[i].accuracy);
      EXPECT_EQ(resumed.run.exchanges.size(), plain.run.exchanges.size());
      EXPECT_EQ(k_sequence(resumed.run), k_sequence(plain.run));
      EXPECT_EQ(resumed.run.metrics.replica_max_abs_diff, 0.0);
      EXPECT_EQ(resumed.run.series.step_end_s.size(), 25u);
    }
    // `latest` names the last complete checkpoint.
    EXPECT_EQ(find_checkpoint(dir.str() + "/" + s.name).header.step, 24);
  }
}

// A strategy that forgot a buffer would resume from its constructor's value: each of its buffers
// set to zeros (and, for the round counters, to 0) makes the resumed weights differ.
TEST(Checkpoint, EveryStrategyBufferMattersToTheResumedRun) {
  for (const StrategyConfig& s : embedded_strategies()) {
    SCOPED_TRACE(label(s));
    TempDir dir;
    // Auto K: at step 2, before the decision that moves K, which the measurements it saved make.
    const int at = s.K_auto ? 2 : 12;
    RunOptions o = checkpointing(dir.str(), at);
    const Outcome through = run(s, o);
    const Checkpoint c = load_checkpoint(checkpoint_step_dir(dir.str(), s.name, at), expect(s.name));
    std::vector<std::string> names;
    for (const auto& e : c.ranks[0].entries)
      if (e.name.starts_with("strategy.")) names.push_back(e.name);
    if (s.name == "naive_ddp" || s.name == "lan") {
      EXPECT_TRUE(names.empty());
    }
    for (const std::string& name : names) {
      SCOPED_TRACE(name);
      if (s.name == "hierarchical" && name == "strategy.residual") {
        // Dense float32 rounds send everything: its residual is zero, forgetting it cannot matter.
        for (const auto& rank : c.ranks)
          for (uint8_t b : rank.find(name)->bytes) ASSERT_EQ(b, 0);
        continue;
      }
      Checkpoint forgot = c;
      for (auto& rank : forgot.ranks)
        for (auto& e : rank.entries)
          if (e.name == name) std::fill(e.bytes.begin(), e.bytes.end(), uint8_t{0});
      RunOptions ro = options();
      ro.checkpoint.resume = &forgot;
      if (name == "strategy.adaptive_k.rule") {
        // Zeros put K outside [K_min, K_max]: refused by name rather than resumed.
        try {
          run(s, ro);
          ADD_FAILURE() << "a zeroed " << name << " was accepted";
        } catch (const RunError& err) {
          EXPECT_NE(std::string(err.what()).find(name), std::string::npos) << err.what();
        }
        continue;
      }
      const Outcome resumed = run(s, ro);
      EXPECT_FALSE(bit_identical(resumed.x, through.x));
    }
    // And a buffer removed or added is refused by name, before the run starts.
    if (!names.empty()) {
      Checkpoint missing = c;
      auto& e = missing.ranks[1].entries;
      e.erase(std::find_if(e.begin(), e.end(), [&](const auto& x) { return x.name == names[0]; }));
      RunOptions ro = options();
      ro.checkpoint.resume = &missing;
      try {
        run(s, ro);
        ADD_FAILURE() << "a checkpoint without " << names[0] << " was accepted";
      } catch (const RunError& err) {
        EXPECT_NE(std::string(err.what()).find(names[0] + ": missing from the checkpoint"), std::string::npos) << err.what();
      }
    }
    Checkpoint extra = c;
    extra.ranks[2].entries.push_back({"strategy.forgotten", {1, 2, 3, 4}});
    RunOptions ro = options();
    ro.checkpoint.resume = &extra;
    try {
      run(s, ro);
      ADD_FAILURE() << "a checkpoint with an unknown buffer was accepted";
    } catch (const RunError& err) {
      EXPECT_NE(std::string(err.what()).find("strategy.forgotten: in the checkpoint but not restored"), std::string::npos)
          << err.what();
    }
  }
}

/// Writes a checkpoint of hier_ef_topk_int8 after 12 steps into `dir`; returns its step directory.
std::string write_one(const std::string& dir) {
  StrategyConfig s{"hier_ef_topk_int8"};
  s.K = 5;
  RunOptions o = checkpointing(dir, 12);
  run(s, o);
  return checkpoint_step_dir(dir, s.name, 12);
}

std::string refusal(const std::string& path, const CheckpointHeader& h) {
  try {
    load_checkpoint(path, h);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Checkpoint, TruncatedCorruptAndMismatchedCheckpointsAreRefusedWithTheirMessage) {
  TempDir dir;
  const std::string step = write_one(dir.str());
  const CheckpointHeader ok = expect("hier_ef_topk_int8");
  ASSERT_EQ(refusal(step, ok), "(accepted)");
  const std::string rank1 = checkpoint_rank_file(step, 1);

  // Another scenario, strategy, world size: the manifest's mismatch, named.
  CheckpointHeader other = ok;
  other.scenario_hash = "ffff" + other.scenario_hash.substr(4);
  EXPECT_EQ(refusal(step, other), step + "/manifest: scenario hash 001122334455..., this run's ffff22334455...: a "
                                         "checkpoint of another scenario");
  other = ok;
  other.strategy = "naive_ddp";
  EXPECT_EQ(refusal(step, other), step + "/manifest: strategy \"hier_ef_topk_int8\", this run's \"naive_ddp\"");
  other = ok;
  other.world = 8;
  EXPECT_EQ(refusal(step, other), step + "/manifest: world size 4, this run's 8");

  // One byte flipped in the middle: the checksum.
  const auto size = fs::file_size(rank1);
  std::string bytes;
  {
    std::ifstream f(rank1, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_EQ(bytes.size(), size);
  auto write = [&](const std::string& content) {
    std::ofstream f(rank1, std::ios::binary | std::ios::trunc);
    f << content;
  };
  std::string flipped = bytes;
  flipped[size / 2] = static_cast<char>(flipped[size / 2] ^ 0x40);
  write(flipped);
  EXPECT_EQ(refusal(step, ok), rank1 + ": checksum mismatch (SHA-256 of the content differs from the one stored): corrupt");

  // Cut short (a copy that stopped half-way): truncated.
  write(bytes.substr(0, size / 2));
  EXPECT_EQ(refusal(step, ok), rank1 + ": truncated: " + std::to_string(size / 2) + " bytes, its lengths declare more");
  write(bytes.substr(0, 10));
  EXPECT_EQ(refusal(step, ok), rank1 + ": truncated: 10 bytes, ends inside the format version");

  // A rank file from another checkpoint of the same run: its header disagrees with the manifest.
  TempDir dir2;
  StrategyConfig s{"hier_ef_topk_int8"};
  s.K = 5;
  RunOptions o = checkpointing(dir2.str(), 6);
  run(s, o);
  fs::copy_file(checkpoint_rank_file(checkpoint_step_dir(dir2.str(), s.name, 6), 1), rank1,
                fs::copy_options::overwrite_existing);
  EXPECT_EQ(refusal(step, ok), rank1 + ": step 6, its manifest's 12");

  // A checkpoint without its manifest (a crash while writing it) is not one.
  write(bytes);
  fs::remove(step + "/manifest");
  EXPECT_EQ(refusal(step, ok), step + ": not a checkpoint: neither " + step + "/manifest (a complete checkpoint) nor " +
                                   step + "/latest (a strategy's checkpoints)");
}

// SIGUSR1's path: a request honoured at one step boundary on every rank, whatever their progress.
TEST(Checkpoint, ARequestIsHonouredAtOneBoundaryNoRankHasPassed) {
  std::atomic<int> req{0};
  CheckpointSchedule s(3, 0, &req);
  EXPECT_FALSE(s.due(0, 1));
  EXPECT_FALSE(s.due(1, 1));
  EXPECT_FALSE(s.due(1, 2));  // rank 1 is ahead: it has passed boundary 2
  req = 1;
  EXPECT_FALSE(s.due(0, 2));  // rank 0 sees the request: the target is 3, one past rank 1's 2
  EXPECT_FALSE(s.due(2, 1));
  EXPECT_TRUE(s.due(1, 3));
  EXPECT_FALSE(s.due(2, 2));
  EXPECT_TRUE(s.due(2, 3));
  EXPECT_TRUE(s.due(0, 3));
  EXPECT_FALSE(s.due(0, 4));  // done: no more until the next request
  CheckpointSchedule every(2, 5, nullptr);
  EXPECT_FALSE(every.due(0, 4));
  EXPECT_TRUE(every.due(0, 5));
  EXPECT_TRUE(every.due(1, 5));
}

// A request during an embedded run: one checkpoint, at the same step on every rank, which
// resumes bit-identically.
TEST(Checkpoint, RequestedCheckpointDuringARunResumesBitIdentically) {
  StrategyConfig s{"hier_ef_topk_int8"};
  s.K = 5;
  const Outcome plain = run(s, options());
  TempDir dir;
  std::atomic<int> req{0};
  RunOptions o = checkpointing(dir.str(), 0);
  o.checkpoint.requests = &req;
  std::vector<int> written;
  o.checkpoint.written = [&](int step, const std::string&) { written.push_back(step); };
  o.progress = [&](int done, int, double) {
    if (done == 9) req.fetch_add(1);
  };
  run(s, o);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_GE(written[0], 9);  // rank 0 asked after step 9; the others may have been further on
  EXPECT_LE(written[0], 15);
  const Checkpoint c = load_checkpoint(dir.str() + "/" + s.name, expect(s.name));
  RunOptions ro = options();
  ro.checkpoint.resume = &c;
  EXPECT_TRUE(bit_identical(run(s, ro).x, plain.x));
}

}  // namespace

namespace {

// Full recovery's mechanism (what the node-kill events will trigger): at step 20 every rank goes
// back to the last complete checkpoint (12 or 18, whichever was complete when the first rank got
// there) and redoes the steps since; the run ends bit-identical to the one that never went back.
TEST(Checkpoint, EveryRankRewindingToTheLastCheckpointEndsBitIdentically) {
  for (const StrategyConfig& s : embedded_strategies()) {
    if (s.name != "hier_ef_topk_int8" && s.name != "local_sgd" && s.name != "naive_ddp") continue;
    SCOPED_TRACE(label(s));
    const Outcome plain = run(s, options());
    TempDir dir;
    RunOptions o = checkpointing(dir.str(), 6);
    std::array<std::atomic<bool>, 4> rewound{};
    o.checkpoint.rewind_due = [&](int rank, int steps) {
      return steps == 20 && !rewound[static_cast<size_t>(rank)].exchange(true);
    };
    const Outcome recovered = run(s, o);
    for (const auto& r : rewound) EXPECT_TRUE(r.load());
    EXPECT_TRUE(bit_identical(recovered.x, plain.x));
    EXPECT_EQ(recovered.run.series.loss, plain.run.series.loss);
    EXPECT_EQ(recovered.run.metrics.replica_max_abs_diff, 0.0);
    // The redone steps cost time: more compute than the run that did each step once.
    EXPECT_GT(recovered.run.metrics.compute_s_per_step, plain.run.metrics.compute_s_per_step);
  }
}

}  // namespace
