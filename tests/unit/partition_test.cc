// The data partitions (engine/data/partition.h) on crafted label sets: exact splits where the
// procedure fixes them, the Dirichlet procedure's invariants, statistical bounds on its skew, and
// the gamma sampler's moments.
#include "engine/data/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>

#include "engine/data/fashion_mnist.h"
#include "engine/data/global_batch.h"
#include "engine/data/semantic.h"

using namespace geotb::engine;

namespace {

geotb::model::RankLayout U(int dcs, int workers_per_dc) { return geotb::model::RankLayout::uniform(dcs, workers_per_dc); }

std::vector<int64_t> cyclic_labels(size_t n, int classes) {
  std::vector<int64_t> l(n);
  for (size_t i = 0; i < n; ++i) l[i] = static_cast<int64_t>(i % static_cast<size_t>(classes));
  return l;
}

/// Every example at most once; returns how many were assigned.
size_t assigned_once(const std::vector<std::vector<uint32_t>>& parts, size_t n) {
  std::vector<int> seen(n, 0);
  size_t total = 0;
  for (const auto& p : parts)
    for (uint32_t i : p) {
      EXPECT_LT(i, n);
      EXPECT_EQ(++seen[i], 1) << "example " << i << " assigned twice";
      ++total;
    }
  return total;
}

PartitionSpec dirichlet(double alpha, PartitionSpec::Level level = PartitionSpec::Level::kDc) {
  PartitionSpec s;
  s.kind = PartitionSpec::Kind::kDirichlet;
  s.alpha = alpha;
  s.level = level;
  return s;
}

}  // namespace

TEST(Partition, IidIsTheSeededPermutationOfBefore) {
  const auto labels = cyclic_labels(1000, 10);
  EXPECT_EQ(make_partition(labels, 10, PartitionSpec{}, U(2, 3), 7), partition_iid(1000, 6, 7));
}

TEST(Partition, LabelSkewGivesEachDcItsClassesExactly) {
  // 20 examples, classes i % 4. Two classes per DC: DC 0 holds {0, 1}, DC 1 {2, 3}.
  const auto labels = cyclic_labels(20, 4);
  PartitionSpec s;
  s.kind = PartitionSpec::Kind::kLabelSkew;
  s.classes_per_dc = 2;
  auto parts = make_partition(labels, 4, s, U(2, 1), 5);
  for (auto& p : parts) std::sort(p.begin(), p.end());
  EXPECT_EQ(parts[0], (std::vector<uint32_t>{0, 1, 4, 5, 8, 9, 12, 13, 16, 17}));
  EXPECT_EQ(parts[1], (std::vector<uint32_t>{2, 3, 6, 7, 10, 11, 14, 15, 18, 19}));
  // Three per DC: DC 0 {0, 1, 2}, DC 1 {3, 0, 1}: classes 0 and 1 (5 examples each) split 2 + 3.
  s.classes_per_dc = 3;
  const auto h = label_histogram(make_partition(labels, 4, s, U(2, 1), 5), labels, 4);
  EXPECT_EQ(h[0], (std::vector<uint64_t>{2, 2, 5, 0}));
  EXPECT_EQ(h[1], (std::vector<uint64_t>{3, 3, 0, 5}));
  // With two workers per DC each DC's part is split evenly between them.
  const auto w = make_partition(labels, 4, s, U(2, 2), 5);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].size() + w[1].size(), 9u);
  EXPECT_EQ(w[0].size(), 4u);
  EXPECT_EQ(assigned_once(w, 20), 20u);
}

TEST(Partition, DirichletAssignsEveryExampleOnceWithMinSizeAndIsSeeded) {
  const auto labels = cyclic_labels(6000, 10);
  for (auto level : {PartitionSpec::Level::kDc, PartitionSpec::Level::kWorker}) {
    const auto a = make_partition(labels, 10, dirichlet(0.1, level), U(4, 2), 11);
    ASSERT_EQ(a.size(), 8u);
    EXPECT_EQ(assigned_once(a, labels.size()), labels.size());  // FedML's procedure drops none
    if (level == PartitionSpec::Level::kWorker) {
      for (const auto& p : a) EXPECT_GE(p.size(), 10u);
    }
    EXPECT_EQ(make_partition(labels, 10, dirichlet(0.1, level), U(4, 2), 11), a);
    EXPECT_NE(make_partition(labels, 10, dirichlet(0.1, level), U(4, 2), 12), a);
  }
}

TEST(Partition, DirichletSkewFollowsAlpha) {
  // Statistical bounds (seeded, so the test is exact run to run): at alpha 0.1 a DC's most common
  // class holds on average more than 3x the IID share of 1/10 (4 DCs of 10 classes, each capped at
  // the mean size, hold ~2.5 classes' worth: 0.39 measured over these 5 seeds); at alpha 1000 every
  // DC's class shares are within 0.03 of 1/10.
  const auto labels = cyclic_labels(6000, 10);
  auto share_of_top = [&](const std::vector<std::vector<uint64_t>>& h) {
    double s = 0;
    for (const auto& row : h)
      s += static_cast<double>(*std::max_element(row.begin(), row.end())) /
           static_cast<double>(std::accumulate(row.begin(), row.end(), uint64_t{0}));
    return s / static_cast<double>(h.size());
  };
  double skewed = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed)
    skewed += share_of_top(label_histogram(make_partition(labels, 10, dirichlet(0.1), U(4, 1), seed), labels, 10));
  EXPECT_GT(skewed / 5, 0.3);
  const auto h = label_histogram(make_partition(labels, 10, dirichlet(1000), U(4, 1), 3), labels, 10);
  for (const auto& row : h) {
    const double total = static_cast<double>(std::accumulate(row.begin(), row.end(), uint64_t{0}));
    for (uint64_t c : row) EXPECT_NEAR(static_cast<double>(c) / total, 0.1, 0.03);
  }
}

TEST(Partition, ImpossibleDrawsAndEmptyWorkersAreErrors) {
  const auto labels = cyclic_labels(20, 4);
  PartitionSpec s = dirichlet(0.1, PartitionSpec::Level::kWorker);
  s.min_size = 10;  // 20 examples cannot give 4 parts 10 each
  try {
    make_partition(labels, 4, s, U(2, 2), 1);
    ADD_FAILURE() << "accepted";
  } catch (const PartitionError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("dirichlet: no draw in 1000 gave every one of the 4 parts 10 examples", 0),
              0u)
        << e.what();
  }
  PartitionSpec skew;
  skew.kind = PartitionSpec::Kind::kLabelSkew;
  skew.classes_per_dc = 1;
  try {
    make_partition(cyclic_labels(3, 4), 4, skew, U(2, 4), 1);  // DC 0 holds class 0: one example, four workers
    ADD_FAILURE() << "accepted";
  } catch (const PartitionError& e) {
    EXPECT_STREQ(e.what(), "rank 0 would hold no example (3 examples over 8 workers)");
  }
}

TEST(Partition, UnequalDataCentersSplitTheirPartOverTheirOwnWorkers) {
  // Label skew, one class per DC, 1 + 3 workers: DC 0's 5 examples of class 0 stay on rank 0,
  // DC 1's 5 of class 1 go 2 + 2 + 1 over ranks 1-3 (split_even: sizes differ by at most one).
  const auto labels = cyclic_labels(20, 4);
  PartitionSpec s;
  s.kind = PartitionSpec::Kind::kLabelSkew;
  s.classes_per_dc = 1;
  const geotb::model::RankLayout layout({1, 3});
  const auto parts = make_partition(labels, 4, s, layout, 5);
  ASSERT_EQ(parts.size(), 4u);
  auto p0 = parts[0];
  std::sort(p0.begin(), p0.end());
  EXPECT_EQ(p0, (std::vector<uint32_t>{0, 4, 8, 12, 16}));
  std::vector<size_t> sizes;
  for (size_t r = 1; r < 4; ++r) {
    sizes.push_back(parts[r].size());
    for (uint32_t i : parts[r]) EXPECT_EQ(labels[i], 1) << "rank " << r;
  }
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 2, 2}));
  // IID over 1 + 3 workers: the same permutation cut into 4 equal parts as 2 x 2.
  EXPECT_EQ(make_partition(labels, 4, PartitionSpec{}, layout, 9), make_partition(labels, 4, PartitionSpec{}, U(2, 2), 9));
}

TEST(Partition, DcWeightsAreEachDcsShareOrEmptyWhenEqual) {
  // 1 + 3 workers holding 5 + (2, 2, 1) examples (as above).
  const std::vector<std::vector<uint32_t>> shards = {{0, 4, 8, 12, 16}, {1, 5}, {9, 13}, {17}};
  const geotb::model::RankLayout layout({1, 3});
  EXPECT_EQ(dc_mean_weights(layout, shards, DcWeighting::kWorkers), (std::vector<float>{0.25f, 0.75f}));
  // By examples: 5 and 5: equal, so no weights (the plain mean).
  EXPECT_TRUE(dc_mean_weights(layout, shards, DcWeighting::kExamples).empty());
  const std::vector<std::vector<uint32_t>> more = {{0, 4, 8}, {1, 5}, {9, 13}, {17}};
  EXPECT_EQ(dc_mean_weights(layout, more, DcWeighting::kExamples), (std::vector<float>{0.375f, 0.625f}));
  // Equal workers: no weights by workers, whatever each holds.
  EXPECT_TRUE(dc_mean_weights(U(2, 2), more, DcWeighting::kWorkers).empty());
  EXPECT_EQ(dc_mean_weights(U(2, 2), more, DcWeighting::kExamples), (std::vector<float>{0.625f, 0.375f}));
  EXPECT_THROW(dc_mean_weights(U(2, 3), more, DcWeighting::kWorkers), PartitionError);
}

// Four blobs of 10 examples on a line in 6 features (blob b around 10·b on feature 0, small
// seeded noise elsewhere): the embedding's first component follows the line, k-means finds the
// blobs, the chain walks them in order, and with 2 x 2 workers rank r holds blob r exactly.
std::vector<float> blobs(int per_blob, uint64_t seed) {
  geotb::emu::RandomStream rng(seed, 99);
  std::vector<float> x;
  for (int b = 0; b < 4; ++b)
    for (int i = 0; i < per_blob; ++i)
      for (int f = 0; f < 6; ++f)
        x.push_back(static_cast<float>((f == 0 ? 10.0 * b : 0.0) + 0.1 * rng.normal() + (f == 1 ? 0.5 * b * b : 0)));
  return x;
}

TEST(Semantic, SeparatedBlobsGoOneToEachWorkerInChainOrder) {
  const std::vector<float> x = blobs(10, 1);
  SemanticSpec spec;
  spec.components = 2;
  const auto parts = semantic_partition(x.data(), 40, 6, spec, U(2, 2), 3);
  ASSERT_EQ(parts.size(), 4u);
  for (uint32_t r = 0; r < 4; ++r) {
    auto p = parts[r];
    std::sort(p.begin(), p.end());
    std::vector<uint32_t> blob(10);
    std::iota(blob.begin(), blob.end(), 10 * r);
    EXPECT_EQ(p, blob) << "rank " << r;
  }
  // Unequal sites (1 + 3) and 2 clusters: every example once, contiguous slices of 10.
  spec.clusters = 2;
  const auto q = semantic_partition(x.data(), 40, 6, spec, geotb::model::RankLayout({1, 3}), 3);
  EXPECT_EQ(assigned_once(q, 40), 40u);
  for (const auto& s : q) EXPECT_EQ(s.size(), 10u);
  EXPECT_EQ(semantic_partition(x.data(), 40, 6, spec, U(2, 2), 3), semantic_partition(x.data(), 40, 6, spec, U(2, 2), 3));
}

TEST(Semantic, PcaFindsTheDirectionOfLargestVariance) {
  // Feature 2 varies with sd 3, feature 0 with sd 1, the rest 0.01: the first component is
  // ±feature 2 (sign: largest component positive), the second feature 0.
  geotb::emu::RandomStream rng(5, 1);
  const size_t n = 2000, F = 4;
  std::vector<float> x(n * F);
  for (size_t i = 0; i < n; ++i) {
    x[i * F + 0] = static_cast<float>(rng.normal());
    x[i * F + 1] = static_cast<float>(0.01 * rng.normal());
    x[i * F + 2] = static_cast<float>(3 * rng.normal());
    x[i * F + 3] = static_cast<float>(0.01 * rng.normal());
  }
  const std::vector<double> e = pca_embedding(x.data(), n, F, 2, 7);
  double c0 = 0, c1 = 0, v0 = 0, v1 = 0;  // projections against the raw features (all centred near 0)
  for (size_t i = 0; i < n; ++i) {
    c0 += e[i * 2] * x[i * F + 2];
    c1 += e[i * 2 + 1] * x[i * F + 0];
    v0 += e[i * 2] * e[i * 2];
    v1 += e[i * 2 + 1] * e[i * 2 + 1];
  }
  EXPECT_NEAR(std::sqrt(v0 / n), 3.0, 0.15);
  EXPECT_NEAR(std::sqrt(v1 / n), 1.0, 0.05);
  EXPECT_GT(c0, 0.99 * v0);  // component 0 = +feature 2 up to the other features' 0.01
  EXPECT_GT(std::fabs(c1), 0.99 * v1);
  EXPECT_THROW(pca_embedding(x.data(), n, F, 5, 7), PartitionError);  // more components than features
}

TEST(GlobalBatch, PoolDrawsAndStagingBytes) {
  GlobalBatchSpec g;
  EXPECT_EQ(g.count(32), 0u);  // off
  g.fraction = 0.15;
  EXPECT_EQ(g.count(32), 5u);  // round(4.8)
  EXPECT_EQ(g.count(64), 10u);  // round(9.6)
  const auto pool = global_pool(1000, 0.15, 4);
  ASSERT_EQ(pool.size(), 150u);
  EXPECT_TRUE(std::is_sorted(pool.begin(), pool.end()));
  EXPECT_EQ(std::set<uint32_t>(pool.begin(), pool.end()).size(), 150u);
  EXPECT_EQ(global_pool(1000, 0.15, 4), pool);
  EXPECT_NE(global_pool(1000, 0.15, 5), pool);
  std::vector<uint32_t> a, b;
  draw_global(pool, 9, 3, 17, 40, a);
  draw_global(pool, 9, 3, 17, 40, b);
  EXPECT_EQ(a, b);  // (seed, rank, step) alone
  for (uint32_t i : a) EXPECT_TRUE(std::binary_search(pool.begin(), pool.end(), i));
  draw_global(pool, 9, 3, 18, 40, b);
  EXPECT_NE(a, b);
  // Staging: DC 0 (ranks 0, 1) holds {0, 1, 2}, DC 1 (rank 2) holds {3}; pool {1, 3, 4}: DC 0
  // lacks 3 and 4, DC 1 lacks 1 and 4: 4 examples of 785 bytes.
  EXPECT_EQ(pool_staging_bytes({1, 3, 4}, {{0, 1}, {2}, {3}}, geotb::model::RankLayout({2, 1}), 5, 785), 4u * 785);
}

TEST(Partition, GammaVariatesHaveTheirMoments) {
  // Gamma(k, 1): mean k, variance k. 20,000 draws: the mean within 4 standard errors.
  for (double k : {0.1, 0.5, 1.0, 3.0}) {
    geotb::emu::RandomStream rng(9, 1);
    const int n = 20000;
    double s = 0, s2 = 0;
    for (int i = 0; i < n; ++i) {
      const double x = gamma_variate(rng, k);
      ASSERT_GE(x, 0.0);
      s += x;
      s2 += x * x;
    }
    const double mean = s / n, var = s2 / n - mean * mean;
    EXPECT_NEAR(mean, k, 4 * std::sqrt(k / n)) << k;
    EXPECT_NEAR(var, k, 0.1 * k + 0.02) << k;
  }
}
