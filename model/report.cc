#include "model/report.h"

#include <fmt/format.h>

#include "model/json_fields.h"
#include "model/json_file.h"
#include "model/metrics.h"

namespace geotb::model {

namespace f = field;

// ---- series points and exchanges ----

void to_json(json& j, const AccuracyPoint& p) {
  j = {{"step", p.step}, {"samples", p.samples}, {"accuracy", p.accuracy}};
}

void from_json(const json& j, AccuracyPoint& p) {
  p.step = static_cast<int>(f::integer(j, "step"));
  p.samples = f::count(j, "samples");
  p.accuracy = f::number(j, "accuracy");
  if (!(p.accuracy >= 0 && p.accuracy <= 1)) f::fail("accuracy", fmt::format("must be in [0, 1], got {}", p.accuracy));
}

void to_json(json& j, const ExchangeRecord& e) {
  j = {{"step", e.step},
       {"bytes", e.bytes_sent},
       {"seconds", e.seconds},
       {"lower_bound_s", e.lower_bound_s},
       {"efficiency", metrics::exchange_efficiency(e)}};
  if (e.rtt_s > 0) {
    j["rtt_s"] = e.rtt_s;
    j["rtts"] = metrics::exchange_rtts(e);
  }
  if (e.K > 0) j["K"] = e.K;
}

void from_json(const json& j, ExchangeRecord& e) {
  e.step = static_cast<int>(f::integer(j, "step"));
  e.bytes_sent = f::count(j, "bytes");
  e.seconds = f::nonneg(j, "seconds");
  e.lower_bound_s = f::nonneg(j, "lower_bound_s");
  f::nonneg(j, "efficiency");  // derived: validated, recomputed on writing
  if (f::has(j, "rtt_s")) {      // absent in reports written before it
    e.rtt_s = f::nonneg(j, "rtt_s");
    f::nonneg(j, "rtts");        // derived
  }
  if (f::has(j, "K")) {  // adaptive K only
    const uint64_t k = f::count(j, "K");
    if (k < 1 || k > 100000) f::fail("K", std::to_string(k) + ": must be in [1, 100000]");
    e.K = static_cast<int>(k);
  }
}

// ---- one strategy ----

void to_json(json& j, const TimeToAccuracy& t) {
  j = {{"target", t.target},
       {"step", t.step ? json(*t.step) : json(nullptr)},
       {"samples", t.samples ? json(*t.samples) : json(nullptr)},
       {"seconds", t.seconds ? json(*t.seconds) : json(nullptr)}};
}

void from_json(const json& j, TimeToAccuracy& t) {
  t.target = f::number(j, "target");
  if (!(t.target > 0 && t.target <= 1)) f::fail("target", fmt::format("must be in (0, 1], got {}", t.target));
  const bool s = !f::req(j, "step").is_null(), n = !f::req(j, "samples").is_null(),
             sec = !f::req(j, "seconds").is_null();
  if (s != n || s != sec) f::fail("step", "step, samples and seconds must be all null (not reached) or all set");
  t.step.reset();
  t.samples.reset();
  t.seconds.reset();
  if (!s) return;
  t.step = static_cast<int>(f::integer(j, "step"));
  t.samples = f::count(j, "samples");
  t.seconds = f::nonneg(j, "seconds");
}

void to_json(json& j, const SeedResult& r) {
  j = {{"seed", r.seed},
       {"samples_per_s", r.samples_per_s},
       {"wan_payload_bytes", r.wan_payload_bytes},
       {"final_test_accuracy", r.final_test_accuracy},
       {"comm_compute_ratio", r.comm_compute_ratio}};
  if (r.time_to_accuracy) j["time_to_accuracy"] = *r.time_to_accuracy;
}

void from_json(const json& j, SeedResult& r) {
  r.seed = f::count(j, "seed");
  r.samples_per_s = f::nonneg(j, "samples_per_s");
  r.wan_payload_bytes = f::count(j, "wan_payload_bytes");
  r.final_test_accuracy = f::number(j, "final_test_accuracy");
  if (!(r.final_test_accuracy >= 0 && r.final_test_accuracy <= 1))
    f::fail("final_test_accuracy", fmt::format("must be in [0, 1], got {}", r.final_test_accuracy));
  r.comm_compute_ratio = f::nonneg(j, "comm_compute_ratio");
  r.time_to_accuracy.reset();
  if (f::has(j, "time_to_accuracy")) f::get(j, "time_to_accuracy", r.time_to_accuracy.emplace());
}

void to_json(json& j, const Spread& s) { j = {{"n", s.n}, {"mean", s.mean}, {"sd", s.sd}}; }

void to_json(json& j, const StrategyMetrics& m) {
  j = {{"samples", m.samples},
       {"wall_s", m.wall_s},
       {"samples_per_s", m.samples_per_s},
       {"compute_s_per_step", m.compute_s_per_step},
       {"exposed_comm_s_per_step", m.exposed_comm_s_per_step},
       {"overlapped_comm_s_per_step", m.overlapped_comm_s_per_step},
       {"compress_s_per_step", m.compress_s_per_step},
       {"comm_compute_ratio", m.comm_compute_ratio},
       {"wan_payload_bytes", m.wan_payload_bytes},
       {"wan_wire_bytes", m.wan_wire_bytes},
       {"wan_messages", m.wan_messages},
       {"wan_retransmissions", m.wan_retransmissions},
       {"exchanges", m.exchanges},
       {"exchange_efficiency_mean", m.exchange_efficiency_mean ? json(*m.exchange_efficiency_mean) : json(nullptr)},
       {"final_test_accuracy", m.final_test_accuracy},
       {"replica_max_abs_diff", m.replica_max_abs_diff}};
  if (m.exchange_seconds_mean)
    j["exchange_seconds_mean"] = *m.exchange_seconds_mean ? json(**m.exchange_seconds_mean) : json(nullptr);
  if (m.host_wall_s) j["host_wall_s"] = *m.host_wall_s;
  if (m.host_scheduler)
    j["host_scheduler"] = {{"actors", m.host_scheduler->actors},
                           {"reevaluations", m.host_scheduler->reevaluations},
                           {"readiness_checks", m.host_scheduler->readiness_checks},
                           {"network_events", m.host_scheduler->network_events},
                           {"wakeups", m.host_scheduler->wakeups}};
  if (m.wan_final_sync_bytes) j["wan_final_sync_bytes"] = *m.wan_final_sync_bytes;
  if (m.comm_compute_alarm) j["comm_compute_alarm"] = *m.comm_compute_alarm;
  if (m.time_to_accuracy) j["time_to_accuracy"] = *m.time_to_accuracy;
}

void from_json(const json& j, StrategyMetrics& m) {
  const int64_t samples = f::integer(j, "samples");
  if (samples < 1) f::fail("samples", fmt::format("must be >= 1, got {}", samples));
  m.samples = static_cast<uint64_t>(samples);
  m.wall_s = f::nonneg(j, "wall_s");
  m.samples_per_s = f::number(j, "samples_per_s");
  if (!(m.samples_per_s > 0)) f::fail("samples_per_s", fmt::format("must be > 0, got {}", m.samples_per_s));
  m.compute_s_per_step = f::nonneg(j, "compute_s_per_step");
  m.exposed_comm_s_per_step = f::nonneg(j, "exposed_comm_s_per_step");
  m.overlapped_comm_s_per_step = f::nonneg(j, "overlapped_comm_s_per_step");
  m.compress_s_per_step = f::nonneg(j, "compress_s_per_step");
  m.comm_compute_ratio = f::nonneg(j, "comm_compute_ratio");
  m.wan_payload_bytes = f::count(j, "wan_payload_bytes");
  m.wan_wire_bytes = f::count(j, "wan_wire_bytes");
  m.wan_messages = f::count(j, "wan_messages");
  m.wan_retransmissions = f::count(j, "wan_retransmissions");
  m.exchanges = f::count(j, "exchanges");
  m.exchange_efficiency_mean.reset();
  if (!f::req(j, "exchange_efficiency_mean").is_null()) m.exchange_efficiency_mean = f::nonneg(j, "exchange_efficiency_mean");
  m.exchange_seconds_mean.reset();
  if (f::has(j, "exchange_seconds_mean")) {
    std::optional<double>& v = m.exchange_seconds_mean.emplace();
    if (!j.at("exchange_seconds_mean").is_null()) v = f::nonneg(j, "exchange_seconds_mean");
  }
  m.final_test_accuracy = f::number(j, "final_test_accuracy");
  if (!(m.final_test_accuracy >= 0 && m.final_test_accuracy <= 1))
    f::fail("final_test_accuracy", fmt::format("must be in [0, 1], got {}", m.final_test_accuracy));
  m.replica_max_abs_diff = f::nonneg(j, "replica_max_abs_diff");
  m.host_wall_s.reset();
  if (f::has(j, "host_wall_s")) m.host_wall_s = f::nonneg(j, "host_wall_s");
  m.host_scheduler.reset();
  if (f::has(j, "host_scheduler")) {
    const json& h = f::object(j, "host_scheduler");
    StrategyMetrics::HostScheduler hs;
    hs.actors = f::str(h, "actors");
    if (hs.actors != "fibers" && hs.actors != "threads")
      f::fail("host_scheduler.actors", fmt::format("expected \"fibers\" or \"threads\", got {}", f::shown(h.at("actors"))));
    hs.reevaluations = f::count(h, "reevaluations");
    hs.readiness_checks = f::count(h, "readiness_checks");
    hs.network_events = f::count(h, "network_events");
    hs.wakeups = f::count(h, "wakeups");
    m.host_scheduler = hs;
  }
  m.wan_final_sync_bytes.reset();
  if (f::has(j, "wan_final_sync_bytes")) {
    m.wan_final_sync_bytes = f::count(j, "wan_final_sync_bytes");
    if (*m.wan_final_sync_bytes > m.wan_payload_bytes)
      f::fail("wan_final_sync_bytes", fmt::format("{} exceeds wan_payload_bytes {}", *m.wan_final_sync_bytes,
                                                  m.wan_payload_bytes));
  }
  m.comm_compute_alarm.reset();
  if (f::has(j, "comm_compute_alarm")) m.comm_compute_alarm = f::boolean(j, "comm_compute_alarm");
  m.time_to_accuracy.reset();
  if (f::has(j, "time_to_accuracy")) f::get(j, "time_to_accuracy", m.time_to_accuracy.emplace());
}

void to_json(json& j, const StrategySeries& s) {
  j = {{"loss", s.loss}, {"step_end_s", s.step_end_s}, {"test_accuracy", s.test_accuracy}};
}

void from_json(const json& j, StrategySeries& s) {
  s.loss = f::numbers(j, "loss");
  s.step_end_s = f::numbers(j, "step_end_s");
  if (s.loss.size() != s.step_end_s.size())
    f::fail("step_end_s",
            fmt::format("has {} entries but loss has {} (one per step each)", s.step_end_s.size(), s.loss.size()));
  f::list(j, "test_accuracy", s.test_accuracy);
}

void to_json(json& j, const DataPlaneSummary& d) {
  j = {{"scheduling", d.scheduling},
       {"stalls", d.stalls},
       {"stall_total_s", d.stall_total_s},
       {"max_iteration_s", d.max_iteration_s},
       {"run_s", d.run_s},
       {"stall_share", metrics::stall_share(d)},
       {"stalls_ok", metrics::stalls_ok(d)}};
}

void from_json(const json& j, DataPlaneSummary& d) {
  d.scheduling = f::str(j, "scheduling");
  d.stalls = f::count(j, "stalls");
  d.stall_total_s = f::nonneg(j, "stall_total_s");
  d.max_iteration_s = f::nonneg(j, "max_iteration_s");
  d.run_s = f::nonneg(j, "run_s");
  f::nonneg(j, "stall_share");  // derived: validated, recomputed on writing
  f::boolean(j, "stalls_ok");  // derived: validated, recomputed on writing
}

void to_json(json& j, const ResumedFrom& r) { j = {{"step", r.step}, {"checkpoint", r.checkpoint}}; }

void from_json(const json& j, ResumedFrom& r) {
  const int64_t step = f::integer(j, "step");
  if (step < 1 || step > 1000000000) f::fail("step", fmt::format("{}: must be in [1, 1000000000]", step));
  r.step = static_cast<int>(step);
  r.checkpoint = f::str(j, "checkpoint");
  if (r.checkpoint.empty()) f::fail("checkpoint", "must not be empty");
}

void to_json(json& j, const QuorumSection& q) {
  json d = json::array();
  for (const QuorumDecision& x : q.decisions)
    d.push_back({{"round", x.round}, {"step", x.step}, {"sites", x.sites}, {"at_s", x.at_s}});
  j = {{"timeout_s", q.timeout_s}, {"decisions", d}};
}

void from_json(const json& j, QuorumSection& q) {
  q.timeout_s = f::nonneg(j, "timeout_s");
  q.decisions.clear();
  for (const json& x : f::array(j, "decisions")) {
    QuorumDecision d;
    d.round = static_cast<int>(f::count(x, "round"));
    d.step = static_cast<int>(f::count(x, "step"));
    d.sites = f::req(x, "sites").get<std::vector<int>>();
    d.at_s = f::nonneg(x, "at_s");
    q.decisions.push_back(d);
  }
}

void to_json(json& j, const StrategyRun& s) {
  j = {{"name", s.name}, {"config", s.config}, {"metrics", s.metrics}, {"series", s.series}, {"exchanges", s.exchanges}};
  if (s.dataplane) j["dataplane"] = *s.dataplane;
  if (s.resumed_from) j["resumed_from"] = *s.resumed_from;
  if (s.final_weights_sha256) j["final_weights_sha256"] = *s.final_weights_sha256;
  if (s.faults) j["faults"] = *s.faults;
  if (s.refused_connections) j["refused_connections"] = *s.refused_connections;
  if (s.asynchrony) j["asynchrony"] = *s.asynchrony;
  if (s.quorum) j["quorum"] = *s.quorum;
  if (s.seeds.empty()) return;
  j["seeds"] = s.seeds;
  const SeedSummary sum = *metrics::seed_summary(s.seeds);
  json js = {{"seeds", sum.seeds},
             {"final_test_accuracy", sum.final_test_accuracy},
             {"samples_per_s", sum.samples_per_s},
             {"wan_payload_bytes", sum.wan_payload_bytes}};
  if (sum.time_to_accuracy_s) js["time_to_accuracy_s"] = *sum.time_to_accuracy_s;
  if (sum.samples_to_accuracy) js["samples_to_accuracy"] = *sum.samples_to_accuracy;
  j["seed_summary"] = js;
}

void from_json(const json& j, StrategyRun& s) {
  s.name = f::str(j, "name");
  if (s.name.empty()) f::fail("name", "must not be empty");
  s.config = f::has(j, "config") ? f::object(j, "config") : json::object();
  f::get(j, "metrics", s.metrics);
  f::get(j, "series", s.series);
  f::list(j, "exchanges", s.exchanges);
  s.seeds.clear();
  if (f::has(j, "seeds")) {
    f::list(j, "seeds", s.seeds);
    if (s.seeds.empty()) f::fail("seeds", "must not be empty when present");
    f::object(j, "seed_summary");  // derived: validated, recomputed on writing
  }
  s.dataplane.reset();
  if (f::has(j, "dataplane")) {
    DataPlaneSummary d;
    f::get(j, "dataplane", d);
    s.dataplane = d;
  }
  s.resumed_from.reset();
  if (f::has(j, "resumed_from")) f::get(j, "resumed_from", s.resumed_from.emplace());
  s.final_weights_sha256.reset();
  if (f::has(j, "final_weights_sha256")) s.final_weights_sha256 = f::sha256_hex(j, "final_weights_sha256");
  s.refused_connections.reset();
  if (f::has(j, "refused_connections")) s.refused_connections = f::count(j, "refused_connections");
  s.faults.reset();
  if (f::has(j, "faults")) {
    FaultsSection fs;
    f::get(j, "faults", fs);
    s.faults = std::move(fs);
  }
  s.asynchrony.reset();
  if (f::has(j, "asynchrony")) f::get(j, "asynchrony", s.asynchrony.emplace());
  s.quorum.reset();
  if (f::has(j, "quorum")) f::get(j, "quorum", s.quorum.emplace());
}

// ---- scenario and context ----

void to_json(json& j, const DatacenterSummary& d) { j = {{"name", d.name}, {"workers", d.workers}}; }

void from_json(const json& j, DatacenterSummary& d) {
  d.name = f::str(j, "name");
  d.workers = static_cast<int>(f::integer(j, "workers"));
}

void to_json(json& j, const WanReverse& r) { j = {{"bandwidth_bps", r.bandwidth_bps}, {"loss_rate", r.loss_rate}}; }

void from_json(const json& j, WanReverse& r) {
  r.bandwidth_bps = f::nonneg(j, "bandwidth_bps");
  r.loss_rate = f::nonneg(j, "loss_rate");
}

void to_json(json& j, const WanLinkSummary& w) {
  j = {{"between", {w.a, w.b}}, {"bandwidth_bps", w.bandwidth_bps}, {"rtt_s", w.rtt_s}, {"loss_rate", w.loss_rate}};
  if (w.reverse) j["reverse"] = *w.reverse;
  if (!w.bandwidth_changes.empty()) {
    json c = json::array();
    for (const auto& [at, bps] : w.bandwidth_changes) c.push_back({{"at_s", at}, {"bandwidth_bps", bps}});
    j["bandwidth_changes"] = c;
  }
}

void from_json(const json& j, WanLinkSummary& w) {
  const json& b = f::array(j, "between");
  if (b.size() != 2 || !b[0].is_string() || !b[1].is_string())
    f::fail("between", fmt::format("expected two data center names, got {}", f::shown(b)));
  w.a = b[0].get<std::string>();
  w.b = b[1].get<std::string>();
  w.bandwidth_bps = f::nonneg(j, "bandwidth_bps");
  w.rtt_s = f::nonneg(j, "rtt_s");
  w.loss_rate = f::nonneg(j, "loss_rate");
  w.reverse.reset();
  if (f::has(j, "reverse")) f::get(j, "reverse", w.reverse.emplace());
  w.bandwidth_changes.clear();
  if (f::has(j, "bandwidth_changes"))
    for (const json& c : f::array(j, "bandwidth_changes"))
      w.bandwidth_changes.emplace_back(f::nonneg(c, "at_s"), f::nonneg(c, "bandwidth_bps"));
}

void to_json(json& j, const WorkloadSummary& w) {
  j = {{"model", w.model}, {"dataset", w.dataset}, {"batch_per_worker", w.batch_per_worker}, {"steps", w.steps}};
  if (w.target_accuracy) j["target_accuracy"] = *w.target_accuracy;
  if (w.eval_points) j["eval_points"] = *w.eval_points;
  if (w.partition) j["partition"] = *w.partition;
  if (!w.label_histogram_by_dc.empty()) j["label_histogram_by_dc"] = w.label_histogram_by_dc;
  if (w.dc_weights) j["dc_weights"] = *w.dc_weights;
  if (!w.dc_weight_by_dc.empty()) j["dc_weight_by_dc"] = w.dc_weight_by_dc;
  if (w.global_batch) j["global_batch"] = *w.global_batch;
}

void from_json(const json& j, WorkloadSummary& w) {
  w.model = f::str(j, "model");
  w.dataset = f::str(j, "dataset");
  w.batch_per_worker = static_cast<int>(f::count(j, "batch_per_worker"));
  w.steps = static_cast<int>(f::count(j, "steps"));
  w.target_accuracy.reset();
  if (f::has(j, "target_accuracy")) {
    w.target_accuracy = f::number(j, "target_accuracy");
    if (!(*w.target_accuracy > 0 && *w.target_accuracy <= 1))
      f::fail("target_accuracy", fmt::format("must be in (0, 1], got {}", *w.target_accuracy));
  }
  w.eval_points.reset();
  if (f::has(j, "eval_points")) w.eval_points = static_cast<int>(f::count(j, "eval_points"));
  w.partition.reset();
  if (f::has(j, "partition")) w.partition = f::object(j, "partition");
  w.label_histogram_by_dc.clear();
  if (f::has(j, "label_histogram_by_dc")) {
    const json& h = f::object(j, "label_histogram_by_dc");
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (!it.value().is_array()) f::fail("label_histogram_by_dc." + it.key(), "expected a list of counts");
      std::vector<uint64_t> counts;
      for (const json& c : it.value()) {
        if (!c.is_number_integer() || c.get<int64_t>() < 0)
          f::fail("label_histogram_by_dc." + it.key(), "expected counts >= 0, got " + c.dump());
        counts.push_back(c.get<uint64_t>());
      }
      w.label_histogram_by_dc[it.key()] = counts;
    }
  }
  w.dc_weights.reset();
  if (f::has(j, "dc_weights")) w.dc_weights = f::str(j, "dc_weights");
  w.dc_weight_by_dc.clear();
  if (f::has(j, "dc_weight_by_dc")) {
    const json& h = f::object(j, "dc_weight_by_dc");
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (!it.value().is_number() || !(it.value().get<double>() > 0 && it.value().get<double>() <= 1))
        f::fail("dc_weight_by_dc." + it.key(), "expected a weight in (0, 1], got " + it.value().dump());
      w.dc_weight_by_dc[it.key()] = it.value().get<double>();
    }
  }
  w.global_batch.reset();
  if (f::has(j, "global_batch")) w.global_batch = f::object(j, "global_batch");
}

void to_json(json& j, const CheckTolerances& t) {
  j = {{"throughput_ratio_tolerance", t.throughput_ratio}, {"wan_bytes_ratio_tolerance", t.wan_bytes_ratio}};
  if (t.accuracy) j["accuracy_tolerance"] = *t.accuracy;
  if (t.timing) j["timing_tolerance"] = *t.timing;
  if (t.bytes) j["bytes_tolerance"] = *t.bytes;
  if (t.cross_cpu_accuracy) j["cross_cpu_accuracy_tolerance"] = *t.cross_cpu_accuracy;
}

void from_json(const json& j, CheckTolerances& t) {
  t.throughput_ratio = f::nonneg(j, "throughput_ratio_tolerance");
  t.wan_bytes_ratio = f::nonneg(j, "wan_bytes_ratio_tolerance");
  auto opt = [&](const char* key) { return f::has(j, key) ? std::optional<double>(f::nonneg(j, key)) : std::nullopt; };
  t.accuracy = opt("accuracy_tolerance");
  t.timing = opt("timing_tolerance");
  t.bytes = opt("bytes_tolerance");
  t.cross_cpu_accuracy = opt("cross_cpu_accuracy_tolerance");
}

void to_json(json& j, const BaselineRecord& b) {
  j = {{"reason", b.reason}, {"updated_at", b.updated_at}, {"from", b.from}};
}

void from_json(const json& j, BaselineRecord& b) {
  b.reason = f::str(j, "reason");
  if (b.reason.empty()) f::fail("reason", "must not be empty");
  b.updated_at = f::str(j, "updated_at");
  b.from = f::str(j, "from");
}

void to_json(json& j, const ScenarioSummary& s) {
  j = {{"name", s.name},       {"description", s.description}, {"file", s.file},
       {"hash", s.hash},       {"seed", s.seed},               {"network", s.network},
       {"datacenters", s.datacenters}, {"wan", s.wan},         {"workload", s.workload}};
  if (s.tcp_congestion_control) j["tcp_congestion_control"] = *s.tcp_congestion_control;
  if (s.check) j["check"] = *s.check;
}

void from_json(const json& j, ScenarioSummary& s) {
  s.name = f::str(j, "name");
  s.description = f::has(j, "description") ? f::str(j, "description") : "";
  s.file = f::has(j, "file") ? f::str(j, "file") : "";
  s.hash = f::str(j, "hash");
  s.seed = f::count(j, "seed");
  s.network = f::has(j, "network") ? f::str(j, "network") : "";
  s.tcp_congestion_control.reset();
  if (f::has(j, "tcp_congestion_control")) s.tcp_congestion_control = f::str(j, "tcp_congestion_control");
  f::list(j, "datacenters", s.datacenters);
  f::list(j, "wan", s.wan);
  f::get(j, "workload", s.workload);
  s.check.reset();
  if (f::has(j, "check")) f::get(j, "check", s.check.emplace());
}

void to_json(json& j, const CalibrationSource& c) {
  j = {{"file", c.file}, {"device", c.device}, {"measured_at", c.measured_at}};
}

void from_json(const json& j, CalibrationSource& c) {
  c.file = f::str(j, "file");
  c.device = f::str(j, "device");
  c.measured_at = f::str(j, "measured_at");
}

void to_json(json& j, const DeviceContext& d) {
  j = {{"device", d.device}, {"name", d.name}, {"memory_bytes", d.memory_bytes},
       {"compute_capability", d.compute_capability}, {"multiprocessors", d.multiprocessors},
       {"driver", d.driver}, {"cuda", d.cuda}, {"torch", d.torch}};
}

void from_json(const json& j, DeviceContext& d) {
  d.device = f::str(j, "device");
  d.name = f::str(j, "name");
  d.memory_bytes = f::count(j, "memory_bytes");
  d.compute_capability = f::str(j, "compute_capability");
  d.multiprocessors = f::count(j, "multiprocessors");
  d.driver = f::str(j, "driver");
  d.cuda = f::str(j, "cuda");
  d.torch = f::str(j, "torch");
}

void to_json(json& j, const CpuContext& c) {
  j = {{"model", c.model}, {"features", c.features}, {"blas", c.blas}, {"onednn_isa", c.onednn_isa}};
  if (!c.aten_cpu_capability.empty()) j["aten_cpu_capability"] = c.aten_cpu_capability;
}

void from_json(const json& j, CpuContext& c) {
  c.model = f::str(j, "model");
  c.features = f::str(j, "features");
  c.blas = f::str(j, "blas");
  c.onednn_isa = f::str(j, "onednn_isa");
  c.aten_cpu_capability = f::has(j, "aten_cpu_capability") ? f::str(j, "aten_cpu_capability") : "";
}

std::string describe_cpu(const CpuContext& c) {
  std::string kernels = c.blas.empty() ? "BLAS not OpenBLAS" : "OpenBLAS " + c.blas;
  if (!c.onednn_isa.empty()) kernels += ", oneDNN " + c.onednn_isa;
  if (!c.aten_cpu_capability.empty()) kernels += ", ATEN_CPU_CAPABILITY=" + c.aten_cpu_capability;
  return fmt::format("{} ({})", c.model.empty() ? "an unnamed CPU" : c.model, kernels);
}

void to_json(json& j, const ReportContext& c) {
  j = {{"git_revision", c.git_revision},
       {"build_type", c.build_type},
       {"geotb_version", c.geotb_version},
       {"host", c.host},
       {"started_at", c.started_at},
       {"argv", c.argv},
       {"libraries", c.libraries}};
  if (c.hardware_threads) j["hardware_threads"] = *c.hardware_threads;
  if (c.dc_tcp_congestion_control) j["dc_tcp_congestion_control"] = *c.dc_tcp_congestion_control;
  if (c.clock) j["clock"] = *c.clock;
  if (c.lan_collectives) j["lan_collectives"] = *c.lan_collectives;
  auto profile = [](const ReportContext::ComputeProfile& p) {
    json o{{"step_time_s", p.step_time_s},
           {"reduce_ns_per_element", p.reduce_ns_per_element},
           {"compress_ns_per_element", p.compress_ns_per_element}};
    if (p.derived) o["derived"] = *p.derived;
    if (p.calibrated) o["calibrated"] = *p.calibrated;
    return o;
  };
  if (c.compute_profile) j["compute_profile"] = profile(*c.compute_profile);
  if (!c.compute_profile_by_dc.empty()) {
    json& by = j["compute_profile_by_dc"] = json::object();
    for (const auto& [dc, p] : c.compute_profile_by_dc) by[dc] = profile(p);
  }
  if (c.represented_model) {
    j["represented_model"] = *c.represented_model;
  }
  if (c.device) j["device"] = *c.device;
  if (c.cpu) j["cpu"] = *c.cpu;
}

void from_json(const json& j, ReportContext& c) {
  // Only git_revision, host and started_at are shown everywhere; reports written by tests may
  // leave the rest out.
  auto text = [&](const char* key, const char* def) { return f::has(j, key) ? f::str(j, key) : std::string(def); };
  if (!j.is_object()) f::fail("", fmt::format("expected an object, got {}", f::shown(j)));
  c.git_revision = text("git_revision", "unknown");
  c.build_type = text("build_type", "");
  c.geotb_version = text("geotb_version", "");
  c.host = text("host", "");
  c.started_at = text("started_at", "");
  c.hardware_threads.reset();
  if (f::has(j, "hardware_threads")) c.hardware_threads = f::count(j, "hardware_threads");
  c.argv = f::has(j, "argv") ? f::strings(j, "argv") : std::vector<std::string>{};
  c.libraries.clear();
  if (f::has(j, "libraries"))
    for (const auto& [k, v] : f::object(j, "libraries").items()) {
      if (!v.is_string()) f::fail("libraries." + k, fmt::format("expected a string, got {}", f::shown(v)));
      c.libraries[k] = v.get<std::string>();
    }
  c.dc_tcp_congestion_control.reset();
  if (f::has(j, "dc_tcp_congestion_control")) c.dc_tcp_congestion_control = f::str(j, "dc_tcp_congestion_control");
  c.clock.reset();
  if (f::has(j, "clock")) {
    c.clock = f::str(j, "clock");
    if (*c.clock != "virtual" && *c.clock != "wall")
      f::fail("clock", fmt::format("expected \"virtual\" or \"wall\", got {}", f::shown(j.at("clock"))));
  }
  c.lan_collectives.reset();
  if (f::has(j, "lan_collectives")) {
    c.lan_collectives = f::str(j, "lan_collectives");
    if (*c.lan_collectives != "analytic")
      f::fail("lan_collectives", fmt::format("expected \"analytic\", got {}", f::shown(j.at("lan_collectives"))));
  }
  auto profile = [](const json& p) {
    ReportContext::ComputeProfile r{f::nonneg(p, "step_time_s"), f::nonneg(p, "reduce_ns_per_element"),
                                    f::nonneg(p, "compress_ns_per_element"), std::nullopt, std::nullopt};
    if (f::has(p, "derived")) {
      ComputeDerivation d;
      f::get(p, "derived", d);
      r.derived = std::move(d);
    }
    if (f::has(p, "calibrated")) f::get(p, "calibrated", r.calibrated.emplace());
    return r;
  };
  c.compute_profile.reset();
  if (f::has(j, "compute_profile")) c.compute_profile = profile(f::object(j, "compute_profile"));
  c.compute_profile_by_dc.clear();
  if (f::has(j, "compute_profile_by_dc")) {
    const json& by = f::object(j, "compute_profile_by_dc");
    for (auto it = by.begin(); it != by.end(); ++it) c.compute_profile_by_dc[it.key()] = profile(f::object(by, it.key().c_str()));
  }
  if (c.compute_profile && !c.compute_profile_by_dc.empty())
    f::fail("compute_profile_by_dc", "present beside compute_profile (a report has one or the other)");
  c.represented_model.reset();
  if (f::has(j, "represented_model")) {
    RepresentedModel r;
    f::get(j, "represented_model", r);
    c.represented_model = std::move(r);
  }
  c.device.reset();
  if (f::has(j, "device")) f::get(j, "device", c.device.emplace());
  c.cpu.reset();
  if (f::has(j, "cpu")) f::get(j, "cpu", c.cpu.emplace());
}

std::string format_rate(double samples_per_s) {
  return samples_per_s >= 100 ? fmt::format("{:.0f}", samples_per_s) : fmt::format("{:.3g}", samples_per_s);
}

std::string throughput_text(const ReportContext& c, double samples_per_s) {
  std::string out = format_rate(samples_per_s);
  if (c.represented_model && c.represented_model->sequence_length > 0)
    out += fmt::format(" ({:.4g} tokens/s)", samples_per_s * static_cast<double>(c.represented_model->sequence_length));
  return out;
}

std::string describe_figures(const ReportContext& c) {
  const std::string r = describe_represented(c);
  return describe_clock(c) + (r.empty() ? "" : "; " + r);
}

std::string describe_represented(const ReportContext& c) {
  if (!c.represented_model) return "";
  const RepresentedModel& r = *c.represented_model;
  return fmt::format(
      "represents {} ({:.4g} G parameters, {}; {:.4g} x the trained model): time, WAN bytes and samples are its{}; "
      "accuracy is the trained proxy's ({} parameters)",
      r.name, static_cast<double>(r.params) / 1e9, r.how, r.scale(),
      r.sequence_length ? fmt::format(" (a sample = {} tokens)", r.sequence_length) : "", r.trained_params);
}

std::string describe_clock(const ReportContext& c) {
  if (!c.clock) return "clock not recorded (a report older than the virtual clock)";
  if (*c.clock == "wall") return "wall clock: the host's, so the time figures move with the host and its load";
  auto profile = [](const ReportContext::ComputeProfile& p) {
    if (p.derived) {
      const ComputeDerivation& d = *p.derived;
      const std::string gpus = d.gpus_per_worker > 1 ? fmt::format("{} x ", d.gpus_per_worker) : "";
      const std::string shard =
          d.gpus_per_worker > 1 ? fmt::format(" (sharding traffic {:.4g} ms on the interconnect, overlapped)", d.shard_comm_s * 1e3) : "";
      return fmt::format(
          "compute derived from the hardware: 6 x {:.4g} params x {:.6g} tokens / ({}{:.4g} TFLOP/s dense BF16 ({}) x "
          "MFU {:.3g}) = {:.4g} ms per step{}, reduce {:.3g} ns/element, compress {:.3g} ns/element",
          d.params, d.tokens_per_worker_per_step, gpus, d.peak_dense_bf16_flops / 1e12, d.gpu, d.mfu,
          p.step_time_s * 1e3, shard, p.reduce_ns_per_element, p.compress_ns_per_element);
    }
    if (p.calibrated)
      return fmt::format("compute calibrated on {} at {} ({}): step {:.4g} ms, reduce {:.3g} ns/element, compress "
                         "{:.3g} ns/element",
                         p.calibrated->device, p.calibrated->measured_at, p.calibrated->file, p.step_time_s * 1e3,
                         p.reduce_ns_per_element, p.compress_ns_per_element);
    return fmt::format("declared compute: step {:.4g} ms, reduce {:.3g} ns/element, compress {:.3g} ns/element",
                       p.step_time_s * 1e3, p.reduce_ns_per_element, p.compress_ns_per_element);
  };
  if (c.compute_profile) return "virtual clock, " + profile(*c.compute_profile);
  if (!c.compute_profile_by_dc.empty()) {
    std::string out = "virtual clock, per data center:";
    for (const auto& [dc, p] : c.compute_profile_by_dc) out += fmt::format(" {}: {};", dc, profile(p));
    out.pop_back();
    return out;
  }
  return "virtual clock, compute = measured thread CPU time (minimum of the last 32 of each region)";
}

// ---- comparison, failures, the report ----

void to_json(json& j, const StrategyComparison& c) {
  j = json::object();
  if (c.throughput_ratio) j["throughput_ratio"] = *c.throughput_ratio;
  if (c.wan_bytes_ratio) j["wan_bytes_ratio"] = *c.wan_bytes_ratio;
  if (c.accuracy_delta) j["accuracy_delta"] = *c.accuracy_delta;
  if (c.fraction_of_lan_throughput) j["fraction_of_lan_throughput"] = *c.fraction_of_lan_throughput;
}

void from_json(const json& j, StrategyComparison& c) {
  auto opt = [&](const char* key) { return f::has(j, key) ? std::optional<double>(f::number(j, key)) : std::nullopt; };
  if (!j.is_object()) f::fail("", fmt::format("expected an object, got {}", f::shown(j)));
  c.throughput_ratio = opt("throughput_ratio");
  c.wan_bytes_ratio = opt("wan_bytes_ratio");
  c.accuracy_delta = opt("accuracy_delta");
  c.fraction_of_lan_throughput = opt("fraction_of_lan_throughput");
}

void to_json(json& j, const Comparison& c) {
  json st = json::object();
  for (const auto& [name, s] : c.strategies) st[name] = s;
  j = {{"baseline", c.baseline ? json(*c.baseline) : json(nullptr)}, {"strategies", st}};
}

void from_json(const json& j, Comparison& c) {
  c.baseline.reset();
  if (!f::req(j, "baseline").is_null()) c.baseline = f::str(j, "baseline");
  c.strategies.clear();
  for (const auto& [name, v] : f::object(j, "strategies").items()) {
    try {
      from_json(v, c.strategies[name]);
    } catch (FieldError& e) {
      e.prepend(name);
      e.prepend("strategies");
      throw;
    }
  }
}

void to_json(json& j, const Failure& x) { j = {{"strategy", x.strategy}, {"error", x.error}}; }

void from_json(const json& j, Failure& x) {
  x.strategy = f::str(j, "strategy");
  x.error = f::str(j, "error");
}

const StrategyRun* RunReport::find(std::string_view strategy) const {
  for (const auto& s : strategies)
    if (s.name == strategy) return &s;
  return nullptr;
}

const Failure* RunReport::failure_of(std::string_view strategy) const {
  for (const auto& x : failures)
    if (x.strategy == strategy) return &x;
  return nullptr;
}

void to_json(json& j, const RunReport& r) {
  j = {{"schema", kReportSchema},
       {"schema_version", kReportSchemaVersion},
       {"scenario", r.scenario},
       {"context", r.context},
       {"strategies", r.strategies},
       {"comparison", r.comparison},
       {"failures", r.failures}};
  if (r.baseline) j["baseline"] = *r.baseline;
}

void from_json(const json& j, RunReport& r) {
  if (!j.is_object()) f::fail("", fmt::format("expected a JSON object (a geotb run report), got {}", f::shown(j)));
  if (const std::string schema = f::str(j, "schema"); schema != kReportSchema)
    f::fail("schema", fmt::format("\"{}\": not a geotb run report (expected \"{}\")", schema, kReportSchema));
  if (const int64_t v = f::integer(j, "schema_version"); v != kReportSchemaVersion)
    f::fail("schema_version", fmt::format("{}: this geotb reads schema_version {}", v, kReportSchemaVersion));
  f::get(j, "scenario", r.scenario);
  f::get(j, "context", r.context);
  f::list(j, "strategies", r.strategies);
  for (size_t i = 0; i < r.strategies.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (r.strategies[k].name == r.strategies[i].name)
        f::fail(fmt::format("strategies[{}].name", i), fmt::format("\"{}\" appears twice", r.strategies[i].name));
  r.comparison = {};
  if (f::has(j, "comparison")) f::get(j, "comparison", r.comparison);
  r.failures.clear();
  if (f::has(j, "failures")) f::list(j, "failures", r.failures);
  r.baseline.reset();
  if (f::has(j, "baseline")) {
    BaselineRecord b;
    f::get(j, "baseline", b);
    r.baseline = std::move(b);
  }
}

RunReport parse_report(const json& j, const std::string& source) {
  RunReport r;
  try {
    from_json(j, r);
  } catch (const FieldError& e) {
    throw report_error(source, e);
  }
  r.source = source;
  return r;
}

RunReport load_report(const std::string& path) { return parse_report(read_json_file(path), path); }

}  // namespace geotb::model
