// The file each `geotb worker` process writes (--out): one rank's measurements, or the error
// that ended it. `geotb run --net process|dpdk` reads one per rank and merges them
// (engine::merge_rank_reports) into the StrategyRun the embedded mode produces from the same
// RankReport values kept in memory. One type, one JSON mapping:
//
//   {"schema": "geotb.rank", "schema_version": 1, "strategy", "rank", "dc", "local_rank",
//    "status": "ok" | "failed",
//    failed: "error": {"type": "PeerDeadError" | "AuthError" | "FrameError" | "TransportError" |
//                      "CollectiveError" | "StoreError" | "ConfigError" | "Error", "message"}
//    ok:     "times_ns": {"compute", "exposed_comm", "compress", "overlapped_comm"},
//            "loss": [per step], "step_end_s": [rank 0], "exchanges": [ExchangeRecord (report.h)],
//            "wan_sent": {"messages", "payload_bytes", "wire_bytes"}, "wall_s",
//            "accuracy_curve": [{"step", "samples", "accuracy"}] (rank 0), "replica_max_abs_diff",
//            "final_weights_sha256" (rank 0)}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/faults.h"
#include "model/measurements.h"
#include "model/report.h"

namespace geotb::model {

inline constexpr const char* kRankSchema = "geotb.rank";
inline constexpr int kRankSchemaVersion = 1;

/// "times_ns": {"compute", "exposed_comm", "compress", "overlapped_comm"}.
void to_json(json& j, const WorkerTimes& t);
void from_json(const json& j, WorkerTimes& t);

/// What one rank sent to ranks of other data centers.
struct WanSent {
  uint64_t messages = 0;
  uint64_t payload_bytes = 0;  ///< message bytes
  uint64_t wire_bytes = 0;     ///< with headers (and retransmissions where counted)
};
void to_json(json& j, const WanSent& w);
void from_json(const json& j, WanSent& w);

/// Why a rank stopped ("status": "failed").
struct RankFailure {
  std::string type;  ///< the exception's type, e.g. "PeerDeadError"
  std::string message;
};

/// One rank's measurements after a completed run, or its failure.
struct RankReport {
  std::string strategy;
  int rank = 0, dc = 0, local_rank = 0;
  std::optional<RankFailure> failure;  ///< set: the rank failed; the measurements below are empty
  WorkerTimes times;
  std::vector<double> loss;                  ///< per step
  std::vector<double> step_end_s;            ///< rank 0: per step, seconds since the start
  std::vector<ExchangeRecord> exchanges;     ///< DC leaders
  WanSent wan_sent;
  double wall_s = 0;                         ///< rank 0: its start -> every replica final (seconds)
  std::vector<AccuracyPoint> accuracy_curve; ///< rank 0 (the last point is the final model)
  double replica_max_abs_diff = 0;           ///< max |x_this - x_0| after the end
  /// rank 0: SHA-256 of its final parameters' bytes ("final_weights_sha256"; absent in older files).
  std::optional<std::string> final_weights_sha256;
  /// Incoming connections its transport refused before a handshake completed (a wrong or no
  /// secret, a bad HELLO, garbage): strangers at its port ("refused_connections"; absent in older
  /// files).
  std::optional<uint64_t> refused_connections;
  /// Node faults in the process modes ("faults"; absent without): what this rank saw of them.
  std::optional<RankFaultLog> faults;
  /// An asynchronous strategy's log of this rank's site (DC leaders; model/measurements.h). The
  /// embedded mode's only (such strategies run on its virtual clock): not in rank files.
  std::optional<AsyncSiteLog> async_log;
};
void to_json(json& j, const RankReport& r);
void from_json(const json& j, RankReport& r);

/// Reads a rank file; throws ReportError naming the file, the field and the value.
RankReport load_rank_report(const std::string& path);
/// Writes a rank file through a temporary file and a rename (a reader never sees half a file).
void save_rank_report(const RankReport& r, const std::string& path);

}  // namespace geotb::model
