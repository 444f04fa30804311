// Student's t distribution: CDF and quantile, for confidence intervals over a handful of
// batches (the fidelity runner's batch means have 5-60 batches; a normal quantile would make a
// 95 % interval over 9 batches 13 % too narrow, and a table cut off at 20 degrees of freedom
// another 4 % at 30).
#pragma once

namespace geotb::emu {

/// P(T <= t) for T ~ Student t with `df` > 0 degrees of freedom. Accurate to ~1e-12 (regularized
/// incomplete beta by continued fraction).
double student_t_cdf(double t, double df);

/// The p-quantile (0 < p < 1) of Student t with `df` > 0 degrees of freedom: t with
/// student_t_cdf(t, df) == p, to ~1e-10 relative. Throws std::invalid_argument otherwise.
double student_t_quantile(double p, double df);

}  // namespace geotb::emu
