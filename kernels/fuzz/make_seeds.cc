// Writes a seed corpus for fuzz_decoder: valid messages of every shape (mode byte 3 prepended:
// recompute crc, destination size from the header). Usage: make_seeds DIR
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/compress.h"

using namespace geotb::kernels;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::mt19937 g(1);
  std::normal_distribution<float> d;
  int f = 0;
  for (size_t n : {1u, 9u, 100u, 1000u})
    for (double p : {0.01, 0.3, 1.0})
      for (ValueCoding vc : {ValueCoding::kInt8, ValueCoding::kFloat32})
        for (uint32_t block : {1u, 4u, 256u}) {
          std::vector<float> acc(n), res(n, 0.0f);
          for (auto& x : acc) x = d(g);
          CompressConfig cfg;
          cfg.density = p;
          cfg.values = vc;
          cfg.block = block;
          std::vector<uint8_t> w;
          compress_ef(acc.data(), res.data(), n, cfg, w);
          std::string path = std::string(argv[1]) + "/seed" + std::to_string(f++);
          FILE* o = std::fopen(path.c_str(), "wb");
          if (!o) return 1;
          std::fputc(3, o);
          std::fwrite(w.data(), 1, w.size(), o);
          std::fclose(o);
        }
  std::printf("%d seeds\n", f);
  return 0;
}
