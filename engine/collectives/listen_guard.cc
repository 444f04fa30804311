#include "engine/collectives/listen_guard.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>

namespace geotb::engine {
namespace {
std::atomic<uint32_t> g_port{0};     // 0: no guard
std::atomic<uint32_t> g_addr{0};     // network byte order

using BindFn = int (*)(int, const sockaddr*, socklen_t);
BindFn real_bind() {
  static const BindFn fn = reinterpret_cast<BindFn>(dlsym(RTLD_NEXT, "bind"));
  return fn;
}

// A numeric IPv4 address other than 0.0.0.0, in network byte order.
bool parse_bindable(const std::string& host, in_addr* a) {
  return inet_pton(AF_INET, host.c_str(), a) == 1 && a->s_addr != htonl(INADDR_ANY);
}
}  // namespace

bool bindable_ipv4(const std::string& host) {
  in_addr a{};
  return parse_bindable(host, &a);
}

WildcardBindGuard::WildcardBindGuard(uint16_t port, const std::string& ipv4) {
  in_addr a{};
  if (port == 0 || !parse_bindable(ipv4, &a))
    throw std::invalid_argument("WildcardBindGuard: needs a port and a numeric IPv4 address, got \"" + ipv4 + "\"");
  if (!real_bind()) throw std::runtime_error("WildcardBindGuard: libc's bind() not found (dlsym)");
  g_addr = a.s_addr;
  g_port = port;
}

WildcardBindGuard::~WildcardBindGuard() { g_port = 0; }

}  // namespace geotb::engine

// The interposed bind(): see listen_guard.h.
extern "C" int bind(int fd, const sockaddr* addr, socklen_t len) {
  using namespace geotb::engine;
  const uint32_t port = g_port.load();
  if (port != 0 && addr != nullptr) {
    if (addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
      const auto* a6 = reinterpret_cast<const sockaddr_in6*>(addr);
      if (ntohs(a6->sin6_port) == port && IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr)) {
        errno = EADDRNOTAVAIL;
        return -1;
      }
    } else if (addr->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
      sockaddr_in a4;
      __builtin_memcpy(&a4, addr, sizeof(a4));
      if (ntohs(a4.sin_port) == port && a4.sin_addr.s_addr == htonl(INADDR_ANY)) {
        a4.sin_addr.s_addr = g_addr.load();
        return real_bind()(fd, reinterpret_cast<const sockaddr*>(&a4), sizeof(a4));
      }
    }
  }
  const BindFn f = real_bind();
  if (f == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return f(fd, addr, len);
}
