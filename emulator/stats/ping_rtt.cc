#include "emulator/stats/ping_rtt.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "emulator/stats/paired_ratio.h"

namespace geotb::emu {

std::vector<double> parse_ping_times_ms(const std::string& output) {
  std::vector<double> v;
  std::istringstream is(output);
  for (std::string line; std::getline(is, line);) {
    const auto p = line.find(" time=");
    if (p == std::string::npos || line.find("icmp_seq=") == std::string::npos) continue;
    const char* s = line.c_str() + p + 6;
    char* end = nullptr;
    const double x = std::strtod(s, &end);
    if (end == s) continue;
    while (*end == ' ') ++end;
    const std::string unit(end);
    if (unit.rfind("ms", 0) == 0) {
      v.push_back(x);
    } else if (unit.rfind("us", 0) == 0) {
      v.push_back(x / 1000);
    } else if (unit.rfind("s", 0) == 0) {
      v.push_back(x * 1000);
    }
  }
  return v;
}

RttSummary summarize_rtts(const std::vector<double>& ms) {
  if (ms.empty()) throw std::invalid_argument("summarize_rtts: no round-trip times");
  RttSummary s;
  s.count = ms.size();
  const auto [mn, mx] = std::minmax_element(ms.begin(), ms.end());
  s.min_ms = *mn;
  s.max_ms = *mx;
  s.median_ms = median(ms);
  s.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  return s;
}

}  // namespace geotb::emu
