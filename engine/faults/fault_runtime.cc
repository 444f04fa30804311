#include "engine/faults/fault_runtime.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/collectives/transport_group.h"
#include "engine/faults/rejoin.h"
#include "engine/faults/shrink.h"
#include "engine/transport/transport.h"
#include "engine/result.h"

namespace geotb::engine {


// The embedded mode's FaultPort: the fabric's endpoints and alarms, the heartbeat monitor, the
// in-process intra-DC group, the scheduler's virtual clock, the run's shared records.
class FaultRuntime::Port final : public FaultPort {
 public:
  Port(FaultRuntime& rt, int rank) : rt_(rt), rank_(rank), dc_(rt.layout_.dc_of(rank)) {
    // The other DCs' leaders a DC leader watches: their deaths are recorded; their DCs recover
    // on their own and a survivor takes over the dead leader's address (take_over below).
    const std::vector<int> watched = rt.groups_.watched_by(rank);
    std::map<int, std::vector<int>> witnesses;  // whom to ask about each (heartbeat.h)
    for (int p : watched) witnesses[p] = rt.groups_.witnesses(rank, p, rt.plan_.heartbeat.witnesses);
    monitor_ = std::make_unique<HeartbeatMonitor>(rt.fabric_, rt.sched_, rank, watched, rt.plan_.heartbeat,
                                                  rt.world_group_, [this](const model::Detection& d) { rt_.on_declared(d); },
                                                  rt.groups_.watched_outside_group(rank), std::move(witnesses));
  }

  void create() { monitor_->create(); }
  void start(Nanos t0) { monitor_->start(t0, rt_.t0_); }
  uint64_t heartbeats_sent() const { return monitor_->sent(); }

  // clock
  Nanos now() override { return rt_.sched_.now(rt_.sched_.current()); }
  Nanos t0() override { return rt_.t0_; }

  // record
  size_t record_slow(const model::FaultRecord& r) override {
    std::lock_guard<std::mutex> lk(rt_.mu_);
    rt_.records_.push_back(r);
    return rt_.records_.size() - 1;
  }
  void slow_ended(size_t record, double until_s) override {
    std::lock_guard<std::mutex> lk(rt_.mu_);
    rt_.records_[record].until_s = until_s;
  }
  void killed(int step, Nanos at) override {
    rt_.on_killed(rank_, step, at);
    rt_.fabric_.kill_endpoint(rank_);
    if (rt_.will_restart(rank_))
      monitor_->mute();
    else
      monitor_->stop();
  }
  void resumed(const std::vector<int>& fresh, int, const std::vector<int>& group, std::optional<int> took_over) override {
    if (took_over) {
      std::lock_guard<std::mutex> lk(rt_.mu_);
      if (auto it = rt_.killed_.find(*took_over); it != rt_.killed_.end()) rt_.records_[it->second.record].new_leader = rank_;
    }
    rt_.on_resumed(fresh, rank_, now(), static_cast<int>(group.size()), rank_ == group.front());
  }
  // Whenever heartbeats run: a false detection can fence rank 0 without any kill in the timeline,
  // and the lowest survivor then reports (FaultRuntime::reporter).
  bool record_all() const override { return rt_.plan_.active(); }
  bool checkpoint_cannot_complete(int steps) const override { return rt_.checkpoint_cannot_complete(rank_, steps); }
  void rewound() override {}  // FaultRuntime::rewound, called by the host

  // compute: the charge reads compute_factor (slow events)
  void step_begins(WorkerEnv& env) override { env.estimator = rt_.estimator(rank_); }  // policy "estimate"
  void set_factor(double factor) override { rt_.factor_[static_cast<size_t>(rank_)].store(factor); }
  void after_compute(WorkerEnv&) override {}
  void done(WorkerEnv&) override { monitor_->stop(); }

  // detect: the fabric's alarm says a death is pending; the heartbeat monitor's declarations are
  // the deaths.
  bool fenced() const override { return rt_.fenced(rank_); }
  bool death_pending() override { return rt_.fabric_.alarmed(rank_); }
  std::set<int> declared() override { return monitor_->declared_clearing_alarm(); }
  void handled(const std::set<int>&) override {}

  // interrupt and regroup: the in-process group shrinks before the agreement.
  void leave_group(WorkerEnv& env, const std::vector<int>& group, const std::set<int>&) override {
    const int index = static_cast<int>(std::find(group.begin(), group.end(), rank_) - group.begin());
    if (env.intra) {
      intra_ = shrink_transport_group(*env.intra, *env.net, group, index);
      env.intra = intra_.get();
    }
    if (GradientEstimator* e = rt_.estimator(rank_)) e->set_group(group);
  }
  // Another member died during the agreement (several kills at once, detected one after the
  // other): shrink again without it, in a new epoch.
  bool agreement_failed(const TransportError& e) override { return dynamic_cast<const PeerDeclaredDead*>(&e) != nullptr; }
  void join_group(WorkerEnv&, const std::vector<int>&, const std::set<int>&) override {}

  // revive. A timeline restart: the restarted are handed their state now; the intra-DC group
  // continues its tags. Full recovery's: they are up restart_after after the decision; the grown
  // group's tags start beyond any its shrunk predecessors used (the survivors' counts of those may
  // differ by an interrupted collective): the same base on every member, no talk.
  RejoinMessage restart_message(WorkerEnv& env, int steps, uint64_t tag_epoch, bool full_recovery) override {
    const Nanos t = now();
    RejoinMessage m;
    m.tag_epoch = tag_epoch;
    m.steps = steps;
    if (full_recovery) {
      std::lock_guard<std::mutex> lk(rt_.mu_);
      at_ = std::max(t, rt_.restart_up_);
      m.group_tags = tag_epoch << 52;
    } else {
      at_ = t;
      m.group_tags = env.intra ? transport_group_tags_used(*env.intra) : 0;
    }
    return m;
  }
  void revive(const std::vector<int>&, int, bool) override {}  // one fabric: revived by the group below
  void take_back(WorkerEnv& env, const GrownGroup& g, const RejoinMessage& m, bool full_recovery) override {
    if (env.intra) {
      const int index = static_cast<int>(std::find(g.group.begin(), g.group.end(), rank_) - g.group.begin());
      intra_ = full_recovery ? join_transport_group(*env.net, g.group, index, m.group_tags)
                             : shrink_transport_group(*env.intra, *env.net, g.group, index);
      env.intra = intra_.get();
    }
    if (GradientEstimator* e = rt_.estimator(rank_)) e->set_group(g.group);
    for (int r : g.back) {
      monitor_->revive_peer(r, at_);  // heard from when it is up: silent until then, not dead
      rt_.fabric_.revive_endpoint(r);
    }
    // Detections of the restarted before the boundary left an alarm that no longer stands.
    if (full_recovery && monitor_->declared().empty()) rt_.fabric_.clear_alarm(rank_);
  }
  void hand_over(WorkerEnv& env, int r, RejoinMessage m, const char* policy, bool from_checkpoint) override {
    hand_over(env, r, std::move(m), at_, policy, from_checkpoint, false);
  }
  void taken_back(WorkerEnv&, const GrownGroup&, const RejoinMessage&, bool) override {}
  std::set<int> restart_sites(WorkerEnv& env, int steps, const StateBuffers& state, const std::set<int>& handled) override {
    const auto whole = rt_.sites_back_at_.find(steps);
    if (whole == rt_.sites_back_at_.end()) return {};
    for (int dc : whole->second) restart_site(env, steps, dc, state, handled);
    return whole->second;
  }
  RecoveryRestart restarted_by_recovery() override {
    std::lock_guard<std::mutex> lk(rt_.mu_);
    return {std::vector<int>(rt_.restarted_.begin(), rt_.restarted_.end()), rt_.full_boundary_};
  }
  void rejoined(const std::set<int>& handled, int) override {
    // Those are dead already: not watched (their silence would raise a second declaration and an
    // alarm that interrupts this worker's next receive with nothing to recover from).
    monitor_->unmute(now(), handled);
  }

  /// A site restarted whole at boundary `steps` (every worker of `dc` was killed at one step:
  /// a quorum of sites dropped it). Every live rank stops counting its leader as dead; the lowest
  /// survivor of the coordinating site revives the site's endpoints, tells the quorum, and hands
  /// each restarted worker its own state (the restarted keep only the anchor of it).
  void restart_site(WorkerEnv& env, int steps, int dc, const StateBuffers& state, const std::set<int>& handled) {
    const Nanos t = now();
    const std::vector<int> members = rt_.group_of(rt_.layout_.first(dc), {});
    for (int r : members) monitor_->revive_peer(r, t);  // the other leaders watch its leader
    if (dc_ != rt_.site_coordinator_dc_ || rank_ != rt_.group_of(rank_, handled).front()) return;
    for (int r : members) rt_.fabric_.revive_endpoint(r);
    if (rt_.quorum_) rt_.quorum_->site_up(dc);
    const uint64_t epoch = rt_.restarts_->epoch_at.at(steps);
    const std::vector<int> ring = engine::ring_with(env.ring, members, handled, rt_.P_);
    // A brand-new group: its tags start at the epoch's base, the same on every member.
    for (int r : members)
      hand_over(env, r, {epoch, epoch << 52, steps, members, ring, {}, state}, t, "site_restart", false, true);
  }

  // The coordinator's part of a restart: the message to restarted worker `r` (where it starts,
  // then its state), the report's restart record (`policy`), the hand-off that wakes it at `at`.
  void hand_over(WorkerEnv& env, int r, RejoinMessage m, Nanos at, const char* policy, bool from_checkpoint,
                 bool other_site) {
    const int steps = m.steps, survivors = static_cast<int>(m.members.size());
    env.net->send(r, kRejoinTag, encode_rejoin(m));
    size_t record = 0;
    {
      std::lock_guard<std::mutex> lk(rt_.mu_);
      model::FaultRecord rec;
      rec.event = "restart";
      rec.rank = r;
      rec.dc = rt_.layout_.dc_of(r);
      rec.worker = rt_.layout_.local_of(r);
      rec.at_s = rt_.secs(at);
      rec.step = steps;
      rec.policy = policy;
      rec.survivors = survivors;
      record = rt_.records_.size();
      rt_.records_.push_back(rec);
    }
    rt_.sched_.update([&] {
      Handoff& h = rt_.handoff_[r];
      h.coordinator = rank_;
      h.at = at;
      h.record = record;
      h.from_checkpoint = from_checkpoint;
      h.other_site = other_site;
    });
  }

  /// The killed worker's wait for its restart (FaultRuntime::await_restart).
  std::optional<Rejoin> await(WorkerEnv& env, const std::function<bool()>& run_over) {
    const auto me = rt_.sched_.current();
    int coordinator = -1;
    bool over = false;
    rt_.sched_.wait(
        me,
        [&]() -> std::optional<Nanos> {
          auto it = rt_.handoff_.find(rank_);
          if (it == rt_.handoff_.end() || !it->second.at) {
            if (run_over && run_over()) {
              over = true;
              return Nanos{0};
            }
            return std::nullopt;
          }
          coordinator = it->second.coordinator;
          return *it->second.at;
        },
        std::nullopt, "rank " + std::to_string(rank_) + ": dead until its restart");
    if (over) {
      monitor_->stop();
      return std::nullopt;
    }
    rt_.fabric_.clear_alarm(rank_);
    RejoinMessage m = decode_rejoin(env.net->recv(coordinator, kRejoinTag));
    Rejoin j;
    j.tag_epoch = m.tag_epoch;
    j.group_tags = m.group_tags;
    j.steps = m.steps;
    j.members = std::move(m.members);
    j.ring = std::move(m.ring);
    j.state = std::move(m.state);
    const Nanos t = rt_.sched_.now(me);
    j.from_checkpoint = rt_.handoff_.at(rank_).from_checkpoint;  // written before the wait returned
    j.other_site = rt_.handoff_.at(rank_).other_site;
    {
      std::lock_guard<std::mutex> lk(rt_.mu_);
      rt_.dead_.erase(rank_);
      const Handoff& h = rt_.handoff_.at(rank_);
      model::FaultRecord& rec = rt_.records_[h.record];
      rec.recovery_s = rt_.secs(t) - rec.at_s;
      auto k = rt_.killed_.find(rank_);
      if (k != rt_.killed_.end()) j.killed_at_step = rt_.records_[k->second.record].step;
    }
    return j;
  }

 private:
  FaultRuntime& rt_;
  const int rank_, dc_;
  std::unique_ptr<HeartbeatMonitor> monitor_;
  std::unique_ptr<IntraDc> intra_;  // the rebuilt group
  Nanos at_{0};                     // a restart's instant (restart_message)
};

FaultRuntime::FaultRuntime(const model::FaultPlan& plan, const StrategyInfo& info, const model::RankLayout& layout,
                           emu::Fabric& fabric, emu::VirtualScheduler& sched,
                           std::vector<std::vector<uint32_t>> shards, uint64_t seed)
    : plan_(plan), world_group_(!info.needs_intra_dc || info.one_group), layout_(layout), M_(layout.dcs()),
      P_(layout.world()), groups_{layout, world_group_}, fabric_(fabric), sched_(sched),
      own_shards_(std::make_shared<const std::vector<std::vector<uint32_t>>>(std::move(shards))), seed_(seed), factor_(new std::atomic<double>[static_cast<size_t>(layout.world())]) {
  if (plan_.has_kills() && !info.survives_kills)
    throw RunError("node kills: this strategy does not survive them (its descriptor: survives_kills)");
  for (const model::FaultEvent& e : plan_.events)
    if (e.kind == model::FaultEvent::Kind::kRestart && !e.at_step)
      throw RunError("timeline: restart of dc " + std::to_string(e.dc) + " worker " + std::to_string(e.worker) +
                     ": a restart is timed by \"at_step\" (its group's step boundary), not by \"at\"");
  restarts_ = std::make_shared<const RestartSchedule>(restart_schedule(plan_, layout_));
  if (!restarts_->ranks_at.empty() && full_recovery_possible())
    throw RunError("timeline: restarts together with full recovery (faults.full_recovery) are not supported yet: "
                   "set faults.full_recovery.above_fraction to 1");
  // A DC leader's kill with per-DC groups: every endpoint keeps its last messages to each endpoint
  // of another site, for the dead leader's successor (Fabric::take_over).
  if (!world_group_ && plan_.kills_a_dc_leader()) fabric_.retain_cross_site(kKeptForSuccessor);
  // Sites killed whole (per-DC groups; only under a quorum of sites: attach_quorum), in event
  // order: which, and at which boundary each comes back whole. A restart of a part of a dead
  // site is remembered for attach_quorum's refusal.
  if (!world_group_) {
    std::vector<int> alive(static_cast<size_t>(M_));
    for (int d = 0; d < M_; ++d) alive[static_cast<size_t>(d)] = layout_.workers(d);
    std::set<int> dead_now;
    for (const model::FaultEvent& e : plan_.events) {
      const auto dc = static_cast<size_t>(e.dc);
      if (e.kind == model::FaultEvent::Kind::kKill && --alive[dc] == 0) {
        killed_whole_.insert(e.dc);
        dead_now.insert(e.dc);
      }
      if (e.kind != model::FaultEvent::Kind::kRestart) continue;
      ++alive[dc];
      if (!dead_now.count(e.dc)) continue;
      const std::vector<int>& back = restarts_->ranks_at.at(*e.at_step);
      const std::vector<int> site = groups_.group_of(layout_.first(e.dc), {});
      if (std::all_of(site.begin(), site.end(), [&](int x) { return std::find(back.begin(), back.end(), x) != back.end(); }))
        sites_back_at_[*e.at_step].insert(e.dc);
      else
        partly_restarted_ = e.dc;
      if (alive[dc] == layout_.workers(e.dc)) dead_now.erase(e.dc);
    }
  }
  // A restarted site's model comes from a site that always has a live worker.
  while (killed_whole_.count(site_coordinator_dc_)) ++site_coordinator_dc_;
  progress_.assign(static_cast<size_t>(P_), 0);
  for (int r = 0; r < P_; ++r) {
    factor_[static_cast<size_t>(r)].store(1.0);
    ports_.push_back(std::make_unique<Port>(*this, r));
    agents_.push_back(std::make_unique<FaultAgent>(
        FaultAgentConfig{plan_, groups_, r, own_shards_, seed_, restarts_}, *ports_.back()));
  }
  for (auto& p : ports_) p->create();  // actor ids in rank order, before any worker runs
  if (plan_.policy == "estimate" && world_group_)
    throw RunError("faults.policy: \"estimate\": this strategy has no intra-DC group to estimate a dead worker's "
                   "gradient in (strategies with one: hier_ef_topk_int8, hierarchical, local_sgd, diloco, powersgd)");
}

FaultRuntime::~FaultRuntime() = default;

void FaultRuntime::enable_estimates(const Dataset& train, size_t batch) {
  if (plan_.policy != "estimate") return;
  // The training set's mean input: batch_feature over every example, with no centre.
  auto center = std::make_shared<const std::vector<float>>(
      batch_feature(train.images.data(), train.size, std::vector<float>(train.features(), 0.0f)));
  board_ = std::make_unique<EstimateBoard>();
  for (int r = 0; r < P_; ++r) {
    GradientEstimator::Setup s;
    s.cfg = plan_.estimate;
    s.rank = r;
    s.dc = layout_.dc_of(r);
    s.dc_ranks = groups_.group_of(r, {});
    for (int m : s.dc_ranks) s.shards[m] = own_shards_->at(static_cast<size_t>(m));
    s.train = &train;
    s.center = center;
    s.seed = seed_;
    s.batch = batch;
    s.board = board_.get();
    estimators_.push_back(std::make_unique<GradientEstimator>(std::move(s)));
  }
}

void FaultRuntime::attach_quorum(SiteQuorum* q) {
  quorum_ = q;
  if (!killed_whole_.empty() && !q)
    throw RunError("node kills: every worker of dc " + std::to_string(*killed_whole_.begin()) +
                   " killed: nobody of its group survives to recover (a strategy with \"quorum\" drops the site from "
                   "the exchange instead)");
  // A dead site comes back whole at one boundary, or not at all: nobody could hand a part of it
  // the model.
  if (partly_restarted_)
    throw RunError("node kills: every worker of dc " + std::to_string(*partly_restarted_) +
                   " killed: a dead site is restarted whole, at one step (\"restart\" of every worker), or not at all");
}

GradientEstimator* FaultRuntime::estimator(int rank) const {
  return estimators_.empty() ? nullptr : estimators_.at(static_cast<size_t>(rank)).get();
}

FaultHooks& FaultRuntime::hooks(int rank) { return *agents_.at(static_cast<size_t>(rank)); }

double FaultRuntime::compute_factor(int rank) const { return factor_[static_cast<size_t>(rank)].load(); }

bool FaultRuntime::dead_at_end(int rank) const {
  std::lock_guard<std::mutex> lk(mu_);
  return dead_.count(rank) > 0;
}

int FaultRuntime::reporter() const {
  std::lock_guard<std::mutex> lk(mu_);
  for (int r = 0; r < P_; ++r)
    if (!dead_.count(r)) return r;
  return 0;
}

void FaultRuntime::started(int rank, Nanos t0) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    t0_ = t0;
  }
  ports_.at(static_cast<size_t>(rank))->start(t0);
}

bool FaultRuntime::fenced(int rank) const {
  std::lock_guard<std::mutex> lk(mu_);
  return fenced_.count(rank) > 0;
}

std::vector<int> FaultRuntime::group_of(int rank, const std::set<int>& dead) const { return groups_.group_of(rank, dead); }

void FaultRuntime::on_declared(const model::Detection& d) {
  bool fence = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    detections_.push_back(d);
    auto it = killed_.find(d.peer);
    if (it != killed_.end() && dead_.count(d.peer)) {
      auto [fd, fresh] = first_detected_.emplace(d.peer, d.at_s);
      if (!fresh) fd->second = std::min(fd->second, d.at_s);
      model::FaultRecord& r = records_[it->second.record];
      if (!r.detected_at_s || d.at_s < *r.detected_at_s) {
        r.detected_by = d.observer;
        r.detected_at_s = d.at_s;
        r.detection_latency_s = d.at_s - r.at_s;
      }
    } else {
      ++false_detections_;
      // Under a quorum of sites, another site's leader declared dead is the service's matter
      // (it drops a site it cannot reach): fenced off, that site would lose its leader for good.
      if (!(quorum_ && layout_.dc_of(d.peer) != layout_.dc_of(d.observer))) {
        fence = !fenced_.count(d.peer);
        fenced_.insert(d.peer);
      }
    }
  }
  // A peer declared dead that is not: fenced off (it dies at its next synchronisation, or now if
  // it is blocked), so that it cannot go on in a group that was rebuilt without it.
  if (fence)
    fabric_.raise_alarm(d.peer, std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(d.at_s)) + t0_, true);
}

void FaultRuntime::on_killed(int rank, int step, Nanos now) {
  std::lock_guard<std::mutex> lk(mu_);
  model::FaultRecord r;
  r.event = "kill";
  r.rank = rank;
  r.dc = layout_.dc_of(rank);
  r.worker = layout_.local_of(rank);
  r.at_s = secs(now);
  r.step = step;
  r.policy = fenced_.count(rank) ? "shrink (fenced after a detection)" : plan_.policy;
  killed_[rank] = KillState{records_.size(), r.at_s, now, {}, 0};
  records_.push_back(r);
  dead_.insert(rank);
  if (quorum_ && !world_group_) {  // its site's last worker: a dead site for the quorum
    const std::vector<int> site = groups_.group_of(rank, {});
    if (std::all_of(site.begin(), site.end(), [&](int x) { return dead_.count(x) > 0; })) {
      // Dead since its last death in virtual time (the kills reach here in host order).
      Nanos since{0};
      for (int x : site) since = std::max(since, killed_.at(x).at);
      quorum_->site_down(layout_.dc_of(rank), since);
      for (int x : site) records_[killed_.at(x).record].policy = "quorum (a dead site)";
    }
  }
}

void FaultRuntime::on_resumed(const std::vector<int>& peers, int rank, Nanos now, int group_size, bool coordinator) {
  std::lock_guard<std::mutex> lk(mu_);
  const double t = secs(now);
  for (int p : peers) {
    auto it = killed_.find(p);
    if (it == killed_.end()) continue;
    KillState& k = it->second;
    k.resumed.insert(rank);
    k.last_resume_s = std::max(k.last_resume_s, t);
    model::FaultRecord& r = records_[k.record];
    r.survivors = group_size;
    if (coordinator) r.steps_lost += 1;
  }
}

bool FaultRuntime::checkpoint_cannot_complete(int rank, int steps) const {
  std::lock_guard<std::mutex> lk(mu_);
  // Once a full recovery is decided, what a rank still writes before it goes back is abandoned.
  if (full_boundary_ >= 0 && !rewound_.count(rank) && !restarted_.count(rank)) return true;
  // A worker that full recovery restarts writes it after its restart.
  for (const auto& [r, k] : killed_)
    if (dead_.count(r) && !restarted_.count(r) && records_[k.record].step < steps) return true;
  return false;
}

bool FaultRuntime::will_restart(int rank) const {
  int killed_at = -1;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto k = killed_.find(rank);
    if (k != killed_.end()) killed_at = records_[k->second.record].step;
  }
  for (const auto& [step, ranks] : restarts_->ranks_at)
    if (step > killed_at && std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) return true;
  // Full recovery may restart it: it waits, until it is restarted or the run is over. Not once a
  // full recovery was decided (once per run: later deaths are shrunk only).
  if (restarts_on_recovery() && full_recovery_possible()) {
    std::lock_guard<std::mutex> lk(mu_);
    return full_boundary_ < 0 || restarted_.count(rank) > 0;
  }
  return false;
}

std::optional<FaultRuntime::Rejoin> FaultRuntime::await_restart(WorkerEnv& env, const std::function<bool()>& run_over) {
  std::optional<Rejoin> j = ports_.at(static_cast<size_t>(env.rank))->await(env, run_over);
  // Back: heartbeats again, the dead set of its group its coordinator's.
  if (j) agents_.at(static_cast<size_t>(env.rank))->rejoined(j->members, j->steps, false);
  return j;
}

bool FaultRuntime::full_recovery_possible() const { return plan_.full_recovery_reachable(P_); }

size_t FaultRuntime::full_recovery_count() const { return static_cast<size_t>(plan_.full_recovery_count(P_)); }

std::optional<double> FaultRuntime::full_recovery_instant() const {
  // The instant the count of workers declared dead reached full_recovery_count(): its k-th
  // first detection. Detections reach on_declared in host order, not in virtual order; every
  // one before the caller's instant has been recorded (rewind_due runs in act(): no actor can
  // still act earlier), so comparing this with the caller's instant does not depend on the host.
  const size_t k = full_recovery_count();
  if (first_detected_.size() < k) return std::nullopt;
  std::vector<double> at;
  for (const auto& [peer, t] : first_detected_) at.push_back(t);
  std::nth_element(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(k - 1), at.end());
  return at[k - 1];
}

bool FaultRuntime::rewind_due(int rank, int steps) {
  bool due = false;
  const auto me = sched_.current();
  sched_.act(me, [&](Nanos now) {
    std::lock_guard<std::mutex> lk(mu_);
    progress_[static_cast<size_t>(rank)] = steps;
    // Once per run: it reaches the boundary again after going back (or after its restart).
    if (rewound_.count(rank) || restarted_.count(rank)) return;
    if (full_boundary_ < 0) {
      const std::optional<double> decided = full_recovery_instant();
      if (!decided || *decided > secs(now)) return;
      // Every other rank has decided its boundary progress_[r] (acts run in virtual-time order):
      // the first one nobody passed. Dead ranks' last boundaries count too (harmless, and the
      // set of the dead is written in host order).
      int furthest = steps - 1;
      for (int r = 0; r < P_; ++r)
        if (r != rank) furthest = std::max(furthest, progress_[static_cast<size_t>(r)]);
      full_boundary_ = furthest + 1;
      full_.above_fraction = plan_.full_recovery.above_fraction;
      full_.dead = static_cast<int>(full_recovery_count());
      full_.workers = P_;
      full_.decided_at_s = *decided;
      full_.then = plan_.full_recovery.then;
      if (restarts_on_recovery()) {
        // The dead when it was decided (every kill before this instant is recorded: acts run in
        // virtual-time order) are restarted then, and are up restart_after later.
        for (const auto& [r, k] : killed_)
          if (dead_.count(r) && records_[k.record].at_s <= secs(now)) restarted_.insert(r);
        const Nanos decided_at = t0_ + std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(*decided));
        restart_up_ = decided_at + plan_.full_recovery.restart_after;
        full_.restarted = static_cast<int>(restarted_.size());
        full_.restarted_at_s = secs(restart_up_);
      }
    }
    due = steps == full_boundary_;
  });
  return due;
}

void FaultRuntime::rewound(int rank, int steps, int checkpoint_step, Nanos checkpoint_at, Nanos now) {
  std::lock_guard<std::mutex> lk(mu_);
  rewound_.insert(rank);
  full_.boundary_step = steps;
  full_.checkpoint_step = checkpoint_step;
  full_.steps_redone = steps - checkpoint_step;
  full_.checkpoint_at_s = std::chrono::duration<double>(checkpoint_at).count();
  full_.rewound_at_s = std::max(full_.rewound_at_s, secs(now));
  full_.survivors = static_cast<int>(rewound_.size());
}

model::FaultsSection FaultRuntime::section() const {
  std::lock_guard<std::mutex> lk(mu_);
  model::FaultsSection s = model::section_of(plan_);
  if (!rewound_.empty()) s.full_recovery = full_;
  s.events = records_;
  if (board_) s.estimates = board_->records();
  // Recovery = first detection -> the last survivor resumed, set here from both final figures:
  // the threads that record them run in host order, which need not be their virtual order.
  for (const auto& [rank, k] : killed_) {
    model::FaultRecord& r = s.events[k.record];
    if (r.detected_at_s && !k.resumed.empty()) r.recovery_s = k.last_resume_s - *r.detected_at_s;
  }
  // Events at one instant (restarts of one full recovery, kills at one step) are recorded in host
  // order: by instant, then rank, so that a repeated run writes the same report.
  std::stable_sort(s.events.begin(), s.events.end(), [](const model::FaultRecord& a, const model::FaultRecord& b) {
    return std::tie(a.at_s, a.rank) < std::tie(b.at_s, b.rank);
  });
  s.detections = detections_;
  std::stable_sort(s.detections.begin(), s.detections.end(),
                   [](const model::Detection& a, const model::Detection& b) {
                     return std::tie(a.at_s, a.observer, a.peer) < std::tie(b.at_s, b.observer, b.peer);
                   });
  s.false_detections = false_detections_;
  for (const auto& p : ports_) s.heartbeats_sent += p->heartbeats_sent();
  return s;
}

}  // namespace geotb::engine
