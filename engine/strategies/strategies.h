// Factories of the strategies, one file each (registered in strategies/registry.cc).
#pragma once

#include <memory>

#include "engine/strategy.h"

namespace geotb::engine {

std::unique_ptr<Strategy> make_naive_ddp(const StrategyConfig& cfg, const WorkerEnv& env);
std::unique_ptr<Strategy> make_lan_ddp(const StrategyConfig& cfg, const WorkerEnv& env);
std::unique_ptr<Strategy> make_hier_ef_topk_int8(const StrategyConfig& cfg, const WorkerEnv& env);

}  // namespace geotb::engine
