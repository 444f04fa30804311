#include "engine/strategies/descriptor.h"

#include "common/units.h"
#include "engine/collectives/buckets.h"

#include <cmath>

namespace geotb::engine {

const StrategyKey* StrategyDescriptor::key(std::string_view k) const {
  for (const StrategyKey* s : keys)
    if (s->name == k) return s;
  return nullptr;
}

std::string StrategyDescriptor::validate(const StrategyConfig& c) const {
  for (const StrategyKey* k : keys)
    if (k->check)
      if (std::string e = k->check(c); !e.empty()) return e;
  return "";
}

std::vector<std::pair<std::string_view, KeyValue>> StrategyDescriptor::report(const StrategyConfig& c) const {
  std::vector<std::pair<std::string_view, KeyValue>> out;
  for (const StrategyKey* k : reported)
    if (!k->shown || k->shown(c)) out.emplace_back(k->name, k->get(c));
  return out;
}

namespace {

bool k_is_auto(const StrategyConfig& c) { return c.K_auto; }

}  // namespace

namespace strategy_keys {

// The integer keys' [lo, hi] are what the field can hold; `check` states the valid range.
extern constexpr StrategyKey K{
    .name = "K",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.K = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.K}}; },
    .check = [](const StrategyConfig& c) {
      return c.K < 1 || c.K > 100000 ? "K: " + show_value(c.K) + ": must be in [1, 100000] steps" : std::string();
    },
};

// "K": "auto" or an integer. The auto keys are checked here, where every one of them is known.
extern constexpr StrategyKey K_or_auto{
    .name = "K",
    .kind = StrategyKey::Kind::kSteps,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) {
      if (const auto* s = std::get_if<std::string>(&v)) {
        c.K_auto = *s == "auto";
      } else {
        c.K_auto = false;
        c.K = static_cast<int>(std::get<int64_t>(v));
      }
    },
    .get = [](const StrategyConfig& c) { return c.K_auto ? KeyValue{std::string("auto")} : KeyValue{int64_t{c.K}}; },
    .check = [](const StrategyConfig& c) {
      if (!c.K_auto) {
        if (c.K < 1 || c.K > 100000) return "K: " + show_value(c.K) + ": must be in [1, 100000] steps";
        if (c.K_min != StrategyConfig{}.K_min || c.K_max != StrategyConfig{}.K_max ||
            c.K_target != StrategyConfig{}.K_target)
          return "K: " + show_value(c.K) + ": K_min, K_max and K_target are for \"K\": \"auto\"";
        return std::string();
      }
      if (!c.overlap)
        return std::string("K: \"auto\": needs \"overlap\": true (auto K hides the exchange behind the next "
                           "K steps; a blocking exchange is never hidden)");
      if (c.K_min < 1 || c.K_min > 100000) return "K_min: " + show_value(c.K_min) + ": must be in [1, 100000] steps";
      if (c.K_max < c.K_min || c.K_max > 100000)
        return "K_max: " + show_value(c.K_max) + ": must be in [K_min = " + show_value(c.K_min) + ", 100000] steps";
      if (!(c.K_target > 0 && c.K_target < 1)) return "K_target: " + show_value(c.K_target) + ": must be in (0, 1)";
      return std::string();
    },
};

extern constexpr StrategyKey K_min{
    .name = "K_min",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.K_min = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.K_min}}; },
    .shown = k_is_auto,
};

extern constexpr StrategyKey K_max{
    .name = "K_max",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.K_max = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.K_max}}; },
    .shown = k_is_auto,
};

extern constexpr StrategyKey K_target{
    .name = "K_target",
    .kind = StrategyKey::Kind::kNumber,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.K_target = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.K_target}; },
    .shown = k_is_auto,
};

extern constexpr StrategyKey density{
    .name = "density",
    .kind = StrategyKey::Kind::kFraction,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.density = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.density}; },
    .check = [](const StrategyConfig& c) {
      return !std::isfinite(c.density) || c.density <= 0 || c.density > 1
                 ? "density: " + show_value(c.density) + ": must be in (0, 100%]"
                 : std::string();
    },
};

extern constexpr StrategyKey bucket_mb{
    .name = "bucket_mb",
    .kind = StrategyKey::Kind::kNumber,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.bucket_mb = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.bucket_mb}; },
    .check = [](const StrategyConfig& c) { return check_bucket_mb(c.bucket_mb); },
};

extern constexpr StrategyKey block{
    .name = "block",
    .kind = StrategyKey::Kind::kInteger,
    .lo = 0,
    .hi = 1 << 30,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.block = static_cast<uint32_t>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.block}}; },
    .check = [](const StrategyConfig& c) {
      return c.block < 1 || c.block > (1u << 20) ? "block: " + show_value(c.block) + ": must be in [1, 1048576] elements"
                                                 : std::string();
    },
};

extern constexpr StrategyKey overlap{
    .name = "overlap",
    .kind = StrategyKey::Kind::kFlag,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.overlap = std::get<bool>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.overlap}; },
};

extern constexpr StrategyKey wire16{
    .name = "wire",
    .kind = StrategyKey::Kind::kText,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.wire = std::get<std::string>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.wire}; },
    .check = [](const StrategyConfig& c) {
      return c.wire != "float32" && c.wire != "bf16" && c.wire != "fp16"
                 ? "wire: \"" + c.wire + "\": unknown (float32, bf16 or fp16)"
                 : std::string();
    },
    // float32 is the default: a float32 run's report stays as it was before 16-bit wires.
    .shown = [](const StrategyConfig& c) { return c.wire != "float32"; },
};

extern constexpr StrategyKey quorum{
    .name = "quorum",
    .kind = StrategyKey::Kind::kText,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.quorum = std::get<std::string>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.quorum}; },
    .check = [](const StrategyConfig& c) {
      if (c.quorum.empty()) return std::string();  // off
      std::chrono::nanoseconds d{0};
      try {
        d = common::parse_duration(c.quorum);
      } catch (const std::exception& e) {
        return "quorum: \"" + c.quorum + "\": " + e.what() + " (the time a link must stay down, e.g. \"5s\")";
      }
      if (d < std::chrono::milliseconds(1) || d > std::chrono::hours(1))
        return "quorum: \"" + c.quorum + "\": must be in [1ms, 1h]";
      if (c.overlap)
        return "quorum: \"" + c.quorum + "\": needs \"overlap\": false (rounds under a quorum are blocking for now)";
      if (c.K_auto) return "quorum: \"" + c.quorum + "\": needs a fixed K";
      return std::string();
    },
    .shown = [](const StrategyConfig& c) { return !c.quorum.empty(); },
};

extern constexpr StrategyKey quantize{
    .name = "quantize",
    .kind = StrategyKey::Kind::kFlag,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.quantize = std::get<bool>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.quantize}; },
};

}  // namespace strategy_keys

}  // namespace geotb::engine
