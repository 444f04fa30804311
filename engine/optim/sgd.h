// SGD with momentum and weight decay on a flat parameter buffer (PyTorch's torch.optim.SGD rule,
// dampening 0, no Nesterov):
//   d = g + weight_decay * x;  m = momentum * m + d  (m = d at the first step);  x -= lr * m
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace geotb::engine {

struct SgdConfig {
  double lr = 0.05;           ///< learning rate
  double momentum = 0.9;      ///< heavy-ball momentum in [0, 1)
  double weight_decay = 0.0;  ///< L2 coefficient
};

std::string validate(const SgdConfig& c);

class Sgd {
 public:
  Sgd(const SgdConfig& cfg, size_t n) : cfg_(cfg), m_(n, 0.0f) {}
  void step(float* x, const float* g);
  /// The learning rate (constant: there is no schedule).
  double lr() const { return cfg_.lr; }
  double momentum() const { return cfg_.momentum; }
  const std::vector<float>& momentum_buffer() const { return m_; }
  /// The momentum buffer, writable: strategies that average it between replicas (local_sgd).
  float* momentum_data() { return m_.data(); }
  /// Whether step() uses the momentum buffer (momentum > 0).
  bool uses_momentum() const { return cfg_.momentum != 0.0; }
  /// Checkpoints: the momentum buffer and whether the next step is the first (m = d).
  bool before_first_step() const { return first_; }
  /// Sets both; throws std::invalid_argument if `momentum` has another size.
  void restore(const std::vector<float>& momentum, bool before_first_step);

 private:
  SgdConfig cfg_;
  std::vector<float> m_;
  bool first_ = true;
};

}  // namespace geotb::engine
