// Node faults: what a scenario's timeline injects (kill, restart, slow a worker), how workers
// detect a dead peer (heartbeats), and what a run's report records about them ("faults").
// Torch-free and engine-free: the harness fills the plan from the scenario, the embedded cluster
// executes it (engine/faults/), the report carries the record. README "Node faults".
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace geotb::model {

using nlohmann::json;

/// One event of the scenario's timeline that acts on a worker (not on a link).
struct FaultEvent {
  enum class Kind : uint8_t { kKill, kRestart, kSlow };
  Kind kind = Kind::kKill;
  int dc = 0;      ///< data center index (scenario order)
  int worker = 0;  ///< local rank in that data center
  /// When: at the start of this step's synchronisation (0-based step index; deterministic across
  /// modes), or at this instant from the start of training (the worker's first step boundary at
  /// or after it). Exactly one is set.
  std::optional<int> at_step;
  std::optional<std::chrono::nanoseconds> at;
  /// kSlow: compute charged `factor` times, for `steps` steps or for `duration` (exactly one).
  double factor = 1;
  std::optional<int> steps;
  std::optional<std::chrono::nanoseconds> duration;
};

std::string to_string(FaultEvent::Kind k);

/// Heartbeats between peers (engine/faults/heartbeat.h): every `interval` each worker sends one
/// to every peer it watches; a peer silent for `timeout` is suspected, and declared dead if still
/// silent `confirmation` later (a heartbeat in between clears the suspicion: a congested link is
/// not a dead node). Defaults: 2 s, 3 s, 2 s.
struct HeartbeatConfig {
  std::chrono::nanoseconds interval{std::chrono::seconds(2)};
  std::chrono::nanoseconds timeout{std::chrono::seconds(3)};
  std::chrono::nanoseconds confirmation{std::chrono::seconds(2)};
};

/// The scenario's node faults and how the cluster handles them.
struct FaultPlan {
  std::vector<FaultEvent> events;  ///< in timeline order
  /// Heartbeats run when the scenario has a "faults" object or any fault event.
  bool heartbeats = false;
  HeartbeatConfig heartbeat;
  std::string policy = "shrink";  ///< what survivors do: "shrink" (the only one)
  std::string shard = "drop";     ///< the dead worker's data: "drop" or "redistribute" to its DC's survivors
  bool active() const { return heartbeats || !events.empty(); }
  bool has_kills() const;
};

/// A peer declared dead by one worker's heartbeat monitor ("detections" entries).
struct Detection {
  int observer = 0;          ///< global rank that declared it
  int peer = 0;              ///< global rank declared dead
  double at_s = 0;           ///< when, seconds since the start of training
  double last_heard_s = 0;   ///< the peer's last heartbeat arrived then (the start if never)
  double suspected_s = 0;    ///< when it was first suspected (last_heard + timeout)
};
void to_json(json& j, const Detection& d);
void from_json(const json& j, Detection& d);

/// One fault event as it happened ("events" entries).
struct FaultRecord {
  std::string event;             ///< "kill", "restart" or "slow"
  int rank = 0, dc = 0, worker = 0;
  double at_s = 0;               ///< when it took effect, seconds since the start of training
  int step = 0;                  ///< the step it took effect at
  /// kill: the first detection of it (who and when; latency from at_s). Absent: never detected.
  std::optional<int> detected_by;
  std::optional<double> detected_at_s;
  std::optional<double> detection_latency_s;
  std::string policy;            ///< kill: the recovery policy ("shrink"); restart: "rejoin"; slow: "none"
  /// kill: first detection -> the last survivor resumed training; restart: -> rejoined.
  std::optional<double> recovery_s;
  int steps_lost = 0;            ///< steps the survivors discarded (the step in flight)
  int survivors = 0;             ///< kill: members of the rebuilt group
  std::optional<double> factor;  ///< slow
  std::optional<double> until_s; ///< slow: when it ended (absent: still slow at the end)
};
void to_json(json& j, const FaultRecord& f);
void from_json(const json& j, FaultRecord& f);

/// A strategy's "faults" section.
struct FaultsSection {
  double heartbeat_interval_s = 0, heartbeat_timeout_s = 0, heartbeat_confirmation_s = 0;
  std::string policy, shard;
  std::vector<FaultRecord> events;
  std::vector<Detection> detections;  ///< every detection by every worker, in time order
  /// Detections of a peer that was not dead (no kill of it before the detection).
  int false_detections = 0;
  uint64_t heartbeats_sent = 0;
};
void to_json(json& j, const FaultsSection& f);
void from_json(const json& j, FaultsSection& f);

}  // namespace geotb::model
