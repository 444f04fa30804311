// Normal draws from libtorch's CPU generator: what torch.manual_seed(s); torch.randn(n) gives, so
// that PowerSGD's first Q (kernels/powersgd.h) is the one torch's hook draws for the same seed.
#pragma once

#include <memory>

#include "kernels/powersgd.h"

namespace geotb::engine {

std::unique_ptr<kernels::NormalSource> make_torch_normal_source();

}  // namespace geotb::engine
