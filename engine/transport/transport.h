// The engine's message transport: one endpoint's view of a network of ranks. Strategies and
// collectives use only this interface, so the same code runs over the in-process emulated WAN
// (transport/emulated.h) and, later, over real sockets.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/sync.h"
#include "engine/transport/tags.h"

namespace geotb::engine {

/// A recoverable transport failure: peer unreachable, timed out, transport closed.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// recv woke because the transport was closed (after a failure elsewhere): a consequence, not a cause.
class TransportClosed : public TransportError {
 public:
  using TransportError::TransportError;
};

/// recv interrupted because this rank's heartbeat monitor declared a peer dead (engine/faults/):
/// the survivors recover (policy shrink) instead of failing the run.
class PeerDeclaredDead : public TransportError {
 public:
  using TransportError::TransportError;
};

/// The network size of a tensor message of `bytes`, its first `fixed_bytes` headers, standing for a
/// model `scale` times the trained one: fixed + round((bytes - fixed) * scale), or `bytes` as they
/// are at scale 1 or when there is nothing past the headers (docs/guide/represented.md).
inline uint64_t represented_bytes(uint64_t bytes, uint64_t fixed_bytes, double scale) {
  if (scale == 1.0 || bytes <= fixed_bytes) return bytes;
  return fixed_bytes + static_cast<uint64_t>(std::llround(static_cast<double>(bytes - fixed_bytes) * scale));
}

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Non-blocking send of `bytes` to `dst`, matched by (this rank, tag) on the receiver.
  /// Throws TransportError if the network says it can never be delivered.
  virtual void send(int dst, uint64_t tag, std::vector<uint8_t> bytes) = 0;
  /// send() of a message that carries a tensor of the trained model (a ring chunk, a compressed
  /// exchange, a model average), its first `fixed_bytes` headers. A transport that represents a
  /// larger model (docs/guide/represented.md: the embedded mode's, given a scale) puts it on the
  /// network as represented_size(bytes.size(), fixed_bytes) bytes; the payload is what arrives.
  virtual void send_data(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t fixed_bytes = 0) {
    (void)fixed_bytes;
    send(dst, tag, std::move(bytes));
  }
  /// send() of a tensor message whose network size the sender computed itself: a bucketed
  /// allreduce's chunk of a represented model (collectives/buckets.h), which stands for
  /// `network_bytes` on the network and for `rounds` dependent transfers of equal parts (a group of
  /// buckets, each a ring step). Only a representing transport carries a size other than the
  /// payload's or more than one round; any other throws std::logic_error for them.
  virtual void send_shaped(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t network_bytes,
                           uint64_t rounds) {
    if (network_bytes != bytes.size() || rounds != 1)
      throw std::logic_error("send_shaped: this transport carries what it is given (" + std::to_string(bytes.size()) +
                             " bytes, 1 round), not " + std::to_string(network_bytes) + " bytes in " +
                             std::to_string(rounds) + " rounds");
    send(dst, tag, std::move(bytes));
  }
  /// The network size of a tensor message of `bytes`, `fixed_bytes` of them headers:
  /// fixed + round((bytes - fixed) * scale) on a representing transport, else `bytes`.
  virtual uint64_t represented_size(uint64_t bytes, uint64_t fixed_bytes = 0) const {
    (void)fixed_bytes;
    return bytes;
  }
  /// Represented / trained parameters this transport scales tensor messages by (1: none).
  virtual double represent_scale() const { return 1.0; }
  /// Blocks until the message (src, tag) has arrived and returns it.
  /// Throws TransportError after the transport's timeout.
  virtual std::vector<uint8_t> recv(int src, uint64_t tag) = 0;
  /// The message (src, tag) if it has arrived by now, else nullopt, without waiting for it (the
  /// asynchronous strategies' "apply what has arrived"). In virtual time "now" is the caller's
  /// virtual instant, and the answer is exact whatever order the host ran the senders in. A
  /// transport that cannot tell throws TransportError.
  virtual std::optional<std::vector<uint8_t>> poll(int src, uint64_t tag) {
    throw TransportError("rank " + std::to_string(rank()) + ": this transport cannot poll for a message (rank " +
                         std::to_string(src) + ", tag " + std::to_string(tag) + ") without waiting");
  }
  /// recv, giving up at `deadline` (this transport's clock): nothing then. A quorum of sites
  /// stops waiting for a site the membership service separates (faults/quorum.h). Virtual time
  /// only; a transport that cannot wait so throws TransportError.
  virtual std::optional<std::vector<uint8_t>> recv_until(int src, uint64_t tag, std::chrono::nanoseconds deadline) {
    (void)deadline;
    throw TransportError("rank " + std::to_string(rank()) + ": this transport cannot wait for a message (rank " +
                         std::to_string(src) + ", tag " + std::to_string(tag) + ") until an instant");
  }
  /// Aborts this endpoint after a failure: every recv blocked on it (and, where the backend can,
  /// peers' recvs waiting on it) returns with TransportError instead of waiting for its timeout.
  /// Idempotent.
  virtual void close() = 0;
  /// A hand-off primitive in this transport's time domain, for threads of this rank that
  /// communicate over it (engine/sync.h). Real time unless the backend runs in virtual time.
  virtual std::unique_ptr<Sync> make_sync() { return make_real_time_sync(); }
  /// Node faults (engine/faults/): this rank takes over the address of `dead`, a killed rank of
  /// its own data center (a DC leader's successor). Every rank of `tell` gets a takeover notice
  /// on its connection from this rank (kTakeoverTag, ahead of what this rank sends it after);
  /// from the notice's arrival on, that rank's sends to `dead` come here, its receives from
  /// `dead` also take this rank's messages, and the last messages it had sent to `dead` (kept
  /// since the run was told to keep them) are sent here again. Backends without it throw.
  virtual void take_over(int dead, const std::vector<int>& tell) {
    (void)tell;
    throw TransportError("rank " + std::to_string(rank()) + ": this transport cannot take over rank " +
                         std::to_string(dead) + "'s address");
  }
};

/// The takeover notice's tag (Transport::take_over): outside every range a Transport user may
/// take (transport/tags.h); the same value as the fabric's (emulator/inproc/fabric.h).
inline constexpr uint64_t kTakeoverTag = reserved_tags::kTakeover;

}  // namespace geotb::engine
