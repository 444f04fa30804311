// A restarted worker's hand-over (engine/faults/rejoin.h): the message both modes send, its
// coordinator, and what of the handed state stays the restarted worker's own.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/data/fashion_mnist.h"
#include "engine/faults/rejoin.h"
#include "engine/result.h"
#include "engine/worker_loop.h"

namespace {

using namespace geotb::engine;

StateBuffers crafted_state() {
  StateBuffers s;
  s.entries.push_back({"model.params", {1, 2, 3, 4}});
  s.entries.push_back({"sampler.pos", std::vector<uint8_t>(8, 7)});
  s.entries.push_back({"empty", {}});
  return s;
}

TEST(Rejoin, MessageRoundTripsWithAndWithoutTheProcessModesWords) {
  RejoinMessage m;
  m.tag_epoch = 3;
  m.group_tags = uint64_t{1} << 52;
  m.steps = 60;
  m.members = {3, 4, 5};
  m.ring = {0, 1, 2, 3, 4, 5};
  m.state = crafted_state();
  // The embedded mode's message: no words, so its size is what it was before they existed:
  // 5 + 3 + 6 ints, the entry count, and per entry two lengths and the bytes.
  const std::vector<uint8_t> plain = encode_rejoin(m);
  EXPECT_EQ(plain.size(), 8u * (5 + 3 + 6) + 8 + (8 + 12 + 8 + 4) + (8 + 11 + 8 + 8) + (8 + 5 + 8 + 0));
  RejoinMessage a = decode_rejoin(plain);
  EXPECT_EQ(a.tag_epoch, 3u);
  EXPECT_EQ(a.group_tags, uint64_t{1} << 52);
  EXPECT_EQ(a.steps, 60);
  EXPECT_EQ(a.members, m.members);
  EXPECT_EQ(a.ring, m.ring);
  EXPECT_TRUE(a.words.empty());
  ASSERT_EQ(a.state.entries.size(), 3u);
  EXPECT_EQ(a.state.entries[0].name, "model.params");
  EXPECT_EQ(a.state.entries[0].bytes, (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_TRUE(a.state.entries[2].bytes.empty());
  // The process modes add the Gloo prefix and every rank's address.
  m.words = {"rejoin-60", "10.0.0.1:4000", "", "10.0.1.1:4001"};
  const std::vector<uint8_t> full = encode_rejoin(m);
  EXPECT_EQ(full.size(), plain.size() + 8 + (8 + 9) + (8 + 13) + 8 + (8 + 13));
  const RejoinMessage b = decode_rejoin(full);
  EXPECT_EQ(b.words, m.words);
  EXPECT_EQ(b.state.entries.size(), 3u);
  // Every cut of the message is refused, none read past its end.
  for (size_t n = 0; n < full.size(); ++n) {
    if (n == plain.size()) continue;  // exactly the message without words: valid
    const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(decode_rejoin(cut), RunError) << n << " of " << full.size() << " bytes";
  }
  std::vector<uint8_t> longer = full;
  longer.push_back(0);
  EXPECT_THROW(decode_rejoin(longer), RunError);
}

TEST(Rejoin, CoordinatorIsTheLowestOfItsDataCenterNotRestartedElseTheLowest) {
  // 2 DCs x 3: rank 4 comes back into {3, 4, 5} (per-DC) or into every rank (world group).
  EXPECT_EQ(rejoin_coordinator(4, geotb::model::RankLayout::uniform(2, 3), {3, 4, 5}, {4}), 3);
  EXPECT_EQ(rejoin_coordinator(4, geotb::model::RankLayout::uniform(2, 3), {0, 1, 2, 3, 4, 5}, {4}), 3);
  EXPECT_EQ(rejoin_coordinator(4, geotb::model::RankLayout::uniform(2, 3), {3, 4, 5}, {3, 4}), 5);  // 3 restarted at the same boundary
  EXPECT_EQ(rejoin_coordinator(4, geotb::model::RankLayout::uniform(2, 3), {0, 1, 3, 4, 5}, {3, 4, 5}), 0);  // nobody of its DC: the lowest
  EXPECT_EQ(rejoin_coordinator(4, geotb::model::RankLayout::uniform(2, 3), {4}, {4}), -1);
}

TEST(Rejoin, OwnSamplerAndOwnSeriesReplaceOnlyWhatIsTheWorkersOwn) {
  const std::vector<uint32_t> shard = {10, 11, 12, 13, 14, 15};
  StateBuffers s = crafted_state();
  s.entries.push_back({"sampler.order", {}});
  s.entries.push_back({"sampler.epoch", {}});
  own_sampler(s, shard, 42, 4, 6, 60);
  const BatchSampler expect(shard, 42, 4 + 6 * 61);
  const BatchSampler::Position p = expect.position();
  for (const auto& e : s.entries) {
    if (e.name == "model.params") {
      EXPECT_EQ(e.bytes, (std::vector<uint8_t>{1, 2, 3, 4}));  // the group's model
    }
    if (e.name == "sampler.order") {
      ASSERT_EQ(e.bytes.size(), p.order.size() * sizeof(uint32_t));
      EXPECT_EQ(std::memcmp(e.bytes.data(), p.order.data(), e.bytes.size()), 0);
    }
    if (e.name == "sampler.pos") {
      EXPECT_EQ(e.bytes, std::vector<uint8_t>(8, 0));
    }
    if (e.name == "sampler.epoch") {
      EXPECT_EQ(e.bytes.size(), 8u);
    }
  }
  WorkerRecord w;
  w.loss = {9, 9, 9, 9, 9, 9};  // the coordinator's series, as restored
  w.step_end_s = {9, 9, 9, 9, 9, 9};
  keep_own_series(w, {1, 2}, {0.1, 0.2}, 2, 4);  // killed at step 2, back at 4
  EXPECT_EQ(w.loss[0], 1);
  EXPECT_EQ(w.loss[1], 2);
  EXPECT_TRUE(std::isnan(w.loss[2]) && std::isnan(w.loss[3]));
  EXPECT_EQ(w.loss[4], 9);  // from the boundary on: what it trains (overwritten as it goes)
  EXPECT_EQ(w.step_end_s, (std::vector<double>{0.1, 0.2, 0, 0, 9, 9}));
}

}  // namespace
