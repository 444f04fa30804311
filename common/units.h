// Quantities with units, the one parser for scenario files and every command line:
//
//   bandwidth    bps kbps Kbps Mbps Gbps Tbps kbit/s Mbit/s Gbit/s      -> bits per second
//   duration     ns us ms s min                                         -> nanoseconds
//   size         B kB KB KiB MB MiB GB GiB TB TiB                       -> bytes
//   probability  0.01, "1e-4", "1%"                                     -> [0, 1]
//
// The number comes first, then the unit, optionally after spaces ("2.5 Mbps"). The number must be
// finite and non-negative; a bandwidth, duration or size needs its unit. Every parser throws
// UnitError whose message names the value and what was expected ("\"10Gbs\": unknown unit \"Gbs\"
// (expected one of bps, ...)"); the caller prefixes the field path or the flag name.
//
// The *_from_json forms are the scenario files': a bare JSON number is a size in bytes or a
// probability, and an error ("missing unit") for a bandwidth or a duration.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace geotb::common {

class UnitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// "10Gbps", "100Mbps", "1.5Tbps", "64kbps", "9600bps", "10 Gbit/s" -> bits per second.
double parse_bandwidth_bps(std::string_view text);
/// "30ms", "20us", "1.5s", "100ns", "2min" -> nanoseconds (rounded to the nearest; at most 1e18).
std::chrono::nanoseconds parse_duration(std::string_view text);
/// "0.01", "1e-4", "1%" -> a probability in [0, 1].
double parse_probability(std::string_view text);
/// "16MB", "64KiB", "1500B" -> bytes (rounded to the nearest).
uint64_t parse_bytes(std::string_view text);

/// The same, for a scenario's JSON value (a string as above, or a number where the comment at
/// the top allows one; anything else is a UnitError).
double bandwidth_bps_from_json(const nlohmann::json& v);
std::chrono::nanoseconds duration_from_json(const nlohmann::json& v);
double probability_from_json(const nlohmann::json& v);
uint64_t bytes_from_json(const nlohmann::json& v);

/// "10 Gbit/s", "30 ms", "1.2 MB" for people (4 or 3 significant digits); a rate <= 0 is
/// "unlimited".
std::string format_rate(double bps);
std::string format_duration(std::chrono::nanoseconds d);
std::string format_bytes(double bytes);

}  // namespace geotb::common
