#include "harness/dpdk_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/child_process.h"
#include "emulator/dpdk/netns.h"
#include "emulator/dpdk/proc.h"
#include "harness/net_topology.h"

namespace geotb::harness {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream is(s);
  for (std::string w; is >> w;) v.push_back(w);
  return v;
}

/// Sets `want` as every DC namespace's default congestion control and returns what the first one
/// reads back. The kernel lets a namespace other than the host's select only the algorithms in
/// net.ipv4.tcp_allowed_congestion_control (a global list: not ours to change), so a name outside
/// it is refused here with the list, before any worker starts.
std::string set_congestion_control(const emu::NetLayout& layout, const std::string& want) {
  const std::string key = "net.ipv4.tcp_congestion_control";
  auto current = [&] {
    const auto w = words(emu::run_checked(emu::in_ns(layout.dcs.at(0).ns, {"sysctl", "-n", key})));
    return w.empty() ? std::string() : w[0];
  };
  if (want == "default") return current();
  const std::vector<std::string> allowed = words(slurp("/proc/sys/net/ipv4/tcp_allowed_congestion_control"));
  auto is_allowed = [&](const std::string& n) { return std::find(allowed.begin(), allowed.end(), n) != allowed.end(); };
  std::string name = want;
  if (want == "auto") {
    name.clear();
    for (const char* c : {"cubic", "reno"})
      if (is_allowed(c)) {
        name = c;
        break;
      }
    if (name.empty()) return current();  // neither allowed (reno always is): keep the default
  } else if (!is_allowed(want)) {
    throw std::runtime_error(fmt::format(
        "tcp_congestion_control: \"{}\": a network namespace may only select what the host's "
        "net.ipv4.tcp_allowed_congestion_control lists ({}); use one of those, \"auto\" or \"default\"",
        want, fmt::join(allowed, " ")));
  }
  for (const auto& d : layout.dcs) emu::run_checked(emu::in_ns(d.ns, {"sysctl", "-q", "-w", key + "=" + name}));
  const std::string got = current();
  if (got != name)
    throw std::runtime_error(fmt::format("tcp_congestion_control: set \"{}\" in {}, reads back \"{}\"", name,
                                         layout.dcs.at(0).ns, got));
  return got;
}
}  // namespace

struct DpdkSession::Impl {
  DpdkSessionOptions opt;
  emu::NetTopology topo;
  emu::NetLayout layout;
  common::ChildProcess emulator;
  std::string json_path, log_path;
  std::string tcp_cc;  ///< what the DC namespaces use
};

DpdkSession::DpdkSession(const Scenario& sc, const DpdkSessionOptions& opt) : impl_(std::make_unique<Impl>()) {
  impl_->opt = opt;
  if (impl_->opt.emulate_bin.empty()) impl_->opt.emulate_bin = find_emulate_bin();
  impl_->topo = net_topology(sc, opt.prefix);
  impl_->topo.pin_emulator = opt.pin;
  impl_->topo.shield_cpu = opt.shield;
  impl_->layout = emu::net_up(impl_->topo);  // tears down leftovers of the same prefix first
  try {
    impl_->tcp_cc = set_congestion_control(impl_->layout, opt.tcp_congestion_control);
  } catch (...) {
    emu::net_down(opt.prefix);
    throw;
  }
}

const std::string& DpdkSession::tcp_congestion_control() const { return impl_->tcp_cc; }

DpdkSession::~DpdkSession() {
  try {
    if (impl_->emulator.pid() > 0) impl_->emulator.stop(std::chrono::seconds(5));
  } catch (...) {
  }
  emu::net_down(impl_->opt.prefix);
}

std::vector<DcPlacement> DpdkSession::placements() const {
  std::vector<DcPlacement> v;
  for (const auto& d : impl_->layout.dcs) v.push_back({d.ns, d.address, impl_->layout.tool_cpus, d.ifname});
  return v;
}

void DpdkSession::start_emulator(const std::string& tag) {
  Impl& I = *impl_;
  std::filesystem::create_directories(I.opt.log_dir);
  I.json_path = fmt::format("{}/emulator-{}.json", I.opt.log_dir, tag);
  I.log_path = fmt::format("{}/emulator-{}.log", I.opt.log_dir, tag);
  std::filesystem::remove(I.json_path);
  const auto argv = emu::emulator_launch(
      I.layout, emu::emulator_command(I.topo, I.layout, I.opt.emulate_bin, I.json_path,
                                      emu::resolve_rt_priority(I.opt.rt_priority, I.layout.shield), I.opt.prefix + "-emu",
                                      /*timeline_on_signal=*/true));
  common::ChildOptions child;
  child.argv = argv;
  child.log_path = I.log_path;
  I.emulator = common::ChildProcess(child);
  for (int i = 0; i < 400; ++i) {
    if (const std::string log = slurp(I.log_path); log.find("running") != std::string::npos) {
      std::istringstream lines(log);
      for (std::string line; std::getline(lines, line);)
        if (line.find("warning:") != std::string::npos) fmt::print(stderr, "geotb: {}\n", line);
      return;
    }
    if (!I.emulator.running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // waiting for a process to start
  }
  const std::string log = slurp(I.log_path);
  I.emulator.stop(std::chrono::seconds(2));
  throw std::runtime_error(fmt::format("geotb-emulate did not start ({}): {}", emu::join(argv), log));
}

int DpdkSession::emulator_pid() const { return impl_->emulator.pid() > 0 ? impl_->emulator.pid() : 0; }

EmulatorStats DpdkSession::stop_emulator() {
  Impl& I = *impl_;
  EmulatorStats st;
  st.report_path = I.json_path;
  if (I.emulator.pid() <= 0) return st;
  I.emulator.stop(std::chrono::seconds(10));
  try {
    const auto j = nlohmann::json::parse(slurp(I.json_path));
    for (const auto& l : j.at("links")) {
      model::LinkTraffic t;
      // "d<i>->d<j>": the emulator numbers the data centers (emu::emulator_command); names here.
      const std::string name = l.at("name").get<std::string>();
      const size_t arrow = name.find("->");
      auto dc_name = [&](const std::string& d) {
        const size_t i = d.size() > 1 && d[0] == 'd' ? std::stoul(d.substr(1)) : I.topo.dcs.size();
        return i < I.topo.dcs.size() ? I.topo.dcs[i] : d;
      };
      t.from = dc_name(name.substr(0, arrow));
      t.to = arrow == std::string::npos ? std::string() : dc_name(name.substr(arrow + 2));
      t.frames = l.at("tx").get<uint64_t>();
      t.bytes = l.at("tx_bytes").get<uint64_t>();
      for (const auto& [cause, n] : l.at("drops").items()) t.drops[cause] = n.get<uint64_t>();
      t.changes_applied = l.at("model").at("changes_applied").get<uint64_t>();
      st.wan_frames += t.frames;
      st.wan_wire_bytes += t.bytes + 24 * t.frames;  // L2 bytes - 14 (header counted in L2) + 38 (header, FCS, preamble, gap)
      st.changes_applied += t.changes_applied;
      st.links.push_back(std::move(t));
    }
    if (const auto& o = j.at("timeline").at("origin_s"); o.is_number()) st.timeline_origin_s = o.get<double>();
    const auto& k = j.at("stalls");
    st.dataplane.scheduling = j.at("scheduling").at("summary").get<std::string>();
    st.dataplane.stalls = k.at("count").get<uint64_t>();
    st.dataplane.stall_total_s = k.at("total_ns").get<double>() / 1e9;
    st.dataplane.max_iteration_s = k.at("max_iteration_ns").get<double>() / 1e9;
    st.dataplane.run_s = k.at("run_ns").get<double>() / 1e9;
    st.ok = true;
  } catch (const std::exception&) {
    st.ok = false;
  }
  return st;
}

}  // namespace geotb::harness
