#include "engine/faults/heartbeat.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

namespace geotb::engine {

HeartbeatMonitor::HeartbeatMonitor(emu::Fabric& fabric, emu::VirtualScheduler& sched, int rank,
                                   std::vector<int> peers, const model::HeartbeatConfig& cfg, bool interrupt_all,
                                   OnDeclared on_declared, std::set<int> foreign,
                                   std::map<int, std::vector<int>> witnesses)
    : fabric_(fabric), sched_(sched), rank_(rank), peers_(std::move(peers)), cfg_(cfg), interrupt_all_(interrupt_all),
      foreign_(std::move(foreign)), witnesses_(std::move(witnesses)), on_declared_(std::move(on_declared)) {}

HeartbeatMonitor::~HeartbeatMonitor() { stop(); }

void HeartbeatMonitor::create() {
  actor_ = sched_.add_actor("heartbeat monitor of rank " + std::to_string(rank_), Nanos{0});
  th_ = sched_.start("heartbeat monitor of rank " + std::to_string(rank_), [this] {
    sched_.bind(actor_);
    try {
      // Blocked without a deadline until start() or stop(): it holds nobody back meanwhile.
      sched_.wait(
          actor_,
          [this]() -> std::optional<Nanos> {
            if (stop_) return Nanos{0};
            return start_at_;
          },
          std::nullopt, "heartbeat monitor of rank " + std::to_string(rank_) + ": wait for the start");
      bool stop;
      Nanos t0{0};
      sched_.update([&] {
        stop = stop_;
        t0 = start_at_.value_or(Nanos{0});
      });
      if (!stop) run(t0);
    } catch (const std::exception&) {
      // The fabric was closed or the scheduler aborted after a failure elsewhere: the run's
      // error is reported by the worker that failed.
    }
    sched_.update([this] { exited_ = true; });  // wakes a worker waiting in stop()
    sched_.finish(actor_);
  });
}

void HeartbeatMonitor::start(Nanos t0, Nanos origin) {
  origin_ = origin;
  sched_.update([&] { start_at_ = t0; });
}

void HeartbeatMonitor::stop() {
  if (!th_.joinable()) return;
  sched_.update([&] {
    stop_ = true;
    fabric_.notify_endpoint(rank_);  // recv_any's wait is keyed by the endpoint
  });
  // Called by the worker's thread (a killed or fenced worker dying, or one done): its actor must
  // not hold the monitor back while it joins. The monitor may be about to act (send a datagram)
  // at an instant the worker's actor has reached too; a plain join would keep that actor
  // "running" and the monitor waiting for its turn forever. Waiting on the scheduler parks it.
  const emu::VirtualScheduler::ActorId me = sched_.current();
  if (me >= 0 && me != actor_) {
    try {
      sched_.wait(
          me, [this]() -> std::optional<Nanos> { return exited_ ? std::optional<Nanos>(Nanos{0}) : std::nullopt; },
          std::nullopt, "rank " + std::to_string(rank_) + ": stop its heartbeat monitor");
    } catch (const std::exception&) {
      // The scheduler aborted: the monitor's own waits throw too, and it exits.
    }
  }
  th_.join();
}

void HeartbeatMonitor::mute() {
  sched_.update([&] {
    muted_ = true;
    unmute_at_.reset();
  });
}

void HeartbeatMonitor::unmute(Nanos at, const std::set<int>& gone) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (int p : gone)
      if (std::find(peers_.begin(), peers_.end(), p) != peers_.end() && !foreign_.count(p)) declared_.insert(p);
  }
  sched_.update([&] {
    unmute_gone_ = gone;
    unmute_at_ = at;
  });
}

void HeartbeatMonitor::revive_peer(int p, Nanos at) {
  sched_.update([&] { revived_.emplace_back(p, at); });
  std::lock_guard<std::mutex> lk(mu_);
  declared_.erase(p);
}

std::set<int> HeartbeatMonitor::declared_clearing_alarm() {
  std::lock_guard<std::mutex> lk(mu_);
  fabric_.clear_alarm(rank_);
  return declared_;
}

std::set<int> HeartbeatMonitor::declared() const {
  std::lock_guard<std::mutex> lk(mu_);
  return declared_;
}

uint64_t HeartbeatMonitor::sent() const {
  std::lock_guard<std::mutex> lk(mu_);
  return sent_;
}

namespace {

// The datagrams: [sent at: i64 ns][sequence: u64][kind: u8] and, for the indirect probes, the
// suspect [i32]. A witness's answer carries its request's "sent at", so that an answer to an
// earlier suspicion of the same peer is told apart.
enum Kind : uint8_t {
  kBeat = 0,     // a heartbeat (also the answer to a probe)
  kProbe = 1,    // answer with a heartbeat now
  kAsk = 2,      // observer -> witness: probe the suspect for me (SWIM's ping-req)
  kAlive = 3,    // witness -> observer: the suspect answered me
  kNotReached = 4,  // witness -> observer: it did not within a quarter interval, or I declared it
};
constexpr size_t kBeatBytes = 17, kAskBytes = 21;

}  // namespace

void HeartbeatMonitor::run(Nanos t0) {
  struct Peer {
    Nanos last_heard;
    std::optional<Nanos> suspected;
    Nanos next_probe{0};  // while suspected: when to probe it (and ask its witnesses) next
    bool dead = false;
    bool not_reached = false;  // a witness could not reach it during this suspicion
  };
  // A request this rank serves as a witness: probe `suspect`, answer `observer`.
  struct Ask {
    int observer = 0, suspect = 0;
    Nanos asked_at{0};  // the request's "sent at", echoed in the answer
    Nanos until{0};  // no answer from the suspect by then: "not reached"
    Nanos reprobe{0};  // a second probe half-way, so that one lost datagram is not a "not reached"
  };
  // The confirmation: a suspected peer is probed every quarter interval (at least 1 ms) until it
  // answers (a probe is answered by a heartbeat at once) or the confirmation time is over, so
  // that lost datagrams alone do not make a live peer dead.
  const Nanos probe_every = std::max(Nanos(std::chrono::milliseconds(1)), cfg_.interval / 4);
  // `now`: the "sent at" field (a witness's answers echo the request's).
  auto datagram = [&](int p, uint8_t kind, Nanos now, uint64_t seq, int suspect = -1) {
    std::vector<uint8_t> msg(suspect >= 0 ? kAskBytes : kBeatBytes);
    const int64_t t = now.count();
    std::memcpy(msg.data(), &t, 8);
    std::memcpy(msg.data() + 8, &seq, 8);
    msg[16] = kind;
    if (suspect >= 0) {
      const int32_t x = suspect;
      std::memcpy(msg.data() + 17, &x, 4);
    }
    fabric_.send_datagram(rank_, p, kHeartbeatTag, msg);
    std::lock_guard<std::mutex> lk(mu_);
    ++sent_;
  };
  std::map<int, Peer> peers;
  for (int p : peers_) peers[p] = Peer{t0, std::nullopt, Nanos{0}, false, false};
  std::vector<Ask> asks;
  auto secs = [&](Nanos t) { return std::chrono::duration<double>(t - origin_).count(); };
  // The caller chose them with cfg.witnesses (FaultGroups::witnesses: none when it is 0).
  auto witnesses_of = [&](int p) -> const std::vector<int>& {
    static const std::vector<int> none;
    auto it = witnesses_.find(p);
    return it == witnesses_.end() ? none : it->second;
  };
  auto declare = [&](int p, Peer& st, Nanos now, const char* how) {
    st.dead = true;
    model::Detection d;
    d.observer = rank_;
    d.peer = p;
    d.at_s = secs(now);
    d.last_heard_s = secs(st.last_heard);
    d.suspected_s = secs(*st.suspected);
    d.how = how;
    if (!foreign_.count(p)) {
      // One step with the alarm: a worker taking the declared set and clearing the alarm
      // (declared_clearing_alarm) sees this declaration with its alarm or neither.
      std::lock_guard<std::mutex> lk(mu_);
      declared_.insert(p);
      fabric_.raise_alarm(rank_, now, interrupt_all_);
    }
    if (on_declared_) on_declared_(d);
  };
  Nanos next_send = t0;
  uint64_t seq = 0;
  const std::function<bool()> stopped = [this] { return stop_; };
  for (;;) {
    // A dead worker's monitor, muted until its restart (or the end).
    bool muted = false;
    std::vector<std::pair<int, Nanos>> revived;
    sched_.update([&] {
      muted = muted_;
      revived.swap(revived_);
    });
    for (const auto& [p, at] : revived) {
      auto it = peers.find(p);
      if (it != peers.end()) it->second = Peer{at, std::nullopt, Nanos{0}, false, false};
    }
    if (muted) {
      sched_.wait(
          actor_,
          [this]() -> std::optional<Nanos> {
            if (stop_) return Nanos{0};
            return unmute_at_;
          },
          std::nullopt, "heartbeat monitor of rank " + std::to_string(rank_) + ": dead until its restart");
      Nanos back{0};
      bool stop = false;
      std::set<int> gone;
      sched_.update([&] {
        stop = stop_;
        muted_ = false;
        back = unmute_at_.value_or(Nanos{0});
        gone.swap(unmute_gone_);
      });
      if (stop || fabric_.closed()) return;
      for (auto& [p, st] : peers) st = Peer{back, std::nullopt, Nanos{0}, gone.count(p) > 0, false};
      asks.clear();  // requests to the dead worker are lost with it
      next_send = back;
      continue;
    }
    const Nanos now = sched_.now(actor_);
    if (now >= next_send) {
      for (auto& [p, st] : peers)
        if (!st.dead) datagram(p, kBeat, now, seq);
      ++seq;
      next_send += cfg_.interval;
    }
    for (auto& [p, st] : peers) {
      if (st.dead) continue;
      if (!st.suspected && now >= st.last_heard + cfg_.timeout) {
        st.suspected = st.last_heard + cfg_.timeout;
        st.next_probe = *st.suspected;
        st.not_reached = false;
      }
      if (!st.suspected) continue;
      const std::vector<int>& w = witnesses_of(p);
      if (now >= *st.suspected + cfg_.confirmation && (w.empty() || st.not_reached)) {
        declare(p, st, now, w.empty() ? "silence" : "witness");
        continue;
      }
      if (!w.empty() && now >= *st.suspected + cfg_.unreachable) {
        declare(p, st, now, "unreachable");
        continue;
      }
      if (now >= st.next_probe) {
        datagram(p, kProbe, now, seq);
        for (int x : w) datagram(x, kAsk, now, seq, p);
        st.next_probe = now + probe_every;
      }
    }
    // As a witness: a second probe half-way; "not reached" when the wait is over.
    for (size_t i = 0; i < asks.size();) {
      Ask& a = asks[i];
      if (now >= a.until) {
        datagram(a.observer, kNotReached, a.asked_at, seq, a.suspect);
        asks.erase(asks.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (now >= a.reprobe) {
        datagram(a.suspect, kProbe, now, seq);
        a.reprobe = a.until;
      }
      ++i;
    }
    Nanos next = next_send;
    for (const auto& [p, st] : peers) {
      if (st.dead) continue;
      if (!st.suspected) {
        next = std::min(next, st.last_heard + cfg_.timeout);
        continue;
      }
      next = std::min(next, st.next_probe);
      const bool asked = !witnesses_of(p).empty();
      if (!asked || st.not_reached) next = std::min(next, *st.suspected + cfg_.confirmation);
      if (asked) next = std::min(next, *st.suspected + cfg_.unreachable);
    }
    for (const Ask& a : asks) next = std::min(next, std::min(a.until, a.reprobe));
    std::optional<emu::Fabric::Received> m = fabric_.recv_any(rank_, kHeartbeatTag, next, stopped);
    if (!m) {
      bool stop;
      sched_.update([&] { stop = stop_; });
      if (stop || fabric_.closed()) return;
      continue;  // a deadline: send or check
    }
    const Nanos at = sched_.now(actor_);
    const uint8_t kind = m->payload.size() > 16 ? m->payload[16] : static_cast<uint8_t>(kBeat);
    int64_t sent_at = 0;
    if (m->payload.size() >= 8) std::memcpy(&sent_at, m->payload.data(), 8);
    int suspect = -1;
    if (m->payload.size() >= kAskBytes) {
      int32_t x;
      std::memcpy(&x, m->payload.data() + 17, 4);
      suspect = x;
    }
    switch (kind) {
      case kProbe:  // answered whoever asks: an observer, or a witness on one's behalf
        datagram(m->src, kBeat, at, seq);
        break;
      case kAsk: {
        if (suspect < 0 || suspect == rank_) break;
        auto it = peers.find(suspect);
        if (it != peers.end() && it->second.dead) {  // declared by this rank already
          datagram(m->src, kNotReached, Nanos{sent_at}, seq, suspect);
          break;
        }
        const bool pending = std::any_of(asks.begin(), asks.end(), [&](const Ask& a) {
          return a.observer == m->src && a.suspect == suspect;
        });
        if (pending) break;
        datagram(suspect, kProbe, at, seq);
        asks.push_back(Ask{m->src, suspect, Nanos{sent_at}, at + probe_every, at + probe_every / 2});
        break;
      }
      case kAlive:
      case kNotReached: {
        auto it = peers.find(suspect);
        // Stale: about a peer not suspected (any more), or answering a request of an earlier suspicion.
        if (it == peers.end() || it->second.dead || !it->second.suspected || Nanos{sent_at} < *it->second.suspected)
          break;
        if (kind == kAlive) {
          it->second.last_heard = std::max(it->second.last_heard, m->delivered_at);
          it->second.suspected.reset();
        } else {
          it->second.not_reached = true;
        }
        break;
      }
      default:
        break;
    }
    // Anything from the sender shows it alive: a heartbeat answers whatever this rank asked of it as
    // a witness, and every datagram (as before the witnesses: heartbeats and probes) counts as
    // hearing it.
    for (size_t i = 0; i < asks.size();) {
      if (asks[i].suspect == m->src) {
        datagram(asks[i].observer, kAlive, asks[i].asked_at, seq, m->src);
        asks.erase(asks.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    auto it = peers.find(m->src);
    if (it == peers.end() || it->second.dead) continue;  // not watched, or already declared
    it->second.last_heard = std::max(it->second.last_heard, m->delivered_at);
    it->second.suspected.reset();
  }
}

}  // namespace geotb::engine
