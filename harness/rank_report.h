// The file each `geotb worker` process writes (--out): its RankReport as JSON, or the error that
// ended it. `geotb run --net process|dpdk` reads one per rank and merges them
// (engine::merge_rank_reports) into the same StrategyResult the embedded mode produces.
//
//   {"schema": "geotb.rank", "schema_version": 1, "strategy", "rank", "dc", "local_rank",
//    "status": "ok" | "failed",
//    failed: "error": {"type": "PeerDeadError" | "AuthError" | "FrameError" | "TransportError" |
//                      "CollectiveError" | "StoreError" | "ConfigError" | "Error", "message"}
//    ok:     "times_ns": {"compute", "exposed_comm", "compress", "overlapped_comm"},
//            "loss": [per step], "step_end_s": [rank 0], "exchanges": [{"step", "bytes_sent",
//            "seconds", "lower_bound_s"}], "wan_sent": {"messages", "payload_bytes", "wire_bytes"},
//            "wall_s", "accuracy_curve": [{"step", "samples", "accuracy"}] (rank 0),
//            "replica_max_abs_diff"}
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/result.h"

namespace geotb::harness {

inline constexpr int kRankReportSchemaVersion = 1;

struct RankError {
  std::string type;     ///< the exception's type, e.g. "PeerDeadError"
  std::string message;
};

nlohmann::json rank_report_json(const std::string& strategy, const engine::RankReport& r);
nlohmann::json rank_error_json(const std::string& strategy, int rank, int dc, int local_rank, const RankError& e);

/// Parses a rank file. Returns true and fills `out` for status "ok"; false and fills `err` for
/// "failed". Throws std::runtime_error naming the field on a malformed file.
bool parse_rank_report(const nlohmann::json& j, engine::RankReport& out, RankError& err);

/// Writes through a temporary file and a rename (a reader never sees half a file).
void write_json_atomically(const nlohmann::json& j, const std::string& path);

}  // namespace geotb::harness
