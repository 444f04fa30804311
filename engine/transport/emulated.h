// Transport backend over the in-process emulated network (emulator/inproc/fabric.h): messages
// are delivered in real time when the link model says. One object per rank; the fabric is shared.
#pragma once

#include <chrono>

#include "emulator/inproc/fabric.h"
#include "engine/transport/transport.h"

namespace geotb::engine {

class EmulatedTransport final : public Transport {
 public:
  /// Real time, or virtual time when `sched` is the fabric's scheduler (then every thread that
  /// uses this endpoint must be an actor of it, and make_sync() hands off in virtual time).
  /// `scale`: represented / trained parameters (docs/guide/represented.md): every send_data
  /// message occupies the network as represented_size() bytes. 1: what is sent is what is carried.
  EmulatedTransport(emu::Fabric& fabric, int rank, std::chrono::nanoseconds timeout,
                    emu::VirtualScheduler* sched = nullptr, double scale = 1.0)
      : fabric_(fabric), rank_(rank), timeout_(timeout), sched_(sched), scale_(scale) {}
  int rank() const override { return rank_; }
  int size() const override { return fabric_.size(); }
  void send(int dst, uint64_t tag, std::vector<uint8_t> bytes) override;
  void send_data(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t fixed_bytes = 0) override;
  /// Any size and rounds (Fabric::send's network_bytes and rounds).
  void send_shaped(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t network_bytes,
                   uint64_t rounds) override;
  uint64_t represented_size(uint64_t bytes, uint64_t fixed_bytes = 0) const override;
  double represent_scale() const override { return scale_; }
  std::vector<uint8_t> recv(int src, uint64_t tag) override;
  /// Virtual time only (Fabric::poll); the real-time fabric throws TransportError.
  std::optional<std::vector<uint8_t>> poll(int src, uint64_t tag) override;
  std::optional<std::vector<uint8_t>> recv_until(int src, uint64_t tag, std::chrono::nanoseconds deadline) override;
  /// Closes the whole fabric: in embedded mode one failed rank ends the run for every rank.
  /// Except while this rank's alarm is raised (a peer declared dead, engine/faults/): its recvs
  /// are already interrupted and the survivors recover, so nothing is closed; nor by a killed
  /// rank (its abandoned background exchange closes it on its way out).
  void close() override {
    if (!fabric_.alarmed(rank_) && !fabric_.endpoint_dead(rank_)) fabric_.close();
  }
  std::unique_ptr<Sync> make_sync() override;
  /// Fabric::take_over: the notices travel on the fabric (virtual-time mode).
  void take_over(int dead, const std::vector<int>& tell) override;

 private:
  emu::Fabric& fabric_;
  int rank_;
  std::chrono::nanoseconds timeout_;
  emu::VirtualScheduler* sched_;
  double scale_;
};

}  // namespace geotb::engine
