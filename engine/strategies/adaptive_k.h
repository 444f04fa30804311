// Adaptive K: the accumulation period of the hierarchical strategies follows the link
// ("K": "auto"; docs/guide/strategies.md "Adaptive K" derives the rule).
//
// Every DC measures, for its last collected round: T, its exchange (own hand-off -> last peer
// message arrived); t, its training time per step between two rounds; C, the round's own compute
// (compress, decompress, re-base). A round's interval is K steps of training (K·t) plus C; the
// exchange flies under the next K steps. With u the target utilisation (K_target), a DC needs
//
//     K >= T / (u·t)                  the exchange fills at most u of the window that hides it
//     K >= u·C / ((1 - u)·t)          training is at least u of the interval: K·t / (K·t + C) >= u
//
// need = max over DCs of the smallest such integer, clamped to [K_min, K_max]. Hysteresis: K grows
// to the latest need at once (a stall costs more than a few steps of staleness); it shrinks only
// after `patience` decisions in a row whose smoothed need (EWMAs of T, t, C) is at most K/2, and
// then at most by half. Every worker of every DC runs decide() on the same measurements, in DC
// order, so all of them hold the same K and the same state.
//
// No libtorch, no clock: the measurements are passed in (tests feed hand-made ones).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace geotb::engine {

struct AdaptiveKConfig {
  int k_min = 1;          ///< steps
  int k_max = 256;        ///< steps
  double target = 0.95;   ///< u, in (0, 1)
  double alpha = 0.3;     ///< EWMA weight of the newest measurement
  int patience = 2;       ///< decisions in a row below K/2 before K shrinks
};

/// One DC's measurement of one round. Invalid (no round measured yet): exchange_s < 0.
struct RoundMeasure {
  double exchange_s = -1;  ///< T: own hand-off -> last peer message, seconds
  double step_s = 0;       ///< t: training time per step between two rounds, seconds
  double round_s = 0;      ///< C: the round's own compute (compress, decompress, re-base), seconds
  bool valid() const { return exchange_s >= 0 && step_s > 0 && round_s >= 0; }
};

class AdaptiveK {
 public:
  AdaptiveK(const AdaptiveKConfig& cfg, int num_dcs);

  /// The K in force (the steps of the interval that follows the last decision).
  int k() const { return k_; }
  /// Decisions taken so far (one per collected round with every DC's measurement valid).
  int64_t decisions() const { return decisions_; }

  /// The smallest K that satisfies both inequalities for one measurement (unclamped, >= 1).
  static int need(const AdaptiveKConfig& cfg, double exchange_s, double step_s, double round_s);

  /// One decision from every DC's latest measurement (DC order, size num_dcs); returns the new K.
  /// An invalid measurement (a DC that has not measured a round yet) leaves K and the state as
  /// they are.
  int decide(std::span<const RoundMeasure> by_dc);

  /// The state as doubles (for checkpoints): k, below, decisions, then per DC the EWMAs of T, t, C
  /// (NaN: none yet). restore() takes exactly what save() wrote; throws std::invalid_argument
  /// on another size or an out-of-range K.
  std::vector<double> save() const;
  void restore(std::span<const double> s);

 private:
  AdaptiveKConfig cfg_;
  int k_;
  int below_ = 0;  // consecutive decisions whose smoothed need was <= K/2
  int64_t decisions_ = 0;
  std::vector<RoundMeasure> ewma_;  // per DC; exchange_s < 0 until the first measurement
};

}  // namespace geotb::engine
