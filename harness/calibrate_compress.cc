#include "harness/calibrate_compress.h"

#include <chrono>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/compress.h"
#ifdef GEOTB_CUDA_KERNELS
#include "kernels/cuda/compress_cuda.h"
#endif

namespace geotb::harness {

bool cuda_kernels_available() {
#ifdef GEOTB_CUDA_KERNELS
  return kernels::cuda::device_available();
#else
  return false;
#endif
}

CompressTiming time_compress(bool gpu, size_t elements, double density, int warmup, int reps, uint64_t seed) {
  if (elements == 0 || reps < 1 || warmup < 0) throw std::invalid_argument("time_compress: elements and reps must be >= 1");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> acc(elements);
  for (float& x : acc) x = normal(rng);
  std::vector<float> residual(elements, 0.0f);
  kernels::CompressConfig cfg;
  cfg.density = density;
  std::vector<uint8_t> wire;
  std::vector<double> samples;
  CompressTiming out;
  out.backend = gpu ? "cuda" : "cpu";
  if (gpu) {
#ifdef GEOTB_CUDA_KERNELS
    kernels::cuda::DeviceBuffer d_acc(elements * sizeof(float)), d_res(elements * sizeof(float));
    d_acc.upload(acc.data(), elements * sizeof(float));
    d_res.upload(residual.data(), elements * sizeof(float));
    for (int i = 0; i < warmup + reps; ++i) {
      kernels::cuda::synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      kernels::cuda::compress_ef(d_acc.f32(), d_res.f32(), elements, cfg, wire);  // synchronous
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= warmup) samples.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
#else
    throw std::invalid_argument("this geotb has no CUDA compression kernels (build with -Dcuda=enabled)");
#endif
  } else {
    for (int i = 0; i < warmup + reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      kernels::compress_ef(acc.data(), residual.data(), elements, cfg, wire);
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= warmup) samples.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
  }
  out.time = engine::summarize(std::move(samples));
  return out;
}

}  // namespace geotb::harness
