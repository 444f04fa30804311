// A model replica with its parameters and gradients in two flat float buffers, so strategies,
// collectives and the optimizer work on plain memory and never include libtorch.
// The only libtorch translation unit behind this is model/torch_learner.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/fashion_mnist.h"

namespace geotb::engine {

struct ModelConfig {
  std::string name = "mlp";          ///< "mlp" (fully connected, ReLU) or "cnn" (2 conv + pooling)
  std::vector<int> hidden = {128, 64};  ///< mlp hidden layer widths
  int inputs = 784;                  ///< features per example (28 x 28)
  int classes = 10;
  /// Where forward and backward run: "cpu", "cuda" or "cuda:N" (docs/guide/gpu.md). On a GPU the
  /// flat buffers below stay in host memory: params() is uploaded before each forward and the
  /// gradients are downloaded after each backward, so strategies and collectives are unchanged.
  std::string device = "cpu";
};

/// Returns an empty string if valid, else "field: value: why".
std::string validate(const ModelConfig& m);
/// Empty if this build and machine can run on `device`, else "device: \"cuda\": why" (no CUDA
/// device, a CPU-only libtorch, an index beyond the devices found).
std::string device_error(const std::string& device);
/// The parameters make_learner(m) has (m valid), without building it.
size_t param_count(const ModelConfig& m);
/// Its parameter tensors' elements, in the order of the flat buffers (libtorch's parameters()).
std::vector<uint64_t> tensor_sizes(const ModelConfig& m);
/// The same tensors' shapes (libtorch's: a Linear weight is (out, in), a Conv2d's (out, in, kh, kw)).
std::vector<std::vector<int64_t>> tensor_shapes(const ModelConfig& m);

class Learner {
 public:
  virtual ~Learner() = default;
  virtual size_t num_params() const = 0;
  /// Flat parameters (num_params floats). Writing here changes the model.
  virtual float* params() = 0;
  /// Flat gradients, written by forward_backward().
  virtual float* grads() = 0;
  /// Zeroes the gradients, runs forward and backward on `batch` examples (x: batch x inputs
  /// row-major, y: labels) and returns the mean cross-entropy loss.
  virtual double forward_backward(const float* x, const int64_t* y, size_t batch) = 0;
  /// Fraction of `data` classified correctly (argmax of the logits).
  virtual double accuracy(const Dataset& data) = 0;
};

/// Builds a model with weights initialised from `seed` (libtorch's default initialisers).
/// Not thread-safe (libtorch's global generator): build one, copy its params() into the others.
std::unique_ptr<Learner> make_learner(const ModelConfig& cfg, uint64_t seed);

/// libtorch intra-op threads for the calling thread (and the default for new ones).
void set_compute_threads(int n);
/// The calling thread's intra-op thread count (at::get_num_threads).
int compute_threads();

/// Version string of the linked libtorch.
std::string torch_version();

}  // namespace geotb::engine
