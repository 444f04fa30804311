// StoreHandle's definition, shared by the two c10d translation units (c10d_store.cc,
// gloo_intra_dc.cc). Includes c10d headers: not for torch-free code.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/collectives/store.h"

namespace gloo::transport {
class Device;
}

namespace geotb::engine {

struct StoreHandle {
  c10::intrusive_ptr<::c10d::Store> store;
  // One Gloo TCP device (one event-loop thread) shared by every group of the process: a device
  // per group would add a loop thread per worker, and the workers already outnumber the cores.
  std::mutex mu;
  std::map<std::string, std::shared_ptr<::gloo::transport::Device>> devices;  // "if:<name>" / "host:<addr>"
};

/// A c10::Error's what() carries a C++ backtrace after its first line, the message: that line.
inline std::string c10_message(const std::exception& e) {
  std::string s = e.what();
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace geotb::engine
