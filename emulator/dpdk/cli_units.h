// Unit-suffixed values on the emulator's own command lines ("1Gbps", "15ms", "1e-4").
// Scenario files go through harness/units.h; this is for the standalone binaries, which must not
// depend on the harness. Every parser throws std::invalid_argument naming the text.
#pragma once

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace geotb::emu {

inline double parse_number_prefix(const std::string& s, std::string& rest) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (...) {
    throw std::invalid_argument("\"" + s + "\": expected a number");
  }
  rest = s.substr(pos);
  return v;
}

/// "1Gbps", "500Mbps", "64kbps", "1e9" (bits/s), "0" = unlimited.
inline double parse_rate_bps(const std::string& s) {
  std::string u;
  const double v = parse_number_prefix(s, u);
  double mult = 0;
  if (u.empty() || u == "bps") mult = 1;
  else if (u == "kbps" || u == "Kbps") mult = 1e3;
  else if (u == "Mbps") mult = 1e6;
  else if (u == "Gbps") mult = 1e9;
  else if (u == "Tbps") mult = 1e12;
  else throw std::invalid_argument("\"" + s + "\": unknown rate unit (bps, kbps, Mbps, Gbps, Tbps)");
  if (!(v >= 0)) throw std::invalid_argument("\"" + s + "\": rate must be >= 0");
  return v * mult;
}

/// "15ms", "20us", "1.5s", "100ns"; a bare number is an error.
inline std::chrono::nanoseconds parse_duration_ns(const std::string& s) {
  std::string u;
  const double v = parse_number_prefix(s, u);
  double mult = 0;
  if (u == "ns") mult = 1;
  else if (u == "us") mult = 1e3;
  else if (u == "ms") mult = 1e6;
  else if (u == "s") mult = 1e9;
  else throw std::invalid_argument("\"" + s + "\": duration needs a unit (ns, us, ms, s)");
  if (!(v >= 0)) throw std::invalid_argument("\"" + s + "\": duration must be >= 0");
  return std::chrono::nanoseconds{static_cast<long long>(v * mult + 0.5)};
}

/// "1e-4", "0.01", "1%".
inline double parse_probability(const std::string& s) {
  std::string u;
  double v = parse_number_prefix(s, u);
  if (u == "%") v /= 100;
  else if (!u.empty()) throw std::invalid_argument("\"" + s + "\": expected a probability or a percentage");
  if (!(v >= 0 && v <= 1)) throw std::invalid_argument("\"" + s + "\": probability must be in [0, 1]");
  return v;
}

}  // namespace geotb::emu
