// SocketTransport, the caller side: send and recv through the peers' queues and mailboxes,
// takeover and restart requests, flush, shutdown, and a peer's failure (socket_impl.h).
#include "engine/transport/socket/socket_impl.h"

namespace geotb::engine {

void SocketTransport::Impl::check_rank(int r, const char* what) const {
  if (r < 0 || r >= cfg.world)
    throw TransportError(me() + what + ": rank " + std::to_string(r) + " out of range [0, " +
                         std::to_string(cfg.world) + ")");
}

void SocketTransport::Impl::start(std::vector<SocketEndpoint> eps) {
  if (static_cast<int>(eps.size()) != cfg.world)
    throw TransportError(me() + "start(): " + std::to_string(eps.size()) + " endpoints for world " +
                         std::to_string(cfg.world));
  std::vector<sockaddr_in> addrs(eps.size());
  for (int r = 0; r < cfg.world; ++r) {
    if (r == cfg.rank) continue;
    std::string err;
    if (eps[r].port == 0) throw TransportError(me() + "start(): rank " + std::to_string(r) + ": port 0");
    if (!resolve_ipv4(eps[r].host, eps[r].port, &addrs[r], &err))
      throw TransportError(me() + "start(): rank " + std::to_string(r) + ": host \"" + eps[r].host + "\": " + err);
  }
  std::lock_guard lk(mu);
  if (started) throw TransportError(me() + "start() called twice");
  for (int r = 0; r < cfg.world; ++r) {
    if (r == cfg.rank) continue;
    peers[r].addr = addrs[r];
    peers[r].have_addr = true;
    peers[r].addr_text = eps[r].host + ":" + std::to_string(eps[r].port);
  }
  started = true;
}

void SocketTransport::Impl::send(int dst, uint64_t tag, std::vector<uint8_t> bytes) {
  check_rank(dst, "send");
  if (bytes.size() > cfg.max_message_bytes)
    throw TransportError(me() + "send: " + std::to_string(bytes.size()) + " bytes > max_message_bytes");
  std::lock_guard lk(mu);
  if (closing) throw TransportError(me() + "send after close()");
  dst = takeover.address_of(dst);  // a taken-over address
  Peer& p = peers[dst];
  if (dst == cfg.rank) {
    p.mailbox[tag].push_back(std::move(bytes));
    cv.notify_all();
    return;
  }
  auto msg = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  takeover.sent(dst, {tag, msg}, p.keep_n);
  if (p.fail != Fail::kNone) {
    if (p.expect_successor) return;  // kept for its successor
    throw_fail(p.fail, p.why);
  }
  if (!started) throw TransportError(me() + "send before start()");
  queue_locked(dst, tag, std::move(msg));
}

// mu held.
void SocketTransport::Impl::queue_locked(int dst, uint64_t tag, std::shared_ptr<const std::vector<uint8_t>> msg) {
  Peer& p = peers[dst];
  const size_t n = msg->size();
  p.sendq.push_back(OutMsg{p.next_msg_id++, tag, std::move(msg), 0});
  p.unflushed += n + 1;
  dirty.push_back(dst);
  wake();
}

void SocketTransport::Impl::expect_successors(const std::vector<int>& ranks, size_t last_n) {
  std::lock_guard lk(mu);
  for (int r : ranks) {
    check_rank(r, "expect_successors");
    if (r == cfg.rank) continue;
    peers[r].expect_successor = true;
    peers[r].keep_n = last_n;
  }
}

void SocketTransport::Impl::expect_restarts(const std::vector<int>& ranks) {
  std::lock_guard lk(mu);
  for (int r : ranks) {
    check_rank(r, "expect_restarts");
    if (r != cfg.rank) peers[r].restartable = true;
  }
}

// A failed peer's new incarnation (mu held): nothing of the old one is kept.
void SocketTransport::Impl::reset_locked(Peer& p) {
  p.sendq.clear();
  p.next_msg_id = 0;
  p.unflushed = 0;
  p.mailbox.clear();
  p.fail = Fail::kNone;
  p.why.clear();
  p.want_connect = false;
  p.open_out = 0;
  p.reported = false;
  p.remote_ip.clear();
  takeover.forget(static_cast<int>(&p - peers.data()));
  ++p.incarnation;
  cv.notify_all();
}

// I/O thread: whether connection c belongs to an incarnation of its peer that was revived since.
bool SocketTransport::Impl::stale(const Conn* c) {
  if (c->peer < 0) return false;
  std::lock_guard lk(mu);
  return c->incarnation != peers[c->peer].incarnation;
}

// I/O thread: the I/O state of peer r follows its incarnation (a revived peer starts afresh:
// no connection, no partial message, message order from 0).
void SocketTransport::Impl::sync_io(int r) {
  Peer& p = peers[r];
  uint64_t inc;
  {
    std::lock_guard lk(mu);
    inc = p.incarnation;
  }
  if (p.io_incarnation == inc) return;
  p.io_incarnation = inc;
  for (auto& [id, c] : conns)
    if (!c->dead && c->peer == r && c->st != St::kClosing) close_conn(c.get());
  p.connect_started = false;
  p.out.clear();
  p.retry_at.clear();
  p.last_connect_error.clear();
  p.last_heard = Clock::now();
  p.partial.clear();
  p.next_deliver = 0;
  p.goodbye_seen = false;
  p.failed_io = false;
}

void SocketTransport::Impl::revive(int r, const SocketEndpoint& at) {
  check_rank(r, "revive");
  if (r == cfg.rank) return;
  sockaddr_in a{};
  std::string err;
  if (!resolve_ipv4(at.host, at.port, &a, &err))
    throw TransportError(me() + "revive: rank " + std::to_string(r) + ": host \"" + at.host + "\": " + err);
  std::lock_guard lk(mu);
  Peer& p = peers[r];
  if (!p.restartable) throw TransportError(me() + "revive: rank " + std::to_string(r) + " was not expected to restart");
  if (p.fail != Fail::kNone) reset_locked(p);
  p.addr = a;
  p.have_addr = true;
  p.addr_text = at.host + ":" + std::to_string(at.port);
  dirty.push_back(r);  // the I/O thread catches up with the incarnation
  wake();
}

// A takeover notice from `successor` (I/O thread, mu held): `dead`'s address is its now.
void SocketTransport::Impl::taken_over(int dead, int successor) {
  if (dead < 0 || dead >= cfg.world || dead == successor || dead == cfg.rank) return;
  Peer& d = peers[dead];
  Peer& s = peers[successor];
  s.expect_successor = s.expect_successor || d.expect_successor;
  s.keep_n = std::max(s.keep_n, d.keep_n);
  // What we had sent the dead (it may not have taken it) goes to its successor now.
  for (auto& [tag, msg] : takeover.taken_over(dead, successor)) {
    takeover.sent(successor, {tag, msg}, s.keep_n);
    if (s.fail == Fail::kNone && started && !closing) queue_locked(successor, tag, msg);
  }
  cv.notify_all();
}

void SocketTransport::Impl::take_over(int dead, const std::vector<int>& tell) {
  check_rank(dead, "take_over");
  const std::vector<uint8_t> notice = encode_takeover_notice(dead);
  for (int r : tell)
    if (r != cfg.rank && r != dead) send(r, kTakeoverTag, notice);
}

std::vector<uint8_t> SocketTransport::Impl::recv(int src, uint64_t tag) {
  check_rank(src, "recv");
  std::unique_lock lk(mu);
  Peer& p = peers[src];
  if (src != cfg.rank && p.have_addr && !p.want_connect && p.fail == Fail::kNone && !closing) {
    // Connect our streams now, so a peer that never sends still gets watched by heartbeats.
    p.want_connect = true;
    dirty.push_back(src);
    wake();
  }
  const auto deadline = Clock::now() + cfg.recv_timeout;
  // From `src`, or from the rank that took over its address.
  auto take = [&](Peer& from) -> std::optional<std::vector<uint8_t>> {
    auto it = from.mailbox.find(tag);
    if (it == from.mailbox.end() || it->second.empty()) return std::nullopt;
    std::vector<uint8_t> m = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) from.mailbox.erase(it);
    return m;
  };
  for (;;) {
    if (closing) throw TransportClosed(me() + "recv from rank " + std::to_string(src) + ": transport closed");
    if (auto m = take(p)) return std::move(*m);
    const std::optional<int> successor = takeover.successor_of(src);
    if (successor)
      if (auto m = take(peers[*successor])) return std::move(*m);
    const Peer& now = successor ? peers[*successor] : p;  // who answers for src
    if (now.fail != Fail::kNone && !now.expect_successor) throw_fail(now.fail, now.why);
    if (!fatal.empty()) throw TransportError(me() + fatal);
    if (interrupted && (interrupt_from.empty() ||
                        std::find(interrupt_from.begin(), interrupt_from.end(), src) != interrupt_from.end()))
      throw PeerDeclaredDead(me() + "recv from rank " + std::to_string(src) + " interrupted: a peer was declared dead");
    if (cv.wait_until(lk, deadline) == std::cv_status::timeout && Clock::now() >= deadline) {
      if (auto m = take(p)) return std::move(*m);
      if (p.fail != Fail::kNone) throw_fail(p.fail, p.why);
      throw TransportError(me() + "no message from rank " + std::to_string(src) + " (tag " +
                           std::to_string(tag) + ") within recv_timeout " + ms_text(cfg.recv_timeout));
    }
  }
}

bool SocketTransport::Impl::await_streams(int r, milliseconds timeout) {
  check_rank(r, "await_streams");
  if (r == cfg.rank) return true;
  std::unique_lock lk(mu);
  if (!started) throw TransportError(me() + "await_streams before start()");
  Peer& p = peers[r];
  if (!p.want_connect) {
    p.want_connect = true;
    dirty.push_back(r);
    wake();
  }
  bool ok = cv.wait_for(lk, timeout, [&] { return closing || p.fail != Fail::kNone || p.open_out >= nstreams; });
  if (p.fail != Fail::kNone) throw_fail(p.fail, p.why);
  if (closing) throw TransportError(me() + "await_streams: transport closed");
  return ok;
}

void SocketTransport::Impl::interrupt(std::vector<int> from, bool on) {
  std::lock_guard lk(mu);
  interrupted = on;
  interrupt_from = std::move(from);
  cv.notify_all();
}

bool SocketTransport::Impl::flush(milliseconds timeout) {
  std::unique_lock lk(mu);
  return cv.wait_for(lk, timeout, [&] {
    if (io_exited) return true;
    for (auto& p : peers)
      if (p.fail == Fail::kNone && p.unflushed > 0) return false;
    return true;
  });
}

void SocketTransport::Impl::shutdown() {
  std::call_once(close_once, [this] {
    {
      std::lock_guard lk(mu);
      closing = true;
      cv.notify_all();
    }
    wake();
    if (io.joinable()) io.join();
    std::lock_guard lk(mu);
    io_exited = true;
    cv.notify_all();
  });
}

// silent: failed after this long of silence; goodbye: it closed its transport (on_peer_failed
// is not told: a peer that said goodbye finished or failed on its own, it was not killed).
void SocketTransport::Impl::fail_peer(int r, Fail kind, const std::string& why, std::optional<milliseconds> silent,
                                      bool goodbye, const std::string& how) {
  Peer& p = peers[r];
  // The node-fault agent hears of it before any waiter wakes with the error, so that a
  // collective failing on it already finds the survivors' recovery under way.
  bool first = false;
  {
    std::lock_guard lk(mu);
    first = p.fail == Fail::kNone && !p.reported && !closing;
    p.reported = true;
  }
  if (first && !goodbye && cfg.on_peer_failed)
    cfg.on_peer_failed(r, me() + why, silent, how.empty() ? (silent ? "silence" : "connection") : how);
  {
    std::lock_guard lk(mu);
    if (p.fail == Fail::kNone) {
      p.fail = kind;
      p.why = me() + why;
      p.sendq.clear();
      p.unflushed = 0;
      cv.notify_all();
    }
  }
  if (p.failed_io) return;
  p.failed_io = true;
  p.partial.clear();
  for (auto& [id, c] : conns)
    if (!c->dead && c->peer == r && c->st != St::kClosing) close_conn(c.get());
}

}  // namespace geotb::engine
