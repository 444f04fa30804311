// Helper of wire16_reference_test.py: converts raw little-endian values from stdin to stdout with
// kernels/fp16.h, kernels/bf16.h and kernels/wire16.h.
//   wire16_convert to-fp16 | to-bf16      float32 (4 bytes each) -> 16 bits (2 bytes each)
//   wire16_convert from-fp16              binary16 -> float32
//   wire16_convert hook-fp16 | hook-bf16 W   float32 -> 16 bits: cast_div16 (torch's compress
//                                            hooks before the allreduce) for world size W
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/wire16.h"

using namespace geotb::kernels;

int main(int argc, char** argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  const bool hook = mode == "hook-fp16" || mode == "hook-bf16";
  if (!(((mode == "to-fp16" || mode == "to-bf16" || mode == "from-fp16") && argc == 2) || (hook && argc == 3))) {
    std::fprintf(stderr, "usage: wire16_convert to-fp16|to-bf16|from-fp16 | hook-fp16|hook-bf16 W < in > out\n");
    return 2;
  }
  const float world = hook ? std::strtof(argv[2], nullptr) : 1.0f;
  const bool from = mode == "from-fp16";
  const size_t in_size = from ? 2 : 4, out_size = from ? 4 : 2;
  std::vector<uint8_t> in(in_size * 65536), out;
  std::vector<float> f;
  std::vector<uint16_t> h;
  for (;;) {
    const size_t got = std::fread(in.data(), 1, in.size(), stdin);
    if (got % in_size != 0) {
      std::fprintf(stderr, "wire16_convert: %zu bytes left over\n", got % in_size);
      return 1;
    }
    const size_t n = got / in_size;
    out.resize(n * out_size);
    if (from) {
      h.resize(n);
      f.resize(n);
      std::memcpy(h.data(), in.data(), got);
      for (size_t i = 0; i < n; ++i) f[i] = from_fp16(h[i]);
      std::memcpy(out.data(), f.data(), out.size());
    } else {
      f.resize(n);
      h.resize(n);
      std::memcpy(f.data(), in.data(), got);
      if (hook)
        cast_div16(mode == "hook-fp16" ? Wire16::kFp16 : Wire16::kBf16, f.data(), n, world, h.data());
      else
        for (size_t i = 0; i < n; ++i) h[i] = mode == "to-fp16" ? to_fp16(f[i]) : to_bf16(f[i]);
      std::memcpy(out.data(), h.data(), out.size());
    }
    if (!out.empty() && std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) return 1;
    if (got < in.size()) break;
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
