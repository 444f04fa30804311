// geotb compression kernels: the contract shared by the CPU (kernels/cpu/) and CUDA
// (kernels/cuda/) implementations. No libtorch here: raw buffers only.
//
// The engine's inter-DC exchange calls exactly two functions:
//   compress_ef()        v = accumulated + residual; pick top-k of |v|; quantise; encode to the
//                        wire format; residual <- v - dequantised(sent)   (error feedback)
//   decompress_add()     decode a wire message and dst[idx] += alpha * dequantised value
// Everything else here is the building blocks they are made of, exposed for tests and benchmarks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace geotb::kernels {

enum class Rounding : uint8_t { kNearest = 0, kStochastic = 1 };
/// kExact: exactly k elements, the tie rule below. kSampledThreshold (DGC): every element at or
/// above a threshold estimated from a seeded sample; the count k' is guaranteed to lie in
/// [ceil(0.8k), ceil(1.25k)] (exactly k for n < kSampleMinElements) and the sent set is always a
/// top-k' set under the tie rule. Details: kernels/topk.h.
enum class TopkMode : uint8_t { kExact = 0, kSampledThreshold = 1 };
enum class ValueCoding : uint8_t { kInt8 = 0, kFloat32 = 1 };

struct CompressConfig {
  double density = 0.01;            ///< fraction of elements sent, in (0, 1]; k = max(1, ceil(density*n))
  uint32_t block = 256;             ///< INT8 block size in selected elements (one float scale per block)
  ValueCoding values = ValueCoding::kInt8;   ///< kFloat32 = no quantisation
  Rounding rounding = Rounding::kNearest;
  TopkMode topk = TopkMode::kExact;
  uint64_t seed = 0;                ///< stochastic rounding / sampling stream (caller advances it per call)
};

struct CompressStats {
  uint64_t n = 0;            ///< elements in the tensor
  uint64_t k = 0;            ///< elements actually sent
  uint64_t wire_bytes = 0;   ///< size of the encoded message
  uint64_t index_bytes = 0;  ///< of which index coding
};

/// Malformed or truncated wire input, or arguments outside the contract.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Error-feedback compression of one flat tensor of n floats.
/// In:  acc[n]       gradient / progress accumulated since the last exchange (read only)
///      residual[n]  error residual from the previous exchange (read and written)
/// Out: wire         the encoded message (replaced)
///      residual     v - dequantised(sent), v = acc + residual_in. Conservation:
///                   dequantised(sent)[i] + residual_out[i] == acc[i] + residual_in[i]
///                   exactly for unsent elements and up to float rounding of one add for sent ones.
/// Quantiser bound: |dequantised - v| <= scale/2 per sent element with nearest rounding,
/// < scale with stochastic rounding, where scale = max|v| over the block / 127.
/// Top-k tie rule (exact mode): larger |v| first; equal |v| -> lower index first.
/// Deterministic for kExact + kNearest (bit-identical CPU vs CUDA). This implementation is in fact
/// deterministic for every mode given cfg.seed (stochastic rounding draws from a counter-based
/// stream keyed by (seed, element index)), and the CUDA backend (kernels/cuda/compress_cuda.h)
/// reproduces all of them bit for bit.
/// Throws KernelError for a config or arguments outside the contract (nothing modified) and for
/// non-finite acc + residual (then residual holds acc + residual_in and no message is produced).
/// Threading: reentrant; scratch buffers are per thread. Wire layout: kernels/wire_format.h.
CompressStats compress_ef(const float* acc, float* residual, size_t n, const CompressConfig& cfg,
                          std::vector<uint8_t>& wire);

/// Decode `wire` (validated: version, counts, encoding, checksum, bounds; throws KernelError)
/// and add alpha * value into dst[index] for every sent element. n must equal the encoded count.
/// Computes dst[i] = dst[i] + alpha * (float(q) * scale) with each operation rounded once. The
/// message is validated completely before dst is touched: on KernelError dst is unchanged.
void decompress_add(const uint8_t* wire, size_t wire_len, float* dst, size_t n, float alpha);

}  // namespace geotb::kernels
