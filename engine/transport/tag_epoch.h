// A Transport decorator that moves a strategy's messages into a tag epoch of their own: every tag
// of the strategy space (transport/tags.h strategy_tags(), [0, 2^62)) is sent and received as
// tag + epoch * 2^56; other tags (the intra-DC groups', the fault agents') pass unchanged.
//
// Why: a strategy numbers its tags from the start of its space (TagAllocator, in call order). A
// worker that goes back to a checkpoint (full recovery, checkpoint/worker_state.h rewind_worker)
// runs a fresh strategy, which would number from the start again, while messages of the abandoned
// steps can still wait in its mailbox under those numbers (a collective interrupted by a death
// leaves some unread). Every survivor takes the same epoch at the same boundary, so they agree on
// the new tags without talking, and no stale message can match one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/transport/tags.h"
#include "engine/transport/transport.h"

namespace geotb::engine {

class TagEpochTransport final : public Transport {
 public:
  static constexpr int kEpochShift = 56;
  static constexpr uint64_t kMaxEpoch = (uint64_t{1} << (62 - kEpochShift)) - 1;  // 63

  /// `inner` must outlive this object. Throws TagError for an epoch beyond kMaxEpoch.
  TagEpochTransport(Transport& inner, uint64_t epoch) : inner_(inner), offset_(epoch << kEpochShift) {
    if (epoch > kMaxEpoch)
      throw TagError("tag epoch " + std::to_string(epoch) + ": at most " + std::to_string(kMaxEpoch) + " rewinds");
  }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void send(int dst, uint64_t tag, std::vector<uint8_t> bytes) override { inner_.send(dst, map(tag), std::move(bytes)); }
  void send_data(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t fixed_bytes = 0) override {
    inner_.send_data(dst, map(tag), std::move(bytes), fixed_bytes);
  }
  void send_shaped(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t network_bytes,
                   uint64_t rounds) override {
    inner_.send_shaped(dst, map(tag), std::move(bytes), network_bytes, rounds);
  }
  uint64_t represented_size(uint64_t bytes, uint64_t fixed_bytes = 0) const override {
    return inner_.represented_size(bytes, fixed_bytes);
  }
  double represent_scale() const override { return inner_.represent_scale(); }
  std::vector<uint8_t> recv(int src, uint64_t tag) override { return inner_.recv(src, map(tag)); }
  std::optional<std::vector<uint8_t>> poll(int src, uint64_t tag) override { return inner_.poll(src, map(tag)); }
  std::optional<std::vector<uint8_t>> recv_until(int src, uint64_t tag, std::chrono::nanoseconds deadline) override {
    return inner_.recv_until(src, map(tag), deadline);
  }
  void close() override { inner_.close(); }
  std::unique_ptr<Sync> make_sync() override { return inner_.make_sync(); }
  void take_over(int dead, const std::vector<int>& tell) override { inner_.take_over(dead, tell); }

  /// The tag on the wire for a strategy's `tag`.
  uint64_t map(uint64_t tag) const {
    if (!strategy_tags().contains(tag)) return tag;
    if (tag >> kEpochShift)
      throw TagError("strategy tag " + std::to_string(tag) + ": beyond the 2^56 tags of one epoch");
    return tag + offset_;
  }

 private:
  Transport& inner_;
  uint64_t offset_;
};

}  // namespace geotb::engine
