#include "common/link_config.h"

#include <cmath>

namespace geotb::emu {

double LossConfig::stationary_loss() const {
  switch (kind) {
    case Kind::kNone: return 0.0;
    case Kind::kBernoulli: return p;
    case Kind::kGilbertElliott: {
      const double s = p_good_to_bad + p_bad_to_good;
      const double pi_bad = s > 0 ? p_good_to_bad / s : 0.0;
      return pi_bad * loss_bad + (1.0 - pi_bad) * loss_good;
    }
  }
  return 0.0;
}

double LossConfig::loss_variance_per_frame() const {
  const double q = stationary_loss();
  double v = q * (1.0 - q);
  if (kind == Kind::kGilbertElliott) {
    const double s = p_good_to_bad + p_bad_to_good;
    if (s > 0) {
      const double pi_bad = p_good_to_bad / s, lambda = 1.0 - s;
      const double dl = loss_bad - loss_good;
      v += 2.0 * dl * dl * pi_bad * (1.0 - pi_bad) * lambda / (1.0 - lambda);
    }
  }
  return v;
}

double LossConfig::mean_loss_run() const {
  if (kind == Kind::kBernoulli && p < 1) return 1.0 / (1.0 - p);
  if (kind == Kind::kGilbertElliott && loss_good == 0 && loss_bad == 1 && p_bad_to_good > 0) return 1.0 / p_bad_to_good;
  return std::nan("");
}

double LossConfig::loss_run_sd() const {
  if (kind == Kind::kBernoulli && p < 1) return std::sqrt(p) / (1.0 - p);
  if (kind == Kind::kGilbertElliott && loss_good == 0 && loss_bad == 1 && p_bad_to_good > 0)
    return std::sqrt(1.0 - p_bad_to_good) / p_bad_to_good;
  return std::nan("");
}

}  // namespace geotb::emu
