// Intervals for a proportion.
#pragma once

#include <cstdint>
#include <utility>

namespace geotb::emu {

/// Wilson score interval for k successes in n independent trials at z (1.96 = 95 %);
/// {0, 1} for n == 0.
std::pair<double, double> wilson_interval(uint64_t k, uint64_t n, double z = 1.96);

}  // namespace geotb::emu
