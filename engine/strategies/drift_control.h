// Drift control on the local steps of the periodic strategies (local_sgd, diloco), for DCs whose
// data differ (non-IID partitions): FedProx's proximal gradient and SCAFFOLD's control variates.
// The rules are written out in docs/guide/strategies.md ("FedProx", "SCAFFOLD"); in short, every
// DC d is one client (its workers allreduce the gradient every step), every DC takes part in every
// round, the server step is the strategy's own (local_sgd: the mean of the models, global step
// size 1; diloco: its outer step), and x̄ is the model every DC started the round from (the
// anchor: local_sgd's last average, diloco's outer model):
//
//   every local step  g <- g + mu (x - x̄)                             FedProx (fedprox_mu > 0)
//                     g <- g + (c - c_d)                              SCAFFOLD (scaffold), after
//                                                                       FedProx; c - c_d is computed
//                                                                       once per round
//   at a round's end  c_d+ = c_d - c + (x̄ - y_d) / (k η)             option II (Karimireddy et al.,
//                                                                       ICML 2020), y_d the DC's model,
//                     Δc_d = c_d+ - c_d                                 k its steps taken since x̄,
//                                                                       η the optimizer's lr, or
//                                                                       lr / (1 - momentum) with
//                                                                       scaffold_lr "effective"
//                     every DC sends Δc_d with its model (or pseudo-gradient), float32
//                     c <- c + sum_{d'} w_{d'} Δc_{d'}  (DC order, the weights of the strategy's
//                                                       mean of the models: 1/M, or workload
//                                                       "dc_weights");   c_d <- c_d+
//
// k counts the steps whose optimizer step ran (Strategy::step), not those a node fault discarded
// (Strategy::discard_step: the model is back to before them); k = 0 leaves c_d as it is (Δc_d = 0).
// c and c_d start at 0, so the first round is the strategy without SCAFFOLD. With heavy-ball
// momentum β the paper's η = lr makes the correction's round-to-round recursion unstable for
// β > 0.5 (gain β / (1 - β)); scaffold_lr "effective" is stable (docs/guide/strategies.md
// "Momentum").
#pragma once

#include <cstddef>
#include <vector>

#include "engine/checkpoint/state.h"
#include "engine/strategies/descriptor.h"
#include "engine/strategy.h"

namespace geotb::engine {

namespace strategy_keys {
extern const StrategyKey fedprox_mu;  ///< FedProx's mu, [0, 1000] (0: off); shown when on
extern const StrategyKey scaffold;    ///< SCAFFOLD on or off; shown when on
extern const StrategyKey scaffold_lr; ///< SCAFFOLD's η: "optimizer" or "effective"; shown with SCAFFOLD
}  // namespace strategy_keys

class DriftControl {
 public:
  DriftControl(const StrategyConfig& cfg, size_t n);

  bool fedprox() const { return mu_ > 0; }
  bool scaffold() const { return scaffold_; }
  /// Whether the strategy needs the round's starting model (either is on).
  bool needs_anchor() const { return fedprox() || scaffold(); }

  /// Every local step, after the DC's allreduce and before the optimizer step: the corrections
  /// above, into g (n floats); counts the step for SCAFFOLD's k. No-op when both are off.
  void correct(const float* x, const float* anchor, float* g);
  /// SCAFFOLD, at a round's end before the exchange: computes c_d+ from the round's starting model
  /// `anchor`, the DC's model `y` and η (from the optimizer `opt`), and writes Δc_d = c_d+ - c_d
  /// (n floats) into `delta_c`.
  void control_delta(const float* anchor, const float* y, const Sgd& opt, float* delta_c);
  /// SCAFFOLD's η for the optimizer `opt`.
  double eta(const Sgd& opt) const;
  /// SCAFFOLD, after the exchange: `delta_c_sum`, every DC's Δc_d summed in DC order with the
  /// weights of the strategy's mean (dc_mean_weight), then times `scale` (dc_mean_scale): n floats.
  /// c <- c + delta_c_sum * scale, c_d <- c_d+, and a new round (k = 0).
  void apply(const float* delta_c_sum, float scale);

  /// Checkpoints (SCAFFOLD only; the anchor is the strategy's): c_d, c and k.
  void save(StateWriter& out) const;
  void restore(StateReader& in);

  const std::vector<float>& c() const { return c_; }
  const std::vector<float>& c_dc() const { return c_dc_; }

 private:
  void update_correction();

  size_t n_;
  float mu_;
  bool scaffold_;
  bool effective_lr_;  // scaffold_lr "effective"
  int taken_ = 0;  // SCAFFOLD's k: optimizer steps since the round's start
  std::vector<float> c_, c_dc_, c_dc_next_, corr_;  // c, c_d, c_d+, c - c_d (SCAFFOLD only)
};

}  // namespace geotb::engine
