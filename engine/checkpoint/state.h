// A worker's state as named flat buffers: what a checkpoint holds for one rank (its weights,
// optimizer, sampler, strategy, ...). Writers append named buffers in a fixed order; a reader
// takes them back by name, checks each one's size, and refuses a state with a buffer it did not
// take (a field written but never restored) or without one it asks for (a field restored but
// never written): every mismatch is an error naming the buffer, never a half-restored state.
// Host byte order (a checkpoint is resumed by the same build on the same kind of host).
// No libtorch here.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace geotb::engine {

/// A state that cannot be restored: a missing, extra or mis-sized buffer, or an invalid value.
class StateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Named byte buffers, in the order they were written.
struct StateBuffers {
  struct Entry {
    std::string name;
    std::vector<uint8_t> bytes;
  };
  std::vector<Entry> entries;

  /// The entry named `name`, or null.
  const Entry* find(std::string_view name) const;
  /// Total bytes of every entry (names excluded).
  uint64_t payload_bytes() const;
};

/// Appends buffers under a name prefix ("strategy." for a strategy's own).
class StateWriter {
 public:
  explicit StateWriter(StateBuffers& out, std::string prefix = "") : out_(out), prefix_(std::move(prefix)) {}
  /// Throws StateError if `name` was already written.
  void bytes(std::string_view name, const void* p, size_t n);
  template <class T>
  void vec(std::string_view name, const std::vector<T>& v) {
    bytes(name, v.data(), v.size() * sizeof(T));
  }
  void floats(std::string_view name, const std::vector<float>& v) { vec(name, v); }
  void i64(std::string_view name, int64_t v) { bytes(name, &v, sizeof v); }
  void u64(std::string_view name, uint64_t v) { bytes(name, &v, sizeof v); }
  void f64(std::string_view name, double v) { bytes(name, &v, sizeof v); }
  void flag(std::string_view name, bool v) {
    const uint8_t b = v ? 1 : 0;
    bytes(name, &b, 1);
  }
  /// A writer for the same buffers under prefix + `sub` + ".".
  StateWriter sub(std::string_view sub) const { return StateWriter(out_, prefix_ + std::string(sub) + "."); }

 private:
  StateBuffers& out_;
  std::string prefix_;
};

/// Takes buffers back by name. Every get checks the size; finish() checks that every buffer
/// under the prefix was taken. Errors: StateError("<name>: ...").
class StateReader {
 public:
  explicit StateReader(const StateBuffers& in, std::string prefix = "");
  /// The buffer's bytes; throws StateError if it is absent.
  const std::vector<uint8_t>& raw(std::string_view name);
  /// Copies the buffer into `v`, which must hold exactly `expected` elements of T (the caller
  /// knows the size: the model's parameters, ...). Throws StateError on another size.
  template <class T>
  void vec_exact(std::string_view name, std::vector<T>& v, size_t expected) {
    const auto& b = raw(name);
    if (b.size() != expected * sizeof(T)) size_error(name, b.size(), expected * sizeof(T));
    v.resize(expected);
    if (expected) std::memcpy(v.data(), b.data(), b.size());
  }
  /// Any whole number of T.
  template <class T>
  void vec(std::string_view name, std::vector<T>& v) {
    const auto& b = raw(name);
    if (b.size() % sizeof(T) != 0) size_error(name, b.size(), (b.size() / sizeof(T) + 1) * sizeof(T));
    v.resize(b.size() / sizeof(T));
    if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
  }
  void floats(std::string_view name, std::vector<float>& v, size_t expected) { vec_exact(name, v, expected); }
  void floats(std::string_view name, float* p, size_t expected);
  int64_t i64(std::string_view name) { return scalar<int64_t>(name); }
  uint64_t u64(std::string_view name) { return scalar<uint64_t>(name); }
  double f64(std::string_view name) { return scalar<double>(name); }
  bool flag(std::string_view name);
  /// A reader of the same buffers under prefix + `sub` + "."; its takes count for this one too.
  StateReader sub(std::string_view sub);
  /// Throws StateError naming the first buffer under the prefix that no get took.
  void finish() const;

 private:
  StateReader(const StateBuffers& in, std::string prefix, std::shared_ptr<std::vector<bool>> taken);
  template <class T>
  T scalar(std::string_view name) {
    const auto& b = raw(name);
    if (b.size() != sizeof(T)) size_error(name, b.size(), sizeof(T));
    T v;
    std::memcpy(&v, b.data(), sizeof v);
    return v;
  }
  [[noreturn]] void size_error(std::string_view name, size_t got, size_t want) const;

  const StateBuffers& in_;
  std::string prefix_;
  std::shared_ptr<std::vector<bool>> taken_;
};

}  // namespace geotb::engine
