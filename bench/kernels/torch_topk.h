// torch::topk reference for the kernel benchmarks, in its own translation unit so that only
// torch_topk.cc pays for the libtorch headers (~25 s per TU).
#pragma once

#include <cstddef>
#include <string>

namespace geotb::bench {

/// True when the binary was built with libtorch.
bool torch_available();

/// What a user would write: torch::topk(torch::from_blob(v, n).abs(), k). Runs once; returns the
/// sum of the selected indices so the call cannot be optimised away. device: "cpu" or "cuda"
/// (v is then a device pointer).
long long torch_topk_abs(const float* v, size_t n, size_t k, const std::string& device = "cpu");

/// Intra-op threads torch uses (torch::get_num_threads()), for the report.
int torch_threads();

}  // namespace geotb::bench
