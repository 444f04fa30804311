#include "common/units.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace geotb::common {

namespace {

struct Unit {
  const char* name;
  long double factor;
};

const std::vector<Unit> kBandwidthUnits = {{"bps", 1},      {"kbps", 1e3},   {"Kbps", 1e3},
                                           {"Mbps", 1e6},   {"Gbps", 1e9},   {"Tbps", 1e12},
                                           {"kbit/s", 1e3}, {"Mbit/s", 1e6}, {"Gbit/s", 1e9}};
const std::vector<Unit> kDurationUnits = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"min", 60e9}};
const std::vector<Unit> kSizeUnits = {{"B", 1},
                                      {"kB", 1e3},
                                      {"KB", 1e3},
                                      {"KiB", 1024.0L},
                                      {"MB", 1e6},
                                      {"MiB", 1048576.0L},
                                      {"GB", 1e9},
                                      {"GiB", 1073741824.0L},
                                      {"TB", 1e12},
                                      {"TiB", 1099511627776.0L}};

// Splits "12.5Gbps" into 12.5 and "Gbps"; the number must be finite and non-negative.
std::pair<long double, std::string> split(const std::string& s) {
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

long double scaled(std::string_view text, const std::vector<Unit>& units) {
  const std::string s(text);
  auto [x, unit] = split(s);
  return x * lookup(s, unit, units);
}

constexpr const char* kProbabilityForms = "expected a probability like 0.01, \"1e-4\" or \"1%\"";

double checked_probability(long double p, const std::string& shown) {
  if (!(p >= 0 && p <= 1)) throw UnitError(fmt::format("{}: a probability must be in [0, 1]", shown));
  return static_cast<double>(p);
}

const std::string& string_with_unit(const nlohmann::json& v, const char* what, const char* example) {
  if (v.is_number()) throw UnitError(fmt::format("{}: missing unit (write e.g. \"{}\")", v.dump(), example));
  if (!v.is_string()) throw UnitError(fmt::format("{} must be a string with a unit, got {}", what, v.dump()));
  return v.get_ref<const std::string&>();
}

}  // namespace

double parse_bandwidth_bps(std::string_view text) { return static_cast<double>(scaled(text, kBandwidthUnits)); }

std::chrono::nanoseconds parse_duration(std::string_view text) {
  const long double ns = scaled(text, kDurationUnits);
  if (ns > 1e18L) throw UnitError(fmt::format("\"{}\": too large", text));
  return std::chrono::nanoseconds{std::llround(ns)};
}

double parse_probability(std::string_view text) {
  const std::string s(text);
  auto [x, unit] = split(s);
  long double p = x;
  if (unit == "%") p = x / 100;
  else if (!unit.empty()) throw UnitError(fmt::format("\"{}\": {}", s, kProbabilityForms));
  return checked_probability(p, nlohmann::json(s).dump());
}

uint64_t parse_bytes(std::string_view text) {
  return static_cast<uint64_t>(std::llround(scaled(text, kSizeUnits)));
}

double bandwidth_bps_from_json(const nlohmann::json& v) {
  return parse_bandwidth_bps((string_with_unit(v, "bandwidth", "10Gbps")));
}

std::chrono::nanoseconds duration_from_json(const nlohmann::json& v) {
  return parse_duration((string_with_unit(v, "duration", "30ms")));
}

double probability_from_json(const nlohmann::json& v) {
  if (v.is_number()) return checked_probability(v.get<double>(), v.dump());
  if (v.is_string()) return parse_probability(v.get_ref<const std::string&>());
  throw UnitError(fmt::format("{}: {}", v.dump(), kProbabilityForms));
}

uint64_t bytes_from_json(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (!v.is_string()) throw UnitError(fmt::format("size must be a string with a unit, got {}", v.dump()));
  return parse_bytes(v.get_ref<const std::string&>());
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

}  // namespace geotb::common
