#include "engine/result.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/strategies/table.h"
#include "model/metrics.h"

namespace geotb::engine {

namespace {
constexpr const char* kAsyncFinalSync =
    "after its last round each site applies every update still on its way, then the sites average their "
    "models once, densely in float32 (weighted as the DCs weigh); every replica ends identical";
}  // namespace

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

std::vector<AccuracyPoint> accuracy_curve(Learner& learner, const WorkerRecord& rec, const WorkloadSpec& work,
                                          int world, const Dataset& test) {
  const size_t n = learner.num_params();
  const uint64_t per_step = work.step_samples() * static_cast<uint64_t>(world);
  const double final_acc = learner.accuracy(test);
  std::vector<AccuracyPoint> out;
  std::vector<float> final_x(learner.params(), learner.params() + n);
  for (size_t k = 0; k < rec.snapshots.size(); ++k) {
    if (rec.snapshots[k].size() != n || rec.snapshot_steps[k] == 0) continue;
    std::memcpy(learner.params(), rec.snapshots[k].data(), n * sizeof(float));
    out.push_back({rec.snapshot_steps[k], static_cast<uint64_t>(rec.snapshot_steps[k]) * per_step, learner.accuracy(test)});
  }
  std::memcpy(learner.params(), final_x.data(), n * sizeof(float));
  out.push_back({work.steps, static_cast<uint64_t>(work.steps) * per_step, final_acc});
  return out;
}

model::StrategyRun merge_rank_reports(const std::string& strategy, const std::vector<RankReport>& reports,
                                  const WorkloadSpec& work, int dcs) {
  const int P = static_cast<int>(reports.size());
  const int steps = work.steps;
  if (P == 0 || dcs < 1 || P < dcs) throw RunError(strategy + ": " + std::to_string(P) + " rank reports for " + std::to_string(dcs) + " data centers");
  // An asynchronous strategy's faster sites may run past `steps` (Strategy::runs_past): their
  // extra steps count as samples; the series cover the run's steps.
  const bool async = std::any_of(reports.begin(), reports.end(), [](const RankReport& e) { return e.async_log.has_value(); });
  for (int r = 0; r < P; ++r) {
    const RankReport& rr = reports[static_cast<size_t>(r)];
    if (rr.rank != r) throw RunError(strategy + ": report " + std::to_string(r) + " is rank " + std::to_string(rr.rank) + "'s");
    if (async ? rr.loss.size() < static_cast<size_t>(steps) : rr.loss.size() != static_cast<size_t>(steps))
      throw RunError(strategy + ": rank " + std::to_string(r) + " reported " + std::to_string(rr.loss.size()) + " losses for " +
                     std::to_string(steps) + " steps");
  }
  const RankReport& r0 = reports[0];
  if ((async ? r0.step_end_s.size() < static_cast<size_t>(steps) : r0.step_end_s.size() != static_cast<size_t>(steps)) ||
      r0.accuracy_curve.empty())
    throw RunError(strategy + ": rank 0 reported " + std::to_string(r0.step_end_s.size()) + " step times and " +
                   std::to_string(r0.accuracy_curve.size()) + " accuracy points");
  const StrategyInfo& info = find_strategy(strategy).needs;
  const uint64_t B = work.step_samples();
  namespace mx = model::metrics;

  model::StrategyRun res;
  res.name = strategy;
  model::StrategyMetrics& m = res.metrics;
  // Samples whose gradient was computed: every rank's steps, less those a killed worker did not
  // run (its loss is NaN there: node faults, engine/faults/fault_runtime.h).
  uint64_t rank_steps = 0;
  for (const auto& e : reports)
    for (double l : e.loss) rank_steps += std::isnan(l) ? 0 : 1;
  m.samples = rank_steps * B;
  m.wall_s = r0.wall_s;
  double comp = 0, comm = 0, cmpr = 0, over = 0;
  for (const auto& e : reports) {
    comp += static_cast<double>(e.times.compute_ns);
    comm += static_cast<double>(e.times.exposed_comm_ns);
    cmpr += static_cast<double>(e.times.compress_ns);
    over += static_cast<double>(e.times.overlapped_comm_ns);  // DC leaders only accumulate it
    m.wan_messages += e.wan_sent.messages;
    m.wan_payload_bytes += e.wan_sent.payload_bytes;
    m.wan_wire_bytes += e.wan_sent.wire_bytes;
    m.replica_max_abs_diff = std::max(m.replica_max_abs_diff, e.replica_max_abs_diff);
  }
  m.compute_s_per_step = mx::per_step_mean_s(comp, P, steps);
  m.exposed_comm_s_per_step = mx::per_step_mean_s(comm, P, steps);
  m.compress_s_per_step = mx::per_step_mean_s(cmpr, P, steps);
  m.overlapped_comm_s_per_step = mx::per_step_mean_s(over, dcs, steps);
  // Each DC's exchange log: its leaders' records in rank order (only a DC's leader records, and
  // after a leader's death its successor, a higher rank of the DC, carries the log on).
  std::vector<std::vector<ExchangeRecord>> dc_log(static_cast<size_t>(dcs));
  for (const auto& e : reports)
    if (e.dc >= 0 && e.dc < dcs)
      dc_log[static_cast<size_t>(e.dc)].insert(dc_log[static_cast<size_t>(e.dc)].end(), e.exchanges.begin(), e.exchanges.end());
  // A round's exchange is the slowest leader's view of it (every leader measures from the round's
  // last hand-off; the DC whose hand-off was last may have found everything already there).
  res.exchanges = dc_log[0];
  for (const auto& log : dc_log)
    if (log.size() == res.exchanges.size())
      for (size_t i = 0; i < res.exchanges.size(); ++i)
        if (log[i].step == res.exchanges[i].step && log[i].seconds > res.exchanges[i].seconds) {
          res.exchanges[i].seconds = log[i].seconds;
          res.exchanges[i].lower_bound_s = log[i].lower_bound_s;
        }
  // The final dense synchronisation: every DC leader's step -1 message, to each other DC (to each
  // other site of the final round under a quorum of sites).
  uint64_t final_sync = 0;
  for (const auto& log : dc_log)
    for (const auto& x : log)
      if (x.step == -1) final_sync += x.bytes_sent * static_cast<uint64_t>(x.peers >= 0 ? x.peers : dcs - 1);
  m.wan_final_sync_bytes = final_sync;
  m.exchanges = info.exchanges_every_step ? static_cast<uint64_t>(steps) : res.exchanges.size();
  res.series.loss.assign(static_cast<size_t>(steps), 0);
  for (int s = 0; s < steps; ++s) {
    double acc = 0;
    int ran = 0;  // the workers alive at that step
    for (int r = 0; r < P; ++r) {
      const double l = reports[static_cast<size_t>(r)].loss[static_cast<size_t>(s)];
      if (std::isnan(l)) continue;
      acc += l;
      ++ran;
    }
    res.series.loss[static_cast<size_t>(s)] = ran > 0 ? acc / ran : 0;
  }
  res.series.step_end_s = r0.step_end_s;
  res.series.step_end_s.resize(static_cast<size_t>(steps));
  res.series.test_accuracy = r0.accuracy_curve;
  res.final_weights_sha256 = r0.final_weights_sha256;
  m.final_test_accuracy = r0.accuracy_curve.back().accuracy;
  std::vector<model::AsyncSiteLog> logs;
  for (const auto& e : reports)
    if (e.async_log) logs.push_back(*e.async_log);
  if (async) {
    // Sites ran different numbers of steps: the per-step means are per worker-step run.
    const double worker_steps = static_cast<double>(rank_steps);
    m.compute_s_per_step = mx::per_step_mean_s(comp, 1, 1) / std::max(worker_steps, 1.0);
    m.exposed_comm_s_per_step = mx::per_step_mean_s(comm, 1, 1) / std::max(worker_steps, 1.0);
    m.compress_s_per_step = mx::per_step_mean_s(cmpr, 1, 1) / std::max(worker_steps, 1.0);
    res.asynchrony = model::summarize_async(std::move(logs), kAsyncFinalSync);
    // The final point is the final model after every site's steps: the samples are those run.
    res.series.test_accuracy.back().samples = m.samples;
  }
  mx::derive(res);
  return res;
}

}  // namespace geotb::engine
