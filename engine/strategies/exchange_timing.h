// The timing of one round of the DC leaders' exchange, as one leader sees it (docs/guide/reports.md,
// exchange `seconds` and `efficiency`): from the round's last hand-off to the transport (its own
// or a peer's, carried in each message's header) until it held every peer's message, and the
// lower bound of that: no message can arrive before its sender's hand-off plus its bytes at the
// link's rate plus the link's one-way delay. Clock instants are the worker clock's, in ns.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/strategy.h"

namespace geotb::engine {

class ExchangeTiming {
 public:
  explicit ExchangeTiming(int64_t own_handoff_ns) : own_(own_handoff_ns), last_handoff_(own_handoff_ns) {}

  /// A peer's message of `bytes` (header included), handed off at `peer_handoff_ns`, crossed `link`.
  void arrived(int64_t peer_handoff_ns, uint64_t bytes, const InboundLink& link) {
    last_handoff_ = std::max(last_handoff_, peer_handoff_ns);
    const double transit_s = (link.rate_bps > 0 ? 8.0 * static_cast<double>(bytes) / link.rate_bps : 0.0) + link.delay_s;
    const double earliest_s = static_cast<double>(peer_handoff_ns - own_) * 1e-9 + transit_s;
    if (earliest_s >= earliest_all_s_) rtt_s_ = 2 * link.delay_s;  // the message that binds the bound
    earliest_all_s_ = std::max(earliest_all_s_, earliest_s);
  }

  /// Every peer's message was here at `all_here_ns`: sets rec.seconds, rec.lower_bound_s and
  /// rec.rtt_s (the round-trip delay of the link of the message that binds the lower bound).
  void finish(int64_t all_here_ns, ExchangeRecord& rec) const {
    rec.rtt_s = rtt_s_;
    const double last_s = static_cast<double>(last_handoff_ - own_) * 1e-9;
    rec.seconds = std::max(0.0, static_cast<double>(all_here_ns - own_) * 1e-9 - last_s);
    rec.lower_bound_s = std::max(0.0, earliest_all_s_ - last_s);
  }

 private:
  int64_t own_;
  int64_t last_handoff_;
  double earliest_all_s_ = 0;  // s after our hand-off: no earlier could every peer's message be here
  double rtt_s_ = 0;
};

}  // namespace geotb::engine
