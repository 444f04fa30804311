#include "engine/optim/sgd.h"

#include "engine/compute_charge.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace geotb::engine {

std::string validate(const SgdConfig& c) {
  std::ostringstream os;
  if (!std::isfinite(c.lr) || c.lr <= 0 || c.lr > 10) os << "optimizer.lr: " << c.lr << ": must be in (0, 10]";
  else if (!std::isfinite(c.momentum) || c.momentum < 0 || c.momentum >= 1)
    os << "optimizer.momentum: " << c.momentum << ": must be in [0, 1)";
  else if (!std::isfinite(c.weight_decay) || c.weight_decay < 0 || c.weight_decay > 1)
    os << "optimizer.weight_decay: " << c.weight_decay << ": must be in [0, 1]";
  return os.str();
}

void Sgd::restore(const std::vector<float>& momentum, bool before_first_step) {
  if (momentum.size() != m_.size())
    throw std::invalid_argument("momentum: " + std::to_string(momentum.size()) + " values, the model has " +
                                std::to_string(m_.size()));
  m_ = momentum;
  first_ = before_first_step;
}

void Sgd::step(float* x, const float* g) {
  const float lr = static_cast<float>(cfg_.lr), mu = static_cast<float>(cfg_.momentum),
              wd = static_cast<float>(cfg_.weight_decay);
  float* m = m_.data();
  const size_t n = m_.size();
  const ComputeRegion region(Work::kOptimizer, n);  // part of a profile's step_time
  if (mu == 0.0f) {
    for (size_t i = 0; i < n; ++i) x[i] -= lr * (g[i] + wd * x[i]);
    return;
  }
  if (first_) {
    for (size_t i = 0; i < n; ++i) m[i] = g[i] + wd * x[i];
    first_ = false;
  } else {
    for (size_t i = 0; i < n; ++i) m[i] = mu * m[i] + (g[i] + wd * x[i]);
  }
  for (size_t i = 0; i < n; ++i) x[i] -= lr * m[i];
}

}  // namespace geotb::engine
