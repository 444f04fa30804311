#include "emulator/stats/loss_check.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace geotb::emu {

LossProcessCheck check_loss_process(const LossConfig& model, uint64_t offered, uint64_t lost, uint64_t runs, double z,
                                    double resolution) {
  if (lost > offered) throw std::invalid_argument("check_loss_process: lost " + std::to_string(lost) + " > offered " + std::to_string(offered));
  if (runs > lost) throw std::invalid_argument("check_loss_process: runs " + std::to_string(runs) + " > lost " + std::to_string(lost));
  LossProcessCheck c;
  c.theory_loss_rate = model.stationary_loss();
  if (offered > 0) {
    c.loss_rate = static_cast<double>(lost) / static_cast<double>(offered);
    c.loss_rate_se = std::sqrt(model.loss_variance_per_frame() / static_cast<double>(offered));
    c.loss_rate_bound = z * c.loss_rate_se;
    c.loss_rate_agrees = std::fabs(c.loss_rate - c.theory_loss_rate) <= c.loss_rate_bound;
    c.loss_rate_resolves = c.loss_rate_bound <= resolution * c.theory_loss_rate;
  }
  c.theory_mean_run = model.mean_loss_run();
  c.run_checkable = std::isfinite(c.theory_mean_run);
  if (c.run_checkable && runs > 0) {
    c.mean_run = static_cast<double>(lost) / static_cast<double>(runs);
    c.mean_run_se = model.loss_run_sd() / std::sqrt(static_cast<double>(runs));
    c.mean_run_bound = z * c.mean_run_se;
    c.mean_run_agrees = std::fabs(c.mean_run - c.theory_mean_run) <= c.mean_run_bound;
    c.mean_run_resolves = c.mean_run_bound <= resolution * c.theory_mean_run;
  }
  return c;
}

}  // namespace geotb::emu
