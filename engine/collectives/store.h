// The key-value store the ranks of a run meet through (a c10d Store: HashStore for the threads of
// one process, TCPStore across processes, rank 0 serving it as torchrun does). It carries the
// Gloo groups' rendezvous, the transport addresses, start/end barriers and the replica check.
// Opaque here to keep libtorch out (collectives/c10d_store.cc implements it).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace geotb::engine {

/// A store operation that failed: the server is unreachable or a key did not appear in time.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StoreHandle;

/// A store shared by the threads of one process (c10d::HashStore).
std::shared_ptr<StoreHandle> make_inprocess_store();

struct TcpStoreConfig {
  std::string host = "127.0.0.1";  ///< the server's address (MASTER_ADDR)
  uint16_t port = 29500;           ///< the server's TCP port (MASTER_PORT)
  bool server = false;             ///< this process serves the store (rank 0); it listens on `host`
                                   ///< when that is a numeric IPv4 address, else on every address
  std::chrono::milliseconds timeout{30000};  ///< connecting, and every blocking get/wait
};

/// Connects to (or, with cfg.server, starts) a c10d::TCPStore. Clients retry connecting until
/// cfg.timeout. Throws StoreError.
std::shared_ptr<StoreHandle> make_tcp_store(const TcpStoreConfig& cfg);

/// Throw StoreError on failure; store_get blocks until the key exists (up to the store's timeout).
void store_set(StoreHandle& s, const std::string& key, const std::vector<uint8_t>& value);
std::vector<uint8_t> store_get(StoreHandle& s, const std::string& key);
int64_t store_add(StoreHandle& s, const std::string& key, int64_t delta);
/// Returns when `members` callers have called it with the same key (one use per key).
void store_barrier(StoreHandle& s, const std::string& key, int members);

/// A value kept as text (an address, a decimal count or instant), and read back.
inline std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string string_of(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

}  // namespace geotb::engine
