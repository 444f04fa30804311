#include "harness/rank_report.h"

#include <cstdio>
#include <stdexcept>

#include "common/atomic_file.h"

namespace geotb::harness {

using nlohmann::json;

json rank_report_json(const std::string& strategy, const engine::RankReport& r) {
  json ex = json::array();
  for (const auto& e : r.exchanges)
    ex.push_back({{"step", e.step}, {"bytes_sent", e.bytes_sent}, {"seconds", e.seconds}, {"lower_bound_s", e.lower_bound_s}});
  json acc = json::array();
  for (const auto& p : r.accuracy_curve) acc.push_back({{"step", p.step}, {"samples", p.samples}, {"accuracy", p.accuracy}});
  return {{"schema", "geotb.rank"},
          {"schema_version", kRankReportSchemaVersion},
          {"strategy", strategy},
          {"rank", r.rank},
          {"dc", r.dc},
          {"local_rank", r.local_rank},
          {"status", "ok"},
          {"times_ns",
           {{"compute", r.times.compute_ns},
            {"exposed_comm", r.times.exposed_comm_ns},
            {"compress", r.times.compress_ns},
            {"overlapped_comm", r.times.overlapped_comm_ns}}},
          {"loss", r.loss},
          {"step_end_s", r.step_end_s},
          {"exchanges", ex},
          {"wan_sent",
           {{"messages", r.wan_sent.messages}, {"payload_bytes", r.wan_sent.payload_bytes}, {"wire_bytes", r.wan_sent.wire_bytes}}},
          {"wall_s", r.wall_s},
          {"accuracy_curve", acc},
          {"replica_max_abs_diff", r.replica_max_abs_diff}};
}

json rank_error_json(const std::string& strategy, int rank, int dc, int local_rank, const RankError& e) {
  return {{"schema", "geotb.rank"}, {"schema_version", kRankReportSchemaVersion},
          {"strategy", strategy},   {"rank", rank},
          {"dc", dc},               {"local_rank", local_rank},
          {"status", "failed"},     {"error", {{"type", e.type}, {"message", e.message}}}};
}

namespace {
const json& at(const json& j, const char* key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) throw std::runtime_error(path + key + ": missing");
  return j.at(key);
}
template <class T>
T get(const json& j, const char* key, const std::string& path) {
  try {
    return at(j, key, path).get<T>();
  } catch (const json::exception& e) {
    throw std::runtime_error(path + key + ": " + e.what());
  }
}
}  // namespace

bool parse_rank_report(const json& j, engine::RankReport& out, RankError& err) {
  if (get<std::string>(j, "schema", "") != "geotb.rank" || get<int>(j, "schema_version", "") != kRankReportSchemaVersion)
    throw std::runtime_error("schema: not a geotb.rank v1 file");
  out.rank = get<int>(j, "rank", "");
  out.dc = get<int>(j, "dc", "");
  out.local_rank = get<int>(j, "local_rank", "");
  const std::string status = get<std::string>(j, "status", "");
  if (status == "failed") {
    const json& e = at(j, "error", "");
    err.type = get<std::string>(e, "type", "error.");
    err.message = get<std::string>(e, "message", "error.");
    return false;
  }
  if (status != "ok") throw std::runtime_error("status: \"" + status + "\": expected ok or failed");
  const json& t = at(j, "times_ns", "");
  out.times.compute_ns = get<uint64_t>(t, "compute", "times_ns.");
  out.times.exposed_comm_ns = get<uint64_t>(t, "exposed_comm", "times_ns.");
  out.times.compress_ns = get<uint64_t>(t, "compress", "times_ns.");
  out.times.overlapped_comm_ns = get<uint64_t>(t, "overlapped_comm", "times_ns.");
  out.loss = get<std::vector<double>>(j, "loss", "");
  out.step_end_s = get<std::vector<double>>(j, "step_end_s", "");
  out.exchanges.clear();
  for (const json& e : at(j, "exchanges", ""))
    out.exchanges.push_back({get<int>(e, "step", "exchanges[]."), get<uint64_t>(e, "bytes_sent", "exchanges[]."),
                             get<double>(e, "seconds", "exchanges[]."), get<double>(e, "lower_bound_s", "exchanges[].")});
  const json& w = at(j, "wan_sent", "");
  out.wan_sent = {};
  out.wan_sent.messages = get<uint64_t>(w, "messages", "wan_sent.");
  out.wan_sent.payload_bytes = get<uint64_t>(w, "payload_bytes", "wan_sent.");
  out.wan_sent.wire_bytes = get<uint64_t>(w, "wire_bytes", "wan_sent.");
  out.wall_s = get<double>(j, "wall_s", "");
  out.accuracy_curve.clear();
  for (const json& p : at(j, "accuracy_curve", ""))
    out.accuracy_curve.push_back({get<int>(p, "step", "accuracy_curve[]."), get<uint64_t>(p, "samples", "accuracy_curve[]."),
                                  get<double>(p, "accuracy", "accuracy_curve[].")});
  out.replica_max_abs_diff = get<double>(j, "replica_max_abs_diff", "");
  return true;
}

void write_json_atomically(const json& j, const std::string& path) {
  common::write_file_atomically(path, j.dump() + "\n");
}

}  // namespace geotb::harness
