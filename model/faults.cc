#include "model/faults.h"

#include <fmt/format.h>

#include "model/json_fields.h"

namespace geotb::model {

namespace f = field;

std::string to_string(FaultEvent::Kind k) {
  switch (k) {
    case FaultEvent::Kind::kKill: return "kill";
    case FaultEvent::Kind::kRestart: return "restart";
    case FaultEvent::Kind::kSlow: return "slow";
  }
  return "?";
}

bool FaultPlan::has_kills() const { return kills() > 0; }

int FaultPlan::kills() const {
  int k = 0;
  for (const FaultEvent& e : events) k += e.kind == FaultEvent::Kind::kKill;
  return k;
}

void to_json(json& j, const Detection& d) {
  j = {{"observer", d.observer}, {"peer", d.peer}, {"at_s", d.at_s}, {"last_heard_s", d.last_heard_s},
       {"suspected_s", d.suspected_s}};
}

void from_json(const json& j, Detection& d) {
  d.observer = static_cast<int>(f::count(j, "observer"));
  d.peer = static_cast<int>(f::count(j, "peer"));
  d.at_s = f::nonneg(j, "at_s");
  d.last_heard_s = f::nonneg(j, "last_heard_s");
  d.suspected_s = f::nonneg(j, "suspected_s");
  if (d.last_heard_s > d.suspected_s || d.suspected_s > d.at_s)
    f::fail("", fmt::format("last_heard_s {} <= suspected_s {} <= at_s {} does not hold", d.last_heard_s,
                            d.suspected_s, d.at_s));
}

void to_json(json& j, const FaultRecord& r) {
  auto opt = [](const auto& o) { return o ? json(*o) : json(nullptr); };
  j = {{"event", r.event},
       {"rank", r.rank},
       {"dc", r.dc},
       {"worker", r.worker},
       {"at_s", r.at_s},
       {"step", r.step},
       {"detected_by", opt(r.detected_by)},
       {"detected_at_s", opt(r.detected_at_s)},
       {"detection_latency_s", opt(r.detection_latency_s)},
       {"policy", r.policy},
       {"recovery_s", opt(r.recovery_s)},
       {"steps_lost", r.steps_lost},
       {"survivors", r.survivors}};
  if (r.factor) j["factor"] = *r.factor;
  if (r.event == "slow") j["until_s"] = opt(r.until_s);
}

void from_json(const json& j, FaultRecord& r) {
  r.event = f::str(j, "event");
  if (r.event != "kill" && r.event != "restart" && r.event != "slow")
    f::fail("event", fmt::format("expected \"kill\", \"restart\" or \"slow\", got {}", f::shown(j.at("event"))));
  r.rank = static_cast<int>(f::count(j, "rank"));
  r.dc = static_cast<int>(f::count(j, "dc"));
  r.worker = static_cast<int>(f::count(j, "worker"));
  r.at_s = f::nonneg(j, "at_s");
  r.step = static_cast<int>(f::count(j, "step"));
  auto opt_num = [&](const char* key) -> std::optional<double> {
    if (f::req(j, key).is_null()) return std::nullopt;
    return f::nonneg(j, key);
  };
  r.detected_by = f::req(j, "detected_by").is_null() ? std::nullopt
                                                      : std::optional<int>(static_cast<int>(f::count(j, "detected_by")));
  r.detected_at_s = opt_num("detected_at_s");
  r.detection_latency_s = opt_num("detection_latency_s");
  if (r.detected_by.has_value() != r.detected_at_s.has_value() ||
      r.detected_at_s.has_value() != r.detection_latency_s.has_value())
    f::fail("detected_by", "detected_by, detected_at_s and detection_latency_s must be all null or all set");
  r.policy = f::str(j, "policy");
  r.recovery_s = opt_num("recovery_s");
  r.steps_lost = static_cast<int>(f::count(j, "steps_lost"));
  r.survivors = static_cast<int>(f::count(j, "survivors"));
  if (f::has(j, "factor")) {
    r.factor = f::number(j, "factor");
    if (!(*r.factor > 0)) f::fail("factor", fmt::format("must be > 0, got {}", *r.factor));
  }
  if (r.event == "slow") {
    if (!r.factor) f::fail("factor", "missing (a slow event has one)");
    r.until_s = opt_num("until_s");
  }
}

void to_json(json& j, const FullRecoveryRecord& r) {
  j = {{"above_fraction", r.above_fraction},
       {"dead", r.dead},
       {"workers", r.workers},
       {"decided_at_s", r.decided_at_s},
       {"boundary_step", r.boundary_step},
       {"checkpoint_step", r.checkpoint_step},
       {"steps_redone", r.steps_redone},
       {"checkpoint_at_s", r.checkpoint_at_s},
       {"rewound_at_s", r.rewound_at_s},
       {"survivors", r.survivors},
       {"then", r.then},
       {"restarted", r.restarted},
       {"restarted_at_s", r.restarted_at_s ? json(*r.restarted_at_s) : json(nullptr)}};
}

void from_json(const json& j, FullRecoveryRecord& r) {
  r.above_fraction = f::nonneg(j, "above_fraction");
  if (r.above_fraction > 1) f::fail("above_fraction", fmt::format("must be at most 1, got {}", r.above_fraction));
  r.dead = static_cast<int>(f::count(j, "dead"));
  r.workers = static_cast<int>(f::count(j, "workers"));
  if (r.dead > r.workers) f::fail("dead", fmt::format("{} of {} workers", r.dead, r.workers));
  r.decided_at_s = f::nonneg(j, "decided_at_s");
  r.boundary_step = static_cast<int>(f::count(j, "boundary_step"));
  r.checkpoint_step = static_cast<int>(f::count(j, "checkpoint_step"));
  if (r.checkpoint_step > r.boundary_step)
    f::fail("checkpoint_step", fmt::format("{} is after the boundary {}", r.checkpoint_step, r.boundary_step));
  r.steps_redone = static_cast<int>(f::count(j, "steps_redone"));
  if (r.steps_redone != r.boundary_step - r.checkpoint_step)
    f::fail("steps_redone", fmt::format("{}, but boundary_step - checkpoint_step = {}", r.steps_redone,
                                        r.boundary_step - r.checkpoint_step));
  r.checkpoint_at_s = f::nonneg(j, "checkpoint_at_s");
  r.rewound_at_s = f::nonneg(j, "rewound_at_s");
  r.survivors = static_cast<int>(f::count(j, "survivors"));
  // Reports written before "then": "restarts" existed have none of the three.
  r.then = f::has(j, "then") ? f::str(j, "then") : "survivors";
  if (r.then != "survivors" && r.then != "restarts")
    f::fail("then", fmt::format("expected \"survivors\" or \"restarts\", got {}", f::shown(j.at("then"))));
  r.restarted = f::has(j, "restarted") ? static_cast<int>(f::count(j, "restarted")) : 0;
  if (r.restarted > r.dead) f::fail("restarted", fmt::format("{}, but {} were dead", r.restarted, r.dead));
  r.restarted_at_s.reset();
  if (f::has(j, "restarted_at_s") && !j.at("restarted_at_s").is_null()) r.restarted_at_s = f::nonneg(j, "restarted_at_s");
  if (r.then == "survivors" && (r.restarted > 0 || r.restarted_at_s))
    f::fail("restarted", "a full recovery that carries on with the survivors restarts nobody");
}

void to_json(json& j, const FaultsSection& s) {
  j = {{"heartbeat", {{"interval_s", s.heartbeat_interval_s},
                      {"timeout_s", s.heartbeat_timeout_s},
                      {"confirmation_s", s.heartbeat_confirmation_s}}},
       {"policy", s.policy},
       {"shard", s.shard},
       {"events", s.events},
       {"detections", s.detections},
       {"false_detections", s.false_detections},
       {"heartbeats_sent", s.heartbeats_sent},
       {"full_recovery_above", s.full_recovery_above},
       {"full_recovery", s.full_recovery ? json(*s.full_recovery) : json(nullptr)}};
}

void from_json(const json& j, FaultsSection& s) {
  const json& hb = f::object(j, "heartbeat");
  try {
    s.heartbeat_interval_s = f::nonneg(hb, "interval_s");
    s.heartbeat_timeout_s = f::nonneg(hb, "timeout_s");
    s.heartbeat_confirmation_s = f::nonneg(hb, "confirmation_s");
  } catch (FieldError& e) {
    e.prepend("heartbeat");
    throw;
  }
  s.policy = f::str(j, "policy");
  if (s.policy != "shrink") f::fail("policy", fmt::format("expected \"shrink\", got {}", f::shown(j.at("policy"))));
  s.shard = f::str(j, "shard");
  if (s.shard != "drop" && s.shard != "redistribute")
    f::fail("shard", fmt::format("expected \"drop\" or \"redistribute\", got {}", f::shown(j.at("shard"))));
  f::list(j, "events", s.events);
  f::list(j, "detections", s.detections);
  s.false_detections = static_cast<int>(f::count(j, "false_detections"));
  s.heartbeats_sent = f::count(j, "heartbeats_sent");
  // Reports written before full recovery existed have neither field.
  s.full_recovery_above = f::has(j, "full_recovery_above") ? f::nonneg(j, "full_recovery_above") : 0.25;
  s.full_recovery.reset();
  if (f::has(j, "full_recovery") && !j.at("full_recovery").is_null()) {
    FullRecoveryRecord r;
    f::get(j, "full_recovery", r);
    s.full_recovery = r;
  }
}

}  // namespace geotb::model
