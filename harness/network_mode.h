// The network modes (scenario "network", `geotb run --net`; docs/guide/network-modes.md): what
// each one is, as properties the scenario's rules and the report read. How each mode runs a
// strategy is in harness/modes/<mode>.cc. Code outside these files asks the properties, never
// which mode it is.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace geotb::harness {

/// How a run's ranks run and talk.
enum class NetworkMode {
  kEmbedded,  ///< threads in one process over the in-process WAN model (virtual or wall clock)
  kProcess,   ///< one OS process per rank on loopback (wall clock)
  kDpdk,      ///< one process per rank in per-DC namespaces behind the DPDK emulator (root)
};

/// Data centers per scenario: up to kMaxDatacenters in the embedded mode, kMaxProcessDatacenters in
/// the process and dpdk modes (one network namespace and /24 each).
inline constexpr size_t kMaxDatacenters = 64;
inline constexpr size_t kMaxProcessDatacenters = 16;

struct ModeTraits {
  NetworkMode mode;
  const char* name;  ///< "embedded", "process" or "dpdk": the scenario's and the report's spelling
  /// Every rank is a thread of `geotb run`, over the in-process WAN model: the virtual clock (the
  /// default there), represented models, estimates, `--seeds` and accelerators run here only.
  /// Otherwise one OS process per rank reads the scenario itself, on the wall clock.
  bool in_process;
  size_t max_datacenters;
};

/// The traits of `m` (a table: one entry per mode).
const ModeTraits& traits(NetworkMode m);
/// "embedded", "process" or "dpdk".
const char* to_string(NetworkMode m);
/// The mode `name` spells, or nothing.
std::optional<NetworkMode> parse_network_mode(std::string_view name);

}  // namespace geotb::harness
