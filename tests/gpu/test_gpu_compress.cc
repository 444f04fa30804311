// GPU suite: the CUDA backend against the CPU backend on the CPU suite's test vectors.
// Every mode is deterministic given cfg.seed, so wire bytes, residuals and decompressed
// tensors must match bit for bit. Without a CUDA device the binary exits 77 (meson: SKIP).
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>

#include "kernels/compress.h"
#include "kernels/cuda/compress_cuda.h"
#include "kernels/topk.h"
#include "kernels/wire_format.h"
#include "../kernels/test_util.h"

namespace geotb::kernels {
namespace {

using testing::random_normal;

std::vector<float> download(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<float> h(n);
  if (n) b.download(h.data(), 4 * n);
  return h;
}

cuda::DeviceBuffer upload(const std::vector<float>& h) {
  cuda::DeviceBuffer b(4 * h.size());
  if (!h.empty()) b.upload(h.data(), 4 * h.size());
  return b;
}

void expect_bits_equal(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << what << " differs at " << i;
}

// Runs both backends on the same input (two exchanges, so the residual feeds back) and compares.
void compare(const std::vector<float>& acc, const std::vector<float>& res_in, const CompressConfig& cfg) {
  const size_t n = acc.size();
  std::vector<float> res_cpu = res_in;
  cuda::DeviceBuffer d_acc = upload(acc), d_res = upload(res_in);
  for (int round = 0; round < 2; ++round) {
    std::vector<uint8_t> w_cpu, w_gpu;
    CompressStats s_cpu = compress_ef(acc.data(), res_cpu.data(), n, cfg, w_cpu);
    CompressStats s_gpu = cuda::compress_ef(d_acc.f32(), d_res.f32(), n, cfg, w_gpu);
    ASSERT_EQ(s_cpu.k, s_gpu.k) << "round " << round;
    ASSERT_EQ(s_cpu.wire_bytes, s_gpu.wire_bytes);
    ASSERT_EQ(s_cpu.index_bytes, s_gpu.index_bytes);
    ASSERT_EQ(w_cpu, w_gpu) << "wire differs, round " << round;
    expect_bits_equal(res_cpu, download(d_res, n), "residual");
    // decompress on both into the same random destination
    std::vector<float> dst = random_normal(n, 3 + round);
    cuda::DeviceBuffer d_dst = upload(dst);
    decompress_add(w_cpu.data(), w_cpu.size(), dst.data(), n, -0.7f);
    cuda::decompress_add(w_gpu.data(), w_gpu.size(), d_dst.f32(), n, -0.7f);
    expect_bits_equal(dst, download(d_dst, n), "decompressed");
  }
}

class GpuVsCpu
    : public ::testing::TestWithParam<std::tuple<size_t, double, ValueCoding, Rounding, TopkMode>> {};

TEST_P(GpuVsCpu, BitIdentical) {
  auto [n, density, coding, rounding, mode] = GetParam();
  CompressConfig cfg;
  cfg.density = density;
  cfg.values = coding;
  cfg.rounding = rounding;
  cfg.topk = mode;
  cfg.seed = 99;
  cfg.block = 256;
  compare(random_normal(n, 42 + n), random_normal(n, 1042 + n, 0.3f), cfg);
}

INSTANTIATE_TEST_SUITE_P(
    Vectors, GpuVsCpu,
    ::testing::Combine(::testing::Values<size_t>(1, 7, 255, 256, 257, 1000, 100003, kSampleMinElements, 300007,
                                                 size_t{1} << 22),
                       ::testing::Values(0.001, 0.01, 0.1, 1.0),
                       ::testing::Values(ValueCoding::kInt8, ValueCoding::kFloat32),
                       ::testing::Values(Rounding::kNearest, Rounding::kStochastic),
                       ::testing::Values(TopkMode::kExact, TopkMode::kSampledThreshold)));

TEST(Gpu, BlockSizesAndTies) {
  const size_t n = 300007;
  std::vector<float> acc(n), zero(n, 0.0f);
  for (size_t i = 0; i < n; ++i) acc[i] = static_cast<float>((i * 2654435761u) % 7) * (i % 2 ? -0.5f : 0.5f);
  for (uint32_t block : {1u, 7u, 1000u, 1u << 20}) {
    CompressConfig cfg;
    cfg.block = block;
    cfg.density = 0.3;
    compare(acc, zero, cfg);
  }
}

TEST(Gpu, FallbackPathMatches) {
  const size_t n = 1 << 19;
  std::vector<float> acc(n, 0.25f), zero(n, 0.0f);
  CompressConfig cfg;
  cfg.density = 0.01;
  const uint64_t before = cuda::compress_fallbacks_cuda();
  compare(acc, zero, cfg);
  EXPECT_GT(cuda::compress_fallbacks_cuda(), before);
}

TEST(Gpu, RejectsNonFiniteAndCorruptInput) {
  std::vector<float> acc(1000, 1.0f), zero(1000, 0.0f);
  acc[500] = NAN;
  cuda::DeviceBuffer d_acc = upload(acc), d_res = upload(zero);
  std::vector<uint8_t> w;
  EXPECT_THROW(cuda::compress_ef(d_acc.f32(), d_res.f32(), 1000, CompressConfig{}, w), KernelError);
  acc[500] = 1.0f;
  std::vector<float> res = zero;
  compress_ef(acc.data(), res.data(), 1000, CompressConfig{}, w);
  w[w.size() / 2] ^= 4;
  std::vector<float> dst(1000, 7.0f);
  cuda::DeviceBuffer d_dst = upload(dst);
  EXPECT_THROW(cuda::decompress_add(w.data(), w.size(), d_dst.f32(), 1000, 1.0f), KernelError);
  expect_bits_equal(dst, download(d_dst, 1000), "dst after rejected message");
}

// Decompresses `wire` into `start` with both backends. Returns the error message both threw ("" if
// both accepted it), after checking that both left the same bits in their destination; "differ"
// (after a test failure naming both) if one threw another message than the other.
std::string decompress_both(const std::vector<uint8_t>& wire, const std::vector<float>& start, float alpha) {
  const size_t n = start.size();
  std::vector<float> dst = start;
  cuda::DeviceBuffer d_dst = upload(start);
  std::string cpu_error, gpu_error;
  try {
    decompress_add(wire.data(), wire.size(), dst.data(), n, alpha);
  } catch (const KernelError& e) {
    cpu_error = e.what();
  }
  try {
    cuda::decompress_add(wire.data(), wire.size(), d_dst.f32(), n, alpha);
  } catch (const KernelError& e) {
    gpu_error = e.what();
  }
  if (gpu_error != cpu_error) {
    ADD_FAILURE() << "cuda: \"" << gpu_error << "\", cpu: \"" << cpu_error << "\"";
    return "differ";
  }
  expect_bits_equal(dst, download(d_dst, n), "dst after a corrupted message");
  return cpu_error;
}

// The device's message checks against the host decoder, on every single-bit corruption of small
// messages of each shape: with the CRC left stale (the checksum must catch it) and with the CRC
// recomputed (the index and value checks must). Both backends must either throw the same message
// or accept and produce the same bits, and the device must never flag what the host accepts.
TEST(Gpu, DecompressRejectsWhatTheHostRejects) {
  struct Shape {
    double density;
    ValueCoding coding;
  };
  const size_t n = 203;
  const uint64_t disagreements = cuda::decompress_disagreements_cuda();
  size_t rejected = 0, accepted = 0;
  for (Shape s : {Shape{0.05, ValueCoding::kInt8}, Shape{0.9, ValueCoding::kInt8}, Shape{0.1, ValueCoding::kFloat32},
                  Shape{1.0, ValueCoding::kFloat32}}) {
    std::vector<float> acc = random_normal(n, 5), res(n, 0.0f);
    CompressConfig cfg;
    cfg.density = s.density;
    cfg.values = s.coding;
    cfg.block = 4;
    std::vector<uint8_t> w;
    compress_ef(acc.data(), res.data(), n, cfg, w);
    for (bool fix : {false, true})
      for (size_t byte = 0; byte < w.size(); ++byte)
        for (int bit = 0; bit < 8; ++bit) {
          auto c = w;
          c[byte] ^= static_cast<uint8_t>(1u << bit);
          if (fix) testing::fix_crc(c);
          const std::string error = decompress_both(c, random_normal(n, 9), 0.5f);
          ASSERT_NE(error, "differ") << "byte " << byte << " bit " << bit << (fix ? " (crc fixed)" : "");
          error.empty() ? ++accepted : ++rejected;
        }
  }
  // A message spanning many thread blocks: 97 positions across its body, two bits each, CRC fixed.
  {
    const size_t big = 100003;
    std::vector<float> acc = random_normal(big, 6), res(big, 0.0f);
    CompressConfig cfg;
    cfg.density = 0.02;
    std::vector<uint8_t> w;
    compress_ef(acc.data(), res.data(), big, cfg, w);
    for (size_t i = 0; i < 97; ++i)
      for (int bit : {0, 7}) {
        auto c = w;
        const size_t byte = kWireHeaderBytes + i * (w.size() - kWireHeaderBytes - 1) / 96;
        c[byte] ^= static_cast<uint8_t>(1u << bit);
        testing::fix_crc(c);
        const std::string error = decompress_both(c, std::vector<float>(big, 1.0f), 1.0f);
        ASSERT_NE(error, "differ") << "byte " << byte << " bit " << bit;
        error.empty() ? ++accepted : ++rejected;
      }
  }
  EXPECT_EQ(cuda::decompress_disagreements_cuda(), disagreements);
  EXPECT_GT(rejected, 1000u);
  EXPECT_GT(accepted, 100u);  // value bits flipped under a fixed CRC decode to other values
}

}  // namespace
}  // namespace geotb::kernels

int main(int argc, char** argv) {
  if (!geotb::kernels::cuda::device_available()) {
    std::printf("no CUDA device: gpu suite skipped\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
