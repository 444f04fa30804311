#include "harness/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace geotb::harness {

namespace {

struct Unit {
  const char* name;
  long double factor;
};

// Splits "12.5Gbps" into 12.5 and "Gbps"; the number must be finite and non-negative.
std::pair<long double, std::string> split(const nlohmann::json& v, const char* what) {
  if (!v.is_string()) throw UnitError(fmt::format("{} must be a string with a unit, got {}", what, v.dump()));
  const std::string s = v.get<std::string>();
  const char* b = s.c_str();
  char* end = nullptr;
  const long double x = std::strtold(b, &end);
  if (end == b) throw UnitError(fmt::format("\"{}\": expected a number followed by a unit", s));
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  if (!std::isfinite(x)) throw UnitError(fmt::format("\"{}\": not a finite number", s));
  if (x < 0) throw UnitError(fmt::format("\"{}\": must not be negative", s));
  return {x, unit};
}

long double lookup(const std::string& original, const std::string& unit, const std::vector<Unit>& units) {
  std::string names;
  for (const Unit& u : units) {
    if (unit == u.name) return u.factor;
    names += names.empty() ? "" : ", ";
    names += u.name;
  }
  if (unit.empty()) throw UnitError(fmt::format("\"{}\": missing unit (expected one of {})", original, names));
  throw UnitError(fmt::format("\"{}\": unknown unit \"{}\" (expected one of {})", original, unit, names));
}

}  // namespace

double parse_bandwidth_bps(const nlohmann::json& v) {
  if (v.is_number()) throw UnitError(fmt::format("{}: missing unit (write e.g. \"10Gbps\")", v.dump()));
  static const std::vector<Unit> units = {{"bps", 1},      {"kbps", 1e3},  {"Kbps", 1e3},
                                          {"Mbps", 1e6},   {"Gbps", 1e9},  {"Tbps", 1e12},
                                          {"kbit/s", 1e3}, {"Mbit/s", 1e6}, {"Gbit/s", 1e9}};
  auto [x, unit] = split(v, "bandwidth");
  return static_cast<double>(x * lookup(v.get<std::string>(), unit, units));
}

std::chrono::nanoseconds parse_duration(const nlohmann::json& v) {
  if (v.is_number()) throw UnitError(fmt::format("{}: missing unit (write e.g. \"30ms\")", v.dump()));
  static const std::vector<Unit> units = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"min", 60e9}};
  auto [x, unit] = split(v, "duration");
  const long double ns = x * lookup(v.get<std::string>(), unit, units);
  if (ns > 1e18L) throw UnitError(fmt::format("\"{}\": too large", v.get<std::string>()));
  return std::chrono::nanoseconds{std::llround(ns)};
}

double parse_probability(const nlohmann::json& v) {
  long double p;
  if (v.is_number()) {
    p = v.get<double>();
  } else if (v.is_string()) {
    auto [x, unit] = split(v, "probability");
    if (unit == "%") p = x / 100;
    else if (unit.empty()) p = x;
    else throw UnitError(fmt::format("\"{}\": expected a probability like 0.01, \"1e-4\" or \"1%\"", v.get<std::string>()));
  } else {
    throw UnitError(fmt::format("{}: expected a probability like 0.01, \"1e-4\" or \"1%\"", v.dump()));
  }
  if (!(p >= 0 && p <= 1)) throw UnitError(fmt::format("{}: a probability must be in [0, 1]", v.dump()));
  return static_cast<double>(p);
}

uint64_t parse_bytes(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  static const std::vector<Unit> units = {{"B", 1},         {"KB", 1e3},          {"MB", 1e6},
                                          {"GB", 1e9},      {"KiB", 1024.0L},     {"MiB", 1048576.0L},
                                          {"GiB", 1073741824.0L}};
  auto [x, unit] = split(v, "size");
  return static_cast<uint64_t>(std::llround(x * lookup(v.get<std::string>(), unit, units)));
}

std::string format_rate(double bps) {
  if (bps <= 0) return "unlimited";
  if (bps >= 1e9) return fmt::format("{:.4g} Gbit/s", bps / 1e9);
  if (bps >= 1e6) return fmt::format("{:.4g} Mbit/s", bps / 1e6);
  return fmt::format("{:.4g} kbit/s", bps / 1e3);
}

std::string format_duration(std::chrono::nanoseconds d) {
  const double ns = static_cast<double>(d.count());
  if (ns >= 1e9) return fmt::format("{:.4g} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.4g} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.4g} us", ns / 1e3);
  return fmt::format("{} ns", d.count());
}

std::string format_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.3g} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.3g} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.3g} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

}  // namespace geotb::harness
