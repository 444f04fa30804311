// The one libtorch translation unit of the engine's compute path.
#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <sstream>

#include "engine/model/calibrate.h"
#include "engine/model/learner.h"

#ifdef GEOTB_TORCH_CUDA
#define GEOTB_TORCH_CUDA_BUILD true
#else
#define GEOTB_TORCH_CUDA_BUILD false
#endif

namespace geotb::engine {

size_t param_count(const ModelConfig& m) {
  if (m.name == "cnn")  // conv1 1->16 5x5, conv2 16->32 5x5, fc 32*7*7 -> classes, with biases
    return (1 * 16 * 25 + 16) + (16 * 32 * 25 + 32) + (32 * 7 * 7 * static_cast<size_t>(m.classes) + m.classes);
  size_t total = 0, in = static_cast<size_t>(m.inputs);
  for (int h : m.hidden) {
    total += in * static_cast<size_t>(h) + static_cast<size_t>(h);
    in = static_cast<size_t>(h);
  }
  return total + in * static_cast<size_t>(m.classes) + static_cast<size_t>(m.classes);
}

std::vector<std::vector<int64_t>> tensor_shapes(const ModelConfig& m) {
  const int64_t classes = m.classes;
  if (m.name == "cnn") return {{16, 1, 5, 5}, {16}, {32, 16, 5, 5}, {32}, {classes, 32 * 7 * 7}, {classes}};
  std::vector<std::vector<int64_t>> t;
  int64_t in = m.inputs;
  for (int h : m.hidden) {
    t.push_back({h, in});
    t.push_back({h});
    in = h;
  }
  t.push_back({classes, in});
  t.push_back({classes});
  return t;
}

std::vector<uint64_t> tensor_sizes(const ModelConfig& m) {
  std::vector<uint64_t> t;
  for (const auto& s : tensor_shapes(m)) {
    uint64_t n = 1;
    for (int64_t d : s) n *= static_cast<uint64_t>(d);
    t.push_back(n);
  }
  return t;
}

std::string validate(const ModelConfig& m) {
  if (m.name != "mlp" && m.name != "cnn") return "model: \"" + m.name + "\": unknown (mlp, cnn)";
  if (m.inputs != 784) return "model.inputs: " + std::to_string(m.inputs) + ": Fashion-MNIST has 784";
  if (m.classes < 2) return "model.classes: " + std::to_string(m.classes) + ": must be >= 2";
  if (m.device != "cpu" && m.device != "cuda" &&
      !(m.device.rfind("cuda:", 0) == 0 && m.device.size() > 5 && m.device.size() < 9 &&
        m.device.find_first_not_of("0123456789", 5) == std::string::npos))
    return "device: \"" + m.device + "\": expected \"cpu\", \"cuda\" or \"cuda:N\"";
  if (m.name == "mlp") {
    if (m.hidden.empty()) return "model.hidden: []: an MLP needs at least one hidden layer";
    for (int h : m.hidden)
      if (h < 1 || h > 65536) return "model.hidden: " + std::to_string(h) + ": width must be in [1, 65536]";
  }
  return {};
}

namespace {

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const ModelConfig& c) {
    int in = c.inputs;
    for (size_t i = 0; i < c.hidden.size(); ++i) {
      layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(in, c.hidden[i])));
      in = c.hidden[i];
    }
    layers.push_back(register_module("out", torch::nn::Linear(in, c.classes)));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i + 1 < layers.size(); ++i) x = torch::relu(layers[i]->forward(x));
    return layers.back()->forward(x);
  }
  std::vector<torch::nn::Linear> layers;
};

struct CnnImpl : torch::nn::Module {
  explicit CnnImpl(const ModelConfig& c)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 5).padding(2)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 5).padding(2)))),
        fc(register_module("fc", torch::nn::Linear(32 * 7 * 7, c.classes))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = x.view({-1, 1, 28, 28});
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    return fc->forward(x.flatten(1));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc;
};

template <typename Net>
class TorchLearner final : public Learner {
 public:
  // The weights are initialised on the CPU from the global generator whatever the device, so a GPU
  // run starts from the very weights of the CPU run with the same seed.
  TorchLearner(std::shared_ptr<Net> net, int inputs, const torch::Device& dev)
      : net_(std::move(net)), inputs_(inputs), dev_(dev), on_gpu_(dev.is_cuda()) {
    net_->to(dev_);
    auto ps = net_->parameters();
    int64_t total = 0;
    for (auto& p : ps) total += p.numel();
    const auto on = torch::TensorOptions().device(dev_);
    flat_ = torch::zeros({total}, on);
    flat_grad_ = torch::zeros({total}, on);
    int64_t off = 0;
    torch::NoGradGuard ng;
    for (auto& p : ps) {
      const int64_t n = p.numel();
      auto view = flat_.narrow(0, off, n).view(p.sizes());
      view.copy_(p);
      p.set_data(view);
      // Autograd accumulates into an existing grad in place, so backward writes the flat buffer.
      p.mutable_grad() = flat_grad_.narrow(0, off, n).view(p.sizes());
      off += n;
    }
    if (on_gpu_) {  // host mirrors in pinned memory: what strategies, collectives and the optimizer see
      const auto pinned = torch::TensorOptions().pinned_memory(true);
      host_params_ = torch::empty({total}, pinned);
      host_params_.copy_(flat_);
      host_grads_ = torch::zeros({total}, pinned);
    } else {
      host_params_ = flat_;
      host_grads_ = flat_grad_;
    }
  }
  size_t num_params() const override { return static_cast<size_t>(flat_.numel()); }
  float* params() override { return host_params_.data_ptr<float>(); }
  float* grads() override { return host_grads_.data_ptr<float>(); }

  double forward_backward(const float* x, const int64_t* y, size_t batch) override {
    if (on_gpu_) flat_.copy_(host_params_);
    flat_grad_.zero_();
    net_->train();
    auto xt = to_dev(torch::from_blob(const_cast<float*>(x), {static_cast<int64_t>(batch), inputs_}));
    auto yt = to_dev(torch::from_blob(const_cast<int64_t*>(y), {static_cast<int64_t>(batch)}, torch::kLong));
    auto loss = torch::nn::functional::cross_entropy(net_->forward(xt), yt);
    loss.backward();
    if (on_gpu_) host_grads_.copy_(flat_grad_);  // synchronous: the step's GPU work is done on return
    return loss.template item<double>();
  }

  double accuracy(const Dataset& data) override {
    torch::NoGradGuard ng;
    if (on_gpu_) flat_.copy_(host_params_);
    net_->eval();
    const int64_t chunk = 1000;
    int64_t correct = 0;
    for (int64_t lo = 0; lo < static_cast<int64_t>(data.size); lo += chunk) {
      const int64_t m = std::min<int64_t>(chunk, static_cast<int64_t>(data.size) - lo);
      auto xt = to_dev(torch::from_blob(const_cast<float*>(data.images.data()) + lo * inputs_, {m, inputs_}));
      auto yt = to_dev(torch::from_blob(const_cast<int64_t*>(data.labels.data()) + lo, {m}, torch::kLong));
      correct += net_->forward(xt).argmax(1).eq(yt).sum().template item<int64_t>();
    }
    return data.size ? static_cast<double>(correct) / static_cast<double>(data.size) : 0.0;
  }

 private:
  torch::Tensor to_dev(const torch::Tensor& t) const { return on_gpu_ ? t.to(dev_) : t; }

  std::shared_ptr<Net> net_;
  int64_t inputs_;
  torch::Device dev_;
  bool on_gpu_;
  torch::Tensor flat_, flat_grad_;           // on dev_: the model's parameters and gradients
  torch::Tensor host_params_, host_grads_;  // the same on the CPU (aliases of the above there)
};

}  // namespace

std::string device_error(const std::string& device) {
  ModelConfig syntax;  // a valid model on `device`: the device's spelling checked first
  syntax.device = device;
  if (auto e = validate(syntax); !e.empty()) return e;
  if (device == "cpu") return {};
  if (!torch::cuda::is_available())
    return "device: \"" + device + "\": no CUDA device" +
           (torch::cuda::device_count() == 0 && !GEOTB_TORCH_CUDA_BUILD
                ? std::string(" (this geotb is built against a CPU-only libtorch ") + TORCH_VERSION +
                      ": build with -Dtorch_dir=<a CUDA wheel's torch folder>, docs/guide/gpu.md)"
                : std::string(" (libtorch ") + TORCH_VERSION + " sees none)");
  const size_t idx = device.size() > 5 ? std::stoul(device.substr(5)) : 0;
  const size_t count = torch::cuda::device_count();
  if (idx >= count)
    return "device: \"" + device + "\": only " + std::to_string(count) + " CUDA device(s) (cuda:0.." +
           std::to_string(count - 1) + ")";
  return {};
}

std::unique_ptr<Learner> make_learner(const ModelConfig& cfg, uint64_t seed) {
  if (auto e = validate(cfg); !e.empty()) throw std::invalid_argument(e);
  if (auto e = device_error(cfg.device); !e.empty()) throw std::invalid_argument(e);
  torch::manual_seed(seed);
  const torch::Device dev(cfg.device);
  if (cfg.name == "cnn")
    return std::make_unique<TorchLearner<CnnImpl>>(std::make_shared<CnnImpl>(cfg), cfg.inputs, dev);
  return std::make_unique<TorchLearner<MlpImpl>>(std::make_shared<MlpImpl>(cfg), cfg.inputs, dev);
}

Timing time_synchronised(const std::string& device, int warmup, int reps, const std::function<void()>& work) {
  if (reps < 1 || warmup < 0) throw std::invalid_argument("calibrate: reps must be >= 1 and warmup >= 0");
  const torch::Device dev(device);
  auto sync = [&] {
    if (dev.is_cuda()) torch::cuda::synchronize(dev.index() < 0 ? -1 : dev.index());
  };
  std::vector<double> samples;
  for (int i = 0; i < warmup + reps; ++i) {
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    work();
    sync();
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= warmup) samples.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return summarize(std::move(samples));
}

namespace {

template <typename Net>
Timing time_step(std::shared_ptr<Net> net, const ModelConfig& m, size_t batch, int warmup, int reps) {
  const torch::Device dev(m.device);
  net->to(dev);
  net->train();
  const auto on = torch::TensorOptions().device(dev);
  const auto b = static_cast<int64_t>(batch);
  const torch::Tensor x = torch::randn({b, m.inputs}, on);
  const torch::Tensor y = torch::randint(m.classes, {b}, on.dtype(torch::kLong));
  auto params = net->parameters();
  return time_synchronised(m.device, warmup, reps, [&] {
    for (auto& p : params)
      if (p.grad().defined()) p.mutable_grad().zero_();
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
    torch::NoGradGuard ng;
    for (auto& p : params) p.add_(p.grad(), -0.01);
  });
}

}  // namespace

Timing time_training_step(const ModelConfig& m, size_t batch, int warmup, int reps, uint64_t seed) {
  if (auto e = validate(m); !e.empty()) throw std::invalid_argument(e);
  if (auto e = device_error(m.device); !e.empty()) throw std::invalid_argument(e);
  if (batch == 0 || reps < 1 || warmup < 0) throw std::invalid_argument("time_training_step: batch and reps must be >= 1");
  torch::manual_seed(seed);
  if (m.name == "cnn") return time_step(std::make_shared<CnnImpl>(m), m, batch, warmup, reps);
  return time_step(std::make_shared<MlpImpl>(m), m, batch, warmup, reps);
}

void set_compute_threads(int n) { at::set_num_threads(n); }
int compute_threads() { return at::get_num_threads(); }

std::string torch_version() { return TORCH_VERSION; }

}  // namespace geotb::engine
