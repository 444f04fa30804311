// Strategy objects without libtorch: a learner whose gradients a test writes, an intra-DC group
// that averages its members in member order, and the WorkerEnv of one worker of a small cluster
// over the in-process fabric (periodic_strategies_test.cc, wire16_test.cc).
#pragma once

#include <barrier>
#include <vector>

#include "common/clock.h"
#include "engine/strategy.h"
#include "model/rank_layout.h"

namespace geotb::engine::test {

/// Parameters and gradients in two vectors; forward_backward does nothing (the test writes grads()).
class FakeLearner final : public Learner {
 public:
  explicit FakeLearner(std::vector<float> x) : x_(std::move(x)), g_(x_.size(), 0.0f) {}
  size_t num_params() const override { return x_.size(); }
  float* params() override { return x_.data(); }
  float* grads() override { return g_.data(); }
  double forward_backward(const float*, const int64_t*, size_t) override { return 0; }
  double accuracy(const Dataset&) override { return 0; }

 private:
  std::vector<float> x_, g_;
};

/// The workers of one DC, each with a slot of n floats.
struct Group {
  Group(int members, size_t n)
      : size(members), sync(members), slot(static_cast<size_t>(members), std::vector<float>(n)) {}
  int size;
  std::barrier<> sync;
  std::vector<std::vector<float>> slot;
};

/// allreduce_mean = (a + b + ...) / size, summed in member order.
class FakeIntra final : public IntraDc {
 public:
  FakeIntra(Group& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size; }
  void allreduce_mean(float* d, size_t n) override {
    for (size_t i = 0; i < n; ++i) g_.slot[static_cast<size_t>(rank_)][i] = d[i];
    g_.sync.arrive_and_wait();
    for (size_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int m = 0; m < g_.size; ++m) sum += g_.slot[static_cast<size_t>(m)][i];
      d[i] = sum / static_cast<float>(g_.size);
    }
    g_.sync.arrive_and_wait();
  }
  void broadcast(float*, size_t, int) override {}
  void barrier() override { g_.sync.arrive_and_wait(); }

 private:
  Group& g_;
  int rank_;
};

/// Rank r of `layout` (ring in rank order, leaders at local rank 0, no WAN links for the lower
/// bounds) with its learner, optimizer, transport, DC group and clock.
inline WorkerEnv fixture_env(int r, const model::RankLayout& layout, Learner& learner, Sgd& opt, Transport& net,
                             IntraDc& intra, const emu::Clock& clock) {
  WorkerEnv env;
  env.rank = r;
  env.dc = layout.dc_of(r);
  env.local_rank = layout.local_of(r);
  env.world = layout.world();
  env.num_dcs = layout.dcs();
  env.layout = layout;
  env.dc_leaders = layout.leaders();
  for (int k = 0; k < layout.world(); ++k) env.ring.push_back(k);
  env.learner = &learner;
  env.opt = &opt;
  env.net = &net;
  env.intra = &intra;
  env.clock = &clock;
  env.wan_in.assign(static_cast<size_t>(layout.dcs()), InboundLink{});
  return env;
}

}  // namespace geotb::engine::test
