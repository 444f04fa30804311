// c10d stores behind the opaque StoreHandle (store.h).
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <optional>

#include "engine/collectives/c10d_store_impl.h"
#include "engine/collectives/listen_guard.h"

namespace geotb::engine {

std::shared_ptr<StoreHandle> make_inprocess_store() {
  auto h = std::make_shared<StoreHandle>();
  h->store = c10::make_intrusive<::c10d::HashStore>();
  return h;
}

std::shared_ptr<StoreHandle> make_tcp_store(const TcpStoreConfig& cfg) {
  ::c10d::TCPStoreOptions o;
  o.port = cfg.port;
  o.isServer = cfg.server;
  o.waitWorkers = false;  // the run's own barriers decide when everyone is there
  o.timeout = cfg.timeout;
  auto h = std::make_shared<StoreHandle>();
  try {
    // libtorch's server listens on every address; kept on the run's own address (listen_guard.h)
    // unless that is a host name or 0.0.0.0, which the user chose.
    std::optional<WildcardBindGuard> guard;
    if (cfg.server && bindable_ipv4(cfg.host)) guard.emplace(cfg.port, cfg.host);
    h->store = c10::make_intrusive<::c10d::TCPStore>(cfg.host, o);
  } catch (const std::exception& e) {
    throw StoreError(std::string(cfg.server ? "serving" : "connecting to") + " the store at " + cfg.host + ":" +
                     std::to_string(cfg.port) + ": " + e.what());
  }
  return h;
}

void store_set(StoreHandle& s, const std::string& key, const std::vector<uint8_t>& value) {
  try {
    s.store->set(key, value);
  } catch (const std::exception& e) {
    throw StoreError("store set \"" + key + "\": " + c10_message(e));
  }
}

std::vector<uint8_t> store_get(StoreHandle& s, const std::string& key) {
  try {
    return s.store->get(key);
  } catch (const std::exception& e) {
    throw StoreError("store get \"" + key + "\" (waited up to " + std::to_string(s.store->getTimeout().count()) +
                     " ms): " + c10_message(e));
  }
}

int64_t store_add(StoreHandle& s, const std::string& key, int64_t delta) {
  try {
    return s.store->add(key, delta);
  } catch (const std::exception& e) {
    throw StoreError("store add \"" + key + "\": " + c10_message(e));
  }
}

void store_barrier(StoreHandle& s, const std::string& key, int members) {
  // The last to arrive publishes "<key>/done"; everyone waits for it (store timeout).
  if (store_add(s, key, 1) == members) store_set(s, key + "/done", {1});
  try {
    store_get(s, key + "/done");
  } catch (const StoreError& e) {
    int64_t arrived = -1;
    try {
      arrived = store_add(s, key, 0);
    } catch (const StoreError&) {
    }
    throw StoreError("barrier \"" + key + "\": " + (arrived >= 0 ? std::to_string(arrived) : std::string("?")) + " of " +
                     std::to_string(members) + " arrived: " + e.what());
  }
}

}  // namespace geotb::engine
