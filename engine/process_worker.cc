#include "engine/process_worker.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
#include <optional>
#include <memory>
#include <stdexcept>

#include "common/clock.h"
#include "engine/checkpoint/schedule.h"
#include "engine/checkpoint/worker_state.h"
#include "engine/collectives/intra_dc.h"
#include "engine/collectives/store.h"
#include "engine/faults/socket_port.h"
#include "engine/faults/rejoin.h"
#include "engine/hosts/socket_host.h"
#include "engine/rank_host.h"
#include "engine/model/torch_rng.h"
#include "engine/strategies/table.h"
#include "engine/transport/counting.h"
#include "engine/transport/socket/frame.h"
#include "engine/transport/socket/socket_transport.h"

namespace geotb::engine {

std::string validate(const ProcessWorkerConfig& c) {
  auto s = [](auto v) { return std::to_string(v); };
  const model::RankLayout& l = c.layout;
  if (c.world != l.world())
    return "WORLD_SIZE: " + s(c.world) + ": the scenario's data centers have " + l.describe() + " = " + s(l.world()) +
           " workers";
  if (c.rank < 0 || c.rank >= c.world) return "RANK: " + s(c.rank) + ": must be in [0, " + s(c.world) + ")";
  if (c.dc != l.dc_of(c.rank))
    return "GEOTB_DC: " + s(c.dc) + ": rank " + s(c.rank) + " is in DC " + s(l.dc_of(c.rank)) +
           " (ranks are numbered DC by DC: " + l.describe() + " workers)";
  if (c.local_rank != l.local_of(c.rank))
    return "GEOTB_LOCAL_RANK: " + s(c.local_rank) + ": rank " + s(c.rank) + " is local rank " + s(l.local_of(c.rank));
  if (c.master_addr.empty()) return "MASTER_ADDR: empty";
  if (c.master_port == 0) return "MASTER_PORT: 0: need a fixed port";
  if (c.bind_addr.empty()) return "GEOTB_BIND_ADDR: empty";
  if (c.timeout.count() <= 0) return "timeout: " + s(c.timeout.count()) + " ms: must be positive";
  if (c.heartbeat.count() <= 0 || c.heartbeat >= c.timeout)
    return "heartbeat: " + s(c.heartbeat.count()) + " ms: must be positive and below the timeout";
  return "";
}

namespace {

uint64_t fnv1a64(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
  return h;
}

SocketEndpoint parse_endpoint(const std::string& s, int rank) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size())
    throw StoreError("rank " + std::to_string(rank) + " published the address \"" + s + "\" (expected host:port)");
  SocketEndpoint e;
  e.host = s.substr(0, colon);
  e.port = static_cast<uint16_t>(std::stoul(s.substr(colon + 1)));
  return e;
}

/// The rank's socket transport: its address, the WAN's rate and RTT (striping), timeouts and the
/// run's secret; with node faults (`port`, the fault agent's), the scenario's heartbeats (a peer
/// silent for timeout + confirmation is dead), the port's callbacks and the witnesses a silent
/// peer is asked about.
SocketTransportConfig transport_config(const ProcessWorkerConfig& cfg, const model::FaultPlan& plan,
                                       const FaultGroups& groups, SocketFaultPort* port) {
  SocketTransportConfig tc;
  tc.rank = cfg.rank;
  tc.world = cfg.world;
  tc.listen_host = cfg.bind_addr;
  tc.listen_port = 0;
  tc.streams = 0;
  tc.link_rate_bps = cfg.wan_rate_bps;
  tc.link_rtt_s = cfg.wan_rtt_s;
  tc.heartbeat = cfg.heartbeat;
  tc.peer_timeout = cfg.timeout;
  if (port) {
    auto ms = [](std::chrono::nanoseconds d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d); };
    tc.heartbeat = ms(plan.heartbeat.interval);
    tc.peer_timeout = ms(plan.heartbeat.timeout + plan.heartbeat.confirmation);
    tc.on_peer_failed = [port](int peer, const std::string& why, std::optional<std::chrono::milliseconds> silent,
                                const std::string& how) { port->peer_failed(peer, why, silent, how); };
    // A silent peer is asked about to its witnesses before it is failed (engine/faults/heartbeat.h).
    if (plan.heartbeat.witnesses > 0) {
      tc.witnesses = [groups, rank = cfg.rank, k = plan.heartbeat.witnesses](int peer) {
        return groups.witnesses(rank, peer, k);
      };
      tc.unreachable = ms(plan.heartbeat.unreachable);
    }
    tc.notice_tag = SocketFaultPort::kRecoveringTag;
    tc.on_notice = [port](int peer, std::vector<uint8_t> bytes) { port->peer_notice(peer, bytes); };
  }
  tc.recv_timeout = cfg.timeout;
  tc.secret = cfg.secret;
  tc.connect_timeout = cfg.timeout;
  return tc;
}

/// A restarted rank's wait for the rank that hands it over (announced under `announce_key` as
/// rank + 1): that rank, or nothing if it gave up. Dead until the survivors reach the restart's
/// boundary, as long as they take (the coordinator ends the run at its deadline); polling the
/// store's counter every 20 ms, not timing anything. A full recovery's restart (`may_give_up`)
/// may never come (killed after the decision, or the run ended first): it gives up once every
/// rank but the waiting ones has finished, and arrives at the end barrier and leaves as its
/// killed predecessor would have.
std::optional<int> await_handover(StoreHandle& store, const std::string& key, const std::string& announce_key,
                                  const ProcessWorkerConfig& cfg, bool may_give_up) {
  const int P = cfg.world;
  if (may_give_up) store_add(store, key + "fr/waiting", 1);
  int64_t from = 0;
  while ((from = store_add(store, announce_key, 0)) == 0) {
    if (may_give_up && store_add(store, key + "end", 0) + store_add(store, key + "fr/waiting", 0) == P) {
      store_add(store, key + "fr/waiting", -1);  // first: the sum stays P for the others waiting
      if (store_add(store, key + "end", 1) == P) store_set(store, key + "end/done", {1});
      if (cfg.serve_store && store_add(store, key + "left", 1) == P - 1) store_set(store, key + "left/done", {1});
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (may_give_up) store_add(store, key + "fr/waiting", -1);
  return static_cast<int>(from - 1);
}

/// A restarted rank's report: its predecessor's part of the run (`pr`, up to its kill) added.
void add_predecessor(RankReport& rr, const RankReport& pr) {
  rr.wan_sent.messages += pr.wan_sent.messages;
  rr.wan_sent.payload_bytes += pr.wan_sent.payload_bytes;
  rr.wan_sent.wire_bytes += pr.wan_sent.wire_bytes;
  model::RankFaultLog l = *pr.faults;
  const model::RankFaultLog& mine = *rr.faults;
  l.detections.insert(l.detections.end(), mine.detections.begin(), mine.detections.end());
  l.resumed.insert(l.resumed.end(), mine.resumed.begin(), mine.resumed.end());
  l.slow.insert(l.slow.end(), mine.slow.begin(), mine.slow.end());
  l.handed.insert(l.handed.end(), mine.handed.begin(), mine.handed.end());
  l.rejoined_at_s = mine.rejoined_at_s;
  l.up_at_s = mine.up_at_s;
  l.heartbeats_sent += mine.heartbeats_sent;
  rr.faults = l;
}

/// Replica identity: every rank compares itself with the reporting rank's (`rep`) final
/// parameters `x` (n floats). The reporter publishes their hash and the parameters; a rank with
/// the same hash is identical (FNV-1a 64 over the bytes: not adversarial input) and reads nothing
/// more, so the check costs the WAN a few bytes unless the replicas differ. The largest difference
/// (0: the reporter, or identical).
double compare_with_reporter(StoreHandle& store, const std::string& key, int rank, int rep,
                             const float* x, size_t n) {
  const std::vector<uint8_t> my_hash = bytes_of(std::to_string(fnv1a64(x, n * sizeof(float))));
  const std::string rep_key = std::to_string(rep);
  if (rank == rep) {
    std::vector<uint8_t> blob(n * sizeof(float));
    std::memcpy(blob.data(), x, blob.size());
    store_set(store, key + "params/" + rep_key, blob);
    store_set(store, key + "params_hash/" + rep_key, my_hash);
    return 0;
  }
  if (store_get(store, key + "params_hash/" + rep_key) == my_hash) return 0;
  const std::vector<uint8_t> blob = store_get(store, key + "params/" + rep_key);
  if (blob.size() != n * sizeof(float))
    throw StoreError("rank " + rep_key + " published " + std::to_string(blob.size()) + " bytes of parameters, expected " +
                     std::to_string(n * sizeof(float)));
  std::vector<float> x0(n);
  std::memcpy(x0.data(), blob.data(), blob.size());
  return max_abs_diff(x, x0.data(), n);
}

/// Rank 0, when it serves the store, leaves last, once every other rank has read what it needs
/// (the last one to leave says so). A store process of its own outlives every rank.
void leave(StoreHandle& store, const std::string& key, const ProcessWorkerConfig& cfg) {
  const int P = cfg.world;
  if (!cfg.serve_store) return;
  if (cfg.rank != 0) {
    if (store_add(store, key + "left", 1) == P - 1) store_set(store, key + "left/done", {1});
  } else if (P > 1) {
    store_get(store, key + "left/done");
  }
}

}  // namespace

RankReport run_process_worker(const ProcessWorkerConfig& cfg, const StrategyConfig& scfg, const WorkloadSpec& work,
                              const Datasets& data, const std::function<void(int, int, double)>& progress,
                              const std::function<void()>& started, const ProcessCheckpointing& ckpt,
                              const ProcessFaults& faults) {
  if (auto e = validate(cfg); !e.empty()) throw std::invalid_argument(e);
  // Resuming: this rank's file, verified against the manifest and this run, before anything else.
  std::optional<Checkpoint> resume;
  if (!ckpt.resume.empty())
    resume = load_checkpoint(ckpt.resume, {.scenario_hash = ckpt.scenario_hash, .strategy = scfg.run_name(), .world = cfg.world},
                             {cfg.rank});
  const int P = cfg.world, M = cfg.layout.dcs();
  const StrategyInfo& info = find_strategy(scfg.name).needs;
  const std::string key = cfg.key_prefix + "/" + scfg.run_name() + "/";
  emu::SteadyClock clock;
  set_compute_threads(1);

  // Rendezvous first: a rank that cannot reach the store fails before loading anything big.
  TcpStoreConfig sc;
  sc.host = cfg.master_addr;
  sc.port = cfg.master_port;
  sc.server = cfg.rank == 0 && cfg.serve_store;
  sc.timeout = cfg.timeout;
  std::shared_ptr<StoreHandle> store = make_tcp_store(sc);

  // Same seed -> the same initial weights as every other rank and as the embedded mode.
  std::unique_ptr<Learner> learner = make_learner(work.model, work.seed);
  const size_t n = learner->num_params();
  Sgd opt(work.optimizer, n);
  const auto shards = make_partition(data.train, kFashionMnistClasses, work.partition, cfg.layout, work.seed);

  // Node faults: the scenario's heartbeats; a peer silent for timeout + confirmation is dead.
  std::unique_ptr<ProcessFaultAgent> faulted;  // the fault agent over its port
  SocketFaultPort* port = nullptr;
  const FaultGroups groups{cfg.layout, !info.needs_intra_dc || info.one_group};
  const bool restarted = faults.incarnation > 0;
  if (restarted && (!faults.plan.active() || !faults.predecessor || !faults.predecessor->faults ||
                    !faults.predecessor->faults->killed_at_step))
    throw std::invalid_argument("GEOTB_INCARNATION: " + std::to_string(faults.incarnation) +
                                ": a restarted rank needs the timeline's restart and its predecessor's rank file with its kill");
  if (faults.plan.active()) {
    faulted = std::make_unique<ProcessFaultAgent>(
        FaultAgentConfig{faults.plan, groups, cfg.rank, std::make_shared<const decltype(shards)>(shards), work.seed,
                         std::make_shared<const RestartSchedule>(restart_schedule(faults.plan, groups.layout))},
        clock);
    port = &faulted->port;
  }
  // Inter-rank messages over sockets: bind, publish host:port, learn everyone's, connect.
  const SocketTransportConfig tc = transport_config(cfg, faults.plan, groups, port);
  SocketTransport sock(tc);
  const std::string my_addr = cfg.bind_addr + ":" + std::to_string(sock.port());
  // In the rank's log: where its transport listens (what a peer, or a port scan, reaches).
  std::printf("geotb worker: rank %d: transport listening on %s\n", cfg.rank, my_addr.c_str());
  std::fflush(stdout);
  // Restarts: incarnation n of a rank publishes under addr/<rank>/<n>, learns from the store which
  // rank hands it over (rejoin/<rank>/<n>, rank + 1) and waits for that rank's message.
  auto addr_key = [&](int r, int n) {
    std::string k = key + "addr/" + std::to_string(r);
    if (n) k += '/' + std::to_string(n);  // ("/" + ... set off GCC 12's -Wrestrict, a false positive)
    return k;
  };
  auto rejoin_key = [&](int r, int n) { return key + "rejoin/" + std::to_string(r) + "/" + std::to_string(n); };
  std::vector<SocketEndpoint> peers;
  std::optional<RejoinMessage> rejoin;
  if (!restarted) {
    store_set(*store, addr_key(cfg.rank, 0), bytes_of(my_addr));
    for (int r = 0; r < P; ++r) peers.push_back(parse_endpoint(string_of(store_get(*store, addr_key(r, 0))), r));
  } else {
    store_set(*store, addr_key(cfg.rank, faults.incarnation), bytes_of(my_addr));
    const std::optional<int> from = await_handover(*store, key, rejoin_key(cfg.rank, faults.incarnation), cfg,
                                                   port && port->full_recovery_restarts());
    if (!from) {
      std::printf("geotb worker: rank %d: no full recovery restarted it; the run ended without it\n", cfg.rank);
      return *faults.predecessor;  // its part of the run: up to its kill
    }
    rejoin = decode_rejoin(sock.recv(*from, kRejoinTag));
    if (rejoin->words.size() != static_cast<size_t>(P) + 1 || rejoin->members.empty())
      throw RunError("rank " + std::to_string(cfg.rank) + ": the hand-over of rank " + std::to_string(*from) + " names " +
                     std::to_string(rejoin->words.size()) + " words (expected the Gloo prefix and " + std::to_string(P) +
                     " addresses)");
    for (int r = 0; r < P; ++r)
      peers.push_back(r == cfg.rank ? SocketEndpoint{cfg.bind_addr, sock.port()}
                                    : parse_endpoint(rejoin->words[static_cast<size_t>(r) + 1], r));
  }
  sock.start(peers);
  if (port) {
    port->attach(sock, tc.peer_timeout);
    port->set_endpoints(peers, RestartIo{
        [&](int r, int n) { return parse_endpoint(string_of(store_get(*store, addr_key(r, n))), r); },
        [&](int r, int n, int coordinator) { store_add(*store, rejoin_key(r, n), coordinator + 1); }});
    if (rejoin) {
      port->started(std::chrono::nanoseconds(faults.predecessor->faults->start_ns));
      if (rejoin->state.entries.empty()) {
        // A full recovery's restart: it reads the decision over the same store as the survivors
        // (and counts later deaths there as they do), and is up when they wait for it.
        port->enable_full_recovery(store, key);
        port->await_restarted_up();
      }
      faulted->agent.rejoined(rejoin->members, rejoin->steps, true);
    }
    // Every watched pair connected now, so that heartbeats flow and a death is seen on it.
    for (int p : groups.watched_by(cfg.rank))
      if (!port->recovered_from(p) && !sock.await_streams(p, cfg.timeout))
        throw PeerDeadError("rank " + std::to_string(cfg.rank) + ": streams to rank " + std::to_string(p) +
                            " not open within " + std::to_string(cfg.timeout.count()) + " ms");
  }
  std::vector<int> dc_of;
  for (int r = 0; r < P; ++r) dc_of.push_back(cfg.layout.dc_of(r));
  CountingTransport net(sock, dc_of, tc.chunk_bytes, sockframe::kHeaderBytes);

  WorkerEnv env;
  env.rank = cfg.rank;
  env.dc = cfg.dc;
  env.local_rank = cfg.local_rank;
  env.world = P;
  env.num_dcs = M;
  env.layout = cfg.layout;
  env.dc_weights = dc_mean_weights(cfg.layout, shards, work.dc_weights);
  env.dc_leaders = cfg.layout.leaders();
  for (int r = 0; r < P; ++r) env.ring.push_back(r);
  if (rejoin) env.ring = rejoin->ring;
  env.learner = learner.get();
  env.opt = &opt;
  AgentGuardedTransport guarded(net, port);
  env.net = port ? static_cast<Transport*>(&guarded) : &net;
  env.clock = &clock;
  env.wan_in = inbound_links(cfg.wan_links, env.dc, env.num_dcs);
  env.grad_tensors = tensor_sizes(work.model);
  env.tensor_shapes = tensor_shapes(work.model);
  env.make_normal = make_torch_normal_source;

  std::unique_ptr<IntraDc> intra;
  if (info.needs_intra_dc) {
    GlooOptions go;
    go.hostname = cfg.bind_addr;
    go.timeout = cfg.timeout;
    // Node faults: a member that went silent (a frozen host) holds a Gloo collective until its
    // timeout, which cannot be interrupted; end it once its death must have been declared
    // (peer_timeout + one interval), so that the survivors recover then, not at cfg.timeout.
    if (port)
      go.timeout = std::min(cfg.timeout, tc.peer_timeout + std::chrono::duration_cast<std::chrono::milliseconds>(
                                                               faults.plan.heartbeat.interval));
    const std::string base =
        info.one_group ? "all/" + scfg.run_name() : "dc" + std::to_string(cfg.dc) + "/" + scfg.run_name();
    // shrink and restarts rebuild it under a new prefix of the same store
    SocketFaultPort::Regroup regroup = [store, base, go](const std::vector<int>& members, int index, const std::string& name) {
      return make_gloo_group(store, base + "/" + name, index, static_cast<int>(members.size()), go);
    };
    if (rejoin) {  // the grown group its coordinator named
      const auto at = std::find(rejoin->members.begin(), rejoin->members.end(), cfg.rank);
      if (at == rejoin->members.end())
        throw RunError("rank " + std::to_string(cfg.rank) + ": the hand-over's group does not include it");
      intra = regroup(rejoin->members, static_cast<int>(at - rejoin->members.begin()), rejoin->words[0]);
    } else {
      intra = info.one_group ? make_gloo_group(store, base, cfg.rank, P, go)
                             : make_gloo_group(store, base, cfg.local_rank, cfg.layout.workers(cfg.dc), go);
    }
    env.intra = intra.get();
    if (port) port->adopt_group(std::move(intra), regroup);
  }

  // Full recovery: decided over the store (faults/socket_port.h); at the boundary every survivor
  // reads its own file of the last complete checkpoint (and with "restarts" so do the restarted).
  const bool full_recovery = port && port->full_recovery_possible() && !rejoin;
  if (full_recovery) {
    if (ckpt.dir.empty())
      throw RunError(scfg.name + ": " + std::to_string(faults.plan.kills()) + " kills of " + std::to_string(P) +
                     " workers can cross faults.full_recovery.above_fraction, and full recovery goes back to the last "
                     "checkpoint: give the run a checkpoint directory");
    port->enable_full_recovery(store, key);
  }
  SocketRankHost host({.rank = cfg.rank,
                       .world = P,
                       .store = store,
                       .key = key,
                       .serve_store = cfg.serve_store,
                       .clock = &clock,
                       .sock = &sock,
                       .peer_timeout = tc.peer_timeout,
                       .net = &net,
                       .faults = faulted.get(),
                       .env = &env,
                       .ckpt = &ckpt,
                       .run_name = scfg.run_name(),
                       .predecessor = faults.predecessor ? &*faults.predecessor : nullptr,
                       .started = started,
                       .full_recovery = full_recovery});
  const int rep = cfg.reporter;
  const RankPlan plan{scfg, work, data.train, shards[static_cast<size_t>(cfg.rank)],
                      cfg.rank == rep ? progress : nullptr,
                      resume ? &resume->ranks[static_cast<size_t>(cfg.rank)] : nullptr};
  WorkerRecord rec;
  // What this rank measured (so far, for a killed rank).
  auto measured = [&](RankReport& rr) {
    rr.strategy = scfg.name;
    rr.rank = cfg.rank;
    rr.dc = cfg.dc;
    rr.local_rank = cfg.local_rank;
    rr.times = env.times;
    rr.loss = rec.loss;
    rr.step_end_s = rec.step_end_s;
    rr.exchanges = env.exchanges;
    rr.wan_sent.messages = net.wan_messages();
    rr.wan_sent.payload_bytes = net.wan_payload_bytes();
    rr.wan_sent.wire_bytes = net.wan_wire_bytes();
    if (port) rr.faults = port->log();
  };
  // A restarted process: the state it was handed, or its own file of the checkpoint.
  std::optional<RankRejoin> back = rejoin ? std::optional(host.rejoin_from(*rejoin)) : std::nullopt;
  RankEnd end = RankEnd::kFinished;
  try {
    end = run_rank(host, plan, env, rec, std::move(back));
  } catch (...) {
    sock.clear_interrupt();
    net.close();  // peers blocked on this rank learn it now, not at their timeout
    throw;
  }
  if (end == RankEnd::kKilled) {
    // Its report so far handed out, then frozen until the coordinator's SIGKILL.
    RankReport rr;
    measured(rr);
    if (faults.killed) faults.killed(rr);
    for (;;) raise(SIGSTOP);
  }
  // Every rank passed the end barrier after finish(): every message sent has been received.
  net.close();

  // Replica identity: every rank compares itself with the reporting rank's final parameters
  // (rank 0, or the lowest rank the timeline never kills). It publishes their hash and the
  // parameters; a rank with the same hash is identical (FNV-1a 64 over the bytes: not
  // adversarial input) and reads nothing more, so the check costs the WAN a few bytes unless the
  // replicas differ.
  RankReport rr;
  measured(rr);
  if (faults.predecessor) add_predecessor(rr, *faults.predecessor);  // a restarted rank: its part before
  const float* x = learner->params();
  rr.replica_max_abs_diff = compare_with_reporter(*store, key, cfg.rank, rep, x, n);
  // The part before the checkpoint this run resumed from (its own file of it).
  if (const std::optional<WanCounters> before = plan.resume ? wan_counters_of(*plan.resume) : std::nullopt) {
    rr.wan_sent.messages += before->messages;
    rr.wan_sent.payload_bytes += before->payload_bytes;
    rr.wan_sent.wire_bytes += before->wire_bytes;
  }
  rr.refused_connections = sock.stats().incoming_refused;
  if (cfg.rank == rep) {
    rr.wall_s = std::chrono::duration<double>(host.end_instant() - host.start_instant()).count() +
                (plan.resume ? std::chrono::duration<double>(resume_point(*plan.resume).elapsed).count() : 0.0);
    rr.accuracy_curve = accuracy_curve(*learner, rec, work, P, data.test);
    rr.final_weights_sha256 = sha256_hex(x, n * sizeof(float));
  }
  leave(*store, key, cfg);
  return rr;
}

}  // namespace geotb::engine
