// One SocketTransport endpoint in its own process, for the tests that kill or stop a peer.
// Prints "PORT <n>" on stdout once listening, then:
//   --mode hello   send "hello" (tag 1) to rank 0, then idle until killed
//   --mode idle    never send (rank 0 only hears it on the connections rank 0 opens)
//   --mode echo    recv a count n (tag 1, 8 bytes LE), echo n messages from tag 2 back on tag 3,
//                  wait for tag 4, close, exit 0
//   --mode close   send "bye" (tag 1) to rank 0, close() (GOODBYE), exit 0
// Exit status: 0 ok, 1 a transport error (message on stderr), 2 usage.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "engine/transport/socket/socket_transport.h"

int main(int argc, char** argv) {
  using namespace geotb::engine;
  SocketTransportConfig cfg;
  cfg.listen_host = "127.0.0.1";
  cfg.rank = 1;
  cfg.world = 2;
  cfg.streams = 1;
  uint16_t peer_port = 0;
  std::string mode = "hello";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--rank") cfg.rank = std::stoi(v);
    else if (k == "--world") cfg.world = std::stoi(v);
    else if (k == "--peer-port") peer_port = static_cast<uint16_t>(std::stoi(v));
    else if (k == "--streams") cfg.streams = std::stoi(v);
    else if (k == "--heartbeat-ms") cfg.heartbeat = std::chrono::milliseconds(std::stoi(v));
    else if (k == "--peer-timeout-ms") cfg.peer_timeout = std::chrono::milliseconds(std::stoi(v));
    else if (k == "--secret") cfg.secret = v;
    else if (k == "--mode") mode = v;
    else {
      std::fprintf(stderr, "peer_main: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  try {
    SocketTransport t(cfg);
    std::printf("PORT %u\n", t.port());
    std::fflush(stdout);
    std::vector<SocketEndpoint> eps(cfg.world);
    eps[0] = {"127.0.0.1", peer_port};
    t.start(eps);
    if (mode == "hello") {
      t.send(0, 1, {'h', 'e', 'l', 'l', 'o'});
      for (;;) pause();
    } else if (mode == "idle") {
      for (;;) pause();
    } else if (mode == "echo") {
      auto c = t.recv(0, 1);
      uint64_t n = 0;
      std::memcpy(&n, c.data(), std::min<size_t>(8, c.size()));
      for (uint64_t i = 0; i < n; ++i) t.send(0, 3, t.recv(0, 2));
      t.recv(0, 4);
      t.close();
    } else if (mode == "close") {
      t.send(0, 1, {'b', 'y', 'e'});
      t.close();
    } else {
      std::fprintf(stderr, "peer_main: unknown mode %s\n", mode.c_str());
      return 2;
    }
  } catch (const TransportError& e) {
    std::fprintf(stderr, "peer_main: %s\n", e.what());
    return 1;
  }
  return 0;
}
