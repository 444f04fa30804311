#include "engine/transport/socket/socket_transport.h"

#include "engine/transport/socket/socket_impl.h"

namespace geotb::engine {

std::string SocketTransport::Impl::errstr(int e) { return std::strerror(e); }

std::string SocketTransport::Impl::ms_text(milliseconds d) { return std::to_string(d.count()) + " ms"; }

void SocketTransport::Impl::throw_fail(Fail f, const std::string& why) {
  switch (f) {
    case Fail::kAuth: throw AuthError(why);
    case Fail::kFrame: throw FrameError(why);
    default: throw PeerDeadError(why);
  }
}

bool SocketTransport::Impl::resolve_ipv4(const std::string& host, uint16_t port, sockaddr_in* out, std::string* err) {
  std::memset(out, 0, sizeof(*out));
  out->sin_family = AF_INET;
  out->sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &out->sin_addr) == 1) return true;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    *err = rc != 0 ? gai_strerror(rc) : "no IPv4 address";
    return false;
  }
  out->sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return true;
}

size_t SocketTransport::Impl::read_proc_max(const char* path, size_t fallback) {
  std::ifstream f(path);
  size_t a = 0, b = 0, c = 0;
  if (f >> a >> b >> c) return c;
  return fallback;
}

// Per-connection socket options: no Nagle (heartbeats and small messages go out at once), and
// the requested buffer sizes (leaving them unset keeps the kernel's autotuning).
void SocketTransport::Impl::tune_socket(int fd, size_t sockbuf) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (sockbuf > 0) {
    int v = static_cast<int>(std::min<size_t>(sockbuf, 1u << 30));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
  }
}

int SocketTransport::derive_streams(double rate_bps, double rtt_s, size_t sockbuf_bytes) {
  if (!(rate_bps > 0) || !(rtt_s > 0) || sockbuf_bytes == 0) return 1;
  const double bdp_bytes = rate_bps * rtt_s / 8.0;
  const double n = std::ceil(bdp_bytes / static_cast<double>(sockbuf_bytes));
  if (!(n >= 1)) return 1;
  return n >= Impl::kMaxStreams ? Impl::kMaxStreams : static_cast<int>(n);
}

// ---------------------------------------------------------------- setup
SocketTransport::Impl::Impl(const SocketTransportConfig& c) : cfg(c) {
  auto bad = [](const std::string& field, const std::string& v) {
    throw TransportError("SocketTransportConfig." + field + ": " + v);
  };
  if (cfg.world < 1) bad("world", std::to_string(cfg.world) + " (must be >= 1)");
  if (cfg.rank < 0 || cfg.rank >= cfg.world)
    bad("rank", std::to_string(cfg.rank) + " (must be in [0, world=" + std::to_string(cfg.world) + "))");
  if (cfg.streams < 0 || cfg.streams > kMaxStreams)
    bad("streams", std::to_string(cfg.streams) + " (must be 0 = derive, or 1..16)");
  if (cfg.heartbeat.count() <= 0) bad("heartbeat", ms_text(cfg.heartbeat) + " (must be > 0)");
  if (cfg.peer_timeout <= cfg.heartbeat)
    bad("peer_timeout", ms_text(cfg.peer_timeout) + " (must exceed heartbeat " + ms_text(cfg.heartbeat) + ")");
  if (cfg.recv_timeout.count() <= 0) bad("recv_timeout", ms_text(cfg.recv_timeout) + " (must be > 0)");
  if (cfg.connect_timeout.count() <= 0) bad("connect_timeout", ms_text(cfg.connect_timeout) + " (must be > 0)");
  if (cfg.chunk_bytes < 1024 || cfg.chunk_bytes > fr::kMaxPayload)
    bad("chunk_bytes", std::to_string(cfg.chunk_bytes) + " (must be in [1024, 64 MiB])");
  if (cfg.link_rate_bps < 0 || cfg.link_rtt_s < 0)
    bad("link_rate_bps/link_rtt_s", "negative");

  // The buffer a stream gets: what the kernel grants (read back), or autotuning's ceiling.
  if (cfg.sockbuf_bytes > 0) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw TransportError("socket(): " + errstr(errno));
    tune_socket(fd, cfg.sockbuf_bytes);
    int got = 0;
    socklen_t gl = sizeof(got);
    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &gl);
    ::close(fd);
    sockbuf_eff = static_cast<size_t>(got) / 2;
  } else {
    // Autotuning grows sk_sndbuf up to tcp_wmem's maximum, which like SO_SNDBUF's read-back
    // counts per-packet overhead as well as payload: halved the same way.
    sockbuf_eff = read_proc_max("/proc/sys/net/ipv4/tcp_wmem", 4u << 20) / 2;
  }
  nstreams = cfg.streams > 0 ? cfg.streams : derive_streams(cfg.link_rate_bps, cfg.link_rtt_s, sockbuf_eff);
  low_water = 2 * cfg.chunk_bytes;
  tick = std::clamp(std::min(cfg.heartbeat, cfg.peer_timeout) / 4, milliseconds(5), milliseconds(100));
  peers.resize(cfg.world);

  sockaddr_in la{};
  std::string err;
  if (!resolve_ipv4(cfg.listen_host, cfg.listen_port, &la, &err))
    bad("listen_host", "\"" + cfg.listen_host + "\": " + err);
  lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (lfd < 0) throw TransportError("socket(): " + errstr(errno));
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Accepted sockets inherit the listener's buffer sizes; setting them here (before listen)
  // also sizes the window scale the SYN-ACK advertises.
  if (cfg.sockbuf_bytes > 0) tune_socket(lfd, cfg.sockbuf_bytes);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&la), sizeof(la)) != 0) {
    int e = errno;
    ::close(lfd);
    throw TransportError("bind " + cfg.listen_host + ":" + std::to_string(cfg.listen_port) + ": " + errstr(e));
  }
  if (::listen(lfd, 256) != 0) {
    int e = errno;
    ::close(lfd);
    throw TransportError("listen: " + errstr(e));
  }
  socklen_t sl = sizeof(la);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&la), &sl);
  bound_port = ntohs(la.sin_port);
  ep = epoll_create1(EPOLL_CLOEXEC);
  evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ep < 0 || evfd < 0) {
    int e = errno;
    if (ep >= 0) ::close(ep);
    if (evfd >= 0) ::close(evfd);
    ::close(lfd);
    throw TransportError("epoll/eventfd: " + errstr(e));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  ev.data.u64 = kWakeId;
  epoll_ctl(ep, EPOLL_CTL_ADD, evfd, &ev);
  io = std::thread([this] { io_main(); });
}

SocketTransport::Impl::~Impl() {
  shutdown();
  if (ep >= 0) ::close(ep);
  if (evfd >= 0) ::close(evfd);
}

void SocketTransport::Impl::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(evfd, &one, sizeof(one));
}

SocketTransport::SocketTransport(const SocketTransportConfig& cfg) : impl_(std::make_unique<Impl>(cfg)) {}
SocketTransport::~SocketTransport() { close(); }
uint16_t SocketTransport::port() const { return impl_->bound_port; }
void SocketTransport::start(std::vector<SocketEndpoint> peers) { impl_->start(std::move(peers)); }
int SocketTransport::rank() const { return impl_->cfg.rank; }
int SocketTransport::size() const { return impl_->cfg.world; }
void SocketTransport::send(int dst, uint64_t tag, std::vector<uint8_t> bytes) {
  impl_->send(dst, tag, std::move(bytes));
}
std::vector<uint8_t> SocketTransport::recv(int src, uint64_t tag) { return impl_->recv(src, tag); }
void SocketTransport::close() { impl_->shutdown(); }
void SocketTransport::expect_successors(const std::vector<int>& ranks, size_t last_n) {
  impl_->expect_successors(ranks, last_n);
}
void SocketTransport::take_over(int dead, const std::vector<int>& tell) { impl_->take_over(dead, tell); }
void SocketTransport::expect_restarts(const std::vector<int>& ranks) { impl_->expect_restarts(ranks); }
void SocketTransport::revive(int rank, const SocketEndpoint& at) { impl_->revive(rank, at); }
void SocketTransport::interrupt_recvs(std::vector<int> from) { impl_->interrupt(std::move(from), true); }
void SocketTransport::clear_interrupt() { impl_->interrupt({}, false); }
bool SocketTransport::await_streams(int peer, std::chrono::milliseconds timeout) {
  return impl_->await_streams(peer, timeout);
}
bool SocketTransport::flush(std::chrono::milliseconds timeout) { return impl_->flush(timeout); }
bool SocketTransport::drain(std::chrono::milliseconds timeout) { return impl_->drain(timeout); }
int SocketTransport::streams() const { return impl_->nstreams; }
size_t SocketTransport::sockbuf_bytes() const { return impl_->sockbuf_eff; }
std::string SocketTransport::peer_host(int rank) const {
  impl_->check_rank(rank, "peer_host");
  std::lock_guard lk(impl_->mu);
  return impl_->peers[rank].remote_ip;
}

SocketTransport::Stats SocketTransport::stats() const {
  const auto& a = impl_->st;
  Stats s;
  s.frames_sent = a.frames_sent;
  s.frames_received = a.frames_received;
  s.bytes_sent = a.bytes_sent;
  s.bytes_received = a.bytes_received;
  s.corrupt_frames_rejected = a.corrupt;
  s.heartbeats_sent = a.heartbeats;
  s.messages_sent = a.messages_sent;
  s.messages_received = a.messages_received;
  s.payload_bytes_sent = a.payload_sent;
  s.payload_bytes_received = a.payload_received;
  s.auth_failures = a.auth_failures;
  s.connections_opened = a.connections_opened;
  s.incoming_refused = a.refused;
  for (int i = 0; i < Impl::kMaxStreams; ++i) s.data_frames_by_stream[i] = a.by_stream[i];
  return s;
}

}  // namespace geotb::engine
