#include "model/rank_report.h"

#include <limits>

#include <fmt/format.h>

#include <fstream>

#include "model/json_fields.h"
#include "model/json_file.h"

namespace geotb::model {

namespace f = field;

void to_json(json& j, const WorkerTimes& t) {
  j = {{"compute", t.compute_ns},
       {"exposed_comm", t.exposed_comm_ns},
       {"compress", t.compress_ns},
       {"overlapped_comm", t.overlapped_comm_ns}};
}

void from_json(const json& j, WorkerTimes& t) {
  t.compute_ns = f::count(j, "compute");
  t.exposed_comm_ns = f::count(j, "exposed_comm");
  t.compress_ns = f::count(j, "compress");
  t.overlapped_comm_ns = f::count(j, "overlapped_comm");
}

void to_json(json& j, const WanSent& w) {
  j = {{"messages", w.messages}, {"payload_bytes", w.payload_bytes}, {"wire_bytes", w.wire_bytes}};
}

void from_json(const json& j, WanSent& w) {
  w.messages = f::count(j, "messages");
  w.payload_bytes = f::count(j, "payload_bytes");
  w.wire_bytes = f::count(j, "wire_bytes");
}

void to_json(json& j, const RankReport& r) {
  j = {{"schema", kRankSchema}, {"schema_version", kRankSchemaVersion},
       {"strategy", r.strategy},  {"rank", r.rank},
       {"dc", r.dc},              {"local_rank", r.local_rank}};
  if (r.failure) {
    j["status"] = "failed";
    j["error"] = {{"type", r.failure->type}, {"message", r.failure->message}};
    return;
  }
  j["status"] = "ok";
  j["times_ns"] = r.times;
  j["loss"] = r.loss;
  j["step_end_s"] = r.step_end_s;
  j["exchanges"] = r.exchanges;
  j["wan_sent"] = r.wan_sent;
  j["wall_s"] = r.wall_s;
  j["accuracy_curve"] = r.accuracy_curve;
  j["replica_max_abs_diff"] = r.replica_max_abs_diff;
  if (r.final_weights_sha256) j["final_weights_sha256"] = *r.final_weights_sha256;
  if (r.refused_connections) j["refused_connections"] = *r.refused_connections;
  if (r.faults) j["faults"] = *r.faults;
}

void from_json(const json& j, RankReport& r) {
  if (!j.is_object()) f::fail("", fmt::format("expected a JSON object (a geotb rank file), got {}", f::shown(j)));
  if (const std::string schema = f::str(j, "schema"); schema != kRankSchema)
    f::fail("schema", fmt::format("\"{}\": not a geotb rank file (expected \"{}\")", schema, kRankSchema));
  if (const int64_t v = f::integer(j, "schema_version"); v != kRankSchemaVersion)
    f::fail("schema_version", fmt::format("{}: this geotb reads schema_version {}", v, kRankSchemaVersion));
  r = RankReport{};
  r.strategy = f::str(j, "strategy");
  r.rank = static_cast<int>(f::integer(j, "rank"));
  r.dc = static_cast<int>(f::integer(j, "dc"));
  r.local_rank = static_cast<int>(f::integer(j, "local_rank"));
  const std::string status = f::str(j, "status");
  if (status == "failed") {
    const json& e = f::object(j, "error");
    try {
      r.failure = RankFailure{f::str(e, "type"), f::str(e, "message")};
    } catch (FieldError& x) {
      x.prepend("error");
      throw;
    }
    return;
  }
  if (status != "ok") f::fail("status", fmt::format("\"{}\": expected \"ok\" or \"failed\"", status));
  f::get(j, "times_ns", r.times);
  // A killed rank's steps after its kill are NaN, written as null (JSON has no NaN).
  for (const json& x : f::array(j, "loss")) {
    if (!x.is_null() && !x.is_number())
      f::fail(fmt::format("loss[{}]", r.loss.size()), fmt::format("expected a number or null, got {}", f::shown(x)));
    r.loss.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN() : x.get<double>());
  }
  r.step_end_s = f::numbers(j, "step_end_s");
  f::list(j, "exchanges", r.exchanges);
  f::get(j, "wan_sent", r.wan_sent);
  r.wall_s = f::nonneg(j, "wall_s");
  f::list(j, "accuracy_curve", r.accuracy_curve);
  r.replica_max_abs_diff = f::nonneg(j, "replica_max_abs_diff");
  if (f::has(j, "final_weights_sha256")) r.final_weights_sha256 = f::sha256_hex(j, "final_weights_sha256");
  r.refused_connections.reset();
  if (f::has(j, "refused_connections")) r.refused_connections = f::count(j, "refused_connections");
  if (f::has(j, "faults")) {
    RankFaultLog l;
    f::get(j, "faults", l);
    r.faults = l;
  }
}

RankReport load_rank_report(const std::string& path) {
  const json j = read_json_file(path);
  RankReport r;
  try {
    from_json(j, r);
  } catch (const FieldError& e) {
    throw report_error(path, e);
  }
  return r;
}

void save_rank_report(const RankReport& r, const std::string& path) { write_json_atomically(json(r), path); }

}  // namespace geotb::model
