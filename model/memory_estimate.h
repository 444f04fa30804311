// What an embedded run will take of the host's memory, estimated before it starts, so that a
// scenario too large for the machine is refused with the estimate and the limit named instead
// of being killed by the kernel (or swapping) minutes in.
//
//   bytes = 150 MiB                                  the process: libtorch, Gloo, the binary
//         + (train + test examples) · inputs · 4 B   the dataset as float32, one copy
//         + workers · (0.9 MiB + 8 KiB · N           per worker: threads, mailboxes (N: the
//                      + 72 B · params)              largest DC's workers, its ring's peers),
//                                                    and 18 float32 copies of the trained model
//                                                    (parameters, gradients, optimizer and
//                                                    strategy state, collective buffers)
//         + DC pairs with a WAN link · 1.2 MiB       per link: both directions' queues and state
//
// With analytic intra-DC collectives (scenario lan.collectives, docs/guide/scale.md) no ring
// message is ever in flight:
//
//   bytes = 180 MiB + the dataset + workers · 52 B · params (13 float32 copies) + links · 0.3 MiB
//
// fitted on 2026-12-05 to fiber runs of 16 to 1,024 workers and 25k to 3.3M parameters: 0.5 % to
// 9.2 % above the measured maximum RSS (docs/measurements/scale-out.md).
//
// Fitted to `/usr/bin/time -f %M` of hier_ef_topk_int8 (the strategy with the most state) on
// 2026-12-03 (docs/measurements/scale-out.md, "Memory"): within 5 % of the measured maximum RSS
// from 16 to 1,024 workers (8 to 64 per DC) and from 25k to 3.3M parameters. The trained model's parameters count,
// not the represented model's: a represented model changes timing and bytes, not buffers.
#pragma once

#include <cstdint>
#include <string>

namespace geotb::model {

struct MemoryEstimateInput {
  int workers = 0;            ///< every worker of every DC
  int workers_per_dc = 0;     ///< the largest DC's workers
  int dc_pairs = 0;           ///< WAN links (DC pairs that talk)
  uint64_t params = 0;        ///< the trained model's parameters
  uint64_t examples = 0;      ///< train + test examples loaded
  uint64_t inputs = 784;      ///< features per example
  bool analytic_collectives = false;  ///< lan.collectives "analytic": the second formula above
};

struct MemoryEstimate {
  uint64_t bytes = 0;
  std::string breakdown;  ///< "150 MiB + dataset 51 MiB + 32 workers x 3 MiB (...) + 6 links x 1.2 MiB"
};

MemoryEstimate estimate_embedded_memory(const MemoryEstimateInput& in);

/// MemAvailable of /proc/meminfo in bytes; 0 if it cannot be read.
uint64_t available_memory_bytes();

/// "1.5 GiB", "820 MiB".
std::string format_mib(uint64_t bytes);

}  // namespace geotb::model
