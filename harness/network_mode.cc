#include "harness/network_mode.h"

#include <array>

namespace geotb::harness {

namespace {

// In the enum's order (checked below).
constexpr std::array<ModeTraits, 3> kModes = {{
    {NetworkMode::kEmbedded, "embedded", true, kMaxDatacenters},
    {NetworkMode::kProcess, "process", false, kMaxProcessDatacenters},
    {NetworkMode::kDpdk, "dpdk", false, kMaxProcessDatacenters},
}};
static_assert(kModes[static_cast<size_t>(NetworkMode::kEmbedded)].mode == NetworkMode::kEmbedded &&
                  kModes[static_cast<size_t>(NetworkMode::kProcess)].mode == NetworkMode::kProcess &&
                  kModes[static_cast<size_t>(NetworkMode::kDpdk)].mode == NetworkMode::kDpdk,
              "kModes is indexed by NetworkMode");

}  // namespace

const ModeTraits& traits(NetworkMode m) { return kModes.at(static_cast<size_t>(m)); }

const char* to_string(NetworkMode m) { return traits(m).name; }

std::optional<NetworkMode> parse_network_mode(std::string_view name) {
  for (const ModeTraits& t : kModes)
    if (name == t.name) return t.mode;
  return std::nullopt;
}

}  // namespace geotb::harness
