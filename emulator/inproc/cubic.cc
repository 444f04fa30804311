// CUBIC (RFC 9438) as Linux's net/ipv4/tcp_cubic.c does it (the default congestion control of
// Linux since 2.6.19), in continuous time instead of jiffies:
//  * window after a loss: W = cwnd * beta, beta = 717/1024 (~0.7); fast convergence: when the
//    window at the loss is below the previous maximum, W_max = cwnd * (1 + beta) / 2;
//  * congestion avoidance: target(t) = origin + C (t + min_rtt - K)^3, C = 410/1024 (~0.4)
//    segments/s^3, K = cbrt((W_max - cwnd) / C); +1 segment per cnt ACKed segments,
//    cnt = cwnd / (target - cwnd), at most 20 while no W_max is known, at least 2;
//  * TCP friendliness: a Reno-equivalent window growing +1 per cwnd * 15 / 8 ACKs (beta_scale)
//    caps cnt at cwnd / (reno_window - cwnd);
//  * HyStart (hystart = 1, hystart_detect = 3): in slow start from 16 segments on (hystart_low_window),
//    slow start ends (ssthresh = cwnd) when a round's ACK train, ACKs at most 2 ms apart
//    (hystart_ack_delta_us), has lasted longer than (min_rtt + ack_delay) / 2, or when the
//    minimum of a round's first 8 RTT samples exceeds min_rtt + clamp(min_rtt / 8, 4 ms, 16 ms);
//  * idle: the epoch moves forward by the idle time (CA_EVENT_TX_START);
//  * RTO: everything is forgotten (bictcp_reset in TCP_CA_Loss).
#include <algorithm>
#include <cmath>
#include <optional>

#include "emulator/inproc/congestion_control.h"

namespace geotb::emu {
namespace {

constexpr double kBeta = 717.0 / 1024.0;
constexpr double kC = 410.0 / 1024.0;           // bic_scale 41 * 10 / 1024
constexpr uint32_t kBetaScale = 8 * (1024 + 717) / 3 / (1024 - 717);  // 15
constexpr uint32_t kHystartLowWindow = 16;
constexpr Nanos kHystartAckDelta = std::chrono::microseconds(2000);
constexpr uint32_t kHystartMinSamples = 8;
constexpr Nanos kHystartDelayMin = std::chrono::milliseconds(4);
constexpr Nanos kHystartDelayMax = std::chrono::milliseconds(16);
// hystart_ack_delay(): min(1 ms, 4 GSO bursts of 64 KB at the pacing rate); Linux keeps a pacing
// rate of 2 cwnd / srtt in slow start, which at the windows HyStart acts on makes this 1 ms.
constexpr Nanos kHystartAckDelay = std::chrono::milliseconds(1);

double secs(Nanos t) { return static_cast<double>(t.count()) * 1e-9; }

class Cubic final : public CongestionControl {
 public:
  CcAlgorithm algorithm() const override { return CcAlgorithm::kCubic; }

  void on_ack(TcpWindow& w, const AckEvent& a) override {
    // pkts_acked: minimum delay and HyStart (every ACK, window-limited or not).
    if (!epoch_ || a.now - *epoch_ >= std::chrono::seconds(1)) {
      if (delay_min_.count() == 0 || a.rtt < delay_min_) delay_min_ = std::max(a.rtt, Nanos{1000});
      if (!found_ && w.in_slow_start() && w.cwnd >= kHystartLowWindow) hystart_update(w, a);
    }
    // cong_avoid
    if (!a.cwnd_limited) return;
    uint32_t acked = a.acked;
    if (w.in_slow_start()) {
      if (a.acked_tx >= end_seq_) hystart_reset(a);
      acked = w.slow_start(acked);
      if (acked == 0) return;
    }
    update(w.cwnd, acked, a.now);
    w.cong_avoid_ai(cnt_, acked);
  }

  uint32_t ssthresh_after_loss(const TcpWindow& w) override {
    epoch_.reset();
    if (w.cwnd < last_max_cwnd_)  // fast convergence
      last_max_cwnd_ = static_cast<uint32_t>(uint64_t{w.cwnd} * (1024 + 717) / (2 * 1024));
    else
      last_max_cwnd_ = w.cwnd;
    return std::max<uint32_t>(static_cast<uint32_t>(static_cast<uint64_t>(w.cwnd) * 717 / 1024), 2);
  }

  void on_rto() override {
    const Nanos dm = delay_min_;
    *this = Cubic();
    delay_min_ = dm;  // bictcp_reset keeps delay_min
  }

  void on_tx_start(Nanos now, Nanos idle) override {
    if (epoch_ && idle.count() > 0) epoch_ = std::min(*epoch_ + idle, now);
  }

 private:
  void hystart_reset(const AckEvent& a) {
    round_start_ = last_ack_ = a.now;
    end_seq_ = a.next_tx;
    curr_rtt_ = Nanos::max();
    sample_cnt_ = 0;
  }

  void hystart_update(TcpWindow& w, const AckEvent& a) {
    if (a.now - last_ack_ <= kHystartAckDelta) {  // ACK train
      last_ack_ = a.now;
      const Nanos threshold = (delay_min_ + kHystartAckDelay) / 2;
      if (a.now - round_start_ > threshold) {
        found_ = true;
        w.ssthresh = w.cwnd;
      }
    }
    curr_rtt_ = std::min(curr_rtt_, a.rtt);  // delay increase
    if (sample_cnt_ < kHystartMinSamples) {
      ++sample_cnt_;
    } else if (curr_rtt_ > delay_min_ + std::clamp(delay_min_ / 8, kHystartDelayMin, kHystartDelayMax)) {
      found_ = true;
      w.ssthresh = w.cwnd;
    }
  }

  void update(uint32_t cwnd, uint32_t acked, Nanos now) {
    ack_cnt_ += acked;
    if (!epoch_) {
      epoch_ = now;
      ack_cnt_ = acked;
      tcp_cwnd_ = cwnd;
      if (last_max_cwnd_ <= cwnd) {
        k_s_ = 0;
        origin_ = cwnd;
      } else {
        k_s_ = std::cbrt((last_max_cwnd_ - cwnd) / kC);
        origin_ = last_max_cwnd_;
      }
    }
    const double t = secs(now - *epoch_ + delay_min_);
    const double target = origin_ + kC * std::pow(t - k_s_, 3.0);
    if (target > cwnd)
      cnt_ = static_cast<uint32_t>(std::min(1e9, cwnd / (target - cwnd)));
    else
      cnt_ = 100 * cwnd;
    if (last_max_cwnd_ == 0 && cnt_ > 20) cnt_ = 20;
    // TCP friendliness
    const uint32_t delta = std::max<uint32_t>(1, static_cast<uint32_t>((uint64_t{cwnd} * kBetaScale) >> 3));
    while (ack_cnt_ > delta) {
      ack_cnt_ -= delta;
      ++tcp_cwnd_;
    }
    if (tcp_cwnd_ > cwnd) cnt_ = std::min(cnt_, cwnd / (tcp_cwnd_ - cwnd));
    cnt_ = std::max<uint32_t>(cnt_, 2);
  }

  // bictcp
  uint32_t cnt_ = 2;
  uint32_t last_max_cwnd_ = 0;
  std::optional<Nanos> epoch_;
  double k_s_ = 0;
  double origin_ = 0;
  Nanos delay_min_{0};
  uint32_t ack_cnt_ = 0;
  uint32_t tcp_cwnd_ = 0;
  // HyStart
  bool found_ = false;
  Nanos round_start_{0}, last_ack_{0};
  uint64_t end_seq_ = 0;
  Nanos curr_rtt_ = Nanos::max();
  uint32_t sample_cnt_ = 0;
};

}  // namespace

std::unique_ptr<CongestionControl> make_cubic() { return std::make_unique<Cubic>(); }

}  // namespace geotb::emu
