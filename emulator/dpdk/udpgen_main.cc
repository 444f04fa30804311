// geotb-udpgen: a paced UDP sender and a counting receiver for the fidelity suite.
// iperf3's UDP sender needs a whole CPU at 1 Gbit/s on this machine; sendmmsg/recvmmsg in bursts
// of 32 need a fraction, and the receiver sees every sequence number, so it also measures loss
// bursts end to end (Gilbert-Elliott burst length on real packets).
//
//   geotb-udpgen recv --bind 10.77.1.1 --port 9000 [--idle 1s] [--max 60s]   (prints JSON at the end)
//   geotb-udpgen send --bind 10.77.0.1 --dst 10.77.1.1 --port 9000 --rate 1Gbps --seconds 5
// --rate is the wire rate: each datagram of --size payload bytes costs size + 66 bytes on the
// wire (UDP 8, IPv4 20, Ethernet 14 + FCS 4 + preamble 8 + IFG 12).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli_units.h"

namespace {

constexpr int kBatch = 32;
constexpr uint32_t kWireExtra = 66;

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

sockaddr_in addr(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) throw std::invalid_argument("bad IPv4 address \"" + ip + "\"");
  return a;
}

int udp_socket(const std::string& bind_ip, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + strerror(errno));
  const int buf = 16 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);  // root; falls back silently
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
  sockaddr_in a = addr(bind_ip, port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error(std::string("bind: ") + strerror(errno));
  return fd;
}

int do_send(const std::string& bind_ip, const std::string& dst, uint16_t port, double rate_bps, double seconds, uint32_t size) {
  const int fd = udp_socket(bind_ip, 0);
  sockaddr_in to = addr(dst, port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) throw std::runtime_error(std::string("connect: ") + strerror(errno));
  std::vector<std::vector<char>> bufs(kBatch, std::vector<char>(size, 0));
  iovec iov[kBatch];
  mmsghdr msgs[kBatch];
  memset(msgs, 0, sizeof msgs);
  for (int i = 0; i < kBatch; ++i) {
    iov[i] = {bufs[static_cast<size_t>(i)].data(), size};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  const double ns_per_pkt = static_cast<double>(size + kWireExtra) * 8 * 1e9 / rate_bps;
  const uint64_t t0 = now_ns(), end = t0 + static_cast<uint64_t>(seconds * 1e9);
  uint64_t seq = 0, errors = 0, skipped = 0;
  for (uint64_t t = t0; t < end; t = now_ns()) {
    uint64_t due = static_cast<uint64_t>(static_cast<double>(t - t0) / ns_per_pkt) + 1;
    // After a stall (shared CPU), do not catch up with a line-rate burst of more than 20 ms of
    // traffic (below the 30 ms bandwidth-delay queue the fidelity runs use): the rest is skipped
    // (counted), so a stall does not turn into a queue overflow the link model never caused.
    const uint64_t cap = static_cast<uint64_t>(20e6 / ns_per_pkt) + kBatch;
    if (due > seq + skipped + cap) skipped = due - seq - cap;
    due -= std::min(due, skipped);
    if (due <= seq) {
      const timespec ts{0, 20000};
      nanosleep(&ts, nullptr);
      continue;
    }
    const int n = static_cast<int>(std::min<uint64_t>(due - seq, kBatch));
    for (int i = 0; i < n; ++i) {
      const uint64_t s = seq + static_cast<uint64_t>(i);
      memcpy(bufs[static_cast<size_t>(i)].data(), &s, sizeof s);
    }
    const int sent = sendmmsg(fd, msgs, static_cast<unsigned>(n), 0);
    if (sent < 0) {
      ++errors;  // ENOBUFS etc.: the datagrams are not sent; try again
      continue;
    }
    seq += static_cast<uint64_t>(sent);
  }
  const double dur = static_cast<double>(now_ns() - t0) / 1e9;
  nlohmann::json j{{"sent", seq}, {"seconds", dur}, {"offered_wire_bps", static_cast<double>(seq) * (size + kWireExtra) * 8 / dur},
                   {"payload_bytes", size}, {"send_errors", errors}, {"skipped_after_stalls", skipped}};
  std::cout << j.dump() << std::endl;
  close(fd);
  return 0;
}

int do_recv(const std::string& bind_ip, uint16_t port, double idle_s, double max_s, double bin_s) {
  const int fd = udp_socket(bind_ip, port);
  timeval tv{0, 100000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // Kernel receive timestamps (CLOCK_REALTIME): the receiver's own scheduling delays do not
  // distort the arrival times the rates are computed from.
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  std::vector<std::vector<char>> bufs(kBatch, std::vector<char>(65536));
  std::vector<std::vector<char>> ctrl(kBatch, std::vector<char>(256));
  iovec iov[kBatch];
  mmsghdr msgs[kBatch];
  memset(msgs, 0, sizeof msgs);
  auto arm = [&] {
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {bufs[static_cast<size_t>(i)].data(), bufs[static_cast<size_t>(i)].size()};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_control = ctrl[static_cast<size_t>(i)].data();
      msgs[i].msg_hdr.msg_controllen = ctrl[static_cast<size_t>(i)].size();
    }
  };
  auto kernel_ns = [](msghdr& h, uint64_t fallback) -> uint64_t {
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        memcpy(&ts, CMSG_DATA(c), sizeof ts);
        return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
      }
    return fallback;
  };
  std::cout << "{\"listening\": true}" << std::endl;  // the fidelity runner waits for this line
  const uint64_t t_start = now_ns();
  uint64_t first = 0, last = 0, received = 0, bytes = 0, reordered = 0, gaps = 0, gap_total = 0;
  uint64_t last_wall = 0;   // monotonic time of the last recvmmsg that returned data (idle exit)
  int64_t last_seq = -1;
  std::vector<uint64_t> bins;  // datagrams per bin_s since the first datagram
  uint32_t size = 0;
  while (true) {
    const uint64_t t = now_ns();
    if (received == 0 && static_cast<double>(t - t_start) / 1e9 > max_s) break;
    if (received > 0 && (static_cast<double>(t - last_wall) / 1e9 > idle_s || static_cast<double>(t - t_start) / 1e9 > max_s)) break;
    arm();
    const int n = recvmmsg(fd, msgs, kBatch, 0, nullptr);
    if (n <= 0) continue;
    last_wall = now_ns();
    for (int i = 0; i < n; ++i) {
      timespec rt;
      clock_gettime(CLOCK_REALTIME, &rt);
      const uint64_t at = kernel_ns(msgs[i].msg_hdr, static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + static_cast<uint64_t>(rt.tv_nsec));
      if (received == 0) first = at;
      last = std::max(last, at);
      const uint32_t len = msgs[i].msg_len;
      if (len < 8) continue;
      uint64_t s;
      memcpy(&s, bufs[static_cast<size_t>(i)].data(), sizeof s);
      ++received;
      bytes += len;
      size = len;
      if (static_cast<int64_t>(s) > last_seq + 1) {
        ++gaps;  // a run of consecutive lost datagrams (no reordering on the path)
        gap_total += s - static_cast<uint64_t>(last_seq + 1);
      } else if (static_cast<int64_t>(s) <= last_seq) {
        ++reordered;
      }
      if (static_cast<int64_t>(s) > last_seq) last_seq = static_cast<int64_t>(s);
      const size_t b = at > first ? static_cast<size_t>(static_cast<double>(at - first) / 1e9 / bin_s) : 0;
      if (bins.size() <= b) bins.resize(b + 1, 0);
      ++bins[b];
    }
  }
  nlohmann::json j{{"timestamps", "kernel SO_TIMESTAMPNS"}, {"received", received}, {"bytes", bytes}, {"highest_seq", last_seq}, {"loss_runs", gaps},
                   {"lost_inside", gap_total}, {"reordered", reordered}, {"payload_bytes", size},
                   {"seconds", static_cast<double>(last - first) / 1e9}, {"bin_s", bin_s}, {"bins", bins}};
  std::cout << j.dump() << std::endl;
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"geotb-udpgen: paced UDP sender / counting receiver"};
  app.require_subcommand(1);
  using namespace std::chrono_literals;
  std::string bind_ip, dst;
  double rate_bps = 1e9;
  std::chrono::nanoseconds idle = 1s, max = 60s, bin = 100ms;
  uint16_t port = 9000;
  double seconds = 5;
  uint32_t size = 1472;
  auto* s = app.add_subcommand("send", "send paced datagrams carrying sequence numbers");
  s->add_option("--bind", bind_ip, "source address")->required();
  s->add_option("--dst", dst, "destination address")->required();
  s->add_option("--port", port, "destination port");
  geotb::common::add_bandwidth_option(*s, "--rate", rate_bps, "wire rate (payload + 66 bytes per datagram)");
  s->add_option("--seconds", seconds, "how long to send");
  s->add_option("--size", size, "payload bytes per datagram (>= 8)");
  auto* r = app.add_subcommand("recv", "count datagrams; JSON when idle for --idle");
  r->add_option("--bind", bind_ip, "address to listen on")->required();
  r->add_option("--port", port, "port");
  geotb::common::add_duration_option(*r, "--idle", idle, "stop after this long without a datagram");
  geotb::common::add_duration_option(*r, "--max", max, "stop after this long in any case");
  geotb::common::add_duration_option(*r, "--bin", bin, "rate bins");
  CLI11_PARSE(app, argc, argv);
  try {
    if (s->parsed()) {
      if (size < 8) throw std::invalid_argument("--size " + std::to_string(size) + ": must be >= 8");
      return do_send(bind_ip, dst, port, rate_bps, seconds, size);
    }
    return do_recv(bind_ip, port, std::chrono::duration<double>(idle).count(), std::chrono::duration<double>(max).count(),
                   std::chrono::duration<double>(bin).count());
  } catch (const std::exception& e) {
    std::cerr << "geotb-udpgen: " << e.what() << "\n";
    return 2;
  }
}
