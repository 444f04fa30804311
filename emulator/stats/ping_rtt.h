// Round-trip times of a ping run, one per echo reply, and their summary.
//
// ping prints one line per reply, "64 bytes from 10.77.1.1: icmp_seq=7 ttl=64 time=30.1 ms";
// its own summary line gives min/avg/max/mdev only, and the average is what a single slow echo
// skews (the first after a data plane starts, a scheduling stall): the fidelity verdict uses the
// median of the per-reply times instead, with the minimum beside it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace geotb::emu {

/// The "time=X ms" of every reply line, in order (ms). Lines without one (the header, timeouts,
/// the summary) are skipped; "time=X s" / "time=X us" are converted.
std::vector<double> parse_ping_times_ms(const std::string& output);

struct RttSummary {
  size_t count = 0;
  double min_ms = 0, median_ms = 0, mean_ms = 0, max_ms = 0;
};

/// min, median (mean of the middle two for an even count), mean, max. Throws
/// std::invalid_argument when `ms` is empty.
RttSummary summarize_rtts(const std::vector<double>& ms);

}  // namespace geotb::emu
