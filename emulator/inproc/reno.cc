// TCP Reno (RFC 5681), as Linux's tcp_reno_cong_avoid / tcp_reno_ssthresh (net/ipv4/tcp_cong.c):
// slow start +1 segment per ACKed segment (appropriate byte counting, RFC 3465) up to ssthresh,
// then +1 segment per cwnd ACKed segments; ssthresh = max(cwnd / 2, 2) after a loss.
#include <algorithm>

#include "emulator/inproc/congestion_control.h"

namespace geotb::emu {
namespace {

class Reno final : public CongestionControl {
 public:
  CcAlgorithm algorithm() const override { return CcAlgorithm::kReno; }
  void on_ack(TcpWindow& w, const AckEvent& a) override {
    if (!a.cwnd_limited) return;
    uint32_t acked = a.acked;
    if (w.in_slow_start()) {
      acked = w.slow_start(acked);
      if (acked == 0) return;
    }
    w.cong_avoid_ai(w.cwnd, acked);
  }
  uint32_t ssthresh_after_loss(const TcpWindow& w) override { return std::max<uint32_t>(w.cwnd >> 1, 2); }
  void on_rto() override {}
  void on_tx_start(Nanos, Nanos) override {}
};

}  // namespace

std::unique_ptr<CongestionControl> make_reno() { return std::make_unique<Reno>(); }

}  // namespace geotb::emu
