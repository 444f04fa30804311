// A Transport decorator that counts what its rank sends to ranks of other data centers (the WAN
// traffic of the process mode, where no emulator object sees every message). Thread-safe: a
// strategy's background exchange thread and its step thread may send concurrently.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "engine/transport/transport.h"

namespace geotb::engine {

class CountingTransport final : public Transport {
 public:
  /// `dc_of[r]` is rank r's data center; `inner` must outlive this object. Wire bytes are
  /// estimated from the backend's framing: `frame_header_bytes` per started `chunk_bytes` of a
  /// message (0, 0: wire = payload).
  CountingTransport(Transport& inner, std::vector<int> dc_of, uint64_t chunk_bytes = 0, uint64_t frame_header_bytes = 0)
      : inner_(inner), dc_of_(std::move(dc_of)), chunk_(chunk_bytes), header_(frame_header_bytes) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void send(int dst, uint64_t tag, std::vector<uint8_t> bytes) override {
    count(dst, bytes.size());
    inner_.send(dst, tag, std::move(bytes));
  }
  void send_data(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t fixed_bytes = 0) override {
    count(dst, inner_.represented_size(bytes.size(), fixed_bytes));
    inner_.send_data(dst, tag, std::move(bytes), fixed_bytes);
  }
  void send_shaped(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t network_bytes,
                   uint64_t rounds) override {
    count(dst, network_bytes);
    inner_.send_shaped(dst, tag, std::move(bytes), network_bytes, rounds);
  }
  uint64_t represented_size(uint64_t bytes, uint64_t fixed_bytes = 0) const override {
    return inner_.represented_size(bytes, fixed_bytes);
  }
  double represent_scale() const override { return inner_.represent_scale(); }
  std::vector<uint8_t> recv(int src, uint64_t tag) override { return inner_.recv(src, tag); }
  std::optional<std::vector<uint8_t>> poll(int src, uint64_t tag) override { return inner_.poll(src, tag); }
  std::optional<std::vector<uint8_t>> recv_until(int src, uint64_t tag, std::chrono::nanoseconds deadline) override {
    return inner_.recv_until(src, tag, deadline);
  }
  void close() override { inner_.close(); }
  void take_over(int dead, const std::vector<int>& tell) override { inner_.take_over(dead, tell); }

  uint64_t wan_messages() const { return wan_messages_.load(); }
  uint64_t wan_payload_bytes() const { return wan_bytes_.load(); }  ///< message bytes, no framing
  uint64_t wan_wire_bytes() const { return wan_wire_.load(); }      ///< payload + frame headers (estimate)

 private:
  void count(int dst, uint64_t size) {
    if (dc_of_.at(static_cast<size_t>(dst)) != dc_of_.at(static_cast<size_t>(inner_.rank()))) {
      wan_messages_.fetch_add(1, std::memory_order_relaxed);
      wan_bytes_.fetch_add(size, std::memory_order_relaxed);
      const uint64_t frames = chunk_ ? std::max<uint64_t>(1, (size + chunk_ - 1) / chunk_) : 0;
      wan_wire_.fetch_add(size + frames * header_, std::memory_order_relaxed);
    }
  }

  Transport& inner_;
  std::vector<int> dc_of_;
  uint64_t chunk_, header_;
  std::atomic<uint64_t> wan_messages_{0}, wan_bytes_{0}, wan_wire_{0};
};

}  // namespace geotb::engine
