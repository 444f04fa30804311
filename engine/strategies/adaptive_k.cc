#include "engine/strategies/adaptive_k.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace geotb::engine {

AdaptiveK::AdaptiveK(const AdaptiveKConfig& cfg, int num_dcs)
    : cfg_(cfg), k_(cfg.k_min), ewma_(static_cast<size_t>(num_dcs)) {}

int AdaptiveK::need(const AdaptiveKConfig& cfg, double exchange_s, double step_s, double round_s) {
  const double u = cfg.target;
  // Both bounds are ratios of measured times; a ceiling with a relative slack of 1e-9 so that an
  // exact multiple (T = 4·u·t) gives 4, not 5, whatever the rounding of the division.
  auto ceil_of = [](double x) {
    const double c = std::ceil(x * (1 - 1e-9));
    return c < 1 ? 1.0 : std::min(c, 1e9);
  };
  const double hide = ceil_of(exchange_s / (u * step_s));
  const double amortise = ceil_of(u * round_s / ((1 - u) * step_s));
  return static_cast<int>(std::max(hide, amortise));
}

int AdaptiveK::decide(std::span<const RoundMeasure> by_dc) {
  if (by_dc.size() != ewma_.size())
    throw std::invalid_argument("adaptive K: " + std::to_string(by_dc.size()) + " measurements for " +
                                std::to_string(ewma_.size()) + " data centers");
  for (const RoundMeasure& m : by_dc)
    if (!m.valid()) return k_;
  int latest = 1, smoothed = 1;
  for (size_t d = 0; d < by_dc.size(); ++d) {
    const RoundMeasure& m = by_dc[d];
    RoundMeasure& e = ewma_[d];
    if (e.exchange_s < 0) {
      e = m;
    } else {
      const double a = cfg_.alpha;
      e.exchange_s = a * m.exchange_s + (1 - a) * e.exchange_s;
      e.step_s = a * m.step_s + (1 - a) * e.step_s;
      e.round_s = a * m.round_s + (1 - a) * e.round_s;
    }
    latest = std::max(latest, need(cfg_, m.exchange_s, m.step_s, m.round_s));
    smoothed = std::max(smoothed, need(cfg_, e.exchange_s, e.step_s, e.round_s));
  }
  ++decisions_;
  latest = std::clamp(latest, cfg_.k_min, cfg_.k_max);
  smoothed = std::clamp(smoothed, cfg_.k_min, cfg_.k_max);
  if (latest > k_) {
    k_ = latest;
    below_ = 0;
  } else if (2 * smoothed <= k_ && k_ > cfg_.k_min) {
    if (++below_ >= cfg_.patience) {
      k_ = std::max({cfg_.k_min, smoothed, (k_ + 1) / 2});
      below_ = 0;
    }
  } else {
    below_ = 0;
  }
  return k_;
}

std::vector<double> AdaptiveK::save() const {
  std::vector<double> s = {static_cast<double>(k_), static_cast<double>(below_), static_cast<double>(decisions_)};
  const double none = std::numeric_limits<double>::quiet_NaN();
  for (const RoundMeasure& e : ewma_) {
    const bool have = e.exchange_s >= 0;
    s.push_back(have ? e.exchange_s : none);
    s.push_back(have ? e.step_s : none);
    s.push_back(have ? e.round_s : none);
  }
  return s;
}

void AdaptiveK::restore(std::span<const double> s) {
  if (s.size() != 3 + 3 * ewma_.size())
    throw std::invalid_argument("adaptive K state: " + std::to_string(s.size()) + " values, expected " +
                                std::to_string(3 + 3 * ewma_.size()));
  if (!(s[0] >= cfg_.k_min && s[0] <= cfg_.k_max) || !(s[1] >= 0) || !(s[2] >= 0))
    throw std::invalid_argument("adaptive K state: K " + std::to_string(s[0]) + " outside [" +
                                std::to_string(cfg_.k_min) + ", " + std::to_string(cfg_.k_max) + "]");
  k_ = static_cast<int>(s[0]);
  below_ = static_cast<int>(s[1]);
  decisions_ = static_cast<int64_t>(s[2]);
  for (size_t d = 0; d < ewma_.size(); ++d) {
    const double* p = &s[3 + 3 * d];
    ewma_[d] = std::isnan(p[0]) ? RoundMeasure{} : RoundMeasure{p[0], p[1], p[2]};
  }
}

}  // namespace geotb::engine
