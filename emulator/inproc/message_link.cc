#include "emulator/inproc/message_link.h"

#include <algorithm>
#include <vector>

namespace geotb::emu {

MessageVerdict MessageLink::send(Nanos now, uint64_t payload_bytes) {
  MessageVerdict mv;
  const uint64_t nseg = std::max<uint64_t>(1, (payload_bytes + seg_.mss_bytes - 1) / seg_.mss_bytes);
  mv.segments = nseg;
  const uint32_t overhead = link_.config().overhead_bytes;

  struct Retry { Nanos at; uint32_t bytes; uint32_t attempts; };
  std::vector<Retry> retries;
  Nanos last_release = now;

  // No ACK comes back (segment offered while the link is down, or cut in flight): the sender's
  // timer fires min_rto after the transmission, doubling per attempt (RFC 6298).
  auto retry_after_timeout = [&](Nanos t, uint32_t frame, uint32_t attempts) {
    const Nanos rto = seg_.min_rto * (1LL << std::min<uint32_t>(attempts - 1, 20));
    retries.push_back({t + rto, frame, attempts + 1});
  };
  auto attempt = [&](Nanos t, uint32_t frame, uint32_t attempts) {
    const Verdict v = link_.offer(t, frame);
    ++mv.transmissions;
    mv.wire_bytes += frame + overhead;
    switch (v.fate) {
      case Fate::kDelivered:
        if (const std::optional<Nanos> cut = link_.next_cut(); cut && LinkModel::lost_to_cut(v, *cut)) {
          // Still on the fibre when it is cut: lost.
          link_.count_lost_in_flight(1, frame);
          retry_after_timeout(t, frame, attempts);
          return;
        }
        last_release = std::max(last_release, v.release);
        return;
      case Fate::kDropLoss:  // detected by duplicate ACKs one RTT after the segment left
        retries.push_back({v.depart + 2 * link_.config().delay, frame, attempts + 1});
        return;
      case Fate::kDropQueueBytes:
      case Fate::kDropQueuePackets:
        retries.push_back({std::max(t, link_.busy_until()) + 2 * link_.config().delay, frame, attempts + 1});
        return;
      case Fate::kDropLinkDown:
        retry_after_timeout(t, frame, attempts);
        return;
    }
  };

  uint64_t left = payload_bytes;
  for (uint64_t i = 0; i < nseg; ++i) {
    const uint32_t pay = static_cast<uint32_t>(std::min<uint64_t>(left, seg_.mss_bytes));
    left -= pay;
    attempt(now, pay + seg_.header_bytes, 1);
  }
  // Retransmission rounds, in time order so the link's clock only moves forward.
  while (!retries.empty()) {
    std::vector<Retry> round;
    round.swap(retries);
    std::stable_sort(round.begin(), round.end(), [](const Retry& a, const Retry& b) { return a.at < b.at; });
    for (const Retry& r : round) {
      if (r.attempts > seg_.max_attempts) {
        mv.delivered = false;
        return mv;
      }
      attempt(r.at, r.bytes, r.attempts);
    }
  }
  mv.delivered = true;
  mv.deliver_at = std::max(last_release, last_delivery_);
  last_delivery_ = mv.deliver_at;
  return mv;
}

}  // namespace geotb::emu
