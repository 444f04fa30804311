// libtorch side of calibrate.h: the device's description, the reduction and the transformer block
// (the training step is in torch_learner.cc, beside the models).
#include <torch/torch.h>
#include <torch/version.h>

#ifdef GEOTB_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "engine/model/calibrate.h"

namespace geotb::engine {

namespace {

std::string first_line_containing(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.find(key) != std::string::npos) return line;
  return {};
}

/// "580.159.04" from /proc/driver/nvidia/version's first line ("NVRM version: NVIDIA UNIX Open
/// Kernel Module for x86_64  580.159.04  Release Build ..."): its first token of digits and dots.
[[maybe_unused]] std::string nvidia_driver() {
  std::istringstream words(first_line_containing("/proc/driver/nvidia/version", "NVRM version"));
  std::string w;
  while (words >> w)
    if (w.find('.') != std::string::npos && w.find_first_not_of("0123456789.") == std::string::npos) return w;
  return {};
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w) {
  return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-5) * w;
}

/// Causal attention over [batch, heads, seq, head_dim]: PyTorch 2's fused kernel (flash or
/// memory-efficient attention on a GPU); older libtorch (Debian's 1.13) spells it out.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
  const int64_t s = q.size(2);
  const auto mask = torch::ones({s, s}, q.options().dtype(torch::kBool)).triu(1);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  return torch::matmul(torch::softmax(scores.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1), v);
#endif
}

}  // namespace

model::DeviceContext device_info(const std::string& device) {
  if (auto e = device_error(device); !e.empty()) throw std::invalid_argument(e);
  model::DeviceContext d;
  d.torch = TORCH_VERSION;
  const torch::Device dev(device);
#ifdef GEOTB_TORCH_CUDA
  d.cuda = std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
  if (dev.is_cuda()) {
    const int idx = dev.index() < 0 ? 0 : dev.index();
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(idx);
    d.device = "cuda:" + std::to_string(idx);
    d.name = p->name;
    d.memory_bytes = p->totalGlobalMem;
    d.compute_capability = std::to_string(p->major) + "." + std::to_string(p->minor);
    d.multiprocessors = static_cast<uint64_t>(p->multiProcessorCount);
    d.driver = nvidia_driver();
    return d;
  }
#endif
  d.device = "cpu";
  std::string model = first_line_containing("/proc/cpuinfo", "model name");
  if (const auto c = model.find(':'); c != std::string::npos) model = model.substr(model.find_first_not_of(' ', c + 1));
  d.name = model.empty() ? "cpu" : model;
  d.multiprocessors = std::thread::hardware_concurrency();
  return d;
}

Timing time_reduce(const std::string& device, size_t n, int warmup, int reps) {
  if (auto e = device_error(device); !e.empty()) throw std::invalid_argument(e);
  if (n == 0) throw std::invalid_argument("time_reduce: n must be >= 1");
  const torch::Device dev(device);
  const auto on = torch::TensorOptions().device(dev);
  torch::Tensor a = torch::ones({static_cast<int64_t>(n)}, on);
  const torch::Tensor b = torch::full({static_cast<int64_t>(n)}, 0.5, on);
  return time_synchronised(device, warmup, reps, [&] { a.add_(b); });
}

std::string validate(const BlockConfig& b) {
  auto bad = [](const std::string& f, int64_t v, const std::string& why) {
    return "block." + f + ": " + std::to_string(v) + ": " + why;
  };
  if (b.d_model < 1 || b.d_model > 65536) return bad("d_model", b.d_model, "must be in [1, 65536]");
  if (b.heads < 1 || b.d_model % b.heads != 0) return bad("heads", b.heads, "must divide d_model");
  if (b.ffn < 1 || b.ffn > 262144) return bad("ffn", b.ffn, "must be in [1, 262144]");
  if (b.seq < 1 || b.seq > 1048576) return bad("seq", b.seq, "must be in [1, 1048576]");
  if (b.batch < 1 || b.batch > 4096) return bad("batch", b.batch, "must be in [1, 4096]");
  if (b.dtype != "bf16" && b.dtype != "fp32") return "block.dtype: \"" + b.dtype + "\": expected \"bf16\" or \"fp32\"";
  return {};
}

BlockTiming time_transformer_block(const BlockConfig& b, const std::string& device, int warmup, int reps,
                                   uint64_t seed) {
  if (auto e = validate(b); !e.empty()) throw std::invalid_argument(e);
  if (auto e = device_error(device); !e.empty()) throw std::invalid_argument(e);
  torch::manual_seed(seed);
  const torch::Device dev(device);
  const auto on = torch::TensorOptions().device(dev).dtype(b.dtype == "bf16" ? torch::kBFloat16 : torch::kFloat32);
  const int64_t d = b.d_model, f = b.ffn, hd = d / b.heads;
  auto weight = [&](int64_t out, int64_t in) {
    return (torch::randn({out, in}, on) * (1.0 / std::sqrt(static_cast<double>(in)))).requires_grad_(true);
  };
  std::vector<torch::Tensor> w = {weight(3 * d, d), weight(d, d), weight(f, d), weight(f, d), weight(d, f),
                                  torch::ones({d}, on).requires_grad_(true), torch::ones({d}, on).requires_grad_(true)};
  const torch::Tensor x = torch::randn({b.batch, b.seq, d}, on).requires_grad_(true);
  std::vector<torch::Tensor> leaves = w;  // every tensor the backward pass gives a gradient
  leaves.push_back(x);
  auto step = [&] {
    for (torch::Tensor t : leaves)  // handles: the same tensors' gradients
      if (t.grad().defined()) t.mutable_grad().zero_();
    // Attention: q, k, v from one projection, heads split, causal SDPA, output projection.
    torch::Tensor h = rms_norm(x, w[5]);
    auto qkv = torch::linear(h, w[0]).view({b.batch, b.seq, 3, b.heads, hd}).permute({2, 0, 3, 1, 4});
    torch::Tensor a = attention(qkv[0], qkv[1], qkv[2]);
    a = a.transpose(1, 2).reshape({b.batch, b.seq, d});
    torch::Tensor y = x + torch::linear(a, w[1]);
    // SwiGLU MLP.
    torch::Tensor g = rms_norm(y, w[6]);
    y = y + torch::linear(torch::silu(torch::linear(g, w[2])) * torch::linear(g, w[3]), w[4]);
    y.to(torch::kFloat32).square().mean().backward();
  };
  BlockTiming r;
  r.time = time_synchronised(device, warmup, reps, step);
  const double dd = static_cast<double>(d), ff = static_cast<double>(f), s = static_cast<double>(b.seq);
  r.params = 4 * dd * dd + 3 * dd * ff + 2 * dd;
  r.flops = 3.0 * static_cast<double>(b.batch) * s * (2 * (4 * dd * dd + 3 * dd * ff) + 2 * s * dd);
  return r;
}

}  // namespace geotb::engine
