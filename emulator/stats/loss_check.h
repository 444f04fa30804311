// Checking a measured loss process against the configured model, with bounds derived from how
// much was observed (not fixed tolerances): a long run must agree closely, a short one is only
// held to what its sample size can resolve, and a run too short to resolve a 10 % error says so.
//
//   loss rate  q_hat = lost / offered;  se = sqrt(v / offered), v = LossConfig::loss_variance_per_frame()
//              (for Gilbert-Elliott v is several times the binomial q (1 - q): losses come in runs)
//   mean run   m_hat = lost / runs;     se = sd(run length) / sqrt(runs) (runs are i.i.d. for the
//              Bernoulli and the simple Gilbert model; no closed form otherwise: not checked)
//   agree      |estimate - theory| <= z * se             (z = 3: a false alarm 0.27 % of the time)
//   resolves   z * se <= resolution * theory             (the check can see a 10 % error)
#pragma once

#include <cstdint>

#include "emulator/link/link_model.h"

namespace geotb::emu {

struct LossProcessCheck {
  double loss_rate = 0.0, theory_loss_rate = 0.0, loss_rate_se = 0.0, loss_rate_bound = 0.0;
  bool loss_rate_agrees = false, loss_rate_resolves = false;
  bool run_checkable = false;  ///< the model has a closed-form run length
  double mean_run = 0.0, theory_mean_run = 0.0, mean_run_se = 0.0, mean_run_bound = 0.0;
  bool mean_run_agrees = false, mean_run_resolves = false;
};

/// `offered`: frames the loss process saw; `lost`: frames it dropped; `runs`: maximal runs of
/// consecutive lost frames among them. Throws std::invalid_argument if lost > offered or
/// runs > lost.
LossProcessCheck check_loss_process(const LossConfig& model, uint64_t offered, uint64_t lost, uint64_t runs,
                                    double z = 3.0, double resolution = 0.1);

}  // namespace geotb::emu
