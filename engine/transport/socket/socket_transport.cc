#include "engine/transport/socket/socket_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "engine/transport/socket/auth.h"
#include "engine/transport/socket/frame.h"

namespace geotb::engine {
namespace {

namespace fr = sockframe;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kMaxStreams = 16;
constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr milliseconds kRetryInterval{100};
constexpr size_t kReadBuf = 256 * 1024;
constexpr size_t kDirectReadMin = 64 * 1024;   // payload remainders at least this big bypass rbuf
constexpr size_t kReadBudget = 8u << 20;       // bytes per readable event before serving others
constexpr uint64_t kMaxMsgsAhead = 1u << 20;   // msg_id window beyond the next one to deliver
constexpr int kMaxAnonymousConns = 64;         // accepted connections still in the handshake

std::string errstr(int e) { return std::strerror(e); }

std::string ms_text(milliseconds d) { return std::to_string(d.count()) + " ms"; }

enum class Fail : uint8_t { kNone, kDead, kAuth, kFrame };

[[noreturn]] void throw_fail(Fail f, const std::string& why) {
  switch (f) {
    case Fail::kAuth: throw AuthError(why);
    case Fail::kFrame: throw FrameError(why);
    default: throw PeerDeadError(why);
  }
}

bool resolve_ipv4(const std::string& host, uint16_t port, sockaddr_in* out, std::string* err) {
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

size_t read_proc_max(const char* path, size_t fallback) {
  std::ifstream f(path);
  size_t a = 0, b = 0, c = 0;
  if (f >> a >> b >> c) return c;
  return fallback;
}

// Per-connection socket options: no Nagle (heartbeats and small messages go out at once), and
// the requested buffer sizes (leaving them unset keeps the kernel's autotuning).
void tune_socket(int fd, size_t sockbuf) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (sockbuf > 0) {
    int v = static_cast<int>(std::min<size_t>(sockbuf, 1u << 30));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
  }
}

}  // namespace

int SocketTransport::derive_streams(double rate_bps, double rtt_s, size_t sockbuf_bytes) {
  if (!(rate_bps > 0) || !(rtt_s > 0) || sockbuf_bytes == 0) return 1;
  const double bdp_bytes = rate_bps * rtt_s / 8.0;
  const double n = std::ceil(bdp_bytes / static_cast<double>(sockbuf_bytes));
  if (!(n >= 1)) return 1;
  return n >= kMaxStreams ? kMaxStreams : static_cast<int>(n);
}

struct SocketTransport::Impl {
  // ---------------------------------------------------------------- types
  struct OutMsg {
    uint64_t id = 0, tag = 0;
    std::shared_ptr<const std::vector<uint8_t>> data;
    size_t next_off = 0;
  };
  struct OutFrame {
    std::array<uint8_t, fr::kHeaderBytes> hdr{};
    std::shared_ptr<const std::vector<uint8_t>> owner;  // DATA payload
    size_t owner_off = 0;
    std::vector<uint8_t> ctrl;                          // control payload
    size_t len = 0;                                     // payload bytes
    size_t done = 0;                                    // of header + payload written
    uint64_t flush_units = 0;                           // DATA: payload + 1 for a message's last byte
    bool heartbeat = false, data = false, last_of_msg = false;
    const uint8_t* payload() const { return owner ? owner->data() + owner_off : ctrl.data(); }
  };
  enum class St { kConnecting, kHelloSent, kResponseSent, kAwaitHello, kChallengeSent, kOpen, kClosing };
  struct Conn {
    uint64_t id = 0;
    int fd = -1;
    bool outgoing = false;
    int peer = -1;  // -1 until an incoming connection's HELLO is accepted (its proof, with a secret)
    int claimed = -1;  // incoming, with a secret: the rank its HELLO claims, until it proves it
    uint64_t incarnation = 0;  // the peer's incarnation it belongs to (restarts: revive)
    uint32_t stream = 0;
    St st = St::kAwaitHello;
    Clock::time_point deadline{};  // handshake / closing deadline
    fr::Nonce nonce_mine{}, nonce_theirs{};
    uint64_t send_seq = 0, recv_seq = 0;
    std::deque<OutFrame> outq;
    size_t outq_bytes = 0;
    Clock::time_point last_send{};
    uint32_t mask = 0;
    bool wr_shut = false, goodbye_rx = false, dead = false;
    bool counted_open = false;  // outgoing, counted in Peer::open_out
    std::string remote_ip;
    // input state
    std::vector<uint8_t> rbuf;
    size_t rpos = 0, rend = 0;
    bool in_frame = false;
    fr::FrameHeader h{};
    uint8_t* pdst = nullptr;
    size_t premain = 0;
    std::vector<uint8_t> ctrl;
  };
  struct Partial {
    uint64_t tag = 0, len = 0, got = 0;
    std::vector<uint8_t> buf;
  };
  struct Peer {
    // guarded by mu
    std::deque<OutMsg> sendq;
    uint64_t next_msg_id = 0;
    uint64_t unflushed = 0;
    std::map<uint64_t, std::deque<std::vector<uint8_t>>> mailbox;
    Fail fail = Fail::kNone;
    std::string why;
    bool have_addr = false;
    sockaddr_in addr{};
    std::string addr_text;
    bool want_connect = false;
    std::string remote_ip;
    int open_out = 0;  // outgoing streams past the handshake
    // I/O thread only
    bool connect_started = false;
    Clock::time_point connect_deadline{};
    std::vector<uint64_t> out;  // conn id per stream slot, 0 = none
    std::vector<Clock::time_point> retry_at;
    std::string last_connect_error;
    Clock::time_point last_heard{};
    // Indirect probes (cfg.witnesses): while silent past peer_timeout, since when; whether a
    // witness could not reach it either; when to ask the witnesses again.
    std::optional<Clock::time_point> suspected_at;
    bool not_reached = false;
    Clock::time_point next_ask{};
    std::map<uint64_t, Partial> partial;
    uint64_t next_deliver = 0;
    bool goodbye_seen = false;
    bool failed_io = false;  // I/O thread has torn down this peer's connections
    bool reported = false;   // on_peer_failed called (guarded by mu)
    // guarded by mu: a successor may take over this peer's address (expect_successors, take_over)
    bool expect_successor = false;
    int successor = -1;  // the rank that took over its address
    size_t keep_n = 0;
    std::deque<std::pair<uint64_t, std::shared_ptr<const std::vector<uint8_t>>>> kept;  // (tag, message)
    // guarded by mu: restarts (expect_restarts, revive)
    bool restartable = false;
    uint64_t incarnation = 0;  // bumped when a failed peer is revived
    // I/O thread only
    uint64_t io_incarnation = 0;  // the incarnation the I/O state above belongs to
  };

  // ---------------------------------------------------------------- state
  SocketTransportConfig cfg;
  int nstreams = 1;
  size_t sockbuf_eff = 0;
  uint16_t bound_port = 0;
  int lfd = -1, ep = -1, evfd = -1;
  milliseconds tick{50};
  size_t low_water = 0;

  mutable std::mutex mu;
  std::condition_variable cv;        // recv waiters, flush waiters
  std::vector<Peer> peers;
  bool started = false;
  bool closing = false;              // close() called
  bool want_outq = false;            // drain(): the I/O thread measures the kernel's send queues
  int64_t kernel_outq = -1;          // their bytes (unsent + unacknowledged) at its last measure
  bool interrupted = false;          // interrupt_recvs(): recv() from `interrupt_from` throws
  std::vector<int> interrupt_from;   // empty: every rank
  bool io_exited = false;
  std::vector<int> dirty;            // peers with new sends / connect requests
  std::string fatal;                 // I/O thread died with this

  std::thread io;
  std::once_flag close_once;

  // I/O thread only
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_conn_id = 2;
  size_t rr = 0;  // round-robin start among equally loaded streams
  bool linger_phase = false, goodbye_phase = false;
  Clock::time_point linger_deadline{}, final_deadline{};

  struct AtomicStats {
    std::atomic<uint64_t> frames_sent{0}, frames_received{0}, bytes_sent{0}, bytes_received{0},
        corrupt{0}, heartbeats{0}, messages_sent{0}, messages_received{0}, payload_sent{0},
        payload_received{0}, auth_failures{0}, connections_opened{0}, refused{0};
    std::array<std::atomic<uint64_t>, kMaxStreams> by_stream{};
  } st;

  // ---------------------------------------------------------------- setup
  explicit Impl(const SocketTransportConfig& c) : cfg(c) {
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

  ~Impl() {
    shutdown();
    if (ep >= 0) ::close(ep);
    if (evfd >= 0) ::close(evfd);
  }

  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(evfd, &one, sizeof(one));
  }

  std::string who(int r) const { return "rank " + std::to_string(r); }
  std::string me() const { return "socket transport rank " + std::to_string(cfg.rank) + ": "; }

  // ---------------------------------------------------------------- caller side
  void check_rank(int r, const char* what) const {
    if (r < 0 || r >= cfg.world)
      throw TransportError(me() + what + ": rank " + std::to_string(r) + " out of range [0, " +
                           std::to_string(cfg.world) + ")");
  }

  void start(std::vector<SocketEndpoint> eps) {
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

  void send(int dst, uint64_t tag, std::vector<uint8_t> bytes) {
    check_rank(dst, "send");
    if (bytes.size() > cfg.max_message_bytes)
      throw TransportError(me() + "send: " + std::to_string(bytes.size()) + " bytes > max_message_bytes");
    std::lock_guard lk(mu);
    if (closing) throw TransportError(me() + "send after close()");
    if (peers[dst].successor >= 0) dst = peers[dst].successor;  // a taken-over address
    Peer& p = peers[dst];
    if (dst == cfg.rank) {
      p.mailbox[tag].push_back(std::move(bytes));
      cv.notify_all();
      return;
    }
    auto msg = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
    if (p.keep_n > 0) {
      p.kept.emplace_back(tag, msg);
      if (p.kept.size() > p.keep_n) p.kept.pop_front();
    }
    if (p.fail != Fail::kNone) {
      if (p.expect_successor) return;  // kept for its successor
      throw_fail(p.fail, p.why);
    }
    if (!started) throw TransportError(me() + "send before start()");
    queue_locked(dst, tag, std::move(msg));
  }

  // mu held.
  void queue_locked(int dst, uint64_t tag, std::shared_ptr<const std::vector<uint8_t>> msg) {
    Peer& p = peers[dst];
    const size_t n = msg->size();
    p.sendq.push_back(OutMsg{p.next_msg_id++, tag, std::move(msg), 0});
    p.unflushed += n + 1;
    dirty.push_back(dst);
    wake();
  }

  void expect_successors(const std::vector<int>& ranks, size_t last_n) {
    std::lock_guard lk(mu);
    for (int r : ranks) {
      check_rank(r, "expect_successors");
      if (r == cfg.rank) continue;
      peers[r].expect_successor = true;
      peers[r].keep_n = last_n;
    }
  }

  void expect_restarts(const std::vector<int>& ranks) {
    std::lock_guard lk(mu);
    for (int r : ranks) {
      check_rank(r, "expect_restarts");
      if (r != cfg.rank) peers[r].restartable = true;
    }
  }

  // A failed peer's new incarnation (mu held): nothing of the old one is kept.
  void reset_locked(Peer& p) {
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
    p.kept.clear();
    ++p.incarnation;
    cv.notify_all();
  }

  // I/O thread: whether connection c belongs to an incarnation of its peer that was revived since.
  bool stale(const Conn* c) {
    if (c->peer < 0) return false;
    std::lock_guard lk(mu);
    return c->incarnation != peers[c->peer].incarnation;
  }

  // I/O thread: the I/O state of peer r follows its incarnation (a revived peer starts afresh:
  // no connection, no partial message, message order from 0).
  void sync_io(int r) {
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

  void revive(int r, const SocketEndpoint& at) {
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
  void taken_over(int dead, int successor) {
    if (dead < 0 || dead >= cfg.world || dead == successor || dead == cfg.rank) return;
    for (auto& q : peers)
      if (q.successor == dead) q.successor = successor;  // a chain: whoever `dead` had taken over
    Peer& d = peers[dead];
    Peer& s = peers[successor];
    d.successor = successor;
    s.expect_successor = s.expect_successor || d.expect_successor;
    s.keep_n = std::max(s.keep_n, d.keep_n);
    // What we had sent the dead (it may not have taken it) goes to its successor now.
    auto kept = std::move(d.kept);
    d.kept.clear();
    for (auto& [tag, msg] : kept) {
      if (s.keep_n > 0) {
        s.kept.emplace_back(tag, msg);
        if (s.kept.size() > s.keep_n) s.kept.pop_front();
      }
      if (s.fail == Fail::kNone && started && !closing) queue_locked(successor, tag, msg);
    }
    cv.notify_all();
  }

  void take_over(int dead, const std::vector<int>& tell) {
    check_rank(dead, "take_over");
    std::vector<uint8_t> notice(sizeof(int64_t));
    const int64_t d = dead;
    std::memcpy(notice.data(), &d, sizeof d);
    for (int r : tell)
      if (r != cfg.rank && r != dead) send(r, kTakeoverTag, notice);
  }

  std::vector<uint8_t> recv(int src, uint64_t tag) {
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
      if (p.successor >= 0)
        if (auto m = take(peers[p.successor])) return std::move(*m);
      const Peer& now = p.successor >= 0 ? peers[p.successor] : p;  // who answers for src
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

  bool await_streams(int r, milliseconds timeout) {
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

  void interrupt(std::vector<int> from, bool on) {
    std::lock_guard lk(mu);
    interrupted = on;
    interrupt_from = std::move(from);
    cv.notify_all();
  }

  bool flush(milliseconds timeout) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, timeout, [&] {
      if (io_exited) return true;
      for (auto& p : peers)
        if (p.fail == Fail::kNone && p.unflushed > 0) return false;
      return true;
    });
  }

  void shutdown() {
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

  // ---------------------------------------------------------------- failure
  // silent: failed after this long of silence; goodbye: it closed its transport (on_peer_failed
  // is not told: a peer that said goodbye finished or failed on its own, it was not killed).
  void fail_peer(int r, Fail kind, const std::string& why, std::optional<milliseconds> silent = std::nullopt,
                 bool goodbye = false, const std::string& how = "") {
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

  // ---------------------------------------------------------------- connections
  Conn* find(uint64_t id) {
    auto it = conns.find(id);
    return it == conns.end() || it->second->dead ? nullptr : it->second.get();
  }

  Conn* add_conn(int fd, bool outgoing) {
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

  void close_conn(Conn* c) {
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
  void begin_closing(Conn* c, Clock::time_point deadline) {
    // A frame being read stays framed: its remaining payload is read and discarded.
    c->st = St::kClosing;
    c->deadline = deadline;
    flush_conn(c);
    if (!c->dead) update_mask(c);
  }

  void update_mask(Conn* c) {
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

  void push_ctrl(Conn* c, fr::FrameType t, std::vector<uint8_t> payload) {
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

  void reject(Conn* c, const std::string& reason) {
    st.auth_failures++;
    if (!c->outgoing) st.refused++;
    std::string r = reason.substr(0, fr::kMaxControlPayload);
    push_ctrl(c, fr::FrameType::kReject, std::vector<uint8_t>(r.begin(), r.end()));
    begin_closing(c, Clock::now() + milliseconds(1000));
  }

  // Writes queued frames until the socket would block. False if the connection died.
  bool flush_conn(Conn* c) {
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
  void conn_broken(Conn* c, const std::string& why) {
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

  void frame_error(Conn* c, const std::string& why) {
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

  // ---------------------------------------------------------------- connect / accept
  void ensure_connect(int r) {
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

  bool closing_snapshot() {
    std::lock_guard lk(mu);
    return closing;
  }

  void on_connected(Conn* c) {
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

  void accept_all() {
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

  void conn_opened(Conn* c) {
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

  // ---------------------------------------------------------------- handshake
  void on_control(Conn* c, const fr::FrameHeader& h, std::span<const uint8_t> pl) {
    using fr::FrameType;
    const bool auth = !cfg.secret.empty();
    if (h.type == FrameType::kReject) {
      std::string reason(pl.begin(), pl.end());
      if (c->peer < 0) {  // an anonymous connection has nothing to refuse
        close_conn(c);
        return;
      }
      st.auth_failures++;
      int r = c->peer;
      close_conn(c);
      fail_peer(r, Fail::kAuth, who(r) + " refused the handshake: " + reason);
      return;
    }
    switch (c->st) {
      case St::kAwaitHello: {
        if (h.type != FrameType::kHello) return handshake_violation(c, h);
        auto hello = fr::decode_hello(pl);
        if (!hello) return handshake_violation(c, h);
        const int from = static_cast<int>(hello->from_rank);
        const bool from_ok = hello->from_rank < static_cast<uint32_t>(cfg.world) && from != cfg.rank;
        std::string bad;
        if (!from_ok) bad = "unexpected rank " + std::to_string(hello->from_rank);
        else if (hello->to_rank != static_cast<uint32_t>(cfg.rank))
          bad = "connection for rank " + std::to_string(hello->to_rank) + " reached rank " + std::to_string(cfg.rank);
        else if (hello->world != static_cast<uint32_t>(cfg.world))
          bad = "world size " + std::to_string(hello->world) + " != " + std::to_string(cfg.world);
        else if (((hello->flags & fr::kHelloFlagAuth) != 0) != auth)
          bad = auth ? "rank " + std::to_string(from) + " has no secret but rank " + std::to_string(cfg.rank) + " requires one"
                     : "rank " + std::to_string(from) + " has a secret but rank " + std::to_string(cfg.rank) + " has none";
        else if (hello->stream >= static_cast<uint32_t>(kMaxStreams))
          bad = "stream index " + std::to_string(hello->stream);
        if (from_ok) {
          std::lock_guard lk(mu);
          if (bad.empty() && peers[from].fail != Fail::kNone) {
            if (!peers[from].restartable)
              bad = "rank " + std::to_string(from) + " already failed here";
            else if (!auth)
              reset_locked(peers[from]);  // its new incarnation (expect_restarts): its address comes with revive()
            // with a secret: reset once the connector has proven it (kChallengeSent)
          }
        }
        if (!bad.empty()) {
          // Refused and counted, and nothing else: anyone who can reach the port can claim any
          // rank, so a refused claim must not fail that rank (the run goes on). A real peer
          // misconfigured (another secret, world size) learns it on its own connection to this
          // rank, which this rank's transport refuses in turn: the connector's side fails.
          reject(c, bad);
          return;
        }
        c->nonce_theirs = hello->nonce;
        c->stream = hello->stream;
        if (!auth) {
          adopt(c, from);
          push_ctrl(c, FrameType::kAccept, {});
          conn_opened(c);
        } else {
          fr::Challenge ch;
          c->claimed = from;  // adopted (the peer's state touched) only once it proves the secret
          ch.from_rank = cfg.rank;
          ch.to_rank = from;
          c->nonce_mine = sockauth::fresh_nonce();
          ch.nonce = c->nonce_mine;
          ch.mac = sockauth::handshake_mac(cfg.secret, sockauth::Role::kAcceptor, from, cfg.rank, cfg.world,
                                           c->stream, c->nonce_theirs, c->nonce_mine);
          push_ctrl(c, FrameType::kChallenge, fr::encode_challenge(ch));
          c->st = St::kChallengeSent;
        }
        if (flush_conn(c)) update_mask(c);
        return;
      }
      case St::kChallengeSent: {
        if (h.type != FrameType::kResponse) return handshake_violation(c, h);
        auto mac = fr::decode_response(pl);
        const auto want = sockauth::handshake_mac(cfg.secret, sockauth::Role::kConnector, c->claimed, cfg.rank,
                                                  cfg.world, c->stream, c->nonce_theirs, c->nonce_mine);
        if (!mac || !sockauth::mac_equal(*mac, want)) {
          reject(c, "wrong secret (bad proof from the connector)");  // counted; the claimed rank is not failed
          return;
        }
        {
          // The claim is proven: a restartable peer's new incarnation replaces its failed one now.
          std::lock_guard lk(mu);
          Peer& p = peers[c->claimed];
          if (p.fail != Fail::kNone && p.restartable) reset_locked(p);
          else if (p.fail != Fail::kNone) {
            reject(c, "rank " + std::to_string(c->claimed) + " already failed here");
            return;
          }
        }
        adopt(c, c->claimed);
        push_ctrl(c, FrameType::kAccept, {});
        conn_opened(c);
        if (flush_conn(c)) update_mask(c);
        return;
      }
      case St::kHelloSent: {
        const int r = c->peer;
        if (h.type == FrameType::kAccept && !auth) {
          conn_opened(c);
          dispatch(r);
          return;
        }
        if (h.type != FrameType::kChallenge || !auth) return handshake_violation(c, h);
        auto ch = fr::decode_challenge(pl);
        if (!ch) return handshake_violation(c, h);
        const auto want = sockauth::handshake_mac(cfg.secret, sockauth::Role::kAcceptor, cfg.rank, r, cfg.world,
                                                  c->stream, c->nonce_mine, ch->nonce);
        if (ch->from_rank != static_cast<uint32_t>(r) || ch->to_rank != static_cast<uint32_t>(cfg.rank) ||
            !sockauth::mac_equal(ch->mac, want)) {
          reject(c, "wrong secret (bad proof from the acceptor)");
          fail_peer(r, Fail::kAuth, who(r) + " at " + peers[r].addr_text + " failed to prove the shared secret");
          return;
        }
        c->nonce_theirs = ch->nonce;
        const auto mine = sockauth::handshake_mac(cfg.secret, sockauth::Role::kConnector, cfg.rank, r, cfg.world,
                                                  c->stream, c->nonce_mine, c->nonce_theirs);
        push_ctrl(c, FrameType::kResponse, std::vector<uint8_t>(mine.begin(), mine.end()));
        c->st = St::kResponseSent;
        if (flush_conn(c)) update_mask(c);
        return;
      }
      case St::kResponseSent: {
        if (h.type != FrameType::kAccept) return handshake_violation(c, h);
        int r = c->peer;
        conn_opened(c);
        dispatch(r);
        return;
      }
      default: return handshake_violation(c, h);
    }
  }

  // An incoming connection becomes rank `from`'s (after its HELLO, or its proof with a secret).
  void adopt(Conn* c, int from) {
    sync_io(from);  // c->peer is still -1: a new incarnation's cleanup does not close c itself
    c->peer = from;
    c->incarnation = peers[from].io_incarnation;
  }

  // A frame that does not belong to this point of the handshake (e.g. DATA before ACCEPT).
  void handshake_violation(Conn* c, const fr::FrameHeader& h) {
    std::string why = std::string("unexpected ") + fr::type_name(h.type) + " frame during the handshake";
    const int r = c->peer;
    reject(c, why);
    // An incoming connection proves nothing about the rank it claims: refused and counted only.
    if (r >= 0 && c->outgoing) fail_peer(r, Fail::kAuth, "handshake with " + who(r) + " failed: " + why);
  }

  // ---------------------------------------------------------------- input
  // Called with a complete header in c->h. Sets where the payload goes. False: connection gone.
  bool on_header(Conn* c) {
    const fr::FrameHeader& h = c->h;
    if (h.seq != c->recv_seq) {
      frame_error(c, "sequence number " + std::to_string(h.seq) + ", expected " + std::to_string(c->recv_seq));
      return false;
    }
    c->recv_seq++;
    c->pdst = nullptr;
    c->premain = h.payload_len;
    if (c->st == St::kClosing) return true;  // draining: payloads are read and discarded
    if (h.type == fr::FrameType::kData) {
      if (c->st != St::kOpen) {
        handshake_violation(c, h);
        return false;
      }
      Peer& p = peers[c->peer];
      if (h.msg_id < p.next_deliver || h.msg_id - p.next_deliver >= kMaxMsgsAhead) {
        frame_error(c, "message id " + std::to_string(h.msg_id) + " outside [" + std::to_string(p.next_deliver) +
                           ", +" + std::to_string(kMaxMsgsAhead) + ")");
        return false;
      }
      if (h.msg_len > cfg.max_message_bytes || h.offset > h.msg_len || h.payload_len > h.msg_len - h.offset ||
          (h.payload_len == 0 && h.msg_len != 0)) {
        frame_error(c, "chunk [" + std::to_string(h.offset) + ", +" + std::to_string(h.payload_len) +
                           ") of a " + std::to_string(h.msg_len) + "-byte message");
        return false;
      }
      auto it = p.partial.find(h.msg_id);
      if (it == p.partial.end()) {
        Partial np;
        np.tag = h.tag;
        np.len = h.msg_len;
        try {
          np.buf.resize(h.msg_len);
        } catch (const std::bad_alloc&) {
          const int r = c->peer;
          close_conn(c);
          fail_peer(r, Fail::kFrame, "cannot allocate a " + std::to_string(h.msg_len) + "-byte message from " + who(r));
          return false;
        }
        it = p.partial.emplace(h.msg_id, std::move(np)).first;
      } else if (it->second.tag != h.tag || it->second.len != h.msg_len ||
                 it->second.got + h.payload_len > it->second.len) {
        frame_error(c, "chunk of message " + std::to_string(h.msg_id) + " disagrees with earlier chunks");
        return false;
      }
      c->pdst = it->second.buf.data() + h.offset;
      return true;
    }
    c->ctrl.resize(h.payload_len);
    c->pdst = c->ctrl.data();
    return true;
  }

  // Called once a frame's payload is complete. False: connection gone.
  bool on_frame(Conn* c) {
    const fr::FrameHeader h = c->h;
    st.frames_received++;
    st.bytes_received += fr::kHeaderBytes + h.payload_len;
    if (c->st == St::kClosing) return true;
    if (h.type == fr::FrameType::kData) {
      Peer& p = peers[c->peer];
      auto it = p.partial.find(h.msg_id);
      const uint8_t* data = it->second.buf.data() + h.offset;
      if (h.payload_len > 0 ? fr::crc32c(data, h.payload_len) != h.payload_crc : h.payload_crc != 0) {
        p.partial.erase(it);
        frame_error(c, "bad payload checksum (message " + std::to_string(h.msg_id) + ", offset " +
                           std::to_string(h.offset) + ")");
        return false;
      }
      st.payload_received += h.payload_len;
      it->second.got += h.payload_len;
      if (it->second.got == it->second.len) deliver_ready(c->peer);
      return true;
    }
    if (c->h.payload_len > 0 && fr::crc32c(c->ctrl.data(), c->ctrl.size()) != h.payload_crc) {
      frame_error(c, std::string("bad payload checksum on ") + fr::type_name(h.type));
      return false;
    }
    switch (h.type) {
      case fr::FrameType::kHeartbeat:
        if (c->st != St::kOpen) {
          handshake_violation(c, h);
          return false;
        }
        return true;
      case fr::FrameType::kGoodbye:
        if (c->st != St::kOpen) {
          handshake_violation(c, h);
          return false;
        }
        c->goodbye_rx = true;
        peers[c->peer].goodbye_seen = true;
        return true;
      default:
        if (c->st == St::kOpen) {  // a handshake frame after the handshake
          frame_error(c, std::string("unexpected ") + fr::type_name(h.type) + " on an open connection");
          return false;
        }
        on_control(c, h, c->ctrl);
        return !c->dead && c->st != St::kClosing;
    }
  }

  void deliver_ready(int r) {
    Peer& p = peers[r];
    std::vector<std::vector<uint8_t>> notices;
    {
      std::lock_guard lk(mu);
      bool any = false;
      while (!p.partial.empty()) {
        auto it = p.partial.begin();
        if (it->first != p.next_deliver || it->second.got != it->second.len) break;
        if (cfg.notice_tag != 0 && it->second.tag == cfg.notice_tag && cfg.on_notice) {
          notices.push_back(std::move(it->second.buf));
        } else if (it->second.tag == reserved_tags::kWitness) {
          witness_message(r, it->second.buf);
        } else if (it->second.tag == kTakeoverTag) {
          int64_t dead = -1;
          if (it->second.buf.size() == sizeof dead) std::memcpy(&dead, it->second.buf.data(), sizeof dead);
          taken_over(static_cast<int>(dead), r);
        } else
          p.mailbox[it->second.tag].push_back(std::move(it->second.buf));
        p.partial.erase(it);
        p.next_deliver++;
        st.messages_received++;
        any = true;
      }
      if (any) cv.notify_all();
    }
    for (auto& n : notices) cfg.on_notice(r, std::move(n));
  }

  void on_readable(Conn* c) {
    if (stale(c)) {  // an old incarnation's connection, the peer revived since
      close_conn(c);
      return;
    }
    size_t budget = kReadBudget;
    bool heard = false;
    while (!c->dead && budget > 0) {
      if (!c->in_frame) {
        if (c->rend - c->rpos >= fr::kHeaderBytes) {
          auto err = fr::decode_header(c->rbuf.data() + c->rpos, &c->h);
          c->rpos += fr::kHeaderBytes;
          if (err) {
            frame_error(c, *err);
            break;
          }
          c->in_frame = true;
          if (!on_header(c)) break;
          continue;
        }
      } else if (c->premain > 0 && c->rend > c->rpos) {
        size_t take = std::min(c->premain, c->rend - c->rpos);
        if (c->st != St::kClosing) {
          std::memcpy(c->pdst, c->rbuf.data() + c->rpos, take);
          c->pdst += take;
        }
        c->rpos += take;
        c->premain -= take;
        continue;
      } else if (c->premain == 0) {
        c->in_frame = false;
        if (!on_frame(c)) break;
        continue;
      }
      // Need more bytes from the socket.
      ssize_t n;
      if (c->in_frame && c->premain >= kDirectReadMin && c->st != St::kClosing) {
        n = ::recv(c->fd, c->pdst, std::min(c->premain, budget), MSG_DONTWAIT);
        if (n > 0) {
          c->pdst += n;
          c->premain -= static_cast<size_t>(n);
        }
      } else {
        if (c->rpos == c->rend) c->rpos = c->rend = 0;
        else if (c->rbuf.size() - c->rend < fr::kHeaderBytes) {
          std::memmove(c->rbuf.data(), c->rbuf.data() + c->rpos, c->rend - c->rpos);
          c->rend -= c->rpos;
          c->rpos = 0;
        }
        n = ::recv(c->fd, c->rbuf.data() + c->rend, c->rbuf.size() - c->rend, MSG_DONTWAIT);
        if (n > 0) c->rend += static_cast<size_t>(n);
      }
      if (n > 0) {
        budget -= std::min(budget, static_cast<size_t>(n));
        heard = true;
        continue;
      }
      if (n == 0) {
        if (c->st == St::kClosing) close_conn(c);
        else conn_broken(c, c->goodbye_rx ? "closed after GOODBYE" : "connection closed by the peer without GOODBYE");
        break;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (c->st == St::kClosing) close_conn(c);
      else conn_broken(c, "read: " + errstr(errno));
      break;
    }
    if (heard && c->peer >= 0 && !(cfg.deaf_to && cfg.deaf_to(c->peer))) {
      Peer& p = peers[c->peer];
      p.last_heard = Clock::now();
      p.suspected_at.reset();
    }
  }

  // ---------------------------------------------------------------- output
  // Cuts queued messages of peer r into frames for its open outgoing streams, keeping each
  // stream's user-space queue under low_water; writes them at once where the socket takes them.
  void dispatch(int r) {
    Peer& p = peers[r];
    if (p.failed_io || p.out.empty()) return;
    for (;;) {
      Conn* best = nullptr;
      const size_t n = p.out.size();
      for (size_t k = 0; k < n; ++k) {
        Conn* c = find(p.out[(rr + k) % n]);
        if (c && c->st == St::kOpen && c->outq_bytes < low_water && (!best || c->outq_bytes < best->outq_bytes))
          best = c;
      }
      if (!best) return;
      OutFrame f;
      fr::FrameHeader h;
      {
        std::lock_guard lk(mu);
        if (p.sendq.empty() || p.fail != Fail::kNone) return;
        OutMsg& m = p.sendq.front();
        const size_t size = m.data->size();
        const size_t off = m.next_off;
        const size_t len = std::min(cfg.chunk_bytes, size - off);
        m.next_off += len;
        f.owner = m.data;
        f.owner_off = off;
        f.len = len;
        f.data = true;
        f.last_of_msg = off + len == size;
        f.flush_units = len + (f.last_of_msg ? 1 : 0);
        h.type = fr::FrameType::kData;
        h.tag = m.tag;
        h.msg_id = m.id;
        h.msg_len = size;
        h.offset = off;
        h.payload_len = static_cast<uint32_t>(len);
        if (m.next_off >= size) p.sendq.pop_front();
      }
      h.seq = best->send_seq++;
      h.payload_crc = f.len > 0 ? fr::crc32c(f.payload(), f.len) : 0;
      fr::encode_header(h, f.hdr.data());
      best->outq_bytes += fr::kHeaderBytes + f.len;
      best->outq.push_back(std::move(f));
      rr = (rr + 1) % n;
      if (flush_conn(best)) update_mask(best);
    }
  }

  void on_writable(Conn* c) {
    if (!flush_conn(c)) return;
    if (c->outgoing && c->st == St::kOpen) dispatch(c->peer);
    update_mask(c);
  }

  // ---------------------------------------------------------------- timers and commands
  void process_commands() {
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

  void timers() {
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

  // ---------------------------------------------------------------- witnesses
  // The messages on reserved_tags::kWitness: [kind u8][suspect i32][asked at: ns since the
  // asker's suspicion began, i64: the asker's own clock, echoed back].
  enum WitnessKind : uint8_t { kAsk = 1, kAlive = 2, kNotReached = 3 };

  static std::vector<uint8_t> witness_bytes(WitnessKind k, int suspect, int64_t asked_at) {
    std::vector<uint8_t> b(13);
    b[0] = k;
    const int32_t x = suspect;
    std::memcpy(b.data() + 1, &x, 4);
    std::memcpy(b.data() + 5, &asked_at, 8);
    return b;
  }

  // A suspicion's instant as a request carries it (and its answer echoes it).
  static int64_t suspicion_stamp(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }

  // I/O thread: asks every witness of silent peer r that has not failed here.
  void ask_witnesses(int r, const std::vector<int>& w, Clock::time_point suspected_at) {
    const int64_t at = suspicion_stamp(suspected_at);
    std::lock_guard lk(mu);
    for (int x : w) {
      if (x == r || x == cfg.rank || x < 0 || x >= cfg.world || peers[x].fail != Fail::kNone) continue;
      queue_locked(x, reserved_tags::kWitness, std::make_shared<const std::vector<uint8_t>>(witness_bytes(kAsk, r, at)));
    }
  }

  // I/O thread, mu held: a request from `src` (answered at once from what this rank heard), or an
  // answer to one of this rank's.
  void witness_message(int src, const std::vector<uint8_t>& b) {
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
                   std::make_shared<const std::vector<uint8_t>>(witness_bytes(alive ? kAlive : kNotReached, suspect, asked_at)));
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

  bool all_flushed() {
    std::lock_guard lk(mu);
    for (auto& p : peers)
      if (p.fail == Fail::kNone && p.unflushed > 0) return false;
    return true;
  }

  // Returns true when the loop should end.
  bool shutdown_step() {
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
  void measure_outq() {
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

  bool drain(milliseconds timeout) {
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

  void reap() {
    for (auto it = conns.begin(); it != conns.end();)
      it = it->second->dead ? conns.erase(it) : std::next(it);
  }

  void io_main() {
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
};

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
  for (int i = 0; i < kMaxStreams; ++i) s.data_frames_by_stream[i] = a.by_stream[i];
  return s;
}

}  // namespace geotb::engine
