// The only definition of every derived figure of a run (docs/guide/reports.md). The merge of the
// ranks' measurements (engine merge_rank_reports), the report writer, the gate (`geotb check`),
// the summary table and the Markdown and HTML renderers call these; nobody else divides.
// Each function states its zero case: a figure whose reference is zero is 0 (the report's
// convention), except where it returns std::nullopt ("not defined").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/measurements.h"
#include "model/exec_report.h"
#include "model/report.h"

namespace geotb::model::metrics {

/// The strategy every ratio of a run is taken against by default, and the same-DC reference.
inline constexpr const char* kDefaultBaseline = "naive_ddp";
inline constexpr const char* kLanReference = "lan";

/// The comm/compute ratio above which a strategy is flagged (the strategy guide's threshold):
/// its exposed communication costs more than a tenth of its compute.
inline constexpr double kCommComputeAlarm = 0.1;

/// comm_compute_ratio > kCommComputeAlarm.
bool comm_compute_alarm(double comm_compute_ratio);

/// The first point of run.series.test_accuracy with accuracy >= target: its step and samples,
/// and its time on the run's clock (step_end_s of that step; wall_s for the final point, which is
/// taken after the final synchronisation). Not reached: step, samples and seconds null.
TimeToAccuracy time_to_accuracy(const StrategyRun& run, double target);

/// One seed's figures from a finished run of that seed (its metrics derived, time to accuracy set).
SeedResult seed_result(const StrategyRun& run, uint64_t seed);

/// Mean and sample standard deviation (n - 1) of `v`; n = 0: zeros.
Spread spread(const std::vector<double>& v);

/// The seeds summarised: spread of final accuracy, samples/s and WAN bytes over every seed; of
/// time and samples to accuracy over the seeds that reached the target (absent without one).
/// nullopt for an empty list.
std::optional<SeedSummary> seed_summary(const std::vector<SeedResult>& seeds);

/// samples / wall_s; 0 when wall_s <= 0.
double samples_per_s(uint64_t samples, double wall_s);

/// Training samples of the whole cluster per step: samples / steps (samples when steps == 0).
double samples_per_step(uint64_t samples, size_t steps);
double samples_per_step(const StrategyRun& s);

/// Mean seconds per step and per participant of a total in nanoseconds:
/// total_ns * 1e-9 / (participants * max(steps, 1)).
double per_step_mean_s(double total_ns, int participants, int steps);

/// exposed comm / compute (per step); 0 when compute is 0.
double comm_compute_ratio(double exposed_comm_s, double compute_s);

/// lower_bound_s / seconds of one exchange: 1 = as fast as S/B + RTT/2; 0 when seconds <= 0.
double exchange_efficiency(const ExchangeRecord& e);
/// seconds / rtt_s of one exchange: how many round trips it took; 0 when rtt_s is not recorded.
double exchange_rtts(const ExchangeRecord& e);
/// Mean exchange_efficiency over the log; nullopt for an empty log.
std::optional<double> exchange_efficiency_mean(const std::vector<ExchangeRecord>& log);
/// Mean seconds of one inter-DC exchange (ExchangeRecord::seconds) over the log; nullopt for an
/// empty log.
std::optional<double> exchange_seconds_mean(const std::vector<ExchangeRecord>& log);

/// dpdk mode: the share of its run the data plane spent stalled, stall_total_s / run_s (0 when
/// run_s is 0), and its verdict: share <= 1 % (common/stalls.h, the fidelity suite's
/// threshold).
double stall_share(const DataPlaneSummary& d);
bool stalls_ok(const DataPlaneSummary& d);

/// Fills the derived figures of a strategy's metrics from its raw ones: samples_per_s (from
/// samples, wall_s), comm_compute_ratio (from the per-step means), exchange_efficiency_mean and
/// exchange_seconds_mean (from run.exchanges), comm_compute_alarm. The per-step means themselves need the ranks' raw totals: the merge
/// (engine merge_rank_reports) sets them with per_step_mean_s() before calling this.
void derive(StrategyRun& run);

/// samples_per_s(s) / samples_per_s(reference); 0 when the reference's is 0.
double throughput_ratio(const StrategyMetrics& s, const StrategyMetrics& reference);
/// wan_payload_bytes(s) / wan_payload_bytes(reference); 0 when the reference sent nothing.
double wan_bytes_ratio(const StrategyMetrics& s, const StrategyMetrics& reference);
/// final_test_accuracy(s) - final_test_accuracy(reference), in accuracy units.
double accuracy_delta(const StrategyMetrics& s, const StrategyMetrics& reference);
/// samples_per_s(s) / samples_per_s(lan): the fraction of same-DC throughput.
double fraction_of_lan_throughput(const StrategyMetrics& s, const StrategyMetrics& lan);

/// The report's "comparison": every strategy against `baseline` (throughput ratio, WAN bytes
/// ratio, accuracy delta; absent when the baseline did not run) and against kLanReference
/// (fraction of lan throughput; absent when lan did not run).
Comparison compare(const std::vector<StrategyRun>& runs, const std::string& baseline = kDefaultBaseline);

/// Mean seconds per step of a strategy: wall_s / its steps (the length of its loss series); 0
/// without a step.
double mean_step_s(const StrategyRun& s);
/// Seconds each step took: the differences of series.step_end_s (the first from 0).
std::vector<double> step_durations_s(const StrategyRun& s);

/// The job metric `geotb compare` sets beside the strategies' step times (docs/guide/exec.md).
inline constexpr const char* kJobStepMetric = "step_time_s";
/// One metric of an exec'd job, from rank `rank`'s GEOTB_METRIC objects that hold it as a number:
/// (x, value) with x = the object's "step" when it has a numeric one, else its 1-based position
/// among those objects.
std::vector<std::pair<double, double>> job_metric_series(const ExecReport& r, const std::string& key, int rank = 0);
/// The mean of those values; nullopt when there is none.
std::optional<double> job_metric_mean(const ExecReport& r, const std::string& key, int rank = 0);

}  // namespace geotb::model::metrics
