#include "harness/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace geotb::harness {

using nlohmann::json;

namespace {

std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

/// Field access that names `source: path` in every error.
class Node {
 public:
  Node(const json& j, std::string path, const std::string& source) : j_(j), path_(std::move(path)), src_(source) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ReportError(fmt::format("{}: {}: {}", src_, field.empty() ? "(top level)" : field, what));
  }
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  const json& req(const std::string& key) const {
    if (!j_.is_object()) fail(path_, fmt::format("expected an object, got {}", shown(j_)));
    auto it = j_.find(key);
    if (it == j_.end()) fail(field(key), "missing");
    return *it;
  }
  bool has(const std::string& key) const { return j_.is_object() && j_.contains(key); }
  Node obj(const std::string& key) const {
    const json& v = req(key);
    if (!v.is_object()) fail(field(key), fmt::format("expected an object, got {}", shown(v)));
    return Node(v, field(key), src_);
  }
  const json& arr(const std::string& key) const {
    const json& v = req(key);
    if (!v.is_array()) fail(field(key), fmt::format("expected a list, got {}", shown(v)));
    return v;
  }
  double num(const std::string& key) const {
    const json& v = req(key);
    if (!v.is_number()) fail(field(key), fmt::format("expected a number, got {}", shown(v)));
    return v.get<double>();
  }
  double nonneg(const std::string& key) const {
    const double x = num(key);
    if (!(x >= 0)) fail(field(key), fmt::format("must be >= 0, got {}", x));
    return x;
  }
  int64_t integer(const std::string& key) const {
    const json& v = req(key);
    if (!v.is_number_integer()) fail(field(key), fmt::format("expected an integer, got {}", shown(v)));
    return v.get<int64_t>();
  }
  uint64_t count(const std::string& key) const {
    const int64_t x = integer(key);
    if (x < 0) fail(field(key), fmt::format("must be >= 0, got {}", x));
    return static_cast<uint64_t>(x);
  }
  std::string str(const std::string& key) const {
    const json& v = req(key);
    if (!v.is_string()) fail(field(key), fmt::format("expected a string, got {}", shown(v)));
    return v.get<std::string>();
  }
  std::string str_or(const std::string& key, const std::string& def) const { return has(key) ? str(key) : def; }
  Node at(const json& v, const std::string& path) const { return Node(v, path, src_); }
  const json& raw() const { return j_; }
  const std::string& path() const { return path_; }

 private:
  const json& j_;
  std::string path_;
  const std::string& src_;
};

std::vector<double> numbers(const Node& n, const std::string& key) {
  const json& a = n.arr(key);
  std::vector<double> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number()) n.fail(fmt::format("{}[{}]", n.field(key), i), fmt::format("expected a number, got {}", shown(a[i])));
    out.push_back(a[i].get<double>());
  }
  return out;
}

StrategyRun parse_strategy(const Node& s) {
  StrategyRun r;
  r.name = s.str("name");
  if (r.name.empty()) s.fail(s.field("name"), "must not be empty");
  r.config = s.has("config") ? s.req("config") : json::object();
  const Node m = s.obj("metrics");
  r.samples = m.integer("samples");
  if (r.samples < 1) m.fail(m.field("samples"), fmt::format("must be >= 1, got {}", r.samples));
  r.wall_s = m.nonneg("wall_s");
  r.samples_per_s = m.num("samples_per_s");
  if (!(r.samples_per_s > 0)) m.fail(m.field("samples_per_s"), fmt::format("must be > 0, got {}", r.samples_per_s));
  r.compute_s_per_step = m.nonneg("compute_s_per_step");
  r.exposed_comm_s_per_step = m.nonneg("exposed_comm_s_per_step");
  r.overlapped_comm_s_per_step = m.nonneg("overlapped_comm_s_per_step");
  r.compress_s_per_step = m.nonneg("compress_s_per_step");
  r.comm_compute_ratio = m.nonneg("comm_compute_ratio");
  r.wan_payload_bytes = m.count("wan_payload_bytes");
  r.wan_wire_bytes = m.count("wan_wire_bytes");
  r.wan_messages = m.count("wan_messages");
  r.wan_retransmissions = m.count("wan_retransmissions");
  r.exchanges = m.count("exchanges");
  if (!m.req("exchange_efficiency_mean").is_null()) r.exchange_efficiency_mean = m.nonneg("exchange_efficiency_mean");
  r.final_test_accuracy = m.num("final_test_accuracy");
  if (!(r.final_test_accuracy >= 0 && r.final_test_accuracy <= 1))
    m.fail(m.field("final_test_accuracy"), fmt::format("must be in [0, 1], got {}", r.final_test_accuracy));
  r.replica_max_abs_diff = m.nonneg("replica_max_abs_diff");

  const Node se = s.obj("series");
  r.loss = numbers(se, "loss");
  r.step_end_s = numbers(se, "step_end_s");
  if (r.loss.size() != r.step_end_s.size())
    se.fail(se.field("step_end_s"),
            fmt::format("has {} entries but loss has {} (one per step each)", r.step_end_s.size(), r.loss.size()));
  const json& acc = se.arr("test_accuracy");
  for (size_t i = 0; i < acc.size(); ++i) {
    const Node p = se.at(acc[i], fmt::format("{}[{}]", se.field("test_accuracy"), i));
    AccuracyPoint a;
    a.step = p.integer("step");
    a.samples = p.integer("samples");
    a.accuracy = p.num("accuracy");
    if (!(a.accuracy >= 0 && a.accuracy <= 1)) p.fail(p.field("accuracy"), fmt::format("must be in [0, 1], got {}", a.accuracy));
    r.test_accuracy.push_back(a);
  }
  const json& ex = s.arr("exchanges");
  for (size_t i = 0; i < ex.size(); ++i) {
    const Node e = s.at(ex[i], fmt::format("{}[{}]", s.field("exchanges"), i));
    ExchangeRecord x;
    x.step = e.integer("step");
    x.bytes = e.count("bytes");
    x.seconds = e.nonneg("seconds");
    x.lower_bound_s = e.nonneg("lower_bound_s");
    x.efficiency = e.nonneg("efficiency");
    r.exchange_log.push_back(x);
  }
  return r;
}

std::string pct(double x) { return fmt::format("{:.3g}%", x * 100); }

}  // namespace

double StrategyRun::samples_per_step() const {
  return loss.empty() ? static_cast<double>(samples) : static_cast<double>(samples) / static_cast<double>(loss.size());
}

const StrategyRun* RunReport::find(std::string_view strategy) const {
  for (const auto& s : strategies)
    if (s.name == strategy) return &s;
  return nullptr;
}

RunReport parse_report(const json& j, const std::string& source) {
  RunReport r;
  r.source = source;
  const Node root(j, "", r.source);
  if (!j.is_object()) root.fail("", fmt::format("expected a JSON object (a geotb run report), got {}", shown(j)));
  if (root.str("schema") != "geotb.report")
    root.fail("schema", fmt::format("\"{}\": not a geotb run report (expected \"geotb.report\")", root.str("schema")));
  if (root.integer("schema_version") != 1)
    root.fail("schema_version", fmt::format("{}: this geotb reads schema_version 1", root.integer("schema_version")));

  const Node sc = root.obj("scenario");
  r.scenario_name = sc.str("name");
  r.description = sc.str_or("description", "");
  r.scenario_file = sc.str_or("file", "");
  r.scenario_hash = sc.str("hash");
  r.network = sc.str_or("network", "");
  r.seed = sc.count("seed");
  const json& dcs = sc.arr("datacenters");
  for (size_t i = 0; i < dcs.size(); ++i) {
    const Node d = sc.at(dcs[i], fmt::format("scenario.datacenters[{}]", i));
    r.datacenters.emplace_back(d.str("name"), d.integer("workers"));
  }
  const json& wan = sc.arr("wan");
  for (size_t i = 0; i < wan.size(); ++i) {
    const Node w = sc.at(wan[i], fmt::format("scenario.wan[{}]", i));
    const json& b = w.arr("between");
    if (b.size() != 2 || !b[0].is_string() || !b[1].is_string())
      w.fail(w.field("between"), fmt::format("expected two data center names, got {}", shown(b)));
    r.wan.push_back({b[0].get<std::string>(), b[1].get<std::string>(), w.nonneg("bandwidth_bps"), w.nonneg("rtt_s"),
                     w.nonneg("loss_rate")});
  }
  r.workload = sc.has("workload") ? sc.req("workload") : json::object();
  if (sc.has("check")) {
    const Node c = sc.obj("check");
    CheckTolerances t;
    t.throughput_ratio = c.nonneg("throughput_ratio_tolerance");
    t.accuracy = c.nonneg("accuracy_tolerance");
    t.wan_bytes_ratio = c.nonneg("wan_bytes_ratio_tolerance");
    r.tolerances = t;
  }

  const Node ctx = root.obj("context");
  r.context = ctx.raw();
  r.git_revision = ctx.str_or("git_revision", "unknown");
  r.build_type = ctx.str_or("build_type", "");
  r.host = ctx.str_or("host", "");
  r.started_at = ctx.str_or("started_at", "");

  const json& st = root.arr("strategies");
  for (size_t i = 0; i < st.size(); ++i) {
    StrategyRun s = parse_strategy(root.at(st[i], fmt::format("strategies[{}]", i)));
    if (r.find(s.name)) root.fail(fmt::format("strategies[{}].name", i), fmt::format("\"{}\" appears twice", s.name));
    r.strategies.push_back(std::move(s));
  }
  if (root.has("failures")) {
    const json& f = root.arr("failures");
    for (size_t i = 0; i < f.size(); ++i) {
      const Node n = root.at(f[i], fmt::format("failures[{}]", i));
      r.failures.emplace_back(n.str("strategy"), n.str("error"));
    }
  }
  return r;
}

RunReport load_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ReportError(fmt::format("{}: cannot open", path));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw ReportError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  return parse_report(j, path);
}

// ---- the gate ----

CheckRow judge_higher_is_better_relative(double baseline, double current, double tolerance) {
  CheckRow r;
  r.baseline = baseline;
  r.current = current;
  r.allowed_lo = baseline * (1 - tolerance);
  if (current < *r.allowed_lo) {
    r.verdict = Verdict::kFail;
    r.note = fmt::format("fell {} below the baseline (tolerance {})", pct(1 - current / baseline), pct(tolerance));
  } else if (current > baseline * (1 + tolerance)) {
    r.verdict = Verdict::kImproved;
    r.note = fmt::format("{} above the baseline", pct(current / baseline - 1));
  }
  return r;
}

CheckRow judge_lower_is_better_relative(double baseline, double current, double tolerance) {
  CheckRow r;
  r.baseline = baseline;
  r.current = current;
  r.allowed_hi = baseline * (1 + tolerance);
  if (current > *r.allowed_hi) {
    r.verdict = Verdict::kFail;
    r.note = baseline > 0 ? fmt::format("rose {} above the baseline (tolerance {})", pct(current / baseline - 1), pct(tolerance))
                          : fmt::format("rose from 0 (tolerance {})", pct(tolerance));
  } else if (current < baseline * (1 - tolerance)) {
    r.verdict = Verdict::kImproved;
    r.note = fmt::format("{} below the baseline", pct(1 - current / baseline));
  }
  return r;
}

CheckRow judge_higher_is_better_absolute(double baseline, double current, double tolerance) {
  CheckRow r;
  r.baseline = baseline;
  r.current = current;
  r.allowed_lo = baseline - tolerance;
  if (current < *r.allowed_lo) {
    r.verdict = Verdict::kFail;
    r.note = fmt::format("fell by {:.4f} (tolerance {:.4f})", baseline - current, tolerance);
  } else if (current > baseline + tolerance) {
    r.verdict = Verdict::kImproved;
    r.note = fmt::format("rose by {:.4f}", current - baseline);
  }
  return r;
}

bool CheckResult::passed() const { return count(Verdict::kFail) == 0; }

int CheckResult::count(Verdict v) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [v](const CheckRow& r) { return r.verdict == v; }));
}

CheckResult check_report(const RunReport& cur, const RunReport& base, const CheckOptions& opt) {
  if (cur.scenario_name != base.scenario_name)
    throw ReportError(fmt::format("{} is a run of scenario \"{}\" but the baseline {} is of \"{}\": pick the baseline "
                                  "reports/baselines/{}.json",
                                  cur.source, cur.scenario_name, base.source, base.scenario_name, cur.scenario_name));
  const StrategyRun* base_ref = base.find(opt.reference);
  if (!base_ref)
    throw ReportError(fmt::format("{}: the baseline has no \"{}\" run, the reference of every ratio", base.source,
                                  opt.reference));

  CheckResult res;
  res.reference = opt.reference;
  if (opt.tolerances) {
    res.tolerances = *opt.tolerances;
    res.tolerances_from = "command line";
  } else if (cur.tolerances) {
    res.tolerances = *cur.tolerances;
    res.tolerances_from = fmt::format("scenario.check of {}", cur.source);
  } else {
    res.tolerances_from = "defaults";
  }
  const CheckTolerances& tol = res.tolerances;

  auto structural = [&](const std::string& strategy, const std::string& figure, std::string note) {
    CheckRow r;
    r.strategy = strategy;
    r.figure = figure;
    r.verdict = Verdict::kFail;
    r.note = std::move(note);
    res.rows.push_back(std::move(r));
  };

  if (cur.scenario_hash != base.scenario_hash)
    structural("-", "scenario",
               fmt::format("the scenario file changed since the baseline (hash {} now, {} in the baseline): the "
                           "figures are not comparable; replay and run `geotb check --update` if the change is intended",
                           cur.scenario_hash.substr(0, 12), base.scenario_hash.substr(0, 12)));

  auto failure_of = [&](const std::string& name) -> const std::string* {
    for (const auto& [n, e] : cur.failures)
      if (n == name) return &e;
    return nullptr;
  };

  const StrategyRun* cur_ref = cur.find(opt.reference);
  if (!cur_ref) {
    const std::string* err = failure_of(opt.reference);
    structural(opt.reference, "present",
               err ? fmt::format("the reference strategy failed in this run: {}", *err)
                   : fmt::format("the reference strategy is missing from this run: no ratio can be formed"));
  }

  for (const StrategyRun& b : base.strategies) {
    const StrategyRun* c = cur.find(b.name);
    if (!c) {
      const std::string* err = failure_of(b.name);
      structural(b.name, "present",
                 err ? fmt::format("failed in this run: {}", *err)
                     : fmt::format("in the baseline but missing from this run (removed from the scenario or not "
                                   "selected with --strategies?)"));
      continue;
    }
    if (b.name != opt.reference && cur_ref) {
      CheckRow t = judge_higher_is_better_relative(b.samples_per_s / base_ref->samples_per_s,
                                                   c->samples_per_s / cur_ref->samples_per_s, tol.throughput_ratio);
      t.strategy = b.name;
      t.figure = "throughput ratio";
      res.rows.push_back(std::move(t));
      if (base_ref->wan_payload_bytes > 0 && cur_ref->wan_payload_bytes > 0) {
        CheckRow w = judge_lower_is_better_relative(
            static_cast<double>(b.wan_payload_bytes) / static_cast<double>(base_ref->wan_payload_bytes),
            static_cast<double>(c->wan_payload_bytes) / static_cast<double>(cur_ref->wan_payload_bytes),
            tol.wan_bytes_ratio);
        w.strategy = b.name;
        w.figure = "WAN bytes ratio";
        res.rows.push_back(std::move(w));
      }
    }
    CheckRow a = judge_higher_is_better_absolute(b.final_test_accuracy, c->final_test_accuracy, tol.accuracy);
    a.strategy = b.name;
    a.figure = "final accuracy";
    res.rows.push_back(std::move(a));
  }
  for (const StrategyRun& c : cur.strategies)
    if (!base.find(c.name)) {
      CheckRow r;
      r.strategy = c.name;
      r.figure = "present";
      r.note = "new: not in the baseline, not gated (run `geotb check --update` to gate it)";
      res.rows.push_back(std::move(r));
    }
  return res;
}

namespace {

std::string fmt_value(const std::string& figure, std::optional<double> v) {
  if (!v) return "-";
  if (figure == "throughput ratio") return fmt::format("{:.3f}x", *v);
  if (figure == "WAN bytes ratio") return fmt::format("{:.5g}", *v);
  if (figure == "final accuracy") return fmt::format("{:.4f}", *v);
  return fmt::format("{:g}", *v);
}

std::string fmt_range(const CheckRow& r) {
  if (r.allowed_lo && r.allowed_hi)
    return fmt::format("{} .. {}", fmt_value(r.figure, r.allowed_lo), fmt_value(r.figure, r.allowed_hi));
  if (r.allowed_lo) return ">= " + fmt_value(r.figure, r.allowed_lo);
  if (r.allowed_hi) return "<= " + fmt_value(r.figure, r.allowed_hi);
  return "-";
}

const char* verdict_word(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kImproved: return "improved";
    case Verdict::kFail: return "FAIL";
  }
  return "?";
}

}  // namespace

std::string format_check_table(const CheckResult& r, const RunReport& cur, const RunReport& base) {
  std::string out = fmt::format("geotb check: {} ({}) against the baseline {}\n", cur.source, cur.scenario_name, base.source);
  out += fmt::format("  baseline: git {}, {} on {}; current: git {}, {} on {}\n", base.git_revision, base.started_at,
                     base.host, cur.git_revision, cur.started_at, cur.host);
  out += fmt::format(
      "  ratios are of each strategy to {} in the same run; tolerances ({}): throughput ratio -{} (relative), WAN "
      "bytes ratio +{} (relative), final accuracy -{:.4f} (absolute)\n\n",
      r.reference, r.tolerances_from, pct(r.tolerances.throughput_ratio), pct(r.tolerances.wan_bytes_ratio),
      r.tolerances.accuracy);
  out += fmt::format("{:<20} {:<17} {:>10} {:>10} {:>14}  {}\n", "strategy", "figure", "baseline", "current",
                     "allowed", "verdict");
  for (const auto& row : r.rows)
    out += fmt::format("{:<20} {:<17} {:>10} {:>10} {:>14}  {}{}\n", row.strategy, row.figure,
                       fmt_value(row.figure, row.baseline), fmt_value(row.figure, row.current), fmt_range(row),
                       verdict_word(row.verdict),
                       row.verdict == Verdict::kPass || row.note.empty() ? "" : ": " + row.note);
  out += "\n";
  if (r.passed()) {
    out += fmt::format("PASS: {} figures within tolerance", r.rows.size());
    if (const int n = r.count(Verdict::kImproved); n > 0)
      out += fmt::format(", {} improved beyond it (consider `geotb check --update` to raise the bar)", n);
    out += "\n";
  } else {
    out += fmt::format("FAIL: {} of {} figures regressed or are missing:\n", r.count(Verdict::kFail), r.rows.size());
    for (const auto& row : r.rows)
      if (row.verdict == Verdict::kFail) {
        if (row.baseline && row.current)
          out += fmt::format("  {}: {} {} -> {} (allowed {}): {}\n", row.strategy, row.figure,
                             fmt_value(row.figure, row.baseline), fmt_value(row.figure, row.current), fmt_range(row),
                             row.note);
        else
          out += fmt::format("  {}: {}: {}\n", row.strategy, row.figure, row.note);
      }
  }
  return out;
}

}  // namespace geotb::harness
