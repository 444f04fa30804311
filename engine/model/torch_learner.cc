// The one libtorch translation unit of the engine's compute path.
#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <sstream>

#include "engine/model/learner.h"

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
  TorchLearner(std::shared_ptr<Net> net, int inputs) : net_(std::move(net)), inputs_(inputs) {
    auto ps = net_->parameters();
    int64_t total = 0;
    for (auto& p : ps) total += p.numel();
    flat_ = torch::zeros({total});
    flat_grad_ = torch::zeros({total});
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
  }
  size_t num_params() const override { return static_cast<size_t>(flat_.numel()); }
  float* params() override { return flat_.data_ptr<float>(); }
  float* grads() override { return flat_grad_.data_ptr<float>(); }

  double forward_backward(const float* x, const int64_t* y, size_t batch) override {
    flat_grad_.zero_();
    net_->train();
    auto xt = torch::from_blob(const_cast<float*>(x), {static_cast<int64_t>(batch), inputs_});
    auto yt = torch::from_blob(const_cast<int64_t*>(y), {static_cast<int64_t>(batch)}, torch::kLong);
    auto loss = torch::nn::functional::cross_entropy(net_->forward(xt), yt);
    loss.backward();
    return loss.template item<double>();
  }

  double accuracy(const Dataset& data) override {
    torch::NoGradGuard ng;
    net_->eval();
    const int64_t chunk = 1000;
    int64_t correct = 0;
    for (int64_t lo = 0; lo < static_cast<int64_t>(data.size); lo += chunk) {
      const int64_t m = std::min<int64_t>(chunk, static_cast<int64_t>(data.size) - lo);
      auto xt = torch::from_blob(const_cast<float*>(data.images.data()) + lo * inputs_, {m, inputs_});
      auto yt = torch::from_blob(const_cast<int64_t*>(data.labels.data()) + lo, {m}, torch::kLong);
      correct += net_->forward(xt).argmax(1).eq(yt).sum().template item<int64_t>();
    }
    return data.size ? static_cast<double>(correct) / static_cast<double>(data.size) : 0.0;
  }

 private:
  std::shared_ptr<Net> net_;
  int64_t inputs_;
  torch::Tensor flat_, flat_grad_;
};

}  // namespace

std::unique_ptr<Learner> make_learner(const ModelConfig& cfg, uint64_t seed) {
  if (auto e = validate(cfg); !e.empty()) throw std::invalid_argument(e);
  torch::manual_seed(seed);
  if (cfg.name == "cnn") return std::make_unique<TorchLearner<CnnImpl>>(std::make_shared<CnnImpl>(cfg), cfg.inputs);
  return std::make_unique<TorchLearner<MlpImpl>>(std::make_shared<MlpImpl>(cfg), cfg.inputs);
}

void set_compute_threads(int n) { at::set_num_threads(n); }
int compute_threads() { return at::get_num_threads(); }

std::string torch_version() { return TORCH_VERSION; }

}  // namespace geotb::engine
