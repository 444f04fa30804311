// What one worker measures while it trains: its time accounting and the inter-DC exchanges it
// logged. Plain structs without JSON (engine/strategy.h includes this header); their JSON forms
// are in model/report.h (ExchangeRecord, as the report's "exchanges") and model/rank_report.h
// (WorkerTimes, as a rank file's "times_ns").
#pragma once

#include <cstdint>

namespace geotb::model {

/// Per-worker time accounting, in nanoseconds, accumulated over the run.
struct WorkerTimes {
  uint64_t compute_ns = 0;          ///< forward, backward, optimizer
  uint64_t exposed_comm_ns = 0;     ///< waiting on communication (intra-DC or WAN)
  uint64_t compress_ns = 0;         ///< compression / decompression work on the critical path
  /// Background communication hidden under compute (the hierarchical strategies' WAN exchange,
  /// DDP's bucket allreduces behind the backward pass); DC leaders only.
  uint64_t overlapped_comm_ns = 0;
};

/// One inter-DC exchange, as seen by one DC leader. Its efficiency is
/// model::metrics::exchange_efficiency().
struct ExchangeRecord {
  int step = 0;              ///< step after which the round was compressed (-1: the final one)
  uint64_t bytes_sent = 0;   ///< this leader's message to each peer, bytes
  double seconds = 0;        ///< slowest peer message: arrival minus the peer's hand-off time
  double lower_bound_s = 0;  ///< S / B + RTT / 2, S the largest message of the exchange
  /// Round-trip propagation delay of the path the slowest message crossed (2 x its link's one-way
  /// delay), seconds; 0 = not recorded (reports written before it). seconds / rtt_s is the
  /// exchange's length in round trips (model::metrics::exchange_rtts()).
  double rtt_s = 0;
  /// "K": "auto" only (engine/strategies/adaptive_k.h): the K decided at this round, i.e. the
  /// steps until the next one; 0 = a fixed K (not recorded).
  int K = 0;
};

}  // namespace geotb::model
