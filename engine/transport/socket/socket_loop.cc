// SocketTransport, the I/O thread: commands from callers, timers (heartbeats, timeouts,
// retries), witnesses' indirect probes, drain and the shutdown sequence (socket_impl.h).
#include "engine/transport/socket/socket_impl.h"

namespace geotb::engine {

void SocketTransport::Impl::process_commands() {
  std::vector<int> todo;
  {
    std::lock_guard lk(mu);
    todo.swap(dirty);
  }
  std::sort(todo.begin(), todo.end());
  todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
  for (int r : todo) {
    sync_io(r);
    ensure_connect(r);
    dispatch(r);
  }
}

void SocketTransport::Impl::timers() {
  const auto now = Clock::now();
  std::vector<Conn*> cs;
  cs.reserve(conns.size());
  for (auto& [id, c] : conns)
    if (!c->dead) cs.push_back(c.get());
  for (Conn* c : cs) {
    if (c->dead) continue;
    switch (c->st) {
      case St::kOpen:
        if (c->outq.empty() && now - c->last_send >= cfg.heartbeat) {
          push_ctrl(c, fr::FrameType::kHeartbeat, {});
          if (flush_conn(c)) update_mask(c);
        }
        break;
      case St::kClosing:
        if (now >= c->deadline) close_conn(c);
        break;
      default:
        if (now >= c->deadline) {
          if (c->st == St::kConnecting) conn_broken(c, "connect timed out");
          else if (c->peer >= 0 && c->outgoing) conn_broken(c, "handshake timed out");
          else close_conn(c);  // an acceptor does not fail a peer for a half-finished handshake
        }
    }
  }
  std::vector<char> open(cfg.world, 0);
  for (auto& [id, c] : conns)
    if (!c->dead && c->peer >= 0 && c->st == St::kOpen) open[c->peer] = 1;
  for (int r = 0; r < cfg.world; ++r) {
    if (r == cfg.rank) continue;
    Peer& p = peers[r];
    if (p.failed_io) continue;
    if (p.connect_started) ensure_connect(r);
    if (p.failed_io) continue;
    if (!open[r] || now - p.last_heard <= cfg.peer_timeout) continue;
    const auto silent = std::chrono::duration_cast<milliseconds>(now - p.last_heard);
    const std::string silence = "no data or heartbeat from " + who(r) + " for " + ms_text(silent) +
                                " (peer_timeout " + ms_text(cfg.peer_timeout) + ")";
    const std::vector<int> w = cfg.witnesses ? cfg.witnesses(r) : std::vector<int>{};
    if (w.empty()) {
      fail_peer(r, Fail::kDead, silence, silent);
      continue;
    }
    if (!p.suspected_at) {
      p.suspected_at = now;
      p.not_reached = false;
      p.next_ask = now;
    }
    if (p.not_reached) {
      fail_peer(r, Fail::kDead, silence + ", and a witness could not reach it either", silent, false, "witness");
    } else if (now - *p.suspected_at >= cfg.unreachable) {
      fail_peer(r, Fail::kDead, silence + ", and no witness answered for " + ms_text(cfg.unreachable), silent, false,
                "unreachable");
    } else if (now >= p.next_ask) {
      ask_witnesses(r, w, *p.suspected_at);
      p.next_ask = now + std::max(milliseconds(5), cfg.heartbeat / 4);
    }
  }
}

std::vector<uint8_t> SocketTransport::Impl::witness_bytes(WitnessKind k, int suspect, int64_t asked_at) {
  std::vector<uint8_t> b(13);
  b[0] = k;
  const int32_t x = suspect;
  std::memcpy(b.data() + 1, &x, 4);
  std::memcpy(b.data() + 5, &asked_at, 8);
  return b;
}

// A suspicion's instant as a request carries it (and its answer echoes it).
int64_t SocketTransport::Impl::suspicion_stamp(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// I/O thread: asks every witness of silent peer r that has not failed here.
void SocketTransport::Impl::ask_witnesses(int r, const std::vector<int>& w, Clock::time_point suspected_at) {
  const int64_t at = suspicion_stamp(suspected_at);
  std::lock_guard lk(mu);
  for (int x : w) {
    if (x == r || x == cfg.rank || x < 0 || x >= cfg.world || peers[x].fail != Fail::kNone) continue;
    queue_locked(x, reserved_tags::kWitness, std::make_shared<const std::vector<uint8_t>>(witness_bytes(kAsk, r, at)));
  }
}

// I/O thread, mu held: a request from `src` (answered at once from what this rank heard), or an
// answer to one of this rank's.
void SocketTransport::Impl::witness_message(int src, const std::vector<uint8_t>& b) {
  if (b.size() != 13) return;  // not from this build: ignored
  int32_t suspect;
  int64_t asked_at;
  std::memcpy(&suspect, b.data() + 1, 4);
  std::memcpy(&asked_at, b.data() + 5, 8);
  if (suspect < 0 || suspect >= cfg.world || suspect == src) return;
  const auto now = Clock::now();
  if (b[0] == kAsk) {
    if (suspect == cfg.rank) {  // asked about this rank itself: it lives
      queue_locked(src, reserved_tags::kWitness,
                   std::make_shared<const std::vector<uint8_t>>(witness_bytes(kAlive, suspect, asked_at)));
      return;
    }
    const Peer& q = peers[suspect];
    const bool connected = std::any_of(conns.begin(), conns.end(), [&](const auto& kv) {
      return !kv.second->dead && kv.second->peer == suspect && kv.second->st == St::kOpen;
    });
    if (!connected && q.fail == Fail::kNone) return;  // no connection to it: nothing to say
    const bool alive = q.fail == Fail::kNone && now - q.last_heard <= 2 * cfg.heartbeat;
    queue_locked(src, reserved_tags::kWitness,
                 std::make_shared<const std::vector<uint8_t>>(
                     witness_bytes(alive ? kAlive : kNotReached, suspect, asked_at)));
    return;
  }
  Peer& p = peers[suspect];
  if (!p.suspected_at || asked_at != suspicion_stamp(*p.suspected_at))
    return;  // stale: about an earlier suspicion, or none now
  if (b[0] == kAlive) {
    p.last_heard = now;
    p.suspected_at.reset();
  } else if (b[0] == kNotReached) {
    p.not_reached = true;
  }
}

bool SocketTransport::Impl::all_flushed() {
  std::lock_guard lk(mu);
  for (auto& p : peers)
    if (p.fail == Fail::kNone && p.unflushed > 0) return false;
  return true;
}

// Returns true when the loop should end.
bool SocketTransport::Impl::shutdown_step() {
  if (!closing_snapshot()) return false;
  const auto now = Clock::now();
  if (!linger_phase && !goodbye_phase) {
    linger_phase = true;
    linger_deadline = now + cfg.peer_timeout;
  }
  if (linger_phase) {
    if (!all_flushed() && now < linger_deadline) return false;
    linger_phase = false;
    goodbye_phase = true;
    final_deadline = now + std::min<milliseconds>(cfg.peer_timeout, milliseconds(2000));
    std::vector<Conn*> cs;
    for (auto& [id, c] : conns)
      if (!c->dead) cs.push_back(c.get());
    for (Conn* c : cs) {
      if (c->dead) continue;
      if (c->st == St::kOpen) {
        push_ctrl(c, fr::FrameType::kGoodbye, {});
        begin_closing(c, final_deadline);
      } else if (c->st != St::kClosing) {
        close_conn(c);
      }
    }
  }
  bool any = false;
  for (auto& [id, c] : conns)
    if (!c->dead) any = true;
  return !any || now >= final_deadline;
}

// drain(): what the open connections still hold, ours and the kernel's (SIOCOUTQ: bytes not
// yet acknowledged by the peer).
void SocketTransport::Impl::measure_outq() {
  {
    std::lock_guard lk(mu);
    if (!want_outq) return;
  }
  int64_t sum = 0;
  for (auto& [id, c] : conns) {
    if (c->dead || c->st != St::kOpen) continue;
    if (!c->outq.empty()) sum += 1;
    int q = 0;
    if (::ioctl(c->fd, SIOCOUTQ, &q) == 0) sum += q;
  }
  std::lock_guard lk(mu);
  kernel_outq = sum;
  cv.notify_all();
}

bool SocketTransport::Impl::drain(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  if (!flush(timeout)) return false;
  std::unique_lock lk(mu);
  want_outq = true;
  kernel_outq = -1;
  wake();
  const bool ok = cv.wait_until(lk, deadline, [&] { return kernel_outq == 0 || io_exited; });
  want_outq = false;
  return ok;
}

void SocketTransport::Impl::reap() {
  for (auto it = conns.begin(); it != conns.end();)
    it = it->second->dead ? conns.erase(it) : std::next(it);
}

void SocketTransport::Impl::io_main() {
  try {
    epoll_event evs[64];
    for (;;) {
      int n = epoll_wait(ep, evs, 64, static_cast<int>(tick.count()));
      for (int i = 0; i < n; ++i) {
        const uint64_t id = evs[i].data.u64;
        const uint32_t e = evs[i].events;
        if (id == kListenId) {
          accept_all();
          continue;
        }
        if (id == kWakeId) {
          uint64_t v;
          while (::read(evfd, &v, sizeof(v)) > 0) {
          }
          continue;
        }
        Conn* c = find(id);
        if (!c) continue;
        if (c->st == St::kConnecting) {
          if (e & (EPOLLOUT | EPOLLERR | EPOLLHUP)) on_connected(c);
          continue;
        }
        if (e & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
        if (!c->dead && (e & EPOLLOUT)) on_writable(c);
      }
      process_commands();
      timers();
      measure_outq();
      const bool done = shutdown_step();
      reap();
      if (done) break;
    }
  } catch (const std::exception& ex) {
    std::lock_guard lk(mu);
    fatal = std::string("I/O thread failed: ") + ex.what();
    for (auto& p : peers)
      if (p.fail == Fail::kNone) {
        p.fail = Fail::kDead;
        p.why = me() + fatal;
      }
    cv.notify_all();
  }
  for (auto& [id, c] : conns)
    if (!c->dead) {
      epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, nullptr);
      ::close(c->fd);
      c->dead = true;
    }
  conns.clear();
  epoll_ctl(ep, EPOLL_CTL_DEL, lfd, nullptr);
  ::close(lfd);
  lfd = -1;
}

}  // namespace geotb::engine
