#include "emulator/dpdk/fidelity.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/child_process.h"
#include "emulator/dpdk/link_spec_parse.h"
#include "emulator/dpdk/proc.h"
#include "emulator/stats/batch_means.h"
#include "emulator/stats/binomial.h"
#include "emulator/stats/loss_check.h"
#include "emulator/stats/paired_ratio.h"
#include "emulator/stats/ping_rtt.h"
#include "common/stalls.h"

namespace geotb::emu {

using nlohmann::json;

namespace {

// Saturating UDP datagrams fill the MTU: payload = MTU - 28 (IPv4 20 + UDP 8).
uint32_t udp_payload(uint32_t mtu) { return mtu - 28; }
// Wire bytes of a UDP datagram beyond its payload: UDP 8 + IPv4 20 + Ethernet 14 + FCS 4 +
// preamble 8 + IFG 12.
constexpr double kUdpWireOverhead = 66.0;
// TCP payload per wire byte: MSS = MTU - 52 (IPv4 20 + TCP 20 + timestamps 12).
double tcp_efficiency(uint32_t mtu) { return (mtu - 52.0) / (mtu + 38.0); }

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Ctx {
  Ctx(const FidelityConfig& f, std::string t) : cfg(f), tag(std::move(t)) {}
  const FidelityConfig& cfg;
  NetLayout L;
  std::string tag;  // unique per process
  int run = 0;
  int iperf_calls = 0;
  int foreign_emulators = 0;  // most geotb-emulate processes not ours seen at once
  // Every data plane of the run: their stalls summed, their run time, and per data plane a line;
  // and the same for the paced ones only (every data plane but the delay-only capacity runs,
  // which are saturated by design: the stall verdict's).
  StallCounter stalls, paced_stalls;
  uint64_t dataplane_run_ns = 0, paced_run_ns = 0;
  uint64_t waiting_for_cpu_ns = 0;  // the pollers' run_delay (preempted while runnable), every data plane
  uint64_t steal_ns = 0;            // the hypervisor's steal of the pollers' CPU, every data plane that knew it
  bool steal_known = false;
  json stalls_by_run = json::array();
  json scheduling;  // the first data plane's (they all run alike)
  bool told_scheduling = false;
};

// Other data planes running now (another replay on this machine): two real-time pollers on one
// CPU ruin both measurements (together they hit the kernel's RT limit, 950 ms per second, and are
// throttled for the rest of each second: ~50 ms stalls), so the report says when it happened.
// Ours are the geotb-emulate processes whose EAL --file-prefix starts with `tag`.
int count_foreign_emulators(const std::string& tag) {
  int n = 0;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      const long pid = strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      const std::string dir = "/proc/" + std::string(e->d_name);
      if (slurp(dir + "/comm").rfind("geotb-emulate", 0) != 0) continue;
      const std::string cmdline = slurp(dir + "/cmdline");  // arguments separated by NUL
      // A process that has exited and is not yet reaped (a zombie: ours, between its end and
      // waitpid) keeps its comm but has no arguments any more: it runs nothing.
      if (cmdline.empty()) continue;
      if (cmdline.find(std::string("--file-prefix=") + tag) == std::string::npos) ++n;
    }
    closedir(d);
  }
  return n;
}

// Samples count_foreign_emulators every 250 ms while the suite runs (from construction to
// destruction): the most seen at once and the seconds during which any ran.
class ForeignWatch {
 public:
  explicit ForeignWatch(std::string tag) : tag_(std::move(tag)), thread_([this] { loop(); }) {}
  ~ForeignWatch() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  ForeignWatch(const ForeignWatch&) = delete;
  ForeignWatch& operator=(const ForeignWatch&) = delete;
  int max_seen() const { return max_.load(); }
  double seconds_seen() const { return static_cast<double>(samples_.load()) * kPeriod.count() / 1000.0; }

 private:
  static constexpr std::chrono::milliseconds kPeriod{250};
  void loop() {
    std::unique_lock<std::mutex> l(m_);
    while (!cv_.wait_for(l, kPeriod, [this] { return stop_; })) {
      const int n = count_foreign_emulators(tag_);
      if (n > 0) ++samples_;
      if (n > max_.load()) max_.store(n);
    }
  }
  std::string tag_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<int> max_{0};
  std::atomic<int> samples_{0};
  std::thread thread_;  // last: starts after the members it uses
};

/// A program running in the background, stdout and stderr to `log_path`.
common::ChildProcess background(const std::vector<std::string>& argv, const std::string& log_path) {
  common::ChildOptions o;
  o.argv = argv;
  o.log_path = log_path;
  return common::ChildProcess(o);
}

std::string fmt_rate_arg(double bps) {
  std::ostringstream os;
  os.precision(12);
  os << bps << "bps";
  return os.str();
}

// A running geotb-emulate inside the emulator namespace.
struct Emulator {
  common::ChildProcess child;
  std::string json_path, log_path;
  bool saturating = false;  // a delay-only capacity run: unlimited offered load
};

Emulator start_emulator(Ctx& c, const std::vector<std::string>& link_args, bool io, const std::vector<std::string>& extra = {}) {
  Emulator e;
  const std::string base = c.cfg.work_dir + "/" + c.tag + "-run" + std::to_string(c.run++);
  e.json_path = base + ".json";
  e.log_path = base + ".log";
  std::vector<std::string> argv = emulator_base_command(c.L, c.cfg.emulate_bin, c.tag + std::to_string(c.run));
  for (const auto& l : link_args) { argv.push_back("--link"); argv.push_back(l); }
  if (io) argv.push_back("--io-forward");
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (const int rt = resolve_rt_priority(c.cfg.rt_priority, c.L.shield); rt > 0) {
    argv.push_back("--rt-priority");
    argv.push_back(std::to_string(rt));
  }
  argv.push_back("--stats-interval");
  argv.push_back("0s");
  argv.push_back("--json");
  argv.push_back(e.json_path);
  unlink(e.json_path.c_str());
  e.child = background(emulator_launch(c.L, argv), e.log_path);
  // Until the data plane says it runs: EAL and port setup take ~0.1-1 s, but ~20 s when another
  // real-time poller holds the CPU (then the run is marked, see count_foreign_emulators).
  for (int i = 0; i < 1200; ++i) {
    if (const std::string log = slurp(e.log_path); log.find("running") != std::string::npos) {
      c.foreign_emulators = std::max(c.foreign_emulators, count_foreign_emulators(c.tag));
      if (!c.told_scheduling) {  // once: how the data plane runs (a refused real-time priority)
        c.told_scheduling = true;
        std::istringstream lines(log);
        for (std::string line; std::getline(lines, line);)
          if (line.find("warning:") != std::string::npos || line.find("running") != std::string::npos)
            fprintf(stderr, "fidelity: %s\n", line.c_str());
      }
      return e;
    }
    if (!e.child.running()) throw std::runtime_error("geotb-emulate exited: " + slurp(e.log_path));
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  throw std::runtime_error("geotb-emulate did not start: " + slurp(e.log_path));
}

json stop_emulator(Ctx& c, Emulator& e) {
  c.foreign_emulators = std::max(c.foreign_emulators, count_foreign_emulators(c.tag));
  const int st = e.child.stop(std::chrono::milliseconds{10000});
  const std::string s = slurp(e.json_path);
  if (s.empty()) throw std::runtime_error("geotb-emulate (status " + std::to_string(st) + ") wrote no report: " + slurp(e.log_path));
  json r = json::parse(s);
  if (r.contains("stalls")) {
    const json& k = r["stalls"];
    StallCounter one;
    one.count = k["count"].get<uint64_t>();
    one.total_ns = k["total_ns"].get<uint64_t>();
    one.max_ns = k["max_iteration_ns"].get<uint64_t>();
    c.stalls.merge(one);
    c.dataplane_run_ns += k["run_ns"].get<uint64_t>();
    if (!e.saturating) {
      c.paced_stalls.merge(one);
      c.paced_run_ns += k["run_ns"].get<uint64_t>();
    }
    const uint64_t waited = r.contains("preemption") ? r["preemption"]["waiting_for_cpu_ns"].get<uint64_t>() : 0;
    c.waiting_for_cpu_ns += waited;
    json stolen = nullptr;
    if (r.contains("preemption") && r["preemption"].contains("hypervisor_steal_ns") &&
        r["preemption"]["hypervisor_steal_ns"].is_number()) {
      const uint64_t st = r["preemption"]["hypervisor_steal_ns"].get<uint64_t>();
      c.steal_ns += st;
      c.steal_known = true;
      stolen = static_cast<double>(st) / 1e6;
    }
    c.stalls_by_run.push_back({{"run", e.json_path.substr(e.json_path.rfind('-') + 1)}, {"mode", r.value("mode", "")},
                               {"count", one.count}, {"total_ms", static_cast<double>(one.total_ns) / 1e6},
                               {"max_iteration_ms", static_cast<double>(one.max_ns) / 1e6},
                               {"run_s", k["run_ns"].get<double>() / 1e9}, {"saturating", e.saturating},
                               {"waiting_for_cpu_ms", static_cast<double>(waited) / 1e6},
                               {"hypervisor_steal_ms", stolen}});
  }
  if (c.scheduling.is_null() && r.contains("scheduling")) c.scheduling = r["scheduling"];
  return r;
}

std::string link_arg(const LinkConfig& m, bool with_rate, bool with_loss, const LossConfig* loss_override) {
  LinkConfig c = m;
  if (!with_rate) c.rate_bps = 0;
  if (!with_loss) c.loss = LossConfig{};
  if (loss_override) c.loss = *loss_override;
  return "d0<>d1:" + link_spec_text(c);
}

// Traffic tools run on the CPUs the data plane does not poll on.
// With tool_nice < 0 they also win against other work on those CPUs (a shared build machine).
std::vector<std::string> tool(const Ctx& c, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"taskset", "-c", c.L.tool_cpus});
  if (c.cfg.tool_nice != 0) argv.insert(argv.begin(), {"nice", "-n", std::to_string(c.cfg.tool_nice)});
  return argv;
}

// Warm-up echoes first (ARP in both namespaces, the data plane's first frames), not counted; then
// ping_count echoes 10 ms apart, each reply's time parsed (emulator/stats/ping_rtt.h): the verdict
// uses the median, min and max are beside it, the mean only for reference.
json ping(Ctx& c) {
  const DcPlace &a = c.L.dcs[0], &b = c.L.dcs[1];
  const CmdResult w = run_cmd(in_ns(a.ns, tool(c, {"ping", "-c", "3", "-i", "0.2", "-W", "2", b.address})), std::chrono::milliseconds{10000});
  const CmdResult r = run_cmd(in_ns(a.ns, tool(c, {"ping", "-c", std::to_string(c.cfg.ping_count), "-i", "0.01", "-W", "2", "-n", b.address})),
                              std::chrono::milliseconds{60000});
  json j{{"count", c.cfg.ping_count}};
  const std::vector<double> warm = parse_ping_times_ms(w.output);
  j["warmup_ms"] = warm;
  const std::vector<double> t = parse_ping_times_ms(r.output);
  j["received"] = t.size();
  if (t.empty()) {
    j["error"] = r.output.substr(0, 2000);
    return j;
  }
  const RttSummary s = summarize_rtts(t);
  j.update({{"rtt_min_ms", s.min_ms}, {"rtt_median_ms", s.median_ms}, {"rtt_mean_ms", s.mean_ms}, {"rtt_max_ms", s.max_ms}});
  return j;
}

// iperf3 client in dcs[0] against a one-shot server in dcs[1]. Retries while the server starts.
json iperf(Ctx& c, std::vector<std::string> extra) {
  const DcPlace &a = c.L.dcs[0], &b = c.L.dcs[1];
  // A fresh port per call: a server still closing from the previous call cannot block this one.
  const int call = c.iperf_calls++;
  const std::string port = std::to_string(5201 + call);
  const std::string server_log = c.cfg.work_dir + "/" + c.tag + "-iperf" + std::to_string(call) + "-server.log";
  common::ChildProcess server = background(in_ns(b.ns, tool(c, {"iperf3", "-s", "-1", "-J", "-B", b.address, "-p", port})), server_log);
  std::vector<std::string> argv{"iperf3", "-c", b.address, "-p", port, "-B", a.address, "-J", "-t",
                                std::to_string(c.cfg.iperf_time.count()), "-O", std::to_string(c.cfg.iperf_omit.count()),
                                "--get-server-output"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  // Start the client only once the server listens (a refused first connect left iperf3 clients
  // failing repeatedly here).
  const auto t0 = std::chrono::steady_clock::now();
  bool listening = false;
  while (!listening && server.running() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds{20}) {
    listening = run_cmd(in_ns(b.ns, tool(c, {"ss", "-Htln", "sport = :" + port}))).output.find("LISTEN") != std::string::npos;
    if (!listening) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  CmdResult r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    r = run_cmd(in_ns(a.ns, tool(c, argv)), std::chrono::milliseconds{(c.cfg.iperf_time.count() + c.cfg.iperf_omit.count() + 30) * 1000});
    if (r.status == 0 || r.output.find("unable to connect") == std::string::npos || !server.running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{500});
  }
  if (r.status != 0) r.output += "\nserver log: " + slurp(server_log);
  server.stop(std::chrono::milliseconds{3000});
  json out;
  try {
    const auto brace = r.output.find('{');  // iperf3 may print warnings before its JSON
    out = json::parse(brace == std::string::npos ? r.output : r.output.substr(brace));
  } catch (...) {
    return json{{"error", r.output.substr(0, 2000)}};
  }
  if (out.contains("error")) return json{{"error", out["error"].get<std::string>() + " | server log: " + slurp(server_log).substr(0, 1000)}};
  return out;
}

json tcp(Ctx& c, int streams) {
  std::vector<std::string> extra{"-P", std::to_string(streams)};
  if (!c.cfg.tcp_cc.empty()) extra.insert(extra.end(), {"-C", c.cfg.tcp_cc});
  json r = iperf(c, extra);
  if (r.contains("error")) return r;
  const double bps = r["end"]["sum_received"]["bits_per_second"].get<double>();
  json per_s = json::array();  // receiver goodput per 1 s interval: slow start vs steady state
  if (r.contains("intervals"))
    for (const json& i : r["intervals"])
      if (!i["sum"].value("omitted", false)) per_s.push_back(std::round(i["sum"]["bits_per_second"].get<double>() / 1e6));
  return json{{"streams", streams}, {"goodput_bps", bps}, {"retransmits", r["end"]["sum_sent"].value("retransmits", 0)},
              {"congestion_control", r["end"].value("sender_tcp_congestion", c.cfg.tcp_cc)}, {"interval_mbps", per_s}};
}

// UDP with geotb-udpgen: paced sender at `wire_bps` in dcs[0] (datagrams of `payload` bytes),
// counting receiver in dcs[1] with kernel receive timestamps in 100 ms bins.
//   received_wire_bps_mean: the rate over the steady window (bins 1 .. the last whole 500 ms
//     batch before the last bin; see emulator/stats/batch_means.h) and its 95 % t interval over
//     the 500 ms batch means: one window for the figure and its interval.
//   received_wire_bps_overall: (datagrams - 1) x wire bytes x 8 / (last - first arrival): also
//     counts the start and the tail (a late straggler stretches it), so it is not the verdict.
// Loss = 1 - received/sent with a Wilson interval; loss runs (consecutive missing sequence numbers)
// give the end-to-end burst length.
json udp(Ctx& c, double wire_bps, uint32_t payload) {
  const DcPlace &a = c.L.dcs[0], &b = c.L.dcs[1];
  const std::string port = std::to_string(9000 + c.iperf_calls++);
  const double wire = payload + kUdpWireOverhead;
  const std::string rlog = c.cfg.work_dir + "/" + c.tag + "-udprecv" + port + ".json";
  common::ChildProcess recv = background(in_ns(b.ns, tool(c, {c.cfg.udpgen_bin, "recv", "--bind", b.address, "--port", port, "--idle", "1s", "--max",
                                  std::to_string(c.cfg.iperf_time.count() + 30) + "s"})),
             rlog);
  for (int i = 0; i < 200 && slurp(rlog).find("listening") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{25});
  const CmdResult s = run_cmd(in_ns(a.ns, tool(c, {c.cfg.udpgen_bin, "send", "--bind", a.address, "--dst", b.address, "--port", port,
                                                   "--rate", fmt_rate_arg(wire_bps), "--size", std::to_string(payload), "--seconds",
                                                   std::to_string(c.cfg.iperf_time.count())})),
                              std::chrono::milliseconds{(c.cfg.iperf_time.count() + 30) * 1000});
  recv.wait_for(std::chrono::milliseconds{10000});
  recv.stop(std::chrono::milliseconds{1000});
  json sj, rj;
  try {
    sj = json::parse(s.output.substr(s.output.rfind('{')));
    const std::string rs = slurp(rlog);
    rj = json::parse(rs.substr(rs.rfind('{')));
  } catch (...) {
    return json{{"error", "udpgen: " + s.output + " | " + slurp(rlog).substr(0, 1000)}};
  }
  json j{{"tool", "geotb-udpgen"}, {"payload_bytes", payload}, {"configured_offer_wire_bps", wire_bps},
         {"offered_wire_bps", sj["offered_wire_bps"]}, {"sent", sj["sent"]}, {"skipped_after_stalls", sj.value("skipped_after_stalls", 0)},
         {"received", rj["received"]}, {"loss_runs", rj["loss_runs"]}, {"lost_inside", rj["lost_inside"]},
         {"reordered", rj["reordered"]}};
  const double bin_s = rj["bin_s"].get<double>();
  const auto bins = rj["bins"].get<std::vector<uint64_t>>();
  const BatchMeans bm = batch_means(bins, bin_s, std::max<size_t>(1, static_cast<size_t>(0.5 / bin_s + 0.5)), wire * 8);
  if (bm.batches >= 2) {
    j["received_wire_bps_mean"] = bm.mean;
    j["received_wire_bps_ci95"] = {bm.ci_low, bm.ci_high};
    j["batches_used"] = bm.batches;
    j["steady_window_s"] = {static_cast<double>(bm.first_bin) * bin_s, static_cast<double>(bm.first_bin + bm.bins) * bin_s};
  }
  const double secs = rj["seconds"].get<double>();
  const uint64_t got = rj["received"].get<uint64_t>();
  if (secs > 0 && got > 1) j["received_wire_bps_overall"] = static_cast<double>(got - 1) * wire * 8 / secs;
  const uint64_t n = sj["sent"].get<uint64_t>();
  const uint64_t k = n > got ? n - got : 0;
  const auto [lo, hi] = wilson_interval(k, n);
  j["loss_rate"] = n ? static_cast<double>(k) / static_cast<double>(n) : 0.0;
  j["loss_rate_ci95"] = {lo, hi};
  const uint64_t runs = rj["loss_runs"].get<uint64_t>();
  j["mean_loss_run"] = runs ? rj["lost_inside"].get<double>() / static_cast<double>(runs) : 0.0;
  return j;
}

json link_summary(const json& em, int i) {
  const json& l = em["links"][i];
  return json{{"name", l["name"]}, {"tx", l["tx"]}, {"achieved_wire_bps", l["achieved_wire_bps"]},
              {"achieved_wire_bps_busy", l["achieved_wire_bps_busy"]}, {"busy_s", l["busy_s"]},
              {"drops", l["drops"]}, {"release_lateness_ns", l["release_lateness_ns"]},
              {"release_earliness_ns", l.value("release_earliness_ns", json::object())},
              {"loss_bursts", l["loss_bursts"]}, {"mean_loss_burst", l["mean_loss_burst"]}};
}

}  // namespace

json run_fidelity(const FidelityConfig& cfg) {
  if (cfg.topo.wan.empty()) throw std::invalid_argument("topo.wan: empty: fidelity needs the link between dcs[0] and dcs[1]");
  Ctx c(cfg, "gtbfid" + std::to_string(getpid()));
  LinkConfig m = cfg.topo.wan[0].config;
  if (m.rate_bps > 0 && m.queue_bytes == 0 && m.queue_packets == 0) {
    // Drop-tail queue of one bandwidth-delay product (RTT), so saturating UDP is dropped at the
    // queue instead of filling the mbuf pool.
    m.queue_bytes = static_cast<uint64_t>(m.rate_bps * 2 * static_cast<double>(m.delay.count()) / 1e9 / 8);
    m.queue_bytes = std::max<uint64_t>(m.queue_bytes, 64 * 1024);
  }
  json rep;
  rep["definitions"] = {
      {"mean_loss_run", "receiver: datagrams missing between received sequence numbers / number of such gaps"},
      {"rtt", "ping: count echo requests 10 ms apart after 3 warm-up echoes (ARP; not counted); rtt_median_ms (the verdict) and rtt_min_ms of the replies' times, rtt_mean_ms for reference (one slow echo moves it)"},
      {"expected_rtt_ms", "2 x configured one-way delay + io_forward base RTT (its median)"},
      {"stalls", "data plane loop iterations longer than 1 ms (from one poll to the next, less the sleep the loop asked for), summed over every data plane the run started: count, total, longest iteration; share = total / the data planes' run time; waiting_for_cpu = the pollers' run_delay (/proc/thread-self/schedstat: runnable while another task had the CPU); hypervisor_steal = the steal time of the pollers' CPU in /proc/stat over each data plane's run (a guest's vCPU not running at all, which run_delay does not see; 10 ms resolution; null where the kernel has no steal clock). Verdict: share <= 1 % over the paced data planes (stalls.paced: every one but the delay-only capacity runs, whose offered load is unlimited by design: their long iterations are the poller's own work in af_packet's send path, not a lost CPU, which waiting_for_cpu shows), since a longer stall alone could move a rate by more than the UDP verdict's 1 %"},
      {"goodput_bps", "iperf3 receiver bits/s of TCP payload over iperf_seconds, after iperf_omit_seconds of slow start (iperf3 -O)"},
      {"tcp_goodput_ceiling_bps", "rate x (MTU - 52)/(MTU + 38): TCP payload per wire byte with timestamps (1448/1538 at MTU 1500)"},
      {"received_wire_bps_mean", "geotb-udpgen receiver, kernel timestamps in 100 ms bins from the first arrival: datagrams x (payload + 66) wire bytes x 8 / time over the steady window (bin 0 and the last, partial bin left out, cut to whole 500 ms batches); the verdict uses it"},
      {"received_wire_bps_ci95", "Student t interval (exact quantile, B - 1 degrees of freedom) over the window's B 500 ms batch rates, whose mean is received_wire_bps_mean"},
      {"received_wire_bps_overall", "(datagrams - 1) x wire bytes x 8 / (last arrival - first arrival): includes the start and the tail, for reference"},
      {"achieved_wire_bps", "data plane: wire bytes (L2 + 24) sent on the link after its first frame / time from first to last frame"},
      {"achieved_wire_bps_busy", "data plane: the same over busy periods only (frames sent < 1 ms after the previous one); the UDP verdict uses it"},
      {"release_lateness_ns", "data plane: max(0, time a frame was handed to the tx ring - the release time the link model gave it), over every frame sent"},
      {"release_earliness_ns", "data plane: max(0, release time - time handed to the tx ring), over every frame sent: frames due within tx_lead_ns of a due frame leave with it (tx batching)"},
      {"tcp_congestion_control", "iperf3 -C; the sender's algorithm as iperf3 reports it"},
      {"delay_only_over_io_forward", "TCP 4-stream goodput with the configured one-way delay only (no rate limit, no loss) / plain io-forwarding: median over throughput_samples adjacent pairs (io then delay, delay then io, alternating; each a fresh data plane on the same ports) of the pair's ratio (emulator/stats/paired_ratio.h), with the sign-test interval of the pairs' median (median_ci: order statistics, coverage exact) and the pairs below 0.9; both are bound by the CPU the TCP endpoints share. A failed iperf3 run is measured again once; a pair still without both goodputs is left out (failed_pairs) and the verdict needs 2 measured pairs"},
      {"work_ns_per_frame", "data plane (forwarding_work): wall time of the poller iterations that moved frames / frames sent, at the load the TCP endpoints offered; work_ns_per_frame_delay_over_io is its median pair ratio. A diagnostic, not a capacity: the poller is never the bottleneck here, and a delayed frame is received and sent in two different iterations (io-forwarding: usually one), so at partial load the figure is higher for the delay line than at saturation"}};
  rep["configured"] = {{"rate_bps", m.rate_bps}, {"one_way_delay_ns", m.delay.count()}, {"queue_bytes", m.queue_bytes},
                       {"loss_stationary", m.loss.stationary_loss()}};
  auto loadavg = [] {
    std::ifstream f("/proc/loadavg");
    std::string s;
    std::getline(f, s);
    return s;
  };
  rep["host"] = {{"loadavg_start", loadavg()}, {"cpus", sysconf(_SC_NPROCESSORS_ONLN)}};
  // The affinity to restore at the end: read before net_up, which may shield a CPU and so narrow
  // it (restoring the narrowed one would leave the next --repeat run a single CPU).
  cpu_set_t saved, tools;
  sched_getaffinity(0, sizeof saved, &saved);
  const NetLayout L = net_up(cfg.topo);
  c.L = L;
  // Everything this process starts (ip, ping, iperf3) runs on the tool CPUs: a helper that
  // landed on the data plane's CPU would get only the gaps the SCHED_FIFO poller leaves.
  // geotb-emulate sets its own affinity (-l).
  CPU_ZERO(&tools);
  for (int i : L.tool_cpu_list) CPU_SET(i, &tools);
  sched_setaffinity(0, sizeof tools, &tools);
  struct RestoreAffinity {
    cpu_set_t s;
    ~RestoreAffinity() { sched_setaffinity(0, sizeof s, &s); }
  } restore{saved};
  // The tools' nice only orders tasks inside one autogroup (one per session, the default where
  // /proc/sys/kernel/sched_autogroup_enabled is 1): against a build in another terminal they got
  // an equal share of their CPU whatever their nice. So the nice goes to this session's
  // autogroup too (this process, the tools and the data planes it starts), restored at the end.
  struct AutogroupNice {
    std::string before;  // "/autogroup-N nice K", or "" when there is none
    explicit AutogroupNice(int nice) {
      std::ifstream f("/proc/self/autogroup");
      if (nice >= 0 || !std::getline(f, before)) return;
      std::ofstream("/proc/self/autogroup") << nice;
    }
    ~AutogroupNice() {
      const size_t at = before.rfind("nice ");
      if (at != std::string::npos) std::ofstream("/proc/self/autogroup") << before.substr(at + 5);
    }
    static std::string now() {
      std::ifstream f("/proc/self/autogroup");
      std::string s;
      std::getline(f, s);
      return s;
    }
  } autogroup{cfg.tool_nice};
  rep["host"]["autogroup"] = AutogroupNice::now();
  ForeignWatch watch(c.tag);  // on the tool CPUs too (threads inherit the affinity)
  rep["host"]["emulator_cpu"] = L.emulator_cpu;
  rep["host"]["tool_cpus"] = L.tool_cpus;
  rep["host"]["emulator_rt_priority"] = resolve_rt_priority(cfg.rt_priority, L.shield);
  rep["host"]["cpu_shield"] = to_json(L.shield);
  rep["configured"]["mtu"] = L.mtu;
  rep["configured"]["tcp_congestion_control"] = cfg.tcp_cc.empty() ? "namespace default" : cfg.tcp_cc;
  rep["configured"]["iperf_seconds"] = cfg.iperf_time.count();
  rep["configured"]["iperf_omit_seconds"] = cfg.iperf_omit.count();
  try {
    // 1. plain io forwarding
    {
      Emulator e = start_emulator(c, {}, true);
      json io;
      io["ping"] = ping(c);
      io["tcp1"] = tcp(c, 1);
      io["tcp4"] = tcp(c, 4);
      io["emulator"] = stop_emulator(c, e)["totals"];
      rep["io_forward"] = io;
    }
    // 2. Linux bridge + tbf
    if (cfg.run_tbf && m.rate_bps > 0) {
      const std::string& ns = L.emu_ns;
      json t;
      try {
        run_checked(in_ns(ns, {"ip", "link", "add", "br0", "type", "bridge"}));
        for (size_t i = 0; i < 2; ++i) {
          run_checked(in_ns(ns, {"ip", "link", "set", L.dcs[i].emu_if, "master", "br0"}));
          run_checked(in_ns(ns, {"tc", "qdisc", "add", "dev", L.dcs[i].emu_if, "root", "tbf", "rate", fmt_rate_arg(m.rate_bps) + "bit",
                                 "burst", "256kb", "latency", "50ms"}));
        }
        run_checked(in_ns(ns, {"ip", "link", "set", "br0", "up"}));
        t["tcp4"] = tcp(c, 4);
        t["udp"] = udp(c, m.rate_bps * cfg.udp_overload, udp_payload(L.mtu));
      } catch (const std::exception& ex) {
        t["error"] = ex.what();
      }
      for (size_t i = 0; i < 2; ++i) run_cmd(in_ns(ns, {"tc", "qdisc", "del", "dev", L.dcs[i].emu_if, "root"}));
      run_cmd(in_ns(ns, {"ip", "link", "del", "br0"}));
      rep["tbf"] = t;
    }
    // 3. the configured link
    {
      Emulator e = start_emulator(c, {link_arg(m, true, true, nullptr)}, false);
      json k;
      k["ping"] = ping(c);
      k["tcp1"] = tcp(c, 1);
      k["tcp4"] = tcp(c, 4);
      const json em = stop_emulator(c, e);
      k["emulator"] = {{"totals", em["totals"]}, {"accounting_ok", em["accounting_ok"]}, {"mempool", em["mempool"]},
                       {"a_to_b", link_summary(em, 0)}, {"b_to_a", link_summary(em, 1)}, {"tx_lead_ns", em.value("tx_lead_ns", 0)},
                       {"time_shares", em.value("time_shares", json::object())}, {"iteration_ns", em.value("iteration_ns", json::object())},
                       {"tx_call_ns", em.value("tx_call_ns", json::object())},
                       {"ports", em["ports"]}};
      if (m.rate_bps > 0) {  // saturating UDP alone, so the data plane's achieved rate is UDP's
        Emulator u = start_emulator(c, {link_arg(m, true, true, nullptr)}, false);
        k["udp"] = udp(c, m.rate_bps * cfg.udp_overload, udp_payload(L.mtu));
        const json eu = stop_emulator(c, u);
        k["udp"]["emulator"] = {{"accounting_ok", eu["accounting_ok"]}, {"a_to_b", link_summary(eu, 0)}};
      }
      rep["link"] = k;
    }
    // 4. delay only vs plain io forwarding: throughput_samples adjacent pairs (io, delay), then
    //    (delay, io), alternating, each a fresh data plane on the same ports. Per sample: TCP 4-stream goodput (the verdict: median
    //    of the pair ratios) and the data plane's work per frame (diagnostic).
    if (cfg.run_delay_only) {
      json d, pairs = json::array();
      for (int k = 0; k < std::max(1, cfg.throughput_samples); ++k) {
        json p;
        // Alternating order (io, delay), (delay, io), ...: a drift during the pairs favours neither.
        p["order"] = k % 2 == 0 ? "io_forward,delay_only" : "delay_only,io_forward";
        for (const bool io : {k % 2 == 0, k % 2 != 0}) {
          // A failed iperf3 run (once in a suite run: the client returned nothing after the
          // transfer) is no goodput of 0: the sample is measured again, once, on a fresh data plane.
          json t, em, failed;
          for (int attempt = 0; attempt < 2; ++attempt) {
            Emulator e = io ? start_emulator(c, {}, true) : start_emulator(c, {link_arg(m, false, false, nullptr)}, false);
            e.saturating = !io;
            t = tcp(c, 4);
            em = stop_emulator(c, e);
            if (!t.contains("error")) break;
            failed = t["error"];
          }
          const json w = em.value("forwarding_work", json::object());
          json& sample = p[io ? "io_forward" : "delay_only"];
          sample = {{"goodput_bps", t.value("goodput_bps", 0.0)}, {"retransmits", t.value("retransmits", 0)},
                    {"interval_mbps", t.value("interval_mbps", json::array())},
                    {"frames_sent", w.value("frames_sent", 0)}, {"ns_per_frame", w.value("ns_per_frame", 0.0)}};
          if (!failed.is_null()) sample["failed_attempt"] = failed;
          if (t.contains("error")) sample["error"] = t["error"];
          if (!io && k == 0) {
            d["tcp4"] = t;
            d["emulator"] = {{"accounting_ok", em["accounting_ok"]}, {"a_to_b", link_summary(em, 0)}};
          }
        }
        pairs.push_back(p);
      }
      d["pairs"] = pairs;
      // Pairs whose runs still failed are left out of the statistics (counted in the verdicts).
      std::vector<double> gi, gd, wi, wd;
      int failed_pairs = 0;
      for (const json& p : pairs) {
        if (p["io_forward"].contains("error") || p["delay_only"].contains("error")) {
          ++failed_pairs;
          continue;
        }
        gi.push_back(p["io_forward"]["goodput_bps"].get<double>());
        gd.push_back(p["delay_only"]["goodput_bps"].get<double>());
        wi.push_back(p["io_forward"]["ns_per_frame"].get<double>());
        wd.push_back(p["delay_only"]["ns_per_frame"].get<double>());
      }
      d["failed_pairs"] = failed_pairs;
      auto summary = [](const PairedRatio& r) {
        return json{{"pair_ratios", r.pair_ratios}, {"median_pair_ratio", r.median_pair_ratio}, {"min_pair_ratio", r.min_pair_ratio},
                    {"max_pair_ratio", r.max_pair_ratio}, {"ratio_of_means", r.ratio_of_means}, {"ratio_of_medians", r.ratio_of_medians},
                    {"geometric_mean", r.geometric_mean}, {"log_ratio_sd", r.log_ratio_sd}, {"confidence", r.confidence},
                    {"ci", {r.ci_low, r.ci_high}}};
      };
      try {
        json g = summary(paired_ratio(gi, gd));
        // The verdict's statistic is the median pair ratio; distribution-free (sign test) interval
        // for the pairs' population median from the order statistics, and how many pairs fell
        // below the threshold (each does with some probability p: the median of n then falls below
        // it with probability P(Binomial(n, p) >= n/2 + 1) for odd n).
        std::vector<double> sorted = g["pair_ratios"].get<std::vector<double>>();
        std::sort(sorted.begin(), sorted.end());
        const MedianInterval mi = median_interval(sorted.size(), 0.95);
        if (mi.j > 0)
          g["median_ci"] = {{"low", sorted[mi.j - 1]}, {"high", sorted[sorted.size() - mi.j]}, {"coverage", mi.coverage}};
        g["pairs_below_0.9"] = std::count_if(sorted.begin(), sorted.end(), [](double r) { return r < 0.9; });
        d["tcp4_goodput_delay_over_io"] = g;
      } catch (const std::exception& ex) {
        d["tcp4_goodput_delay_over_io"] = {{"error", ex.what()}};
      }
      try {  // diagnostic, no verdict (see the definition)
        d["work_ns_per_frame_delay_over_io"] = summary(paired_ratio(wi, wd));
      } catch (const std::exception& ex) {
        d["work_ns_per_frame_delay_over_io"] = {{"error", ex.what()}};
      }
      rep["delay_only"] = d;
    }
    // 5. Gilbert-Elliott loss
    if (cfg.run_gilbert) {
      const LinkConfig base = m.rate_bps > 0 ? m : cfg.topo.wan[0].config;
      uint64_t seed = cfg.ge_seed;
      if (seed == 0) {
        std::random_device rd;
        seed = (uint64_t{rd()} << 32 | rd()) | 1;
      }
      Emulator e = start_emulator(c, {link_arg(base, true, false, &cfg.ge)}, false, {"--seed", std::to_string(seed)});
      json g;
      g["seed"] = seed;
      const double rate = base.rate_bps > 0 ? base.rate_bps : 1e9;
      uint32_t payload = cfg.ge_payload;
      if (payload == 0) {
        const double wire = rate * cfg.ge_udp_load / 8 / cfg.ge_frames_per_s;  // bytes per frame on the wire
        payload = static_cast<uint32_t>(std::clamp(wire - kUdpWireOverhead, 64.0, 1472.0));
      }
      g["udp"] = udp(c, rate * cfg.ge_udp_load, payload);
      const json em = stop_emulator(c, e);
      const json ab = link_summary(em, 0);
      g["emulator"] = ab;
      const uint64_t lost = ab["drops"]["loss"].get<uint64_t>();
      const uint64_t offered = em["links"][0]["model"]["offered"].get<uint64_t>();
      const uint64_t runs = ab["loss_bursts"].get<uint64_t>();
      const LossProcessCheck k = check_loss_process(cfg.ge, offered, lost, runs);
      const auto [lo, hi] = wilson_interval(lost, offered);
      g["model_loss_rate"] = k.loss_rate;
      g["model_loss_rate_ci95_binomial"] = {lo, hi};
      g["theory_loss_rate"] = k.theory_loss_rate;
      g["loss_rate_se"] = k.loss_rate_se;
      g["loss_rate_bound_3se"] = k.loss_rate_bound;
      g["frames_offered"] = offered;
      g["loss_runs"] = runs;
      g["mean_loss_run"] = k.mean_run;
      g["theory_mean_burst"] = k.run_checkable ? k.theory_mean_run : 0.0;
      g["mean_loss_run_se"] = k.mean_run_se;
      g["mean_loss_run_bound_3se"] = k.mean_run_bound;
      g["check"] = {{"loss_rate_within_3se", k.loss_rate_agrees}, {"loss_rate_bound_le_10pct", k.loss_rate_resolves},
                    {"mean_run_checkable", k.run_checkable}, {"mean_run_within_3se", k.mean_run_agrees},
                    {"mean_run_bound_le_10pct", k.mean_run_resolves}};
      g["note"] = "se from the Markov chain (loss_variance_per_frame) and from i.i.d. run lengths; the binomial interval "
                  "understates GE variance (losses come in runs); udp.mean_loss_run is the same measured end to end";
      rep["gilbert"] = g;
    }
  } catch (...) {
    net_down(cfg.topo.prefix);
    throw;
  }
  net_down(cfg.topo.prefix);
  rep["host"]["loadavg_end"] = loadavg();
  rep["host"]["emulator_scheduling"] = c.scheduling;
  rep["stalls"] = {{"threshold_ms", static_cast<double>(kStallThresholdNs) / 1e6}, {"count", c.stalls.count},
                   {"total_ms", static_cast<double>(c.stalls.total_ns) / 1e6},
                   {"max_iteration_ms", static_cast<double>(c.stalls.max_ns) / 1e6},
                   {"dataplane_run_s", static_cast<double>(c.dataplane_run_ns) / 1e9},
                   {"share", stall_share(c.stalls.total_ns, c.dataplane_run_ns)},
                   {"paced", {{"count", c.paced_stalls.count}, {"total_ms", static_cast<double>(c.paced_stalls.total_ns) / 1e6},
                              {"max_iteration_ms", static_cast<double>(c.paced_stalls.max_ns) / 1e6},
                              {"dataplane_run_s", static_cast<double>(c.paced_run_ns) / 1e9},
                              {"share", stall_share(c.paced_stalls.total_ns, c.paced_run_ns)}}},
                   {"waiting_for_cpu_ms", static_cast<double>(c.waiting_for_cpu_ns) / 1e6},
                   {"waiting_for_cpu_share", c.dataplane_run_ns ? static_cast<double>(c.waiting_for_cpu_ns) / static_cast<double>(c.dataplane_run_ns) : 0.0},
                   {"hypervisor_steal_ms", c.steal_known ? json(static_cast<double>(c.steal_ns) / 1e6) : json(nullptr)},
                   {"hypervisor_steal_share", c.steal_known && c.dataplane_run_ns
                                                  ? json(static_cast<double>(c.steal_ns) / static_cast<double>(c.dataplane_run_ns))
                                                  : json(nullptr)},
                   {"by_data_plane", c.stalls_by_run}};
  c.foreign_emulators = std::max(c.foreign_emulators, watch.max_seen());
  rep["host"]["foreign_emulators_seen"] = c.foreign_emulators;
  rep["host"]["foreign_emulator_seconds"] = watch.seconds_seen();
  if (c.foreign_emulators > 0)
    fprintf(stderr,
            "fidelity: warning: another geotb-emulate ran during this measurement (%d at once, seen for %.1f s): the data "
            "plane's CPU was shared\n",
            c.foreign_emulators, watch.seconds_seen());

  // Verdicts against the targets.
  json v;
  auto num = [](const json& j, std::initializer_list<const char*> path) -> double {
    const json* p = &j;
    for (const char* k : path) {
      if (!p->contains(k)) return NAN;
      p = &(*p)[k];
    }
    return p->is_number() ? p->get<double>() : NAN;
  };
  const double base_rtt = num(rep, {"io_forward", "ping", "rtt_median_ms"});
  const double rtt = num(rep, {"link", "ping", "rtt_median_ms"});
  const double expect = 2 * static_cast<double>(m.delay.count()) / 1e6 + base_rtt;
  v["rtt_expected_ms"] = expect;
  v["rtt_median_ms"] = rtt;
  v["rtt_min_ms"] = num(rep, {"link", "ping", "rtt_min_ms"});
  v["rtt_error_ms"] = rtt - expect;
  v["rtt_min_error_ms"] = num(rep, {"link", "ping", "rtt_min_ms"}) - 2 * static_cast<double>(m.delay.count()) / 1e6 -
                          num(rep, {"io_forward", "ping", "rtt_min_ms"});
  v["rtt_within_0.5ms"] = std::fabs(rtt - expect) <= 0.5;
  if (m.rate_bps > 0) {
    const double t4 = num(rep, {"link", "tcp4", "goodput_bps"});
    v["tcp4_over_rate"] = t4 / m.rate_bps;
    v["tcp4_ge_0.9_rate"] = t4 >= 0.9 * m.rate_bps;
    v["tcp_goodput_ceiling_bps"] = m.rate_bps * tcp_efficiency(L.mtu);
    const double ach = num(rep, {"link", "udp", "emulator", "a_to_b", "achieved_wire_bps_busy"});
    v["udp_achieved_over_rate_dataplane"] = ach / m.rate_bps;
    const double recv = num(rep, {"link", "udp", "received_wire_bps_mean"});
    v["udp_received_over_rate_receiver"] = recv / m.rate_bps;
    if (rep["link"].contains("udp") && rep["link"]["udp"].contains("received_wire_bps_ci95")) {
      const json& ci = rep["link"]["udp"]["received_wire_bps_ci95"];
      v["udp_received_ci95_over_rate"] = {ci[0].get<double>() / m.rate_bps, ci[1].get<double>() / m.rate_bps};
    }
    const double offered = num(rep, {"link", "udp", "offered_wire_bps"});
    v["udp_saturated"] = offered > m.rate_bps;
    v["udp_within_1pct"] = std::fabs(ach / m.rate_bps - 1) <= 0.01 && std::fabs(recv / m.rate_bps - 1) <= 0.01;
    const double q = num(rep, {"link", "udp", "loss_rate"});
    v["udp_loss_expected_from_offer"] = offered > m.rate_bps ? 1 - m.rate_bps / offered : 0.0;
    v["udp_loss_measured"] = q;
  }
  const double p99 = num(rep, {"link", "emulator", "a_to_b", "release_lateness_ns", "p99"});
  v["lateness_p99_us"] = p99 / 1000;
  v["lateness_p99_le_50us"] = p99 <= 50000;
  if (rep.contains("delay_only")) {
    const double g = num(rep, {"delay_only", "tcp4_goodput_delay_over_io", "median_pair_ratio"});
    const int pairs = std::max(1, cfg.throughput_samples);
    const int valid = pairs - rep["delay_only"].value("failed_pairs", 0);
    v["delay_only_over_io_forward"] = g;
    v["delay_only_pairs_measured"] = valid;
    v["delay_only_pairs_below_0.9"] = num(rep, {"delay_only", "tcp4_goodput_delay_over_io", "pairs_below_0.9"});
    v["delay_only_ge_0.9_io"] = g >= 0.9 && valid >= std::min(2, pairs);
  }
  if (rep.contains("gilbert") && rep["gilbert"].contains("check")) {
    const json& k = rep["gilbert"]["check"];
    v["ge_loss_rate_within_3se"] = k["loss_rate_within_3se"];
    v["ge_loss_rate_bound_le_10pct"] = k["loss_rate_bound_le_10pct"];
    if (k["mean_run_checkable"].get<bool>()) {
      v["ge_mean_burst_within_3se"] = k["mean_run_within_3se"];
      v["ge_mean_burst_bound_le_10pct"] = k["mean_run_bound_le_10pct"];
    }
  }
  v["stalls"] = c.paced_stalls.count;
  v["stall_total_ms"] = static_cast<double>(c.paced_stalls.total_ns) / 1e6;
  v["stall_max_ms"] = static_cast<double>(c.paced_stalls.max_ns) / 1e6;
  v["stall_share"] = stall_share(c.paced_stalls.total_ns, c.paced_run_ns);
  v["stall_share_le_1pct"] = stalls_ok(c.paced_stalls.total_ns, c.paced_run_ns);
  v["stall_share_all_data_planes"] = stall_share(c.stalls.total_ns, c.dataplane_run_ns);
  rep["verdicts"] = v;
  return rep;
}

}  // namespace geotb::emu
