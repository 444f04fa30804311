// The strategy table: every strategy's descriptor (strategies/descriptor.h), looked up by name.
// Adding a strategy touches its own file, table.cc and its test.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/strategies/descriptor.h"

namespace geotb::engine {

/// A name the table does not have.
class UnknownStrategy : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Every strategy, in the order help and errors list them.
std::span<const StrategyDescriptor* const> strategy_table();
/// The table's names, in table order.
const std::vector<std::string>& strategy_names();
/// The descriptor named `name`. Throws UnknownStrategy
/// `name: "<name>": unknown strategy (one of naive_ddp naive_ddp_c10d ...)`.
const StrategyDescriptor& find_strategy(std::string_view name);

}  // namespace geotb::engine
