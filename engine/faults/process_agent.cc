#include "engine/faults/process_agent.h"

#include <algorithm>
#include <cstring>

#include "engine/result.h"

namespace geotb::engine {

ProcessFaultAgent::ProcessFaultAgent(ProcessFaultConfig cfg, const emu::Clock& clock)
    : cfg_(std::move(cfg)),
      clock_(clock),
      shards_(cfg_.shards),
      restarts_(restart_schedule(cfg_.plan, cfg_.groups.layout)),
      timeline_(cfg_.plan, cfg_.groups.layout, cfg_.rank) {}

void ProcessFaultAgent::regroup(WorkerEnv& env, const std::vector<int>& group, const std::string& name) {
  env.intra = nullptr;
  group_.reset();
  const int index = static_cast<int>(std::find(group.begin(), group.end(), cfg_.rank) - group.begin());
  group_ = regroup_(group, index, name);
  env.intra = group_.get();
}

int ProcessFaultAgent::incarnation_at(int rank, int steps) const {
  int n = 0;
  for (const auto& [step, ranks] : restarts_.ranks_at)
    if (step <= steps) n += static_cast<int>(std::count(ranks.begin(), ranks.end(), rank));
  return n;
}

bool ProcessFaultAgent::restarted_after(int step) const {
  if (full_recovery_restarts()) return true;  // every killed worker's process comes back (and may give up)
  for (const auto& [at, ranks] : restarts_.ranks_at)
    if (at > step && std::count(ranks.begin(), ranks.end(), cfg_.rank)) return true;
  return false;
}

void ProcessFaultAgent::set_endpoints(std::vector<SocketEndpoint> endpoints, RestartIo io) {
  endpoints_ = std::move(endpoints);
  io_ = std::move(io);
}

std::optional<uint64_t> ProcessFaultAgent::reepoch_due(WorkerEnv&, int steps) {
  const auto it = restarts_.epoch_at.find(steps);
  if (it == restarts_.epoch_at.end()) return std::nullopt;
  return it->second;
}

std::vector<int> ProcessFaultAgent::grow_back(WorkerEnv& env, const std::vector<int>& back_all,
                                              const std::function<int(int)>& incarnation, RejoinMessage m,
                                              bool from_checkpoint) {
  const FaultGroups& g = cfg_.groups;
  const std::set<int> restarted(back_all.begin(), back_all.end());
  // Every rank: the restarted processes at their new addresses (each published it once it was up).
  for (int r : back_all) {
    if (r == cfg_.rank) continue;
    const SocketEndpoint at = io_.address_of(r, incarnation(r));
    endpoints_[static_cast<size_t>(r)] = at;
    sock_->revive(r, at);
  }
  // This rank's group takes back those of its members it had recovered from, all at once.
  GrownGroup grown;
  {
    std::lock_guard<std::mutex> lk(mu_);
    grown = grow_group(g, cfg_.rank, back_all, handled_, env.ring);
    for (int r : grown.back) {
      declared_.erase(r);
      recovering_.erase(r);
      // The members' notices about its death are over too: they must not interrupt anything now.
      for (auto& [member, dead] : recovering_) dead.erase(r);
    }
    refresh_interrupt();
  }
  const std::vector<int>& back = grown.back;
  const std::vector<int>& group = grown.group;
  const std::vector<int>& ring = grown.ring;
  if (back.empty()) return {};  // another group's restart: nothing changes here
  env.ring = ring;
  // The coordinator of each restarted rank tells it where it starts: the grown group meets in
  // Gloo under the message's first word, which the restarted rank can join only once it has it.
  m.members = group;
  m.ring = ring;
  for (const SocketEndpoint& e : endpoints_) m.words.push_back(e.host + ":" + std::to_string(e.port));
  for (int r : back) {
    if (rejoin_coordinator(r, g.layout, group, restarted) != cfg_.rank) continue;
    io_.announce(r, incarnation(r), cfg_.rank);
    sock_->send(r, kRejoinTag, encode_rejoin(m));
    std::lock_guard<std::mutex> lk(mu_);
    log_.handed.push_back({r, m.steps, secs(clock_.now()), static_cast<int>(group.size()), from_checkpoint});
  }
  // Heartbeats again on the watched pairs, so that a second death is seen.
  const std::vector<int> watched = g.watched_by(cfg_.rank);
  for (int r : back)
    if (std::find(watched.begin(), watched.end(), r) != watched.end() && !sock_->await_streams(r, peer_timeout_))
      throw PeerDeadError("rank " + std::to_string(cfg_.rank) + ": streams to restarted rank " + std::to_string(r) +
                          " not open within " + std::to_string(peer_timeout_.count()) + " ms");
  return group;
}

void ProcessFaultAgent::at_reepoch(WorkerEnv& env, int steps, const StateBuffers& state) {
  RejoinMessage m;
  m.tag_epoch = restarts_.epoch_at.at(steps);
  m.steps = steps;
  const std::string name = "rejoin-" + std::to_string(steps);
  m.words.push_back(name);
  m.state = state;
  const std::vector<int> group = grow_back(
      env, restarts_.ranks_at.at(steps), [&](int r) { return incarnation_at(r, steps); }, std::move(m), false);
  if (!group.empty() && regroup_) regroup(env, group, name);
}

void ProcessFaultAgent::rejoined(const RejoinMessage& m) {
  reborn_ = true;
  if (full_recovery_restarts()) healed_at_ = m.steps;
  std::lock_guard<std::mutex> lk(mu_);
  handled_.clear();
  declared_.clear();
  for (int x : cfg_.groups.group_of(cfg_.rank, {}))
    if (std::find(m.members.begin(), m.members.end(), x) == m.members.end()) handled_.insert(x), declared_.insert(x);
  log_.rejoined_at_s = secs(clock_.now());
}

void ProcessFaultAgent::step_begins(WorkerEnv& env, int step) {
  const Nanos now = clock_.now();
  compute_at_begin_ = env.times.compute_ns;
  std::lock_guard<std::mutex> lk(mu_);
  const std::optional<double> factor = timeline_.step_begins(
      step, now - t0_, secs(now),
      [&](const model::FaultRecord& r) {
        log_.slow.push_back(r);
        return log_.slow.size() - 1;
      },
      [&](size_t record, double until_s) { log_.slow[record].until_s = until_s; });
  if (factor) factor_ = *factor;
}

void ProcessFaultAgent::attach(SocketTransport& sock, std::chrono::milliseconds peer_timeout) {
  sock_ = &sock;
  peer_timeout_ = peer_timeout;
  // A DC leader's kill with per-DC groups: any rank of another DC may come to lead it, die, and
  // have its address taken over; keep the last messages to each for its successor.
  if (!cfg_.groups.world_group && cfg_.plan.kills_a_dc_leader())
    sock.expect_successors(cfg_.groups.other_dcs(cfg_.rank), kKeptForSuccessor);
  // Restarted ranks come back as new processes at new addresses: the timeline's, or with a full
  // recovery's restarts any killed one.
  std::vector<int> back;
  for (const auto& [step, ranks] : restarts_.ranks_at)
    for (int r : ranks)
      if (r != cfg_.rank) back.push_back(r);
  if (full_recovery_restarts())
    for (const model::FaultEvent& e : cfg_.plan.events)
      if (e.kind == model::FaultEvent::Kind::kKill)
        if (const int r = cfg_.groups.layout.rank_of(e.dc, e.worker); r != cfg_.rank) back.push_back(r);
  if (!back.empty()) sock.expect_restarts(back);
}

void ProcessFaultAgent::adopt_group(std::unique_ptr<IntraDc> group, Regroup regroup) {
  group_ = std::move(group);
  regroup_ = std::move(regroup);
}

void ProcessFaultAgent::started(Nanos t0) {
  std::lock_guard<std::mutex> lk(mu_);
  t0_ = t0;
  log_.start_ns = t0.count();
  live_ = true;
}

void ProcessFaultAgent::peer_failed(int peer, const std::string&, std::optional<std::chrono::milliseconds> silent_for,
                                    const std::string& how) {
  const bool silent = silent_for.has_value();
  const std::vector<int> watched = cfg_.groups.watched_by(cfg_.rank);
  if (std::find(watched.begin(), watched.end(), peer) == watched.end()) return;  // another group's business
  // Another DC's leader (watched by a DC leader): recorded, not recovered from. Its DC recovers,
  // and a survivor there takes over its address (SocketTransport::expect_successors).
  const bool foreign = cfg_.groups.watched_outside_group(cfg_.rank).count(peer) > 0;
  std::lock_guard<std::mutex> lk(mu_);
  if (!live_ || declared_.count(peer) || foreign_declared_.count(peer)) return;
  const double at = secs(clock_.now());
  model::Detection d;
  d.observer = cfg_.rank;
  d.peer = peer;
  d.at_s = at;
  // Silence: heard last `silent_for` ago (its last frame: data, or a heartbeat every interval),
  // suspected `timeout` after that, declared once timeout + confirmation had passed.
  const double timeout = std::chrono::duration<double>(cfg_.plan.heartbeat.timeout).count();
  d.last_heard_s = silent ? std::max(0.0, at - std::chrono::duration<double>(*silent_for).count()) : at;
  d.suspected_s = silent ? std::min(at, d.last_heard_s + timeout) : at;
  d.how = how;  // "connection", "silence", "witness" or "unreachable" (the transport's)
  log_.detections.push_back(d);
  if (foreign) {
    foreign_declared_.insert(peer);
    return;
  }
  declared_.insert(peer);
  // Receives from the dead peer itself fail on their own (PeerDeadError); the others go on until
  // the peer they wait for is recovering too (its notice, peer_notice): a survivor still
  // finishing the step before must not be interrupted, since every other survivor finished it.
  declared_cv_.notify_all();
}

void ProcessFaultAgent::peer_notice(int peer, const std::vector<uint8_t>& bytes) {
  std::set<int> dead;
  for (int64_t d : decode_ints(bytes)) dead.insert(static_cast<int>(d));
  std::lock_guard<std::mutex> lk(mu_);
  if (!live_) return;
  recovering_[peer] = std::move(dead);
  refresh_interrupt();
}

void ProcessFaultAgent::refresh_interrupt() {
  std::vector<int> from;
  for (const auto& [p, dead] : recovering_)
    if (!std::includes(handled_.begin(), handled_.end(), dead.begin(), dead.end())) from.push_back(p);
  if (!sock_) return;
  if (from.empty())
    sock_->clear_interrupt();
  else
    sock_->interrupt_recvs(from);
}

bool ProcessFaultAgent::await_declaration() {
  // The step failed. If a member died, its declaration is here or comes within peer_timeout
  // (silence) plus one heartbeat interval, and with witnesses at most `unreachable` more (their
  // answers; none at all); a reset connection is seen at once.
  std::unique_lock<std::mutex> lk(mu_);
  auto wait = peer_timeout_ + std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.plan.heartbeat.interval);
  if (cfg_.plan.heartbeat.witnesses > 0)
    wait += std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.plan.heartbeat.unreachable);
  return declared_cv_.wait_for(lk, wait, [&] {
    return std::any_of(declared_.begin(), declared_.end(), [&](int d) { return !handled_.count(d); });
  });
}

void ProcessFaultAgent::before_sync(WorkerEnv& env, int step) {
  if (factor_ != 1) {  // a slow worker: its step's compute took factor times as long
    const auto took = static_cast<double>(env.times.compute_ns - compute_at_begin_);
    const auto extra = Nanos(static_cast<int64_t>((factor_ - 1) * took));
    clock_.sleep_until(clock_.now() + extra);
    env.times.compute_ns += static_cast<uint64_t>(extra.count());
  }
  // A full recovery's restarted process replays steps from the checkpoint, its kill among them:
  // that kill happened to its predecessor (a second kill of a restarted worker is refused).
  if (!reborn_ && timeline_.kill_due(step, clock_.now() - t0_)) {
    killed(step);
    throw WorkerKilled("rank " + std::to_string(cfg_.rank) + " killed by the scenario's timeline at step " +
                       std::to_string(step));
  }
}

void ProcessFaultAgent::killed(int step) {
  std::lock_guard<std::mutex> lk(mu_);
  log_.killed_at_step = step;
  log_.killed_at_s = secs(clock_.now());
  live_ = false;
}

RecoveryRules ProcessFaultAgent::rules() const {
  return {&cfg_.groups, cfg_.rank, cfg_.plan.shard == "redistribute", cfg_.seed};
}

bool ProcessFaultAgent::recover(WorkerEnv& env, int step, BatchSampler& sampler) {
  return recover_from_deaths(*this, rules(), env, step, sampler, epoch_);
}

bool ProcessFaultAgent::death_pending(WorkerEnv&, int) { return await_declaration(); }

RecoveryPort::Fresh ProcessFaultAgent::take_fresh() {
  std::lock_guard<std::mutex> lk(mu_);
  Fresh f;
  f.fresh = fresh_deaths(cfg_.groups, cfg_.rank, declared_, handled_);
  handled_.insert(f.fresh.begin(), f.fresh.end());
  f.dead = handled_;
  refresh_interrupt();  // notices about what is handled now no longer interrupt anything
  return f;
}

void ProcessFaultAgent::before_agreement(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) {
  // The old Gloo group goes now, before the agreement: a member blocked in a collective on this
  // rank cannot be interrupted (e.g. the group's lowest rank, the agreement's coordinator,
  // waiting in the ring for a chunk this rank will not send now that it failed on the dead);
  // on this rank's closed connections it fails and comes here too, instead of at Gloo's
  // timeout. A member still finishing the step before is not harmed: this rank finished that
  // step, so nothing of theirs is unread on its connection to them, and its close delivers
  // what it sent them first.
  if (group_) {
    env.intra = nullptr;
    group_.reset();
  }
  // Tell the group: a member blocked on this rank stops waiting for it and recovers too.
  const std::vector<uint8_t> notice = encode_ints(std::vector<int64_t>(dead.begin(), dead.end()));
  for (int m : group) {
    if (m == cfg_.rank) continue;
    try {
      sock_->send(m, kRecoveringTag, notice);
    } catch (const PeerDeadError&) {
      // That member died too (several killed at one step) and is not declared here yet: the
      // agreement fails on it, and its declaration follows.
    }
  }
}

bool ProcessFaultAgent::agreement_failed(const TransportError& e) {
  // A member announced another death during the agreement (PeerDeclaredDead), or died before its
  // declaration reached here (several killed at one step: its connection ended under the
  // agreement's receive, PeerDeadError). Its declaration follows: agree again without it too.
  return dynamic_cast<const PeerDeclaredDead*>(&e) || dynamic_cast<const PeerDeadError*>(&e);
}

void ProcessFaultAgent::after_agreement(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) {
  // The Gloo group without the dead (a new rendezvous).
  if (!regroup_) return;
  std::string name = "shrink";
  for (int d : dead) name += '-' + std::to_string(d);
  regroup(env, group, name);
}

std::vector<uint32_t> ProcessFaultAgent::inherit(const std::set<int>& dead, const std::vector<int>& fresh) {
  // Every survivor's new shard computed here alike, so that a later death hands on what its rank
  // had inherited.
  const FaultGroups& g = cfg_.groups;
  const std::vector<std::vector<uint32_t>> before = shards_;
  for (int h = 0; h < g.world(); ++h)
    if (!dead.count(h)) shards_[static_cast<size_t>(h)] = inherit_shards(g, h, before[static_cast<size_t>(h)], before, dead, fresh);
  return shards_[static_cast<size_t>(cfg_.rank)];
}

void ProcessFaultAgent::resumed(const std::vector<int>& fresh, int step, const std::vector<int>& group,
                                std::optional<int> took_over) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    log_.resumed.push_back({fresh, secs(clock_.now()), step, static_cast<int>(group.size()), cfg_.rank == group.front(), took_over});
  }
  // Each group's coordinator counts its group's dead once (every death is in one group).
  if (board_ && cfg_.rank == group.front()) count_deaths(fresh);
}

bool ProcessFaultAgent::full_recovery_possible() const { return cfg_.plan.full_recovery_reachable(cfg_.groups.world()); }

bool ProcessFaultAgent::full_recovery_restarts() const {
  return cfg_.plan.full_recovery_restarts(cfg_.groups.world());
}

void ProcessFaultAgent::await_restarted_up() {
  clock_.sleep_until(board_->up_at());
  std::lock_guard<std::mutex> lk(mu_);
  log_.up_at_s = secs(clock_.now());
}

void ProcessFaultAgent::enable_full_recovery(std::shared_ptr<StoreHandle> store, std::string key) {
  const int P = cfg_.groups.world();
  board_.emplace(std::move(store), std::move(key) + "fr/", P, cfg_.plan.full_recovery_count(P),
                 cfg_.plan.full_recovery.then == "restarts",
                 std::chrono::duration_cast<Nanos>(cfg_.plan.full_recovery.restart_after));
}

void ProcessFaultAgent::count_deaths(const std::vector<int>& fresh) {
  const std::optional<FullRecoveryBoard::Decided> d = board_->count(fresh, clock_);
  if (!d) return;
  std::lock_guard<std::mutex> lk(mu_);
  log_.rewound = model::RankFaultLog::Rewind{};
  log_.rewound->decided_at_s = secs(d->at);
  log_.rewound->dead = static_cast<int>(d->dead);
}

bool ProcessFaultAgent::rewind_due(int steps) {
  if (!board_ || rewound_) return false;
  const std::optional<int> boundary = board_->boundary(cfg_.rank, steps);
  if (!boundary || steps < *boundary) return false;
  if (steps > *boundary)
    throw RunError("rank " + std::to_string(cfg_.rank) + ": at step boundary " + std::to_string(steps) +
                   ", past the full recovery's boundary " + std::to_string(*boundary));
  rewound_ = true;
  if (full_recovery_restarts()) healed_at_ = *boundary;
  return true;
}

void ProcessFaultAgent::rewinding(int steps, int checkpoint_step, Nanos checkpoint_at) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!log_.rewound) log_.rewound = model::RankFaultLog::Rewind{};
  log_.rewound->boundary_step = steps;
  log_.rewound->checkpoint_step = checkpoint_step;
  log_.rewound->checkpoint_at_s = std::chrono::duration<double>(checkpoint_at).count();
}

void ProcessFaultAgent::regrow(WorkerEnv& env) {
  // Everyone walks its own shard again (the checkpoint's positions), and a later death splits those.
  shards_ = cfg_.shards;
  RejoinMessage m;
  m.tag_epoch = 1;  // the loop's epoch after this rewind (no timeline restarts beside a full recovery)
  m.steps = *healed_at_;
  const std::string name = "full-recovery-" + std::to_string(*healed_at_);
  m.words.push_back(name);
  // No state: the restarted rank reads its own from the checkpoint.
  const std::vector<int> group = grow_back(env, board_->restarted(), [](int) { return 1; }, std::move(m), true);
  // The restarted are up restart_after after the decision: every rank waits for that instant here
  // (a group without deaths too, whose leader would otherwise wait for another DC's in a receive).
  clock_.sleep_until(board_->up_at());
  if (!group.empty() && regroup_) regroup(env, group, name);
}

void ProcessFaultAgent::before_rewind(WorkerEnv& env, BatchSampler& sampler) {
  if (full_recovery_restarts()) regrow(env);
  sampler_before_rewind(rules(), cfg_.shards[static_cast<size_t>(cfg_.rank)], epoch_, sampler);
}

void ProcessFaultAgent::after_rewind(WorkerEnv&, BatchSampler& sampler, uint64_t tag_epoch) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (log_.rewound) log_.rewound->at_s = secs(clock_.now());
  }
  if (full_recovery_restarts()) {
    if (tag_epoch != 1)
      throw RunError("rank " + std::to_string(cfg_.rank) + ": full recovery in tag epoch " + std::to_string(tag_epoch) +
                     ", but its restarted ranks were told 1");
    return;  // every worker on its own shard, where the checkpoint left it
  }
  sampler_after_rewind(rules(), shards_[static_cast<size_t>(cfg_.rank)], epoch_, sampler);
}

bool ProcessFaultAgent::close_allowed() {
  std::unique_lock<std::mutex> lk(mu_);
  if (!live_) return true;
  const auto wait = peer_timeout_ + std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.plan.heartbeat.interval);
  const bool pending = declared_cv_.wait_for(lk, wait, [&] {
    return !live_ || std::any_of(declared_.begin(), declared_.end(), [&](int d) { return !handled_.count(d); });
  });
  return !pending || !live_;
}

bool ProcessFaultAgent::recovered_from(int rank) const {
  std::lock_guard<std::mutex> lk(mu_);
  return handled_.count(rank) > 0;
}

void AgentGuardedTransport::send(int dst, uint64_t tag, std::vector<uint8_t> bytes) {
  if (agent_ && agent_->recovered_from(dst)) return;
  inner_.send(dst, tag, std::move(bytes));
}

void AgentGuardedTransport::close() {
  // A killed worker's close (a DC leader's abandoned background exchange, on its way out) says
  // no GOODBYE: its peers must see it die (the coordinator's SIGKILL, or its silence).
  if (agent_ && agent_->was_killed()) return;
  if (!agent_ || agent_->close_allowed()) inner_.close();
}

bool ProcessFaultAgent::was_killed() const {
  std::lock_guard<std::mutex> lk(mu_);
  return log_.killed_at_step.has_value();
}

bool ProcessFaultAgent::saw_a_death() const {
  std::lock_guard<std::mutex> lk(mu_);
  return !declared_.empty() || !handled_.empty();
}

bool ProcessFaultAgent::checkpoint_cannot_complete(int steps) const {
  for (const model::FaultEvent& e : cfg_.plan.events)
    if (e.kind == model::FaultEvent::Kind::kKill && e.at_step && *e.at_step < steps && !(healed_at_ && *e.at_step < *healed_at_))
      return true;
  return saw_a_death();
}

void ProcessFaultAgent::done(WorkerEnv&) {
  std::lock_guard<std::mutex> lk(mu_);
  live_ = false;
  declared_cv_.notify_all();
}

model::RankFaultLog ProcessFaultAgent::log() const {
  std::lock_guard<std::mutex> lk(mu_);
  model::RankFaultLog l = log_;
  if (sock_) l.heartbeats_sent = sock_->stats().heartbeats_sent;
  return l;
}

}  // namespace geotb::engine
