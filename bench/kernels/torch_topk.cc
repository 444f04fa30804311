#include "torch_topk.h"

#include <torch/torch.h>

namespace geotb::bench {

bool torch_available() { return true; }

long long torch_topk_abs(const float* v, size_t n, size_t k, const std::string& device) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(torch::Device(device));
  torch::NoGradGuard no_grad;
  torch::Tensor t = torch::from_blob(const_cast<float*>(v), {static_cast<int64_t>(n)}, opts);
  auto [values, indices] = torch::topk(t.abs(), static_cast<int64_t>(k));
  return static_cast<long long>(indices.sum().item<int64_t>());
}

int torch_threads() { return torch::get_num_threads(); }

}  // namespace geotb::bench
