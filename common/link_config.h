// The vocabulary of a link, independent of what applies it: one direction's configuration
// (rate, delay, queue, jitter, loss, duplication, corruption, state), a scheduled change, and a
// directed link between two sites. The scenario parser fills them (model/topology.h), the
// emulators apply them (emulator/link/link_model.h: the in-process fabric and the DPDK data
// plane). Pure data with units, plus the loss models' closed forms. In namespace emu, the
// emulator's, as everything that speaks of links.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace geotb::emu {

using Nanos = std::chrono::nanoseconds;

struct JitterConfig {
  enum class Kind : uint8_t { kNone, kUniform, kNormal };
  Kind kind = Kind::kNone;
  Nanos amount{0};  ///< uniform: offset drawn from [-amount, +amount]; normal: standard deviation
};

struct LossConfig {
  enum class Kind : uint8_t { kNone, kBernoulli, kGilbertElliott };
  Kind kind = Kind::kNone;
  double p = 0.0;             ///< Bernoulli loss probability per frame, [0, 1]
  // Gilbert-Elliott, 4 parameters (per frame transition probabilities and per-state loss):
  double p_good_to_bad = 0.0; ///< P(good -> bad) per frame
  double p_bad_to_good = 1.0; ///< P(bad -> good) per frame; mean burst length = 1 / p_bad_to_good
  double loss_good = 0.0;     ///< loss probability in the good state (1 - k)
  double loss_bad = 1.0;      ///< loss probability in the bad state (1 - h)

  /// Long-run loss rate: pi_bad * loss_bad + pi_good * loss_good.
  double stationary_loss() const;
  /// lim n * Var(fraction of n consecutive frames lost), the chain started in its stationary
  /// distribution: the loss fraction over n frames has standard error sqrt(this / n).
  /// Bernoulli: p (1 - p). Gilbert-Elliott: q (1 - q) + 2 (loss_bad - loss_good)^2 pi_bad pi_good
  /// lambda / (1 - lambda), q = stationary_loss(), lambda = 1 - p_good_to_bad - p_bad_to_good
  /// (losses are independent given the states; the states are correlated as lambda^k).
  double loss_variance_per_frame() const;
  /// Mean and standard deviation of the length of a run of consecutive lost frames, where a
  /// closed form exists: Bernoulli (geometric: 1 / (1 - p), sqrt(p) / (1 - p)) and the simple
  /// Gilbert model, loss_good = 0 and loss_bad = 1 (a run is a stay in the bad state:
  /// 1 / p_bad_to_good, sqrt(1 - p_bad_to_good) / p_bad_to_good). NaN otherwise.
  double mean_loss_run() const;
  double loss_run_sd() const;
};

struct LinkConfig {
  double rate_bps = 0.0;          ///< serializer rate in bits per second; 0 = unlimited
  Nanos delay{0};                 ///< one-way propagation delay
  uint32_t overhead_bytes = 38;   ///< per-frame wire overhead: Ethernet header 14 + FCS 4 + preamble 8 + IFG 12
  uint64_t queue_bytes = 0;       ///< bottleneck queue limit in bytes; 0 = unlimited
  uint32_t queue_packets = 0;     ///< bottleneck queue limit in frames; 0 = unlimited
  JitterConfig jitter;
  bool reorder = false;           ///< allow jitter to reorder frames
  LossConfig loss;
  double duplicate_p = 0.0;       ///< probability a delivered frame is duplicated
  double corrupt_p = 0.0;         ///< probability a delivered frame is corrupted
  bool up = true;
};

/// A scheduled change: every field that is set is applied at `at`, all at once.
struct LinkChange {
  Nanos at{0};
  std::optional<double> rate_bps;
  std::optional<Nanos> delay;
  std::optional<LossConfig> loss;
  std::optional<JitterConfig> jitter;
  std::optional<bool> up;
};

/// One direction of a link between two sites (data centers, by index): what the emulator
/// backends take, each a list of them (the in-process fabric, the namespaces + DPDK data plane).
struct DirectedLink {
  int from = 0;       ///< sending site
  int to = 1;         ///< receiving site
  LinkConfig config;  ///< the link in this direction
};

}  // namespace geotb::emu
