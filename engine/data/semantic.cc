#include "engine/data/semantic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/random.h"
#include "engine/data/partition.h"

namespace geotb::engine {

namespace {

// Stream ids (partition.cc uses 0x5eed0001-4).
constexpr uint64_t kPcaSampleStream = 0x5eed0005;
constexpr uint64_t kPcaStartStream = 0x5eed0006;
constexpr uint64_t kKmeansStream = 0x5eed0007;
constexpr uint64_t kSemanticShuffleStream = 0x5eed0008;

double sq_dist(const double* a, const double* b, size_t dim) {
  double d = 0;
  for (size_t j = 0; j < dim; ++j) d += (a[j] - b[j]) * (a[j] - b[j]);
  return d;
}

}  // namespace

std::vector<double> pca_embedding(const float* images, size_t n, size_t features, int components, uint64_t seed) {
  const size_t F = features, k = static_cast<size_t>(components);
  if (n == 0 || F == 0 || k == 0 || k > F) throw PartitionError("semantic: cannot embed " + std::to_string(n) +
                                                                 " examples of " + std::to_string(F) + " features in " +
                                                                 std::to_string(k) + " components");
  // A seeded sample of at most kPcaSample examples (a partial Fisher-Yates shuffle).
  emu::RandomStream rng(seed, kPcaSampleStream);
  std::vector<uint32_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = static_cast<uint32_t>(i);
  const size_t S = std::min(n, kPcaSample);
  for (size_t i = 0; i < S; ++i) std::swap(all[i], all[i + rng.next_u64() % (n - i)]);
  std::vector<double> mean(F, 0.0);
  for (size_t s = 0; s < S; ++s)
    for (size_t f = 0; f < F; ++f) mean[f] += images[static_cast<size_t>(all[s]) * F + f];
  for (double& m : mean) m /= static_cast<double>(S);
  // Covariance (upper triangle accumulated, then mirrored).
  std::vector<double> cov(F * F, 0.0), row(F);
  for (size_t s = 0; s < S; ++s) {
    const float* x = images + static_cast<size_t>(all[s]) * F;
    for (size_t f = 0; f < F; ++f) row[f] = x[f] - mean[f];
    for (size_t a = 0; a < F; ++a) {
      const double ra = row[a];
      double* c = &cov[a * F];
      for (size_t b = a; b < F; ++b) c[b] += ra * row[b];
    }
  }
  for (size_t a = 0; a < F; ++a)
    for (size_t b = a; b < F; ++b) cov[b * F + a] = cov[a * F + b] /= static_cast<double>(S);
  // Subspace iteration: V <- orth(C V), from seeded normals.
  emu::RandomStream start(seed, kPcaStartStream);
  std::vector<double> v(k * F), w(k * F);  // k vectors of F, one after the other
  for (double& x : v) x = start.normal();
  auto orthonormalise = [&](std::vector<double>& m) {
    for (size_t j = 0; j < k; ++j) {
      double* mj = &m[j * F];
      for (size_t i = 0; i < j; ++i) {
        const double* mi = &m[i * F];
        double dot = 0;
        for (size_t f = 0; f < F; ++f) dot += mi[f] * mj[f];
        for (size_t f = 0; f < F; ++f) mj[f] -= dot * mi[f];
      }
      double norm = 0;
      for (size_t f = 0; f < F; ++f) norm += mj[f] * mj[f];
      norm = std::sqrt(norm);
      if (norm < 1e-300) throw PartitionError("semantic: the pixels' covariance has fewer than " + std::to_string(k) +
                                              " directions (constant images?)");
      for (size_t f = 0; f < F; ++f) mj[f] /= norm;
    }
  };
  orthonormalise(v);
  for (int it = 0; it < kPcaIterations; ++it) {
    for (size_t j = 0; j < k; ++j)
      for (size_t a = 0; a < F; ++a) {
        const double* c = &cov[a * F];
        const double* vj = &v[j * F];
        double s = 0;
        for (size_t b = 0; b < F; ++b) s += c[b] * vj[b];
        w[j * F + a] = s;
      }
    orthonormalise(w);
    v.swap(w);
  }
  // A fixed sign: each direction's largest component positive.
  for (size_t j = 0; j < k; ++j) {
    double* vj = &v[j * F];
    size_t arg = 0;
    for (size_t f = 1; f < F; ++f)
      if (std::fabs(vj[f]) > std::fabs(vj[arg])) arg = f;
    if (vj[arg] < 0)
      for (size_t f = 0; f < F; ++f) vj[f] = -vj[f];
  }
  std::vector<double> out(n * k);
  for (size_t i = 0; i < n; ++i) {
    const float* x = images + i * F;
    for (size_t f = 0; f < F; ++f) row[f] = x[f] - mean[f];
    for (size_t j = 0; j < k; ++j) {
      const double* vj = &v[j * F];
      double s = 0;
      for (size_t f = 0; f < F; ++f) s += row[f] * vj[f];
      out[i * k + j] = s;
    }
  }
  return out;
}

std::vector<int> kmeans(const std::vector<double>& points, size_t n, size_t dim, int k, uint64_t seed) {
  const size_t K = static_cast<size_t>(k);
  if (k < 1 || K > n) throw PartitionError("semantic: " + std::to_string(k) + " clusters of " + std::to_string(n) + " examples");
  emu::RandomStream rng(seed, kKmeansStream);
  // k-means++: the first centre uniform, each next one with probability proportional to the
  // squared distance to the nearest centre so far.
  std::vector<double> c(K * dim);
  std::vector<double> d2(n, std::numeric_limits<double>::infinity());
  size_t pick = rng.next_u64() % n;
  for (size_t m = 0; m < K; ++m) {
    std::copy(&points[pick * dim], &points[pick * dim] + dim, &c[m * dim]);
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      d2[i] = std::min(d2[i], sq_dist(&points[i * dim], &c[m * dim], dim));
      total += d2[i];
    }
    if (m + 1 == K) break;
    double u = rng.uniform01() * total;
    pick = n - 1;
    for (size_t i = 0; i < n; ++i) {
      if (u < d2[i]) {
        pick = i;
        break;
      }
      u -= d2[i];
    }
  }
  std::vector<int> assign(n, -1);
  std::vector<double> sum(K * dim);
  std::vector<size_t> count(K);
  for (int it = 0; it < kKmeansIterations; ++it) {
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      int best = 0;
      double bd = std::numeric_limits<double>::infinity();
      for (size_t m = 0; m < K; ++m) {
        const double d = sq_dist(&points[i * dim], &c[m * dim], dim);
        if (d < bd) bd = d, best = static_cast<int>(m);
      }
      if (assign[i] != best) assign[i] = best, changed = true;
    }
    if (!changed) break;
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < n; ++i) {
      const size_t m = static_cast<size_t>(assign[i]);
      ++count[m];
      for (size_t j = 0; j < dim; ++j) sum[m * dim + j] += points[i * dim + j];
    }
    for (size_t m = 0; m < K; ++m)
      if (count[m] > 0)  // an empty cluster keeps its centre
        for (size_t j = 0; j < dim; ++j) c[m * dim + j] = sum[m * dim + j] / static_cast<double>(count[m]);
  }
  return assign;
}

std::vector<std::vector<uint32_t>> semantic_partition(const float* images, size_t n, size_t features,
                                                      const SemanticSpec& spec, const model::RankLayout& layout,
                                                      uint64_t seed) {
  const size_t P = static_cast<size_t>(layout.world());
  if (n < P)
    throw PartitionError("semantic: " + std::to_string(n) + " examples for " + std::to_string(P) + " workers");
  const int k = spec.clusters > 0 ? spec.clusters : static_cast<int>(P);
  const size_t dim = static_cast<size_t>(spec.components);
  const std::vector<double> emb = pca_embedding(images, n, features, spec.components, seed);
  const std::vector<int> assign = kmeans(emb, n, dim, k, seed);
  // Centroids of the final assignment, and the chain through them.
  const size_t K = static_cast<size_t>(k);
  std::vector<double> cen(K * dim, 0.0);
  std::vector<std::vector<uint32_t>> members(K);
  for (size_t i = 0; i < n; ++i) {
    const size_t m = static_cast<size_t>(assign[i]);
    members[m].push_back(static_cast<uint32_t>(i));
    for (size_t j = 0; j < dim; ++j) cen[m * dim + j] += emb[i * dim + j];
  }
  for (size_t m = 0; m < K; ++m)
    for (size_t j = 0; j < dim; ++j) cen[m * dim + j] /= std::max<size_t>(1, members[m].size());
  std::vector<size_t> chain;
  std::vector<bool> taken(K, false);
  size_t cur = 0;
  for (size_t m = 1; m < K; ++m)
    if (cen[m * dim] < cen[cur * dim]) cur = m;
  for (;;) {
    chain.push_back(cur);
    taken[cur] = true;
    if (chain.size() == K) break;
    size_t next = K;
    double bd = std::numeric_limits<double>::infinity();
    for (size_t m = 0; m < K; ++m)
      if (!taken[m]) {
        const double d = sq_dist(&cen[cur * dim], &cen[m * dim], dim);
        if (d < bd) bd = d, next = m;
      }
    cur = next;
  }
  emu::RandomStream rng(seed, kSemanticShuffleStream);
  std::vector<uint32_t> order;
  order.reserve(n);
  for (size_t m : chain) {
    std::vector<uint32_t>& v = members[m];
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.next_u64() % i]);
    order.insert(order.end(), v.begin(), v.end());
  }
  std::vector<std::vector<uint32_t>> shards(P);
  for (size_t r = 0; r < P; ++r)
    shards[r].assign(order.begin() + static_cast<std::ptrdiff_t>(n * r / P),
                     order.begin() + static_cast<std::ptrdiff_t>(n * (r + 1) / P));
  return shards;
}

}  // namespace geotb::engine
