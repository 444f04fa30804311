// Keeps a listener that a library opens on every address (c10d's TCPStore server: libtorch 1.13
// binds "::" or 0.0.0.0 and takes no address to bind) on one address instead.
//
// While a WildcardBindGuard is alive, a bind() in this process of a wildcard address to its port
// is changed: an IPv4 0.0.0.0 becomes the guard's address, an IPv6 :: fails with EADDRNOTAVAIL
// (the library then falls back to IPv4, as c10d's SocketListenOp does). Every other bind() is
// passed through untouched. It works by defining bind() in the geotb executable, which the
// dynamic linker resolves before libc's for libtorch too (as a malloc replacement is resolved);
// the real bind() is found with dlsym(RTLD_NEXT).
#pragma once

#include <cstdint>
#include <string>

namespace geotb::engine {

class WildcardBindGuard {
 public:
  /// `ipv4`: a numeric IPv4 address of this host (e.g. 127.0.0.1). Throws std::invalid_argument
  /// for anything else. One guard at a time per process.
  WildcardBindGuard(uint16_t port, const std::string& ipv4);
  ~WildcardBindGuard();
  WildcardBindGuard(const WildcardBindGuard&) = delete;
  WildcardBindGuard& operator=(const WildcardBindGuard&) = delete;
};

/// True if `host` is a numeric IPv4 address other than 0.0.0.0 (an address a guard can bind).
bool bindable_ipv4(const std::string& host);

}  // namespace geotb::engine
