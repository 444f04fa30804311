// Collectives inside one group of workers (a data center, or every worker for `lan`), on flat float buffers. The backend is c10d's
// ProcessGroupGloo (collectives/gloo_intra_dc.cc, the only libtorch TU here): real Gloo
// allreduce over TCP on the DC's interface. No libtorch in this header.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include <cstdint>

#include "engine/collectives/ring_allreduce.h"
#include "engine/collectives/store.h"

namespace geotb::engine {

class IntraDc {
 public:
  virtual ~IntraDc() = default;
  virtual int rank() const = 0;  ///< rank inside the data center
  virtual int size() const = 0;  ///< workers in the data center
  /// In place: data becomes the element-wise mean over the DC's workers.
  virtual void allreduce_mean(float* data, size_t n) = 0;
  /// allreduce_mean of a bucket group standing for `shape` on the network (a represented
  /// model's, strategies/ddp_buckets.h). Only a group over the engine's transport carries a
  /// shape other than the data's own (n elements, one round); any other throws std::logic_error.
  virtual void allreduce_mean_shaped(float* data, size_t n, const RingShape& shape) {
    if (shape.elements != n || shape.rounds != 1)
      throw std::logic_error("allreduce_mean_shaped: this group carries its data as it is (" + std::to_string(n) +
                             " elements), not " + std::to_string(shape.elements) + " in " +
                             std::to_string(shape.rounds) + " rounds");
    allreduce_mean(data, n);
  }
  /// In place: every worker's data becomes root's.
  virtual void broadcast(float* data, size_t n, int root) = 0;
  /// The member at index `root` hands its `count` messages (`wires`) to every other member, who
  /// receive them into `wires`, each message a Transport::send_data of its bytes (the first
  /// `header_bytes` unscaled): a DC leader's forward of the other sites' payloads. Returns false
  /// where the group does not carry such messages (the caller sends them over the transport
  /// itself, as before); the analytic group (collectives/analytic_group.h) does.
  virtual bool forward(std::vector<std::vector<uint8_t>>& wires, size_t count, int root, uint64_t header_bytes) {
    (void)wires, (void)count, (void)root, (void)header_bytes;
    return false;
  }
  virtual void barrier() = 0;
};

/// A collective failed (a member died or timed out): c10d/Gloo's error, typed.
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GlooOptions {
  std::string interface = "lo";                  ///< network interface Gloo binds to (when hostname is empty)
  std::string hostname;                          ///< address to bind and advertise instead (process mode: GEOTB_BIND_ADDR)
  std::chrono::milliseconds timeout{120000};     ///< per-operation timeout
  int threads = 1;  ///< ProcessGroupGloo worker threads (c10d's default is 2; one is enough for one
                    ///< collective at a time, and many workers share few cores here)
};

/// Joins the group `prefix` of `store` (all `size` members must call concurrently: this rendezvous
/// blocks). The store is the in-process one (embedded mode: threads) or a TCPStore shared by
/// processes (process mode); one Gloo device per store and address is shared by the groups.
/// Throws CollectiveError on failure; so do the group's operations.
std::unique_ptr<IntraDc> make_gloo_group(const std::shared_ptr<StoreHandle>& store, const std::string& prefix,
                                         int rank, int size, const GlooOptions& opt);

}  // namespace geotb::engine
