// Built instead of torch_topk.cc when libtorch is not available.
#include <stdexcept>

#include "torch_topk.h"

namespace geotb::bench {

bool torch_available() { return false; }
long long torch_topk_abs(const float*, size_t, size_t, const std::string&) {
  throw std::runtime_error("built without libtorch");
}
int torch_threads() { return 0; }

}  // namespace geotb::bench
