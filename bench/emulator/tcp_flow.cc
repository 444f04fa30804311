// One bulk TCP flow through the in-process TCP model (MessageLink over a LinkModel), for its
// steady state against Mathis' formula and against Linux TCP through the DPDK emulator (iperf3):
// a warm-up message and then the measured message are queued at once (the sender always has
// data, as iperf3's); goodput = measured bytes / (its delivery - the warm-up's delivery). The ACKs
// go as frames on the reverse direction (same rate, delay and loss, its own random stream), as
// through the DPDK emulator; --no-ack-link: they take the delay only.
//   tcp_flow --rate 1e9 --rtt 50ms --loss 1e-3 --cc reno --seconds 90 --seeds 5
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <string>

#include "emulator/inproc/message_link.h"
#include "emulator/link/link_model.h"

int main(int argc, char** argv) {
  using namespace geotb::emu;
  CLI::App app{"One bulk flow through the in-process TCP model"};
  double rate_bps = 1e9, rtt_ms = 50, loss = 1e-3, seconds = 90, warmup_s = 5;
  std::string cc = "reno";
  int seeds = 5;
  bool no_ack_link = false;
  uint64_t first_seed = 1;
  app.add_option("--rate", rate_bps, "bottleneck rate, bit/s")->check(CLI::PositiveNumber);
  app.add_option("--rtt-ms", rtt_ms, "round-trip propagation delay, ms")->check(CLI::PositiveNumber);
  app.add_option("--loss", loss, "Bernoulli loss probability per frame")->check(CLI::Range(0.0, 0.5));
  app.add_option("--cc", cc, "reno or cubic")->check(CLI::IsMember({"reno", "cubic"}));
  app.add_option("--seconds", seconds, "length of the measured transfer at the Mathis rate, s")->check(CLI::PositiveNumber);
  app.add_option("--warmup-seconds", warmup_s, "warm-up transfer before it, s (at the Mathis rate)");
  app.add_option("--seeds", seeds, "runs, seeds first-seed, first-seed + 1, ...")->check(CLI::PositiveNumber);
  app.add_option("--first-seed", first_seed, "first seed");
  app.add_flag("--no-ack-link", no_ack_link, "ACKs take the reverse delay only (no frames on a reverse link)");
  CLI11_PARSE(app, argc, argv);

  SegmentConfig seg;
  parse_cc(cc, seg.cc);
  const double mss_bits = 8.0 * seg.mss_bytes;
  const double mathis_bps = loss > 0 ? mss_bits / (rtt_ms * 1e-3) * std::sqrt(1.5) / std::sqrt(loss) : rate_bps;
  const double expect_bps = std::min(mathis_bps, rate_bps);
  auto bytes_for = [&](double s) { return static_cast<uint64_t>(expect_bps * s / 8.0); };
  fmt::print("bulk flow: {:.0f} Mbit/s, RTT {} ms, Bernoulli loss {}, {}; Mathis MSS/RTT * sqrt(3/2)/sqrt(p) = {:.2f} Mbit/s\n",
             rate_bps / 1e6, rtt_ms, loss, cc, mathis_bps / 1e6);
  fmt::print("{:>5} {:>14} {:>10} {:>12} {:>12} {:>10} {:>10}\n", "seed", "goodput Mbit/s", "x Mathis", "loss events",
             "fast rexmit", "timeouts", "seconds");
  double sum = 0;
  for (int i = 0; i < seeds; ++i) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(i);
    LinkConfig c;
    c.rate_bps = rate_bps;
    c.delay = std::chrono::duration_cast<Nanos>(std::chrono::duration<double, std::milli>(rtt_ms / 2));
    if (loss > 0) c.loss = LossConfig{LossConfig::Kind::kBernoulli, loss};
    LinkModel link(c, RandomStream(seed, 0));
    LinkModel reverse(c, RandomStream(seed, 1));
    MessageLink conn(link, seg, no_ack_link ? nullptr : &reverse);
    const MessageVerdict warm = conn.send(Nanos{0}, bytes_for(warmup_s));
    const TcpStats before = conn.tcp_stats();
    const uint64_t bytes = bytes_for(seconds);
    const MessageVerdict m = conn.send(Nanos{0}, bytes);  // queued behind the warm-up
    if (!warm.delivered || !m.delivered) {
      fmt::print(stderr, "tcp_flow: seed {}: undeliverable\n", seed);
      return 1;
    }
    const double dt = static_cast<double>((m.deliver_at - warm.deliver_at).count()) * 1e-9;
    const double bps = 8.0 * static_cast<double>(bytes) / dt;
    const TcpStats& st = conn.tcp_stats();
    sum += bps;
    fmt::print("{:>5} {:>14.3f} {:>10.3f} {:>12} {:>12} {:>10} {:>10.1f}\n", seed, bps / 1e6, bps / mathis_bps,
               st.recoveries - before.recoveries, st.fast_retransmits - before.fast_retransmits,
               st.timeouts - before.timeouts, dt);
  }
  fmt::print("mean goodput {:.3f} Mbit/s = {:.3f} x Mathis\n", sum / seeds / 1e6, sum / seeds / mathis_bps);
  return 0;
}
