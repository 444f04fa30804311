// Helpers shared by the socket transport tests (socket_transport_test.cc, suite unit;
// socket_timing_test.cc, suite timing): deterministic payloads, endpoint configurations, a
// raw-socket client speaking the wire format, a child process running
// tests/transport/peer_main.cc, and waits on conditions instead of sleeps.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <linux/futex.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/child_process.h"
#include "engine/transport/socket/frame.h"
#include "engine/transport/socket/socket_transport.h"

namespace geotb::test {

/// n bytes of a splitmix64 stream seeded with `seed`.
inline std::vector<uint8_t> pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(v.data() + i, &z, std::min<size_t>(8, n - i));
  }
  return v;
}

/// Compares without printing megabytes on failure.
inline ::testing::AssertionResult same_bytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != expected " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return ::testing::AssertionFailure() << "first difference at byte " << i << " of " << got.size();
  return ::testing::AssertionSuccess();
}

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// Polls `pred` (yielding between calls) until it holds or `timeout` passes; returns its last value.
template <class Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= give_up) return pred();
    std::this_thread::yield();
  }
  return true;
}

/// True when thread `tid` of this process is asleep on a condition variable: its current system
/// call (/proc/self/task/<tid>/syscall) is futex with FUTEX_WAIT_BITSET, which glibc uses for
/// condition variable waits and not for mutexes (FUTEX_WAIT). SocketTransport::recv sleeps on a
/// condition variable only to wait for a message, so a thread that called recv and is seen here is
/// blocked in it. False if the file cannot be read.
inline bool asleep_on_condition(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long nr = -1;
  unsigned long addr = 0, op = 0;
  if (!(f >> nr >> std::hex >> addr >> op)) return false;
  return nr == SYS_futex && (op & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET;
}

// peer_timeout 3 s by default so that a loaded 2-core machine does not fail a live peer; the
// dead-peer tests use 1 s and assert the detection time against it.
inline engine::SocketTransportConfig cfg_for(int rank, int world = 2,
                                             std::chrono::milliseconds peer_timeout = std::chrono::milliseconds(3000)) {
  engine::SocketTransportConfig c;
  c.rank = rank;
  c.world = world;
  c.listen_host = "127.0.0.1";
  c.heartbeat = std::chrono::milliseconds(100);
  c.peer_timeout = peer_timeout;
  c.recv_timeout = std::chrono::milliseconds(10000);
  c.connect_timeout = std::chrono::milliseconds(3000);
  return c;
}

/// Two endpoints in this process, started with each other's addresses.
struct Pair {
  std::unique_ptr<engine::SocketTransport> a, b;
  explicit Pair(engine::SocketTransportConfig ca, engine::SocketTransportConfig cb) {
    a = std::make_unique<engine::SocketTransport>(ca);
    b = std::make_unique<engine::SocketTransport>(cb);
    std::vector<engine::SocketEndpoint> eps{{"127.0.0.1", a->port()}, {"127.0.0.1", b->port()}};
    a->start(eps);
    b->start(eps);
  }
  explicit Pair(int streams = 1) : Pair(with_streams(0, streams), with_streams(1, streams)) {}
  static engine::SocketTransportConfig with_streams(int rank, int s) {
    auto c = cfg_for(rank);
    c.streams = s;
    return c;
  }
};

/// A blocking TCP client that speaks frames directly (to inject what a correct transport never sends).
class RawPeer {
 public:
  explicit RawPeer(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    int one = 1;
    if (fd_ >= 0) setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~RawPeer() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool write_all(std::span<const uint8_t> b) {
    size_t off = 0;
    while (off < b.size()) {
      ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  bool send_frame(engine::sockframe::FrameHeader h, std::span<const uint8_t> payload) {
    h.seq = seq_++;
    return write_all(engine::sockframe::make_frame(h, payload));
  }
  /// Next frame (header + payload), or nullopt on EOF / timeout / undecodable header.
  std::optional<std::pair<engine::sockframe::FrameHeader, std::vector<uint8_t>>> read_frame(int timeout_ms = 3000) {
    uint8_t hdr[engine::sockframe::kHeaderBytes];
    if (!read_exact(hdr, sizeof(hdr), timeout_ms)) return std::nullopt;
    engine::sockframe::FrameHeader h;
    if (engine::sockframe::decode_header(hdr, &h)) return std::nullopt;
    std::vector<uint8_t> p(h.payload_len);
    if (!read_exact(p.data(), p.size(), timeout_ms)) return std::nullopt;
    return std::make_pair(h, std::move(p));
  }
  /// HELLO as rank `from` to rank `to` without a secret; returns the reply's type.
  std::optional<engine::sockframe::FrameType> hello(uint32_t from, uint32_t to, uint32_t world) {
    engine::sockframe::Hello h;
    h.from_rank = from;
    h.to_rank = to;
    h.world = world;
    engine::sockframe::FrameHeader fh;
    fh.type = engine::sockframe::FrameType::kHello;
    if (!send_frame(fh, engine::sockframe::encode_hello(h))) return std::nullopt;
    auto r = read_frame();
    if (!r) return std::nullopt;
    return r->first.type;
  }
  /// HELLO as rank `from` claiming a secret, then a RESPONSE with a made-up proof (what someone
  /// without the secret can do). Returns the type of the reply to each: CHALLENGE, then REJECT.
  std::pair<std::optional<engine::sockframe::FrameType>, std::optional<engine::sockframe::FrameType>>
  wrong_secret(uint32_t from, uint32_t to, uint32_t world) {
    engine::sockframe::Hello h;
    h.from_rank = from;
    h.to_rank = to;
    h.world = world;
    h.flags = engine::sockframe::kHelloFlagAuth;
    engine::sockframe::FrameHeader fh;
    fh.type = engine::sockframe::FrameType::kHello;
    if (!send_frame(fh, engine::sockframe::encode_hello(h))) return {};
    auto ch = read_frame();
    if (!ch) return {};
    engine::sockframe::FrameHeader rh;
    rh.type = engine::sockframe::FrameType::kResponse;
    const std::vector<uint8_t> fake(sizeof(engine::sockframe::Mac), 0x5a);
    if (!send_frame(rh, fake)) return {ch->first.type, std::nullopt};
    auto rj = read_frame();
    return {ch->first.type, rj ? std::optional(rj->first.type) : std::nullopt};
  }
  uint64_t next_seq() const { return seq_; }
  void set_seq(uint64_t s) { seq_ = s; }

 private:
  bool read_exact(uint8_t* p, size_t n, int timeout_ms) {
    size_t off = 0;
    while (off < n) {
      pollfd pf{fd_, POLLIN, 0};
      if (::poll(&pf, 1, timeout_ms) <= 0) return false;
      ssize_t k = ::recv(fd_, p + off, n - off, 0);
      if (k <= 0) return false;
      off += static_cast<size_t>(k);
    }
    return true;
  }
  int fd_ = -1;
  uint64_t seq_ = 0;
};

/// A child process running peer_main (posix_spawn: the test process has threads); its stdout
/// and stderr come back through a pipe.
struct PeerProcess {
  common::ChildProcess process;
  uint16_t port = 0;
  int out_fd = -1;

  static PeerProcess spawn(const std::vector<std::string>& args) {
    PeerProcess p;
    common::ChildOptions opt;
    opt.argv = {GEOTB_SOCKET_PEER_MAIN};
    opt.argv.insert(opt.argv.end(), args.begin(), args.end());
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return p;
    opt.output_fd = fds[1];
    try {
      p.process = common::ChildProcess(opt);
    } catch (const common::SpawnError&) {
      ::close(fds[0]);
      ::close(fds[1]);
      return p;
    }
    ::close(fds[1]);
    p.out_fd = fds[0];
    // The child prints "PORT <n>\n" once it listens.
    std::string line;
    char ch;
    pollfd pf{p.out_fd, POLLIN, 0};
    while (line.find('\n') == std::string::npos && ::poll(&pf, 1, 10000) > 0 && ::read(p.out_fd, &ch, 1) == 1)
      line += ch;
    if (line.rfind("PORT ", 0) == 0) p.port = static_cast<uint16_t>(std::stoi(line.substr(5)));
    return p;
  }
  pid_t pid() const { return process.pid(); }
  /// Exit status (or 128 + signal); waits at most timeout_ms, then SIGKILLs. -1 if none.
  int wait(int timeout_ms = 10000) {
    if (process.pid() <= 0) return -1;
    if (const auto st = process.wait_for(std::chrono::milliseconds(timeout_ms))) return *st;
    process.signal(SIGKILL);
    return process.wait();
  }
  ~PeerProcess() {
    if (out_fd >= 0) ::close(out_fd);
  }
  PeerProcess() = default;
  PeerProcess(PeerProcess&& o) noexcept : process(std::move(o.process)), port(o.port), out_fd(o.out_fd) { o.out_fd = -1; }
  PeerProcess& operator=(PeerProcess&& o) noexcept {
    std::swap(process, o.process);
    std::swap(port, o.port);
    std::swap(out_fd, o.out_fd);
    return *this;
  }
};

/// Rank 0 in this process (peer_timeout 1 s), rank 1 a peer_main child in `mode`; both started.
struct WithChild {
  std::unique_ptr<engine::SocketTransport> t;
  PeerProcess child;
  explicit WithChild(const char* mode, const std::function<void(engine::SocketTransportConfig&)>& edit = {}) {
    auto c = cfg_for(0, 2, std::chrono::milliseconds(1000));
    if (edit) edit(c);
    t = std::make_unique<engine::SocketTransport>(c);
    child = PeerProcess::spawn({"--mode", mode, "--peer-port", std::to_string(t->port()), "--heartbeat-ms",
                                "100", "--peer-timeout-ms", "1000"});
    if (child.port != 0) t->start({{"127.0.0.1", t->port()}, {"127.0.0.1", child.port}});
  }
};

}  // namespace geotb::test
