#include "harness/modes/mode.h"

#include <array>

namespace geotb::harness {

const Mode& mode_of(NetworkMode m) {
  // In NetworkMode's order (each mode's id() is checked against its place).
  static const std::array<const Mode*, 3> modes = {&embedded_mode(), &process_mode(), &dpdk_mode()};
  const Mode& mode = *modes.at(static_cast<size_t>(m));
  if (mode.id() != m) throw std::logic_error("mode_of: the modes are out of NetworkMode's order");
  return mode;
}

}  // namespace geotb::harness
