// Names and the factory of the in-process TCP model's congestion control algorithms.
#include "emulator/inproc/congestion_control.h"

namespace geotb::emu {

const char* cc_name(CcAlgorithm a) { return a == CcAlgorithm::kReno ? "reno" : "cubic"; }

bool parse_cc(const std::string& name, CcAlgorithm& out) {
  if (name == "reno") {
    out = CcAlgorithm::kReno;
    return true;
  }
  if (name == "cubic") {
    out = CcAlgorithm::kCubic;
    return true;
  }
  return false;
}

std::unique_ptr<CongestionControl> make_congestion_control(CcAlgorithm a) {
  return a == CcAlgorithm::kReno ? make_reno() : make_cubic();
}

}  // namespace geotb::emu
