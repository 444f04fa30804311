#include "harness/scenario.h"

#include <algorithm>
#include <fmt/format.h>
#include <openssl/evp.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/units.h"
#include "engine/collectives/gloo_ring.h"
#include "engine/strategies/table.h"
#include "harness/link_trace.h"
#include "model/hardware.h"

namespace geotb::harness {

namespace {

using nlohmann::json;

int total_workers(const Scenario& sc) {
  int n = 0;
  for (const auto& d : sc.cluster.dcs) n += d.workers;
  return n;
}

/// Whether the timeline's kills can cross faults.full_recovery.above_fraction.
bool full_recovery_reachable(const Scenario& sc) { return sc.faults.full_recovery_reachable(total_workers(sc)); }

std::string show(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

/// A JSON object being read: remembers which keys were used and rejects the rest.
class Obj {
 public:
  Obj(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) throw ScenarioError(fmt::format("{}: {}: expected an object", label(), show(j_)));
  }
  const std::string& path() const { return path_; }
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string& key) {
    seen_.insert(key);
    return j_.contains(key);
  }
  const json& req(const std::string& key) {
    if (!has(key)) throw ScenarioError(fmt::format("{}: missing (required)", field(key)));
    return j_.at(key);
  }
  const json* opt(const std::string& key) { return has(key) ? &j_.at(key) : nullptr; }
  /// Call after reading: every key not read is an error.
  void done() const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (seen_.count(it.key())) continue;
      std::string known;
      for (const auto& k : seen_) known += (known.empty() ? "" : ", ") + k;
      throw ScenarioError(fmt::format("{}: unknown key (known here: {})", field(it.key()), known));
    }
  }

 private:
  std::string label() const { return path_.empty() ? "scenario" : path_; }
  const json& j_;
  std::string path_;
  std::set<std::string> seen_;
};

[[noreturn]] void fail(const std::string& field, const json& v, const std::string& why) {
  throw ScenarioError(fmt::format("{}: {}: {}", field, show(v), why));
}

// "policy" and "estimate" of `o` (faults, or a strategy's "faults"): what survivors do with a dead
// worker's share of its group's mean.
void read_fault_policy(Obj& o, std::string& policy, model::EstimateConfig& est);



template <typename F>
auto with_field(const std::string& field, const json& v, F&& f) -> decltype(f(v)) {
  try {
    return f(v);
  } catch (const common::UnitError& e) {
    throw ScenarioError(fmt::format("{}: {}", field, e.what()));
  }
}

std::string get_string(Obj& o, const std::string& key, const std::string* def = nullptr) {
  const json* v = def ? o.opt(key) : &o.req(key);
  if (!v) return *def;
  if (!v->is_string()) fail(o.field(key), *v, "expected a string");
  return v->get<std::string>();
}

int64_t get_int(Obj& o, const std::string& key, int64_t lo, int64_t hi, const int64_t* def = nullptr) {
  const json* v = def ? o.opt(key) : &o.req(key);
  if (!v) return *def;
  if (!v->is_number_integer()) fail(o.field(key), *v, "expected an integer");
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) fail(o.field(key), *v, fmt::format("must be in [{}, {}]", lo, hi));
  return x;
}

double get_number(Obj& o, const std::string& key, double lo, double hi, double def) {
  const json* v = o.opt(key);
  if (!v) return def;
  if (!v->is_number()) fail(o.field(key), *v, "expected a number");
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) fail(o.field(key), *v, fmt::format("must be in [{}, {}]", lo, hi));
  return x;
}

bool get_bool(Obj& o, const std::string& key, bool def) {
  const json* v = o.opt(key);
  if (!v) return def;
  if (!v->is_boolean()) fail(o.field(key), *v, "expected true or false");
  return v->get<bool>();
}

void read_fault_policy(Obj& o, std::string& policy, model::EstimateConfig& est) {
  const std::string shrink = "shrink";
  policy = get_string(o, "policy", &shrink);
  if (policy != "shrink" && policy != "estimate")
    fail(o.field("policy"), json(policy),
         "unknown recovery policy (shrink: survivors rebuild their group and carry on; estimate: an estimate "
         "stands in for the dead worker's gradient)");
  const json* ej = o.opt("estimate");
  if (!ej) return;
  if (policy != "estimate") fail(o.field("estimate"), *ej, "only with \"policy\": \"estimate\"");
  Obj e(*ej, o.field("estimate"));
  const std::string seed = "seed";
  est.weights = get_string(e, "weights", &seed);
  if (est.weights != "seed" && est.weights != "similarity" && est.weights != "equal" && est.weights != "last_gradient")
    fail(e.field("weights"), json(est.weights),
         "expected \"seed\" (1/(1 + cos)), \"similarity\" (max(cos, 0)), \"equal\" (shrink's mean) or "
         "\"last_gradient\" (the dead worker's last gradient)");
  if (const json* d = e.opt("decay")) {
    if (est.weights != "last_gradient") fail(e.field("decay"), *d, "only with \"weights\": \"last_gradient\"");
    est.decay = get_number(e, "decay", 0, 1, 1.0);
    if (!(est.decay > 0)) fail(e.field("decay"), *d, "must be above 0 (1: the last gradient as it was)");
  }
  e.done();
}

double bandwidth(Obj& o, const std::string& key, double def) {
  const json* v = o.opt(key);
  if (!v) return def;
  const double bps = with_field(o.field(key), *v, [](const json& x) { return common::bandwidth_bps_from_json(x); });
  if (bps < 1e3 || bps > 1e13) fail(o.field(key), *v, "must be between 1kbps and 10Tbps");
  return bps;
}

std::chrono::nanoseconds duration(Obj& o, const std::string& key, std::chrono::nanoseconds hi,
                                  const std::chrono::nanoseconds* def) {
  const json* v = def ? o.opt(key) : &o.req(key);
  if (!v) return *def;
  const auto d = with_field(o.field(key), *v, [](const json& x) { return common::duration_from_json(x); });
  if (d > hi) fail(o.field(key), *v, fmt::format("must be at most {}", common::format_duration(hi)));
  return d;
}

emu::LossConfig loss(const json& v, const std::string& path) {
  Obj o(v, path);
  emu::LossConfig l;
  const std::string model = get_string(o, "model");
  auto prob = [&](const std::string& key, double def) {
    const json* p = o.opt(key);
    return p ? with_field(o.field(key), *p, [](const json& x) { return common::probability_from_json(x); }) : def;
  };
  if (model == "none") {
    l.kind = emu::LossConfig::Kind::kNone;
  } else if (model == "bernoulli") {
    l.kind = emu::LossConfig::Kind::kBernoulli;
    o.req("p");
    l.p = prob("p", 0.0);
  } else if (model == "gilbert_elliott") {
    l.kind = emu::LossConfig::Kind::kGilbertElliott;
    l.p_good_to_bad = prob("p_good_to_bad", 0.0);
    l.p_bad_to_good = prob("p_bad_to_good", 1.0);
    l.loss_good = prob("loss_good", 0.0);
    l.loss_bad = prob("loss_bad", 1.0);
    if (l.p_good_to_bad > 0 && l.p_bad_to_good == 0)
      fail(o.field("p_bad_to_good"), v.value("p_bad_to_good", json(0)), "must be > 0 or the link never recovers");
  } else {
    fail(o.field("model"), json(model), "unknown loss model (none, bernoulli, gilbert_elliott)");
  }
  o.done();
  return l;
}

emu::JitterConfig jitter(Obj& o) {
  emu::JitterConfig j;
  const json* v = o.opt("jitter");
  if (!v) return j;
  if (v->is_string()) {  // shorthand: uniform +- amount
    j.kind = emu::JitterConfig::Kind::kUniform;
    j.amount = with_field(o.field("jitter"), *v, [](const json& x) { return common::duration_from_json(x); });
  } else {
    Obj jo(*v, o.field("jitter"));
    const std::string kind = get_string(jo, "distribution");
    if (kind == "uniform") j.kind = emu::JitterConfig::Kind::kUniform;
    else if (kind == "normal") j.kind = emu::JitterConfig::Kind::kNormal;
    else fail(jo.field("distribution"), json(kind), "unknown jitter distribution (uniform, normal)");
    j.amount = duration(jo, "amount", std::chrono::seconds(1), nullptr);
    jo.done();
  }
  if (j.amount == std::chrono::nanoseconds{0}) j.kind = emu::JitterConfig::Kind::kNone;
  return j;
}

/// One direction's link settings; `base` gives the defaults (for "reverse" overrides).
emu::LinkConfig link_settings(Obj& o, const emu::LinkConfig& base, bool rtt_required) {
  emu::LinkConfig c = base;
  c.rate_bps = bandwidth(o, "bandwidth", base.rate_bps);
  if (rtt_required || o.has("rtt")) {
    const auto rtt = duration(o, "rtt", std::chrono::seconds(10), nullptr);
    c.delay = rtt / 2;
  }
  if (const json* v = o.opt("loss")) c.loss = loss(*v, o.field("loss"));
  if (o.has("jitter")) c.jitter = jitter(o);
  c.reorder = get_bool(o, "reorder", base.reorder);
  if (const json* v = o.opt("queue")) {
    c.queue_bytes = with_field(o.field("queue"), *v, [](const json& x) { return common::bytes_from_json(x); });
  }
  return c;
}

int dc_index(const std::map<std::string, int>& dcs, const json& v, const std::string& field) {
  if (!v.is_string()) fail(field, v, "expected a data center name");
  auto it = dcs.find(v.get<std::string>());
  if (it == dcs.end()) {
    std::string names;
    for (const auto& [n, i] : dcs) names += (names.empty() ? "" : ", ") + n;
    fail(field, v, fmt::format("no such data center (have: {})", names));
  }
  return it->second;
}

std::pair<int, int> dc_pair(const std::map<std::string, int>& dcs, const json& v, const std::string& field) {
  if (!v.is_array() || v.size() != 2) fail(field, v, "expected [\"dc_a\", \"dc_b\"]");
  const int a = dc_index(dcs, v[0], field + "[0]"), b = dc_index(dcs, v[1], field + "[1]");
  if (a == b) fail(field, v, "a link joins two different data centers");
  return {a, b};
}

std::string sha256_hex(const std::string& s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

}  // namespace

// A count > 0: a JSON number or a string like "70B" (model::parse_count); nullopt and `why` else.
static std::optional<double> positive_count(const json& v, std::string* why) {
  if (v.is_string()) return model::parse_count(v.get<std::string>(), why);
  if (!v.is_number()) {
    *why = "expected a number or a string like \"70B\"";
    return std::nullopt;
  }
  if (!(v.get<double>() > 0)) {
    *why = "must be > 0";
    return std::nullopt;
  }
  return v.get<double>();
}

// workload.represents: a catalog name, or {"model": name} / {"name", "params"} / {"name",
// "tensors"}, each with an optional "sequence_length" (model/represented.h).
static model::RepresentedModel read_represented(const json& j, const std::string& path, const engine::ModelConfig& trained,
                                                std::vector<uint64_t>* tensors,
                                                std::vector<std::vector<int64_t>>* shapes_out) {
  model::RepresentedModel r;
  tensors->clear();
  shapes_out->clear();
  r.trained_params = engine::param_count(trained);
  auto from_catalog = [&](const json& v, const std::string& field) {
    if (!v.is_string()) fail(field, v, "expected a catalog name (" + model::represented_names() + ")");
    const model::RepresentedEntry* e = model::find_represented(v.get<std::string>());
    if (!e) fail(field, v, "unknown model (the catalog has: " + model::represented_names() + ")");
    r.name = std::string(e->name);
    r.params = model::transformer_params(e->shape);
    *tensors = model::transformer_tensors(e->shape);
    *shapes_out = model::transformer_shapes(e->shape);
    r.how = "catalog layer formula";
    r.source = std::string(e->source);
    r.sequence_length = e->sequence_length;
  };
  if (j.is_string()) {
    from_catalog(j, path);
    return r;
  }
  Obj o(j, path);
  const int ways = (o.has("model") ? 1 : 0) + (o.has("params") ? 1 : 0) + (o.has("tensors") ? 1 : 0);
  if (ways != 1)
    fail(path, j, "give one of \"model\" (a catalog name), \"params\" (a count) or \"tensors\" (shapes)");
  if (o.has("model")) {
    from_catalog(o.req("model"), o.field("model"));
  } else {
    const std::string def;
    r.name = get_string(o, "name", &def);
    if (r.name.empty()) fail(o.field("name"), o.has("name") ? o.req("name") : json(nullptr), "required for a declared model");
    if (o.has("params")) {
      const json& v = o.req("params");
      std::string why;
      const std::optional<double> x = positive_count(v, &why);
      if (!x) fail(o.field("params"), v, why);
      if (*x < 1 || *x > 1e15) fail(o.field("params"), v, "must be in [1, 1e15]");
      r.params = static_cast<uint64_t>(std::llround(*x));
      r.how = "declared count";
      r.source = "the scenario";
    } else {
      const json& t = o.req("tensors");
      if (!t.is_array() || t.empty()) fail(o.field("tensors"), t, "expected a non-empty list of shapes, e.g. [[4096, 4096], [4096]]");
      std::vector<std::vector<int64_t>> shapes;
      for (size_t i = 0; i < t.size(); ++i) {
        const std::string f = fmt::format("{}[{}]", o.field("tensors"), i);
        if (!t[i].is_array() || t[i].empty()) fail(f, t[i], "expected a shape: a non-empty list of dimensions");
        std::vector<int64_t> s;
        for (size_t k = 0; k < t[i].size(); ++k) {
          if (!t[i][k].is_number_integer() || t[i][k].get<int64_t>() <= 0)
            fail(fmt::format("{}[{}]", f, k), t[i][k], "expected a dimension: an integer > 0");
          s.push_back(t[i][k].get<int64_t>());
        }
        shapes.push_back(std::move(s));
      }
      r.params = model::tensor_params(shapes);
      for (const auto& s : shapes) tensors->push_back(model::tensor_params({s}));
      *shapes_out = shapes;
      r.how = "declared tensors";
      r.source = fmt::format("the scenario ({} tensors)", shapes.size());
    }
  }
  const int64_t seq_def = static_cast<int64_t>(r.sequence_length);
  r.sequence_length = static_cast<uint64_t>(get_int(o, "sequence_length", 0, 10000000, &seq_def));
  o.done();
  return r;
}

namespace {

// parse_scenario's state while it reads one scenario, section by section (each method reads the
// keys of one part, in the order the parts depend on each other).
struct ScenarioReader {
  ScenarioReader(const json& j, const std::string& dir) : j(j), root(j, ""), dir(dir) {}
  Scenario read();
  void header();  // The scenario's name, description and seed.
  void datacenters();  // Data centers (their compute profiles are read with `compute`).
  void lan_and_wan();  // The LAN, and the WAN links: one per pair of data centers.
  void timeline();  // Timeline: link changes, link traces, and node faults (model/faults.h).
  void workload();  // Workload: model, data, partition, batch, steps, optimizer.
  void strategies();  // Strategies, each with the keys its descriptor takes.
  void network_and_clock();  // Network mode and clock.
  void compute();  // Compute profiles and TCP's congestion control.
  void checkpoint_and_check();  // Checkpoints and the gate's tolerances.
  void faults();  // Node faults' settings: heartbeats, policy, shard, full recovery.
  void represented_sequences();  // A represented language model counts its sequences: tokens per worker and step / sequence length.
  void check_fault_events();  // The timeline's fault events against the rest of the scenario.

  const json& j;
  Obj root;
  const std::string& dir;
  Scenario sc;
  std::map<std::string, int> dc_idx;  // data center name -> index
  std::vector<std::pair<const json*, std::string>> dc_compute;  // datacenters[i].compute, read with `compute`
  std::vector<std::string> fault_paths;  // timeline[i] of each fault event
  std::vector<std::pair<size_t, std::string>> trace_sha256;  // timeline index, SHA-256 of its trace file
  std::vector<std::string> calibrated_sha256;  // SHA-256 of each compute profile's "calibrated" file
};

Scenario ScenarioReader::read() {
  header();
  datacenters();
  lan_and_wan();
  timeline();
  workload();
  strategies();
  network_and_clock();
  compute();
  checkpoint_and_check();
  faults();
  if (!sc.faults.events.empty()) sc.faults.heartbeats = true;
  sc.raw = j;
  check_sites_for_mode(sc);
  check_faults_for_mode(sc);
  check_represented_for_mode(sc);
  check_strategies_for_mode(sc);
  check_lan_collectives(sc);
  represented_sequences();
  check_fault_events();
  root.done();
  json hashed = j;  // each trace file's SHA-256 beside its entry: an edited trace is another scenario
  for (const auto& [i, sha] : trace_sha256) hashed["timeline"][i]["trace_sha256"] = sha;
  if (!calibrated_sha256.empty()) hashed["calibrated_sha256"] = calibrated_sha256;
  sc.hash = sha256_hex(hashed.dump());
  json training = hashed;
  training.erase("checkpoint");  // where and how often it checkpoints does not change the run
  sc.checkpoint.training_hash = sha256_hex(training.dump());
  return sc;
}

void ScenarioReader::header() {
  sc.schema = static_cast<int>(get_int(root, "schema", 1, 1));
  sc.name = get_string(root, "name");
  if (sc.name.empty() || sc.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") != std::string::npos)
    fail("name", json(sc.name), "use lowercase letters, digits, '-' and '_' (it names report files)");
  const std::string empty;
  sc.description = get_string(root, "description", &empty);
  const int64_t seed_def = 42;
  sc.seed = static_cast<uint64_t>(get_int(root, "seed", 0, INT64_MAX, &seed_def));
}

void ScenarioReader::datacenters() {
  // Data centers.
  const json& dcs = root.req("datacenters");
  if (!dcs.is_array() || dcs.empty() || dcs.size() > kMaxDatacenters)
    fail("datacenters", dcs, fmt::format("expected 1 to {} data centers", kMaxDatacenters));
  for (size_t i = 0; i < dcs.size(); ++i) {
    Obj d(dcs[i], fmt::format("datacenters[{}]", i));
    model::DataCenter spec;
    spec.name = get_string(d, "name");
    if (spec.name.empty()) fail(d.field("name"), json(spec.name), "must not be empty");
    spec.workers = static_cast<int>(get_int(d, "workers", 1, 64));
    if (dc_idx.count(spec.name)) fail(d.field("name"), json(spec.name), "duplicate data center name");
    dc_idx[spec.name] = static_cast<int>(i);
    sc.cluster.dcs.push_back(spec);
    dc_compute.emplace_back(d.opt("compute"), d.field("compute"));
    d.done();
  }
}

void ScenarioReader::lan_and_wan() {
  // LAN.
  sc.cluster.lan.rate_bps = 100e9;
  sc.cluster.lan.delay = std::chrono::microseconds(10);
  if (const json* lan = root.opt("lan")) {
    Obj l(*lan, "lan");
    sc.cluster.lan = link_settings(l, sc.cluster.lan, false);
    const std::string messages = "messages";
    const std::string coll = get_string(l, "collectives", &messages);
    if (coll == "analytic")
      sc.cluster.lan_collectives = engine::ClusterSpec::LanCollectives::kAnalytic;
    else if (coll != messages)
      fail(l.field("collectives"), json(coll),
           "expected \"messages\" (Gloo's ring message by message over the LAN) or \"analytic\" (each intra-DC "
           "collective one computed event: docs/guide/scale.md)");
    l.done();
  }

  // WAN links.
  const json& wan = root.req("wan");
  if (!wan.is_array()) fail("wan", wan, "expected a list of links");
  std::set<std::pair<int, int>> linked;
  for (size_t i = 0; i < wan.size(); ++i) {
    Obj w(wan[i], fmt::format("wan[{}]", i));
    model::WanLink spec;
    std::tie(spec.a, spec.b) = dc_pair(dc_idx, w.req("between"), w.field("between"));
    w.req("bandwidth");
    emu::LinkConfig base;
    base.rate_bps = 0;
    spec.a_to_b = link_settings(w, base, true);
    spec.b_to_a = spec.a_to_b;
    if (const json* rev = w.opt("reverse")) {
      Obj r(*rev, w.field("reverse"));
      spec.b_to_a = link_settings(r, spec.a_to_b, false);
      r.done();
    }
    if (!linked.insert({std::min(spec.a, spec.b), std::max(spec.a, spec.b)}).second)
      fail(w.field("between"), w.req("between"), "this pair already has a link");
    sc.cluster.wan.push_back(spec);
    w.done();
  }
  for (size_t a = 0; a < sc.cluster.dcs.size(); ++a)
    for (size_t b = a + 1; b < sc.cluster.dcs.size(); ++b)
      if (!linked.count({static_cast<int>(a), static_cast<int>(b)}))
        fail("wan", json::array(), fmt::format("no link between \"{}\" and \"{}\"", sc.cluster.dcs[a].name,
                                                sc.cluster.dcs[b].name));
}

void ScenarioReader::timeline() {
  // Timeline: link changes, and node faults (model/faults.h).
  auto fault_event = [&](Obj& e, const json& raw, const std::map<std::string, int>& dcs_by_name,
                         std::vector<std::string>& paths) {
    model::FaultEvent ev;
    const char* kinds[] = {"kill", "restart", "slow"};
    int n_kinds = 0;
    std::string kind;
    for (const char* k : kinds)
      if (e.has(k)) ++n_kinds, kind = k;
    if (n_kinds != 1 || e.has("link") || e.has("set"))
      fail(e.path(), raw, "an event is exactly one of kill, restart, slow or a link change");
    ev.kind = kind == "kill" ? model::FaultEvent::Kind::kKill
              : kind == "restart" ? model::FaultEvent::Kind::kRestart : model::FaultEvent::Kind::kSlow;
    const bool has_at = e.has("at"), has_step = e.has("at_step");
    if (has_at == has_step) fail(e.path(), raw, "needs exactly one of \"at\" (a duration) and \"at_step\" (a step)");
    if (has_at) ev.at = duration(e, "at", std::chrono::hours(24), nullptr);
    if (has_step) ev.at_step = static_cast<int>(get_int(e, "at_step", 0, 100000000));
    Obj w(e.req(kind), e.field(kind));
    const std::string dc = get_string(w, "dc");
    auto it = dcs_by_name.find(dc);
    if (it == dcs_by_name.end()) fail(w.field("dc"), json(dc), "unknown data center");
    ev.dc = it->second;
    ev.worker = static_cast<int>(get_int(w, "worker", 0, sc.cluster.dcs[static_cast<size_t>(ev.dc)].workers - 1));
    if (ev.kind == model::FaultEvent::Kind::kKill) {
      const std::string process = "process";
      ev.scope = get_string(w, "scope", &process);
      if (ev.scope != "process" && ev.scope != "host")
        fail(w.field("scope"), json(ev.scope),
             "expected \"process\" (its kernel closes its connections) or \"host\" (it goes silent)");
    }
    if (ev.kind == model::FaultEvent::Kind::kSlow) {
      ev.factor = get_number(w, "factor", 1, 1000, 0);
      if (!w.has("factor")) w.req("factor");
      if (!(ev.factor > 1)) fail(w.field("factor"), w.req("factor"), "must be > 1 (a compute slowdown)");
      const bool st = w.has("steps"), du = w.has("duration");
      if (st == du) fail(w.path(), e.req(kind), "needs exactly one of \"steps\" (a count) and \"duration\"");
      if (st) ev.steps = static_cast<int>(get_int(w, "steps", 1, 100000000));
      if (du) {
        ev.duration = duration(w, "duration", std::chrono::hours(24), nullptr);
        if (*ev.duration <= std::chrono::nanoseconds{0}) fail(w.field("duration"), w.req("duration"), "must be > 0");
      }
    }
    w.done();
    e.done();
    sc.faults.events.push_back(ev);
    paths.push_back(e.path());
  };
  // A link trace, {"trace": "x.csv", "link": [a, b], "time_scale": 0.001}: one link change per
  // CSV row (harness/link_trace.h), set as the {"at", "link", "set"} form sets it.
  auto trace_entry = [&](Obj& e, const json& raw, size_t i) {
    for (const char* k : {"at", "at_step", "set"})
      if (raw.contains(k))
        fail(e.field(k), raw[k],
             "a trace entry's times and settings come from its file (give \"trace\" or \"at\" and \"set\")");
    const json& tr = e.req("trace");
    if (!tr.is_string() || tr.get<std::string>().empty())
      fail(e.field("trace"), tr, "expected a CSV file's path (relative to the scenario's directory)");
    double scale = 1;
    if (const json* ts = e.opt("time_scale")) {
      if (!ts->is_number()) fail(e.field("time_scale"), *ts, "expected a number");
      scale = ts->get<double>();
      if (!(scale > 0)) fail(e.field("time_scale"), *ts, "must be > 0");
    }
    const auto [a, b] = dc_pair(dc_idx, e.req("link"), e.field("link"));
    e.done();
    const std::filesystem::path rel(tr.get<std::string>());
    const std::string file =
        dir.empty() || rel.is_absolute() ? rel.string() : (std::filesystem::path(dir) / rel).string();
    LinkTrace trace;
    std::string text;
    try {
      trace = read_link_trace(file, scale, &text);
    } catch (const LinkTraceError& err) {
      throw ScenarioError(fmt::format("{}: {}", e.field("trace"), err.what()));
    }
    for (const LinkTraceRow& row : trace.rows) {
      model::ScheduledChange tc;
      tc.a = a;
      tc.b = b;
      tc.change.at = row.at;
      if (row.bandwidth_mbps) tc.change.rate_bps = *row.bandwidth_mbps * 1e6;
      if (row.rtt_ms) tc.change.delay = std::chrono::nanoseconds(std::llround(*row.rtt_ms * 1e6)) / 2;
      if (row.loss) {  // {"model": "bernoulli", "p": loss}
        emu::LossConfig l;
        l.kind = emu::LossConfig::Kind::kBernoulli;
        l.p = *row.loss;
        tc.change.loss = l;
      }
      if (row.up) tc.change.up = *row.up;
      sc.cluster.timeline.push_back(tc);
    }
    trace_sha256.emplace_back(i, sha256_hex(text));
  };
  if (const json* tl = root.opt("timeline")) {
    if (!tl->is_array()) fail("timeline", *tl, "expected a list of events");
    for (size_t i = 0; i < tl->size(); ++i) {
      Obj e((*tl)[i], fmt::format("timeline[{}]", i));
      if (e.has("kill") || e.has("restart") || e.has("slow")) {
        fault_event(e, (*tl)[i], dc_idx, fault_paths);
        continue;
      }
      if (e.has("trace")) {
        trace_entry(e, (*tl)[i], i);
        continue;
      }
      if (e.has("at_step"))
        fail(e.field("at_step"), (*tl)[i]["at_step"], "a link change is scheduled by \"at\" (at_step is for kill, restart, slow)");
      model::ScheduledChange tc;
      tc.change.at = duration(e, "at", std::chrono::hours(24), nullptr);
      std::tie(tc.a, tc.b) = dc_pair(dc_idx, e.req("link"), e.field("link"));
      Obj set(e.req("set"), e.field("set"));
      if (set.has("bandwidth")) tc.change.rate_bps = bandwidth(set, "bandwidth", 0);
      if (set.has("rtt")) tc.change.delay = duration(set, "rtt", std::chrono::seconds(10), nullptr) / 2;
      if (const json* v = set.opt("loss")) tc.change.loss = loss(*v, set.field("loss"));
      if (set.has("up")) tc.change.up = get_bool(set, "up", true);
      set.done();
      e.done();
      sc.cluster.timeline.push_back(tc);
    }
  }
}

void ScenarioReader::workload() {
  // Workload.
  {
    Obj w(root.req("workload"), "workload");
    const json& model = w.req("model");
    if (model.is_string()) {
      sc.workload.model.name = model.get<std::string>();
    } else {
      Obj m(model, "workload.model");
      sc.workload.model.name = get_string(m, "name");
      if (const json* h = m.opt("hidden")) {
        if (!h->is_array()) fail(m.field("hidden"), *h, "expected a list of layer widths");
        sc.workload.model.hidden.clear();
        for (const auto& x : *h) {
          if (!x.is_number_integer()) fail(m.field("hidden"), x, "expected an integer width");
          sc.workload.model.hidden.push_back(x.get<int>());
        }
      }
      m.done();
    }
    const std::string cpu = "cpu";
    sc.workload.model.device = get_string(w, "device", &cpu);
    if (auto e = engine::validate(sc.workload.model); !e.empty())
      throw ScenarioError("workload." + e);
    if (const json* r = w.opt("represents")) sc.represented = read_represented(*r, w.field("represents"), sc.workload.model, &sc.represented_tensors,
                                                                &sc.represented_shapes);
    const std::string fm = "fashion-mnist", iid = "iid";
    sc.dataset = get_string(w, "dataset", &fm);
    if (sc.dataset != "fashion-mnist") fail("workload.dataset", json(sc.dataset), "unknown dataset (fashion-mnist)");
    // workload.partition: "iid", or {"kind": "dirichlet" | "label_skew", ...} (engine/data/partition.h).
    if (const json* pj = w.opt("partition"); pj && pj->is_object()) {
      Obj p(*pj, w.field("partition"));
      const std::string kind = get_string(p, "kind");
      engine::PartitionSpec& ps = sc.workload.partition;
      if (kind == "dirichlet") {
        ps.kind = engine::PartitionSpec::Kind::kDirichlet;
        p.req("alpha");
        ps.alpha = get_number(p, "alpha", 0, 1e6, 0);
        if (!(ps.alpha > 0)) fail(p.field("alpha"), p.req("alpha"), "must be > 0 (Dirichlet concentration)");
        const std::string dc = "dc";
        const std::string level = get_string(p, "level", &dc);
        if (level != "dc" && level != "worker")
          fail(p.field("level"), json(level), "expected \"dc\" (one share per data center) or \"worker\"");
        ps.level = level == "dc" ? engine::PartitionSpec::Level::kDc : engine::PartitionSpec::Level::kWorker;
        const int64_t ten = 10;
        ps.min_size = static_cast<int>(get_int(p, "min_size", 1, 1000000, &ten));
      } else if (kind == "label_skew") {
        ps.kind = engine::PartitionSpec::Kind::kLabelSkew;
        ps.classes_per_dc = static_cast<int>(get_int(p, "classes_per_dc", 1, 1000000));
        if (ps.classes_per_dc > engine::kFashionMnistClasses)
          fail(p.field("classes_per_dc"), p.req("classes_per_dc"), "more classes per data center than the dataset's 10");
      } else if (kind == "semantic") {
        ps.kind = engine::PartitionSpec::Kind::kSemantic;
        const int64_t sixteen = 16, zero = 0;
        ps.semantic.components = static_cast<int>(get_int(p, "components", 1, 64, &sixteen));
        ps.semantic.clusters = static_cast<int>(get_int(p, "clusters", 0, 10000, &zero));
        const std::string pca = "pca";
        const std::string emb = get_string(p, "embedding", &pca);
        if (emb != "pca") fail(p.field("embedding"), json(emb), "unknown embedding (pca: principal components of the pixels)");
      } else {
        fail(p.field("kind"), json(kind),
             "unknown partition (dirichlet, label_skew or semantic; or \"iid\" instead of an object)");
      }
      p.done();
      sc.partition = kind;
    } else {
      sc.partition = get_string(w, "partition", &iid);
      if (sc.partition != "iid")
        fail("workload.partition", json(sc.partition), "unknown partition (\"iid\", or an object: dirichlet, label_skew)");
    }
    // workload.dc_weights: a DC's weight in the means over data centers (engine/data/partition.h).
    const std::string by_workers = "workers";
    const std::string weights = get_string(w, "dc_weights", &by_workers);
    if (weights != "workers" && weights != "examples")
      fail("workload.dc_weights", json(weights), "expected \"workers\" (each DC's share of the workers) or \"examples\" "
                                                 "(its share of the training examples)");
    sc.workload.dc_weights = weights == "workers" ? engine::DcWeighting::kWorkers : engine::DcWeighting::kExamples;
    sc.workload.batch_per_worker = static_cast<int>(get_int(w, "batch_per_worker", 1, 4096));
    // workload.global_batch: a share of each batch from a global pool (engine/data/global_batch.h).
    if (const json* gj = w.opt("global_batch")) {
      Obj g(*gj, w.field("global_batch"));
      engine::GlobalBatchSpec& gb = sc.workload.global_batch;
      g.req("fraction");
      gb.fraction = get_number(g, "fraction", 0, 1, 0);
      const size_t bg = gb.count(static_cast<size_t>(sc.workload.batch_per_worker));
      if (!(gb.fraction > 0 && gb.fraction < 1) || bg < 1 ||
          bg >= static_cast<size_t>(sc.workload.batch_per_worker))
        fail(g.field("fraction"), g.req("fraction"),
             fmt::format("must leave at least one example of the pool and one of the shard in a batch of {} "
                         "(round(fraction x batch_per_worker) in [1, {}])",
                         sc.workload.batch_per_worker, sc.workload.batch_per_worker - 1));
      gb.beta = get_number(g, "beta", 0, 1, 0.5);
      gb.pool = get_number(g, "pool", 0, 1, 0.15);
      if (!(gb.pool > 0)) fail(g.field("pool"), g.req("pool"), "must be > 0 (a share of the training set)");
      g.done();
    }
    sc.workload.steps = static_cast<int>(get_int(w, "steps", 1, 1000000));
    const int64_t zero = 0;
    sc.train_limit = static_cast<size_t>(get_int(w, "train_examples", 0, 60000, &zero));
    sc.test_limit = static_cast<size_t>(get_int(w, "test_examples", 0, 10000, &zero));
    const int64_t ten = 10;
    sc.workload.eval_points = static_cast<int>(get_int(w, "eval_points", 1, 1000, &ten));
    if (const json* t = w.opt("target_accuracy")) {
      const double v = with_field(w.field("target_accuracy"), *t,
                                  [](const json& x) { return common::probability_from_json(x); });
      if (!(v > 0)) fail(w.field("target_accuracy"), *t, "must be in (0, 1] (a test accuracy)");
      sc.target_accuracy = v;
    }
    Obj o(w.req("optimizer"), "workload.optimizer");
    const std::string name = get_string(o, "name");
    if (name != "sgd") fail(o.field("name"), json(name), "unknown optimizer (sgd)");
    o.req("lr");
    sc.workload.optimizer.lr = get_number(o, "lr", 0, 1e9, 0.05);
    sc.workload.optimizer.momentum = get_number(o, "momentum", -1e9, 1e9, 0.0);
    sc.workload.optimizer.weight_decay = get_number(o, "weight_decay", -1e9, 1e9, 0.0);
    if (auto e = engine::validate(sc.workload.optimizer); !e.empty()) throw ScenarioError("workload." + e);
    o.done();
    w.done();
    sc.workload.seed = sc.seed;
  }
}

void ScenarioReader::strategies() {
  // Strategies.
  const json& st = root.req("strategies");
  if (!st.is_array() || st.empty()) fail("strategies", st, "expected a non-empty list");
  std::set<std::string> names;
  for (size_t i = 0; i < st.size(); ++i) {
    Obj s(st[i], fmt::format("strategies[{}]", i));
    engine::StrategyConfig c;
    c.name = get_string(s, "name");
    const engine::StrategyDescriptor* desc = nullptr;
    try {
      desc = &engine::find_strategy(c.name);
    } catch (const engine::UnknownStrategy& e) {
      throw ScenarioError(s.path() + "." + e.what());
    }
    // A key another strategy takes: say which (the generic "unknown key" for the rest).
    for (auto it = st[i].begin(); it != st[i].end(); ++it) {
      if (it.key() == "name" || it.key() == "label" || it.key() == "faults" || desc->key(it.key())) continue;
      std::string takers;
      size_t count = 0;
      for (const engine::StrategyDescriptor* other : engine::strategy_table())
        if (other->key(it.key())) takers += (count++ ? ", " : "") + std::string(other->name);
      if (count)
        fail(s.field(it.key()), it.value(), fmt::format("only {} take{} a {}", takers, count > 1 ? "" : "s", it.key()));
    }
    // Each key the strategy accepts, read by its kind; an absent key keeps StrategyConfig's default.
    for (const engine::StrategyKey* k : desc->keys) {
      const std::string key(k->name);
      const json* v = s.opt(key);
      if (!v) continue;
      switch (k->kind) {
        case engine::StrategyKey::Kind::kInteger:
          k->set(c, get_int(s, key, k->lo, k->hi));
          break;
        case engine::StrategyKey::Kind::kFraction:
          k->set(c, with_field(s.field(key), *v, [](const json& x) { return common::probability_from_json(x); }));
          break;
        case engine::StrategyKey::Kind::kFlag:
          k->set(c, get_bool(s, key, false));  // present: the default is not used
          break;
        case engine::StrategyKey::Kind::kText:
          k->set(c, get_string(s, key));
          break;
        case engine::StrategyKey::Kind::kNumber:
          k->set(c, get_number(s, key, -1e300, 1e300, 0.0));  // the key's check states the range
          break;
        case engine::StrategyKey::Kind::kSteps:
          if (v->is_string()) {
            if (v->get<std::string>() != "auto")
              fail(s.field(key), *v, "expected a number of steps or \"auto\" (adaptive K)");
            k->set(c, std::string("auto"));
          } else {
            k->set(c, get_int(s, key, k->lo, k->hi));
          }
          break;
      }
    }
    if (auto e = desc->validate(c); !e.empty()) throw ScenarioError(s.path() + "." + e);
    if (const json* fj = s.opt("faults")) {  // this entry's recovery policy, instead of faults.policy
      Obj fo(*fj, s.field("faults"));
      std::string policy;
      model::EstimateConfig est;
      read_fault_policy(fo, policy, est);
      fo.done();
      c.fault_policy = policy;
      c.fault_estimate = est;
    }
    if (s.has("label")) {
      c.label = get_string(s, "label");
      if (c.label.empty() || c.label.size() > 64 ||
          c.label.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-") !=
              std::string::npos)
        fail(s.field("label"), json(c.label), "expected 1 to 64 of [A-Za-z0-9_.+-]");
      for (const std::string& other : engine::strategy_names())
        if (c.label == other && other != c.name)
          fail(s.field("label"), json(c.label), "the name of another strategy: reports would confuse them");
    }
    if (!names.insert(c.run_name()).second)
      fail(s.field(c.label.empty() ? "name" : "label"), json(c.run_name()),
           c.label.empty() ? "strategy listed twice (give each entry a distinct \"label\")"
                           : "label listed twice");
    s.done();
    sc.strategies.push_back(c);
  }
}

void ScenarioReader::network_and_clock() {
  const std::string emb = "embedded";
  const std::string network = get_string(root, "network", &emb);
  const std::optional<NetworkMode> mode = parse_network_mode(network);
  if (!mode)
    fail("network", json(network),
         "unknown network mode (one of \"embedded\": threads over the in-process WAN model, \"process\": one "
         "process per rank on this host's loopback, \"dpdk\": one process per rank in per-DC namespaces behind "
         "the DPDK emulator)");
  sc.network = *mode;

  const bool in_process = traits(sc.network).in_process;
  const std::string default_clock = in_process ? "virtual" : "wall";
  const std::string clock = get_string(root, "clock", &default_clock);
  if (clock == "virtual") {
    if (!in_process)
      fail("clock", json(clock),
           fmt::format("the {} network mode runs in wall time only (\"virtual\" is for \"embedded\")",
                       to_string(sc.network)));
    sc.clock = engine::ClockMode::kVirtual;
  } else if (clock == "wall") {
    sc.clock = engine::ClockMode::kWall;
  } else {
    fail("clock", json(clock),
         "unknown clock (\"virtual\": time is the scenario's, compute charged by CPU time or the compute "
         "profile; \"wall\": the host's clock)");
  }
}

void ScenarioReader::compute() {
  // Compute profile: `compute` for every DC, `datacenters[i].compute` overriding it per DC.
  // Declared ({"step_time", ...}) or derived from the hardware ({"gpu", "mfu", "params",
  // "tokens_per_worker_per_step"}, model/hardware.h); a DC override of a derived profile may
  // change any of the derivation's inputs.
  struct Read {
    engine::ComputeProfile prof;
    std::optional<model::ComputeDerivation> derived;
    std::optional<model::CalibrationSource> calibrated;
  };
  auto read_profile = [&](const json& j, const std::string& path, const Read* base) {
    Obj c(j, path);
    Read r = base ? *base : Read{};
    const bool derive = c.has("gpu") || c.has("mfu") || c.has("params") || c.has("tokens_per_worker_per_step") ||
                        c.has("gpus_per_worker");
    if (derive && c.has("step_time"))
      fail(c.field("step_time"), c.req("step_time"),
           "a profile derived from the hardware (\"gpu\", \"mfu\", \"params\", \"tokens_per_worker_per_step\") "
           "computes its step_time: give one or the other");
    if (const json* cal = c.opt("calibrated")) {
      // A profile measured by `geotb calibrate` (docs/guide/gpu.md): its "compute" block, which
      // keys given beside "calibrated" may override.
      if (derive || c.has("step_time"))
        fail(c.field("calibrated"), *cal, "a calibrated profile brings its own step_time: give \"calibrated\" alone "
                                          "(reduce_ns_per_element and compress_ns_per_element may override it)");
      if (!cal->is_string() || cal->get<std::string>().empty())
        fail(c.field("calibrated"), *cal, "expected the path of a geotb calibrate output (relative to the scenario's directory)");
      const std::filesystem::path rel(cal->get<std::string>());
      const std::string file = dir.empty() || rel.is_absolute() ? rel.string() : (std::filesystem::path(dir) / rel).string();
      std::ifstream in(file, std::ios::binary);
      if (!in) fail(c.field("calibrated"), *cal, "cannot read " + file);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      json doc = json::parse(text, nullptr, false);
      if (doc.is_discarded() || !doc.is_object() || !doc.contains("compute") || !doc["compute"].is_object() ||
          !doc["compute"].contains("step_time") || !doc["compute"]["step_time"].is_string())
        fail(c.field("calibrated"), *cal, file + ": not a geotb calibrate output (no \"compute\": {\"step_time\", ...})");
      const json& cp = doc["compute"];
      try {
        r.prof.step_time = common::parse_duration(cp["step_time"].get<std::string>());
      } catch (const std::exception& e) {
        fail(c.field("calibrated"), *cal, file + ": compute.step_time: " + e.what());
      }
      if (r.prof.step_time <= std::chrono::nanoseconds{0} || r.prof.step_time > std::chrono::hours(1))
        fail(c.field("calibrated"), *cal, file + ": compute.step_time must be in (0, 1 h]");
      for (const char* k : {"reduce_ns_per_element", "compress_ns_per_element"}) {
        if (!cp.contains(k) || !cp[k].is_number() || !(cp[k].get<double>() >= 0))
          fail(c.field("calibrated"), *cal, file + ": compute." + k + ": expected a number >= 0");
      }
      r.prof.reduce_ns_per_element = cp["reduce_ns_per_element"].get<double>();
      r.prof.compress_ns_per_element = cp["compress_ns_per_element"].get<double>();
      r.derived.reset();
      auto text_of = [&](const json& o, const char* k) {
        return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string("unknown");
      };
      r.calibrated = model::CalibrationSource{cal->get<std::string>(), text_of(doc.value("device", json()), "name"),
                                              text_of(doc, "measured_at")};
      calibrated_sha256.push_back(sha256_hex(text));
    } else if (derive || (r.derived && !c.has("step_time"))) {
      r.calibrated.reset();
      const model::ComputeDerivation* b = r.derived ? &*r.derived : nullptr;
      const std::string gpu_name = b && !c.has("gpu") ? b->gpu : get_string(c, "gpu");
      const model::GpuSpec* gpu = model::find_gpu(gpu_name);
      if (!gpu) fail(c.field("gpu"), c.req("gpu"), fmt::format("unknown GPU (the catalog has: {})", model::gpu_names()));
      double mfu = b ? b->mfu : 0;
      if (!b || c.has("mfu")) {
        const json& v = c.req("mfu");
        if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1))
          fail(c.field("mfu"), v, "must be a number in (0, 1] (model FLOPs utilisation, e.g. 0.4)");
        mfu = v.get<double>();
      }
      auto count = [&](const char* key, double inherited) {
        if (b && !c.has(key)) return inherited;
        const json& v = c.req(key);
        std::string why;
        const std::optional<double> x = positive_count(v, &why);
        if (!x) fail(c.field(key), v, why);
        return *x;
      };
      // The represented model's parameters unless the profile names its own count.
      const double params = !b && !c.has("params") && sc.represented ? static_cast<double>(sc.represented->params)
                                                                        : count("params", b ? b->params : 0);
      const double tokens = count("tokens_per_worker_per_step", b ? b->tokens_per_worker_per_step : 0);
      const int64_t one = b ? b->gpus_per_worker : 1;
      const int gpus = static_cast<int>(get_int(c, "gpus_per_worker", 1, 1024, &one));
      r.derived = model::derive_compute(*gpu, mfu, params, tokens, gpus);
      r.prof.step_time = std::chrono::nanoseconds(static_cast<int64_t>(std::llround(r.derived->step_time_s * 1e9)));
      if (r.prof.step_time <= std::chrono::nanoseconds{0} || r.prof.step_time > std::chrono::hours(1))
        fail(path, j, fmt::format("derives a step time of {:g} s: must be in (0, 1 h]", r.derived->step_time_s));
      r.prof.reduce_ns_per_element = r.derived->reduce_ns_per_element;
      r.prof.compress_ns_per_element = r.derived->compress_ns_per_element;
    } else {
      r.derived.reset();
      if (c.has("step_time")) r.calibrated.reset();
      const auto no_step = std::chrono::nanoseconds{0};
      r.prof.step_time = duration(c, "step_time", std::chrono::hours(1), base ? &r.prof.step_time : nullptr);
      if (r.prof.step_time <= no_step) fail(c.field("step_time"), c.req("step_time"), "must be > 0");
    }
    // Explicit per-element charges override the catalog's (the derivation then records them).
    if (c.has("reduce_ns_per_element")) {
      r.prof.reduce_ns_per_element = get_number(c, "reduce_ns_per_element", 0, 1e6, 0);
      if (r.derived) {
        r.derived->reduce_ns_per_element = r.prof.reduce_ns_per_element;
        r.derived->reduce_source = "declared in the scenario";
      }
    }
    if (c.has("compress_ns_per_element")) {
      r.prof.compress_ns_per_element = get_number(c, "compress_ns_per_element", 0, 1e6, 0);
      if (r.derived) {
        r.derived->compress_ns_per_element = r.prof.compress_ns_per_element;
        r.derived->compress_source = "declared in the scenario";
      }
    }
    c.done();
    if (sc.clock != engine::ClockMode::kVirtual)
      fail(path, j, "a compute profile needs \"clock\": \"virtual\" (in wall time compute is what it takes)");
    return r;
  };
  std::optional<Read> top;
  if (const json* cp = root.opt("compute")) {
    top = read_profile(*cp, "compute", nullptr);
    sc.compute_default = top->prof;
  }
  const bool any_dc = std::any_of(dc_compute.begin(), dc_compute.end(), [](const auto& p) { return p.first; });
  if (top || any_dc) {
    for (size_t i = 0; i < dc_compute.size(); ++i) {
      const auto& [j, path] = dc_compute[i];
      if (j) {
        const Read r = read_profile(*j, path, top ? &*top : nullptr);
        sc.compute.push_back(r.prof);
        sc.compute_derived.push_back(r.derived);
        sc.compute_calibrated.push_back(r.calibrated);
      } else if (top) {
        sc.compute.push_back(top->prof);
        sc.compute_derived.push_back(top->derived);
        sc.compute_calibrated.push_back(top->calibrated);
      } else {
        throw ScenarioError(fmt::format(
            "{}: missing: another data center declares a compute profile, so every one needs a step_time "
            "(here or in a top-level \"compute\"); mixing declared and measured compute is not supported",
            path));
      }
    }
  }

  const std::string cc_auto = "auto";
  sc.tcp_congestion_control = get_string(root, "tcp_congestion_control", &cc_auto);
  validate_tcp_congestion_control("tcp_congestion_control", sc.tcp_congestion_control);
  sc.cluster.segments.cc = model_congestion_control(sc.tcp_congestion_control);
}

void ScenarioReader::checkpoint_and_check() {
  if (const json* cp = root.opt("checkpoint")) {
    Obj c(*cp, "checkpoint");
    const int64_t none = 0;
    sc.checkpoint.every_steps = static_cast<int>(get_int(c, "every_steps", 0, 1000000, &none));
    // Optional: `geotb run --checkpoint-dir` may give it instead (cmd_run refuses neither).
    if (c.has("dir")) {
      sc.checkpoint.dir = get_string(c, "dir");
      if (sc.checkpoint.dir.empty()) fail("checkpoint.dir", json(sc.checkpoint.dir), "must not be empty");
    }
    c.done();
  }
  if (const json* ch = root.opt("check")) {
    Obj c(*ch, "check");
    sc.check.throughput_ratio = get_number(c, "throughput_ratio_tolerance", 0, 10, sc.check.throughput_ratio);
    sc.check.wan_bytes_ratio = get_number(c, "wan_bytes_ratio_tolerance", 0, 10, sc.check.wan_bytes_ratio);
    // Absent: the gate's default for the baseline's mode (harness/check.h).
    auto optional_number = [&c](const char* key, double hi) -> std::optional<double> {
      if (!c.opt(key)) return std::nullopt;
      return get_number(c, key, 0, hi, 0);
    };
    sc.check.accuracy = optional_number("accuracy_tolerance", 1);
    sc.check.timing = optional_number("timing_tolerance", 10);
    sc.check.bytes = optional_number("bytes_tolerance", 10);
    sc.check.cross_cpu_accuracy = optional_number("cross_cpu_accuracy_tolerance", 1);
    c.done();
  }
}

void ScenarioReader::faults() {
  // Node faults: heartbeats, policy, and checks of the timeline's fault events against the rest.
  if (const json* fj = root.opt("faults")) {
    Obj fo(*fj, "faults");
    sc.faults.heartbeats = true;
    if (const json* hj = fo.opt("heartbeat")) {
      Obj h(*hj, "faults.heartbeat");
      model::HeartbeatConfig& hb = sc.faults.heartbeat;
      hb.interval = duration(h, "interval", std::chrono::minutes(10), &hb.interval);
      hb.timeout = duration(h, "timeout", std::chrono::minutes(10), &hb.timeout);
      hb.confirmation = duration(h, "confirmation", std::chrono::minutes(10), &hb.confirmation);
      if (hb.interval < std::chrono::milliseconds(1)) fail(h.field("interval"), h.req("interval"), "must be at least 1ms");
      if (hb.timeout <= hb.interval)
        fail(h.field("timeout"), hj->value("timeout", json(common::format_duration(hb.timeout))),
             fmt::format("must exceed the interval ({}): a peer is silent for an interval between two heartbeats",
                         common::format_duration(hb.interval)));
      const int64_t witnesses_def = hb.witnesses;
      hb.witnesses = static_cast<int>(get_int(h, "witnesses", 0, 16, &witnesses_def));
      hb.unreachable = duration(h, "unreachable", std::chrono::hours(1), &hb.unreachable);
      if (hb.witnesses > 0 && hb.unreachable < hb.confirmation)
        fail(h.field("unreachable"), hj->value("unreachable", json(common::format_duration(hb.unreachable))),
             fmt::format("must be at least the confirmation ({}): it bounds a suspicion no witness answers",
                         common::format_duration(hb.confirmation)));
      h.done();
    }
    const std::string drop = "drop";
    read_fault_policy(fo, sc.faults.policy, sc.faults.estimate);
    sc.faults.shard = get_string(fo, "shard", &drop);
    if (sc.faults.shard != "drop" && sc.faults.shard != "redistribute")
      fail("faults.shard", json(sc.faults.shard), "unknown shard policy (drop or redistribute)");
    if (const json* rj = fo.opt("full_recovery")) {
      Obj r(*rj, "faults.full_recovery");
      model::FullRecoveryConfig& fr = sc.faults.full_recovery;
      fr.above_fraction = get_number(r, "above_fraction", 0, 1, fr.above_fraction);
      if (!(fr.above_fraction > 0)) fail(r.field("above_fraction"), r.req("above_fraction"), "must be above 0");
      const std::string survivors = "survivors";
      fr.then = get_string(r, "then", &survivors);
      if (fr.then != "survivors" && fr.then != "restarts")
        fail(r.field("then"), json(fr.then),
             "expected \"survivors\" (carry on with them) or \"restarts\" (restart the dead workers from the "
             "checkpoint and wait for them)");
      if (r.opt("restart_after")) {
        if (fr.then != "restarts")
          fail(r.field("restart_after"), *r.opt("restart_after"), "only for \"then\": \"restarts\"");
        fr.restart_after = duration(r, "restart_after", std::chrono::hours(24), &fr.restart_after);
      }
      r.done();
    }
    fo.done();
  }
}

void ScenarioReader::represented_sequences() {
  // A represented language model counts its sequences: tokens per worker and step / sequence length.
  if (sc.represented && sc.represented->sequence_length > 0 && !sc.compute_derived.empty() && sc.compute_derived[0]) {
    const double tokens = sc.compute_derived[0]->tokens_per_worker_per_step;
    for (const auto& d : sc.compute_derived)
      if (!d || d->tokens_per_worker_per_step != tokens)
        fail("compute.tokens_per_worker_per_step", json(tokens),
             "a represented language model needs the same tokens per worker and step in every data center");
    const double seqs = tokens / static_cast<double>(sc.represented->sequence_length);
    if (seqs < 1 || seqs != std::floor(seqs))
      fail("compute.tokens_per_worker_per_step", json(tokens),
           fmt::format("must be a whole number of sequences of workload.represents.sequence_length {}",
                       sc.represented->sequence_length));
    sc.workload.samples_per_worker_per_step = static_cast<uint64_t>(seqs);
  }
}

void ScenarioReader::check_fault_events() {
  std::map<std::pair<int, int>, const model::FaultEvent*> dead;  // (dc, worker) -> its kill, while dead
  std::map<int, int> dead_in_dc;
  // A dead site (every worker of a DC killed): only a quorum of sites recovers from it, by dropping
  // the site until it is restarted whole (engine/faults/fault_runtime.h).
  const bool all_quorum = !sc.strategies.empty() &&
                          std::all_of(sc.strategies.begin(), sc.strategies.end(), [](const auto& st) { return !st.quorum.empty(); });
  std::map<int, size_t> site_killed;                     // dc -> the kill that took its last worker, while dead
  std::map<int, std::optional<int>> site_back;           // dc -> the restarts' at_step, while they come in
  std::set<int> dead_sites;                              // every DC the timeline ever kills whole
  for (size_t i = 0; i < sc.faults.events.size(); ++i) {
    const model::FaultEvent& ev = sc.faults.events[i];
    const std::string& path = fault_paths[i];
    const std::string kind = model::to_string(ev.kind);
    if (ev.at_step && *ev.at_step >= sc.workload.steps)
      fail(path + ".at_step", json(*ev.at_step), fmt::format("must be below workload.steps ({})", sc.workload.steps));
    const auto key = std::make_pair(ev.dc, ev.worker);
    const auto who = fmt::format("{{\"dc\": \"{}\", \"worker\": {}}}", sc.cluster.dcs[static_cast<size_t>(ev.dc)].name, ev.worker);
    if (ev.kind == model::FaultEvent::Kind::kKill) {
      if (dead.count(key)) fail(path + ".kill", json::parse(who), "this worker is already dead (restart it first)");
      const int W = sc.cluster.dcs[static_cast<size_t>(ev.dc)].workers;
      if (W < 2 && !all_quorum)
        fail(path + ".kill", json::parse(who),
             "a data center of 1 worker has no survivor to shrink to (with \"quorum\" on every strategy, a dead site "
             "is dropped until it is restarted)");
      if (++dead_in_dc[ev.dc] >= W) {
        if (!all_quorum)
          fail(path + ".kill", json::parse(who),
               "kills every worker of its data center (shrink needs a survivor; give every strategy a \"quorum\" of "
               "sites to drop the dead site until it is restarted)");
        // One step (or instant) for the whole site: a survivor of an earlier kill would shrink and
        // take over the leader's address first.
        for (const auto& [k, e] : dead)
          if (k.first == ev.dc && (e->at_step != ev.at_step || e->at != ev.at))
            fail(path + (ev.at_step ? ".at_step" : ".at"),
                 ev.at_step ? json(*ev.at_step) : json(common::format_duration(*ev.at)),
                 "a dead site's workers are killed at one step (or instant): this kill takes the last of them at "
                 "another than an earlier one");
        site_killed[ev.dc] = i;
        dead_sites.insert(ev.dc);
      }
      dead[key] = &ev;
    } else if (ev.kind == model::FaultEvent::Kind::kRestart) {
      auto it = dead.find(key);
      if (it == dead.end()) fail(path + ".restart", json::parse(who), "no earlier kill of this worker");
      const model::FaultEvent& k = *it->second;
      if (k.at_step.has_value() != ev.at_step.has_value())
        fail(path, json(ev.at_step ? "at_step" : "at"),
             "a restart is timed like its kill (both \"at_step\" or both \"at\")");
      if (ev.at_step ? *ev.at_step <= *k.at_step : *ev.at <= *k.at)
        fail(path + (ev.at_step ? ".at_step" : ".at"), ev.at_step ? json(*ev.at_step) : json(common::format_duration(*ev.at)),
             "must be after the kill it restarts");
      if (!ev.at_step)
        fail(path + ".at", json(common::format_duration(*ev.at)),
             "a restart is timed by \"at_step\" (the step boundary of its group at which it rejoins)");
      if (site_killed.count(ev.dc)) {  // a dead site comes back whole, at one step
        auto [b, first] = site_back.emplace(ev.dc, ev.at_step);
        if (!first && b->second != ev.at_step)
          fail(path + ".at_step", json(*ev.at_step),
               fmt::format("a dead site is restarted whole at one step (an earlier restart of it is at step {})",
                           *b->second));
      }
      dead.erase(it);
      if (--dead_in_dc[ev.dc] == 0) {
        site_killed.erase(ev.dc);
        site_back.erase(ev.dc);
      }
    }
  }
  for (const auto& [dc, kill] : site_killed) {
    if (!site_back.count(dc)) continue;  // dead for good: the others go on without it
    const model::FaultEvent& ev = sc.faults.events[kill];
    fail(fault_paths[kill] + ".kill",
         json::parse(fmt::format("{{\"dc\": \"{}\", \"worker\": {}}}", sc.cluster.dcs[static_cast<size_t>(dc)].name, ev.worker)),
         fmt::format("takes the last worker of its data center, which is only partly restarted: restart all {} of "
                     "them at one step, or none (nobody of the site would be alive to hand a part of it the model)",
                     sc.cluster.dcs[static_cast<size_t>(dc)].workers));
  }
  if (!dead_sites.empty()) {
    const size_t m = sc.cluster.dcs.size();
    if (2 * dead_sites.size() >= m)
      fail("timeline", json(sc.cluster.dcs[static_cast<size_t>(*dead_sites.rbegin())].name),
           fmt::format("{} of {} data centers are killed whole: a quorum of sites needs a strict majority of them "
                       "alive (at least 3 sites, fewer than half of them killed whole)",
                       dead_sites.size(), m));
  }
  // Full recovery: the kills that cross the threshold need a complete checkpoint to go back to,
  // i.e. one taken before the first kill (a checkpoint is complete once every worker wrote it).
  const int total = total_workers(sc);
  const model::FullRecoveryConfig& fr = sc.faults.full_recovery;
  if (full_recovery_reachable(sc)) {
    const auto why = fmt::format("{} kills of {} workers cross faults.full_recovery.above_fraction ({}): full "
                                 "recovery goes back to the last checkpoint",
                                 sc.faults.kills(), total, fr.above_fraction);
    for (size_t i = 0; i < sc.faults.events.size(); ++i)
      if (sc.faults.events[i].kind == model::FaultEvent::Kind::kRestart)
        fail(fault_paths[i] + ".restart", json(model::to_string(sc.faults.events[i].kind)),
             why + "; restarts together with full recovery are not supported yet (set "
                   "faults.full_recovery.above_fraction to 1)");
    if (sc.checkpoint.every_steps <= 0)
      fail("checkpoint.every_steps", json(sc.checkpoint.every_steps), why + ", so the run must take them");
    std::optional<int> first_kill;
    for (const model::FaultEvent& ev : sc.faults.events)
      if (ev.kind == model::FaultEvent::Kind::kKill && ev.at_step)
        first_kill = std::min(first_kill.value_or(*ev.at_step), *ev.at_step);
    if (first_kill && sc.checkpoint.every_steps > *first_kill)
      fail("checkpoint.every_steps", json(sc.checkpoint.every_steps),
           why + fmt::format(", and the first checkpoint must come before the first kill (at_step {}): a "
                             "checkpoint is complete once every worker has written it",
                             *first_kill));
  }
  if (sc.faults.has_kills())
    for (const auto& st : sc.strategies) {
      const engine::StrategyInfo& info = engine::find_strategy(st.name).needs;
      if (!info.survives_kills) {
        std::string ok;
        for (const auto* d : engine::strategy_table())
          if (d->needs.survives_kills) ok += (ok.empty() ? "" : ", ") + std::string(d->name);
        std::string first;  // the event that asks for it
        for (size_t i = 0; i < sc.faults.events.size() && first.empty(); ++i)
          if (sc.faults.events[i].kind == model::FaultEvent::Kind::kKill) first = fault_paths[i] + ".kill";
        fail("strategies", json(st.name),
             "this strategy does not survive node kills (" + first + "; supported: " + ok + ")");
      }
      // Adaptive K's decisions travel with the rounds; a leader's successor would start without
      // the measurements its predecessor held. Not built yet.
      if (st.K_auto)
        fail("strategies", json(st.name), "\"K\": \"auto\" with node kills is not supported yet (give a fixed K)");
      // A DC leader's kill: a survivor takes over its address (docs/guide/faults.md). Bringing
      // a worker back into a DC led by a successor is not built yet: the restarted worker would
      // have to learn who leads.
      const bool dc_groups = info.needs_intra_dc && !info.one_group;
      std::set<int> leaderless;  // DCs whose leader the timeline kills (but sites killed whole)
      for (const model::FaultEvent& ev : sc.faults.events)
        if (ev.kind == model::FaultEvent::Kind::kKill && ev.worker == 0 && !dead_sites.count(ev.dc)) leaderless.insert(ev.dc);
      if (!dc_groups || leaderless.empty()) continue;
      for (size_t i = 0; i < sc.faults.events.size(); ++i)
        if (sc.faults.events[i].kind == model::FaultEvent::Kind::kRestart && leaderless.count(sc.faults.events[i].dc))
          fail(fault_paths[i] + ".restart.dc", json(sc.cluster.dcs[static_cast<size_t>(sc.faults.events[i].dc)].name),
               fmt::format("{}: a restart in a data center whose leader the timeline kills is not supported yet "
                           "(its successor leads the DC); restart in another DC, or use naive_ddp or lan",
                           st.name));
      if (full_recovery_reachable(sc))
        fail("faults.full_recovery.above_fraction", json(sc.faults.full_recovery.above_fraction),
             fmt::format("{}: {} kills of {} workers would cross it, and full recovery together with a DC "
                         "leader's kill is not supported yet (set it to 1)",
                         st.name, sc.faults.kills(), total_workers(sc)));
    }
}

}  // namespace

Scenario parse_scenario(const json& j, const std::string& origin, const std::string& dir) {
  try {
    return ScenarioReader(j, dir).read();
  } catch (const ScenarioError& e) {
    throw ScenarioError(origin + ": " + e.what());
  }
}

void check_faults_for_mode(const Scenario& sc) {
  if (!sc.faults.active()) return;
  // timeline[i] of each fault event, in plan order.
  std::vector<std::string> paths;
  if (sc.raw.contains("timeline") && sc.raw["timeline"].is_array())
    for (size_t i = 0; i < sc.raw["timeline"].size(); ++i) {
      const json& e = sc.raw["timeline"][i];
      if (e.is_object() && (e.contains("kill") || e.contains("restart") || e.contains("slow")))
        paths.push_back(fmt::format("timeline[{}]", i));
    }
  const bool virt = sc.clock == engine::ClockMode::kVirtual;
  if (traits(sc.network).in_process) {
    if (!virt)
      fail(paths.empty() ? "faults" : paths[0], json("embedded/wall"),
           "node faults in the embedded mode run on the virtual clock only (the process and dpdk modes run them "
           "on the wall clock)");
    return;
  }
  // The process and dpdk modes (engine/faults/socket_port.h): kills at a step, shrink.
  // Restarts: the killed rank's process is reaped and spawned again; a frozen host's (scope
  // "host") is not reaped before the end, and a restarted process that is killed again is not
  // built yet.
  std::map<std::pair<int, int>, size_t> killed;  // (dc, worker) -> its kill's index, while dead
  std::set<std::pair<int, int>> restarted;
  for (size_t i = 0; i < sc.faults.events.size() && i < paths.size(); ++i) {
    const model::FaultEvent& e = sc.faults.events[i];
    const auto who = std::make_pair(e.dc, e.worker);
    if (e.kind == model::FaultEvent::Kind::kKill) {
      if (restarted.count(who))
        fail(paths[i] + ".kill", json(sc.cluster.dcs[static_cast<size_t>(e.dc)].name + "/" + std::to_string(e.worker)),
             "a second kill of a worker the timeline restarted is not implemented in the process and dpdk modes yet "
             "(the embedded mode runs it)");
      killed[who] = i;
    } else if (e.kind == model::FaultEvent::Kind::kRestart) {
      const auto it = killed.find(who);
      if (it != killed.end() && sc.faults.events[it->second].scope == "host")
        fail(paths[it->second] + ".kill.scope", json("host"),
             "a restart of a worker whose host froze is not implemented in the process and dpdk modes yet (its "
             "frozen process holds its address until the end); kill it with scope \"process\"");
      restarted.insert(who);
    }
  }
  if (sc.faults.full_recovery_restarts(total_workers(sc)))
    for (size_t i = 0; i < sc.faults.events.size() && i < paths.size(); ++i)
      if (sc.faults.events[i].kind == model::FaultEvent::Kind::kKill && sc.faults.events[i].scope == "host")
        fail(paths[i] + ".kill.scope", json("host"),
             "a full recovery's restart of a worker whose host froze is not implemented in the process and dpdk "
             "modes yet (its frozen process holds its address until the end); kill it with scope \"process\"");
}

void check_sites_for_mode(const Scenario& sc) {
  const size_t m = sc.cluster.dcs.size();
  if (m > traits(sc.network).max_datacenters)
    fail("datacenters", json(m),
         fmt::format("the {} mode holds 1 to {} data centers (one network namespace and subnet each); the embedded "
                     "mode holds up to {}",
                     to_string(sc.network), traits(sc.network).max_datacenters, kMaxDatacenters));
}

void check_strategies_for_mode(const Scenario& sc, const std::vector<std::string>* only) {
  // What the strategies that run in the embedded mode on the virtual clock only are refused with.
  const bool virtual_embedded = traits(sc.network).in_process && sc.clock == engine::ClockMode::kVirtual;
  const std::string virtual_only = fmt::format("runs in the embedded mode on the virtual clock only (here: the {} mode, {} clock)",
                                               to_string(sc.network),
                                               sc.clock == engine::ClockMode::kVirtual ? "virtual" : "wall");
  for (size_t i = 0; i < sc.strategies.size(); ++i) {
    const auto& st = sc.strategies[i];
    if (only && std::find(only->begin(), only->end(), st.run_name()) == only->end()) continue;
    const engine::StrategyInfo& info = engine::find_strategy(st.name).needs;
    const std::string field = fmt::format("strategies[{}].name", i);
    if (info.virtual_time_only && !virtual_embedded)
      fail(field, json(st.name),
           virtual_only + ": its sites apply what has arrived by their own instant, which only virtual time answers "
                          "exactly");
    // Policy "estimate" (the entry's own, else the scenario's): in the embedded mode, where one
    // process holds every worker (the ground truth) and the fault agent implements it.
    if ((st.fault_policy.empty() ? sc.faults.policy : st.fault_policy) == "estimate" && sc.faults.active()) {
      const std::string pfield = st.fault_policy.empty() ? "faults.policy" : fmt::format("strategies[{}].faults.policy", i);
      if (!traits(sc.network).in_process)
        fail(pfield, json("estimate"),
             fmt::format("runs in the embedded mode only (here: the {} mode): the process modes' fault agent "
                         "implements shrink; give this entry \"faults\": {{\"policy\": \"shrink\"}} or run it embedded",
                         to_string(sc.network)));
      if (!info.needs_intra_dc || info.one_group)
        fail(pfield, json("estimate"),
             fmt::format("{} has no intra-DC group to estimate a dead worker's gradient in (its one group spans every "
                         "worker); give this entry \"faults\": {{\"policy\": \"shrink\"}}", st.name));
    }
    // A quorum of sites: the embedded mode on the virtual clock, without checkpoints for now
    // (docs/guide/strategies.md "Quorum of sites").
    if (!st.quorum.empty()) {
      const std::string qfield = fmt::format("strategies[{}].quorum", i);
      if (!virtual_embedded) fail(qfield, json(st.quorum), virtual_only);
      if (sc.checkpoint.every_steps > 0 || !sc.checkpoint.dir.empty())
        fail(qfield, json(st.quorum), "not with checkpoints yet (a paused site is rounds behind)");
    }
    if (info.no_checkpoints && (sc.checkpoint.every_steps > 0 || !sc.checkpoint.dir.empty()))
      fail(field, json(st.name),
           "cannot be checkpointed (its sites are at different steps, with updates in flight: no step is a "
           "consistent cut); remove the \"checkpoint\" block or this strategy");
  }
}

void check_lan_collectives(const Scenario& sc) {
  if (sc.cluster.lan_collectives != engine::ClusterSpec::LanCollectives::kAnalytic) return;
  const std::string field = "lan.collectives";
  const json v("analytic");
  if (!traits(sc.network).in_process || sc.clock != engine::ClockMode::kVirtual)
    fail(field, v, fmt::format("analytic collectives time the virtual clock's embedded mode only (this scenario: "
                               "network \"{}\", clock \"{}\")",
                               to_string(sc.network), sc.clock == engine::ClockMode::kVirtual ? "virtual" : "wall"));
  if (sc.compute.empty())
    fail(field, v, "analytic collectives need a compute profile (\"compute\"): their reductions are charged by it");
  if (sc.faults.active() || !sc.faults.events.empty())
    fail(field, v, "analytic collectives do not run with node faults (a dead member's group is the message model's): "
                   "use \"messages\"");
  for (const char* k : {"loss", "jitter", "queue", "reorder"})
    if (sc.raw.contains("lan") && sc.raw["lan"].contains(k))
      fail(field, v, fmt::format("the analytic model has no LAN {} (lan.{} is set): use \"messages\"", k, k));
}

void check_represented_for_mode(const Scenario& sc) {
  if (!sc.represented || sc.represented->scale() == 1.0) return;
  const std::string field = "workload.represents";
  const json name(sc.represented->name);
  if (!traits(sc.network).in_process)
    fail(field, name,
         fmt::format("a represented model runs in the embedded mode only (the {} mode sends real bytes: the trained "
                     "model's)",
                     to_string(sc.network)));
  if (sc.clock != engine::ClockMode::kVirtual)
    fail(field, name, "a represented model needs the virtual clock (its compute and transfers are the model's, not the host's)");
  if (sc.compute.empty())
    fail(field, name,
         "a represented model needs a compute profile (\"compute\": {\"gpu\", \"mfu\", "
         "\"tokens_per_worker_per_step\"} or a step_time): the trained model's measured compute is not its");
  const size_t n = sc.represented->trained_params;
  for (size_t i = 0; i < sc.strategies.size(); ++i) {
    const auto& st = sc.strategies[i];
    const bool wire16 = st.wire == "bf16" || st.wire == "fp16";  // naive_ddp's 2-byte elements
    if (st.name == "naive_ddp" && st.collective == "gloo_ring" &&
        !engine::gloo_ring_represents(n, sc.represented->scale(), static_cast<size_t>(total_workers(sc)), {},
                                      wire16 ? 2 : 4))
      fail(fmt::format("strategies[{}].collective", i), json("gloo_ring"),
           fmt::format("Gloo's ring cuts {} {} gradients into more segments of at most 1 MiB than the trained "
                       "model's, each with its rendezvous: not representable by scaling; use \"collective\": "
                       "\"eager_ring\" (NCCL-like)",
                       sc.represented->params, wire16 ? st.wire : std::string("float32")));
  }
  for (size_t i = 0; i < sc.strategies.size(); ++i)
    if (engine::find_strategy(sc.strategies[i].name).needs.tensor_shapes && sc.represented_shapes.empty())
      fail(fmt::format("strategies[{}].name", i), json(sc.strategies[i].name),
           fmt::format("its messages follow the represented model's tensor shapes, and workload.represents gives "
                       "\"{}\" as a count only: declare its \"tensors\" or name a catalog model",
                       sc.represented->name));
}

void validate_tcp_congestion_control(const std::string& field, const std::string& v) {
  if (v.empty() || v.size() > 15 || v.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    fail(field, json(v),
         "expected \"auto\", \"default\" or a kernel congestion control name ([a-z0-9_], at most 15 characters, "
         "e.g. cubic, reno, bbr)");
}

emu::CcAlgorithm model_congestion_control(const std::string& v) {
  return v == "reno" ? emu::CcAlgorithm::kReno : emu::CcAlgorithm::kCubic;
}

Scenario load_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(path + ": cannot open");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    throw ScenarioError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  return parse_scenario(j, path, std::filesystem::path(path).parent_path().string());
}

std::optional<Scenario> load_scenario_or_report(const std::string& path) {
  try {
    return load_scenario(path);
  } catch (const ScenarioError& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return std::nullopt;
  }
}

}  // namespace geotb::harness
