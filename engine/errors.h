// The kinds of failure a worker can end with, as one type. `geotb worker` classifies the exception
// that ended it (error_kind), writes the kind's name into its rank file and exits with the kind's
// code; the coordinator (geotb run --net process|dpdk) reads the name back into the kind.
#pragma once

#include <exception>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace geotb::engine {

enum class ErrorKind {
  kPeerDead,    ///< PeerDeadError: a peer went silent, reset its connection or was unreachable
  kAuth,        ///< AuthError: the connection handshake was refused
  kFrame,       ///< FrameError: a corrupt frame arrived
  kTransport,   ///< any other TransportError (timeouts, transport closed, ...)
  kCollective,  ///< CollectiveError: the intra-DC c10d Gloo group failed
  kStore,       ///< StoreError: the rendezvous store failed
  kConfig,      ///< ConfigError, std::invalid_argument, DataError: a bad scenario, flag, environment or data
  kOther,       ///< anything else
};

/// A bad configuration: scenario, command-line flag or environment variable (the message names
/// the field and the value). The harness's scenario errors derive from it.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The kind's name as rank files spell it: "PeerDeadError", "AuthError", "FrameError",
/// "TransportError", "CollectiveError", "StoreError", "ConfigError", "Error" (kOther).
std::string_view error_kind_name(ErrorKind k);
/// The kind named `name` (error_kind_name's inverse); nullopt for any other string.
std::optional<ErrorKind> parse_error_kind(std::string_view name);
/// geotb worker's exit status for a failure of this kind: 2 configuration, 1 other, 3 the network
/// (a peer, the transport, a collective or the store).
int exit_code(ErrorKind k);
/// The kind of an exception, by its most derived known type (PeerDeadError before TransportError).
ErrorKind error_kind(const std::exception& e);

}  // namespace geotb::engine
