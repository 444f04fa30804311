// Congestion control of the in-process TCP model (MessageLink): the window arithmetic Linux's
// tcp_cong.c does for every algorithm (slow start, additive increase in whole segments), and the
// algorithm hooks, one algorithm per file: Reno (reno.cc, Linux tcp_reno_*), CUBIC (cubic.cc,
// Linux tcp_cubic.c with HyStart's ACK-train detection).
// Windows are whole segments with a fractional counter (cwnd_cnt), as in Linux, so results are
// exact integers. Pure: time is passed in.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace geotb::emu {

using Nanos = std::chrono::nanoseconds;

enum class CcAlgorithm : uint8_t { kReno, kCubic };
const char* cc_name(CcAlgorithm a);
/// "reno" -> kReno; "cubic" -> kCubic; anything else nullopt-like: returns false.
bool parse_cc(const std::string& name, CcAlgorithm& out);

/// Linux's TCP_INFINITE_SSTHRESH: slow start until the first loss (or HyStart) sets it.
inline constexpr uint32_t kInfiniteSsthresh = 0x7fffffff;

struct TcpWindow {
  uint32_t cwnd = 10;                      ///< congestion window, segments
  uint32_t ssthresh = kInfiniteSsthresh;   ///< slow start threshold, segments
  uint32_t cwnd_cnt = 0;                   ///< ACKed segments toward the next +1 in congestion avoidance

  bool in_slow_start() const { return cwnd < ssthresh; }
  /// Linux tcp_slow_start(): cwnd += acked up to ssthresh; returns the ACKs left over for
  /// congestion avoidance.
  uint32_t slow_start(uint32_t acked) {
    const uint32_t c = std::min<uint64_t>(static_cast<uint64_t>(cwnd) + acked, ssthresh);
    acked -= c - cwnd;
    cwnd = c;
    return acked;
  }
  /// Linux tcp_cong_avoid_ai(): cwnd += 1 per `w` ACKed segments.
  void cong_avoid_ai(uint32_t w, uint32_t acked) {
    if (w == 0) w = 1;
    if (cwnd_cnt >= w) {
      cwnd_cnt = 0;
      ++cwnd;
    }
    cwnd_cnt += acked;
    if (cwnd_cnt >= w) {
      const uint32_t delta = cwnd_cnt / w;
      cwnd_cnt -= delta * w;
      cwnd += delta;
    }
  }
};

/// What the sender knows when an ACK arrives.
struct AckEvent {
  Nanos now{0};
  uint32_t acked = 1;        ///< segments newly ACKed (SACKed)
  Nanos rtt{0};              ///< this ACK's round-trip sample
  Nanos min_rtt{0};          ///< smallest sample so far
  uint64_t acked_tx = 0;     ///< transmission number of the segment ACKed
  uint64_t next_tx = 0;      ///< transmission number the next segment sent will get (snd_nxt)
  bool cwnd_limited = true;  ///< Linux tcp_is_cwnd_limited()
};

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  virtual CcAlgorithm algorithm() const = 0;
  /// Every ACK of new data outside loss recovery (Linux cong_avoid + pkts_acked). Grows the
  /// window only when `a.cwnd_limited`.
  virtual void on_ack(TcpWindow& w, const AckEvent& a) = 0;
  /// The slow start threshold after a loss (fast retransmit or RTO), from the window at the loss.
  virtual uint32_t ssthresh_after_loss(const TcpWindow& w) = 0;
  /// A retransmission timeout (Linux TCP_CA_Loss): the algorithm forgets its epoch.
  virtual void on_rto() = 0;
  /// Data sent with nothing in flight after `idle` without sending (Linux CA_EVENT_TX_START).
  virtual void on_tx_start(Nanos now, Nanos idle) = 0;
};

std::unique_ptr<CongestionControl> make_reno();
std::unique_ptr<CongestionControl> make_cubic();
std::unique_ptr<CongestionControl> make_congestion_control(CcAlgorithm a);

}  // namespace geotb::emu
