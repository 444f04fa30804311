// geotb-wanperf: throughput of the socket transport between two processes or hosts, with 1 vs N
// parallel TCP streams.
//
//   geotb-wanperf server --port P [--bind ADDR] [--secret S] [--once]
//   geotb-wanperf client --host H --port P [--streams 1,4] [--bytes 256MiB] [--msg-bytes 16MiB]
//                        [--rounds 3] [--secret S] [--sockbuf BYTES] [--chunk BYTES] [--json FILE]
//
// One session per stream count: the client (rank 1) tells the server (rank 0) its port; the
// server connects back and says "ready"; the client waits until all its streams are open, then
// per round queues --bytes as messages of --msg-bytes (built before the clock starts) and stops
// the clock when the server's acknowledgement of the last byte arrives.
// Metric: goodput = payload bits / (first send -> ack received), in Mbit/s (10^6 bit/s). It
// includes one extra one-way delay for the ack (plus the last message's reassembly), so on a
// WAN use --bytes >> rate x RTT. The first round also includes TCP slow start. Each stream count
// reports the rounds, the median and the median's ratio to the first stream count's median
// (the reference measured in the same run). A human table goes to stderr, one JSON object to
// stdout (or --json FILE).
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/cli_units.h"
#include "engine/transport/socket/socket_transport.h"

namespace {

using namespace geotb::engine;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kTagHello = 1, kTagReady = 2, kTagData = 3, kTagAck = 4, kTagBye = 5;

struct Hello {
  uint64_t client_port = 0, rounds = 0, bytes = 0, msg_bytes = 0;
};

std::vector<uint8_t> pack(std::initializer_list<uint64_t> v) {
  std::vector<uint8_t> b(8 * v.size());
  size_t i = 0;
  for (uint64_t x : v) std::memcpy(b.data() + 8 * i++, &x, 8);
  return b;
}
uint64_t unpack(const std::vector<uint8_t>& b, size_t i) {
  uint64_t x = 0;
  if (b.size() >= 8 * (i + 1)) std::memcpy(&x, b.data() + 8 * i, 8);
  return x;
}

std::string read_file_line(const char* path) {
  std::ifstream f(path);
  std::string l;
  std::getline(f, l);
  return l;
}

SocketTransportConfig base_config(int rank, const std::string& secret, uint64_t sockbuf, uint64_t chunk) {
  SocketTransportConfig c;
  c.rank = rank;
  c.world = 2;
  c.secret = secret;
  c.sockbuf_bytes = sockbuf;
  if (chunk) c.chunk_bytes = chunk;
  c.recv_timeout = std::chrono::milliseconds(600000);
  c.peer_timeout = std::chrono::milliseconds(10000);
  c.heartbeat = std::chrono::milliseconds(500);
  return c;
}

int run_server(const std::string& bind, uint16_t port, const std::string& secret, bool once) {
  for (;;) {
    auto cfg = base_config(0, secret, 0, 0);
    cfg.listen_host = bind;
    cfg.listen_port = port;
    cfg.streams = 1;  // only acks flow back
    SocketTransport t(cfg);
    std::fprintf(stderr, "geotb-wanperf server: listening on %s:%u\n", bind.c_str(), t.port());
    try {
      auto h = t.recv(1, kTagHello);
      Hello hello{unpack(h, 0), unpack(h, 1), unpack(h, 2), unpack(h, 3)};
      const std::string client = t.peer_host(1);
      std::vector<SocketEndpoint> eps(2);
      eps[1] = {client, static_cast<uint16_t>(hello.client_port)};
      t.start(eps);
      t.send(1, kTagReady, {});
      const uint64_t msgs = hello.msg_bytes ? (hello.bytes + hello.msg_bytes - 1) / hello.msg_bytes : 0;
      for (uint64_t r = 0; r < hello.rounds; ++r) {
        uint64_t got = 0;
        for (uint64_t m = 0; m < msgs; ++m) got += t.recv(1, kTagData).size();
        t.send(1, kTagAck, pack({got}));
      }
      t.recv(1, kTagBye);
      const auto s = t.stats();
      std::fprintf(stderr, "geotb-wanperf server: session from %s done: %llu payload bytes, %llu frames\n",
                   client.c_str(), static_cast<unsigned long long>(s.payload_bytes_received),
                   static_cast<unsigned long long>(s.frames_received));
    } catch (const TransportError& e) {
      std::fprintf(stderr, "geotb-wanperf server: session failed: %s\n", e.what());
      if (once) return 1;
    }
    t.close();
    if (once) return 0;
  }
}

struct Result {
  int streams = 0;
  int effective_streams = 0;
  size_t sockbuf = 0;
  std::vector<double> mbps;
  double median = 0;
};

Result run_session(const std::string& host, uint16_t port, const std::string& listen, int streams, uint64_t bytes,
                   uint64_t msg_bytes, int rounds, const std::string& secret, uint64_t sockbuf, uint64_t chunk,
                   double rate_bps, double rtt_s) {
  auto cfg = base_config(1, secret, sockbuf, chunk);
  cfg.listen_host = listen;
  cfg.streams = streams;
  cfg.link_rate_bps = rate_bps;
  cfg.link_rtt_s = rtt_s;
  cfg.connect_timeout = std::chrono::milliseconds(10000);
  SocketTransport t(cfg);
  t.start({{host, port}, {"", 0}});
  t.send(0, kTagHello, pack({t.port(), static_cast<uint64_t>(rounds), bytes, msg_bytes}));
  t.recv(0, kTagReady);
  if (!t.await_streams(0, std::chrono::milliseconds(10000)))
    throw TransportError("not all " + std::to_string(t.streams()) + " streams opened within 10 s");
  Result res;
  res.streams = streams;
  res.effective_streams = t.streams();
  res.sockbuf = t.sockbuf_bytes();
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::vector<uint8_t>> msgs;
    for (uint64_t off = 0; off < bytes; off += msg_bytes) {
      std::vector<uint8_t> m(std::min(msg_bytes, bytes - off));
      for (size_t i = 0; i < m.size(); i += 4096) m[i] = static_cast<uint8_t>(i >> 12);
      msgs.push_back(std::move(m));
    }
    const auto t0 = Clock::now();
    for (auto& m : msgs) t.send(0, kTagData, std::move(m));
    const uint64_t got = unpack(t.recv(0, kTagAck), 0);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (got != bytes)
      throw TransportError("server acknowledged " + std::to_string(got) + " of " + std::to_string(bytes) + " bytes");
    res.mbps.push_back(static_cast<double>(bytes) * 8 / s / 1e6);
  }
  t.send(0, kTagBye, {});
  t.flush(std::chrono::milliseconds(5000));
  t.close();
  auto sorted = res.mbps;
  std::sort(sorted.begin(), sorted.end());
  res.median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"geotb-wanperf: socket transport throughput, 1 vs N TCP streams"};
  app.require_subcommand(1);
  std::string secret, bind = "0.0.0.0", host, listen = "0.0.0.0", streams_list = "1,4", json_path;
  uint64_t bytes = 256 << 20, msg_bytes = 16 << 20, sockbuf = 0, chunk = 0;
  uint16_t port = 0;
  bool once = false;
  int rounds = 3;
  double rate_bps = 0;
  std::chrono::duration<double> rtt{0};
  auto* srv = app.add_subcommand("server", "accept client sessions (one at a time)");
  srv->add_option("--port", port, "TCP port to listen on")->required();
  srv->add_option("--bind", bind, "address to bind (default 0.0.0.0)");
  srv->add_option("--secret", secret, "shared secret (HMAC-SHA256 handshake)");
  srv->add_flag("--once", once, "exit after one session");
  auto* cli = app.add_subcommand("client", "run sessions against a server and print Mbit/s");
  cli->add_option("--host", host, "server address")->required();
  cli->add_option("--port", port, "server port")->required();
  cli->add_option("--streams", streams_list,
                  "comma-separated stream counts, one session each (default 1,4); 0 = derived from --rate/--rtt");
  geotb::common::add_bandwidth_option(*cli, "--rate", rate_bps, "link rate for --streams 0 (e.g. 1Gbps)");
  geotb::common::add_duration_option(*cli, "--rtt", rtt, "link round-trip time for --streams 0 (e.g. 30ms)");
  geotb::common::add_bytes_option(*cli, "--bytes", bytes, "payload per round (e.g. 256MiB)");
  geotb::common::add_bytes_option(*cli, "--msg-bytes", msg_bytes, "message size the payload is cut into (e.g. 16MiB)");
  cli->add_option("--rounds", rounds, "timed rounds per stream count (default 3)");
  cli->add_option("--secret", secret, "shared secret (HMAC-SHA256 handshake)");
  cli->add_option("--listen", listen, "client's bind address for the server's ack connection (default 0.0.0.0)");
  geotb::common::add_bytes_option(*cli, "--sockbuf", sockbuf, "SO_SNDBUF/SO_RCVBUF request per connection; 0 = autotuning");
  geotb::common::add_bytes_option(*cli, "--chunk", chunk, "striping chunk (frame payload); 0 = transport default");
  cli->add_option("--json", json_path, "write the JSON result here instead of stdout");
  CLI11_PARSE(app, argc, argv);

  try {
    if (srv->parsed()) return run_server(bind, port, secret, once);

    if (bytes == 0 || msg_bytes == 0 || rounds < 1) {
      std::fprintf(stderr, "geotb-wanperf: --bytes, --msg-bytes and --rounds must be positive\n");
      return 2;
    }
    std::vector<int> counts;
    std::stringstream ss(streams_list);
    for (std::string x; std::getline(ss, x, ',');) counts.push_back(std::stoi(x));
    std::vector<Result> results;
    for (int n : counts) {
      std::fprintf(stderr, "geotb-wanperf: %d stream(s), %d x %.1f MiB in %.1f MiB messages ...\n", n, rounds,
                   bytes / 1048576.0, msg_bytes / 1048576.0);
      results.push_back(
          run_session(host, port, listen, n, bytes, msg_bytes, rounds, secret, sockbuf, chunk, rate_bps, rtt.count()));
      // The server reopens its listener between sessions.
      usleep(200000);
    }
    std::fprintf(stderr, "%8s %12s %12s %14s  rounds (Mbit/s)\n", "streams", "median", "max", "x first");
    nlohmann::json j;
    j["tool"] = "geotb-wanperf";
    j["json_schema_version"] = 1;
    j["argv"] = std::vector<std::string>(argv, argv + argc);
    j["metric"] = "goodput Mbit/s = payload bits / (first send -> server ack received) / 1e6";
    j["host"] = host;
    j["port"] = port;
    j["bytes"] = bytes;
    j["msg_bytes"] = msg_bytes;
    j["rounds"] = rounds;
    j["link_rate_bps"] = rate_bps;
    j["link_rtt_s"] = rtt.count();
    j["secret"] = !secret.empty();
    utsname u{};
    uname(&u);
    j["client_host"] = {{"hostname", u.nodename}, {"kernel", u.release},
                        {"tcp_wmem", read_file_line("/proc/sys/net/ipv4/tcp_wmem")},
                        {"tcp_rmem", read_file_line("/proc/sys/net/ipv4/tcp_rmem")},
                        {"wmem_max", read_file_line("/proc/sys/net/core/wmem_max")},
                        {"rmem_max", read_file_line("/proc/sys/net/core/rmem_max")}};
    for (const auto& r : results) {
      const double ratio = results.front().median > 0 ? r.median / results.front().median : 0;
      double mx = *std::max_element(r.mbps.begin(), r.mbps.end());
      std::string rs;
      for (double m : r.mbps) rs += " " + std::to_string(static_cast<long long>(m + 0.5));
      std::fprintf(stderr, "%8s %12.0f %12.0f %14.2f %s\n",
                   (r.streams == 0 ? "0->" + std::to_string(r.effective_streams) : std::to_string(r.streams)).c_str(),
                   r.median, mx, ratio, rs.c_str());
      j["results"].push_back({{"streams", r.streams},
                              {"effective_streams", r.effective_streams},
                              {"sockbuf_bytes", r.sockbuf},
                              {"mbps", r.mbps},
                              {"median_mbps", r.median},
                              {"max_mbps", mx},
                              {"median_ratio_to_first", ratio}});
    }
    if (json_path.empty()) {
      std::printf("%s\n", j.dump().c_str());
    } else {
      geotb::common::write_file_atomically(json_path, j.dump(2) + "\n");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "geotb-wanperf: error: %s\n", e.what());
    return 1;
  }
}
