#include "model/metrics.h"

#include <algorithm>
#include <cmath>

#include "common/stalls.h"

namespace geotb::model::metrics {

double stall_share(const DataPlaneSummary& d) { return d.run_s > 0 ? d.stall_total_s / d.run_s : 0.0; }
bool stalls_ok(const DataPlaneSummary& d) { return stall_share(d) <= emu::kMaxStallShare; }

double samples_per_s(uint64_t samples, double wall_s) {
  return wall_s > 0 ? static_cast<double>(samples) / wall_s : 0;
}

double samples_per_step(uint64_t samples, size_t steps) {
  return steps == 0 ? static_cast<double>(samples) : static_cast<double>(samples) / static_cast<double>(steps);
}

double samples_per_step(const StrategyRun& s) { return samples_per_step(s.metrics.samples, s.series.loss.size()); }

double per_step_mean_s(double total_ns, int participants, int steps) {
  return total_ns * (1e-9 / (static_cast<double>(participants) * std::max(steps, 1)));
}

double comm_compute_ratio(double exposed_comm_s, double compute_s) {
  return compute_s > 0 ? exposed_comm_s / compute_s : 0;
}

double exchange_efficiency(const ExchangeRecord& e) { return e.seconds > 0 ? e.lower_bound_s / e.seconds : 0; }
double exchange_rtts(const ExchangeRecord& e) { return e.rtt_s > 0 ? e.seconds / e.rtt_s : 0; }

std::optional<double> exchange_efficiency_mean(const std::vector<ExchangeRecord>& log) {
  if (log.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& e : log) sum += exchange_efficiency(e);
  return sum / static_cast<double>(log.size());
}

void derive(StrategyRun& run) {
  StrategyMetrics& m = run.metrics;
  m.samples_per_s = samples_per_s(m.samples, m.wall_s);
  m.comm_compute_ratio = comm_compute_ratio(m.exposed_comm_s_per_step, m.compute_s_per_step);
  m.exchange_efficiency_mean = exchange_efficiency_mean(run.exchanges);
  m.exchange_seconds_mean.emplace(exchange_seconds_mean(run.exchanges));
  m.comm_compute_alarm = comm_compute_alarm(m.comm_compute_ratio);
}

bool comm_compute_alarm(double ratio) { return ratio > kCommComputeAlarm; }

TimeToAccuracy time_to_accuracy(const StrategyRun& run, double target) {
  TimeToAccuracy t;
  t.target = target;
  const auto& curve = run.series.test_accuracy;
  for (size_t i = 0; i < curve.size(); ++i) {
    const AccuracyPoint& p = curve[i];
    if (p.accuracy < target) continue;
    t.step = p.step;
    t.samples = p.samples;
    const bool last = i + 1 == curve.size();
    const auto k = static_cast<size_t>(p.step);
    if (last || k == 0 || k > run.series.step_end_s.size())
      t.seconds = run.metrics.wall_s;
    else
      t.seconds = run.series.step_end_s[k - 1];
    break;
  }
  return t;
}

SeedResult seed_result(const StrategyRun& run, uint64_t seed) {
  SeedResult r;
  r.seed = seed;
  r.samples_per_s = run.metrics.samples_per_s;
  r.wan_payload_bytes = run.metrics.wan_payload_bytes;
  r.final_test_accuracy = run.metrics.final_test_accuracy;
  r.comm_compute_ratio = run.metrics.comm_compute_ratio;
  r.time_to_accuracy = run.metrics.time_to_accuracy;
  return r;
}

Spread spread(const std::vector<double>& v) {
  Spread s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

std::optional<SeedSummary> seed_summary(const std::vector<SeedResult>& seeds) {
  if (seeds.empty()) return std::nullopt;
  SeedSummary s;
  s.seeds = static_cast<int>(seeds.size());
  std::vector<double> acc, sps, wan, tta, tta_samples;
  bool target = false;
  for (const auto& r : seeds) {
    acc.push_back(r.final_test_accuracy);
    sps.push_back(r.samples_per_s);
    wan.push_back(static_cast<double>(r.wan_payload_bytes));
    if (r.time_to_accuracy) {
      target = true;
      if (r.time_to_accuracy->seconds) tta.push_back(*r.time_to_accuracy->seconds);
      if (r.time_to_accuracy->samples) tta_samples.push_back(static_cast<double>(*r.time_to_accuracy->samples));
    }
  }
  s.final_test_accuracy = spread(acc);
  s.samples_per_s = spread(sps);
  s.wan_payload_bytes = spread(wan);
  if (target) {
    s.time_to_accuracy_s = spread(tta);
    s.samples_to_accuracy = spread(tta_samples);
  }
  return s;
}

std::optional<double> exchange_seconds_mean(const std::vector<ExchangeRecord>& log) {
  if (log.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& e : log) sum += e.seconds;
  return sum / static_cast<double>(log.size());
}

double throughput_ratio(const StrategyMetrics& s, const StrategyMetrics& reference) {
  return reference.samples_per_s > 0 ? s.samples_per_s / reference.samples_per_s : 0;
}

double wan_bytes_ratio(const StrategyMetrics& s, const StrategyMetrics& reference) {
  return reference.wan_payload_bytes > 0
             ? static_cast<double>(s.wan_payload_bytes) / static_cast<double>(reference.wan_payload_bytes)
             : 0;
}

double accuracy_delta(const StrategyMetrics& s, const StrategyMetrics& reference) {
  return s.final_test_accuracy - reference.final_test_accuracy;
}

double fraction_of_lan_throughput(const StrategyMetrics& s, const StrategyMetrics& lan) {
  return throughput_ratio(s, lan);
}

Comparison compare(const std::vector<StrategyRun>& runs, const std::string& baseline) {
  const StrategyRun* base = nullptr;
  const StrategyRun* lan = nullptr;
  for (const auto& r : runs) {
    if (r.name == baseline) base = &r;
    if (r.name == kLanReference) lan = &r;
  }
  Comparison c;
  if (base) c.baseline = baseline;
  for (const auto& r : runs) {
    StrategyComparison& x = c.strategies[r.name];
    if (base) {
      x.throughput_ratio = throughput_ratio(r.metrics, base->metrics);
      x.wan_bytes_ratio = wan_bytes_ratio(r.metrics, base->metrics);
      x.accuracy_delta = accuracy_delta(r.metrics, base->metrics);
    }
    if (lan) x.fraction_of_lan_throughput = fraction_of_lan_throughput(r.metrics, lan->metrics);
  }
  return c;
}

double mean_step_s(const StrategyRun& s) {
  return s.series.loss.empty() ? 0.0 : s.metrics.wall_s / static_cast<double>(s.series.loss.size());
}

std::vector<double> step_durations_s(const StrategyRun& s) {
  std::vector<double> out;
  double prev = 0;
  for (const double t : s.series.step_end_s) {
    out.push_back(t - prev);
    prev = t;
  }
  return out;
}

std::vector<std::pair<double, double>> job_metric_series(const ExecReport& r, const std::string& key, int rank) {
  std::vector<std::pair<double, double>> out;
  if (rank < 0 || static_cast<size_t>(rank) >= r.ranks.size()) return out;
  for (const json& m : r.ranks[static_cast<size_t>(rank)].metrics) {
    const auto it = m.find(key);
    if (it == m.end() || !it->is_number()) continue;
    const auto step = m.find("step");
    const double x = step != m.end() && step->is_number() ? step->get<double>() : static_cast<double>(out.size() + 1);
    out.emplace_back(x, it->get<double>());
  }
  return out;
}

std::optional<double> job_metric_mean(const ExecReport& r, const std::string& key, int rank) {
  const auto v = job_metric_series(r, key, rank);
  if (v.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& [x, y] : v) sum += y;
  return sum / static_cast<double>(v.size());
}

}  // namespace geotb::model::metrics
