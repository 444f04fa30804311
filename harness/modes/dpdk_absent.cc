#include <stdexcept>

#include "harness/modes/mode.h"

// The dpdk mode in a geotb built without DPDK (harness/meson.build picks this file instead of
// dpdk.cc): it says so before anything starts.

namespace geotb::harness {

namespace {

class AbsentDpdkMode final : public Mode {
 public:
  NetworkMode id() const override { return NetworkMode::kDpdk; }
  std::string unavailable() const override {
    return "network \"dpdk\": this geotb was built without DPDK (libdpdk-dev)";
  }
  int run(ModeRun&) const override { throw std::logic_error("the dpdk mode run without DPDK"); }
};

}  // namespace

const Mode& dpdk_mode() {
  static const AbsentDpdkMode mode;
  return mode;
}

}  // namespace geotb::harness
