// CLI11 options for quantities with units (common/units.h), so every command line accepts the
// same units as scenario files: `--rate 1Gbps`, `--rtt 30ms`, `--loss 1e-4`, `--bytes 256MiB`.
// A bad value is a CLI11 ValidationError "<flag>: <the parser's message>" (exit status 105 via
// CLI11's exit()). The target keeps its value when the flag is not given; the help shows it.
// On a command line a bare integer is also a size in bytes ("--sockbuf 0"), as a JSON number is
// in a scenario file.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "common/units.h"

namespace geotb::common {

namespace detail {
template <typename T, typename Parse>
CLI::Option* add_unit_option(CLI::App& app, const std::string& name, T& target, const std::string& help,
                             std::string shown_default, Parse parse) {
  CLI::Option* opt = app.add_option_function<std::string>(
      name,
      [&target, name, parse](const std::string& text) {
        try {
          target = parse(text);
        } catch (const UnitError& e) {
          throw CLI::ValidationError(name, e.what());
        }
      },
      help);
  opt->type_name("TEXT")->default_str(std::move(shown_default));
  return opt;
}
}  // namespace detail

/// Bits per second ("1Gbps").
inline CLI::Option* add_bandwidth_option(CLI::App& app, const std::string& name, double& bps, const std::string& help) {
  return detail::add_unit_option(app, name, bps, help, format_rate(bps),
                                 [](const std::string& s) { return parse_bandwidth_bps(s); });
}

/// A duration ("30ms"), into any std::chrono::duration (truncated toward zero when coarser).
template <typename Rep, typename Period>
CLI::Option* add_duration_option(CLI::App& app, const std::string& name, std::chrono::duration<Rep, Period>& d,
                                 const std::string& help) {
  return detail::add_unit_option(app, name, d, help,
                                 format_duration(std::chrono::duration_cast<std::chrono::nanoseconds>(d)),
                                 [](const std::string& s) {
                                   return std::chrono::duration_cast<std::chrono::duration<Rep, Period>>(parse_duration(s));
                                 });
}

/// A probability ("1e-4", "1%").
inline CLI::Option* add_probability_option(CLI::App& app, const std::string& name, double& p, const std::string& help) {
  return detail::add_unit_option(app, name, p, help, fmt::format("{}", p),
                                 [](const std::string& s) { return parse_probability(s); });
}

/// Bytes ("256MiB", or a bare integer).
inline CLI::Option* add_bytes_option(CLI::App& app, const std::string& name, uint64_t& bytes, const std::string& help) {
  return detail::add_unit_option(app, name, bytes, help, std::to_string(bytes), [](const std::string& s) -> uint64_t {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return parse_bytes(s);
    try {
      return std::stoull(s);
    } catch (const std::out_of_range&) {
      throw UnitError("\"" + s + "\": too large");
    }
  });
}

}  // namespace geotb::common
