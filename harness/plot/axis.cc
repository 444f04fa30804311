#include "harness/plot/axis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace geotb::plot {

std::vector<double> nice_linear_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {  // a single value: a unit-wide window around it
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.5;
    lo -= pad;
    hi += pad;
  }
  const double rough = (hi - lo) / std::max(1, target - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(rough)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= rough) {
      step = m * mag;
      break;
    }
  const double first = std::floor(lo / step + 1e-9) * step;
  std::vector<double> out;
  for (int i = 0;; ++i) {
    double v = first + i * step;
    if (std::abs(v) < step * 1e-9) v = 0;  // no "-0" or 1e-17 labels
    out.push_back(v);
    if (v >= hi - step * 1e-9 || i > 1000) break;
  }
  return out;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (!(lo > 0)) lo = hi > 0 ? hi / 10 : 1;
  if (!(hi > lo)) hi = lo * 10;
  const int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (d1 <= d0) d1 = d0 + 1;
  std::vector<double> out;
  const bool sub = d1 - d0 < 3;
  for (int d = d0; d <= d1; ++d) {
    const double p = std::pow(10.0, d);
    out.push_back(p);
    if (sub && d < d1) {
      out.push_back(2 * p);
      out.push_back(5 * p);
    }
  }
  return out;
}

namespace {

struct Prefixed {
  double mantissa;
  const char* prefix;
};

Prefixed si(double v) {
  static constexpr struct {
    double f;
    const char* p;
  } kP[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  const double a = std::abs(v);
  for (const auto& p : kP)
    if (a >= p.f * (1 - 1e-9)) return {v / p.f, p.p};
  return {v, ""};
}

std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string join_unit(const std::string& num, const char* prefix, const std::string& unit) {
  if (!*prefix && unit.empty()) return num;
  return num + " " + prefix + unit;
}

}  // namespace

std::string format_si(double v, const std::string& unit) {
  const Prefixed p = si(v);
  const double a = std::abs(p.mantissa);
  const int decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : a == 0 ? 0 : std::max(2, 2 - static_cast<int>(std::floor(std::log10(a))));
  return join_unit(trim_zeros(fmt::format("{:.{}f}", p.mantissa, decimals)), p.prefix, unit);
}

std::string format_tick(double v, double step, bool use_si, const std::string& unit) {
  if (use_si) return format_si(v, unit);
  const int decimals = step > 0 ? std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 8) : 2;
  return trim_zeros(fmt::format("{:.{}f}", v, decimals + 1));
}

Axis::Axis(const AxisSpec& spec, double data_lo, double data_hi, double px_lo, double px_hi, int target_ticks)
    : spec_(spec), px_lo_(px_lo), px_hi_(px_hi) {
  const bool fixed = spec.fixed_hi > spec.fixed_lo;
  if (spec.scale == Scale::kLog) {
    if (fixed) {
      data_lo = spec.fixed_lo;
      data_hi = spec.fixed_hi;
    }
    // Headroom above the largest value, so points on a decade do not sit on the frame.
    std::vector<double> t = log_ticks(data_lo, fixed ? data_hi : data_hi * 1.25);
    lo_ = fixed ? data_lo : t.front();
    hi_ = fixed ? data_hi : t.back();
    for (double v : t)
      if (v >= lo_ * (1 - 1e-9) && v <= hi_ * (1 + 1e-9))
        ticks_.push_back({v, format_si(v, spec.si_prefix && spec.unit_in_ticks ? spec.unit : "")});
    return;
  }
  if (spec.include_zero) {
    data_lo = std::min(data_lo, 0.0);
    data_hi = std::max(data_hi, 0.0);
  }
  if (fixed) {
    data_lo = spec.fixed_lo;
    data_hi = spec.fixed_hi;
  }
  std::vector<double> t = nice_linear_ticks(data_lo, data_hi, target_ticks);
  const double step = t.size() > 1 ? t[1] - t[0] : 1;
  lo_ = fixed ? data_lo : t.front();
  hi_ = fixed ? data_hi : t.back();
  for (double v : t)
    if (v >= lo_ - step * 1e-9 && v <= hi_ + step * 1e-9 && (!spec.integer_ticks || v == std::round(v)))
      ticks_.push_back({v, format_tick(v, step, spec.si_prefix, spec.unit_in_ticks ? spec.unit : "")});
}

double Axis::map(double v) const {
  double f;
  if (spec_.scale == Scale::kLog) {
    const double lv = std::log10(std::max(v, lo_ * 1e-6));
    f = (lv - std::log10(lo_)) / (std::log10(hi_) - std::log10(lo_));
  } else {
    f = (v - lo_) / (hi_ - lo_);
  }
  return px_lo_ + f * (px_hi_ - px_lo_);
}

std::string Axis::title_with_unit() const {
  std::string t = spec_.title;
  if (!spec_.unit.empty()) t += " [" + spec_.unit + "]";
  if (spec_.scale == Scale::kLog) t += " (log scale)";
  return t;
}

}  // namespace geotb::plot
