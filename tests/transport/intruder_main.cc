// A stranger at a rank's transport port, for the process-mode intruder test
// (tests/e2e/intruder_process.py): without the run's secret it tries what it can.
//   socket_intruder HOST PORT TO_RANK WORLD
// Three connections, each claiming rank 0 (or 1 when TO_RANK is 0):
//   1. HELLO with the secret flag, then a RESPONSE with a made-up proof: expects CHALLENGE, REJECT;
//   2. HELLO without a secret: expects REJECT;
//   3. 200 bytes of garbage: expects the connection closed without a frame.
// Prints one line per attempt; exit 0 if every attempt was refused as expected, 1 otherwise,
// 2 on usage or when the port cannot be reached.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/transport/test_util.h"

namespace fr = geotb::engine::sockframe;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: socket_intruder HOST PORT TO_RANK WORLD (HOST: 127.0.0.1 only)\n");
    return 2;
  }
  if (std::string(argv[1]) != "127.0.0.1") {
    std::fprintf(stderr, "socket_intruder: only 127.0.0.1 is supported\n");
    return 2;
  }
  const auto port = static_cast<uint16_t>(std::atoi(argv[2]));
  const auto to = static_cast<uint32_t>(std::atoi(argv[3]));
  const auto world = static_cast<uint32_t>(std::atoi(argv[4]));
  const uint32_t claim = to == 0 ? 1 : 0;
  int bad = 0;
  {
    geotb::test::RawPeer raw(port);
    if (!raw.ok()) {
      std::fprintf(stderr, "socket_intruder: cannot connect to port %u\n", port);
      return 2;
    }
    auto [challenge, verdict] = raw.wrong_secret(claim, to, world);
    const bool ok = challenge == fr::FrameType::kChallenge && verdict == fr::FrameType::kReject;
    std::printf("wrong secret: %s\n", ok ? "challenged, then refused" : "NOT refused as expected");
    bad += !ok;
  }
  {
    geotb::test::RawPeer raw(port);
    const bool ok = raw.hello(claim, to, world) == fr::FrameType::kReject;
    std::printf("no secret: %s\n", ok ? "refused" : "NOT refused as expected");
    bad += !ok;
  }
  {
    geotb::test::RawPeer raw(port);
    std::vector<uint8_t> junk(200);
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 37 + 11);
    const bool ok = raw.write_all(junk) && !raw.read_frame().has_value();
    std::printf("garbage: %s\n", ok ? "closed" : "NOT closed as expected");
    bad += !ok;
  }
  return bad ? 1 : 0;
}
