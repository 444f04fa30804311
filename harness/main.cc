// geotb: the command line of the geo-distributed training testbed.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "harness/cmd_calibrate.h"
#include "harness/cmd_check.h"
#include "harness/cmd_compare.h"
#include "harness/cmd_run.h"
#include "harness/cmd_store.h"
#include "harness/cmd_worker.h"
#ifdef GEOTB_HAVE_NET
#include "harness/net_commands.h"
#endif

namespace {

int run_geotb(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  const int rc = run_geotb(argc, argv);
#ifdef GEOTB_TORCH_WHEEL
  // Built against a PyPI wheel's libtorch: on Ubuntu 24.04 (an H200 machine, torch 2.11.0+cu130)
  // libtorch_cpu's own static destructor (TorchLibraryInit deregistering its operators) aborts with
  // "free(): invalid pointer" in std::locale's destructor once main has returned, whatever geotb
  // did. Everything geotb writes is written and closed by now: flush the streams and leave without
  // running the libraries' destructors.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
#endif
  return rc;
}

namespace {

int run_geotb(int argc, char** argv) {
  // One OpenMP/BLAS thread per worker thread: the engine runs many workers in one process, and
  // oversubscribed OpenMP pools slow everything down. Must be set before OpenMP starts.
  setenv("OMP_NUM_THREADS", "1", 0);
  std::vector<std::string> args(argv, argv + argc);
  CLI::App app{"geotb: train across emulated data centers and compare synchronisation strategies"};
  app.require_subcommand(1);
  geotb::harness::register_run_command(app, args);
  geotb::harness::register_worker_command(app);
  geotb::harness::register_store_command(app);
  geotb::harness::register_compare_command(app);
  geotb::harness::register_check_command(app);
  geotb::harness::register_calibrate_command(app);
#ifdef GEOTB_HAVE_NET
  register_net_command(app);
  register_fidelity_command(app);
  register_exec_command(app, args);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; every usage error exits 2 like a bad scenario.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace
