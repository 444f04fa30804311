#include "engine/faults/agent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/collectives/transport_group.h"
#include "engine/result.h"

namespace geotb::engine {

namespace {

/// Tags of the survivors' agreement after the e-th membership change: outside every range a
/// Transport user may take, beside the heartbeats'.
uint64_t agreement_tag(int epoch, int k) { return (uint64_t{1} << 63) + 1024 + 2 * static_cast<uint64_t>(epoch) + k; }

std::vector<uint8_t> encode(const std::vector<int64_t>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(int64_t));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<int64_t> decode(const std::vector<uint8_t>& b) {
  std::vector<int64_t> v(b.size() / sizeof(int64_t));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(int64_t));
  return v;
}

std::string show(const std::vector<int64_t>& v) {
  std::string s = "step " + (v.empty() ? std::string("?") : std::to_string(v[0])) + ", dead {";
  for (size_t i = 1; i < v.size(); ++i) s += (i > 1 ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

}  // namespace

class FaultRuntime::Agent final : public FaultHooks {
 public:
  Agent(FaultRuntime& rt, int rank) : rt_(rt), rank_(rank), dc_(rank / rt.N_) {
    std::vector<int> peers = rt.group_of(rank, {});
    peers.erase(std::remove(peers.begin(), peers.end(), rank), peers.end());
    if (!rt.world_group_ && rank % rt.N_ == 0)  // a DC leader also watches the other DCs' leaders
      for (int d = 0; d < rt.M_; ++d)
        if (d != dc_) peers.push_back(d * rt.N_);
    monitor_ = std::make_unique<HeartbeatMonitor>(rt.fabric_, rt.sched_, rank, std::move(peers), rt.plan_.heartbeat,
                                                  rt.world_group_, [this](const model::Detection& d) { rt_.on_declared(d); });
    slow_.resize(rt.plan_.events.size());
  }

  void create() { monitor_->create(); }
  void start(Nanos t0) { monitor_->start(t0, rt_.t0_); }
  uint64_t heartbeats_sent() const { return monitor_->sent(); }

  void step_begins(WorkerEnv&, int step) override {
    const Nanos now = rt_.sched_.now(rt_.sched_.current());
    const double t = rt_.secs(now);
    const auto& ev = rt_.plan_.events;
    for (size_t i = 0; i < ev.size(); ++i) {
      const model::FaultEvent& e = ev[i];
      if (e.kind != model::FaultEvent::Kind::kSlow || e.dc * rt_.N_ + e.worker != rank_) continue;
      Slow& s = slow_[i];
      if (!s.started) {
        const bool due = e.at_step ? step >= *e.at_step : now - rt_.t0_ >= *e.at;
        if (!due) continue;
        s.started = true;
        s.step = step;
        s.start = now;
        rt_.factor_[static_cast<size_t>(rank_)].store(e.factor);
        model::FaultRecord r;
        r.event = "slow";
        r.rank = rank_;
        r.dc = e.dc;
        r.worker = e.worker;
        r.at_s = t;
        r.step = step;
        r.policy = "none";
        r.factor = e.factor;
        std::lock_guard<std::mutex> lk(rt_.mu_);
        s.record = rt_.records_.size();
        rt_.records_.push_back(r);
      } else if (!s.ended) {
        const bool over = e.steps ? step >= s.step + *e.steps : now - s.start >= *e.duration;
        if (!over) continue;
        s.ended = true;
        rt_.factor_[static_cast<size_t>(rank_)].store(1.0);
        std::lock_guard<std::mutex> lk(rt_.mu_);
        rt_.records_[s.record].until_s = t;
      }
    }
  }

  void before_sync(WorkerEnv& env, int step) override {
    const Nanos now = rt_.sched_.now(rt_.sched_.current());
    const auto& ev = rt_.plan_.events;
    if (rt_.fenced(rank_)) die(env, step, "fenced: declared dead by a peer");
    for (size_t i = 0; i < ev.size(); ++i) {
      const model::FaultEvent& e = ev[i];
      if (e.kind != model::FaultEvent::Kind::kKill || e.dc * rt_.N_ + e.worker != rank_) continue;
      if (e.at_step ? *e.at_step == step : (now - rt_.t0_ >= *e.at && !fired_time_kill_)) {
        fired_time_kill_ = true;
        die(env, step, "killed by the scenario's timeline");
      }
    }
  }

  bool recover(WorkerEnv& env, int step, BatchSampler& sampler) override {
    if (!rt_.fabric_.alarmed(rank_)) return false;
    if (rt_.fenced(rank_)) die(env, step, "fenced: declared dead by a peer");
    const std::set<int> declared = monitor_->declared();
    std::set<int> dead = handled_;
    std::vector<int> fresh;
    for (int d : declared)
      if (!handled_.count(d)) fresh.push_back(d), dead.insert(d);
    if (fresh.empty()) return false;
    const std::vector<int> old_group = rt_.group_of(rank_, handled_);
    for (int d : fresh)
      if (std::find(old_group.begin(), old_group.end(), d) == old_group.end())
        throw RunError("rank " + std::to_string(rank_) + " declared rank " + std::to_string(d) +
                       " (the leader of another data center) dead: this strategy cannot re-address its exchange "
                       "between data centers (policy shrink recovers inside a group only)");
    rt_.fabric_.clear_alarm(rank_);
    handled_ = dead;
    const std::vector<int> group = rt_.group_of(rank_, dead);
    const int index = static_cast<int>(std::find(group.begin(), group.end(), rank_) - group.begin());

    // Rebuild: the ring of every live rank (naive_ddp), the intra-DC group without the dead.
    std::vector<int> ring;
    for (int r : env.ring)
      if (!dead.count(r)) ring.push_back(r);
    env.ring = ring;
    if (env.intra) {
      intra_ = shrink_transport_group(*env.intra, *env.net, group, index);
      env.intra = intra_.get();
    }

    // Agreement on the step in flight and on who is dead: the group's lowest rank collects and answers.
    std::vector<int64_t> mine = {step};
    for (int d : dead) mine.push_back(d);
    const int coordinator = group.front();
    const int epoch = epoch_++;
    if (rank_ == coordinator) {
      for (int m : group) {
        if (m == rank_) continue;
        const std::vector<int64_t> theirs = decode(env.net->recv(m, agreement_tag(epoch, 0)));
        if (theirs != mine)
          throw RunError("shrink: survivors disagree: rank " + std::to_string(rank_) + " has " + show(mine) +
                         ", rank " + std::to_string(m) + " has " + show(theirs));
      }
      for (int m : group)
        if (m != rank_) env.net->send(m, agreement_tag(epoch, 1), encode(mine));
    } else {
      env.net->send(coordinator, agreement_tag(epoch, 0), encode(mine));
      const std::vector<int64_t> agreed = decode(env.net->recv(coordinator, agreement_tag(epoch, 1)));
      if (agreed != mine)
        throw RunError("shrink: rank " + std::to_string(rank_) + " has " + show(mine) + ", the group's coordinator " +
                       std::to_string(coordinator) + " decided " + show(agreed));
    }

    // The dead workers' data: dropped, or split among their DC's survivors.
    if (rt_.plan_.shard == "redistribute") {
      std::vector<uint32_t> shard = rt_.shards_[static_cast<size_t>(rank_)];
      for (int d : fresh) {
        if (d / rt_.N_ != dc_) continue;
        std::vector<int> heirs;
        for (int r = dc_ * rt_.N_; r < (dc_ + 1) * rt_.N_; ++r)
          if (!dead.count(r)) heirs.push_back(r);
        const auto k = static_cast<size_t>(std::find(heirs.begin(), heirs.end(), rank_) - heirs.begin());
        const auto& ds = rt_.shards_[static_cast<size_t>(d)];
        for (size_t i = k; i < ds.size(); i += heirs.size()) shard.push_back(ds[i]);
      }
      rt_.shards_[static_cast<size_t>(rank_)] = shard;
      sampler = BatchSampler(shard, rt_.seed_, static_cast<uint64_t>(rank_ + rt_.P_ * (epoch + 1)));
    }
    rt_.on_resumed(fresh, rank_, rt_.sched_.now(rt_.sched_.current()), static_cast<int>(group.size()),
                   rank_ == coordinator);
    return true;
  }

  bool record_all() const override { return rt_.plan_.has_kills(); }

  void done(WorkerEnv&) override { monitor_->stop(); }

 private:
  [[noreturn]] void die(WorkerEnv&, int step, const std::string& why) {
    rt_.on_killed(rank_, step, rt_.sched_.now(rt_.sched_.current()));
    rt_.fabric_.kill_endpoint(rank_);
    monitor_->stop();
    throw WorkerKilled("rank " + std::to_string(rank_) + " " + why + " at step " + std::to_string(step));
  }

  struct Slow {
    bool started = false, ended = false;
    int step = 0;
    Nanos start{0};
    size_t record = 0;
  };
  FaultRuntime& rt_;
  const int rank_, dc_;
  std::unique_ptr<HeartbeatMonitor> monitor_;
  std::set<int> handled_;           // dead peers already recovered from
  std::unique_ptr<IntraDc> intra_;  // the rebuilt group
  int epoch_ = 0;
  bool fired_time_kill_ = false;
  std::vector<Slow> slow_;
};

FaultRuntime::FaultRuntime(const model::FaultPlan& plan, const StrategyInfo& info, int dcs, int workers_per_dc,
                           emu::Fabric& fabric, emu::VirtualScheduler& sched,
                           std::vector<std::vector<uint32_t>> shards, uint64_t seed)
    : plan_(plan), world_group_(!info.needs_intra_dc || info.one_group), M_(dcs), N_(workers_per_dc),
      P_(dcs * workers_per_dc), fabric_(fabric), sched_(sched), shards_(std::move(shards)), seed_(seed),
      factor_(new std::atomic<double>[static_cast<size_t>(dcs * workers_per_dc)]) {
  if (plan_.has_kills() && !info.survives_kills)
    throw RunError("node kills: this strategy does not survive them (its descriptor: survives_kills)");
  for (const model::FaultEvent& e : plan_.events)
    if (e.kind == model::FaultEvent::Kind::kRestart)
      throw RunError("timeline: restart of dc " + std::to_string(e.dc) + " worker " + std::to_string(e.worker) +
                     ": restarting a killed worker is not implemented yet (kill and slow are)");
  for (int r = 0; r < P_; ++r) {
    factor_[static_cast<size_t>(r)].store(1.0);
    agents_.push_back(std::make_unique<Agent>(*this, r));
  }
  for (auto& a : agents_) a->create();  // actor ids in rank order, before any worker runs
}

FaultRuntime::~FaultRuntime() = default;

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
  agents_.at(static_cast<size_t>(rank))->start(t0);
}

bool FaultRuntime::fenced(int rank) const {
  std::lock_guard<std::mutex> lk(mu_);
  return fenced_.count(rank) > 0;
}

std::vector<int> FaultRuntime::group_of(int rank, const std::set<int>& dead) const {
  std::vector<int> g;
  const int lo = world_group_ ? 0 : (rank / N_) * N_;
  const int hi = world_group_ ? P_ : lo + N_;
  for (int r = lo; r < hi; ++r)
    if (!dead.count(r)) g.push_back(r);
  return g;
}

void FaultRuntime::on_declared(const model::Detection& d) {
  bool fence = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    detections_.push_back(d);
    auto it = killed_.find(d.peer);
    if (it != killed_.end() && dead_.count(d.peer)) {
      model::FaultRecord& r = records_[it->second.record];
      if (!r.detected_at_s || d.at_s < *r.detected_at_s) {
        r.detected_by = d.observer;
        r.detected_at_s = d.at_s;
        r.detection_latency_s = d.at_s - r.at_s;
      }
    } else {
      ++false_detections_;
      fence = !fenced_.count(d.peer);
      fenced_.insert(d.peer);
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
  r.dc = rank / N_;
  r.worker = rank % N_;
  r.at_s = secs(now);
  r.step = step;
  r.policy = fenced_.count(rank) ? "shrink (fenced after a detection)" : plan_.policy;
  killed_[rank] = KillState{records_.size(), r.at_s, {}, 0};
  records_.push_back(r);
  dead_.insert(rank);
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

model::FaultsSection FaultRuntime::section() const {
  std::lock_guard<std::mutex> lk(mu_);
  model::FaultsSection s;
  s.heartbeat_interval_s = std::chrono::duration<double>(plan_.heartbeat.interval).count();
  s.heartbeat_timeout_s = std::chrono::duration<double>(plan_.heartbeat.timeout).count();
  s.heartbeat_confirmation_s = std::chrono::duration<double>(plan_.heartbeat.confirmation).count();
  s.policy = plan_.policy;
  s.shard = plan_.shard;
  s.events = records_;
  // Recovery = first detection -> the last survivor resumed, set here from both final figures:
  // the threads that record them run in host order, which need not be their virtual order.
  for (const auto& [rank, k] : killed_) {
    model::FaultRecord& r = s.events[k.record];
    if (r.detected_at_s && !k.resumed.empty()) r.recovery_s = k.last_resume_s - *r.detected_at_s;
  }
  s.detections = detections_;
  std::stable_sort(s.detections.begin(), s.detections.end(),
                   [](const model::Detection& a, const model::Detection& b) {
                     return std::tie(a.at_s, a.observer, a.peer) < std::tie(b.at_s, b.observer, b.peer);
                   });
  s.false_detections = false_detections_;
  for (const auto& a : agents_) s.heartbeats_sent += a->heartbeats_sent();
  return s;
}

}  // namespace geotb::engine
