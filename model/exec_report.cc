#include "model/exec_report.h"

#include <fmt/format.h>

#include "model/json_fields.h"
#include "model/json_file.h"

namespace geotb::model {

namespace f = field;

namespace {
int small_int(const json& j, const char* key, int64_t lo, int64_t hi) {
  const int64_t v = f::integer(j, key);
  if (v < lo || v > hi) f::fail(key, fmt::format("must be in [{}, {}], got {}", lo, hi, v));
  return static_cast<int>(v);
}
}  // namespace

void to_json(json& j, const LinkTraffic& l) {
  json drops = json::object();
  for (const auto& [cause, n] : l.drops) drops[cause] = n;
  j = {{"from", l.from}, {"to", l.to}, {"frames", l.frames}, {"bytes", l.bytes}, {"drops", drops},
       {"changes_applied", l.changes_applied}};
}

void from_json(const json& j, LinkTraffic& l) {
  l.from = f::str(j, "from");
  l.to = f::str(j, "to");
  l.frames = f::count(j, "frames");
  l.bytes = f::count(j, "bytes");
  l.drops.clear();
  const json& d = f::object(j, "drops");
  for (const auto& [cause, n] : d.items()) l.drops[cause] = f::count(d, cause.c_str());
  l.changes_applied = f::count(j, "changes_applied");
}

void to_json(json& j, const TimelineEntry& t) { j = {{"at_s", t.at_s}, {"link", {t.a, t.b}}, {"set", t.set}}; }

void from_json(const json& j, TimelineEntry& t) {
  t.at_s = f::nonneg(j, "at_s");
  const std::vector<std::string> link = f::strings(j, "link");
  if (link.size() != 2) f::fail("link", fmt::format("expected two data-center names, got {}", f::shown(j.at("link"))));
  t.a = link[0];
  t.b = link[1];
  t.set = f::object(j, "set");
}

void to_json(json& j, const ExecTimeline& t) {
  j = {{"origin_s", t.origin_s ? json(*t.origin_s) : json(nullptr)},
       {"scheduled", t.scheduled},
       {"applied", t.applied},
       {"changes", t.changes}};
}

void from_json(const json& j, ExecTimeline& t) {
  t.origin_s.reset();
  if (!f::req(j, "origin_s").is_null()) t.origin_s = f::nonneg(j, "origin_s");
  t.scheduled = f::count(j, "scheduled");
  t.applied = f::count(j, "applied");
  if (t.applied > t.scheduled) f::fail("applied", fmt::format("{} > scheduled {}", t.applied, t.scheduled));
  f::list(j, "changes", t.changes);
}

void to_json(json& j, const ExecRank& r) {
  j = {{"rank", r.rank},           {"dc", r.dc},
       {"local_rank", r.local_rank}, {"exit_status", r.exit_status},
       {"signal", r.signal},       {"stopped_by_geotb", r.stopped_by_geotb},
       {"wall_s", r.wall_s},       {"log", r.log},
       {"metrics", r.metrics}};
}

void from_json(const json& j, ExecRank& r) {
  r.rank = small_int(j, "rank", 0, 1 << 20);
  r.dc = small_int(j, "dc", 0, 1 << 20);
  r.local_rank = small_int(j, "local_rank", 0, 1 << 20);
  r.exit_status = small_int(j, "exit_status", 0, 255);
  r.signal = small_int(j, "signal", 0, 127);
  r.stopped_by_geotb = f::boolean(j, "stopped_by_geotb");
  r.wall_s = f::nonneg(j, "wall_s");
  r.log = f::str(j, "log");
  r.metrics.clear();
  const json& m = f::array(j, "metrics");
  for (size_t i = 0; i < m.size(); ++i) {
    if (!m[i].is_object()) f::fail(fmt::format("metrics[{}]", i), fmt::format("expected an object, got {}", f::shown(m[i])));
    r.metrics.push_back(m[i]);
  }
}

void to_json(json& j, const ExecFailure& x) {
  j = {{"rank", x.rank}, {"dc", x.dc}, {"exit_status", x.exit_status}, {"signal", x.signal}, {"message", x.message}};
}

void from_json(const json& j, ExecFailure& x) {
  x.rank = small_int(j, "rank", 0, 1 << 20);
  x.dc = small_int(j, "dc", 0, 1 << 20);
  x.exit_status = small_int(j, "exit_status", 1, 255);
  x.signal = small_int(j, "signal", 0, 127);
  x.message = f::str(j, "message");
}

void to_json(json& j, const ExecReport& r) {
  j = {{"schema", kExecSchema},
       {"schema_version", kExecSchemaVersion},
       {"scenario", r.scenario},
       {"context", r.context},
       {"command", r.command},
       {"ranks_per_dc", r.ranks_per_dc},
       {"world_size", r.world_size},
       {"master_addr", r.master_addr},
       {"master_port", r.master_port},
       {"status", r.status},
       {"wall_s", r.wall_s},
       {"first_failure", r.first_failure ? json(*r.first_failure) : json(nullptr)},
       {"ranks", r.ranks},
       {"links", r.links},
       {"timeline", r.timeline}};
  if (r.run_as) j["run_as"] = {{"uid", r.run_as->first}, {"gid", r.run_as->second}};
}

void from_json(const json& j, ExecReport& r) {
  if (!j.is_object()) f::fail("", fmt::format("expected a JSON object (a geotb exec report), got {}", f::shown(j)));
  if (const std::string schema = f::str(j, "schema"); schema != kExecSchema)
    f::fail("schema", fmt::format("\"{}\": not a geotb exec report (expected \"{}\")", schema, kExecSchema));
  if (const int64_t v = f::integer(j, "schema_version"); v != kExecSchemaVersion)
    f::fail("schema_version", fmt::format("{}: this geotb reads schema_version {}", v, kExecSchemaVersion));
  f::get(j, "scenario", r.scenario);
  f::get(j, "context", r.context);
  r.command = f::strings(j, "command");
  if (r.command.empty()) f::fail("command", "must name a program");
  r.ranks_per_dc = small_int(j, "ranks_per_dc", 1, 1 << 16);
  r.world_size = small_int(j, "world_size", 1, 1 << 20);
  r.master_addr = f::str(j, "master_addr");
  r.master_port = small_int(j, "master_port", 1, 65535);
  r.run_as.reset();
  if (f::has(j, "run_as")) {
    const json& u = f::object(j, "run_as");
    r.run_as = std::make_pair(small_int(u, "uid", 0, INT32_MAX), small_int(u, "gid", 0, INT32_MAX));
  }
  r.status = f::str(j, "status");
  if (r.status != "ok" && r.status != "failed" && r.status != "deadline")
    f::fail("status", fmt::format("expected \"ok\", \"failed\" or \"deadline\", got \"{}\"", r.status));
  r.wall_s = f::nonneg(j, "wall_s");
  r.first_failure.reset();
  if (!f::req(j, "first_failure").is_null()) {
    ExecFailure x;
    f::get(j, "first_failure", x);
    r.first_failure = x;
  }
  if ((r.status == "failed") != r.first_failure.has_value())
    f::fail("first_failure", fmt::format("status \"{}\" with{} a first failure", r.status, r.first_failure ? "" : "out"));
  f::list(j, "ranks", r.ranks);
  if (static_cast<int>(r.ranks.size()) != r.world_size)
    f::fail("ranks", fmt::format("{} ranks for world_size {}", r.ranks.size(), r.world_size));
  for (size_t i = 0; i < r.ranks.size(); ++i)
    if (r.ranks[i].rank != static_cast<int>(i))
      f::fail(fmt::format("ranks[{}].rank", i), fmt::format("expected {}, got {}", i, r.ranks[i].rank));
  f::list(j, "links", r.links);
  f::get(j, "timeline", r.timeline);
}

ExecReport load_exec_report(const std::string& path) {
  ExecReport r;
  try {
    from_json(read_json_file(path), r);
  } catch (const FieldError& e) {
    throw report_error(path, e);
  }
  r.source = path;
  return r;
}

std::string report_schema_of(const std::string& path) {
  const json j = read_json_file(path);
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string())
    throw ReportError(fmt::format("{}: schema: missing (not a geotb report)", path));
  return j["schema"].get<std::string>();
}

std::optional<json> parse_metric_line(const std::string& line) {
  const std::string prefix = kMetricPrefix;
  const size_t p = line.find(prefix);
  if (p == std::string::npos) return std::nullopt;
  const json j = json::parse(line.substr(p + prefix.size()), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

}  // namespace geotb::model
