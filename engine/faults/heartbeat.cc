#include "engine/faults/heartbeat.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

namespace geotb::engine {

HeartbeatMonitor::HeartbeatMonitor(emu::Fabric& fabric, emu::VirtualScheduler& sched, int rank,
                                   std::vector<int> peers, const model::HeartbeatConfig& cfg, bool interrupt_all,
                                   OnDeclared on_declared, std::set<int> foreign)
    : fabric_(fabric), sched_(sched), rank_(rank), peers_(std::move(peers)), cfg_(cfg), interrupt_all_(interrupt_all),
      foreign_(std::move(foreign)), on_declared_(std::move(on_declared)) {}

HeartbeatMonitor::~HeartbeatMonitor() { stop(); }

void HeartbeatMonitor::create() {
  actor_ = sched_.add_actor("heartbeat monitor of rank " + std::to_string(rank_), Nanos{0});
  th_ = std::thread([this] {
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
    sched_.finish(actor_);
  });
}

void HeartbeatMonitor::start(Nanos t0, Nanos origin) {
  origin_ = origin;
  sched_.update([&] { start_at_ = t0; });
}

void HeartbeatMonitor::stop() {
  if (!th_.joinable()) return;
  sched_.update([&] { stop_ = true; });
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

void HeartbeatMonitor::run(Nanos t0) {
  struct Peer {
    Nanos last_heard;
    std::optional<Nanos> suspected;
    Nanos next_probe{0};  // while suspected: when to probe it next
    bool dead = false;
  };
  // The confirmation: a suspected peer is probed every quarter interval (at least 1 ms) until it
  // answers (a probe is answered by a heartbeat at once) or the confirmation time is over, so
  // that lost datagrams alone do not make a live peer dead.
  const Nanos probe_every = std::max(Nanos(std::chrono::milliseconds(1)), cfg_.interval / 4);
  auto datagram = [&](int p, uint8_t kind, Nanos now, uint64_t seq) {
    std::vector<uint8_t> msg(17);
    const int64_t t = now.count();
    std::memcpy(msg.data(), &t, 8);
    std::memcpy(msg.data() + 8, &seq, 8);
    msg[16] = kind;  // 0: heartbeat, 1: probe
    fabric_.send_datagram(rank_, p, kHeartbeatTag, msg);
    std::lock_guard<std::mutex> lk(mu_);
    ++sent_;
  };
  std::map<int, Peer> peers;
  for (int p : peers_) peers[p] = Peer{t0, std::nullopt, Nanos{0}, false};
  auto secs = [&](Nanos t) { return std::chrono::duration<double>(t - origin_).count(); };
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
      if (it != peers.end()) it->second = Peer{at, std::nullopt, Nanos{0}, false};
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
      for (auto& [p, st] : peers) st = Peer{back, std::nullopt, Nanos{0}, gone.count(p) > 0};
      next_send = back;
      continue;
    }
    const Nanos now = sched_.now(actor_);
    if (now >= next_send) {
      for (auto& [p, st] : peers)
        if (!st.dead) datagram(p, 0, now, seq);
      ++seq;
      next_send += cfg_.interval;
    }
    for (auto& [p, st] : peers) {
      if (st.dead) continue;
      if (!st.suspected && now >= st.last_heard + cfg_.timeout) {
        st.suspected = st.last_heard + cfg_.timeout;
        st.next_probe = *st.suspected;
      }
      if (st.suspected && now >= st.next_probe && now < *st.suspected + cfg_.confirmation) {
        datagram(p, 1, now, seq);
        st.next_probe = now + probe_every;
      }
      if (st.suspected && now >= *st.suspected + cfg_.confirmation) {
        st.dead = true;
        model::Detection d;
        d.observer = rank_;
        d.peer = p;
        d.at_s = secs(now);
        d.last_heard_s = secs(st.last_heard);
        d.suspected_s = secs(*st.suspected);
        if (!foreign_.count(p)) {
          // One step with the alarm: a worker taking the declared set and clearing the alarm
          // (declared_clearing_alarm) sees this declaration with its alarm or neither.
          std::lock_guard<std::mutex> lk(mu_);
          declared_.insert(p);
          fabric_.raise_alarm(rank_, now, interrupt_all_);
        }
        if (on_declared_) on_declared_(d);
      }
    }
    Nanos next = next_send;
    for (const auto& [p, st] : peers)
      if (!st.dead)
        next = std::min(next, st.suspected ? std::min(*st.suspected + cfg_.confirmation, st.next_probe)
                                           : st.last_heard + cfg_.timeout);
    std::optional<emu::Fabric::Received> m = fabric_.recv_any(rank_, kHeartbeatTag, next, stopped);
    if (!m) {
      bool stop;
      sched_.update([&] { stop = stop_; });
      if (stop || fabric_.closed()) return;
      continue;  // a deadline: send or check
    }
    auto it = peers.find(m->src);
    if (it == peers.end() || it->second.dead) continue;  // not watched, or already declared
    if (m->payload.size() > 16 && m->payload[16] == 1)  // a probe: answer with a heartbeat now
      datagram(m->src, 0, sched_.now(actor_), seq);
    it->second.last_heard = std::max(it->second.last_heard, m->delivered_at);
    it->second.suspected.reset();
  }
}

}  // namespace geotb::engine
