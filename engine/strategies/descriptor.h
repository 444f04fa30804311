// A strategy's descriptor: everything the engine and the harness need to know about a strategy,
// in the strategy's own file. The table (strategies/table.h) lists every descriptor; nothing else
// branches on a strategy's name. JSON stays out: the harness reads each key by its kind (its own
// unit parsers, its own error prefixes) and writes the reported values; the descriptor says which
// keys, their ranges and checks, and builds the strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <sstream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "engine/strategy.h"

namespace geotb::engine {

/// What a strategy needs from the cluster (embedded mode) or the process runner.
struct StrategyInfo {
  bool needs_intra_dc = false;   ///< wants a Gloo group (env.intra) per DC
  bool one_group = false;        ///< with needs_intra_dc: one group of every worker (all in one DC)
  bool exchanges_every_step = false;  ///< every step is one inter-DC exchange (flat allreduce)
  bool co_located = false;       ///< with one_group: every worker placed in DC 0 (the `lan` reference)
  /// The strategy's WAN traffic is c10d Gloo's own TCP, which only a real network carries (the
  /// process and dpdk modes); the embedded mode's Gloo runs over loopback, beside the WAN model.
  bool real_network_only = false;
  /// Survives node kills with the shrink policy (engine/faults/): survivors rebuild its groups
  /// and it implements Strategy::discard_step.
  bool survives_kills = false;
  /// Its messages depend on the model's tensor shapes (PowerSGD's factors): a represented model
  /// must give them (WorkerEnv::represented_shapes).
  bool tensor_shapes = false;
  /// Runs only on the embedded mode's virtual clock: its sites apply what has arrived by their
  /// own instant (Transport::poll), which only virtual time answers exactly.
  bool virtual_time_only = false;
  /// Cannot be checkpointed: its sites are at different steps at any instant, with updates in
  /// flight, so there is no consistent cut at a step (async_ef_topk_int8).
  bool no_checkpoints = false;
};

/// A config key's value as read from a scenario or shown in a report.
using KeyValue = std::variant<int64_t, double, bool, std::string>;

/// One key of a strategy's scenario entry ("K", "density", ...), bound to its StrategyConfig field.
struct StrategyKey {
  enum class Kind {
    kInteger,   ///< a JSON integer in [lo, hi] (the field's representable range; `check` narrows it)
    kFraction,  ///< a probability: 0.01, "1e-4" or "1%" (the harness's unit parser)
    kFlag,      ///< true or false
    kText,      ///< a string
    kNumber,    ///< a JSON number (`check` states the valid range)
    kSteps,     ///< a JSON integer in [lo, hi] (int64_t) or the string "auto" (std::string)
  };
  std::string_view name;
  Kind kind = Kind::kInteger;
  int64_t lo = 0, hi = 0;  ///< kInteger only
  /// Stores a value of `kind` (int64_t, double, bool, std::string) into the field.
  void (*set)(StrategyConfig&, const KeyValue&) = nullptr;
  /// The field's value, of `kind`'s type.
  KeyValue (*get)(const StrategyConfig&) = nullptr;
  /// "" if the field's value is valid, else "<key>: <value>: <why>"; null: any value is.
  std::string (*check)(const StrategyConfig&) = nullptr;
  /// Whether the report shows the key for this config; null: always (K_min only with "K": "auto").
  bool (*shown)(const StrategyConfig&) = nullptr;
};

/// A key's value as its check messages show it ("8", "0.05", "inf": ostream's default, %g-like).
template <typename T>
std::string show_value(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// The keys every strategy accepts (each strategy lists them in its `keys`).
namespace strategy_keys {
extern const StrategyKey K;         ///< steps between inter-DC exchanges, [1, 100000]
extern const StrategyKey K_or_auto; ///< K, or "auto" (strategies/adaptive_k.h)
extern const StrategyKey K_min;     ///< with "K": "auto": the smallest K, steps
extern const StrategyKey K_max;     ///< with "K": "auto": the largest K, steps
extern const StrategyKey K_target;  ///< with "K": "auto": the target utilisation, (0, 1)
extern const StrategyKey density;   ///< fraction of elements sent per exchange, (0, 1]
extern const StrategyKey block;     ///< INT8 block size, [1, 2^20] elements
extern const StrategyKey overlap;   ///< exchange in the background, applied one round late
extern const StrategyKey quantize;  ///< INT8 values (false: float32)
extern const StrategyKey bucket_mb; ///< DDP's bucket_cap_mb of every DDP allreduce (strategies/ddp_buckets.h)
/// "wire": "float32" (default), "bf16" or "fp16": naive_ddp's gradient allreduce and hierarchical's
/// exchange in 16 bits (kernels/wire16.h); reported only when not float32.
extern const StrategyKey wire16;
/// hier_ef_topk_int8 and hierarchical: rounds under a quorum of sites (faults/quorum.h): how long
/// a link must stay down before its sites are separated, e.g. "5s"; absent: off. Reported when on.
extern const StrategyKey quorum;
}  // namespace strategy_keys

struct StrategyDescriptor {
  std::string_view name;
  std::string_view description;  ///< one line
  StrategyInfo needs;
  std::span<const StrategyKey* const> keys;      ///< accepted in its scenario entry, checked in this order
  std::span<const StrategyKey* const> reported;  ///< shown in the report's "config" after "name", in order
  /// Builds one worker's strategy from a config this descriptor validated.
  std::unique_ptr<Strategy> (*make)(const StrategyConfig& cfg, const WorkerEnv& env) = nullptr;

  /// The accepted key `key`, or null.
  const StrategyKey* key(std::string_view key) const;
  /// "" if every accepted key's value is valid, else the first "<key>: <value>: <why>" (the
  /// caller prefixes the entry's path).
  std::string validate(const StrategyConfig& c) const;
  /// The reported keys and their values, in order.
  std::vector<std::pair<std::string_view, KeyValue>> report(const StrategyConfig& c) const;
};

}  // namespace geotb::engine
