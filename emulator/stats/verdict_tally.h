// Pass counts of repeated verdicts (`geotb fidelity --repeat N`): how often each check held.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace geotb::emu {

struct VerdictCount {
  std::string name;
  int passed = 0;  ///< runs in which the verdict was true
  int runs = 0;    ///< all runs, including those where it was absent or the run failed (not passed)
};

/// One entry per verdict name, in the order first seen; `runs` is runs.size() for every name (a
/// verdict missing from a run, e.g. a run that failed before measuring it, counts as not passed).
std::vector<VerdictCount> tally_verdicts(const std::vector<std::vector<std::pair<std::string, bool>>>& runs);

}  // namespace geotb::emu
