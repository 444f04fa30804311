// The DPDK data plane of the WAN emulator: moves real frames between data-center ports through
// one LinkModel per direction and DC pair.
//
//   rx burst (32) on every port → route by destination IPv4 subnet (ARP by target address)
//   → LinkModel::offer(now, L2 payload bytes) → drop (counted by cause) or push the mbuf into the
//   link's delay line with its release time (ns, TSC clock) in an mbuf dynfield
//   → frames whose release time has come are sent in bursts on the destination port.
//
// Time is passed in (`now_ns`, nanoseconds on the caller's clock: TscClock in run(), anything in
// tests), so tests drive the real mbuf path with exact times. The polling functions allocate no
// heap memory (duplication takes an mbuf from the pool, as a NIC would).
//
// Outages (a scheduled change up=false) cut the fibre: frames in the delay line whose release
// time is after the cut instant are dropped as kCauseLinkDown when the data plane next polls
// (poll_rx and poll_tx both apply due changes first; the instant is the scheduled one, however
// late the poll), and tx_lead_ns never sends a frame early across a pending change.
//
// Accounting invariant (checked by tests and printed in the final JSON):
//   rx + duplicated == tx + Σ drops[cause] + in_flight
// and after finish(), in_flight == 0 and every mbuf is back in the pool.
//
// Single-threaded: one lcore calls poll_rx/poll_tx/finish.
#pragma once

#include <rte_mempool.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/dpdk/delay_line.h"
#include "emulator/dpdk/route.h"
#include "emulator/link/histogram.h"
#include "emulator/link/link_model.h"
#include "common/stalls.h"

namespace geotb::emu {

struct PortSpec {
  std::string dc;            ///< data-center name, e.g. "beijing"
  uint16_t port_id = 0;      ///< DPDK port (already configured and started, see setup_port())
  Ipv4Prefix subnet;         ///< destination addresses that live behind this port
};

struct LinkSpec {
  int src = 0, dst = 1;      ///< indices into DataPlaneConfig::ports
  LinkConfig model;          ///< rate, delay, loss, ... of this direction
  std::vector<LinkChange> timeline;  ///< instants in ns of the data plane's clock
};

struct DataPlaneConfig {
  std::vector<PortSpec> ports;
  std::vector<LinkSpec> links;     ///< one per direction and DC pair that may talk
  bool io_forward = false;         ///< reference mode: route and forward, no link model, no delay
  uint64_t seed = 1;               ///< link i direction uses RandomStream(seed, i)
  uint16_t burst = 32;             ///< frames per rx/tx burst, 1..64
  uint32_t delay_line_frames = 0;  ///< capacity per link; 0 = the pool's size
  /// TX batching, in ns: once a link's next frame is due, the burst also takes every frame due
  /// within this long after `now`, so those leave up to tx_lead_ns early (recorded in
  /// release_earliness_ns) and the PMD's per-burst cost (af_packet: one sendto() kick, in which
  /// the kernel also signals the receiving CPU) is shared by several frames. 0 = every frame
  /// leaves at or after its release time (exact; the tests' default).
  uint64_t tx_lead_ns = 0;
  rte_mempool* pool = nullptr;     ///< for duplicates; must outlive the data plane
  /// false: the links' timeline instants are on the data plane's clock (run(): from its start).
  /// true: nothing is scheduled until start_timeline(origin), which puts every change at origin +
  /// its instant (geotb run --net dpdk: the workers' first step, as in the embedded mode).
  bool timeline_on_request = false;
};

enum DropCause : int {
  kCauseLinkDown = 0, kCauseQueueBytes, kCauseQueuePackets, kCauseLoss,  // from the link model
  kCauseUnroutable,    ///< no port owns the destination, or it is the ingress port
  kCauseNoLink,        ///< both ports exist but no link is configured for the pair
  kCauseDelayLineFull, ///< more frames in flight than the delay line holds
  kCauseShutdown,      ///< still in flight when finish() ran
  kNumDropCauses
};
const char* drop_cause_name(int cause);

inline constexpr uint64_t kBusyGapNs = 1000000;

struct LinkCounters {
  uint64_t tx = 0, tx_bytes = 0;   ///< frames sent on the destination port, L2 bytes
  uint64_t duplicated = 0, corrupted = 0, dup_alloc_failed = 0;
  uint64_t drops[kNumDropCauses] = {};
  uint64_t first_tx_ns = 0, last_tx_ns = 0;
  uint64_t wire_bytes_after_first = 0;  ///< wire bytes (with overhead) sent after the first frame
  /// Busy periods: runs of frames sent less than kBusyGapNs apart. Wire bytes of every frame but
  /// a period's first, and the time they took: the rate while the link was transmitting, which
  /// idle gaps (an ARP probe a second after a test) do not dilute.
  uint64_t busy_wire_bytes = 0, busy_ns = 0;
  size_t delay_line_max = 0;
  uint64_t lost_in_flight = 0;          ///< of drops[kCauseLinkDown]: in the delay line when an outage began
  uint64_t loss_bursts = 0;             ///< runs of consecutive kDropLoss among frames offered
  bool last_lost = false;
  LogHistogram lateness_ns;             ///< max(0, tx time − release time), every frame sent
  LogHistogram earliness_ns;            ///< max(0, release time − tx time), every frame sent (tx_lead_ns)
};

struct PortCounters {
  uint64_t rx = 0, rx_bytes = 0, tx = 0, tx_bytes = 0;
  uint64_t unroutable = 0, no_link = 0;
  // Where the poller's time goes (TSC cycles, read around the PMD calls only; never used for
  // decisions): rx bursts that returned frames and the cycles they took (the PMD copies each
  // frame into an mbuf), tx bursts and their cycles (af_packet: copy into the ring + one
  // sendto() kick per call, in which the kernel builds the skbs and runs veth_xmit).
  uint64_t rx_bursts = 0, rx_cycles = 0;
  uint64_t tx_bursts = 0, tx_cycles = 0;
};

class DataPlane {
 public:
  /// Throws std::invalid_argument naming the field and value if `cfg` is invalid.
  explicit DataPlane(const DataPlaneConfig& cfg);
  static std::string validate(const DataPlaneConfig& cfg);

  /// Receive one burst from every port and push each frame through its link. Returns frames received.
  uint32_t poll_rx(uint64_t now_ns);
  /// Send every frame whose release time is <= now_ns (bursts; a full tx ring keeps the rest).
  /// Returns how many frames were sent.
  uint32_t poll_tx(uint64_t now_ns);
  /// Earliest release time still waiting in a delay line (UINT64_MAX if none).
  uint64_t next_release_ns();
  /// Schedules every link's timeline at origin_ns + its instant (timeline_on_request). Only the
  /// first call counts; returns whether it was this one.
  bool start_timeline(uint64_t origin_ns);

  struct RunOptions {
    uint64_t duration_ns = 0;        ///< stop after this long; 0 = only on *quit
    uint64_t stats_interval_ns = 0;  ///< stats line to stderr this often; 0 = never
    /// Sleep when idle: no frame received and nothing due for at least idle_sleep_ns + 20 us, the
    /// loop sleeps idle_sleep_ns (0 = pure busy polling). With a real-time priority this is what
    /// lets the kernel's own work on this core run in fine-grained gaps instead of in
    /// millisecond-long preemptions.
    uint64_t idle_sleep_ns = 0;
    /// Keep at least this share of every 10 ms window asleep (0 = never force): a SCHED_FIFO
    /// poller above the kernel's RT throttling limit (95 % of each second by default) would be
    /// stopped for 50 ms at a time. Idle sleeps count; when they fall short, the loop sleeps
    /// forced_sleep_ns, at most once per max_busy_ns of busy time, so the debt is paid in small,
    /// spread-out gaps.
    double min_sleep_share = 0.0;
    uint64_t max_busy_ns = 200000;
    uint64_t forced_sleep_ns = 12000;
    uint64_t wake_margin_ns = 50000;   ///< idle sleep only if nothing is due within sleep + this
    /// timeline_on_request: when this becomes true (a signal handler sets it), the loop calls
    /// start_timeline(now) at its next iteration.
    const std::atomic<bool>* start_timeline = nullptr;
  };
  /// Polls on TscClock until *quit. Calls finish() before returning.
  void run(const std::atomic<bool>& quit, const RunOptions& opt);
  /// Frees every frame still in a delay line (counted as kCauseShutdown).
  void finish();

  uint64_t rx() const;
  uint64_t tx() const;
  uint64_t duplicated() const;
  uint64_t drops(int cause) const;
  uint64_t in_flight() const;
  const LinkCounters& link_counters(size_t i) const { return links_[i]->c; }
  const LinkModel* link_model(size_t i) const { return links_[i]->model.get(); }
  const PortCounters& port_counters(size_t i) const { return port_stats_[i]; }
  size_t num_links() const { return links_.size(); }

  /// Final report: per port, per link (model stats, tx, achieved rate, lateness), totals, the
  /// accounting check and the stalls of run() ("stalls", common/stalls.h: an iteration
  /// runs from one poll to the next, less the sleep the loop asked for; "ok": stalled <= 1 % of
  /// the run).
  nlohmann::json report() const;
  std::string stats_line(uint64_t now_ns) const;

 private:
  struct Link {
    LinkSpec spec;
    std::unique_ptr<LinkModel> model;   // null in io_forward mode
    DelayLine line;
    LinkCounters c;
    std::string name;
    Link(const LinkSpec& s, size_t cap, bool reorder, int off) : spec(s), line(cap, reorder, off) {}
  };
  void drop(rte_mbuf* m, Link* l, int port, int cause);
  // Applies the link's changes due by now; if an outage began, drops what is in flight (release
  // after the cut instant) as kCauseLinkDown. See LinkModel: a cut fibre loses what is on it.
  void apply_changes(Link& l, uint64_t now_ns);

  DataPlaneConfig cfg_;
  RouteTable routes_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<Link*> by_pair_;  // [src * nports + dst]
  std::vector<PortCounters> port_stats_;
  uint64_t port_drops_[kNumDropCauses] = {};  // drops not attributable to a link
  int release_off_ = -1;
  uint64_t tsc_hz_ = 0;    // run(): TSC ticks per second as measured (TscClock)
  uint64_t dup_flag_ = 0;  // ol_flags bit marking duplicate copies (not counted as delivered by the model)
  size_t nports_ = 0;
  uint64_t start_ns_ = 0, end_ns_ = 0;
  bool timeline_started_ = false;
  uint64_t timeline_origin_ns_ = 0;
  uint64_t idle_sleeps_ = 0, forced_sleeps_ = 0;
  LogHistogram oversleep_ns_;  // actual sleep minus requested
  // run() only: loop iterations, those that moved frames, and ns asleep (idle + forced).
  uint64_t loops_ = 0, busy_loops_ = 0, slept_ns_ = 0, forced_slept_ns_ = 0;
  // run() only: wall time of the iterations that moved frames (rx or tx), sleeps excluded: the
  // poller's forwarding work, whatever the offered load (idle polls are not in it).
  uint64_t busy_loop_ns_ = 0;
  LogHistogram iteration_ns_;  // one poll_rx + poll_tx, sleeps excluded: long ones are stalls
  LogHistogram tx_call_ns_;    // one rte_eth_tx_burst (af_packet: the sendto() kick and the kernel's tx)
  // run() only: loop iterations (start to next start, less the sleep asked for) over 1 ms.
  StallCounter stalls_;
  bool sched_known_ = false;  // the poller thread's scheduler statistics over run() (report "preemption")
  uint64_t sched_on_cpu_ns_ = 0, sched_waiting_ns_ = 0, sched_involuntary_ = 0;
  uint64_t steal_ns_ = 0;  // /proc/stat steal of the poller's CPU over the run (10 ms resolution)
  int steal_cpu_ = -1;     // that CPU; -1: unknown
};

/// Configure port `port_id` with one rx and one tx queue on `pool`, promiscuous, and start it.
/// Returns 0 or a negative errno; logs the failing step.
int setup_port(uint16_t port_id, rte_mempool* pool, uint16_t rx_desc = 1024, uint16_t tx_desc = 1024);

/// Registers (once per process) and returns the offset of the release-time dynfield.
int release_time_dynfield();
/// Registers (once per process) and returns the bit number of the "duplicate copy" mbuf dynflag.
int duplicate_dynflag();

}  // namespace geotb::emu
