#include "model/faults.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

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

bool FaultPlan::kills_a_dc_leader() const {
  return std::any_of(events.begin(), events.end(),
                     [](const FaultEvent& e) { return e.kind == FaultEvent::Kind::kKill && e.worker == 0; });
}

int FaultPlan::first_never_killed(const RankLayout& layout) const {
  for (int r = 0; r < layout.world(); ++r)
    if (std::none_of(events.begin(), events.end(), [&](const FaultEvent& e) {
          return e.kind == FaultEvent::Kind::kKill && e.dc < layout.dcs() && layout.rank_of(e.dc, e.worker) == r;
        }))
      return r;
  return 0;
}

int FaultPlan::kills() const {
  int k = 0;
  for (const FaultEvent& e : events) k += e.kind == FaultEvent::Kind::kKill;
  return k;
}

int FaultPlan::full_recovery_count(int workers) const {
  return static_cast<int>(std::floor(full_recovery.above_fraction * workers)) + 1;
}

bool FaultPlan::full_recovery_reachable(int workers) const { return kills() > full_recovery.above_fraction * workers; }

bool FaultPlan::full_recovery_restarts(int workers) const {
  return full_recovery_reachable(workers) && full_recovery.then == "restarts";
}

void to_json(json& j, const Detection& d) {
  j = {{"observer", d.observer}, {"peer", d.peer}, {"at_s", d.at_s}, {"last_heard_s", d.last_heard_s},
       {"suspected_s", d.suspected_s}};
  if (!d.how.empty()) j["how"] = d.how;
}

void from_json(const json& j, Detection& d) {
  d.observer = static_cast<int>(f::count(j, "observer"));
  d.peer = static_cast<int>(f::count(j, "peer"));
  d.at_s = f::nonneg(j, "at_s");
  d.last_heard_s = f::nonneg(j, "last_heard_s");
  d.suspected_s = f::nonneg(j, "suspected_s");
  d.how = f::has(j, "how") ? f::str(j, "how") : "";
  if (!d.how.empty() && d.how != "connection" && d.how != "silence" && d.how != "witness" && d.how != "unreachable")
    f::fail("how", fmt::format("expected \"connection\", \"silence\", \"witness\" or \"unreachable\", got {}",
                               f::shown(j.at("how"))));
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
  if (r.new_leader) j["new_leader"] = *r.new_leader;
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
  if (f::has(j, "new_leader")) r.new_leader = static_cast<int>(f::count(j, "new_leader"));
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

void to_json(json& j, const EstimateRecord& r) {
  j = {{"step", r.step},
       {"rank", r.rank},
       {"dc", r.dc},
       {"cosine", r.cosine},
       {"rel_error", r.rel_error},
       {"shrink_cosine", r.shrink_cosine},
       {"shrink_rel_error", r.shrink_rel_error}};
}

void from_json(const json& j, EstimateRecord& r) {
  r.step = static_cast<int>(f::count(j, "step"));
  r.rank = static_cast<int>(f::count(j, "rank"));
  r.dc = static_cast<int>(f::count(j, "dc"));
  r.cosine = f::number(j, "cosine");
  r.rel_error = f::nonneg(j, "rel_error");
  r.shrink_cosine = f::number(j, "shrink_cosine");
  r.shrink_rel_error = f::nonneg(j, "shrink_rel_error");
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
  // Absent under shrink: how reports written before the policy "estimate" read.
  if (s.estimate) {
    j["estimate"] = {{"weights", s.estimate->weights}, {"decay", s.estimate->decay}};
    j["estimates"] = s.estimates;
  }
  // Absent when no witness was asked: how reports written before the witnesses read.
  if (s.heartbeat_witnesses > 0) {
    j["heartbeat"]["witnesses"] = s.heartbeat_witnesses;
    j["heartbeat"]["unreachable_s"] = s.heartbeat_unreachable_s;
  }
}

void from_json(const json& j, FaultsSection& s) {
  const json& hb = f::object(j, "heartbeat");
  try {
    s.heartbeat_interval_s = f::nonneg(hb, "interval_s");
    s.heartbeat_timeout_s = f::nonneg(hb, "timeout_s");
    s.heartbeat_confirmation_s = f::nonneg(hb, "confirmation_s");
    // Reports written before the indirect probes have neither.
    s.heartbeat_witnesses = f::has(hb, "witnesses") ? static_cast<int>(f::count(hb, "witnesses")) : 0;
    s.heartbeat_unreachable_s = f::has(hb, "unreachable_s") ? f::nonneg(hb, "unreachable_s") : 0;
  } catch (FieldError& e) {
    e.prepend("heartbeat");
    throw;
  }
  s.policy = f::str(j, "policy");
  if (s.policy != "shrink" && s.policy != "estimate")
    f::fail("policy", fmt::format("expected \"shrink\" or \"estimate\", got {}", f::shown(j.at("policy"))));
  s.estimate.reset();
  s.estimates.clear();
  if (s.policy == "estimate") {
    const json& e = f::object(j, "estimate");
    EstimateConfig c;
    try {
      c.weights = f::str(e, "weights");
      if (c.weights != "seed" && c.weights != "similarity" && c.weights != "equal" && c.weights != "last_gradient")
        f::fail("weights", fmt::format("expected \"seed\", \"similarity\", \"equal\" or \"last_gradient\", got {}",
                                       f::shown(e.at("weights"))));
      c.decay = f::number(e, "decay");
      if (!(c.decay > 0 && c.decay <= 1)) f::fail("decay", fmt::format("{}: expected (0, 1]", c.decay));
    } catch (FieldError& err) {
      err.prepend("estimate");
      throw;
    }
    s.estimate = c;
    f::list(j, "estimates", s.estimates);
  } else if (f::has(j, "estimate") || f::has(j, "estimates")) {
    f::fail("estimate", "present, but the policy is \"shrink\"");
  }
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

void to_json(json& j, const RankFaultLog& l) {
  auto opt = [](const auto& o) { return o ? json(*o) : json(nullptr); };
  json resumed = json::array();
  for (const auto& r : l.resumed) {
    resumed.push_back({{"peers", r.peers}, {"at_s", r.at_s}, {"step", r.step}, {"group_size", r.group_size},
                       {"coordinator", r.coordinator}});
    if (r.took_over) resumed.back()["took_over"] = *r.took_over;
  }
  json handed = json::array();
  for (const auto& h : l.handed)
  {
    handed.push_back({{"rank", h.rank}, {"step", h.step}, {"at_s", h.at_s}, {"group_size", h.group_size}});
    if (h.from_checkpoint) handed.back()["from_checkpoint"] = true;
  }
  j = {{"start_ns", l.start_ns},       {"killed_at_step", opt(l.killed_at_step)}, {"killed_at_s", opt(l.killed_at_s)},
       {"detections", l.detections}, {"resumed", resumed},                      {"heartbeats_sent", l.heartbeats_sent},
       {"slow", l.slow},             {"handed", handed},                        {"rejoined_at_s", opt(l.rejoined_at_s)}};
  if (l.up_at_s) j["up_at_s"] = *l.up_at_s;
  if (l.rewound) {
    const RankFaultLog::Rewind& w = *l.rewound;
    j["rewound"] = {{"boundary_step", w.boundary_step}, {"checkpoint_step", w.checkpoint_step},
                    {"checkpoint_at_s", w.checkpoint_at_s}, {"at_s", w.at_s},
                    {"decided_at_s", opt(w.decided_at_s)}, {"dead", w.dead}};
  }
}

void from_json(const json& j, RankFaultLog& l) {
  l.start_ns = static_cast<int64_t>(f::count(j, "start_ns"));
  l.killed_at_step.reset();
  l.killed_at_s.reset();
  if (!f::req(j, "killed_at_step").is_null()) l.killed_at_step = static_cast<int>(f::count(j, "killed_at_step"));
  if (!f::req(j, "killed_at_s").is_null()) l.killed_at_s = f::nonneg(j, "killed_at_s");
  if (l.killed_at_step.has_value() != l.killed_at_s.has_value())
    f::fail("killed_at_step", "killed_at_step and killed_at_s must be both null or both set");
  l.detections = f::req(j, "detections").get<std::vector<Detection>>();
  l.resumed.clear();
  for (const json& r : f::req(j, "resumed")) {
    RankFaultLog::Resume x;
    x.peers = f::req(r, "peers").get<std::vector<int>>();
    x.at_s = f::nonneg(r, "at_s");
    x.step = static_cast<int>(f::count(r, "step"));
    x.group_size = static_cast<int>(f::count(r, "group_size"));
    x.coordinator = f::req(r, "coordinator").get<bool>();
    if (f::has(r, "took_over")) x.took_over = static_cast<int>(f::count(r, "took_over"));
    l.resumed.push_back(x);
  }
  l.heartbeats_sent = f::count(j, "heartbeats_sent");
  l.slow = f::has(j, "slow") ? f::req(j, "slow").get<std::vector<FaultRecord>>() : std::vector<FaultRecord>{};
  l.handed.clear();
  if (f::has(j, "handed"))
    for (const json& h : f::req(j, "handed")) {
      RankFaultLog::Handover x;
      x.rank = static_cast<int>(f::count(h, "rank"));
      x.step = static_cast<int>(f::count(h, "step"));
      x.at_s = f::nonneg(h, "at_s");
      x.group_size = static_cast<int>(f::count(h, "group_size"));
      x.from_checkpoint = f::has(h, "from_checkpoint") && f::req(h, "from_checkpoint").get<bool>();
      l.handed.push_back(x);
    }
  l.rejoined_at_s.reset();
  if (f::has(j, "rejoined_at_s") && !f::req(j, "rejoined_at_s").is_null()) l.rejoined_at_s = f::nonneg(j, "rejoined_at_s");
  l.up_at_s.reset();
  if (f::has(j, "up_at_s")) l.up_at_s = f::nonneg(j, "up_at_s");
  l.rewound.reset();
  if (f::has(j, "rewound")) {
    const json& w = f::req(j, "rewound");
    RankFaultLog::Rewind x;
    x.boundary_step = static_cast<int>(f::count(w, "boundary_step"));
    x.checkpoint_step = static_cast<int>(f::count(w, "checkpoint_step"));
    if (x.checkpoint_step > x.boundary_step)
      f::fail("rewound.checkpoint_step", fmt::format("{} is after the boundary {}", x.checkpoint_step, x.boundary_step));
    x.checkpoint_at_s = f::nonneg(w, "checkpoint_at_s");
    x.at_s = f::nonneg(w, "at_s");
    if (!f::req(w, "decided_at_s").is_null()) x.decided_at_s = f::nonneg(w, "decided_at_s");
    x.dead = static_cast<int>(f::count(w, "dead"));
    l.rewound = x;
  }
}

FaultsSection section_of(const FaultPlan& plan) {
  FaultsSection s;
  s.heartbeat_interval_s = std::chrono::duration<double>(plan.heartbeat.interval).count();
  s.heartbeat_timeout_s = std::chrono::duration<double>(plan.heartbeat.timeout).count();
  s.heartbeat_confirmation_s = std::chrono::duration<double>(plan.heartbeat.confirmation).count();
  s.heartbeat_witnesses = plan.heartbeat.witnesses;
  s.heartbeat_unreachable_s = plan.heartbeat.witnesses > 0 ? std::chrono::duration<double>(plan.heartbeat.unreachable).count() : 0;
  s.policy = plan.policy;
  if (plan.policy == "estimate") s.estimate = plan.estimate;
  s.shard = plan.shard;
  s.full_recovery_above = plan.full_recovery.above_fraction;
  return s;
}

FaultsSection merge_fault_logs(const FaultPlan& plan, const RankLayout& layout, const std::vector<RankFaultLog>& logs,
                               int origin) {
  FaultsSection s = section_of(plan);
  const int64_t t0 = logs.at(static_cast<size_t>(origin)).start_ns;
  // Rank r's seconds on the origin's start (the host's monotonic clock is every rank's).
  // A rank starts a few ms before or after the origin; an instant before the origin's start is 0.
  auto shift = [&](size_t r, double t) { return std::max(0.0, t + static_cast<double>(logs[r].start_ns - t0) * 1e-9); };
  std::map<int, size_t> kill_of;  // killed rank -> its record
  for (size_t r = 0; r < logs.size(); ++r)
    if (logs[r].killed_at_step) {
      FaultRecord k;
      k.event = "kill";
      k.rank = static_cast<int>(r);
      k.dc = layout.dc_of(k.rank);
      k.worker = layout.local_of(k.rank);
      k.at_s = shift(r, *logs[r].killed_at_s);
      k.step = *logs[r].killed_at_step;
      k.policy = plan.policy;
      kill_of[k.rank] = s.events.size();
      s.events.push_back(k);
    }
  for (size_t r = 0; r < logs.size(); ++r) {
    for (Detection d : logs[r].detections) {
      d.at_s = shift(r, d.at_s);
      d.last_heard_s = shift(r, d.last_heard_s);
      d.suspected_s = shift(r, d.suspected_s);
      s.detections.push_back(d);
    }
    s.heartbeats_sent += logs[r].heartbeats_sent;
    for (FaultRecord x : logs[r].slow) {
      x.at_s = shift(r, x.at_s);
      if (x.until_s) x.until_s = shift(r, *x.until_s);
      s.events.push_back(x);
    }
  }
  std::stable_sort(s.detections.begin(), s.detections.end(), [](const Detection& a, const Detection& b) {
    return std::tie(a.at_s, a.observer, a.peer) < std::tie(b.at_s, b.observer, b.peer);
  });
  for (const Detection& d : s.detections) {
    auto it = kill_of.find(d.peer);
    if (it == kill_of.end()) {
      ++s.false_detections;
      continue;
    }
    FaultRecord& k = s.events[it->second];
    if (!k.detected_at_s) {  // in time order: the first is the earliest
      k.detected_by = d.observer;
      k.detected_at_s = d.at_s;
      k.detection_latency_s = d.at_s - k.at_s;
    }
  }
  for (size_t r = 0; r < logs.size(); ++r)
    for (const RankFaultLog::Resume& x : logs[r].resumed)
      for (int p : x.peers) {
        auto it = kill_of.find(p);
        if (it == kill_of.end()) continue;
        FaultRecord& k = s.events[it->second];
        k.survivors = x.group_size;
        if (x.coordinator) k.steps_lost += 1;
        if (x.took_over == p) k.new_leader = static_cast<int>(r);
        if (k.detected_at_s) k.recovery_s = std::max(k.recovery_s.value_or(0.0), shift(r, x.at_s) - *k.detected_at_s);
      }
  for (size_t r = 0; r < logs.size(); ++r)
    for (const RankFaultLog::Handover& h : logs[r].handed) {
      FaultRecord x;
      x.event = "restart";
      x.rank = h.rank;
      x.dc = layout.dc_of(h.rank);
      x.worker = layout.local_of(h.rank);
      x.at_s = shift(r, h.at_s);
      x.step = h.step;
      x.policy = h.from_checkpoint ? "full_recovery" : "rejoin";
      x.survivors = h.group_size;
      const size_t back = static_cast<size_t>(h.rank);
      if (back < logs.size() && logs[back].rejoined_at_s)
        x.recovery_s = std::max(0.0, shift(back, *logs[back].rejoined_at_s) - x.at_s);
      s.events.push_back(x);
    }
  std::stable_sort(s.events.begin(), s.events.end(),
                   [](const FaultRecord& a, const FaultRecord& b) { return std::tie(a.at_s, a.rank) < std::tie(b.at_s, b.rank); });
  // A full recovery: every survivor went back at one boundary to one checkpoint; the rank whose
  // report of deaths crossed the threshold decided it (it may have died since, or the run may
  // have ended before the boundary: then nobody went back and there is no record, as embedded).
  std::optional<std::pair<double, int>> decided;  // (when, dead) on the origin's clock
  for (size_t r = 0; r < logs.size(); ++r) {
    if (!logs[r].rewound) continue;
    const RankFaultLog::Rewind& w = *logs[r].rewound;
    if (w.decided_at_s) decided = std::make_pair(shift(r, *w.decided_at_s), w.dead);
    if (w.boundary_step == 0) continue;  // decided here, never went back
    if (!s.full_recovery) {
      FullRecoveryRecord f;
      f.above_fraction = plan.full_recovery.above_fraction;
      f.workers = static_cast<int>(logs.size());
      f.then = plan.full_recovery.then;
      f.boundary_step = w.boundary_step;
      f.checkpoint_step = w.checkpoint_step;
      f.steps_redone = w.boundary_step - w.checkpoint_step;
      f.checkpoint_at_s = w.checkpoint_at_s;
      s.full_recovery = f;
    }
    FullRecoveryRecord& f = *s.full_recovery;
    if (w.boundary_step != f.boundary_step || w.checkpoint_step != f.checkpoint_step)
      throw std::runtime_error(fmt::format("rank {} went back at step {} to the checkpoint after {} steps, another rank "
                                           "at {} to {}: the survivors must agree",
                                           r, w.boundary_step, w.checkpoint_step, f.boundary_step, f.checkpoint_step));
    f.rewound_at_s = std::max(f.rewound_at_s, shift(r, w.at_s));
    f.survivors += 1;
  }
  if (s.full_recovery && decided) std::tie(s.full_recovery->decided_at_s, s.full_recovery->dead) = *decided;
  // "then": "restarts": the workers its survivors handed the boundary to, and when the last was up.
  if (s.full_recovery)
    for (size_t r = 0; r < logs.size(); ++r)
      for (const RankFaultLog::Handover& h : logs[r].handed) {
        if (!h.from_checkpoint) continue;
        FullRecoveryRecord& f = *s.full_recovery;
        f.restarted += 1;
        const size_t back = static_cast<size_t>(h.rank);
        if (back < logs.size() && logs[back].up_at_s)
          f.restarted_at_s = std::max(f.restarted_at_s.value_or(0.0), shift(back, *logs[back].up_at_s));
      }
  return s;
}

}  // namespace geotb::model
