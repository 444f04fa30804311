// geotb_torch._C: the engine's compression kernels (kernels/compress.h) for PyTorch tensors, so
// that a DDP job runs hier_ef_topk_int8's rounds with the very kernels, wire format and error
// feedback of geotb's engine (geotb_torch/hier.py). CPU float32 tensors; the wire is a uint8 tensor.
#include <torch/extension.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/compress.h"

namespace {

namespace k = geotb::kernels;

void check_flat(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.device().is_cpu(), name, ": expected a CPU tensor");
  TORCH_CHECK(t.scalar_type() == torch::kFloat32, name, ": expected float32, got ", t.scalar_type());
  TORCH_CHECK(t.is_contiguous(), name, ": expected a contiguous tensor");
}

k::CompressConfig config(double density, int64_t block, const std::string& values, int64_t seed) {
  k::CompressConfig c;
  c.density = density;
  TORCH_CHECK(block > 0 && block <= (1 << 20), "block: ", block, ": must be in [1, 2^20]");
  c.block = static_cast<uint32_t>(block);
  TORCH_CHECK(values == "int8" || values == "float32", "values: \"", values, "\": expected \"int8\" or \"float32\"");
  c.values = values == "int8" ? k::ValueCoding::kInt8 : k::ValueCoding::kFloat32;
  c.seed = static_cast<uint64_t>(seed);
  return c;
}

/// wire = compress_ef(acc, residual): v = acc + residual; the top density·n of |v|, INT8 blocks
/// (or float32); residual <- v - dequantised(sent), in place. Returns the wire as uint8.
torch::Tensor compress_ef(const torch::Tensor& acc, torch::Tensor residual, double density, int64_t block,
                          const std::string& values, int64_t seed) {
  check_flat(acc, "acc");
  check_flat(residual, "residual");
  TORCH_CHECK(acc.numel() == residual.numel(), "acc has ", acc.numel(), " elements, residual ", residual.numel());
  std::vector<uint8_t> wire;
  try {
    k::compress_ef(acc.data_ptr<float>(), residual.data_ptr<float>(), static_cast<size_t>(acc.numel()),
                   config(density, block, values, seed), wire);
  } catch (const k::KernelError& e) {
    TORCH_CHECK(false, "compress_ef: ", e.what());
  }
  torch::Tensor out = torch::empty({static_cast<int64_t>(wire.size())}, torch::kUInt8);
  if (!wire.empty()) std::memcpy(out.data_ptr<uint8_t>(), wire.data(), wire.size());
  return out;
}

/// dst[i] += alpha * dequantised(wire)[i] for every sent element; the message is validated whole
/// before dst is touched.
void decompress_add(const torch::Tensor& wire, torch::Tensor dst, double alpha) {
  TORCH_CHECK(wire.device().is_cpu() && wire.scalar_type() == torch::kUInt8 && wire.is_contiguous(),
              "wire: expected a contiguous CPU uint8 tensor");
  check_flat(dst, "dst");
  try {
    k::decompress_add(wire.data_ptr<uint8_t>(), static_cast<size_t>(wire.numel()), dst.data_ptr<float>(),
                      static_cast<size_t>(dst.numel()), static_cast<float>(alpha));
  } catch (const k::KernelError& e) {
    TORCH_CHECK(false, "decompress_add: ", e.what());
  }
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "geotb's compression kernels (error-feedback top-k + INT8, its wire format) on torch tensors";
  m.def("compress_ef", &compress_ef, "wire = compress_ef(acc, residual); residual updated in place",
        pybind11::arg("acc"), pybind11::arg("residual"), pybind11::arg("density"), pybind11::arg("block") = 256,
        pybind11::arg("values") = "int8", pybind11::arg("seed") = 0);
  m.def("decompress_add", &decompress_add, "dst += alpha * dequantised(wire)", pybind11::arg("wire"),
        pybind11::arg("dst"), pybind11::arg("alpha"));
}
