// The compression kernels' rate for `geotb calibrate`: kernels/compress.h on the CPU, or its CUDA
// backend (kernels/cuda) on a GPU when this geotb was built with the CUDA kernels.
#pragma once

#include <cstddef>
#include <string>

#include "engine/model/calibrate.h"

namespace geotb::harness {

struct CompressTiming {
  std::string backend;  ///< "cpu" or "cuda"
  engine::Timing time;  ///< one compress_ef call on `elements` floats
};

/// True if this build has the CUDA compression kernels and they find a device.
bool cuda_kernels_available();
/// Times compress_ef (top-k at `density`, INT8 blocks of 256, error feedback) on `elements` random
/// floats: on the GPU if `gpu` (cuda_kernels_available() must hold), else on the CPU.
CompressTiming time_compress(bool gpu, size_t elements, double density, int warmup, int reps, uint64_t seed);

}  // namespace geotb::harness
