// Axes of the report charts: domain, linear or log scale, "nice" ticks (1-2-5 steps, or decades)
// and tick labels with SI prefixes and the axis unit.
#pragma once

#include <string>
#include <vector>

namespace geotb::plot {

enum class Scale { kLinear, kLog };

struct AxisSpec {
  std::string title;  ///< e.g. "wall time"; the unit is appended as " [s]"
  std::string unit;   ///< e.g. "s", "B", "samples/s", "" for pure numbers (ratios, accuracy)
  Scale scale = Scale::kLinear;
  bool si_prefix = false;    ///< tick labels as "1.5 k", "10 M"
  bool unit_in_ticks = false;  ///< with si_prefix: "10 MB" instead of "10 M"
  bool include_zero = false;  ///< linear only: extend the domain to 0
  bool integer_ticks = false;  ///< linear only: ticks at whole numbers only (seeds, counts)
  /// Fixed domain (both set and lo < hi): no automatic extension to nice bounds.
  double fixed_lo = 0, fixed_hi = 0;
};

struct Tick {
  double value;
  std::string label;
};

/// A 1-D mapping from data values to pixels.
class Axis {
 public:
  /// Fits the domain to [data_lo, data_hi] (log: positive values only; the caller drops the
  /// rest), rounded out to nice tick values, and maps it onto [px_lo, px_hi] (px_hi may be
  /// smaller than px_lo, as for a y axis).
  Axis(const AxisSpec& spec, double data_lo, double data_hi, double px_lo, double px_hi, int target_ticks = 6);

  double map(double v) const;  ///< value -> pixel; values outside the domain map outside the range
  const std::vector<Tick>& ticks() const { return ticks_; }
  std::string title_with_unit() const;
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  const AxisSpec& spec() const { return spec_; }

 private:
  AxisSpec spec_;
  double lo_ = 0, hi_ = 1, px_lo_, px_hi_;
  std::vector<Tick> ticks_;
};

/// Linear ticks: a step of 1, 2, 2.5 or 5 times a power of ten giving about `target` ticks,
/// covering [lo, hi] (the first tick <= lo, the last >= hi). Exposed for tests.
std::vector<double> nice_linear_ticks(double lo, double hi, int target);
/// Log ticks: every decade from 10^floor(log10 lo) to 10^ceil(log10 hi); with fewer than three
/// decades, also 2x and 5x. Exposed for tests.
std::vector<double> log_ticks(double lo, double hi);

/// A tick label: with `si`, format_si(v, unit) ("10 MB", "2.5 k"); otherwise a plain number with
/// just enough decimals for a tick step of `step` ("0.25", "1500").
std::string format_tick(double v, double step, bool si, const std::string& unit);
/// A value with 3 significant digits and an SI prefix: "36.6 M", "577 k", "0.0157".
std::string format_si(double v, const std::string& unit);

}  // namespace geotb::plot
