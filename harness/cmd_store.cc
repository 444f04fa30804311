#include "harness/cmd_store.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "engine/collectives/store.h"

namespace geotb::harness {

namespace {

struct StoreArgs {
  uint16_t port = 29500;
  std::string host = "127.0.0.1";
};

int run_store(const StoreArgs& a) {
  // Served until SIGTERM or SIGINT (the coordinator stops it after the run).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the store's threads start: they inherit it
  engine::TcpStoreConfig c;
  c.host = a.host;
  c.port = a.port;
  c.server = true;
  std::shared_ptr<engine::StoreHandle> store;
  try {
    store = engine::make_tcp_store(c);
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb store: {}\n", e.what());
    return 1;
  }
  fmt::print("geotb store: serving on port {}\n", a.port);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  fmt::print("geotb store: stopped by signal {}\n", sig);
  return 0;
}

}  // namespace

void register_store_command(CLI::App& app) {
  auto args = std::make_shared<StoreArgs>();
  CLI::App* cmd = app.add_subcommand("store",
                                     "Serve a c10d TCPStore until SIGTERM (geotb run starts one when the timeline "
                                     "kills rank 0, which otherwise serves it)");
  cmd->add_option("--port", args->port, "TCP port (every address)")->capture_default_str();
  cmd->add_option("--host", args->host, "The address the workers reach it at")->capture_default_str();
  cmd->callback([args]() {
    if (const int rc = run_store(*args); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace geotb::harness
