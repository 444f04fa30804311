#include "engine/faults/socket_port.h"

#include <algorithm>
#include <cstring>

#include "engine/result.h"

namespace geotb::engine {

namespace {

// Full recovery's restarted processes rejoin their groups before the checkpoint's state is
// restored: their Gloo group must exist when the strategy is made again.
FaultAgentConfig regrowing_before_restore(FaultAgentConfig c) {
  c.regrow_before_restore = true;
  return c;
}

}  // namespace

SocketFaultPort::SocketFaultPort(const FaultAgentConfig& cfg, const emu::Clock& clock)
    : cfg_(regrowing_before_restore(cfg)), clock_(clock) {}

void SocketFaultPort::regroup(WorkerEnv& env, const std::vector<int>& group, const std::string& name) {
  env.intra = nullptr;
  group_.reset();
  const int index = static_cast<int>(std::find(group.begin(), group.end(), cfg_.rank) - group.begin());
  group_ = regroup_(group, index, name);
  env.intra = group_.get();
}

int SocketFaultPort::incarnation_at(int rank, int steps) const {
  int n = 0;
  for (const auto& [step, ranks] : cfg_.restarts->ranks_at)
    if (step <= steps) n += static_cast<int>(std::count(ranks.begin(), ranks.end(), rank));
  return n;
}

bool SocketFaultPort::restarted_after(int step) const {
  if (full_recovery_restarts()) return true;  // every killed worker's process comes back (and may give up)
  for (const auto& [at, ranks] : cfg_.restarts->ranks_at)
    if (at > step && std::count(ranks.begin(), ranks.end(), cfg_.rank)) return true;
  return false;
}

void SocketFaultPort::set_endpoints(std::vector<SocketEndpoint> endpoints, RestartIo io) {
  endpoints_ = std::move(endpoints);
  io_ = std::move(io);
}

RejoinMessage SocketFaultPort::restart_message(WorkerEnv&, int steps, uint64_t tag_epoch, bool full_recovery) {
  RejoinMessage m;
  m.tag_epoch = tag_epoch;
  m.steps = steps;
  m.words.push_back((full_recovery ? "full-recovery-" : "rejoin-") + std::to_string(steps));
  return m;
}

void SocketFaultPort::revive(const std::vector<int>& back_all, int steps, bool full_recovery) {
  for (int r : back_all) {
    if (r == cfg_.rank) continue;
    const SocketEndpoint at = io_.address_of(r, incarnation(r, steps, full_recovery));
    endpoints_[static_cast<size_t>(r)] = at;
    sock_->revive(r, at);
  }
}

void SocketFaultPort::take_back(WorkerEnv&, const GrownGroup& g, const RejoinMessage&, bool) {
  std::lock_guard<std::mutex> lk(mu_);
  for (int r : g.back) {
    handled_.erase(r);
    declared_.erase(r);
    recovering_.erase(r);
    // The members' notices about its death are over too: they must not interrupt anything now.
    for (auto& [member, dead] : recovering_) dead.erase(r);
  }
  refresh_interrupt();
}

void SocketFaultPort::hand_over(WorkerEnv&, int r, RejoinMessage m, const char*, bool from_checkpoint) {
  // The grown group meets in Gloo under the message's first word, which the restarted rank can
  // join only once it has it; then every rank's address.
  m.words.resize(1);
  for (const SocketEndpoint& e : endpoints_) m.words.push_back(e.host + ":" + std::to_string(e.port));
  io_.announce(r, incarnation(r, m.steps, from_checkpoint), cfg_.rank);
  sock_->send(r, kRejoinTag, encode_rejoin(m));
  std::lock_guard<std::mutex> lk(mu_);
  log_.handed.push_back({r, m.steps, secs(clock_.now()), static_cast<int>(m.members.size()), from_checkpoint});
}

void SocketFaultPort::taken_back(WorkerEnv& env, const GrownGroup& g, const RejoinMessage& m, bool full_recovery) {
  const std::vector<int> watched = cfg_.groups.watched_by(cfg_.rank);
  for (int r : g.back)
    if (std::find(watched.begin(), watched.end(), r) != watched.end() && !sock_->await_streams(r, peer_timeout_))
      throw PeerDeadError("rank " + std::to_string(cfg_.rank) + ": streams to restarted rank " + std::to_string(r) +
                          " not open within " + std::to_string(peer_timeout_.count()) + " ms");
  if (full_recovery) clock_.sleep_until(board_->up_at());
  if (!g.back.empty() && regroup_) regroup(env, g.group, m.words.at(0));
}

FaultPort::RecoveryRestart SocketFaultPort::restarted_by_recovery() { return {board_->restarted(), *healed_at_}; }

void SocketFaultPort::rejoined(const std::set<int>& handled, int steps) {
  if (full_recovery_restarts()) healed_at_ = steps;
  std::lock_guard<std::mutex> lk(mu_);
  handled_ = handled;
  declared_ = handled;
  log_.rejoined_at_s = secs(clock_.now());
}

FaultPort::Nanos SocketFaultPort::t0() {
  std::lock_guard<std::mutex> lk(mu_);
  return t0_;
}

size_t SocketFaultPort::record_slow(const model::FaultRecord& r) {
  std::lock_guard<std::mutex> lk(mu_);
  log_.slow.push_back(r);
  return log_.slow.size() - 1;
}

void SocketFaultPort::slow_ended(size_t record, double until_s) {
  std::lock_guard<std::mutex> lk(mu_);
  log_.slow[record].until_s = until_s;
}

void SocketFaultPort::attach(SocketTransport& sock, std::chrono::milliseconds peer_timeout) {
  sock_ = &sock;
  peer_timeout_ = peer_timeout;
  // A DC leader's kill with per-DC groups: any rank of another DC may come to lead it, die, and
  // have its address taken over; keep the last messages to each for its successor.
  if (!cfg_.groups.world_group && cfg_.plan.kills_a_dc_leader())
    sock.expect_successors(cfg_.groups.other_dcs(cfg_.rank), kKeptForSuccessor);
  // Restarted ranks come back as new processes at new addresses: the timeline's, or with a full
  // recovery's restarts any killed one.
  std::vector<int> back;
  for (const auto& [step, ranks] : cfg_.restarts->ranks_at)
    for (int r : ranks)
      if (r != cfg_.rank) back.push_back(r);
  if (full_recovery_restarts())
    for (const model::FaultEvent& e : cfg_.plan.events)
      if (e.kind == model::FaultEvent::Kind::kKill)
        if (const int r = cfg_.groups.layout.rank_of(e.dc, e.worker); r != cfg_.rank) back.push_back(r);
  if (!back.empty()) sock.expect_restarts(back);
}

void SocketFaultPort::adopt_group(std::unique_ptr<IntraDc> group, Regroup regroup) {
  group_ = std::move(group);
  regroup_ = std::move(regroup);
}

void SocketFaultPort::started(Nanos t0) {
  std::lock_guard<std::mutex> lk(mu_);
  t0_ = t0;
  log_.start_ns = t0.count();
  live_ = true;
}

void SocketFaultPort::peer_failed(int peer, const std::string&, std::optional<std::chrono::milliseconds> silent_for,
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

void SocketFaultPort::peer_notice(int peer, const std::vector<uint8_t>& bytes) {
  std::set<int> dead;
  for (int64_t d : decode_ints(bytes)) dead.insert(static_cast<int>(d));
  std::lock_guard<std::mutex> lk(mu_);
  if (!live_) return;
  recovering_[peer] = std::move(dead);
  refresh_interrupt();
}

void SocketFaultPort::refresh_interrupt() {
  std::vector<int> from;
  for (const auto& [p, dead] : recovering_)
    if (!std::includes(handled_.begin(), handled_.end(), dead.begin(), dead.end())) from.push_back(p);
  if (!sock_) return;
  if (from.empty())
    sock_->clear_interrupt();
  else
    sock_->interrupt_recvs(from);
}

bool SocketFaultPort::await_declaration() {
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

void SocketFaultPort::after_compute(WorkerEnv& env) {
  if (factor_ == 1) return;
  // A slow worker: its step's compute took factor times as long.
  const auto took = static_cast<double>(env.times.compute_ns - compute_at_begin_);
  const auto extra = Nanos(static_cast<int64_t>((factor_ - 1) * took));
  clock_.sleep_until(clock_.now() + extra);
  env.times.compute_ns += static_cast<uint64_t>(extra.count());
}

void SocketFaultPort::killed(int step, Nanos at) {
  std::lock_guard<std::mutex> lk(mu_);
  log_.killed_at_step = step;
  log_.killed_at_s = secs(at);
  live_ = false;
}

bool SocketFaultPort::death_pending() { return await_declaration(); }

std::set<int> SocketFaultPort::declared() {
  std::lock_guard<std::mutex> lk(mu_);
  return declared_;
}

void SocketFaultPort::handled(const std::set<int>& handled) {
  std::lock_guard<std::mutex> lk(mu_);
  handled_ = handled;
  refresh_interrupt();  // notices about what is handled now no longer interrupt anything
}

void SocketFaultPort::leave_group(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) {
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

bool SocketFaultPort::agreement_failed(const TransportError& e) {
  // A member announced another death during the agreement (PeerDeclaredDead), or died before its
  // declaration reached here (several killed at one step: its connection ended under the
  // agreement's receive, PeerDeadError). Its declaration follows: agree again without it too.
  return dynamic_cast<const PeerDeclaredDead*>(&e) || dynamic_cast<const PeerDeadError*>(&e);
}

void SocketFaultPort::join_group(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) {
  // The Gloo group without the dead (a new rendezvous).
  if (!regroup_) return;
  std::string name = "shrink";
  for (int d : dead) name += '-' + std::to_string(d);
  regroup(env, group, name);
}

void SocketFaultPort::resumed(const std::vector<int>& fresh, int step, const std::vector<int>& group,
                                std::optional<int> took_over) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    log_.resumed.push_back({fresh, secs(clock_.now()), step, static_cast<int>(group.size()), cfg_.rank == group.front(), took_over});
  }
  // Each group's coordinator counts its group's dead once (every death is in one group).
  if (board_ && cfg_.rank == group.front()) count_deaths(fresh);
}

bool SocketFaultPort::full_recovery_possible() const { return cfg_.plan.full_recovery_reachable(cfg_.groups.world()); }

bool SocketFaultPort::full_recovery_restarts() const {
  return cfg_.plan.full_recovery_restarts(cfg_.groups.world());
}

void SocketFaultPort::await_restarted_up() {
  clock_.sleep_until(board_->up_at());
  std::lock_guard<std::mutex> lk(mu_);
  log_.up_at_s = secs(clock_.now());
}

void SocketFaultPort::enable_full_recovery(std::shared_ptr<StoreHandle> store, std::string key) {
  const int P = cfg_.groups.world();
  board_.emplace(std::move(store), std::move(key) + "fr/", P, cfg_.plan.full_recovery_count(P),
                 cfg_.plan.full_recovery.then == "restarts",
                 std::chrono::duration_cast<Nanos>(cfg_.plan.full_recovery.restart_after));
}

void SocketFaultPort::count_deaths(const std::vector<int>& fresh) {
  const std::optional<FullRecoveryBoard::Decided> d = board_->count(fresh, clock_);
  if (!d) return;
  std::lock_guard<std::mutex> lk(mu_);
  log_.rewound = model::RankFaultLog::Rewind{};
  log_.rewound->decided_at_s = secs(d->at);
  log_.rewound->dead = static_cast<int>(d->dead);
}

bool SocketFaultPort::rewind_due(int steps) {
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

void SocketFaultPort::rewinding(int steps, int checkpoint_step, Nanos checkpoint_at) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!log_.rewound) log_.rewound = model::RankFaultLog::Rewind{};
  log_.rewound->boundary_step = steps;
  log_.rewound->checkpoint_step = checkpoint_step;
  log_.rewound->checkpoint_at_s = std::chrono::duration<double>(checkpoint_at).count();
}

void SocketFaultPort::rewound() {
  std::lock_guard<std::mutex> lk(mu_);
  if (log_.rewound) log_.rewound->at_s = secs(clock_.now());
}

bool SocketFaultPort::close_allowed() {
  std::unique_lock<std::mutex> lk(mu_);
  if (!live_) return true;
  const auto wait = peer_timeout_ + std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.plan.heartbeat.interval);
  const bool pending = declared_cv_.wait_for(lk, wait, [&] {
    return !live_ || std::any_of(declared_.begin(), declared_.end(), [&](int d) { return !handled_.count(d); });
  });
  return !pending || !live_;
}

bool SocketFaultPort::recovered_from(int rank) const {
  std::lock_guard<std::mutex> lk(mu_);
  return handled_.count(rank) > 0;
}

void AgentGuardedTransport::send(int dst, uint64_t tag, std::vector<uint8_t> bytes) {
  if (port_ && port_->recovered_from(dst)) return;
  inner_.send(dst, tag, std::move(bytes));
}

void AgentGuardedTransport::close() {
  // A killed worker's close (a DC leader's abandoned background exchange, on its way out) says
  // no GOODBYE: its peers must see it die (the coordinator's SIGKILL, or its silence).
  if (port_ && port_->was_killed()) return;
  if (!port_ || port_->close_allowed()) inner_.close();
}

bool SocketFaultPort::was_killed() const {
  std::lock_guard<std::mutex> lk(mu_);
  return log_.killed_at_step.has_value();
}

bool SocketFaultPort::saw_a_death() const {
  std::lock_guard<std::mutex> lk(mu_);
  return !declared_.empty() || !handled_.empty();
}

bool SocketFaultPort::checkpoint_cannot_complete(int steps) const {
  for (const model::FaultEvent& e : cfg_.plan.events)
    if (e.kind == model::FaultEvent::Kind::kKill && e.at_step && *e.at_step < steps && !(healed_at_ && *e.at_step < *healed_at_))
      return true;
  return saw_a_death();
}

void SocketFaultPort::done(WorkerEnv&) {
  std::lock_guard<std::mutex> lk(mu_);
  live_ = false;
  declared_cv_.notify_all();
}

model::RankFaultLog SocketFaultPort::log() const {
  std::lock_guard<std::mutex> lk(mu_);
  model::RankFaultLog l = log_;
  if (sock_) l.heartbeats_sent = sock_->stats().heartbeats_sent;
  return l;
}

}  // namespace geotb::engine
