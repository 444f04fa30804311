#include "emulator/dpdk/dataplane.h"

#include <rte_ethdev.h>
#include <rte_mbuf_dyn.h>

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "emulator/dpdk/tsc_clock.h"

namespace geotb::emu {

namespace {
constexpr uint16_t kMaxBurst = 64;
constexpr uint32_t kEtherHeader = 14;  // LinkConfig::overhead_bytes already counts it

int cause_of(Fate f) {
  switch (f) {
    case Fate::kDropLinkDown: return kCauseLinkDown;
    case Fate::kDropQueueBytes: return kCauseQueueBytes;
    case Fate::kDropQueuePackets: return kCauseQueuePackets;
    case Fate::kDropLoss: return kCauseLoss;
    case Fate::kDelivered: break;
  }
  return kCauseLoss;
}
}  // namespace

const char* drop_cause_name(int cause) {
  static const char* names[kNumDropCauses] = {"link_down", "queue_bytes", "queue_packets", "loss",
                                              "unroutable", "no_link", "delay_line_full", "shutdown"};
  return cause >= 0 && cause < kNumDropCauses ? names[cause] : "?";
}

int release_time_dynfield() {
  static int off = [] {
    rte_mbuf_dynfield desc{};
    snprintf(desc.name, sizeof(desc.name), "geotb_release_ns");
    desc.size = sizeof(uint64_t);
    desc.align = alignof(uint64_t);
    return rte_mbuf_dynfield_register(&desc);
  }();
  return off;
}

int duplicate_dynflag() {
  static int bit = [] {
    rte_mbuf_dynflag desc{};
    snprintf(desc.name, sizeof(desc.name), "geotb_duplicate");
    return rte_mbuf_dynflag_register(&desc);
  }();
  return bit;
}

std::string DataPlane::validate(const DataPlaneConfig& c) {
  std::ostringstream os;
  if (c.ports.size() < 2) { os << "ports: " << c.ports.size() << ": need at least 2"; return os.str(); }
  for (size_t i = 0; i < c.ports.size(); ++i) {
    if (c.ports[i].subnet.len > 32) { os << "ports[" << i << "].subnet.len: " << int(c.ports[i].subnet.len) << ": must be <= 32"; return os.str(); }
    if (!rte_eth_dev_is_valid_port(c.ports[i].port_id)) { os << "ports[" << i << "].port_id: " << c.ports[i].port_id << ": no such DPDK port"; return os.str(); }
    for (size_t j = 0; j < i; ++j)
      if (c.ports[j].dc == c.ports[i].dc) { os << "ports[" << i << "].dc: " << c.ports[i].dc << ": duplicate"; return os.str(); }
  }
  for (size_t i = 0; i < c.links.size(); ++i) {
    const LinkSpec& l = c.links[i];
    const int n = static_cast<int>(c.ports.size());
    if (l.src < 0 || l.src >= n) { os << "links[" << i << "].src: " << l.src << ": no such port"; return os.str(); }
    if (l.dst < 0 || l.dst >= n || l.dst == l.src) { os << "links[" << i << "].dst: " << l.dst << ": no such port or same as src"; return os.str(); }
    for (size_t j = 0; j < i; ++j)
      if (c.links[j].src == l.src && c.links[j].dst == l.dst) { os << "links[" << i << "]: " << l.src << "->" << l.dst << ": duplicate direction"; return os.str(); }
    if (auto e = LinkModel::validate(l.model); !e.empty()) { os << "links[" << i << "]." << e; return os.str(); }
  }
  if (c.burst < 1 || c.burst > kMaxBurst) { os << "burst: " << c.burst << ": must be in [1, " << kMaxBurst << "]"; return os.str(); }
  if (c.pool == nullptr) return "pool: null: an mbuf pool is required";
  return {};
}

DataPlane::DataPlane(const DataPlaneConfig& cfg) : cfg_(cfg) {
  if (auto e = validate(cfg); !e.empty()) throw std::invalid_argument("data plane config: " + e);
  release_off_ = release_time_dynfield();
  if (release_off_ < 0) throw std::runtime_error("cannot register the mbuf release-time dynfield");
  const int dup_bit = duplicate_dynflag();
  if (dup_bit < 0) throw std::runtime_error("cannot register the mbuf duplicate dynflag");
  dup_flag_ = uint64_t{1} << dup_bit;
  nports_ = cfg.ports.size();
  for (size_t i = 0; i < nports_; ++i) routes_.add(cfg.ports[i].subnet, static_cast<int>(i));
  port_stats_.resize(nports_);
  by_pair_.assign(nports_ * nports_, nullptr);
  const size_t cap = cfg.delay_line_frames ? cfg.delay_line_frames : cfg.pool->size;
  for (size_t i = 0; i < cfg.links.size(); ++i) {
    const LinkSpec& s = cfg.links[i];
    auto l = std::make_unique<Link>(s, cap, s.model.reorder && !cfg.io_forward, release_off_);
    if (!cfg.io_forward) {
      l->model = std::make_unique<LinkModel>(s.model, RandomStream(cfg.seed, i));
      l->model->reserve(cap);
      if (!cfg.timeline_on_request)
        for (const LinkChange& ch : s.timeline) l->model->schedule(ch);
    }
    l->name = cfg.ports[static_cast<size_t>(s.src)].dc + "->" + cfg.ports[static_cast<size_t>(s.dst)].dc;
    by_pair_[static_cast<size_t>(s.src) * nports_ + static_cast<size_t>(s.dst)] = l.get();
    links_.push_back(std::move(l));
  }
}

bool DataPlane::start_timeline(uint64_t origin_ns) {
  if (timeline_started_ || !cfg_.timeline_on_request) return false;
  timeline_started_ = true;
  timeline_origin_ns_ = origin_ns;
  for (auto& l : links_) {
    if (!l->model) continue;
    for (LinkChange ch : l->spec.timeline) {
      ch.at += Nanos{static_cast<int64_t>(origin_ns)};
      l->model->schedule(ch);
    }
  }
  return true;
}

void DataPlane::drop(rte_mbuf* m, Link* l, int port, int cause) {
  if (l) ++l->c.drops[cause]; else ++port_drops_[cause];
  if (port >= 0) {
    if (cause == kCauseUnroutable) ++port_stats_[static_cast<size_t>(port)].unroutable;
    if (cause == kCauseNoLink) ++port_stats_[static_cast<size_t>(port)].no_link;
  }
  rte_pktmbuf_free(m);
}

void DataPlane::apply_changes(Link& l, uint64_t now_ns) {
  l.model->advance(Nanos{static_cast<int64_t>(now_ns)});
  const std::optional<Nanos> cut = l.model->take_cut();
  if (!cut) return;
  uint64_t originals = 0, bytes = 0;
  l.line.remove_released_after(static_cast<uint64_t>(cut->count()), [&](rte_mbuf* m) {
    if (!(m->ol_flags & dup_flag_)) {
      ++originals;
      bytes += m->pkt_len > kEtherHeader ? m->pkt_len - kEtherHeader : 0;
    }
    ++l.c.lost_in_flight;
    drop(m, &l, -1, kCauseLinkDown);
  });
  l.model->count_lost_in_flight(originals, bytes);
}

uint32_t DataPlane::poll_rx(uint64_t now_ns) {
  uint32_t total = 0;
  if (start_ns_ == 0) start_ns_ = now_ns ? now_ns : 1;
  rte_mbuf* bufs[kMaxBurst];
  for (size_t p = 0; p < nports_; ++p) {
    const uint64_t c0 = rte_rdtsc();
    const uint16_t n = rte_eth_rx_burst(cfg_.ports[p].port_id, 0, bufs, cfg_.burst);
    PortCounters& ps = port_stats_[p];
    if (n > 0) {
      ++ps.rx_bursts;
      ps.rx_cycles += rte_rdtsc() - c0;
    }
    ps.rx += n;
    total += n;
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = bufs[i];
      ps.rx_bytes += m->pkt_len;
      const int dst = routes_.classify(m);
      if (dst < 0 || static_cast<size_t>(dst) == p) { drop(m, nullptr, static_cast<int>(p), kCauseUnroutable); continue; }
      Link* l = by_pair_[p * nports_ + static_cast<size_t>(dst)];
      if (!l) { drop(m, nullptr, static_cast<int>(p), kCauseNoLink); continue; }
      uint64_t release = now_ns;
      bool dup = false;
      if (l->model) {
        apply_changes(*l, now_ns);
        const uint32_t payload = m->pkt_len > kEtherHeader ? m->pkt_len - kEtherHeader : 0;
        const Verdict v = l->model->offer(Nanos{static_cast<int64_t>(now_ns)}, payload);
        const bool lost = v.fate == Fate::kDropLoss;
        l->c.loss_bursts += lost && !l->c.last_lost;
        l->c.last_lost = lost;
        if (v.fate != Fate::kDelivered) { drop(m, l, -1, cause_of(v.fate)); continue; }
        release = static_cast<uint64_t>(v.release.count());
        if (v.corrupt) {
          // Flip one bit of the last byte: the receiver's L3/L4 checksum catches it.
          uint8_t* last = rte_pktmbuf_mtod_offset(rte_pktmbuf_lastseg(m), uint8_t*, rte_pktmbuf_lastseg(m)->data_len - 1);
          *last ^= 0x01;
          ++l->c.corrupted;
        }
        dup = v.duplicate;
      }
      if (!l->line.push(m, release)) { drop(m, l, -1, kCauseDelayLineFull); continue; }
      if (dup) {
        rte_mbuf* c = rte_pktmbuf_copy(m, cfg_.pool, 0, UINT32_MAX);
        if (c == nullptr) {
          ++l->c.dup_alloc_failed;
        } else {
          c->ol_flags |= dup_flag_;
          ++l->c.duplicated;
          if (!l->line.push(c, release)) drop(c, l, -1, kCauseDelayLineFull);
        }
      }
      if (l->line.size() > l->c.delay_line_max) l->c.delay_line_max = l->line.size();
    }
  }
  return total;
}

uint64_t DataPlane::next_release_ns() {
  uint64_t t = UINT64_MAX;
  for (auto& l : links_)
    if (!l->line.empty()) t = std::min(t, l->line.next_release());
  return t;
}

uint32_t DataPlane::poll_tx(uint64_t now_ns) {
  uint32_t total = 0;
  rte_mbuf* out[kMaxBurst];
  for (auto& lp : links_) {
    Link& l = *lp;
    const uint16_t port = cfg_.ports[static_cast<size_t>(l.spec.dst)].port_id;
    uint64_t horizon = now_ns + cfg_.tx_lead_ns;
    if (l.model) {
      apply_changes(l, now_ns);
      // Never early across a change: a frame released after a pending cut must not leave.
      if (const std::optional<Nanos> next = l.model->next_change())
        horizon = std::min(horizon, std::max(now_ns, static_cast<uint64_t>(next->count())));
    }
    while (!l.line.empty() && l.line.next_release() <= now_ns) {
      uint16_t k = 0;
      while (k < cfg_.burst && !l.line.empty() && l.line.next_release() <= horizon) out[k++] = l.line.pop();
      // Read what we need before tx: the PMD may free the mbufs.
      uint64_t rel[kMaxBurst];
      uint32_t len[kMaxBurst];
      for (uint16_t i = 0; i < k; ++i) {
        rel[i] = DelayLine::release_of(out[i], release_off_);
        len[i] = out[i]->pkt_len;
      }
      const uint64_t c0 = rte_rdtsc();
      const uint16_t sent = rte_eth_tx_burst(port, 0, out, k);
      PortCounters& ps = port_stats_[static_cast<size_t>(l.spec.dst)];
      ++ps.tx_bursts;
      const uint64_t cyc = rte_rdtsc() - c0;
      ps.tx_cycles += cyc;
      tx_call_ns_.record(cyc * 1000 / ((tsc_hz_ ? tsc_hz_ : rte_get_tsc_hz()) / 1000000));
      for (uint16_t i = 0; i < sent; ++i) {
        l.c.lateness_ns.record(now_ns > rel[i] ? now_ns - rel[i] : 0);
        l.c.earliness_ns.record(rel[i] > now_ns ? rel[i] - now_ns : 0);
        l.c.tx_bytes += len[i];
        if (l.c.tx == 0) {
          l.c.first_tx_ns = now_ns;
        } else {
          const uint64_t wire = len[i] - kEtherHeader + l.spec.model.overhead_bytes;
          l.c.wire_bytes_after_first += wire;
          if (now_ns - l.c.last_tx_ns < kBusyGapNs) {
            l.c.busy_wire_bytes += wire;
            l.c.busy_ns += now_ns - l.c.last_tx_ns;
          }
        }
        ++l.c.tx;
        l.c.last_tx_ns = now_ns;
      }
      ps.tx += sent;
      total += sent;
      for (uint16_t i = 0; i < sent; ++i) ps.tx_bytes += len[i];
      if (sent < k) {
        for (uint16_t i = k; i > sent; --i) l.line.unpop(out[i - 1]);
        break;  // tx ring full: try again next round
      }
    }
  }
  end_ns_ = now_ns;
  return total;
}

void DataPlane::finish() {
  for (auto& l : links_)
    while (!l->line.empty()) drop(l->line.pop(), l.get(), -1, kCauseShutdown);
}

uint64_t DataPlane::rx() const {
  uint64_t s = 0;
  for (const auto& p : port_stats_) s += p.rx;
  return s;
}
uint64_t DataPlane::tx() const {
  uint64_t s = 0;
  for (const auto& l : links_) s += l->c.tx;
  return s;
}
uint64_t DataPlane::duplicated() const {
  uint64_t s = 0;
  for (const auto& l : links_) s += l->c.duplicated;
  return s;
}
uint64_t DataPlane::drops(int cause) const {
  uint64_t s = port_drops_[cause];
  for (const auto& l : links_) s += l->c.drops[cause];
  return s;
}
uint64_t DataPlane::in_flight() const {
  uint64_t s = 0;
  for (const auto& l : links_) s += l->line.size();
  return s;
}

std::string DataPlane::stats_line(uint64_t now_ns) const {
  std::ostringstream os;
  os << "t=" << (now_ns - start_ns_) / 1000000 << "ms rx=" << rx() << " tx=" << tx() << " in_flight=" << in_flight();
  for (int c = 0; c < kNumDropCauses; ++c)
    if (const uint64_t d = drops(c)) os << " " << drop_cause_name(c) << "=" << d;
  for (const auto& l : links_)
    os << " | " << l->name << " tx=" << l->c.tx << " p99_late_us=" << l->c.lateness_ns.quantile(0.99) / 1000.0;
  return os.str();
}

namespace {
// The calling thread's scheduler statistics (/proc/thread-self/schedstat: ns on the CPU, ns
// runnable but waiting for it, time slices; /proc/thread-self/status: involuntary switches).
struct ThreadSchedStat {
  uint64_t on_cpu_ns = 0, waiting_ns = 0, involuntary = 0;
  bool ok = false;
};
ThreadSchedStat thread_sched_stat() {
  ThreadSchedStat s;
  std::ifstream f("/proc/thread-self/schedstat");
  uint64_t slices = 0;
  s.ok = static_cast<bool>(f >> s.on_cpu_ns >> s.waiting_ns >> slices);
  std::ifstream st("/proc/thread-self/status");
  for (std::string line; std::getline(st, line);)
    if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) s.involuntary = std::stoull(line.substr(line.find(':') + 1));
  return s;
}

// Time the hypervisor ran something else while CPU `cpu` (a guest vCPU) wanted to run: the steal
// column of its /proc/stat line, in ns (the kernel counts it in USER_HZ ticks: 10 ms resolution
// at 100 Hz). Nothing if the line or the column is absent (no paravirtual steal clock).
std::optional<uint64_t> cpu_steal_ns(int cpu) {
  if (cpu < 0) return std::nullopt;
  std::ifstream f("/proc/stat");
  const std::string want = "cpu" + std::to_string(cpu);
  for (std::string line; std::getline(f, line);) {
    std::istringstream is(line);
    std::string name;
    is >> name;
    if (name != want) continue;
    uint64_t v[8] = {};
    for (uint64_t& x : v)
      if (!(is >> x)) return std::nullopt;
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? v[7] * (1000000000ull / static_cast<uint64_t>(hz)) : std::optional<uint64_t>{};
  }
  return std::nullopt;
}
}  // namespace

void DataPlane::run(const std::atomic<bool>& quit, const RunOptions& opt) {
  const ThreadSchedStat sched0 = thread_sched_stat();
  const int cpu = sched_getcpu();  // pinned by the caller when it has a CPU of its own
  const std::optional<uint64_t> steal0 = cpu_steal_ns(cpu);
  TscClock clk;
  tsc_hz_ = clk.hz();
  uint64_t next_stats = opt.stats_interval_ns;
  const uint64_t t0 = clk.now_ns();
  constexpr uint64_t kWindow = 10000000;  // ns, for min_sleep_share
  uint64_t win_start = t0, win_slept = 0, last_sleep_end = t0;
  // Stalls: from one iteration's start to the next, less the sleep the loop asked for (so a sleep
  // that overran counts, and so does a preemption inside poll_rx/poll_tx).
  uint64_t prev_top = 0, asked_sleep = 0;
  auto sleep_for = [&](uint64_t ns, uint64_t from) {
    asked_sleep += ns;
    const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    nanosleep(&ts, nullptr);
    const uint64_t woke = clk.now_ns();
    win_slept += woke - from;
    slept_ns_ += woke - from;
    last_sleep_end = woke;
    return woke;
  };
  while (!quit.load(std::memory_order_relaxed)) {
    const uint64_t now = clk.now_ns();
    if (prev_top) stalls_.record(now - prev_top > asked_sleep ? now - prev_top - asked_sleep : 0);
    prev_top = now;
    asked_sleep = 0;
    const uint32_t got = poll_rx(now);
    if (opt.start_timeline && !timeline_started_ && opt.start_timeline->load(std::memory_order_relaxed))
      start_timeline(now);
    const uint64_t later = clk.now_ns();
    const uint32_t sent = poll_tx(later);
    ++loops_;
    const bool busy = got > 0 || sent > 0;
    busy_loops_ += busy;
    const uint64_t done = clk.now_ns();
    if (busy) busy_loop_ns_ += done - now;
    iteration_ns_.record(done - now);
    if (opt.stats_interval_ns && later >= next_stats) {
      fprintf(stderr, "%s\n", stats_line(later).c_str());
      next_stats = later + opt.stats_interval_ns;
    }
    if (opt.duration_ns && later - t0 >= opt.duration_ns) break;
    if (done - win_start >= kWindow) {
      win_start = done;
      win_slept = 0;
    }
    if (opt.idle_sleep_ns && got == 0) {
      const uint64_t due = next_release_ns();
      if (due == UINT64_MAX || due > done + opt.idle_sleep_ns + opt.wake_margin_ns) {
        const uint64_t woke = sleep_for(opt.idle_sleep_ns, done);
        oversleep_ns_.record(woke - done > opt.idle_sleep_ns ? woke - done - opt.idle_sleep_ns : 0);
        ++idle_sleeps_;
        continue;
      }
    }
    if (opt.min_sleep_share > 0 && done - last_sleep_end >= opt.max_busy_ns &&
        static_cast<double>(win_slept) < opt.min_sleep_share * static_cast<double>(done - win_start)) {
      forced_slept_ns_ += sleep_for(opt.forced_sleep_ns, done) - done;
      ++forced_sleeps_;
    }
  }
  finish();
  const ThreadSchedStat sched1 = thread_sched_stat();
  if (sched0.ok && sched1.ok) {
    sched_on_cpu_ns_ = sched1.on_cpu_ns - sched0.on_cpu_ns;
    sched_waiting_ns_ = sched1.waiting_ns - sched0.waiting_ns;
    sched_involuntary_ = sched1.involuntary - sched0.involuntary;
    sched_known_ = true;
  }
  const std::optional<uint64_t> steal1 = cpu_steal_ns(cpu);
  if (steal0 && steal1 && sched_getcpu() == cpu) {
    steal_ns_ = *steal1 - *steal0;
    steal_cpu_ = cpu;
  }
}

nlohmann::json DataPlane::report() const {
  using nlohmann::json;
  json j;
  j["mode"] = cfg_.io_forward ? "io_forward" : "link_model";
  j["seed"] = cfg_.seed;
  j["tx_lead_ns"] = cfg_.tx_lead_ns;
  // When the scheduled changes' clock started: at the data plane's start, or on request (then
  // origin_s: seconds after the first poll; null if the request never came).
  j["timeline"] = {{"starts", cfg_.timeline_on_request ? "on_request" : "at_start"}};
  if (cfg_.timeline_on_request)
    j["timeline"]["origin_s"] = timeline_started_ ? nlohmann::json(static_cast<double>(timeline_origin_ns_ - std::min(timeline_origin_ns_, start_ns_)) / 1e9)
                                                  : nlohmann::json(nullptr);
  j["tsc_hz"] = {{"measured", tsc_hz_}, {"nominal", rte_get_tsc_hz()}};
  j["idle_sleeps"] = idle_sleeps_;
  j["forced_sleeps"] = forced_sleeps_;
  j["idle_oversleep_ns"] = {{"p50", oversleep_ns_.quantile(0.5)}, {"p99", oversleep_ns_.quantile(0.99)}, {"max", oversleep_ns_.max()}};
  j["duration_s"] = end_ns_ > start_ns_ ? static_cast<double>(end_ns_ - start_ns_) / 1e9 : 0.0;
  const double dur_ns = end_ns_ > start_ns_ ? static_cast<double>(end_ns_ - start_ns_) : 0.0;
  const double ns_per_cycle = 1e9 / static_cast<double>(tsc_hz_ ? tsc_hz_ : rte_get_tsc_hz());
  uint64_t rx_cyc = 0, tx_cyc = 0;
  json ports = json::array();
  for (size_t i = 0; i < nports_; ++i) {
    const PortCounters& p = port_stats_[i];
    rx_cyc += p.rx_cycles;
    tx_cyc += p.tx_cycles;
    ports.push_back({{"dc", cfg_.ports[i].dc}, {"port_id", cfg_.ports[i].port_id}, {"rx", p.rx}, {"rx_bytes", p.rx_bytes},
                     {"tx", p.tx}, {"tx_bytes", p.tx_bytes}, {"unroutable", p.unroutable}, {"no_link", p.no_link},
                     {"rx_bursts", p.rx_bursts}, {"tx_bursts", p.tx_bursts},
                     {"rx_mean_burst", p.rx_bursts ? static_cast<double>(p.rx) / static_cast<double>(p.rx_bursts) : 0.0},
                     {"tx_mean_burst", p.tx_bursts ? static_cast<double>(p.tx) / static_cast<double>(p.tx_bursts) : 0.0},
                     {"rx_ns_per_frame", p.rx ? static_cast<double>(p.rx_cycles) * ns_per_cycle / static_cast<double>(p.rx) : 0.0},
                     {"tx_ns_per_burst", p.tx_bursts ? static_cast<double>(p.tx_cycles) * ns_per_cycle / static_cast<double>(p.tx_bursts) : 0.0}});
  }
  // Shares of the run's wall time (run() only; the TSC keeps counting while the thread is
  // preempted, so what is left over is our own loop work plus time other tasks took the CPU).
  if (dur_ns > 0)
    j["time_shares"] = {{"rx_burst_calls", static_cast<double>(rx_cyc) * ns_per_cycle / dur_ns},
                        {"tx_burst_calls", static_cast<double>(tx_cyc) * ns_per_cycle / dur_ns},
                        {"asleep", static_cast<double>(slept_ns_) / dur_ns},
                        {"forced_sleep", static_cast<double>(forced_slept_ns_) / dur_ns},
                        {"loops", loops_}, {"busy_loops", busy_loops_}};
  // Forwarding work per frame: wall time of the iterations that moved frames / frames sent, at
  // the offered load. Not a capacity: a delayed frame is received and sent in two iterations
  // (io-forwarding: usually one), and per-frame costs fall as bursts grow with the load.
  {
    const uint64_t sent = tx();
    j["forwarding_work"] = {{"busy_loop_s", static_cast<double>(busy_loop_ns_) / 1e9}, {"frames_sent", sent},
                            {"ns_per_frame", sent ? static_cast<double>(busy_loop_ns_) / static_cast<double>(sent) : 0.0}};
  }
  j["tx_call_ns"] = {{"p50", tx_call_ns_.quantile(0.5)}, {"p99", tx_call_ns_.quantile(0.99)}, {"p999", tx_call_ns_.quantile(0.999)},
                     {"max", tx_call_ns_.max()}, {"over_100us", tx_call_ns_.count_above(100000)}, {"over_1ms", tx_call_ns_.count_above(1000000)}};
  j["iteration_ns"] = {{"p50", iteration_ns_.quantile(0.5)}, {"p99", iteration_ns_.quantile(0.99)}, {"p999", iteration_ns_.quantile(0.999)},
                       {"p9999", iteration_ns_.quantile(0.9999)}, {"max", iteration_ns_.max()},
                       {"over_100us", iteration_ns_.count_above(100000)}, {"over_1ms", iteration_ns_.count_above(1000000)}};
  {
    const uint64_t run_ns = end_ns_ > start_ns_ ? end_ns_ - start_ns_ : 0;
    j["stalls"] = {{"threshold_ns", stalls_.threshold_ns}, {"count", stalls_.count}, {"total_ns", stalls_.total_ns},
                   {"max_iteration_ns", stalls_.max_ns}, {"run_ns", run_ns}, {"share", stall_share(stalls_.total_ns, run_ns)},
                   {"max_share", kMaxStallShare}, {"ok", stalls_ok(stalls_.total_ns, run_ns)}};
  }
  // Where stalls come from: time the poller was runnable but another task had its CPU (the
  // kernel's run_delay; preemption), against its own long iterations (work, e.g. a backlog).
  if (sched_known_)
    j["preemption"] = {{"waiting_for_cpu_ns", sched_waiting_ns_}, {"on_cpu_ns", sched_on_cpu_ns_},
                       {"involuntary_switches", sched_involuntary_}};
  // ... and time the hypervisor took the vCPU itself (a guest's steal time), which neither the
  // guest's scheduler nor run_delay sees: null where unknown (not pinned, or no steal clock).
  if (sched_known_)
    j["preemption"]["hypervisor_steal_ns"] = steal_cpu_ >= 0 ? json(steal_ns_) : json(nullptr);
  j["ports"] = ports;
  json links = json::array();
  for (const auto& lp : links_) {
    const Link& l = *lp;
    json d;
    for (int c = 0; c < kNumDropCauses; ++c) d[drop_cause_name(c)] = l.c.drops[c];
    const double window_s = l.c.last_tx_ns > l.c.first_tx_ns ? static_cast<double>(l.c.last_tx_ns - l.c.first_tx_ns) / 1e9 : 0.0;
    const LogHistogram& h = l.c.lateness_ns;
    json lj = {{"name", l.name},
               {"configured", {{"rate_bps", l.spec.model.rate_bps}, {"delay_ns", l.spec.model.delay.count()},
                               {"loss_stationary", l.spec.model.loss.stationary_loss()}}},
               {"tx", l.c.tx}, {"tx_bytes", l.c.tx_bytes}, {"duplicated", l.c.duplicated}, {"corrupted", l.c.corrupted},
               {"dup_alloc_failed", l.c.dup_alloc_failed}, {"drops", d}, {"delay_line_max", l.c.delay_line_max},
               {"achieved_wire_bps", window_s > 0 ? static_cast<double>(l.c.wire_bytes_after_first) * 8 / window_s : 0.0},
               {"tx_window_s", window_s},
               {"achieved_wire_bps_busy", l.c.busy_ns ? static_cast<double>(l.c.busy_wire_bytes) * 8e9 / static_cast<double>(l.c.busy_ns) : 0.0},
               {"busy_s", static_cast<double>(l.c.busy_ns) / 1e9},
               {"lost_in_flight", l.c.lost_in_flight},
               {"loss_bursts", l.c.loss_bursts},
               {"mean_loss_burst", l.c.loss_bursts ? static_cast<double>(l.c.drops[kCauseLoss]) / static_cast<double>(l.c.loss_bursts) : 0.0},
               {"release_lateness_ns", {{"count", h.count()}, {"mean", h.mean()}, {"p50", h.quantile(0.5)},
                                        {"p90", h.quantile(0.9)}, {"p99", h.quantile(0.99)}, {"p999", h.quantile(0.999)},
                                        {"max", h.max()}}},
               {"release_earliness_ns", {{"p50", l.c.earliness_ns.quantile(0.5)}, {"p99", l.c.earliness_ns.quantile(0.99)},
                                         {"max", l.c.earliness_ns.max()}}}};
    if (l.model) {
      const LinkStats& s = l.model->stats();
      lj["model"] = {{"offered", s.offered}, {"delivered", s.delivered}, {"changes_applied", s.changes_applied},
                     {"lost_in_flight", s.lost_in_flight}};
    }
    links.push_back(lj);
  }
  j["links"] = links;
  json drops;
  uint64_t total_drops = 0;
  for (int c = 0; c < kNumDropCauses; ++c) {
    drops[drop_cause_name(c)] = this->drops(c);
    total_drops += this->drops(c);
  }
  j["totals"] = {{"rx", rx()}, {"tx", tx()}, {"duplicated", duplicated()}, {"drops", drops}, {"drops_total", total_drops},
                 {"in_flight", in_flight()}};
  j["accounting_ok"] = rx() + duplicated() == tx() + total_drops + in_flight();
  return j;
}

int setup_port(uint16_t port_id, rte_mempool* pool, uint16_t rx_desc, uint16_t tx_desc) {
  rte_eth_conf conf{};
  int rc = rte_eth_dev_configure(port_id, 1, 1, &conf);
  if (rc < 0) { fprintf(stderr, "port %u: rte_eth_dev_configure: %d\n", port_id, rc); return rc; }
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rx_desc, &tx_desc);
  if (rc < 0) { fprintf(stderr, "port %u: adjust descriptors: %d\n", port_id, rc); return rc; }
  const int sock = rte_eth_dev_socket_id(port_id);
  const unsigned socket = sock < 0 ? 0u : static_cast<unsigned>(sock);
  rc = rte_eth_rx_queue_setup(port_id, 0, rx_desc, socket, nullptr, pool);
  if (rc < 0) { fprintf(stderr, "port %u: rx queue: %d\n", port_id, rc); return rc; }
  rc = rte_eth_tx_queue_setup(port_id, 0, tx_desc, socket, nullptr);
  if (rc < 0) { fprintf(stderr, "port %u: tx queue: %d\n", port_id, rc); return rc; }
  rc = rte_eth_dev_start(port_id);
  if (rc < 0) { fprintf(stderr, "port %u: start: %d\n", port_id, rc); return rc; }
  rc = rte_eth_promiscuous_enable(port_id);  // frames carry the other DC's MAC, not ours
  if (rc < 0 && rc != -ENOTSUP) fprintf(stderr, "port %u: promiscuous: %d (continuing)\n", port_id, rc);
  return 0;
}

}  // namespace geotb::emu
