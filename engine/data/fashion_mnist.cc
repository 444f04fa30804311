#include "engine/data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "common/random.h"

namespace geotb::engine {

namespace {
// Fashion-MNIST training-set pixel statistics (mean and std of x/255).
constexpr float kMean = 0.2860f;
constexpr float kStd = 0.3530f;

std::vector<uint8_t> read_gz(const std::string& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), gzclose);
  if (!f) throw DataError(path + ": cannot open (install Debian's dataset-fashion-mnist: ci/install-deps.sh)");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  for (;;) {
    const int r = gzread(f.get(), buf, sizeof buf);
    if (r < 0) throw DataError(path + ": corrupt gzip stream");
    if (r == 0) break;
    out.insert(out.end(), buf, buf + r);
  }
  return out;
}

uint32_t be32(const std::vector<uint8_t>& b, size_t off) {
  return (uint32_t{b[off]} << 24) | (uint32_t{b[off + 1]} << 16) | (uint32_t{b[off + 2]} << 8) | b[off + 3];
}
}  // namespace

Dataset load_fashion_mnist(const std::string& dir, bool train, size_t limit) {
  const std::string prefix = dir + "/" + (train ? "train" : "t10k");
  const std::string ipath = prefix + "-images-idx3-ubyte.gz", lpath = prefix + "-labels-idx1-ubyte.gz";
  const std::vector<uint8_t> img = read_gz(ipath);
  const std::vector<uint8_t> lab = read_gz(lpath);
  if (img.size() < 16 || be32(img, 0) != 0x00000803) throw DataError(ipath + ": not an IDX3 ubyte file");
  if (lab.size() < 8 || be32(lab, 0) != 0x00000801) throw DataError(lpath + ": not an IDX1 ubyte file");
  const size_t n = be32(img, 4);
  Dataset d;
  d.rows = static_cast<int>(be32(img, 8));
  d.cols = static_cast<int>(be32(img, 12));
  if (be32(lab, 4) != n) throw DataError(lpath + ": label count differs from " + ipath);
  if (img.size() != 16 + n * d.features()) throw DataError(ipath + ": truncated");
  if (lab.size() != 8 + n) throw DataError(lpath + ": truncated");
  d.size = limit > 0 ? std::min(limit, n) : n;
  d.images.resize(d.size * d.features());
  for (size_t i = 0; i < d.images.size(); ++i) d.images[i] = (img[16 + i] / 255.0f - kMean) / kStd;
  d.labels.resize(d.size);
  for (size_t i = 0; i < d.size; ++i) {
    if (lab[8 + i] > 9) throw DataError(lpath + ": label " + std::to_string(lab[8 + i]) + " at " + std::to_string(i));
    d.labels[i] = lab[8 + i];
  }
  return d;
}

std::vector<std::vector<uint32_t>> partition_iid(size_t n, int shards, uint64_t seed) {
  if (shards < 1) throw std::invalid_argument("partition_iid: shards must be >= 1");
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  emu::RandomStream rng(seed, /*stream=*/0x5eed0001);
  for (size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[rng.next_u64() % i]);
  std::vector<std::vector<uint32_t>> out(static_cast<size_t>(shards));
  for (int s = 0; s < shards; ++s) {
    const size_t lo = n * static_cast<size_t>(s) / shards, hi = n * static_cast<size_t>(s + 1) / shards;
    out[static_cast<size_t>(s)].assign(perm.begin() + static_cast<std::ptrdiff_t>(lo),
                                       perm.begin() + static_cast<std::ptrdiff_t>(hi));
  }
  return out;
}

BatchSampler::BatchSampler(std::vector<uint32_t> shard, uint64_t seed, uint64_t stream)
    : order_(std::move(shard)), seed_(seed), stream_(stream) {
  if (order_.empty()) throw std::invalid_argument("BatchSampler: empty shard");
  reshuffle();
}

void BatchSampler::reshuffle() {
  emu::RandomStream rng(seed_, stream_ * 1000003 + epoch_);
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.next_u64() % i]);
  pos_ = 0;
}

void BatchSampler::next(size_t batch, std::vector<uint32_t>& out) {
  out.resize(batch);
  for (size_t i = 0; i < batch; ++i) {
    if (pos_ == order_.size()) {
      ++epoch_;
      reshuffle();
    }
    out[i] = order_[pos_++];
  }
}

}  // namespace geotb::engine

namespace geotb::engine {

void BatchSampler::set_position(const Position& p) {
  if (p.order.size() != order_.size())
    throw std::invalid_argument("sampler order: " + std::to_string(p.order.size()) + " indices, this rank's shard has " +
                                std::to_string(order_.size()));
  std::vector<uint32_t> a = p.order, b = order_;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) throw std::invalid_argument("sampler order: not a permutation of this rank's shard (another data partition)");
  if (p.pos > p.order.size())
    throw std::invalid_argument("sampler position: " + std::to_string(p.pos) + ", beyond the shard's " +
                                std::to_string(p.order.size()));
  order_ = p.order;
  pos_ = static_cast<size_t>(p.pos);
  epoch_ = p.epoch;
}

}  // namespace geotb::engine
