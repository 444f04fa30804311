// What one worker measures while it trains: its time accounting and the inter-DC exchanges it
// logged. Plain structs without JSON (engine/strategy.h includes this header); their JSON forms
// are in model/report.h (ExchangeRecord, as the report's "exchanges") and model/rank_report.h
// (WorkerTimes, as a rank file's "times_ns").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
  /// How many peers this leader sent its message to; -1: every other DC. Set under a quorum of
  /// sites, whose rounds and final exchange run among the sites decided (result.cc counts the
  /// final synchronisation's WAN bytes with it). Not in reports.
  int peers = -1;
};

/// One site of an asynchronous strategy (engine/strategies/async_ef_topk_int8.cc), as its leader
/// logged it: what it applied, how long it waited for the staleness bound, and its model over
/// time. Summarised into the report's "asynchrony" section (model/asynchrony.h).
struct AsyncSiteLog {
  int dc = 0;
  int max_staleness = -1;             ///< the bound, rounds; -1: none
  std::string staleness_weight;       ///< f(s), as the report shows it ("1/(1+s)^1", "s <= 2")
  int steps = 0;                      ///< steps the site ran
  int rounds = 0;                     ///< rounds it sent
  std::vector<uint64_t> staleness;    ///< the peers' updates it applied, by staleness s (index s)
  double wait_at_bound_s = 0;         ///< time blocked until the slowest site was within the bound
  double start_s = 0;                 ///< the strategy's start on the clock (s): the origin of the instants below
  std::vector<double> round_s;        ///< when each of its rounds was applied (s from start_s)
  /// The site's model at the start, after each of its rounds (thinned to at most
  /// kMaxAsyncSnapshots, evenly) and before the final average, with its instants (s from start_s).
  std::vector<double> snapshot_s;
  std::vector<std::vector<float>> snapshots;
};
inline constexpr size_t kMaxAsyncSnapshots = 64;

}  // namespace geotb::model
