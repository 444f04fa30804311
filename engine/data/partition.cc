#include "engine/data/partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/data/fashion_mnist.h"

namespace geotb::engine {

namespace {

// Stream ids of the partitioners' random numbers (partition_iid uses 0x5eed0001).
constexpr uint64_t kDirichletStream = 0x5eed0002;
constexpr uint64_t kLabelSkewStream = 0x5eed0003;
constexpr uint64_t kSplitStream = 0x5eed0004;

void shuffle(std::vector<uint32_t>& v, emu::RandomStream& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.next_u64() % i]);
}

/// `part` shuffled and cut into `n` nearly equal pieces (the IID split inside a data center).
std::vector<std::vector<uint32_t>> split_even(std::vector<uint32_t> part, int n, emu::RandomStream& rng) {
  shuffle(part, rng);
  std::vector<std::vector<uint32_t>> out(static_cast<size_t>(n));
  const size_t m = part.size();
  for (int s = 0; s < n; ++s) {
    const size_t lo = m * static_cast<size_t>(s) / static_cast<size_t>(n);
    const size_t hi = m * static_cast<size_t>(s + 1) / static_cast<size_t>(n);
    out[static_cast<size_t>(s)].assign(part.begin() + static_cast<std::ptrdiff_t>(lo),
                                       part.begin() + static_cast<std::ptrdiff_t>(hi));
  }
  return out;
}

std::vector<std::vector<uint32_t>> by_class(const std::vector<int64_t>& labels, int classes) {
  std::vector<std::vector<uint32_t>> idx(static_cast<size_t>(classes));
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes)
      throw PartitionError("label " + std::to_string(labels[i]) + " of example " + std::to_string(i) + " outside [0, " +
                           std::to_string(classes) + ")");
    idx[static_cast<size_t>(labels[i])].push_back(static_cast<uint32_t>(i));
  }
  return idx;
}

/// FedML's Dirichlet split of the examples into `parts` (see the header).
std::vector<std::vector<uint32_t>> dirichlet_parts(const std::vector<int64_t>& labels, int classes, int parts,
                                                   double alpha, int min_size, uint64_t seed) {
  emu::RandomStream rng(seed, kDirichletStream);
  const std::vector<std::vector<uint32_t>> cls = by_class(labels, classes);
  const double mean = static_cast<double>(labels.size()) / parts;
  size_t smallest = 0;
  for (int attempt = 1; attempt <= kMaxDirichletTries; ++attempt) {
    std::vector<std::vector<uint32_t>> out(static_cast<size_t>(parts));
    for (int k = 0; k < classes; ++k) {
      std::vector<uint32_t> idx = cls[static_cast<size_t>(k)];
      shuffle(idx, rng);
      std::vector<double> p(static_cast<size_t>(parts));
      for (double& x : p) x = gamma_variate(rng, alpha);
      // A part at the mean size already takes no more of this class.
      double sum = 0, capped = 0;
      for (int j = 0; j < parts; ++j) sum += p[static_cast<size_t>(j)];
      for (int j = 0; j < parts; ++j)
        if (static_cast<double>(out[static_cast<size_t>(j)].size()) < mean) capped += p[static_cast<size_t>(j)];
      const bool cap = capped > 0;  // every part full: the draw as it is
      double acc = 0;
      size_t from = 0;
      for (int j = 0; j < parts; ++j) {
        const bool open = !cap || static_cast<double>(out[static_cast<size_t>(j)].size()) < mean;
        acc += open ? p[static_cast<size_t>(j)] : 0.0;
        const size_t to = j + 1 == parts ? idx.size()
                                         : std::min(idx.size(), static_cast<size_t>(static_cast<double>(idx.size()) *
                                                                                   (acc / (cap ? capped : sum))));
        out[static_cast<size_t>(j)].insert(out[static_cast<size_t>(j)].end(), idx.begin() + static_cast<std::ptrdiff_t>(from),
                                           idx.begin() + static_cast<std::ptrdiff_t>(std::max(from, to)));
        from = std::max(from, to);
      }
    }
    smallest = out[0].size();
    for (const auto& o : out) smallest = std::min(smallest, o.size());
    if (smallest >= static_cast<size_t>(min_size)) {
      for (auto& o : out) std::sort(o.begin(), o.end());
      return out;
    }
  }
  throw PartitionError("dirichlet: no draw in " + std::to_string(kMaxDirichletTries) + " gave every one of the " +
                       std::to_string(parts) + " parts " + std::to_string(min_size) + " examples (the last: " +
                       std::to_string(smallest) + "); raise alpha or lower min_size");
}

}  // namespace

double gamma_variate(emu::RandomStream& rng, double shape) {
  if (shape < 1) {
    double u = 0;
    while (u <= 0) u = rng.uniform01();
    return gamma_variate(rng, shape + 1) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.uniform01();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

std::vector<std::vector<uint32_t>> make_partition(const std::vector<int64_t>& labels, int classes,
                                                  const PartitionSpec& spec, const model::RankLayout& layout,
                                                  uint64_t seed) {
  const int P = layout.world(), dcs = layout.dcs();
  std::vector<std::vector<uint32_t>> shards;
  switch (spec.kind) {
    case PartitionSpec::Kind::kIid:
      return partition_iid(labels.size(), P, seed);
    case PartitionSpec::Kind::kDirichlet: {
      if (spec.level == PartitionSpec::Level::kWorker)
        return dirichlet_parts(labels, classes, P, spec.alpha, spec.min_size, seed);
      emu::RandomStream rng(seed, kSplitStream);
      int d = 0;
      for (auto& part : dirichlet_parts(labels, classes, dcs, spec.alpha, spec.min_size, seed))
        for (auto& w : split_even(std::move(part), layout.workers(d++), rng)) shards.push_back(std::move(w));
      break;
    }
    case PartitionSpec::Kind::kLabelSkew: {
      const int c = spec.classes_per_dc;
      std::vector<std::vector<int>> holders(static_cast<size_t>(classes));  // DCs holding each class
      for (int d = 0; d < dcs; ++d)
        for (int j = 0; j < c; ++j) holders[static_cast<size_t>((d * c + j) % classes)].push_back(d);
      std::vector<std::vector<uint32_t>> dc_part(static_cast<size_t>(dcs));
      emu::RandomStream rng(seed, kLabelSkewStream);
      const std::vector<std::vector<uint32_t>> cls = by_class(labels, classes);
      for (int k = 0; k < classes; ++k) {
        const auto& h = holders[static_cast<size_t>(k)];
        if (h.empty()) continue;  // left out: no DC holds it
        const auto pieces = split_even(cls[static_cast<size_t>(k)], static_cast<int>(h.size()), rng);
        for (size_t i = 0; i < h.size(); ++i)
          dc_part[static_cast<size_t>(h[i])].insert(dc_part[static_cast<size_t>(h[i])].end(), pieces[i].begin(),
                                                     pieces[i].end());
      }
      for (int d = 0; d < dcs; ++d) {
        auto& part = dc_part[static_cast<size_t>(d)];
        std::sort(part.begin(), part.end());
        for (auto& w : split_even(std::move(part), layout.workers(d), rng)) shards.push_back(std::move(w));
      }
      break;
    }
    case PartitionSpec::Kind::kSemantic:
      throw PartitionError("semantic: needs the images (make_partition of a dataset)");
  }
  for (size_t r = 0; r < shards.size(); ++r)
    if (shards[r].empty())
      throw PartitionError("rank " + std::to_string(r) + " would hold no example (" + std::to_string(labels.size()) +
                           " examples over " + std::to_string(P) + " workers)");
  return shards;
}

std::vector<std::vector<uint32_t>> make_partition(const Dataset& data, int classes, const PartitionSpec& spec,
                                                  const model::RankLayout& layout, uint64_t seed) {
  if (spec.kind != PartitionSpec::Kind::kSemantic) return make_partition(data.labels, classes, spec, layout, seed);
  return semantic_partition(data.images.data(), data.size, data.features(), spec.semantic, layout, seed);
}

std::vector<float> dc_mean_weights(const model::RankLayout& layout, const std::vector<std::vector<uint32_t>>& shards,
                                   DcWeighting weighting) {
  if (shards.size() != static_cast<size_t>(layout.world()))
    throw PartitionError(std::to_string(shards.size()) + " shards for " + std::to_string(layout.world()) + " workers");
  std::vector<uint64_t> share(static_cast<size_t>(layout.dcs()), 0);
  for (int r = 0; r < layout.world(); ++r)
    share[static_cast<size_t>(layout.dc_of(r))] += weighting == DcWeighting::kWorkers ? 1 : shards[static_cast<size_t>(r)].size();
  if (std::all_of(share.begin(), share.end(), [&](uint64_t s) { return s == share[0]; })) return {};
  uint64_t total = 0;
  for (uint64_t s : share) total += s;
  std::vector<float> w;
  for (uint64_t s : share) w.push_back(static_cast<float>(static_cast<double>(s) / static_cast<double>(total)));
  return w;
}

std::vector<std::vector<uint64_t>> label_histogram(const std::vector<std::vector<uint32_t>>& parts,
                                                   const std::vector<int64_t>& labels, int classes) {
  std::vector<std::vector<uint64_t>> h(parts.size(), std::vector<uint64_t>(static_cast<size_t>(classes), 0));
  for (size_t p = 0; p < parts.size(); ++p)
    for (uint32_t i : parts[p]) ++h[p][static_cast<size_t>(labels[i])];
  return h;
}

}  // namespace geotb::engine
