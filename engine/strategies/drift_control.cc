#include "engine/strategies/drift_control.h"

#include <string>

#include "engine/compute_charge.h"

namespace geotb::engine {

namespace strategy_keys {

extern constexpr StrategyKey fedprox_mu{
    .name = "fedprox_mu",
    .kind = StrategyKey::Kind::kNumber,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.fedprox_mu = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.fedprox_mu}; },
    .check = [](const StrategyConfig& c) {
      return c.fedprox_mu >= 0 && c.fedprox_mu <= 1000
                 ? std::string()
                 : "fedprox_mu: " + show_value(c.fedprox_mu) + ": must be in [0, 1000] (0: off)";
    },
    .shown = [](const StrategyConfig& c) { return c.fedprox_mu > 0; },
};

extern constexpr StrategyKey scaffold{
    .name = "scaffold",
    .kind = StrategyKey::Kind::kFlag,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.scaffold = std::get<bool>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.scaffold}; },
    .shown = [](const StrategyConfig& c) { return c.scaffold; },
};

extern constexpr StrategyKey scaffold_lr{
    .name = "scaffold_lr",
    .kind = StrategyKey::Kind::kText,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.scaffold_lr = std::get<std::string>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.scaffold_lr}; },
    .check = [](const StrategyConfig& c) {
      return c.scaffold_lr != "optimizer" && c.scaffold_lr != "effective"
                 ? "scaffold_lr: \"" + c.scaffold_lr + "\": unknown (optimizer or effective)"
                 : std::string();
    },
    .shown = [](const StrategyConfig& c) { return c.scaffold; },
};

}  // namespace strategy_keys

DriftControl::DriftControl(const StrategyConfig& cfg, size_t n)
    : n_(n),
      mu_(static_cast<float>(cfg.fedprox_mu)),
      scaffold_(cfg.scaffold),
      effective_lr_(cfg.scaffold_lr == "effective") {
  if (scaffold_) {
    c_.assign(n, 0.0f);
    c_dc_.assign(n, 0.0f);
    c_dc_next_.assign(n, 0.0f);
    corr_.assign(n, 0.0f);
  }
}

void DriftControl::correct(const float* x, const float* anchor, float* g) {
  if (!needs_anchor()) return;
  const ComputeRegion region(Work::kOptimizer, n_);  // part of the optimizer's update
  if (mu_ > 0)
    for (size_t i = 0; i < n_; ++i) g[i] += mu_ * (x[i] - anchor[i]);
  if (scaffold_) {
    for (size_t i = 0; i < n_; ++i) g[i] += corr_[i];
    ++taken_;
  }
}

double DriftControl::eta(const Sgd& opt) const {
  return effective_lr_ ? opt.lr() / (1.0 - opt.momentum()) : opt.lr();
}

void DriftControl::control_delta(const float* anchor, const float* y, const Sgd& opt, float* delta_c) {
  const ComputeRegion region(Work::kReduce, 3 * n_);
  if (taken_ == 0) {  // every step of the round discarded: nothing learnt, c_d stays
    c_dc_next_ = c_dc_;
    for (size_t i = 0; i < n_; ++i) delta_c[i] = 0.0f;
    return;
  }
  const float k_lr = static_cast<float>(taken_) * static_cast<float>(eta(opt));
  for (size_t i = 0; i < n_; ++i) {
    c_dc_next_[i] = (c_dc_[i] - c_[i]) + (anchor[i] - y[i]) / k_lr;
    delta_c[i] = c_dc_next_[i] - c_dc_[i];
  }
}

void DriftControl::apply(const float* delta_c_sum, float scale) {
  const ComputeRegion region(Work::kReduce, 3 * n_);
  for (size_t i = 0; i < n_; ++i) c_[i] += delta_c_sum[i] * scale;
  c_dc_.swap(c_dc_next_);
  update_correction();
  taken_ = 0;
}

void DriftControl::update_correction() {
  for (size_t i = 0; i < n_; ++i) corr_[i] = c_[i] - c_dc_[i];
}

void DriftControl::save(StateWriter& out) const {
  if (!scaffold_) return;
  out.floats("scaffold_c", c_);
  out.floats("scaffold_c_dc", c_dc_);
  out.i64("scaffold_steps_taken", taken_);
}

void DriftControl::restore(StateReader& in) {
  if (!scaffold_) return;
  in.floats("scaffold_c", c_, n_);
  in.floats("scaffold_c_dc", c_dc_, n_);
  const int64_t k = in.i64("scaffold_steps_taken");
  if (k < 0 || k > 1000000) throw StateError("scaffold_steps_taken: " + std::to_string(k) + ": out of range");
  taken_ = static_cast<int>(k);
  update_correction();
}

}  // namespace geotb::engine
