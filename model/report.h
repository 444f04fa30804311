// The JSON report of one `geotb run` (schema "geotb.report", schema_version 1; JSON Schema:
// harness/report.schema.json): the scenario summary, the run's context, every strategy's metrics,
// series and exchange log, the comparison against the baseline strategy and the failures.
// Each type has ONE JSON mapping, to_json/from_json beside it: the writer (harness/report.cc),
// the gate (harness/check.cc) and the renderers (summary table, Markdown, HTML) all use it.
// from_json validates strictly and throws FieldError naming the field path and the value;
// parse_report()/load_report() turn that into a ReportError naming the file as well.
// Every derived figure (ratios, efficiencies, per-step means) is defined in model/metrics.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/asynchrony.h"
#include "model/faults.h"
#include "model/hardware.h"
#include "model/represented.h"
#include "model/measurements.h"
#include "model/report_error.h"

namespace geotb::model {

using nlohmann::json;

inline constexpr const char* kReportSchema = "geotb.report";
inline constexpr int kReportSchemaVersion = 1;

/// One point of the test-accuracy curve: {"step", "samples", "accuracy"}.
struct AccuracyPoint {
  int step = 0;          ///< steps done
  uint64_t samples = 0;  ///< cluster samples processed by then
  double accuracy = 0;   ///< rank 0's replica on the test set, in [0, 1]
};
void to_json(json& j, const AccuracyPoint& p);
void from_json(const json& j, AccuracyPoint& p);

/// ExchangeRecord (model/measurements.h) in a report or rank file: {"step", "bytes",
/// "seconds", "lower_bound_s", "efficiency", "rtt_s", "rtts"}; "rtt_s" and "rtts" (= seconds / rtt_s, the
/// round trips the exchange took) only when rtt_s was recorded (absent in older reports); "efficiency" is written as
/// metrics::exchange_efficiency() and only validated (>= 0) on reading.
void to_json(json& j, const ExchangeRecord& e);
void from_json(const json& j, ExchangeRecord& e);

/// Time to accuracy ("time_to_accuracy"): the first point of the accuracy curve at or above the
/// scenario's workload.target_accuracy (metrics::time_to_accuracy()). step/samples/seconds are
/// null when the run never reached it. Resolution: the curve's spacing (workload.eval_points).
struct TimeToAccuracy {
  double target = 0;               ///< in (0, 1]
  std::optional<int> step;         ///< steps done at that point
  std::optional<uint64_t> samples; ///< cluster samples by then
  std::optional<double> seconds;   ///< the run's clock: step_end_s of that step (wall_s for the final point)
};
void to_json(json& j, const TimeToAccuracy& t);
void from_json(const json& j, TimeToAccuracy& t);

/// A strategy's figures ("metrics"). Definitions: docs/guide/reports.md; the derived ones
/// (samples_per_s, the per-step means, comm_compute_ratio, exchange_efficiency_mean,
/// exchange_seconds_mean) are
/// computed by model/metrics.h when the run is merged.
struct StrategyMetrics {
  uint64_t samples = 0;                   ///< training samples processed, whole cluster (>= 1)
  double wall_s = 0;                      ///< first step start -> every replica final, seconds
  double samples_per_s = 0;               ///< samples / wall_s (> 0)
  double compute_s_per_step = 0;          ///< mean over workers, seconds
  double exposed_comm_s_per_step = 0;     ///< mean over workers, seconds
  double overlapped_comm_s_per_step = 0;  ///< mean over DC leaders, seconds
  double compress_s_per_step = 0;         ///< mean over workers, seconds
  double comm_compute_ratio = 0;          ///< exposed comm / compute
  uint64_t wan_payload_bytes = 0;         ///< message bytes between data centers
  uint64_t wan_wire_bytes = 0;            ///< the same with headers and retransmissions
  uint64_t wan_messages = 0;
  uint64_t wan_retransmissions = 0;
  uint64_t exchanges = 0;                          ///< inter-DC exchanges (rounds incl. the final one)
  std::optional<double> exchange_efficiency_mean;  ///< null when the run logged no exchange
  /// Mean seconds of one logged inter-DC exchange: the inner value is null when the run logged no
  /// exchange; the outer is absent in reports written before this figure (read and written back
  /// as absent). A new run always has it.
  std::optional<std::optional<double>> exchange_seconds_mean;
  double final_test_accuracy = 0;                  ///< in [0, 1]
  double replica_max_abs_diff = 0;                 ///< max |x_rank - x_0| after finish (0 = identical)
  /// Seconds the strategy's run took on the host's clock, when the report's clock is virtual
  /// (every other time figure is then virtual).
  std::optional<double> host_wall_s;
  /// How the virtual-time scheduler ran the strategy on the host (emulator/inproc/virtual_time.h):
  /// its actors ("fibers" or "threads") and what it did. Host cost, not a figure of the run: with
  /// fibers the counts are a function of the scenario, with threads of the host's interleaving.
  /// Absent on the wall clock and in older reports.
  struct HostScheduler {
    std::string actors;
    uint64_t reevaluations = 0, readiness_checks = 0, network_events = 0, wakeups = 0;
    bool operator==(const HostScheduler&) const = default;
  };
  std::optional<HostScheduler> host_scheduler;
  /// WAN payload bytes of the final dense synchronisation (the hierarchical strategies; 0 for the
  /// others): wan_payload_bytes minus this is the per-round traffic. Absent in older reports.
  std::optional<uint64_t> wan_final_sync_bytes;
  /// comm_compute_ratio > metrics::kCommComputeAlarm (0.1): set by metrics::derive(); absent in
  /// older reports.
  std::optional<bool> comm_compute_alarm;
  /// Absent when the scenario sets no workload.target_accuracy (and in older reports).
  std::optional<TimeToAccuracy> time_to_accuracy;
};
void to_json(json& j, const StrategyMetrics& m);
void from_json(const json& j, StrategyMetrics& m);

/// A strategy's series ("series"): one loss and one step-end time per step, the accuracy curve.
struct StrategySeries {
  std::vector<double> loss;                  ///< per step, mean over workers
  std::vector<double> step_end_s;            ///< per step, rank 0's seconds since the first step started
  std::vector<AccuracyPoint> test_accuracy;  ///< the last point is the final model
};
void to_json(json& j, const StrategySeries& s);
void from_json(const json& j, StrategySeries& s);

/// One seed's figures of a strategy (`geotb run --seeds N`; "seeds" entries).
struct SeedResult {
  uint64_t seed = 0;
  double samples_per_s = 0;
  uint64_t wan_payload_bytes = 0;
  double final_test_accuracy = 0;
  double comm_compute_ratio = 0;
  std::optional<TimeToAccuracy> time_to_accuracy;
};
void to_json(json& j, const SeedResult& r);
void from_json(const json& j, SeedResult& r);

/// Mean and sample standard deviation (n - 1; 0 for n = 1) of one figure over seeds.
struct Spread {
  int n = 0;
  double mean = 0;
  double sd = 0;
};
void to_json(json& j, const Spread& s);

/// The seeds of a strategy summarised ("seed_summary", written by to_json(StrategyRun) from
/// metrics::seed_summary(); validated, not read back).
struct SeedSummary {
  int seeds = 0;
  Spread final_test_accuracy, samples_per_s, wan_payload_bytes;
  /// Over the seeds that reached the target (n says how many); absent without a target.
  std::optional<Spread> time_to_accuracy_s, samples_to_accuracy;
};


/// dpdk mode: the data plane that carried a strategy's WAN traffic, from geotb-emulate's report:
/// how the kernel scheduled its poller and its stalls (loop iterations longer than 1 ms, from one
/// poll to the next less the sleep the loop asked for; common/stalls.h). JSON:
/// {"scheduling", "stalls", "stall_total_s", "max_iteration_s", "run_s", "stall_share",
/// "stalls_ok"}; the last two are derived (metrics::stall_share, metrics::stalls_ok), validated on
/// reading and recomputed on writing.
struct DataPlaneSummary {
  std::string scheduling;      ///< as the poller read it back, e.g. "SCHED_FIFO 50, pinned to CPU 1"
  uint64_t stalls = 0;         ///< loop iterations longer than 1 ms
  double stall_total_s = 0;    ///< their summed length, seconds
  double max_iteration_s = 0;  ///< the longest loop iteration, seconds
  double run_s = 0;            ///< the data plane's polling time, seconds
};
void to_json(json& j, const DataPlaneSummary& d);
void from_json(const json& j, DataPlaneSummary& d);


/// A run continued from a checkpoint (`geotb run --resume`, docs/guide/checkpoints.md):
/// {"step", "checkpoint"}: the steps it had done and its directory. The run's figures and
/// series still cover every step (the saved part came with the checkpoint).
struct ResumedFrom {
  int step = 0;            ///< >= 1
  std::string checkpoint;  ///< the checkpoint's step directory
};
void to_json(json& j, const ResumedFrom& r);
void from_json(const json& j, ResumedFrom& r);

/// One strategy of a run: {"name", "config", "metrics", "series", "exchanges"}; with `--seeds N`,
/// "seeds" (N entries, the first the run above) and "seed_summary"; in dpdk mode "dataplane";
/// A quorum of sites ("quorum": engine/faults/quorum.h): a change of the sites a round runs with.
struct QuorumDecision {
  int round = 0;            ///< the first round (0-based) with these sites
  int step = 0;             ///< the step (0-based) that round follows
  std::vector<int> sites;   ///< data center indices, ascending
  double at_s = 0;          ///< when it was decided, seconds since the strategy's start
};
struct QuorumSection {
  double timeout_s = 0;                  ///< a link down this long separates its sites
  std::vector<QuorumDecision> decisions;  ///< the first decision and every change, in round order
};
void to_json(json& j, const QuorumSection& q);
void from_json(const json& j, QuorumSection& q);

/// resumed from a checkpoint, "resumed_from"; "final_weights_sha256".
struct StrategyRun {
  std::string name;
  json config = json::object();  ///< the strategy's parameters (harness strategy_config_json())
  StrategyMetrics metrics;
  StrategySeries series;
  std::vector<ExchangeRecord> exchanges;  ///< per round: the slowest DC leader's view (docs/guide/reports.md)
  std::vector<SeedResult> seeds;          ///< empty: one seed (not written)
  std::optional<DataPlaneSummary> dataplane;  ///< dpdk mode only
  std::optional<ResumedFrom> resumed_from;    ///< absent: the run started at step 0
  /// SHA-256 of rank 0's final parameters (float32 bytes): equal hashes, bit-identical models
  /// (a resumed run against an uninterrupted one). Absent in older reports.
  std::optional<std::string> final_weights_sha256;
  /// Node faults injected and detected (model/faults.h); absent when the scenario has none.
  std::optional<FaultsSection> faults;
  /// Process and dpdk modes: incoming connections the ranks' transports refused before a
  /// handshake completed (wrong or no secret, garbage), summed over the ranks. Absent in the
  /// embedded mode and in older reports.
  std::optional<uint64_t> refused_connections;
  /// An asynchronous strategy's staleness, waits and divergence (model/asynchrony.h); absent for
  /// the synchronous ones.
  std::optional<AsyncSection> asynchrony;
  /// hier_ef_topk_int8 / hierarchical with "quorum": the membership service's decisions (every
  /// change of the sites a round runs with); absent otherwise.
  std::optional<QuorumSection> quorum;
};
void to_json(json& j, const StrategyRun& s);
void from_json(const json& j, StrategyRun& s);

struct DatacenterSummary {
  std::string name;
  int workers = 0;
};
void to_json(json& j, const DatacenterSummary& d);
void from_json(const json& j, DatacenterSummary& d);

/// The b -> a direction of a WAN link ("reverse"); absent in reports before asymmetric links.
struct WanReverse {
  double bandwidth_bps = 0;
  double loss_rate = 0;
};
void to_json(json& j, const WanReverse& r);
void from_json(const json& j, WanReverse& r);

struct WanLinkSummary {
  std::string a, b;          ///< "between"
  double bandwidth_bps = 0;  ///< a -> b, bits per second
  double rtt_s = 0;          ///< seconds
  double loss_rate = 0;      ///< a -> b, stationary loss probability
  std::optional<WanReverse> reverse;
  /// The scenario timeline's bandwidth changes of this link (both directions), in time order:
  /// {seconds from the start of training, bits per second}. Empty: none (or an older report).
  std::vector<std::pair<double, double>> bandwidth_changes;
};
void to_json(json& j, const WanLinkSummary& w);
void from_json(const json& j, WanLinkSummary& w);

struct WorkloadSummary {
  std::string model, dataset;
  int batch_per_worker = 0;
  int steps = 0;
  std::optional<double> target_accuracy;  ///< time-to-accuracy target, absent if the scenario sets none
  std::optional<int> eval_points;         ///< points of the accuracy curve; absent in older reports
  /// A non-IID workload.partition as the scenario gave it ({"kind": "dirichlet", ...}); absent for
  /// "iid" (and in older reports).
  std::optional<json> partition;
  /// With `partition`: every data center's training examples per class (10 counts), by name.
  std::map<std::string, std::vector<uint64_t>> label_histogram_by_dc;
  /// workload.dc_weights as the scenario gave it ("workers" or "examples"); absent if not given.
  std::optional<std::string> dc_weights;
  /// Every data center's weight in the means over DCs, by name, when they differ (unequal
  /// workers or examples); absent when every DC weighs the same.
  std::map<std::string, double> dc_weight_by_dc;
  /// workload.global_batch with what it cost: {"fraction", "beta", "pool", "pool_examples",
  /// "pool_examples_per_step" (per worker), "pool_staging_wan_bytes"}; absent when off.
  std::optional<json> global_batch;
};
void to_json(json& j, const WorkloadSummary& w);
void from_json(const json& j, WorkloadSummary& w);

/// Tolerances of `geotb check` (the scenario's "check"); the defaults are those of
/// docs/guide/scenario.md.
struct CheckTolerances {
  // Ratio gating (a baseline whose compute figures move with the host: measured CPU or wall clock).
  double throughput_ratio = 0.15;  ///< relative: 0.15 allows a ratio down to 85 % of the baseline's
  double wan_bytes_ratio = 0.05;   ///< relative: 0.05 allows a WAN ratio up to 105 % of the baseline's
  /// Absolute, in accuracy units (0.01 = one percentage point), both modes. Absent: the mode's
  /// default (kRatioAccuracy; kAbsoluteAccuracy, i.e. identical to 4 decimals).
  std::optional<double> accuracy;
  // Absolute gating (a baseline on the virtual clock with a declared compute profile).
  std::optional<double> timing;  ///< relative, samples/s and exposed comm per step; absent: kAbsoluteTiming
  std::optional<double> bytes;   ///< relative, WAN payload bytes; absent: kAbsoluteBytes
  /// Absolute, in accuracy units: the accuracy tolerance when the baseline's CPU arithmetic differs
  /// from the run's or is unrecorded (CpuContext), if larger than `accuracy`; absent: kCrossCpuAccuracy.
  std::optional<double> cross_cpu_accuracy;
  static constexpr double kRatioAccuracy = 0.01;
  static constexpr double kCrossCpuAccuracy = 0.01;
  static constexpr double kAbsoluteAccuracy = 0.0;
  static constexpr double kAbsoluteTiming = 0.005;
  static constexpr double kAbsoluteBytes = 0.005;
};
void to_json(json& j, const CheckTolerances& t);
void from_json(const json& j, CheckTolerances& t);

/// The report's "scenario": what was run.
struct ScenarioSummary {
  std::string name, description, file;
  std::string hash;     ///< SHA-256 of the scenario file, hex
  uint64_t seed = 0;
  std::string network;  ///< "embedded", "process" or "dpdk"
  std::optional<std::string> tcp_congestion_control;
  std::vector<DatacenterSummary> datacenters;
  std::vector<WanLinkSummary> wan;
  WorkloadSummary workload;
  std::optional<CheckTolerances> check;
};
void to_json(json& j, const ScenarioSummary& s);
void from_json(const json& j, ScenarioSummary& s);

/// Why a report is a committed baseline (`geotb check --update --reason`): "baseline" at the top
/// of a baseline file; absent in a plain run report.
struct BaselineRecord {
  std::string reason;      ///< the --reason given, non-empty
  std::string updated_at;  ///< UTC, ISO 8601
  std::string from;        ///< the run report it was made from (path as given)
};
void to_json(json& j, const BaselineRecord& b);
void from_json(const json& j, BaselineRecord& b);

/// Where a calibrated compute profile (scenario `compute.calibrated`) was measured.
struct CalibrationSource {
  std::string file;         ///< as the scenario names it
  std::string device;       ///< the calibrate output's device name ("NVIDIA H200")
  std::string measured_at;  ///< its UTC time
  bool operator==(const CalibrationSource&) const = default;
};
void to_json(json& j, const CalibrationSource& c);
void from_json(const json& j, CalibrationSource& c);

/// The accelerator the training ran on (scenario workload.device other than "cpu"): engine/model/calibrate.h.
struct DeviceContext {
  std::string device;              ///< "cuda:0"
  std::string name;                ///< "NVIDIA H200"
  uint64_t memory_bytes = 0;
  std::string compute_capability;  ///< "9.0"
  uint64_t multiprocessors = 0;
  std::string driver;              ///< NVIDIA kernel module version; empty if unreadable
  std::string cuda;                ///< CUDA version of the linked libtorch
  std::string torch;               ///< libtorch version
  bool operator==(const DeviceContext&) const = default;
};
void to_json(json& j, const DeviceContext& d);
void from_json(const json& j, DeviceContext& d);

/// The host's CPU and the CPU kernels its libraries picked for it. Two runs of one scenario whose
/// CpuContexts are equal trained with the same arithmetic (the same instructions in the same
/// order); between different ones a trained accuracy moves in the 4th decimal, because OpenBLAS
/// (libtorch's GEMM) and ATen choose their vector kernels by CPU (docs/guide/gate.md "Across CPUs").
struct CpuContext {
  std::string model;      ///< /proc/cpuinfo "model name"
  std::string features;   ///< the vector extensions present, of sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512dq
  std::string blas;       ///< OpenBLAS's core for this CPU ("Zen", "Haswell", "SkylakeX"); "" if not OpenBLAS
  std::string onednn_isa; ///< oneDNN's effective ISA ("avx2", "avx512_core", or its code "0x..."); "" if absent
  std::string aten_cpu_capability;  ///< the ATEN_CPU_CAPABILITY environment variable, "" if unset
  bool operator==(const CpuContext&) const = default;
};
void to_json(json& j, const CpuContext& c);
void from_json(const json& j, CpuContext& c);
/// "AMD EPYC 7B13 (OpenBLAS Zen, oneDNN avx2)", plus ", ATEN_CPU_CAPABILITY=..." when set.
std::string describe_cpu(const CpuContext& c);

/// The report's "context": where and how it ran.
struct ReportContext {
  std::string git_revision = "unknown", build_type, geotb_version, host;
  std::optional<uint64_t> hardware_threads;
  std::string started_at;  ///< UTC, ISO 8601
  std::vector<std::string> argv;
  std::map<std::string, std::string> libraries;  ///< name -> version
  /// dpdk mode: the TCP congestion control the DC namespaces ran with (read back).
  std::optional<std::string> dc_tcp_congestion_control;
  /// The clock every time figure of the report is in: "virtual" (the embedded mode's virtual
  /// time, docs/guide/clocks.md) or "wall" (the host's). Absent in reports older than the clock.
  std::optional<std::string> clock;
  /// "analytic" when the intra-DC collectives' times were computed as one event each (scenario
  /// `lan.collectives`, docs/guide/scale.md) instead of Gloo's ring message by message; absent:
  /// message by message.
  std::optional<std::string> lan_collectives;
  /// The compute profile the virtual clock charged instead of CPU time, if the scenario had one
  /// and every data center ran it.
  struct ComputeProfile {
    double step_time_s = 0;
    double reduce_ns_per_element = 0;
    double compress_ns_per_element = 0;
    /// When the profile was derived from the hardware (scenario `compute.gpu`, model/hardware.h):
    /// the formula and every input. Absent for a declared step_time.
    std::optional<ComputeDerivation> derived;
    /// When it came from a `geotb calibrate` output (scenario `compute.calibrated`).
    std::optional<CalibrationSource> calibrated;

    bool operator==(const ComputeProfile&) const = default;
  };
  std::optional<ComputeProfile> compute_profile;
  /// When the data centers ran different profiles (scenario `datacenters[i].compute`): each DC's,
  /// by name, and `compute_profile` is absent.
  std::map<std::string, ComputeProfile> compute_profile_by_dc;
  /// The represented model (scenario workload.represents, docs/guide/represented.md): the
  /// timing, WAN bytes and samples are its; the accuracy is the trained proxy's. Absent: the
  /// trained model is what the figures describe.
  std::optional<RepresentedModel> represented_model;
  /// Where forward and backward ran when not on the CPU (workload.device); absent on the CPU.
  std::optional<DeviceContext> device;
  /// The CPU the run's arithmetic ran on; absent in reports older than it.
  std::optional<CpuContext> cpu;
  /// Whether a compute profile (common or per DC) produced the compute figures.
  bool profiled() const { return compute_profile.has_value() || !compute_profile_by_dc.empty(); }
  /// Whether a profile (common or of some DC) was derived from the hardware.
  /// Whether a profile was derived from the hardware or calibrated: the run's summary then says how.
  bool derived() const {
    if (compute_profile) return compute_profile->derived.has_value() || compute_profile->calibrated.has_value();
    for (const auto& [dc, p] : compute_profile_by_dc)
      if (p.derived || p.calibrated) return true;
    return false;
  }
};
void to_json(json& j, const ReportContext& c);
void from_json(const json& j, ReportContext& c);

/// Which clock produced a report's time figures and what its compute was, in words (the summary
/// table, `geotb compare`'s Markdown and HTML): "wall clock ...", "virtual clock, compute =
/// measured thread CPU time ...", "virtual clock, declared compute: step 12 ms, ..." or "virtual
/// clock, compute derived from the hardware: 6 x ... = 497 ms per step, ...", per DC when the DCs
/// differ.
std::string describe_clock(const ReportContext& c);
/// What the figures describe, in words: "represents llama3-70b (70.55 G parameters, ...): timing,
/// WAN bytes and samples are its; accuracy is the trained proxy's (50,890 parameters)", or "" when
/// the trained model is what is represented.
std::string describe_represented(const ReportContext& c);
/// samples/s as the compare tables print it: whole numbers from 100 on, 3 significant digits
/// below (a represented 70B model does well under one sample per second), then, for a represented
/// language model, its tokens/s: "0.47 (3854 tokens/s)".
std::string throughput_text(const ReportContext& c, double samples_per_s);
/// A samples/s figure alone, as throughput_text starts: "{:.0f}" from 100 on, else "{:.3g}".
std::string format_rate(double samples_per_s);
/// " (proxy)" after an accuracy when a represented model's run produced it, else "".
inline std::string accuracy_note(const ReportContext& c) { return c.represented_model ? " (proxy)" : ""; }
/// describe_clock, then describe_represented if there is a represented model ("; " between).
std::string describe_figures(const ReportContext& c);

/// One strategy against the baseline strategy and the `lan` reference of the same run
/// (metrics::compare()). A figure is absent when its reference did not run.
struct StrategyComparison {
  std::optional<double> throughput_ratio, wan_bytes_ratio, accuracy_delta, fraction_of_lan_throughput;
};
void to_json(json& j, const StrategyComparison& c);
void from_json(const json& j, StrategyComparison& c);

struct Comparison {
  std::optional<std::string> baseline;  ///< null when the baseline strategy did not run
  std::map<std::string, StrategyComparison> strategies;
};
void to_json(json& j, const Comparison& c);
void from_json(const json& j, Comparison& c);

/// A strategy that did not complete, and why.
struct Failure {
  std::string strategy, error;
};
void to_json(json& j, const Failure& f);
void from_json(const json& j, Failure& f);

/// A whole `geotb run` report.
struct RunReport {
  std::string source;  ///< the file it was read from (or a label), for messages; not serialised
  ScenarioSummary scenario;
  ReportContext context;
  std::vector<StrategyRun> strategies;  ///< names unique
  Comparison comparison;
  std::vector<Failure> failures;
  std::optional<BaselineRecord> baseline;  ///< only in a baseline file

  const StrategyRun* find(std::string_view strategy) const;
  const Failure* failure_of(std::string_view strategy) const;
};
void to_json(json& j, const RunReport& r);
void from_json(const json& j, RunReport& r);

/// from_json with ReportError("source: path: detail") for an invalid report.
RunReport parse_report(const json& j, const std::string& source);
/// Reads and parses a report file; throws ReportError (unreadable, not JSON, not a report).
RunReport load_report(const std::string& path);

}  // namespace geotb::model
