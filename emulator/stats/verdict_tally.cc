#include "emulator/stats/verdict_tally.h"

#include <algorithm>

namespace geotb::emu {

std::vector<VerdictCount> tally_verdicts(const std::vector<std::vector<std::pair<std::string, bool>>>& runs) {
  std::vector<VerdictCount> out;
  for (const auto& run : runs)
    for (const auto& [name, ok] : run) {
      auto it = std::find_if(out.begin(), out.end(), [&](const VerdictCount& v) { return v.name == name; });
      if (it == out.end()) {
        out.push_back({name, 0, static_cast<int>(runs.size())});
        it = out.end() - 1;
      }
      it->passed += ok ? 1 : 0;
    }
  return out;
}

}  // namespace geotb::emu
