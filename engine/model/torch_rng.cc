#include "engine/model/torch_rng.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <mutex>

namespace geotb::engine {

namespace {

class TorchNormal final : public kernels::NormalSource {
 public:
  // set_current_seed is torch.manual_seed's effect on the CPU generator: a fresh MT19937 and no
  // cached normal sample.
  void seed(uint64_t s) override {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_current_seed(s);
  }
  void fill(float* out, size_t n) override {
    if (n == 0) return;
    const at::Tensor t = at::randn({static_cast<int64_t>(n)}, gen_, at::TensorOptions().dtype(at::kFloat));
    std::memcpy(out, t.data_ptr<float>(), n * sizeof(float));
  }

 private:
  at::Generator gen_ = at::make_generator<at::CPUGeneratorImpl>(0);
};

}  // namespace

std::unique_ptr<kernels::NormalSource> make_torch_normal_source() { return std::make_unique<TorchNormal>(); }

}  // namespace geotb::engine
