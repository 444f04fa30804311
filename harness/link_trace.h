// Link traces: a CSV file of link settings over time, replayed as a scenario's link changes
// (a timeline entry {"trace": "traces/x.csv", "link": [a, b], "time_scale": 0.001}; the format is
// documented in docs/guide/scenario.md and docs/guide/wan-model.md). Plain structs, no JSON and no
// engine: harness/scenario.cc turns each row into a model::ScheduledChange.
//
//   # comment lines start with '#' (provenance)
//   time_s,bandwidth_mbps,rtt_ms,loss,up
//   0,10000,30,0,1
//   900,9500,,,          <- an empty cell leaves that setting unchanged
//
// Every error names the file, the 1-based line, the column and the value:
// `traces/x.csv:7: loss: "1.5": must be in [0, 1]`.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace geotb::harness {

/// A bad trace file (the scenario parser prefixes the timeline entry's field path).
class LinkTraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One data row: the settings it gives (an empty cell: nullopt, unchanged).
struct LinkTraceRow {
  int line = 0;                        ///< 1-based line in the file
  double time_s = 0;                   ///< the `time_s` cell, unscaled
  std::chrono::nanoseconds at{0};      ///< time_s * time_scale, rounded to the nearest ns
  std::optional<double> bandwidth_mbps;
  std::optional<double> rtt_ms;
  std::optional<double> loss;          ///< a probability in [0, 1]
  std::optional<bool> up;
};

struct LinkTrace {
  std::vector<std::string> columns;  ///< the header's, in file order
  std::vector<LinkTraceRow> rows;    ///< at least one, strictly increasing time_s
};

/// The columns a trace may have: `time_s` (required) and at least one of the others.
inline constexpr const char* kLinkTraceColumns[] = {"time_s", "bandwidth_mbps", "rtt_ms", "loss", "up"};

/// The latest time a row may land at after scaling: a link change's `at` limit (24 h).
inline constexpr std::chrono::hours kLinkTraceMaxAt{24};
/// The largest trace file read (a day at one row a second is about 3 MB).
inline constexpr std::uintmax_t kLinkTraceMaxBytes = std::uintmax_t{64} << 20;

/// Parses a trace's text; `origin` (the file's path) starts every error message. time_scale
/// (> 0) multiplies every time_s into the row's `at`. Throws LinkTraceError.
LinkTrace parse_link_trace(std::string_view text, const std::string& origin, double time_scale = 1.0);

/// Reads and parses the file at `path` (errors name `path`; a file that cannot be opened:
/// "<path>: cannot open (<reason>)"). `text`, if given, receives the file's bytes.
LinkTrace read_link_trace(const std::string& path, double time_scale = 1.0, std::string* text = nullptr);

}  // namespace geotb::harness
