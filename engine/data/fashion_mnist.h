// Fashion-MNIST from Debian's dataset-fashion-mnist (gzipped IDX files), read with zlib.
// No libtorch here: images are plain normalised floats, labels int64.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace geotb::engine {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;  ///< labels in [0, 10)

struct Dataset {
  size_t size = 0;
  int rows = 0, cols = 0;
  std::vector<float> images;    ///< size * rows * cols, normalised (x/255 - mean) / std
  std::vector<int64_t> labels;  ///< size, in [0, 10)
  size_t features() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
};

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reads `<dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`. `limit` > 0 keeps the first
/// `limit` examples. Throws DataError naming the file on a missing or malformed file.
Dataset load_fashion_mnist(const std::string& dir, bool train, size_t limit = 0);

/// IID partition: a seeded permutation of [0, n) cut into `shards` nearly equal parts.
std::vector<std::vector<uint32_t>> partition_iid(size_t n, int shards, uint64_t seed);

/// Endless minibatch order over one shard: reshuffled at every epoch from a seeded stream.
class BatchSampler {
 public:
  BatchSampler(std::vector<uint32_t> shard, uint64_t seed, uint64_t stream);
  /// Fills `out` with the next `batch` example indices.
  void next(size_t batch, std::vector<uint32_t>& out);
  uint64_t epoch() const { return epoch_; }
  /// Its position, for checkpoints: the current order of the shard, the next index in it and
  /// the epoch (the next reshuffle's stream).
  struct Position {
    std::vector<uint32_t> order;
    uint64_t pos = 0, epoch = 0;
  };
  Position position() const { return {order_, pos_, epoch_}; }
  /// Continues from `p`; throws std::invalid_argument unless p.order is a permutation of this
  /// sampler's shard and p.pos is within it.
  void set_position(const Position& p);

 private:
  void reshuffle();
  std::vector<uint32_t> order_;
  size_t pos_ = 0;
  uint64_t epoch_ = 0;
  uint64_t seed_, stream_;
};

}  // namespace geotb::engine
