// The JSON report of one `geotb exec` (schema "geotb.exec", schema_version 1): a user's command
// run once per rank inside its data center's namespace behind the DPDK emulator
// (docs/guide/exec.md). It shares the scenario summary and the context with the run report
// (model/report.h) and adds what a foreign job can be measured by from outside: every rank's exit
// and wall time, the emulator's counters per WAN link and direction, the timeline as applied, and
// the metrics the job printed itself as `GEOTB_METRIC {json object}` lines.
//
//   {"schema": "geotb.exec", "schema_version": 1, "scenario", "context", "command": [argv],
//    "ranks_per_dc", "world_size", "master_addr", "master_port", "run_as": {"uid", "gid"},
//    "status": "ok" | "failed" | "deadline", "wall_s",
//    "first_failure": null | {"rank", "dc", "exit_status", "signal", "message"},
//    "ranks": [{"rank", "dc", "local_rank", "exit_status", "signal", "stopped_by_geotb", "wall_s",
//               "log", "metrics": [objects]}],
//    "links": [{"from", "to", "frames", "bytes", "drops": {cause: count}, "changes_applied"}],
//    "timeline": {"origin_s": null | s, "scheduled", "applied",
//                 "changes": [{"at_s", "link": [a, b], "set": {...}}]}}
//
// One C++ type and one JSON mapping each; from_json is strict (FieldError naming the path).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/report.h"

namespace geotb::model {

inline constexpr const char* kExecSchema = "geotb.exec";
inline constexpr int kExecSchemaVersion = 1;
/// The prefix of a metric line a job prints on stdout or stderr: `GEOTB_METRIC {"step": 3, ...}`.
inline constexpr const char* kMetricPrefix = "GEOTB_METRIC ";

/// One direction of an emulated WAN link as geotb-emulate counted it.
struct LinkTraffic {
  std::string from, to;                   ///< data-center names
  uint64_t frames = 0;                    ///< frames forwarded on the link
  uint64_t bytes = 0;                     ///< their bytes at L2: Ethernet header + IP packet (no preamble, FCS, gap)
  std::map<std::string, uint64_t> drops;  ///< by cause (link_down, queue_bytes, queue_packets, loss, ...)
  uint64_t changes_applied = 0;           ///< timeline changes applied to this direction
};
void to_json(json& j, const LinkTraffic& l);
void from_json(const json& j, LinkTraffic& l);

/// A change of the scenario's timeline as scheduled for the emulator.
struct TimelineEntry {
  double at_s = 0;    ///< seconds after the timeline's origin
  std::string a, b;   ///< the link (both directions)
  json set = json::object();  ///< what changes, as the scenario says ({"up": false}, {"bandwidth": "100Mbps"}, ...)
};
void to_json(json& j, const TimelineEntry& t);
void from_json(const json& j, TimelineEntry& t);

struct ExecTimeline {
  /// Seconds from the data plane's start to the timeline's origin (the moment every rank had been
  /// started); null when it never started.
  std::optional<double> origin_s;
  uint64_t scheduled = 0;  ///< changes scheduled, counted per direction
  uint64_t applied = 0;    ///< of those, applied before the emulator stopped
  std::vector<TimelineEntry> changes;
};
void to_json(json& j, const ExecTimeline& t);
void from_json(const json& j, ExecTimeline& t);

/// One rank of the job.
struct ExecRank {
  int rank = 0, dc = 0, local_rank = 0;
  int exit_status = 0;           ///< exit code, or 128 + the signal that ended it
  int signal = 0;                ///< the signal that ended it, 0 if it exited
  bool stopped_by_geotb = false; ///< geotb stopped it (another rank failed, the deadline passed)
  double wall_s = 0;             ///< spawn to exit, seconds (exits collected every 20 ms)
  std::string log;               ///< its stdout and stderr
  std::vector<json> metrics;     ///< its GEOTB_METRIC lines' objects, in order
};
void to_json(json& j, const ExecRank& r);
void from_json(const json& j, ExecRank& r);

/// The rank that failed first.
struct ExecFailure {
  int rank = 0, dc = 0;
  int exit_status = 0, signal = 0;
  std::string message;  ///< "rank 2 (dc 1, west): exit status 3; log: ..."
};
void to_json(json& j, const ExecFailure& f);
void from_json(const json& j, ExecFailure& f);

struct ExecReport {
  std::string source;  ///< the file it was read from (or a label), for messages; not serialised
  ScenarioSummary scenario;
  ReportContext context;
  std::vector<std::string> command;
  int ranks_per_dc = 0, world_size = 0;
  std::string master_addr;
  int master_port = 0;
  std::optional<std::pair<int, int>> run_as;  ///< uid, gid the ranks ran as, if not geotb's own
  std::string status = "ok";                  ///< "ok", "failed" or "deadline"
  double wall_s = 0;                          ///< first spawn to last exit, seconds
  std::optional<ExecFailure> first_failure;
  std::vector<ExecRank> ranks;
  std::vector<LinkTraffic> links;
  ExecTimeline timeline;
};
void to_json(json& j, const ExecReport& r);
void from_json(const json& j, ExecReport& r);

/// Reads and parses an exec report; throws ReportError naming the file, the field and the value.
ExecReport load_exec_report(const std::string& path);
/// The "schema" of a report file ("geotb.report", "geotb.exec", ...); throws ReportError if the
/// file cannot be read or has none.
std::string report_schema_of(const std::string& path);

/// The object of a `GEOTB_METRIC {...}` line, or nullopt if the line is not one (no prefix, not a
/// JSON object).
std::optional<json> parse_metric_line(const std::string& line);

}  // namespace geotb::model
