// Message-level view of one TCP-like connection over a LinkModel direction.
//
// The in-process WAN moves whole messages, not packets, but charges them what packets would
// cost. The model (documented in README "WAN model"):
//  * a message of S payload bytes is cut into ceil(S / mss_bytes) segments (at least one); each
//    segment is a frame of payload + header_bytes (IPv4 20 + TCP 20 + timestamps 12) offered to
//    the link, which adds its own per-frame Ethernet overhead;
//  * all segments are offered when the message is sent: the sender is assumed to pace at the
//    bottleneck, so the in-process mode builds its links without a queue limit (queue overflow is
//    modelled by the packet data plane, where a real TCP reacts to it);
//  * a segment lost on the path is retransmitted one RTT (2 x current one-way delay) after its
//    first transmission ended — fast retransmit — and offered again; each further loss adds
//    another RTT;
//  * a segment offered while the link is down is retransmitted after a retransmission timeout
//    that starts at min_rto and doubles per attempt (RFC 6298); after max_attempts the message
//    is undeliverable and send() says so;
//  * an outage cuts what is on the fibre (LinkModel): a segment the link delivered but would
//    release after a scheduled outage start is lost (counted as lost in flight) and retransmitted
//    after the same timeout, counted from its transmission — as the DPDK data plane drops frames
//    from its delay line at the cut;
//  * the connection delivers in order: a message is delivered when its last segment is, and never
//    before the previous message on the same connection (head-of-line blocking).
// Pure and single-threaded like LinkModel; time is passed in.
#pragma once

#include <cstdint>

#include "emulator/link/link_model.h"

namespace geotb::emu {

struct SegmentConfig {
  uint32_t mss_bytes = 1448;    ///< payload bytes per segment (MTU 1500)
  uint32_t header_bytes = 52;   ///< L3+L4 header bytes per segment
  Nanos min_rto{std::chrono::milliseconds(200)};  ///< first retransmission timeout when the link is down
  uint32_t max_attempts = 12;   ///< transmissions per segment before the message fails
};

struct MessageVerdict {
  bool delivered = false;
  Nanos deliver_at{0};          ///< valid when delivered
  uint64_t segments = 0;
  uint64_t transmissions = 0;   ///< segments + retransmissions
  uint64_t wire_bytes = 0;      ///< frame bytes offered to the link, headers and overhead included
};

class MessageLink {
 public:
  /// `link` is the direction this connection sends on; it may be shared with other connections
  /// and must outlive this object.
  MessageLink(LinkModel& link, SegmentConfig seg) : link_(link), seg_(seg) {}

  MessageVerdict send(Nanos now, uint64_t payload_bytes);

 private:
  LinkModel& link_;
  SegmentConfig seg_;
  Nanos last_delivery_{0};
};

}  // namespace geotb::emu
