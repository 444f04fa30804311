#include "engine/strategies/table.h"

#include <array>

namespace geotb::engine {

// Defined in the strategies' own files.
extern const StrategyDescriptor kNaiveDdp;       // naive_ddp.cc
extern const StrategyDescriptor kNaiveDdpC10d;   // lan_ddp.cc
extern const StrategyDescriptor kHierarchical;   // hier_ef_topk_int8.cc
extern const StrategyDescriptor kHierEfTopkInt8; // hier_ef_topk_int8.cc
extern const StrategyDescriptor kLan;            // lan_ddp.cc
extern const StrategyDescriptor kLocalSgd;       // local_sgd.cc
extern const StrategyDescriptor kDiloco;         // diloco.cc
extern const StrategyDescriptor kPowerSgd;       // powersgd.cc
extern const StrategyDescriptor kQsgd;           // qsgd.cc
extern const StrategyDescriptor kAsyncEfTopkInt8; // async_ef_topk_int8.cc

namespace {
constexpr std::array<const StrategyDescriptor*, 10> kTable = {
    &kNaiveDdp, &kNaiveDdpC10d, &kHierarchical, &kHierEfTopkInt8, &kLan, &kLocalSgd, &kDiloco, &kPowerSgd, &kQsgd,
    &kAsyncEfTopkInt8};
}  // namespace

std::span<const StrategyDescriptor* const> strategy_table() { return kTable; }

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const StrategyDescriptor* d : kTable) v.emplace_back(d->name);
    return v;
  }();
  return names;
}

const StrategyDescriptor& find_strategy(std::string_view name) {
  for (const StrategyDescriptor* d : kTable)
    if (d->name == name) return *d;
  std::string msg = "name: \"";
  msg.append(name).append("\": unknown strategy (one of");
  for (const StrategyDescriptor* d : kTable) msg.append(" ").append(d->name);
  throw UnknownStrategy(msg.append(")"));
}

}  // namespace geotb::engine
