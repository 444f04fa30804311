// The strategy registry: names, what each needs from the cluster, validation, factories.
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "engine/strategies/strategies.h"

namespace geotb::engine {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"naive_ddp", "naive_ddp_c10d", "hierarchical", "hier_ef_topk_int8",
                                                 "lan"};
  return names;
}

StrategyInfo strategy_info(const std::string& name) {
  if (name == "naive_ddp") return {.needs_intra_dc = false, .one_group = false, .exchanges_every_step = true};
  if (name == "lan")
    return {.needs_intra_dc = true, .one_group = true, .exchanges_every_step = false, .co_located = true};
  // DDP itself: one c10d ProcessGroupGloo spanning the data centers, its TCP through the real WAN.
  if (name == "naive_ddp_c10d")
    return {.needs_intra_dc = true, .one_group = true, .exchanges_every_step = true, .co_located = false,
            .real_network_only = true};
  if (name == "hierarchical" || name == "hier_ef_topk_int8")
    return {.needs_intra_dc = true, .one_group = false, .exchanges_every_step = false};
  throw std::invalid_argument("unknown strategy \"" + name + "\"");
}

std::string validate(const StrategyConfig& c) {
  std::ostringstream os;
  bool known = false;
  for (const auto& n : strategy_names()) known |= n == c.name;
  if (!known) {
    os << "name: \"" << c.name << "\": unknown strategy (one of";
    for (const auto& n : strategy_names()) os << " " << n;
    os << ")";
  } else if (c.K < 1 || c.K > 100000) {
    os << "K: " << c.K << ": must be in [1, 100000] steps";
  } else if (!std::isfinite(c.density) || c.density <= 0 || c.density > 1) {
    os << "density: " << c.density << ": must be in (0, 100%]";
  } else if (c.block < 1 || c.block > (1u << 20)) {
    os << "block: " << c.block << ": must be in [1, 1048576] elements";
  } else if (c.collective != "gloo_ring" && c.collective != "eager_ring") {
    os << "collective: \"" << c.collective << "\": unknown (gloo_ring or eager_ring)";
  }
  return os.str();
}

std::unique_ptr<Strategy> make_strategy(const StrategyConfig& cfg, const WorkerEnv& env) {
  if (cfg.name == "naive_ddp") return make_naive_ddp(cfg, env);
  if (cfg.name == "lan" || cfg.name == "naive_ddp_c10d") return make_lan_ddp(cfg, env);
  if (cfg.name == "hier_ef_topk_int8") return make_hier_ef_topk_int8(cfg, env);
  if (cfg.name == "hierarchical") {
    StrategyConfig dense = cfg;
    dense.density = 1.0;
    dense.quantize = false;
    return make_hier_ef_topk_int8(dense, env);
  }
  throw std::invalid_argument("unknown strategy \"" + cfg.name + "\"");
}

}  // namespace geotb::engine
