// SocketTransport, connections: opening, closing and tearing them down, their output queues,
// connecting out and accepting (socket_impl.h).
#include "engine/transport/socket/socket_impl.h"

namespace geotb::engine {

auto SocketTransport::Impl::find(uint64_t id) -> Conn* {
  auto it = conns.find(id);
  return it == conns.end() || it->second->dead ? nullptr : it->second.get();
}

auto SocketTransport::Impl::add_conn(int fd, bool outgoing) -> Conn* {
  auto c = std::make_unique<Conn>();
  c->id = next_conn_id++;
  c->fd = fd;
  c->outgoing = outgoing;
  c->rbuf.resize(kReadBuf);
  c->last_send = Clock::now();
  Conn* raw = c.get();
  conns.emplace(raw->id, std::move(c));
  epoll_event ev{};
  ev.events = EPOLLIN | (outgoing ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  ev.data.u64 = raw->id;
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  raw->mask = ev.events;
  return raw;
}

void SocketTransport::Impl::close_conn(Conn* c) {
  if (c->dead) return;
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, nullptr);
  ::close(c->fd);
  c->fd = -1;
  c->dead = true;
  c->outq.clear();
  c->outq_bytes = 0;
  if (c->outgoing && c->peer >= 0) {
    Peer& p = peers[c->peer];
    if (c->stream < p.out.size() && p.out[c->stream] == c->id) p.out[c->stream] = 0;
    if (c->counted_open) {
      c->counted_open = false;
      std::lock_guard lk(mu);
      p.open_out--;
    }
  }
}

// Orderly end of a connection: flush what is queued, half-close, read until the peer's EOF.
void SocketTransport::Impl::begin_closing(Conn* c, Clock::time_point deadline) {
  // A frame being read stays framed: its remaining payload is read and discarded.
  c->st = St::kClosing;
  c->deadline = deadline;
  flush_conn(c);
  if (!c->dead) update_mask(c);
}

void SocketTransport::Impl::update_mask(Conn* c) {
  if (c->dead) return;
  uint32_t want = EPOLLIN;
  if (c->st == St::kConnecting || !c->outq.empty()) want |= EPOLLOUT;
  if (want != c->mask) {
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = c->id;
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->mask = want;
  }
}

void SocketTransport::Impl::push_ctrl(Conn* c, fr::FrameType t, std::vector<uint8_t> payload) {
  OutFrame f;
  fr::FrameHeader h;
  h.type = t;
  h.seq = c->send_seq++;
  h.payload_len = static_cast<uint32_t>(payload.size());
  h.payload_crc = payload.empty() ? 0 : fr::crc32c(payload.data(), payload.size());
  fr::encode_header(h, f.hdr.data());
  f.len = payload.size();
  f.ctrl = std::move(payload);
  f.heartbeat = t == fr::FrameType::kHeartbeat;
  c->outq_bytes += fr::kHeaderBytes + f.len;
  c->outq.push_back(std::move(f));
}

void SocketTransport::Impl::reject(Conn* c, const std::string& reason) {
  st.auth_failures++;
  if (!c->outgoing) st.refused++;
  std::string r = reason.substr(0, fr::kMaxControlPayload);
  push_ctrl(c, fr::FrameType::kReject, std::vector<uint8_t>(r.begin(), r.end()));
  begin_closing(c, Clock::now() + milliseconds(1000));
}

// Writes queued frames until the socket would block. False if the connection died.
bool SocketTransport::Impl::flush_conn(Conn* c) {
  uint64_t flushed_units = 0;
  int peer = c->peer;
  while (!c->outq.empty()) {
    iovec iov[64];
    int k = 0;
    for (auto it = c->outq.begin(); it != c->outq.end() && k < 62; ++it) {
      const OutFrame& f = *it;
      if (f.done < fr::kHeaderBytes) {
        iov[k++] = {const_cast<uint8_t*>(f.hdr.data()) + f.done, fr::kHeaderBytes - f.done};
        if (f.len > 0) iov[k++] = {const_cast<uint8_t*>(f.payload()), f.len};
      } else {
        size_t off = f.done - fr::kHeaderBytes;
        iov[k++] = {const_cast<uint8_t*>(f.payload()) + off, f.len - off};
      }
    }
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = k;
    ssize_t w = ::sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      conn_broken(c, "write: " + errstr(errno));
      break;
    }
    c->last_send = Clock::now();
    size_t left = static_cast<size_t>(w);
    while (left > 0 && !c->outq.empty()) {
      OutFrame& f = c->outq.front();
      size_t total = fr::kHeaderBytes + f.len;
      size_t take = std::min(left, total - f.done);
      f.done += take;
      left -= take;
      if (f.done < total) break;
      st.frames_sent++;
      st.bytes_sent += total;
      if (f.heartbeat) st.heartbeats++;
      if (f.data) {
        st.payload_sent += f.len;
        st.by_stream[std::min<uint32_t>(c->stream, kMaxStreams - 1)]++;
        if (f.last_of_msg) st.messages_sent++;
        flushed_units += f.flush_units;
      }
      c->outq_bytes -= total;
      c->outq.pop_front();
    }
  }
  if (flushed_units > 0 && peer >= 0) {
    std::lock_guard lk(mu);
    Peer& p = peers[peer];
    p.unflushed = p.unflushed >= flushed_units ? p.unflushed - flushed_units : 0;
    if (p.unflushed == 0) cv.notify_all();
  }
  if (c->dead) return false;
  if (c->st == St::kClosing && c->outq.empty() && !c->wr_shut) {
    ::shutdown(c->fd, SHUT_WR);
    c->wr_shut = true;
  }
  return true;
}

// A connection ended or errored.
void SocketTransport::Impl::conn_broken(Conn* c, const std::string& why) {
  if (c->dead) return;
  const int r = c->peer;
  const St s = c->st;
  const bool outgoing = c->outgoing;
  const uint32_t stream = c->stream;
  const bool graceful = c->goodbye_rx;
  const bool old_incarnation = stale(c);
  close_conn(c);
  if (s == St::kClosing || r < 0 || old_incarnation) return;
  Peer& p = peers[r];
  if (s != St::kOpen) {
    // Before the handshake completed: the peer may still be starting (or its listen queue
    // overflowed); our own attempts are retried until connect_timeout.
    if (outgoing && !p.failed_io) {
      p.last_connect_error = why;
      if (Clock::now() >= p.connect_deadline)
        fail_peer(r, Fail::kDead,
                  "cannot connect to " + who(r) + " at " + p.addr_text + " within connect_timeout " +
                      ms_text(cfg.connect_timeout) + " (last error: " + why + ")");
      else if (stream < p.retry_at.size())
        p.retry_at[stream] = Clock::now() + kRetryInterval;
    }
    return;
  }
  if (graceful) {
    // Failed only once every connection with it has ended.
    for (auto& [id, o] : conns)
      if (!o->dead && o->peer == r && o->st == St::kOpen) return;
    fail_peer(r, Fail::kDead, who(r) + " closed its transport", std::nullopt, true);
    return;
  }
  fail_peer(r, Fail::kDead, "connection to " + who(r) + " (" + (outgoing ? "outgoing" : "incoming") +
                                " stream " + std::to_string(stream) + ") lost: " + why);
}

void SocketTransport::Impl::frame_error(Conn* c, const std::string& why) {
  if (c->st == St::kClosing) {  // draining a connection we are ending anyway
    close_conn(c);
    return;
  }
  st.corrupt++;
  if (!c->outgoing && c->peer < 0) st.refused++;  // garbage from a stranger: refused, counted
  const int r = c->peer;
  std::string what = "corrupt frame from " + (r >= 0 ? who(r) : std::string("an unauthenticated connection")) +
                     " (" + (c->outgoing ? "outgoing" : "incoming") + " stream " + std::to_string(c->stream) +
                     ", frame seq " + std::to_string(c->recv_seq) + "): " + why;
  close_conn(c);
  if (r >= 0) fail_peer(r, Fail::kFrame, what);
}

void SocketTransport::Impl::ensure_connect(int r) {
  Peer& p = peers[r];
  if (p.failed_io || goodbye_phase) return;
  const auto now = Clock::now();
  if (!p.connect_started) {
    p.connect_started = true;
    p.connect_deadline = now + cfg.connect_timeout;
    p.out.assign(nstreams, 0);
    p.retry_at.assign(nstreams, now);
  }
  for (int s = 0; s < nstreams; ++s) {
    if (p.out[s] != 0 || now < p.retry_at[s]) continue;
    if (now >= p.connect_deadline) {
      fail_peer(r, Fail::kDead,
                "cannot connect to " + who(r) + " at " + p.addr_text + " within connect_timeout " +
                    ms_text(cfg.connect_timeout) + " (last error: " + p.last_connect_error + ")");
      return;
    }
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      p.last_connect_error = "socket(): " + errstr(errno);
      p.retry_at[s] = now + kRetryInterval;
      continue;
    }
    tune_socket(fd, cfg.sockbuf_bytes);
    sockaddr_in a;
    {
      std::lock_guard lk(mu);
      a = p.addr;
    }
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    if (rc != 0 && errno != EINPROGRESS) {
      p.last_connect_error = "connect: " + errstr(errno);
      ::close(fd);
      p.retry_at[s] = now + kRetryInterval;
      continue;
    }
    Conn* c = add_conn(fd, true);
    c->peer = r;
    c->incarnation = p.io_incarnation;
    c->stream = static_cast<uint32_t>(s);
    c->st = St::kConnecting;
    c->deadline = p.connect_deadline;
    p.out[s] = c->id;
  }
}

bool SocketTransport::Impl::closing_snapshot() {
  std::lock_guard lk(mu);
  return closing;
}

void SocketTransport::Impl::on_connected(Conn* c) {
  int err = 0;
  socklen_t el = sizeof(err);
  getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
  if (err != 0) {
    conn_broken(c, "connect: " + errstr(err));
    return;
  }
  c->st = St::kHelloSent;
  c->deadline = Clock::now() + cfg.peer_timeout;
  c->nonce_mine = sockauth::fresh_nonce();
  fr::Hello h;
  h.from_rank = cfg.rank;
  h.to_rank = c->peer;
  h.world = cfg.world;
  h.stream = c->stream;
  h.flags = cfg.secret.empty() ? 0 : fr::kHelloFlagAuth;
  h.nonce = c->nonce_mine;
  push_ctrl(c, fr::FrameType::kHello, fr::encode_hello(h));
  if (flush_conn(c)) update_mask(c);
}

void SocketTransport::Impl::accept_all() {
  for (;;) {
    sockaddr_in a{};
    socklen_t al = sizeof(a);
    int fd = ::accept4(lfd, reinterpret_cast<sockaddr*>(&a), &al, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a transient error (ECONNABORTED, EMFILE): try next time
    int anonymous = 0;
    for (auto& [id, o] : conns)
      if (!o->dead && !o->outgoing && o->st == St::kAwaitHello) ++anonymous;
    if (anonymous >= kMaxAnonymousConns || linger_phase || goodbye_phase) {
      ::close(fd);
      continue;
    }
    tune_socket(fd, cfg.sockbuf_bytes);
    Conn* c = add_conn(fd, false);
    c->st = St::kAwaitHello;
    c->deadline = Clock::now() + cfg.peer_timeout;
    char buf[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
    c->remote_ip = buf;
  }
}

void SocketTransport::Impl::conn_opened(Conn* c) {
  c->st = St::kOpen;
  st.connections_opened++;
  Peer& p = peers[c->peer];
  p.last_heard = Clock::now();
  std::lock_guard lk(mu);
  if (c->outgoing) {
    c->counted_open = true;
    p.open_out++;
    cv.notify_all();
  } else {
    p.remote_ip = c->remote_ip;
  }
}

}  // namespace geotb::engine
