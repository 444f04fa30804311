// Writes a seed corpus for fuzz_qsgd: valid messages of every shape (mode byte 3 prepended:
// recompute crc, destination size from the header). Usage: make_qsgd_seeds DIR
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/qsgd.h"

using namespace geotb::kernels;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::mt19937 g(1);
  std::normal_distribution<float> d;
  int f = 0;
  for (size_t n : {0u, 1u, 9u, 100u, 1000u})
    for (uint32_t levels : {1u, 3u, 4u, 256u, 65535u})
      for (uint32_t bucket : {1u, 8u, 128u}) {
        std::vector<float> v(n);
        for (auto& x : v) x = d(g);
        if (n > 8) std::fill(v.begin(), v.begin() + 8, 0.0f);  // a bucket of zeros
        std::vector<uint8_t> w;
        qsgd_encode(v.data(), n, {.levels = levels, .bucket = bucket, .seed = static_cast<uint64_t>(f)}, w);
        const std::string path = std::string(argv[1]) + "/seed" + std::to_string(f++);
        FILE* o = std::fopen(path.c_str(), "wb");
        if (!o) return 1;
        std::fputc(3, o);
        std::fwrite(w.data(), 1, w.size(), o);
        std::fclose(o);
      }
  std::printf("%d seeds\n", f);
  return 0;
}
