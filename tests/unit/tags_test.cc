// The message-tag allocator (engine/transport/tags.h): exact layout, overflow, and the exact tags
// each collective uses within the range it is given.
#include "engine/transport/tags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include "emulator/inproc/fabric.h"
#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/transport/emulated.h"
#include "engine/transport/tag_epoch.h"

using namespace geotb;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace {

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const engine::TagError& e) {
    return e.what();
  }
  return "(no TagError)";
}

TEST(Tags, AllocatorHandsOutConsecutiveRangesInCallOrder) {
  engine::TagAllocator a(engine::TagRange("space", 1000, 100));
  const engine::TagRange x = a.take("x", 10), y = a.take("y", 1), z = a.take("z", 89);
  EXPECT_EQ(x.base(), 1000u);
  EXPECT_EQ(x.size(), 10u);
  EXPECT_EQ(y.base(), 1010u);
  EXPECT_EQ(z.base(), 1011u);
  EXPECT_EQ(z.size(), 89u);
  EXPECT_EQ(z.tag(88), 1099u);
  EXPECT_EQ(a.used(), 100u);
  EXPECT_EQ(a.left(), 0u);
  EXPECT_EQ(x.name(), "x");
  EXPECT_TRUE(x.contains(1009));
  EXPECT_FALSE(x.contains(1010));
  EXPECT_FALSE(y.contains(1009));
  // Two allocators making the same calls agree (how the ranks of a strategy agree on tags).
  engine::TagAllocator b(engine::TagRange("space", 1000, 100));
  (void)b.take("x", 10);
  EXPECT_EQ(b.take("y", 1).tag(0), y.tag(0));
}

TEST(Tags, TheDefaultSpaceIsTheLowerHalfOfTheTags) {
  EXPECT_EQ(engine::all_tags().base(), 0u);
  EXPECT_EQ(engine::all_tags().size(), uint64_t{1} << 63);
  engine::TagAllocator a(engine::all_tags());
  EXPECT_EQ(a.take("first", 2).base(), 0u);
  EXPECT_EQ(a.take("second", 2).base(), 2u);
}

TEST(Tags, ExceedingARangeThrowsNamingIt) {
  engine::TagAllocator a(engine::TagRange("space", 0, 10));
  const engine::TagRange r = a.take("round", 4);
  EXPECT_EQ(what_of([&] { (void)r.tag(4); }), "round: tag 4 of a range of 4");
  EXPECT_EQ(what_of([&] { r.require(5); }), "round: 5 tags needed, the range has 4");
  EXPECT_NO_THROW(r.require(4));
  EXPECT_EQ(what_of([&] { (void)a.take("more", 7); }), "space: more: 7 tags, only 6 left");
  EXPECT_EQ(a.used(), 4u);  // a failed take takes nothing
  EXPECT_NO_THROW((void)a.take("rest", 6));
  EXPECT_EQ(what_of([&] { (void)a.take("one", 1); }), "space: one: 1 tags, only 0 left");
  EXPECT_THAT(what_of([] { engine::TagRange("wrap", std::numeric_limits<uint64_t>::max(), 2); }),
              HasSubstr("wrap: 2 tags from 18446744073709551615 overflow 64 bits"));
}

// Records the tags a rank sends with.
class RecordingTransport final : public engine::Transport {
 public:
  RecordingTransport(engine::Transport& inner, std::set<uint64_t>& sent, std::mutex& mu)
      : inner_(inner), sent_(sent), mu_(mu) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void send(int dst, uint64_t tag, std::vector<uint8_t> bytes) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      sent_.insert(tag);
    }
    inner_.send(dst, tag, std::move(bytes));
  }
  std::vector<uint8_t> recv(int src, uint64_t tag) override { return inner_.recv(src, tag); }
  void close() override { inner_.close(); }

 private:
  engine::Transport& inner_;
  std::set<uint64_t>& sent_;
  std::mutex& mu_;
};

emu::FabricConfig one_site(int ranks) {
  emu::FabricConfig fc;
  fc.num_sites = 1;
  fc.site_of.assign(static_cast<size_t>(ranks), 0);
  fc.lan.rate_bps = 0;
  fc.lan.delay = 0ns;
  return fc;
}

using Allreduce = std::function<void(engine::Transport&, const std::vector<int>&, float*, size_t, const engine::TagRange&)>;

/// Runs `c` on p ranks with `tags`; returns every tag any rank sent with.
std::set<uint64_t> tags_sent(int p, size_t n, const engine::TagRange& tags, const Allreduce& c) {
  emu::SteadyClock clock;
  emu::Fabric f(one_site(p), clock);
  std::vector<int> ring;
  for (int r = 0; r < p; ++r) ring.push_back(r);
  std::set<uint64_t> sent;
  std::mutex mu;
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> data(static_cast<size_t>(p), std::vector<float>(n, 1.0f));
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      engine::EmulatedTransport t(f, r, 10s);
      RecordingTransport rec(t, sent, mu);
      c(rec, ring, data[static_cast<size_t>(r)].data(), n, tags);
    });
  for (auto& t : threads) t.join();
  for (const auto& d : data) EXPECT_EQ(d[0], static_cast<float>(p));
  return sent;
}

// A rewound worker's epoch: its strategy's tags move by epoch * 2^56, and a message of the old
// epoch under the same strategy tag is never matched; other spaces pass unchanged.
TEST(Tags, TagEpochMovesOnlyTheStrategySpace) {
  emu::SteadyClock clock;
  emu::Fabric f(one_site(2), clock);
  engine::EmulatedTransport a(f, 0, 1s), b(f, 1, 1s);
  engine::TagEpochTransport a1(a, 1), b1(b, 1);
  EXPECT_EQ(a1.map(7), 7 + (uint64_t{1} << 56));
  EXPECT_EQ(engine::TagEpochTransport(a, 63).map(0), uint64_t{63} << 56);
  const uint64_t group = engine::group_tags().base() + 5, above = (uint64_t{1} << 63) + 3;
  EXPECT_EQ(a1.map(group), group);
  EXPECT_EQ(a1.map(above), above);
  EXPECT_THAT(what_of([&] { (void)a1.map(uint64_t{1} << 56); }),
              HasSubstr("strategy tag 72057594037927936: beyond the 2^56 tags of one epoch"));
  EXPECT_THAT(what_of([&] { engine::TagEpochTransport(a, 64); }), HasSubstr("tag epoch 64: at most 63 rewinds"));
  // A stale message of epoch 0 under tag 7, then epoch 1's: the new epoch reads its own.
  a.send(1, 7, {0xAA});
  a1.send(1, 7, {0xBB});
  EXPECT_EQ(b1.recv(0, 7), std::vector<uint8_t>{0xBB});
  EXPECT_EQ(b.recv(0, 7), std::vector<uint8_t>{0xAA});
}

std::set<uint64_t> range_set(uint64_t base, uint64_t count) {
  std::set<uint64_t> s;
  for (uint64_t i = 0; i < count; ++i) s.insert(base + i);
  return s;
}

TEST(Tags, GlooRingUsesExactlyItsCountFromTheRangeBase) {
  // P = 2, 1000 floats: S = 4 segments of 1000 bytes, S/P = 2, so 2 sending iterations per phase:
  // 2 phases x 2 iterations x (ready + data) = 8 tags, every one used.
  EXPECT_EQ(engine::gloo_ring_tag_count(1000, 2), 8u);
  // 784-64-10 MLP on 8 ranks: S = 16, S/P = 2: 4 x 14.
  EXPECT_EQ(engine::gloo_ring_tag_count(50890, 8), 56u);
  EXPECT_EQ(engine::gloo_ring_tag_count(1000, 1), 0u);
  const engine::TagRange tags("gloo", 500, engine::gloo_ring_tag_count(1000, 2));
  const auto sent = tags_sent(2, 1000, tags, [](auto& t, const auto& ring, float* d, size_t n, const auto& tg) {
    engine::gloo_ring_allreduce_sum(t, ring, d, n, tg);
  });
  EXPECT_EQ(sent, range_set(500, 8));
}

TEST(Tags, EagerRingUsesExactlyItsCountFromTheRangeBase) {
  EXPECT_EQ(engine::ring_allreduce_tag_count(3), 4u);
  EXPECT_EQ(engine::ring_allreduce_tag_count(1), 0u);
  const engine::TagRange tags("ring", 70, engine::ring_allreduce_tag_count(3));
  const auto sent = tags_sent(3, 9, tags, [](auto& t, const auto& ring, float* d, size_t n, const auto& tg) {
    engine::ring_allreduce_sum(t, ring, d, n, tg);
  });
  EXPECT_EQ(sent, range_set(70, 4));
}

TEST(Tags, ACollectiveGivenTooFewTagsThrowsBeforeSending) {
  emu::SteadyClock clock;
  emu::Fabric f(one_site(2), clock);
  engine::EmulatedTransport t(f, 0, 1s);
  std::set<uint64_t> sent;
  std::mutex mu;
  RecordingTransport rec(t, sent, mu);
  std::vector<float> d(1000, 1.0f);
  const engine::TagRange small("small", 0, 7);
  EXPECT_EQ(what_of([&] { engine::gloo_ring_allreduce_sum(rec, {0, 1}, d.data(), d.size(), small); }),
            "small: 8 tags needed, the range has 7");
  const engine::TagRange one("one", 0, 1);
  EXPECT_EQ(what_of([&] { engine::ring_allreduce_sum(rec, {0, 1}, d.data(), d.size(), one); }),
            "one: 2 tags needed, the range has 1");
  EXPECT_TRUE(sent.empty());
}

// The reserved tags lie outside every range a Transport user may take, and the single ones below
// the regroup range.
TEST(ReservedTags, OutsideEveryUsersRangeAndApart) {
  const engine::TagRange all = engine::all_tags();
  for (uint64_t t : {engine::reserved_tags::kHeartbeat, engine::reserved_tags::kRejoin, engine::reserved_tags::kRecovering,
                     engine::reserved_tags::kTakeover, engine::reserved_tags::kWitness, engine::reserved_tags::kShrinkBase, ~uint64_t{0}})
    EXPECT_FALSE(all.contains(t)) << t;
  EXPECT_EQ(engine::reserved_tags::kBase, all.base() + all.size());
  EXPECT_EQ(engine::kTakeoverTag, uint64_t{9223372036854775812u});  // 2^63 + 4, the value on the wire before this header
  EXPECT_LT(engine::reserved_tags::kSinglesEnd, engine::reserved_tags::kShrinkBase);
}

}  // namespace

