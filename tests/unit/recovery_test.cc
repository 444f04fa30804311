// recover_from_deaths (engine/faults/recovery.h), the recovery both fault agents run, on a
// scripted port and a scripted transport: which port calls come in which order with which
// groups, the deaths in rank order whatever order they were declared in, an agreement
// interrupted by a further death agreed again, the take-over of a dead DC leader's address, the
// sampler's stream, and the failures (nothing pending, interrupted without a further death,
// another transport error).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/faults/recovery.h"
#include "engine/result.h"
#include "engine/strategy.h"
#include "engine/transport/transport.h"

namespace geotb::engine {
namespace {

/// A transport whose receives are scripted: each either throws the given error or returns bytes.
class ScriptedTransport final : public Transport {
 public:
  struct Recv {
    std::optional<std::string> declared_dead;  ///< throw PeerDeclaredDead with this text
    std::optional<std::string> error;          ///< throw TransportError with this text
    std::vector<uint8_t> bytes;
  };
  explicit ScriptedTransport(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int dst, uint64_t, std::vector<uint8_t>) override { sent_to.push_back(dst); }
  std::vector<uint8_t> recv(int src, uint64_t) override {
    recv_from.push_back(src);
    if (script.empty()) throw TransportError("unscripted recv from " + std::to_string(src));
    Recv r = script.front();
    script.pop_front();
    if (r.declared_dead) throw PeerDeclaredDead(*r.declared_dead);
    if (r.error) throw TransportError(*r.error);
    return r.bytes;
  }
  void close() override {}
  void take_over(int dead, const std::vector<int>& tell) override { took_over.push_back({dead, tell}); }

  std::deque<Recv> script;
  std::vector<int> sent_to, recv_from;
  std::vector<std::pair<int, std::vector<int>>> took_over;

 private:
  int rank_, size_;
};

/// A port that hands out scripted declarations and records every call.
class ScriptedPort final : public RecoveryPort {
 public:
  std::deque<bool> pending;                // death_pending's answers
  std::deque<std::vector<int>> declared;   // each take_fresh's fresh deaths
  bool deaths_only_declared_dead = true;   // agreement_failed: PeerDeclaredDead only
  std::set<int> handled;
  std::vector<std::string> calls;
  std::vector<std::vector<int>> before_groups, after_groups;
  std::set<int> inherit_dead;
  std::vector<int> inherit_fresh, resumed_fresh, resumed_group;
  std::optional<int> resumed_took_over;
  int resumed_step = -1;
  std::vector<uint32_t> grown{5, 6, 7, 8, 9, 10};

  bool death_pending(WorkerEnv&, int) override {
    calls.push_back("pending");
    const bool p = !pending.empty() && pending.front();
    if (!pending.empty()) pending.pop_front();
    return p;
  }
  Fresh take_fresh() override {
    calls.push_back("fresh");
    Fresh f;
    f.fresh = declared.front();
    declared.pop_front();
    handled.insert(f.fresh.begin(), f.fresh.end());
    f.dead = handled;
    return f;
  }
  void before_agreement(WorkerEnv&, const std::vector<int>& group, const std::set<int>&) override {
    calls.push_back("before");
    before_groups.push_back(group);
  }
  bool agreement_failed(const TransportError& e) override {
    calls.push_back("failed");
    return !deaths_only_declared_dead || dynamic_cast<const PeerDeclaredDead*>(&e) != nullptr;
  }
  void after_agreement(WorkerEnv& env, const std::vector<int>& group, const std::set<int>&) override {
    calls.push_back("after");
    after_groups.push_back(group);
    after_ring = env.ring;
  }
  std::vector<uint32_t> inherit(const std::set<int>& dead, const std::vector<int>& fresh) override {
    calls.push_back("inherit");
    inherit_dead = dead;
    inherit_fresh = fresh;
    return grown;
  }
  void resumed(const std::vector<int>& fresh, int step, const std::vector<int>& group, std::optional<int> took_over) override {
    calls.push_back("resumed");
    resumed_fresh = fresh;
    resumed_step = step;
    resumed_group = group;
    resumed_took_over = took_over;
  }
  std::vector<int> after_ring;
};

WorkerEnv env_of(const FaultGroups& g, int rank, Transport& net) {
  WorkerEnv env;
  env.rank = rank;
  env.world = g.world();
  env.layout = g.layout;
  env.dc_leaders = g.layout.leaders();
  for (int r = 0; r < g.world(); ++r) env.ring.push_back(r);
  env.net = &net;
  return env;
}

std::vector<std::vector<uint32_t>> batches(BatchSampler& s, int n) {
  std::vector<std::vector<uint32_t>> out(static_cast<size_t>(n));
  for (auto& b : out) s.next(2, b);
  return out;
}

TEST(RecoverFromDeaths, AnInterruptedAgreementIsAgreedAgainWithoutTheNextDeathTooInRankOrder) {
  // One DC of 4, rank 0 its coordinator. Rank 3 is declared first; while rank 0 waits for rank
  // 1's and 2's views, rank 1's death interrupts the receive. Agreed again in {0, 2}.
  const FaultGroups g{model::RankLayout(std::vector<int>{4}), false};
  ScriptedTransport net(0, 4);
  net.script.push_back({"rank 1 declared dead", std::nullopt, {}});           // rank 0 waits for rank 1
  const std::vector<int64_t> view{7, 1, 3};                                   // step 7, dead {1, 3}
  net.script.push_back({std::nullopt, std::nullopt, encode_ints(view)});      // rank 2's view, agreed
  ScriptedPort port;
  port.pending = {true, true};
  port.declared = {{3}, {1}};
  WorkerEnv env = env_of(g, 0, net);
  BatchSampler sampler({1, 2, 3, 4}, 11, 0);
  int epoch = 0;
  ASSERT_TRUE(recover_from_deaths(port, {&g, 0, true, 11}, env, 7, sampler, epoch));
  EXPECT_EQ(port.calls, (std::vector<std::string>{"pending", "fresh", "before", "failed", "pending", "fresh", "before",
                                                  "after", "inherit", "resumed"}));
  EXPECT_EQ(port.before_groups, (std::vector<std::vector<int>>{{0, 1, 2}, {0, 2}}));
  EXPECT_EQ(port.after_groups, (std::vector<std::vector<int>>{{0, 2}}));
  EXPECT_EQ(net.recv_from, (std::vector<int>{1, 2}));
  EXPECT_EQ(net.sent_to, (std::vector<int>{2}));  // the agreed view, to the other survivor
  EXPECT_EQ(port.after_ring, (std::vector<int>{0, 2}));
  EXPECT_EQ(port.inherit_dead, (std::set<int>{1, 3}));
  EXPECT_EQ(port.inherit_fresh, (std::vector<int>{1, 3}));  // rank order, not declaration order
  EXPECT_EQ(port.resumed_fresh, (std::vector<int>{1, 3}));
  EXPECT_EQ(port.resumed_step, 7);
  EXPECT_EQ(port.resumed_group, (std::vector<int>{0, 2}));
  EXPECT_FALSE(port.resumed_took_over);
  EXPECT_EQ(epoch, 1);
  EXPECT_TRUE(net.took_over.empty());
  BatchSampler expected(port.grown, 11, redistributed_stream(0, 4, 1));
  EXPECT_EQ(batches(sampler, 6), batches(expected, 6));
}

TEST(RecoverFromDeaths, ADeadDcLeadersLowestSurvivorTakesOverItsAddress) {
  // Two DCs of 2 and 1; DC 0's leader dies; rank 1, alone in its group now, leads DC 0 and takes
  // over rank 0's address, telling DC 1 (rank 2). The shards are dropped: the sampler stays.
  const FaultGroups g{model::RankLayout(std::vector<int>{2, 1}), false};
  ScriptedTransport net(1, 3);
  ScriptedPort port;
  port.pending = {true};
  port.declared = {{0}};
  WorkerEnv env = env_of(g, 1, net);
  BatchSampler sampler({1, 2, 3, 4}, 11, 1);
  BatchSampler untouched({1, 2, 3, 4}, 11, 1);
  int epoch = 2;
  ASSERT_TRUE(recover_from_deaths(port, {&g, 1, false, 11}, env, 4, sampler, epoch));
  EXPECT_EQ(epoch, 3);
  EXPECT_EQ(env.dc_leaders, (std::vector<int>{1, 2}));
  ASSERT_EQ(net.took_over.size(), 1u);
  EXPECT_EQ(net.took_over[0].first, 0);
  EXPECT_EQ(net.took_over[0].second, (std::vector<int>{2}));
  EXPECT_EQ(port.resumed_took_over, 0);
  EXPECT_EQ(port.resumed_group, (std::vector<int>{1}));
  EXPECT_EQ(std::count(port.calls.begin(), port.calls.end(), "inherit"), 0);
  EXPECT_EQ(batches(sampler, 4), batches(untouched, 4));
}

TEST(RecoverFromDeaths, NothingPendingIsTheStepsOwnFailure) {
  const FaultGroups g{model::RankLayout(std::vector<int>{3}), true};
  ScriptedTransport net(0, 3);
  ScriptedPort port;
  port.pending = {false};
  WorkerEnv env = env_of(g, 0, net);
  BatchSampler sampler({1, 2}, 11, 0);
  int epoch = 0;
  EXPECT_FALSE(recover_from_deaths(port, {&g, 0, true, 11}, env, 3, sampler, epoch));
  EXPECT_EQ(port.calls, (std::vector<std::string>{"pending"}));
  EXPECT_EQ(epoch, 0);
  EXPECT_EQ(env.ring, (std::vector<int>{0, 1, 2}));
}

TEST(RecoverFromDeaths, InterruptedWithoutAFurtherDeathIsARunError) {
  const FaultGroups g{model::RankLayout(std::vector<int>{3}), true};
  ScriptedTransport net(0, 3);
  net.script.push_back({"interrupted", std::nullopt, {}});
  ScriptedPort port;
  port.pending = {true, false};
  port.declared = {{2}};
  WorkerEnv env = env_of(g, 0, net);
  BatchSampler sampler({1, 2}, 11, 0);
  int epoch = 0;
  try {
    recover_from_deaths(port, {&g, 0, true, 11}, env, 3, sampler, epoch);
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()), "rank 0: shrink interrupted, but no further death was declared here");
  }
  EXPECT_EQ(epoch, 0);
}

TEST(RecoverFromDeaths, AnAgreementErrorThatIsNoDeathPropagates) {
  const FaultGroups g{model::RankLayout(std::vector<int>{3}), true};
  ScriptedTransport net(0, 3);
  net.script.push_back({std::nullopt, "frame checksum mismatch", {}});
  ScriptedPort port;
  port.pending = {true};
  port.declared = {{2}};
  WorkerEnv env = env_of(g, 0, net);
  BatchSampler sampler({1, 2}, 11, 0);
  int epoch = 0;
  EXPECT_THROW(recover_from_deaths(port, {&g, 0, true, 11}, env, 3, sampler, epoch), TransportError);
  EXPECT_EQ(port.calls, (std::vector<std::string>{"pending", "fresh", "before", "failed"}));
}

TEST(RecoverFromDeaths, AFullRecoverysRewindWalksTheOwnShardThenTheGrownOneOnItsOwnStream) {
  const FaultGroups g{model::RankLayout(std::vector<int>{4}), false};
  const std::vector<uint32_t> own{1, 2, 3, 4}, grown{1, 2, 3, 4, 9, 10};
  const RecoveryRules redistribute{&g, 2, true, 11}, drop{&g, 2, false, 11};
  BatchSampler s(grown, 11, redistributed_stream(2, 4, 1));
  sampler_before_rewind(redistribute, own, 1, s);  // the checkpoint's position is in `own`
  BatchSampler first(own, 11, 2);
  EXPECT_EQ(batches(s, 4), batches(first, 4));
  sampler_after_rewind(redistribute, grown, 1, s);
  BatchSampler rewound(grown, 11, rewound_stream(2, 4, 1));
  EXPECT_EQ(batches(s, 4), batches(rewound, 4));
  EXPECT_NE(rewound_stream(2, 4, 1), redistributed_stream(2, 4, 1));
  // Nothing grown (no membership change yet, or the shards dropped): the sampler stays.
  for (const auto& [rules, epoch] : {std::pair{redistribute, 0}, std::pair{drop, 1}}) {
    BatchSampler t(own, 11, 2), same(own, 11, 2);
    sampler_before_rewind(rules, grown, epoch, t);
    sampler_after_rewind(rules, grown, epoch, t);
    EXPECT_EQ(batches(t, 4), batches(same, 4));
  }
}

}  // namespace
}  // namespace geotb::engine
