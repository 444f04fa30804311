// Transport backend over real TCP sockets, for worker processes on different hosts (or network
// namespaces behind the DPDK WAN emulator). libtorch-free.
//
// Connections. Every endpoint listens (listen_host:listen_port). A rank opens its own outgoing
// connections ("streams") to a peer, lazily on the first send() or recv() naming that peer, and
// carries its messages to that peer only on them; the peer does the same in the other direction.
// So no pair of ranks ever races to open the same connection, and each side picks its own stream
// count. Connections are persistent: a connection that breaks after the handshake is not
// reopened: the peer is failed (below). Refused connection attempts are retried every 100 ms for
// connect_timeout (peers start at different times).
//
// Streams and striping. A message is cut into chunks of chunk_bytes; chunks go to the peer's
// streams as their queues drain (round robin among the emptiest), so a stream whose TCP window is
// full does not hold back the others. The receiver places each chunk at its offset in the
// message buffer and delivers a message once all its bytes are in, in the sender's message order
// (per peer), so recv() sees FIFO order per (src, tag). streams = 0 derives the count:
// derive_streams(link_rate_bps, link_rtt_s, sockbuf_bytes()) (one window per stream).
//
// Framing (frame.h): 64-byte header with its own crc32c, length, per-connection sequence number,
// payload crc32c. A frame with a bad checksum, an impossible length or offset, or a sequence gap
// is rejected: the message it belongs to is never delivered, corrupt_frames_rejected counts it,
// and the peer is failed with FrameError (the byte stream cannot be trusted after it).
//
// Liveness. Every connection carries a HEARTBEAT frame after `heartbeat` without other traffic,
// in both directions. A peer from which nothing (data or heartbeat) arrived on any of its
// connections for peer_timeout, or whose connection ends without a GOODBYE frame (killed process,
// reset), is failed with PeerDeadError. Failures are permanent for that peer: its queued sends are
// dropped, send() to it and recv() from it throw the typed error; messages it completed before
// the failure are still returned by recv().
//
// Authentication (auth.h). With a non-empty secret every connection runs an HMAC-SHA256
// challenge-response in both directions binding both ranks, the world size, the stream index and
// fresh nonces; no DATA frame is accepted before it completes. Without a secret the handshake
// still checks ranks and world size. A refused handshake (wrong secret, one side without a
// secret, unexpected rank, world mismatch) is asymmetric. The connector, which dialled the peer's
// published address, fails that peer with AuthError when it gets REJECT or an invalid proof. The
// acceptor only refuses and counts (Stats::incoming_refused): a HELLO may claim any rank, so
// anyone who can reach the port could otherwise stop a run by claiming a rank with a wrong
// secret. A misconfigured real peer still fails fast: every pair dials both ways, and its own
// connection is refused by the other side. With a secret, the acceptor touches nothing of the
// claimed rank's state (a restarted rank's reset included) before the proof.
//
// Threading. One background I/O thread per transport runs an epoll loop over the listening
// socket, every connection and an eventfd; send() only queues (O(1), the bytes are moved, not
// copied) and wakes it; recv() waits on a condition variable. Why one thread and not one per
// connection: with 16 streams to each of several peers a thread per connection means dozens of
// threads competing with training for a few cores, while one thread moving memory at memcpy/crc32c
// speed (several GB/s) is far above a WAN link's rate; what limits a WAN flow is its TCP window,
// which the parallel streams address, not CPU. All methods are thread-safe.
//
// Shutdown. close() (also the destructor) wakes blocked recv() calls with TransportError at
// once, then gives queued sends up to peer_timeout to reach the kernel, sends GOODBYE on every
// connection, half-closes and waits briefly for the peers' EOF. A peer that received GOODBYE on
// all its connections from us fails us with PeerDeadError("closed") once it needs us.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/transport/transport.h"

namespace geotb::engine {

struct SocketEndpoint {
  std::string host;   // numeric IPv4 or a hostname (resolved once, in start())
  uint16_t port = 0;
};

struct SocketTransportConfig {
  int rank = 0, world = 1;
  std::string listen_host = "0.0.0.0";  // bind address (numeric IPv4 or hostname)
  uint16_t listen_port = 0;             // 0 = ephemeral; port() tells which
  int streams = 0;                      // parallel TCP connections per peer, 1..16; 0 = derive
  double link_rate_bps = 0;             // bits per second, for deriving streams; 0 = unknown -> 1 stream
  double link_rtt_s = 0;                // seconds, for deriving streams
  std::chrono::milliseconds heartbeat{500};       // idle keepalive frame interval
  std::chrono::milliseconds peer_timeout{5000};   // silence from a peer -> PeerDeadError; also the
                                                  // handshake limit and the close() linger
  std::chrono::milliseconds recv_timeout{120000}; // recv() waiting for a message that never comes
  std::string secret;                   // non-empty: HMAC-SHA256 challenge-response on every connection
  // Extensions.
  std::chrono::milliseconds connect_timeout{30000};  // retrying refused connects before PeerDeadError
  size_t sockbuf_bytes = 0;             // SO_SNDBUF/SO_RCVBUF request per connection; 0 = kernel
                                        // autotuning (up to net.ipv4.tcp_wmem/tcp_rmem max)
  size_t chunk_bytes = 256 * 1024;      // striping unit (frame payload), 1 KiB .. 64 MiB
  uint64_t max_message_bytes = 1ull << 34;  // larger incoming messages are FrameErrors, larger sends throw
  /// Called once per failed peer, on the I/O thread with no lock held, before any waiter sees the
  /// failure: (rank, why, silent_for: how long nothing had come from it when it was failed for
  /// silence; nothing when its connection ended or a frame was bad, how: "silence", "witness",
  /// "unreachable" (see witnesses) or "connection"). Not for a peer that closed its transport
  /// (GOODBYE): it finished or failed on its own. A node-fault agent (engine/faults/) records the
  /// detection and interrupts receives. May be empty.
  std::function<void(int, const std::string&, std::optional<std::chrono::milliseconds>, const std::string&)>
      on_peer_failed;
  /// Indirect probes (the rule of engine/faults/heartbeat.h): a peer silent for peer_timeout is
  /// not failed at once if witnesses(peer) names ranks. This transport asks each of them (a
  /// message on reserved_tags::kWitness, every heartbeat / 4) whether it hears the peer. A
  /// witness answers "alive" if something came from the peer within two heartbeat intervals, "not
  /// reached" if nothing did or the peer failed there, nothing if it has no connection to it. An
  /// "alive" counts as hearing the peer. The peer fails on a "not reached" (how "witness"), or
  /// `unreachable` after its silence passed peer_timeout with no answer (how "unreachable").
  /// Empty function or empty list: silence for peer_timeout fails the peer (how "silence").
  std::function<std::vector<int>(int)> witnesses;
  std::chrono::milliseconds unreachable{30000};
  /// Fault injection for tests: nothing that arrives from a rank it names counts as hearing that
  /// rank (a path that loses every heartbeat; the data still arrives). Empty: none.
  std::function<bool(int)> deaf_to;
  /// Messages with this tag (non-zero; outside every range a Transport user takes) are handed to
  /// on_notice (src, bytes) on the I/O thread, in order, with no lock held, instead of a mailbox:
  /// a node-fault agent's "recovering" notices, which must reach it while its worker is blocked.
  uint64_t notice_tag = 0;
  std::function<void(int, std::vector<uint8_t>)> on_notice;
};

/// The peer is gone: silent for peer_timeout, its connection reset or ended without GOODBYE,
/// unreachable for connect_timeout, or it closed its transport.
class PeerDeadError : public TransportError {
 public:
  using TransportError::TransportError;
};
/// The connection handshake was refused (wrong or missing secret, unexpected rank or world size).
class AuthError : public TransportError {
 public:
  using TransportError::TransportError;
};
/// A corrupt frame arrived (bad checksum, length, offset or sequence number).
class FrameError : public TransportError {
 public:
  using TransportError::TransportError;
};

class SocketTransport final : public Transport {
 public:
  /// Validates the config (TransportError naming the field), binds and listens immediately, and
  /// starts the I/O thread; incoming connections are accepted from then on.
  explicit SocketTransport(const SocketTransportConfig& cfg);
  ~SocketTransport() override;  // close()
  SocketTransport(const SocketTransport&) = delete;
  SocketTransport& operator=(const SocketTransport&) = delete;

  uint16_t port() const;
  /// Peers' addresses by rank, world entries (the own rank's entry is ignored). Resolves host
  /// names now; throws TransportError naming the rank and host on a bad entry. Call once, before
  /// the first send(); recv() of messages from peers that connect to us works before it.
  void start(std::vector<SocketEndpoint> peers);

  int rank() const override;
  int size() const override;
  /// Queues `bytes` for `dst` and returns (non-blocking). dst == rank() delivers locally.
  /// Throws the peer's typed error if it has failed, TransportError if closed or not started.
  void send(int dst, uint64_t tag, std::vector<uint8_t> bytes) override;
  /// Blocks until (src, tag)'s next message arrives (FIFO per (src, tag)) and returns it.
  /// Throws PeerDeadError / FrameError / AuthError once src has failed and nothing is left for
  /// (src, tag), TransportError after recv_timeout or once close() is called.
  std::vector<uint8_t> recv(int src, uint64_t tag) override;
  /// Node faults (engine/faults/): ranks whose address a successor may take over (a DC leader's,
  /// Transport::take_over). For each, the last `last_n` messages sent to it are kept; once it has
  /// failed, send() to it keeps the message and returns, and recv() from it waits (up to
  /// recv_timeout) for its successor's messages instead of throwing. A takeover notice from
  /// rank s naming rank d (handled on the I/O thread, in s's message order): sends to d go to s,
  /// recv() from d also takes s's messages, and what was kept for d is queued to s.
  void expect_successors(const std::vector<int>& ranks, size_t last_n);
  void take_over(int dead, const std::vector<int>& tell) override;
  /// Node faults, restarts: ranks that may come back as a new process (a new incarnation, at a
  /// new address). A connection from such a rank after it has failed here is accepted as its new
  /// incarnation instead of refused: nothing of the old one is kept (queued sends, undelivered
  /// messages, message order, the failure); the new one's messages are received at once.
  void expect_restarts(const std::vector<int>& ranks);
  /// The new incarnation of a rank of expect_restarts listens at `at`: sends to it go there. If
  /// the rank is still failed here, its old incarnation is forgotten first (as above). Call it
  /// only once the old incarnation has failed here (or was forgotten by a new connection).
  void revive(int rank, const SocketEndpoint& at);
  /// recv() from a rank of `from` (every rank if empty) that has nothing queued for it throws
  /// PeerDeclaredDead, now and until clear_interrupt(): survivors blocked on a live peer that
  /// waits for a dead one wake up and recover (engine/faults/). Messages already queued are
  /// still returned.
  void interrupt_recvs(std::vector<int> from);
  void clear_interrupt();
  /// Idempotent. Wakes blocked recv() with TransportClosed; flushes queued sends (bounded by
  /// peer_timeout), says GOODBYE, closes every socket and joins the I/O thread.
  void close() override;

  /// Waits until every message queued by send() so far to a peer that has not failed has been
  /// written to the kernel (not: acknowledged by the peer). False on timeout.
  bool flush(std::chrono::milliseconds timeout);
  /// flush(), then waits until the kernel holds nothing more for any open connection: every byte
  /// sent so far was acknowledged by the peer's kernel (SIOCOUTQ 0). A node fault's kill point
  /// (engine/faults/socket_port.h) drains first, so that what the worker sent before its death
  /// arrives, as the embedded fabric delivers it. False on timeout.
  bool drain(std::chrono::milliseconds timeout);
  /// Opens the outgoing streams to `peer` now (instead of at the first send) and waits until all
  /// have completed the handshake. False on timeout; throws the peer's typed error if it fails.
  bool await_streams(int peer, std::chrono::milliseconds timeout);
  /// Outgoing streams per peer in use (the config's or the derived count).
  int streams() const;
  /// Per-connection send buffer the stream derivation uses, in payload bytes: with sockbuf_bytes
  /// set, half the SO_SNDBUF read back (the kernel caps the request at net.core.wmem_max and
  /// doubles it for per-packet overhead); with autotuning, half net.ipv4.tcp_wmem's maximum (the
  /// same accounting). Measured through the DPDK emulator at 1 Gbit/s, 30 ms: one stream kept
  /// about 2.6 MB in flight with tcp_wmem max 4 MiB, 1.5 MB with SO_SNDBUF 1 MiB.
  size_t sockbuf_bytes() const;
  /// The IP address rank's latest accepted (handshaken) connection came from; "" if none.
  std::string peer_host(int rank) const;

  struct Stats {
    uint64_t frames_sent = 0, frames_received = 0;  // every frame type, written to / read from sockets
    uint64_t bytes_sent = 0, bytes_received = 0;    // on-the-wire bytes of those frames (headers included)
    uint64_t corrupt_frames_rejected = 0;           // frames failing a checksum/length/offset/sequence check
    uint64_t heartbeats_sent = 0;
    // Extensions.
    uint64_t messages_sent = 0, messages_received = 0;  // delivered to a peer's socket / to recv() mailboxes
    uint64_t payload_bytes_sent = 0, payload_bytes_received = 0;
    uint64_t auth_failures = 0;                     // handshakes refused (either side)
    uint64_t connections_opened = 0;                // handshakes completed (both directions)
    uint64_t incoming_refused = 0;  // incoming connections refused before their handshake completed
                                    // (bad HELLO, wrong secret, a frame out of place): counted only
    std::array<uint64_t, 16> data_frames_by_stream{};  // DATA frames written per outgoing stream index
  };
  Stats stats() const;

  /// ceil(rate_bps * rtt_s / 8 / sockbuf_bytes), clamped to [1, 16]; 1 if any input is <= 0.
  static int derive_streams(double rate_bps, double rtt_s, size_t sockbuf_bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace geotb::engine
