#include "engine/transport/emulated.h"

#include <string>

namespace geotb::engine {

void EmulatedTransport::send(int dst, uint64_t tag, std::vector<uint8_t> bytes) {
  try {
    fabric_.send(rank_, dst, tag, std::move(bytes));
  } catch (const emu::FabricError& e) {
    throw TransportError(e.what());
  }
}

std::vector<uint8_t> EmulatedTransport::recv(int src, uint64_t tag) {
  auto m = fabric_.recv(rank_, src, tag, timeout_);
  if (!m) {
    if (fabric_.closed())
      throw TransportClosed("rank " + std::to_string(rank_) + ": transport closed while waiting for rank " +
                            std::to_string(src) + " (tag " + std::to_string(tag) + ")");
    throw TransportError("rank " + std::to_string(rank_) + ": no message from rank " + std::to_string(src) +
                         " (tag " + std::to_string(tag) + ") within " +
                         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count()) +
                         " ms, or the transport was closed");
  }
  return std::move(*m);
}

}  // namespace geotb::engine
