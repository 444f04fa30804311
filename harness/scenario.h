// Scenario files (scenarios/*.json): the schema is documented in docs/guide/scenario.md.
// Only the harness parses JSON; it turns a scenario into the engine's and emulator's structs.
// Every error names the field path and the value: `wan[0].bandwidth: "10Gbs": unknown unit ...`.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cluster.h"
#include "model/faults.h"
#include "model/report.h"
#include "model/represented.h"
#include "engine/errors.h"
#include "engine/strategy.h"
#include "harness/network_mode.h"

namespace geotb::harness {

/// A bad scenario: a configuration error (engine::ErrorKind::kConfig, exit status 2).
class ScenarioError : public engine::ConfigError {
 public:
  using engine::ConfigError::ConfigError;
};

struct Scenario {
  int schema = 1;
  std::string name;
  std::string description;
  uint64_t seed = 42;
  engine::ClusterSpec cluster;
  engine::WorkloadSpec workload;
  std::string dataset = "fashion-mnist";
  std::string partition = "iid";
  size_t train_limit = 0;  ///< 0 = all 60000 training examples
  size_t test_limit = 0;   ///< 0 = all 10000 test examples
  /// workload.target_accuracy: the test accuracy whose first crossing is the time to accuracy
  /// (model::TimeToAccuracy); absent: not measured.
  std::optional<double> target_accuracy;
  /// workload.represents (docs/guide/represented.md): the model whose communication and compute
  /// the timing stands for; absent: the trained model itself.
  std::optional<model::RepresentedModel> represented;
  /// The represented model's tensors (elements, parameter order): a catalog entry's or the
  /// declared shapes; empty for a declared count (DDP's buckets then cut it flat).
  std::vector<uint64_t> represented_tensors;
  /// Their shapes (catalog or declared tensors; empty for a declared count): PowerSGD's matrices.
  std::vector<std::vector<int64_t>> represented_shapes;
  std::vector<engine::StrategyConfig> strategies;
  NetworkMode network = NetworkMode::kEmbedded;  ///< scenario "network" (docs/guide/network-modes.md)
  /// The embedded mode's clock (docs/guide/clocks.md): virtual (default) or wall; the process modes
  /// run in wall time only.
  engine::ClockMode clock = engine::ClockMode::kVirtual;
  /// Declared compute, one per data center in `cluster.dcs` order (scenario `compute`, overridden
  /// per DC by `datacenters[i].compute`): the virtual clock charges it instead of CPU time. Empty:
  /// no profile (compute = measured thread CPU time).
  std::vector<engine::ComputeProfile> compute;
  /// The scenario's top-level `compute`, if any (what every DC without its own override uses).
  std::optional<engine::ComputeProfile> compute_default;
  /// Beside `compute`, same order: how each DC's profile was derived from the hardware (`compute`
  /// with "gpu": model/hardware.h), or nullopt for a declared step_time. Empty when `compute` is.
  std::vector<std::optional<model::ComputeDerivation>> compute_derived;
  /// Beside `compute`, same order: the calibrate output a DC's profile came from, if it did
  /// (`compute.calibrated`). Empty when `compute` is.
  std::vector<std::optional<model::CalibrationSource>> compute_calibrated;
  /// TCP congestion control of the DC hosts, set in every DC namespace in dpdk mode: "auto" (the
  /// first of cubic, reno the host lets a namespace use: loss-based and unpaced, what the
  /// in-process model assumes), "default" (leave the namespace's, inherited from the host), or a
  /// kernel name (reno, cubic, bbr, ...). docs/guide/network-modes.md.
  std::string tcp_congestion_control = "auto";
  /// The scenario's `checkpoint` (docs/guide/checkpoints.md): where and how often a run checkpoints.
  struct Checkpointing {
    std::string dir;          ///< "" = no checkpoints (unless `geotb run --checkpoint-dir`)
    int every_steps = 0;      ///< 0 = only on request (SIGUSR1)
    /// SHA-256 of the scenario without its `checkpoint` block: what a checkpoint belongs to.
    std::string training_hash;
  } checkpoint;
  /// Node faults (timeline kill/restart/slow, top-level "faults"): docs/guide/faults.md.
  model::FaultPlan faults;
  model::CheckTolerances check;  ///< the scenario's `check` (the gate's tolerances, model/report.h)
  nlohmann::json raw;      ///< the file as parsed
  std::string hash;        ///< SHA-256 of the canonical JSON (sorted keys, no whitespace)
};

/// Throws ScenarioError("<field>: \"<value>\": ...") unless `v` is a valid tcp_congestion_control:
/// "auto", "default" or a kernel congestion control name ([a-z0-9_], 1-15 characters).
void validate_tcp_congestion_control(const std::string& field, const std::string& v);
/// The in-process TCP model's congestion avoidance for a tcp_congestion_control value: "reno" is
/// Reno; "auto", "cubic" and anything else CUBIC (auto prefers cubic; the model has no BBR).
emu::CcAlgorithm model_congestion_control(const std::string& v);

/// Throws ScenarioError naming the field unless the scenario's node faults run in its network
/// mode and clock (sc.network, sc.clock: `geotb run --net/--clock` may change them after parsing):
/// the embedded mode on the virtual clock; the process and dpdk modes kills at a step only.
void check_faults_for_mode(const Scenario& sc);
/// Throws ScenarioError naming `datacenters` when the mode holds fewer data centers
/// (ModeTraits::max_datacenters).
void check_sites_for_mode(const Scenario& sc);
/// Throws ScenarioError naming the field unless the scenario's represented model (if it differs
/// from the trained one) runs in its mode: embedded, virtual clock, a compute profile, and no
/// naive_ddp on Gloo's ring (its per-MiB rendezvous count grows with the model: eager_ring).
void check_represented_for_mode(const Scenario& sc);
/// Throws ScenarioError naming `lan.collectives` unless "analytic" collectives can time this run:
/// embedded mode, virtual clock, a compute profile, no node faults, no LAN loss, jitter or queue.
void check_lan_collectives(const Scenario& sc);
/// Strategies that run on the embedded mode's virtual clock only, or without checkpoints
/// (descriptor's virtual_time_only, no_checkpoints): refused elsewhere, naming the field. Also
/// called by `geotb run` after its --net/--clock/--checkpoint-dir overrides, with the strategies
/// --strategies chose (`only`: their run names; null: every one).
void check_strategies_for_mode(const Scenario& sc, const std::vector<std::string>* only = nullptr);

/// Reads and validates a scenario file. Throws ScenarioError("<path>: <field>: <value>: <why>").
/// A timeline trace's path is relative to the file's directory.
Scenario load_scenario(const std::string& path);
/// load_scenario for a command: the scenario, or nullopt with "geotb: error: <its message>" on
/// stderr (the command then exits 2: a bad scenario).
std::optional<Scenario> load_scenario_or_report(const std::string& path);
/// Validates parsed JSON; `origin` prefixes error messages. `dir` is the directory a timeline
/// entry's "trace" path is relative to (the scenario file's; "": the current directory).
Scenario parse_scenario(const nlohmann::json& j, const std::string& origin, const std::string& dir = "");

}  // namespace geotb::harness
