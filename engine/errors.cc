#include "engine/errors.h"

#include <array>
#include <utility>

#include "engine/collectives/intra_dc.h"
#include "engine/collectives/store.h"
#include "engine/data/fashion_mnist.h"
#include "engine/transport/socket/socket_transport.h"  // PeerDeadError, AuthError, FrameError (header-only types)
#include "engine/transport/transport.h"

namespace geotb::engine {

namespace {

constexpr std::array<std::pair<ErrorKind, std::string_view>, 8> kNames = {{
    {ErrorKind::kPeerDead, "PeerDeadError"},
    {ErrorKind::kAuth, "AuthError"},
    {ErrorKind::kFrame, "FrameError"},
    {ErrorKind::kTransport, "TransportError"},
    {ErrorKind::kCollective, "CollectiveError"},
    {ErrorKind::kStore, "StoreError"},
    {ErrorKind::kConfig, "ConfigError"},
    {ErrorKind::kOther, "Error"},
}};

template <typename T>
bool is(const std::exception& e) {
  return dynamic_cast<const T*>(&e) != nullptr;
}

}  // namespace

std::string_view error_kind_name(ErrorKind k) {
  for (const auto& [kind, name] : kNames)
    if (kind == k) return name;
  return "Error";
}

std::optional<ErrorKind> parse_error_kind(std::string_view name) {
  for (const auto& [kind, n] : kNames)
    if (n == name) return kind;
  return std::nullopt;
}

int exit_code(ErrorKind k) {
  switch (k) {
    case ErrorKind::kConfig:
      return 2;
    case ErrorKind::kOther:
      return 1;
    default:
      return 3;
  }
}

ErrorKind error_kind(const std::exception& e) {
  if (is<PeerDeadError>(e)) return ErrorKind::kPeerDead;
  if (is<AuthError>(e)) return ErrorKind::kAuth;
  if (is<FrameError>(e)) return ErrorKind::kFrame;
  if (is<TransportError>(e)) return ErrorKind::kTransport;
  if (is<CollectiveError>(e)) return ErrorKind::kCollective;
  if (is<StoreError>(e)) return ErrorKind::kStore;
  if (is<ConfigError>(e) || is<std::invalid_argument>(e) || is<DataError>(e)) return ErrorKind::kConfig;
  return ErrorKind::kOther;
}

}  // namespace geotb::engine
