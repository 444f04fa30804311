// Values with units, as scenario files write them: "10Gbps", "30ms", "1%", "1e-4".
// Every parser throws UnitError with a message saying what was expected; the scenario loader
// prefixes the field path.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace geotb::harness {

class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "10Gbps", "100Mbps", "1.5Tbps", "64kbps", "9600bps" -> bits per second.
double parse_bandwidth_bps(const nlohmann::json& v);
/// "30ms", "20us", "1.5s", "100ns", "2min" -> nanoseconds (a bare number is an error: no unit).
std::chrono::nanoseconds parse_duration(const nlohmann::json& v);
/// 0.01, "1e-4", "1%" -> probability in [0, 1].
double parse_probability(const nlohmann::json& v);
/// "16MB", "64KiB", 1500 (bytes) -> bytes.
uint64_t parse_bytes(const nlohmann::json& v);

/// "10 Gbit/s", "30 ms", "1.2 MB" for people.
std::string format_rate(double bps);
std::string format_duration(std::chrono::nanoseconds d);
std::string format_bytes(double bytes);

}  // namespace geotb::harness
