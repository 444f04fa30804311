// Link traces (harness/link_trace.h): the CSV a timeline {"trace"} entry replays. Rows parse into
// exactly the settings they give; every bad file fails naming file, line, column and value.
#include "harness/link_trace.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using geotb::harness::LinkTrace;
using geotb::harness::LinkTraceError;
using geotb::harness::parse_link_trace;
using geotb::harness::read_link_trace;
using namespace std::chrono_literals;

namespace {

std::string error_of(const std::string& text, double time_scale = 1.0) {
  try {
    parse_link_trace(text, "t.csv", time_scale);
  } catch (const LinkTraceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LinkTrace, RowsGiveExactlyTheirCells) {
  const LinkTrace t = parse_link_trace(
      "# synthetic, for the test\n"
      "\n"
      "time_s, bandwidth_mbps, rtt_ms, loss, up\n"
      "0,10000,30,0,1\n"
      "# a comment between rows\n"
      "900.5,2500.5,,1e-4,\n"
      "1800,,34.25,,false\n"
      "2000,,,,true\n"
      "2100,,,,\n",
      "t.csv");
  EXPECT_THAT(t.columns, ::testing::ElementsAre("time_s", "bandwidth_mbps", "rtt_ms", "loss", "up"));
  ASSERT_EQ(t.rows.size(), 5u);
  const auto& r0 = t.rows[0];
  EXPECT_EQ(r0.line, 4);
  EXPECT_EQ(r0.time_s, 0);
  EXPECT_EQ(r0.at, 0ns);
  EXPECT_EQ(r0.bandwidth_mbps, 10000.0);
  EXPECT_EQ(r0.rtt_ms, 30.0);
  EXPECT_EQ(r0.loss, 0.0);
  EXPECT_EQ(r0.up, true);
  const auto& r1 = t.rows[1];
  EXPECT_EQ(r1.line, 6);
  EXPECT_EQ(r1.at, 900500ms);
  EXPECT_EQ(r1.bandwidth_mbps, 2500.5);
  EXPECT_FALSE(r1.rtt_ms.has_value());
  EXPECT_EQ(r1.loss, 1e-4);
  EXPECT_FALSE(r1.up.has_value());
  const auto& r2 = t.rows[2];
  EXPECT_EQ(r2.line, 7);
  EXPECT_EQ(r2.at, 1800s);
  EXPECT_FALSE(r2.bandwidth_mbps.has_value());
  EXPECT_EQ(r2.rtt_ms, 34.25);
  EXPECT_FALSE(r2.loss.has_value());
  EXPECT_EQ(r2.up, false);
  EXPECT_EQ(t.rows[3].up, true);
  // A row of empty cells changes nothing (it is still a row).
  const auto& r4 = t.rows[4];
  EXPECT_FALSE(r4.bandwidth_mbps || r4.rtt_ms || r4.loss || r4.up);
}

TEST(LinkTrace, TimeScaleMultipliesEveryTime) {
  const std::string csv = "time_s,up\n0,1\n3600,0\n86400,1\n";
  const LinkTrace t = parse_link_trace(csv, "t.csv", 0.001);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].at, 0ns);
  EXPECT_EQ(t.rows[1].at, 3600ms);
  EXPECT_EQ(t.rows[2].at, 86400ms);
  EXPECT_EQ(t.rows[2].time_s, 86400);  // the file's figure, unscaled
  EXPECT_EQ(parse_link_trace(csv, "t.csv").rows[2].at, 24h);  // at the 24 h limit: accepted
  EXPECT_EQ(parse_link_trace("time_s,loss\n1.5,0\n", "t.csv", 3).rows[0].at, 4500ms);
}

TEST(LinkTrace, SomeColumnsAndWindowsLineEnds) {
  const LinkTrace t = parse_link_trace("time_s,rtt_ms\r\n0,40\r\n10,45\r\n", "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1].rtt_ms, 45.0);
  EXPECT_FALSE(t.rows[1].bandwidth_mbps.has_value());
  // The columns in any order.
  const LinkTrace u = parse_link_trace("up,time_s\n0,5\n", "t.csv");
  EXPECT_EQ(u.rows[0].time_s, 5);
  EXPECT_EQ(u.rows[0].up, false);
}

struct Bad {
  const char* what;
  const char* csv;
  const char* message;
  double time_scale = 1.0;
};

class BadTrace : public ::testing::TestWithParam<Bad> {};

TEST_P(BadTrace, FailsNamingFileLineColumnAndValue) {
  EXPECT_EQ(error_of(GetParam().csv, GetParam().time_scale), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    All, BadTrace,
    ::testing::Values(
        Bad{"missing time_s", "# c\nbandwidth_mbps,loss\n10,0\n",
            "t.csv:2: header: \"bandwidth_mbps,loss\": missing the time_s column (required)"},
        Bad{"unknown column", "time_s,bandwith_mbps\n0,10\n",
            "t.csv:1: column 2: \"bandwith_mbps\": unknown column (known: time_s, bandwidth_mbps, rtt_ms, loss, up)"},
        Bad{"empty column name", "time_s,,loss\n0,1,0\n",
            "t.csv:1: column 2: \"\": unknown column (known: time_s, bandwidth_mbps, rtt_ms, loss, up)"},
        Bad{"duplicate column", "time_s,loss,loss\n0,0,0\n", "t.csv:1: column 3: \"loss\": duplicate column (also column 2)"},
        Bad{"only time_s", "time_s\n0\n",
            "t.csv:1: header: \"time_s\": needs at least one of bandwidth_mbps, rtt_ms, loss, up beside time_s"},
        Bad{"too few cells", "time_s,bandwidth_mbps,loss\n0,10,0\n5,20\n",
            "t.csv:3: row: \"5,20\": 2 cells, the header (line 1) names 3 columns"},
        Bad{"too many cells", "time_s,loss\n0,0,1\n", "t.csv:2: row: \"0,0,1\": 3 cells, the header (line 1) names 2 columns"},
        Bad{"non-numeric time", "time_s,loss\nnoon,0\n", "t.csv:2: time_s: \"noon\": expected a number"},
        Bad{"non-numeric bandwidth", "time_s,bandwidth_mbps\n0,10Gbps\n", "t.csv:2: bandwidth_mbps: \"10Gbps\": expected a number"},
        Bad{"non-numeric rtt", "time_s,rtt_ms\n0,30ms\n", "t.csv:2: rtt_ms: \"30ms\": expected a number"},
        Bad{"percent loss", "time_s,loss\n0,1%\n", "t.csv:2: loss: \"1%\": expected a number"},
        Bad{"not finite", "time_s,loss\n0,nan\n", "t.csv:2: loss: \"nan\": expected a number"},
        Bad{"infinite bandwidth", "time_s,bandwidth_mbps\n0,inf\n", "t.csv:2: bandwidth_mbps: \"inf\": expected a number"},
        Bad{"empty time", "time_s,loss\n,0\n", "t.csv:2: time_s: \"\": required in every row"},
        Bad{"negative time", "time_s,loss\n-1,0\n", "t.csv:2: time_s: \"-1\": must be >= 0"},
        Bad{"time repeated", "time_s,loss\n0,0\n# c\n0,0.1\n",
            "t.csv:4: time_s: \"0\": must be after the previous row's (0 at line 2): times strictly increase"},
        Bad{"time going back", "time_s,loss\n0,0\n900,0\n450,0\n",
            "t.csv:4: time_s: \"450\": must be after the previous row's (900 at line 3): times strictly increase"},
        Bad{"past 24 h", "time_s,loss\n0,0\n86401,0\n",
            "t.csv:3: time_s: \"86401\": times time_scale 1 is 86401 s: must be at most 24h (86400 s)"},
        Bad{"past 24 h once scaled", "time_s,loss\n50000,0\n",
            "t.csv:2: time_s: \"50000\": times time_scale 2 is 100000 s: must be at most 24h (86400 s)", 2.0},
        Bad{"zero bandwidth", "time_s,bandwidth_mbps\n0,0\n", "t.csv:2: bandwidth_mbps: \"0\": must be > 0"},
        Bad{"negative bandwidth", "time_s,bandwidth_mbps\n0,-100\n", "t.csv:2: bandwidth_mbps: \"-100\": must be > 0"},
        Bad{"bandwidth above 10 Tbps", "time_s,bandwidth_mbps\n0,2e7\n",
            "t.csv:2: bandwidth_mbps: \"2e7\": must be between 0.001 and 10000000 (1kbps to 10Tbps)"},
        Bad{"loss above 1", "time_s,loss\n0,1.5\n", "t.csv:2: loss: \"1.5\": must be in [0, 1] (a probability)"},
        Bad{"negative loss", "time_s,loss\n0,-0.01\n", "t.csv:2: loss: \"-0.01\": must be in [0, 1] (a probability)"},
        Bad{"negative rtt", "time_s,rtt_ms\n0,-1\n", "t.csv:2: rtt_ms: \"-1\": must be >= 0"},
        Bad{"rtt above 10 s", "time_s,rtt_ms\n0,10001\n", "t.csv:2: rtt_ms: \"10001\": must be at most 10000 (10s)"},
        Bad{"bad up", "time_s,up\n0,yes\n", "t.csv:2: up: \"yes\": expected 0, 1, true or false"},
        Bad{"up 2", "time_s,up\n0,2\n", "t.csv:2: up: \"2\": expected 0, 1, true or false"},
        Bad{"no data rows", "# only a header\ntime_s,loss\n# nothing\n", "t.csv:2: no data rows after the header (at least one is needed)"},
        Bad{"no header", "# comments only\n\n",
            "t.csv: no header line (the first line that is not a comment names the columns: time_s, bandwidth_mbps, "
            "rtt_ms, loss, up)"},
        Bad{"empty file", "", "t.csv: no header line (the first line that is not a comment names the columns: time_s, "
                              "bandwidth_mbps, rtt_ms, loss, up)"},
        Bad{"zero time_scale", "time_s,loss\n0,0\n", "t.csv: time_scale 0: must be > 0", 0.0},
        Bad{"negative time_scale", "time_s,loss\n0,0\n", "t.csv: time_scale -1: must be > 0", -1.0}),
    [](const ::testing::TestParamInfo<Bad>& info) {
      std::string name;
      for (const char* c = info.param.what; *c; ++c) name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
      return name;
    });

TEST(LinkTrace, FileErrorsNameThePath) {
  const auto dir = std::filesystem::temp_directory_path() / ("geotb-link-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string missing = (dir / "missing.csv").string();
  try {
    read_link_trace(missing);
    ADD_FAILURE() << "no error";
  } catch (const LinkTraceError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot open (No such file or directory)");
  }
  const std::string bad = (dir / "bad.csv").string();
  std::ofstream(bad) << "# c\ntime_s,loss\n0,0\n10,2\n";
  try {
    read_link_trace(bad);
    ADD_FAILURE() << "no error";
  } catch (const LinkTraceError& e) {
    EXPECT_EQ(std::string(e.what()), bad + ":4: loss: \"2\": must be in [0, 1] (a probability)");
  }
  const std::string good = (dir / "good.csv").string();
  std::ofstream(good) << "time_s,up\n0,0\n5,1\n";
  std::string text;
  const LinkTrace t = read_link_trace(good, 2.0, &text);
  EXPECT_EQ(text, "time_s,up\n0,0\n5,1\n");  // the bytes, for the scenario's hash
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1].at, 10s);
  try {
    read_link_trace(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const LinkTraceError& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + ": cannot open (not a regular file)");
  }
  try {
    read_link_trace("/dev/zero");  // would never end
    ADD_FAILURE() << "no error";
  } catch (const LinkTraceError& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/zero: cannot open (not a regular file)");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
