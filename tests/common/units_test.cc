// The one parser of quantities with units: exact values, every error message, the JSON form
// of scenario files and the CLI11 options.
#include "common/units.h"

#include <CLI/CLI.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/cli_units.h"

namespace geotb::common {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const UnitError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Units, BandwidthExactValues) {
  EXPECT_EQ(parse_bandwidth_bps("9600bps"), 9600.0);
  EXPECT_EQ(parse_bandwidth_bps("64kbps"), 64e3);
  EXPECT_EQ(parse_bandwidth_bps("64Kbps"), 64e3);
  EXPECT_EQ(parse_bandwidth_bps("2.5 Mbps"), 2.5e6);
  EXPECT_EQ(parse_bandwidth_bps("10Gbps"), 10e9);
  EXPECT_EQ(parse_bandwidth_bps("1.5Tbps"), 1.5e12);
  EXPECT_EQ(parse_bandwidth_bps("100kbit/s"), 1e5);
  EXPECT_EQ(parse_bandwidth_bps("100Mbit/s"), 1e8);
  EXPECT_EQ(parse_bandwidth_bps("10 Gbit/s"), 1e10);
  EXPECT_EQ(parse_bandwidth_bps("0bps"), 0.0);
  EXPECT_EQ(parse_bandwidth_bps("1000000000bps"), 1e9);  // what link_spec_text writes
}

TEST(Units, DurationExactValues) {
  EXPECT_EQ(parse_duration("100ns"), 100ns);
  EXPECT_EQ(parse_duration("20us"), 20us);
  EXPECT_EQ(parse_duration("30ms"), 30ms);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("2min"), 120s);
  EXPECT_EQ(parse_duration("0.5ns"), 1ns);  // rounded to the nearest (half away from zero)
  EXPECT_EQ(parse_duration("15000000ns"), 15ms);
}

TEST(Units, SizeExactValues) {
  EXPECT_EQ(parse_bytes("1500B"), 1500u);
  EXPECT_EQ(parse_bytes("16kB"), 16000u);
  EXPECT_EQ(parse_bytes("16KB"), 16000u);
  EXPECT_EQ(parse_bytes("64KiB"), 65536u);
  EXPECT_EQ(parse_bytes("16MB"), 16000000u);
  EXPECT_EQ(parse_bytes("256MiB"), 268435456u);
  EXPECT_EQ(parse_bytes("1GB"), 1000000000u);
  EXPECT_EQ(parse_bytes("1GiB"), 1073741824u);
  EXPECT_EQ(parse_bytes("2TB"), 2000000000000u);
  EXPECT_EQ(parse_bytes("1TiB"), 1099511627776u);
}

TEST(Units, ProbabilityExactValues) {
  EXPECT_EQ(parse_probability("0.01"), 0.01);
  EXPECT_EQ(parse_probability("1e-4"), 1e-4);
  EXPECT_EQ(parse_probability("1e-12"), 1e-12);
  EXPECT_EQ(parse_probability("1%"), 0.01);
  EXPECT_EQ(parse_probability("100%"), 1.0);
  EXPECT_EQ(parse_probability("0"), 0.0);
}

TEST(Units, ErrorMessages) {
  EXPECT_EQ(error_of([] { parse_bandwidth_bps("10Gbs"); }),
            "\"10Gbs\": unknown unit \"Gbs\" (expected one of bps, kbps, Kbps, Mbps, Gbps, Tbps, kbit/s, Mbit/s, "
            "Gbit/s)");
  EXPECT_EQ(error_of([] { parse_bandwidth_bps("1e9"); }),
            "\"1e9\": missing unit (expected one of bps, kbps, Kbps, Mbps, Gbps, Tbps, kbit/s, Mbit/s, Gbit/s)");
  EXPECT_EQ(error_of([] { parse_bandwidth_bps("fast"); }), "\"fast\": expected a number followed by a unit");
  EXPECT_EQ(error_of([] { parse_bandwidth_bps("inf Gbps"); }), "\"inf Gbps\": not a finite number");
  EXPECT_EQ(error_of([] { parse_duration("-5ms"); }), "\"-5ms\": must not be negative");
  EXPECT_EQ(error_of([] { parse_duration("30"); }), "\"30\": missing unit (expected one of ns, us, ms, s, min)");
  EXPECT_EQ(error_of([] { parse_duration("3 fortnights"); }),
            "\"3 fortnights\": unknown unit \"fortnights\" (expected one of ns, us, ms, s, min)");
  EXPECT_EQ(error_of([] { parse_duration("1e12s"); }), "\"1e12s\": too large");
  EXPECT_EQ(error_of([] { parse_bytes("16M"); }),
            "\"16M\": unknown unit \"M\" (expected one of B, kB, KB, KiB, MB, MiB, GB, GiB, TB, TiB)");
  EXPECT_EQ(error_of([] { parse_probability("150%"); }), "\"150%\": a probability must be in [0, 1]");
  EXPECT_EQ(error_of([] { parse_probability("1.5"); }), "\"1.5\": a probability must be in [0, 1]");
  EXPECT_EQ(error_of([] { parse_probability("5 percent"); }),
            "\"5 percent\": expected a probability like 0.01, \"1e-4\" or \"1%\"");
}

TEST(Units, JsonFormOfScenarios) {
  EXPECT_EQ(bandwidth_bps_from_json(json("10Gbps")), 10e9);
  EXPECT_EQ(duration_from_json(json("30ms")), 30ms);
  EXPECT_EQ(probability_from_json(json(0.25)), 0.25);
  EXPECT_EQ(probability_from_json(json("1%")), 0.01);
  EXPECT_EQ(bytes_from_json(json::parse("1500")), 1500u);  // parsed text: unsigned
  EXPECT_EQ(bytes_from_json(json("64KiB")), 65536u);
  EXPECT_EQ(error_of([] { bandwidth_bps_from_json(json(10)); }), "10: missing unit (write e.g. \"10Gbps\")");
  EXPECT_EQ(error_of([] { duration_from_json(json(30)); }), "30: missing unit (write e.g. \"30ms\")");
  EXPECT_EQ(error_of([] { bandwidth_bps_from_json(json(true)); }), "bandwidth must be a string with a unit, got true");
  EXPECT_EQ(error_of([] { duration_from_json(json::array()); }), "duration must be a string with a unit, got []");
  EXPECT_EQ(error_of([] { bytes_from_json(json(-5)); }), "size must be a string with a unit, got -5");
  EXPECT_EQ(error_of([] { probability_from_json(json(1.5)); }), "1.5: a probability must be in [0, 1]");
  EXPECT_EQ(error_of([] { probability_from_json(json(nullptr)); }),
            "null: expected a probability like 0.01, \"1e-4\" or \"1%\"");
}

TEST(Units, Format) {
  EXPECT_EQ(format_rate(1e9), "1 Gbit/s");
  EXPECT_EQ(format_rate(2.5e6), "2.5 Mbit/s");
  EXPECT_EQ(format_rate(0), "unlimited");
  EXPECT_EQ(format_duration(30ms), "30 ms");
  EXPECT_EQ(format_duration(20us), "20 us");
  EXPECT_EQ(format_bytes(1.2e6), "1.2 MB");
}

struct Flags {
  double rate = 1e9;
  std::chrono::nanoseconds rtt = 30ms;
  std::chrono::duration<double> rtt_s{0};
  double loss = 0;
  uint64_t bytes = 16;
  CLI::App app{"test"};
  Flags() {
    add_bandwidth_option(app, "--rate", rate, "rate");
    add_duration_option(app, "--rtt", rtt, "rtt");
    add_duration_option(app, "--rtt-s", rtt_s, "rtt in seconds");
    add_probability_option(app, "--loss", loss, "loss");
    add_bytes_option(app, "--bytes", bytes, "bytes");
  }
  void parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  }
};

TEST(CliUnits, ParsesTheSameUnits) {
  Flags f;
  f.parse({"--rate", "200Mbit/s", "--rtt", "1.5s", "--rtt-s", "30ms", "--loss", "1%", "--bytes", "64KiB"});
  EXPECT_EQ(f.rate, 2e8);
  EXPECT_EQ(f.rtt, 1500ms);
  EXPECT_EQ(f.rtt_s.count(), 0.03);
  EXPECT_EQ(f.loss, 0.01);
  EXPECT_EQ(f.bytes, 65536u);
}

TEST(CliUnits, KeepsDefaultsAndTakesBareByteCounts) {
  Flags f;
  f.parse({"--bytes", "4096"});
  EXPECT_EQ(f.rate, 1e9);
  EXPECT_EQ(f.rtt, 30ms);
  EXPECT_EQ(f.bytes, 4096u);
}

TEST(CliUnits, ErrorNamesTheFlagAndTheValue) {
  Flags f;
  try {
    f.parse({"--rate", "1Gbs"});
    FAIL() << "no error";
  } catch (const CLI::ValidationError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("--rate"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("\"1Gbs\": unknown unit \"Gbs\""));
  }
  Flags g;
  EXPECT_THROW(g.parse({"--rtt", "30"}), CLI::ValidationError);
  Flags h;
  EXPECT_THROW(h.parse({"--bytes", "99999999999999999999999"}), CLI::ValidationError);
}

}  // namespace
}  // namespace geotb::common
