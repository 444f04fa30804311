// The report's "asynchrony" section of an asynchronous strategy (async_ef_topk_int8,
// docs/guide/strategies.md): per site, the staleness of the updates it applied and the time it
// waited at the staleness bound; and how far the sites' models were apart over the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/measurements.h"

namespace geotb::model {

using json = nlohmann::json;

struct AsyncSection {
  std::optional<int> max_staleness;  ///< the bound, rounds; absent (null): none
  std::string staleness_weight;      ///< f(s) as text
  /// How the replicas meet at the end (the final synchronous average), in words.
  std::string final_sync;
  struct Site {
    int dc = 0;
    int steps = 0;                                  ///< steps it ran
    int rounds = 0;                                 ///< rounds it sent
    std::vector<uint64_t> staleness_histogram;      ///< updates applied, by staleness s (index s)
    int max_staleness_observed = 0;                 ///< the largest s with a count (0: none applied)
    double wait_at_bound_s = 0;                     ///< blocked until the slowest site was within the bound
    std::vector<double> round_s;                    ///< when each of its rounds was applied (s from the start)
  };
  std::vector<Site> sites;
  /// The sites' models apart at instant t_s (from the strategy's start): each site's model is the one
  /// it held after its last round by then. max_abs_diff: the largest element difference between two
  /// sites; relative_l2: max over sites of ||x_d - mean|| / ||mean||. 0 at the start (one initial
  /// model); the final average makes every replica identical after the last point.
  struct Divergence {
    double t_s = 0;
    double max_abs_diff = 0;
    double relative_l2 = 0;
  };
  std::vector<Divergence> divergence;
};
void to_json(json& j, const AsyncSection& a);
void from_json(const json& j, AsyncSection& a);

/// The section from every site's log (one per site, any order). The divergence is evaluated at
/// the instants of every site's snapshots, thinned evenly to at most 2 * kMaxAsyncSnapshots
/// points; instants before every site has a snapshot are skipped.
AsyncSection summarize_async(std::vector<AsyncSiteLog> sites, const std::string& final_sync);

}  // namespace geotb::model
