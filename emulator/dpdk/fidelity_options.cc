#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "common/atomic_file.h"
#include "emulator/dpdk/fidelity.h"
#include "emulator/stats/verdict_tally.h"

namespace geotb::emu {

void add_fidelity_options(CLI::App& cmd, FidelityOptions& o) {
  cmd.add_option("--prefix", o.prefix, "namespace name prefix")->capture_default_str();
  cmd.add_option("--emulate-bin", o.emulate_bin, "geotb-emulate path (default: next to this binary)");
  cmd.add_option("--iperf-seconds", o.iperf_seconds, "seconds per iperf3 run (measured part)")->capture_default_str();
  cmd.add_option("--iperf-omit", o.iperf_omit_seconds, "seconds of slow start before the measured part (iperf3 -O)")
      ->capture_default_str();
  cmd.add_option("--throughput-samples", o.throughput_samples,
                 "adjacent (io-forward, delay-only) pairs of TCP runs; the verdict is the median pair ratio")
      ->capture_default_str();
  cmd.add_option("--ping-count", o.ping_count, "echo requests per ping run")->capture_default_str();
  cmd.add_option("--rt-priority", o.rt_priority,
                 "SCHED_FIFO priority of the data plane (0 = normal scheduling; default: 0, busy polling, on a shielded "
                 "CPU, else 50)");
  cmd.add_option("--tool-nice", o.tool_nice, "nice of the traffic tools and of this session's autogroup (negative: ahead of other work on their CPUs)")
      ->capture_default_str();
  cmd.add_option("--tcp-cc", o.tcp_cc, "TCP congestion control of the iperf3 runs (\"\" = the namespace default)")
      ->capture_default_str();
  cmd.add_flag("--check", o.check, "exit 1 unless every verdict holds (the fidelity suite)");
  cmd.add_flag("--no-tbf", o.no_tbf, "skip the Linux tbf reference");
  cmd.add_flag("--no-gilbert", o.no_gilbert, "skip the Gilbert-Elliott run");
  cmd.add_flag("--no-delay-only", o.no_delay_only, "skip the delay-only run");
  cmd.add_flag("--no-pin", o.no_pin, "do not pin the data plane to a CPU of its own (default: the last allowed CPU)");
  cmd.add_flag("--no-shield", o.no_shield,
               "leave other processes on the data plane's CPU (default: moved off it during each run where the host "
               "permits)");
  cmd.add_option("--repeat", o.repeat, "run the suite this many times and print each verdict's pass count")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
}

FidelityConfig fidelity_config(const FidelityOptions& o, const NetTopology& topo, const std::string& emulate_bin) {
  FidelityConfig fc;
  fc.topo = topo;
  fc.topo.pin_emulator = !o.no_pin;
  fc.topo.shield_cpu = !o.no_shield;
  fc.emulate_bin = emulate_bin;
  // rfind gives npos without a '/', and npos + 1 == 0: then plain "geotb-udpgen", from PATH.
  fc.udpgen_bin = emulate_bin.substr(0, emulate_bin.rfind('/') + 1) + "geotb-udpgen";
  fc.tool_nice = o.tool_nice;
  fc.iperf_time = std::chrono::seconds{o.iperf_seconds};
  fc.iperf_omit = std::chrono::seconds{o.iperf_omit_seconds};
  fc.throughput_samples = o.throughput_samples;
  fc.ping_count = o.ping_count;
  fc.rt_priority = o.rt_priority;
  fc.run_tbf = !o.no_tbf;
  fc.run_gilbert = !o.no_gilbert;
  fc.run_delay_only = !o.no_delay_only;
  fc.tcp_cc = o.tcp_cc;
  return fc;
}

std::vector<std::string> failed_verdicts(const nlohmann::json& report) {
  std::vector<std::string> failed;
  for (const auto& [name, v] : report.at("verdicts").items())
    if (v.is_boolean() && !v.get<bool>()) failed.push_back(name);
  return failed;
}


namespace {
// A run whose data planes lost 1 % or more of their CPU to the hypervisor (steal time): said
// beside its verdicts, since the stall, lateness and rate verdicts then measure the host.
std::string steal_note(const nlohmann::json& report) {
  const nlohmann::json* st = report.contains("stalls") ? &report["stalls"] : nullptr;
  if (!st || !st->contains("hypervisor_steal_share") || !(*st)["hypervisor_steal_share"].is_number()) return "";
  const double share = (*st)["hypervisor_steal_share"].get<double>();
  if (share < 0.01) return "";
  char buf[160];
  snprintf(buf, sizeof buf, " [the hypervisor took %.1f %% of the data planes' CPU (steal %.0f ms)]", 100 * share,
           (*st)["hypervisor_steal_ms"].get<double>());
  return buf;
}

// "dir/x.json" + "-3" -> "dir/x-3.json"; no extension: appended.
std::string with_suffix(const std::string& path, const std::string& suffix) {
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}
}  // namespace

int fidelity_command(const FidelityOptions& o, const FidelityConfig& fc, const std::string& out,
                     const std::function<void(nlohmann::json&)>& decorate) {
  using nlohmann::json;
  // The report's folder first: a run of minutes must not end unable to write what it measured.
  if (!out.empty()) {
    const std::filesystem::path dir = std::filesystem::path(out).parent_path();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("--out " + out + ": cannot create " + dir.string() + ": " + ec.message());
  }
  if (o.repeat <= 1) {
    json rep = run_fidelity(fc);
    decorate(rep);
    if (out.empty()) {
      std::cout << rep.dump(2) << "\n";
    } else {
      common::write_file_atomically(out, rep.dump(2) + "\n");
      std::cout << rep["verdicts"].dump(2) << "\nreport: " << out << "\n";
    }
    const auto failed = failed_verdicts(rep);
    if (!failed.empty()) fprintf(stderr, "fidelity: verdict %s is false%s\n", failed.front().c_str(), steal_note(rep).c_str());
    return o.check && !failed.empty() ? 1 : 0;
  }
  const std::string base = out.empty() ? "fidelity-run.json" : out;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<std::pair<std::string, bool>>> runs;
  int shared_runs = 0;  // runs during which another data plane ran
  json summary_runs = json::array();
  for (int k = 1; k <= o.repeat; ++k) {
    const auto r0 = std::chrono::steady_clock::now();
    std::vector<std::pair<std::string, bool>> verdicts;
    json line{{"run", k}};
    try {
      json rep = run_fidelity(fc);
      decorate(rep);
      const std::string path = with_suffix(base, "-" + std::to_string(k));
      common::write_file_atomically(path, rep.dump(2) + "\n");
      for (const auto& [name, v] : rep["verdicts"].items())
        if (v.is_boolean()) verdicts.emplace_back(name, v.get<bool>());
      line["report"] = path;
      line["verdicts"] = rep["verdicts"];
      const auto failed = failed_verdicts(rep);
      std::string f;
      for (const auto& n : failed) f += (f.empty() ? "" : ", ") + n;
      const double shared_s = rep["host"].value("foreign_emulator_seconds", 0.0);
      if (rep["host"].value("foreign_emulators_seen", 0) > 0) ++shared_runs;
      line["hypervisor_steal_share"] = rep["stalls"].value("hypervisor_steal_share", json(nullptr));
      printf("run %d/%d (%.0f s): %s; report %s%s%s\n", k, o.repeat,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count(),
             failed.empty() ? "every verdict held" : ("failed: " + f).c_str(), path.c_str(),
             rep["host"].value("foreign_emulators_seen", 0) > 0
                 ? (" [another geotb-emulate ran for " + std::to_string(static_cast<int>(shared_s)) + " s: CPU shared]").c_str()
                 : "",
             steal_note(rep).c_str());
    } catch (const std::exception& e) {
      line["error"] = e.what();
      printf("run %d/%d: error: %s\n", k, o.repeat, e.what());
    }
    fflush(stdout);
    runs.push_back(std::move(verdicts));
    summary_runs.push_back(std::move(line));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<VerdictCount> tally = tally_verdicts(runs);
  json counts = json::object();
  bool all = true;
  printf("pass counts over %d runs (%.0f s, %.0f s a run; %d with another data plane running):\n", o.repeat, secs,
         secs / o.repeat, shared_runs);
  for (const VerdictCount& v : tally) {
    printf("  %-34s %d/%d\n", v.name.c_str(), v.passed, v.runs);
    counts[v.name] = {{"passed", v.passed}, {"runs", v.runs}};
    all = all && v.passed == v.runs;
  }
  for (const json& r : summary_runs) all = all && !r.contains("error");
  const std::string path = with_suffix(base, "-repeat");
  common::write_file_atomically(path, json{{"schema", "geotb-fidelity-repeat/1"}, {"repeat", o.repeat}, {"seconds", secs},
                                           {"runs_with_cpu_shared", shared_runs}, {"pass_counts", counts}, {"runs", summary_runs}}
                                              .dump(2) + "\n");
  printf("pass counts: %s\n", path.c_str());
  return o.check && !all ? 1 : 0;
}

}  // namespace geotb::emu
