// DDP's buckets (engine/collectives/buckets.h): the assignment, exact on crafted tensor lists, and
// the groups a represented model's buckets travel in.
#include "engine/collectives/buckets.h"

#include <gtest/gtest.h>

#include "model/represented.h"

#include <numeric>
#include <stdexcept>

namespace geotb::engine {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

BucketConfig caps(uint64_t first, uint64_t cap) {
  BucketConfig c;
  c.first_cap_bytes = first;
  c.cap_bytes = cap;
  return c;
}

// Three 512 x 512 linear layers (weight 1 MiB, bias 2 KiB) at 1 MiB limits: from the end, each
// bias joins the next weight and the pair reaches the limit, so three buckets of 262,656 floats.
// (c10d's _compute_bucket_assignment_by_size on the same list, forward, gives [[0], [1, 2], [3, 4],
// [5]]; DDP's rebuilt buckets follow the gradients' order, from the end, as here.)
TEST(Buckets, TensorsFromTheEndClosedAtTheLimit) {
  const std::vector<uint64_t> t = {262144, 512, 262144, 512, 262144, 512};
  EXPECT_EQ(ddp_buckets(t, 0, caps(kMiB, kMiB)), (std::vector<uint64_t>{262656, 262656, 262656}));
  // DDP's defaults: the first bucket closes at 1 MiB, the rest (1.0 MiB) stays under 25 MiB.
  EXPECT_EQ(ddp_buckets(t, 0, BucketConfig{}), (std::vector<uint64_t>{262656, 525312}));
  // A tensor above the cap is a bucket of its own; a small one after it starts the next.
  const std::vector<uint64_t> big = {10, 100 * kMiB, 10};
  EXPECT_EQ(ddp_buckets(big, 0, caps(kMiB, 25 * kMiB)), (std::vector<uint64_t>{10 + 100 * kMiB, 10}));
}

// A flat count is cut exactly at the limits: 1 MiB, then 25 MiB buckets, the rest.
TEST(Buckets, AFlatCountIsCutAtTheLimits) {
  EXPECT_EQ(ddp_buckets({}, 10'000'000, BucketConfig{}), (std::vector<uint64_t>{262144, 6553600, 3184256}));
  EXPECT_EQ(ddp_buckets({}, 1000, BucketConfig{}), (std::vector<uint64_t>{1000}));
  EXPECT_THROW(ddp_buckets({}, 10, caps(0, kMiB)), std::invalid_argument);
}

// The model that trains: every bucket a group of its own, the proxy's slices its own tensors,
// from the end.
TEST(Buckets, TheTrainedModelsBucketsAreItsOwnGroups) {
  const std::vector<uint64_t> t = {262144, 512, 262144, 512, 262144, 512};
  const size_t n = 787968;
  const std::vector<BucketGroup> g = plan_buckets(t, n, n, caps(kMiB, kMiB), 64);
  ASSERT_EQ(g.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(g[i].lo, n - (i + 1) * 262656);
    EXPECT_EQ(g[i].n, 262656u);
    EXPECT_EQ(g[i].elements, 262656u);
    EXPECT_EQ(g[i].buckets, 1u);
  }
}

// A represented model: 1 + 999 buckets of a flat 100-million-float gradient at 1 MiB and
// 0.4 MiB (104,857 floats) ... grouped: the first alone, then groups of ceil(999 / 64) = 16. The
// proxy's 1000 floats are partitioned in proportion; the represented elements add up.
TEST(Buckets, ARepresentedModelsBucketsTravelInGroups) {
  const uint64_t total = 100'000'000;
  const size_t n = 1000;
  const BucketConfig c = caps(kMiB, 400'000);  // 100,000 floats per bucket
  const std::vector<uint64_t> b = ddp_buckets({}, total, c);
  ASSERT_EQ(b.size(), 1u + 998);  // 262,144 + 997 x 100,000 + 37,856
  const std::vector<BucketGroup> g = plan_buckets({}, total, n, c, 64);
  EXPECT_EQ(g.front().buckets, 1u);
  EXPECT_EQ(g.front().elements, 262144u);
  EXPECT_EQ(g[1].buckets, 16u);  // ceil(997 / 64)
  EXPECT_EQ(g[1].elements, 1'600'000u);
  EXPECT_LE(g.size(), 1u + 64);
  uint64_t elements = 0, buckets = 0;
  size_t end = n;
  for (const BucketGroup& x : g) {
    EXPECT_EQ(x.lo + x.n, end);  // contiguous, from the end
    end = x.lo;
    elements += x.elements;
    buckets += x.buckets;
  }
  EXPECT_EQ(end, 0u);
  EXPECT_EQ(elements, total);
  EXPECT_EQ(buckets, b.size());
  // Few buckets are still grouped in twos: their messages then stand for their rounds.
  const std::vector<BucketGroup> few = plan_buckets({}, 6 * 262144, 10, caps(kMiB, kMiB), 64);
  ASSERT_EQ(few.size(), 1u + 3);
  EXPECT_EQ(few[1].buckets, 2u);
  EXPECT_THROW(plan_buckets({}, 5, 10, BucketConfig{}, 64), std::invalid_argument);
  EXPECT_THROW(plan_buckets({}, 50, 10, BucketConfig{}, 0), std::invalid_argument);
}

// The catalog's models at DDP's defaults: from the end, Llama's untied output head (128,256 x 8,192
// floats = 4008 MiB) is the first bucket; every projection of Llama 3 70B is above 25 MiB but the
// norms, which join the next tensor: 7 buckets per layer, 80 x 7 + the head + the embedding = 562.
TEST(Buckets, TheCatalogsBucketCounts) {
  auto count = [](const char* name) {
    const model::RepresentedEntry* e = model::find_represented(name);
    return ddp_buckets(model::transformer_tensors(e->shape), model::transformer_params(e->shape), BucketConfig{});
  };
  const std::vector<uint64_t> b70 = count("llama3-70b");
  EXPECT_EQ(b70.size(), 562u);
  EXPECT_EQ(b70.front(), uint64_t{128256} * 8192);
  EXPECT_EQ(std::accumulate(b70.begin(), b70.end(), uint64_t{0}), 70553706496u);
  EXPECT_EQ(count("llama3.1-405b").size(), 884u);
  EXPECT_EQ(count("gpt2-124m").size(), 13u);
  const model::RepresentedEntry* e = model::find_represented("llama3-70b");
  const std::vector<BucketGroup> g =
      plan_buckets(model::transformer_tensors(e->shape), 70553706496u, 50890, BucketConfig{}, 64);
  EXPECT_EQ(g.size(), 1u + 63);  // the head, then 561 buckets in groups of 9
  EXPECT_EQ(g[1].buckets, 9u);
}

TEST(Buckets, BucketMbErrorsNameTheFieldAndValue) {
  EXPECT_EQ(check_bucket_mb(25), "");
  EXPECT_EQ(check_bucket_mb(0), "bucket_mb: 0: must be in (0, 1048576] MiB (DDP's bucket_cap_mb; default 25)");
  EXPECT_NE(check_bucket_mb(-1).find("bucket_mb: -1"), std::string::npos);
}

}  // namespace
}  // namespace geotb::engine
