// Wire format: hand-made corrupt and truncated inputs, each rejected with KernelError and
// without touching the destination.
#include <gtest/gtest.h>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/bf16.h"
#include "kernels/compress.h"
#include "kernels/crc32_gf2.h"
#include "kernels/index_coding.h"
#include "kernels/wire_format.h"
#include "test_util.h"

namespace geotb::kernels {
namespace {

using testing::build_message;
using testing::fix_crc;
using testing::float_bytes;
using testing::poke;

std::vector<uint8_t> valid_message(size_t n, double density, ValueCoding coding, uint32_t block = 4) {
  auto acc = testing::random_normal(n, 1);
  std::vector<float> res(n, 0.0f);
  CompressConfig cfg;
  cfg.density = density;
  cfg.values = coding;
  cfg.block = block;
  std::vector<uint8_t> w;
  compress_ef(acc.data(), res.data(), n, cfg, w);
  return w;
}

// Expects rejection, a message mentioning `what`, and dst left untouched.
void expect_rejected(const std::vector<uint8_t>& w, size_t n, const std::string& what) {
  std::vector<float> dst(n, 7.0f);
  try {
    decompress_add(w.data(), w.size(), dst.data(), n, 1.0f);
    ADD_FAILURE() << "accepted a message that should fail with '" << what << "'";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << "got: " << e.what();
  }
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], 7.0f) << "dst modified at " << i;
}

struct Shape {
  double density;
  ValueCoding coding;
  IndexCoding expect_indices;
};

TEST(Wire, ValidMessagesOfEveryShapeDecode) {
  for (Shape s : {Shape{0.05, ValueCoding::kInt8, IndexCoding::kDeltaVarint},
                  Shape{0.9, ValueCoding::kInt8, IndexCoding::kBitmap},
                  Shape{0.05, ValueCoding::kFloat32, IndexCoding::kDeltaVarint},
                  Shape{1.0, ValueCoding::kFloat32, IndexCoding::kBitmap}}) {
    auto w = valid_message(203, s.density, s.coding);
    auto d = testing::decode(w, 203);
    EXPECT_EQ(d.h.indices, s.expect_indices);
    std::vector<float> dst(203, 0.0f);
    EXPECT_NO_THROW(decompress_add(w.data(), w.size(), dst.data(), 203, 1.0f));
  }
}

// The CUDA backend checksums the body in chunks on the device and combines them on the host: for
// every chunk size (1 byte, one that divides the body, one that does not, one larger than it) and
// every shape, the combination equals the crc encode_wire wrote.
TEST(Wire, CrcFromChunksEqualsTheWholeMessageCrc) {
  for (Shape s : {Shape{0.05, ValueCoding::kInt8, IndexCoding::kDeltaVarint},
                  Shape{0.9, ValueCoding::kInt8, IndexCoding::kBitmap},
                  Shape{1.0, ValueCoding::kFloat32, IndexCoding::kBitmap}}) {
    const auto w = valid_message(2003, s.density, s.coding);
    uint32_t expect = 0;
    std::memcpy(&expect, w.data() + 28, 4);
    const uint64_t body = w.size() - kWireHeaderBytes;
    for (uint64_t chunk : {uint64_t{1}, uint64_t{2048}, uint64_t{4}, uint64_t{7}, body, body + 5}) {
      std::vector<uint32_t> crcs;
      for (uint64_t b = 0; b < body; b += chunk) {
        const uint64_t len = std::min(chunk, body - b);
        crcs.push_back(static_cast<uint32_t>(crc32_z(0L, w.data() + kWireHeaderBytes + b, len)));
      }
      EXPECT_EQ(wire_crc_from_chunks(w.data(), crcs.data(), body, chunk), expect)
          << "chunk " << chunk << ", body " << body;
    }
    // The crc field itself does not enter: a header with another crc gives the same value.
    auto h = w;
    h[28] ^= 0xFFu;
    std::vector<uint32_t> one{static_cast<uint32_t>(crc32_z(0L, w.data() + kWireHeaderBytes, body))};
    EXPECT_EQ(wire_crc_from_chunks(h.data(), one.data(), body, body), expect);
    // and a changed header byte changes it
    h[8] ^= 1u;
    EXPECT_NE(wire_crc_from_chunks(h.data(), one.data(), body, body), expect);
  }
}

// The GF(2) combination the CUDA CRC kernel runs (kernels/crc32_gf2.h) against zlib, and its tree
// of 64-byte pieces, level by level as a thread block runs it, against zlib's crc of the whole.
TEST(Crc32Gf2, CombineAndTreeEqualZlib) {
  uint64_t z = 0x9E3779B97F4A7C15ull;
  auto next = [&z] {
    z ^= z << 13;
    z ^= z >> 7;
    z ^= z << 17;
    return z;
  };
  for (int i = 0; i < 200; ++i) {
    const uint32_t a = static_cast<uint32_t>(next()), b = static_cast<uint32_t>(next());
    const uint64_t len = i < 40 ? static_cast<uint64_t>(i) : next() % (1u << 26);
    ASSERT_EQ(crc32_combine_hd(a, b, len), static_cast<uint32_t>(crc32_combine64(a, b, static_cast<z_off64_t>(len))))
        << "len " << len;
  }
  for (uint32_t i = 0; i < 256; ++i) {  // one byte through the table: zlib's crc of that byte
    const uint8_t byte = static_cast<uint8_t>(i);
    const uint32_t c = crc32_table_entry(0xFFu ^ i) ^ (0xFFFFFFFFu >> 8);
    ASSERT_EQ(c ^ 0xFFFFFFFFu, static_cast<uint32_t>(crc32_z(0L, &byte, 1))) << i;
  }
  std::vector<uint8_t> data(3 * 16384 + 77);
  for (auto& d : data) d = static_cast<uint8_t>(next());
  for (size_t len : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{4096}, size_t{16383},
                     size_t{16384}, size_t{16385}, data.size()}) {
    // one "block" per 16 KiB chunk, 256 pieces of 64 bytes aligned to the chunk's end, as
    // crc_chunks_kernel
    std::vector<uint32_t> chunk_crcs;
    for (size_t c0 = 0; c0 < len; c0 += 16384) {
      const size_t c1 = std::min(len, c0 + 16384);
      uint32_t part[256], plen[256];
      for (unsigned t = 0; t < 256; ++t) {
        const size_t from_end = 64 * (256 - t);
        const bool empty = c1 - c0 + 64 <= from_end;
        const size_t b1 = c1 + 64 - from_end, b0 = empty ? b1 : (b1 - c0 >= 64 ? b1 - 64 : c0);
        part[t] = empty ? 0 : static_cast<uint32_t>(crc32_z(0L, data.data() + b0, b1 - b0));
        plen[t] = static_cast<uint32_t>(b1 - b0);
      }
      for (unsigned stride = 1; stride < 256; stride <<= 1)
        for (unsigned t = 0; t < 256; t += 2 * stride)
          crc32_tree_step(part, plen, t, stride, crc32_shift(64u * stride), 64u * stride);
      ASSERT_EQ(part[0], static_cast<uint32_t>(crc32_z(0L, data.data() + c0, std::min<size_t>(16384, len - c0))));
      chunk_crcs.push_back(part[0]);
    }
    uint32_t whole = static_cast<uint32_t>(crc32_z(0L, Z_NULL, 0));
    for (size_t c = 0; c < chunk_crcs.size(); ++c)
      whole = crc32_combine_hd(whole, chunk_crcs[c], std::min<size_t>(16384, len - 16384 * c));
    EXPECT_EQ(whole, static_cast<uint32_t>(crc32_z(0L, data.data(), len))) << "len " << len;
  }
}

TEST(Wire, HeaderWriterRoundTrips) {
  WireHeader h;
  h.values = ValueCoding::kFloat32;
  h.indices = IndexCoding::kBitmap;
  h.n = 0x0102030405ull;
  h.k = 77;
  h.block = 9;
  h.crc = 0xA1B2C3D4u;
  h.index_bytes = 0x0102030406ull / 8;
  uint8_t out[kWireHeaderBytes];
  write_wire_header(h, out);
  const uint8_t expect_start[8] = {'G', 'K', 'T', 'C', 1, 0, 1, 1};
  EXPECT_EQ(std::memcmp(out, expect_start, 8), 0);
  uint64_t n = 0, k = 0, ib = 0;
  uint32_t block = 0, crc = 0;
  std::memcpy(&n, out + 8, 8);
  std::memcpy(&k, out + 16, 8);
  std::memcpy(&block, out + 24, 4);
  std::memcpy(&crc, out + 28, 4);
  std::memcpy(&ib, out + 32, 8);
  EXPECT_EQ(n, h.n);
  EXPECT_EQ(k, 77u);
  EXPECT_EQ(block, 9u);
  EXPECT_EQ(crc, 0xA1B2C3D4u);
  EXPECT_EQ(ib, h.index_bytes);
}

TEST(Wire, EveryTruncationAndEveryBitFlipRejected) {
  for (Shape s : {Shape{0.05, ValueCoding::kInt8, IndexCoding::kDeltaVarint},
                  Shape{0.9, ValueCoding::kInt8, IndexCoding::kBitmap},
                  Shape{0.1, ValueCoding::kFloat32, IndexCoding::kDeltaVarint}}) {
    const size_t n = 203;
    auto w = valid_message(n, s.density, s.coding);
    for (size_t len = 0; len < w.size(); ++len) {
      std::vector<uint8_t> t(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(len));
      std::vector<float> dst(n, 7.0f);
      // exact-size copy so AddressSanitizer would catch any read past len
      EXPECT_THROW(decompress_add(t.data(), t.size(), dst.data(), n, 1.0f), KernelError) << "len " << len;
    }
    auto longer = w;
    longer.push_back(0);
    expect_rejected(longer, n, "trailing bytes");
    for (size_t byte = 0; byte < w.size(); ++byte)
      for (int bit = 0; bit < 8; ++bit) {
        auto c = w;
        c[byte] ^= static_cast<uint8_t>(1u << bit);
        std::vector<float> dst(n, 7.0f);
        EXPECT_THROW(decompress_add(c.data(), c.size(), dst.data(), n, 1.0f), KernelError) << byte << ":" << bit;
        for (float x : dst) ASSERT_EQ(x, 7.0f);
      }
  }
}

TEST(Wire, HeaderFieldsValidatedEvenWithValidChecksum) {
  const size_t n = 203;
  const auto w = valid_message(n, 0.05, ValueCoding::kInt8);
  auto edit = [&](auto f) { auto c = w; f(c); fix_crc(c); return c; };
  expect_rejected(edit([](auto& c) { poke<uint32_t>(c, 0, 0xDEADBEEF); }), n, "bad magic");
  expect_rejected(edit([](auto& c) { poke<uint16_t>(c, 4, 2); }), n, "unsupported version");
  expect_rejected(edit([](auto& c) { c[6] = 2; }), n, "unknown value coding");
  expect_rejected(edit([](auto& c) { c[7] = 2; }), n, "unknown index coding");
  expect_rejected(edit([](auto& c) { poke<uint64_t>(c, 8, 204); }), n, "destination has 203");
  expect_rejected(edit([](auto& c) { poke<uint64_t>(c, 16, 204); }), n, "k=204 > n=203");
  expect_rejected(edit([](auto& c) { poke<uint64_t>(c, 16, 0); }), n, "k=0");
  expect_rejected(edit([](auto& c) { poke<uint64_t>(c, 16, 12); }), n, "truncated");  // k 11 -> 12
  expect_rejected(edit([](auto& c) { poke<uint32_t>(c, 24, 0); }), n, "block=0");
  expect_rejected(edit([](auto& c) { poke<uint32_t>(c, 24, kMaxBlock + 1); }), n, "block=");
  expect_rejected(edit([](auto& c) { poke<uint32_t>(c, 24, 3); }), n, "bytes, header implies");  // one more scale
  expect_rejected(edit([](auto& c) { poke<uint64_t>(c, 32, ~0ull); }), n, "index_bytes=");
  expect_rejected(edit([](auto& c) { poke<uint64_t>(c, 32, 1ull << 62); }), n, "index_bytes=");
  // wrong n passed by the caller
  std::vector<float> dst(500, 0.0f);
  EXPECT_THROW(decompress_add(w.data(), w.size(), dst.data(), 202, 1.0f), KernelError);
  // checksum itself
  auto c = w;
  c[28] ^= 1;
  expect_rejected(c, n, "checksum");
  c = w;
  c.back() ^= 0x40;
  expect_rejected(c, n, "checksum");
  EXPECT_THROW(decompress_add(nullptr, 0, dst.data(), 10, 1.0f), KernelError);
}

// Crafted bodies with valid checksums: the index and value sections are validated too.
TEST(Wire, VarintIndexSectionValidated) {
  const uint8_t i8 = 0, f32 = 1, dv = 0;
  std::vector<uint8_t> vals = float_bytes({1.0f, 2.0f});
  // indices 3, 5 -> varints 3, 1
  expect_rejected(build_message(10, 2, 4, f32, dv, {3, 1}, vals, true), 9, "destination has 9");
  EXPECT_NO_THROW({
    std::vector<float> dst(10, 0.0f);
    auto m = build_message(10, 2, 4, f32, dv, {3, 1}, vals);
    decompress_add(m.data(), m.size(), dst.data(), 10, 1.0f);
    EXPECT_EQ(dst[3], 1.0f);
    EXPECT_EQ(dst[5], 2.0f);
  });
  expect_rejected(build_message(10, 2, 4, f32, dv, {3, 6}, vals), 10, "index 10 at entry 1 >= n=10");
  expect_rejected(build_message(10, 2, 4, f32, dv, {3, 0x80}, vals), 10, "truncated varint");
  expect_rejected(build_message(10, 2, 4, f32, dv, {3, 0x81, 0x00}, vals), 10, "non-canonical varint");
  expect_rejected(build_message(10, 2, 4, f32, dv, {3, 1, 0}, vals), 10, "trailing bytes after k=2");
  expect_rejected(build_message(1u << 20, 2, 4, f32, dv, {0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 1}, vals), 1u << 20,
                  "overflows 32 bits");
  // a huge index that wraps 32 bits if added naively: 4e9 + 4e9
  expect_rejected(build_message(10, 2, 4, f32, dv, {0x80, 0x80, 0x80, 0x80, 0x0F, 0x80, 0x80, 0x80, 0x80, 0x0F}, vals),
                  10, ">= n=10");
  // values section
  expect_rejected(build_message(10, 2, 4, f32, dv, {3, 1}, float_bytes({1.0f, NAN})), 10, "non-finite float32");
  expect_rejected(build_message(10, 2, 4, f32, dv, {3, 1}, float_bytes({INFINITY, 1.0f})), 10, "non-finite float32");
  auto int8_body = [](float scale, int8_t a, int8_t b) {
    auto s = float_bytes({scale});
    s.push_back(static_cast<uint8_t>(a));
    s.push_back(static_cast<uint8_t>(b));
    return s;
  };
  EXPECT_NO_THROW({
    std::vector<float> dst(10, 0.0f);
    auto m = build_message(10, 2, 4, i8, dv, {3, 1}, int8_body(0.5f, -127, 3));
    decompress_add(m.data(), m.size(), dst.data(), 10, 1.0f);
    EXPECT_EQ(dst[3], -63.5f);
    EXPECT_EQ(dst[5], 1.5f);
  });
  expect_rejected(build_message(10, 2, 4, i8, dv, {3, 1}, int8_body(0.5f, -128, 3)), 10, "int8 value -128");
  expect_rejected(build_message(10, 2, 4, i8, dv, {3, 1}, int8_body(-0.5f, 1, 3)), 10, "scale of block 0");
  expect_rejected(build_message(10, 2, 4, i8, dv, {3, 1}, int8_body(NAN, 1, 3)), 10, "scale of block 0");
  expect_rejected(build_message(10, 2, 4, i8, dv, {3, 1}, int8_body(INFINITY, 1, 3)), 10, "scale of block 0");
}

TEST(Wire, BitmapIndexSectionValidated) {
  const uint8_t f32 = 1, bm = 1;
  std::vector<uint8_t> vals = float_bytes({1.0f, 2.0f});
  EXPECT_NO_THROW({
    std::vector<float> dst(10, 0.0f);
    auto m = build_message(10, 2, 4, f32, bm, {0x28, 0x00}, vals);  // bits 3, 5
    decompress_add(m.data(), m.size(), dst.data(), 10, 1.0f);
    EXPECT_EQ(dst[3], 1.0f);
    EXPECT_EQ(dst[5], 2.0f);
  });
  expect_rejected(build_message(10, 2, 4, f32, bm, {0x28, 0x04}, vals), 10, "padding bits");
  expect_rejected(build_message(10, 2, 4, f32, bm, {0x29, 0x00}, vals), 10, "3 bits set");
  expect_rejected(build_message(10, 2, 4, f32, bm, {0x28}, vals), 10, "expected 2");
  expect_rejected(build_message(10, 2, 4, f32, bm, {0x28, 0x00, 0x00}, vals), 10, "index_bytes=3");
}

TEST(IndexCoding, ChoosesTheSmallerAndRoundTrips) {
  struct Case {
    std::vector<uint32_t> idx;
    uint64_t n;
  };
  std::vector<Case> cases = {
      {{0}, 1},
      {{0, 127, 128, 16383, 16384, 2097151, 2097152, 268435455, 268435456, 4294967294u}, 4294967295ull},
      {{5, 6, 7, 8}, 9},
      {{}, 0},
  };
  std::vector<uint32_t> all(1000);
  for (uint32_t i = 0; i < 1000; ++i) all[i] = i;
  cases.push_back({all, 1000});
  for (const auto& c : cases) {
    IndexCodingChoice ch = choose_index_coding(c.idx.data(), c.idx.size(), c.n);
    size_t v = varint_index_bytes(c.idx.data(), c.idx.size());
    EXPECT_EQ(ch.bytes, std::min<uint64_t>(v, bitmap_index_bytes(c.n)));
    EXPECT_EQ(ch.coding, bitmap_index_bytes(c.n) < v ? IndexCoding::kBitmap : IndexCoding::kDeltaVarint);
    std::vector<uint8_t> buf(ch.bytes);
    encode_indices(ch.coding, c.idx.data(), c.idx.size(), c.n, buf.data());
    std::vector<uint32_t> back(c.idx.size());
    decode_indices(ch.coding, buf.data(), buf.size(), c.n, c.idx.size(), back.data());
    EXPECT_EQ(back, c.idx);
  }
  // exact varint sizes: 0..127 one byte, 128 two, 2^28 five
  std::vector<uint32_t> one = {127};
  EXPECT_EQ(varint_index_bytes(one.data(), 1), 1u);
  one = {128};
  EXPECT_EQ(varint_index_bytes(one.data(), 1), 2u);
  one = {268435456};
  EXPECT_EQ(varint_index_bytes(one.data(), 1), 5u);
  std::vector<uint32_t> gaps = {10, 11, 12 + 128};  // deltas 10, 0, 128
  EXPECT_EQ(varint_index_bytes(gaps.data(), 3), 4u);
}

}  // namespace
}  // namespace geotb::kernels

// bfloat16: round to nearest, ties to even, on crafted values (1 + 2^-8 is halfway between 1 and
// 1 + 2^-7: ties to the even 1; 1 + 3 * 2^-9 is above the half: up; 1 + 2^-7 + 2^-8 is halfway
// with an odd lower neighbour: up to 1 + 2^-6), and the special values.
TEST(Bf16, RoundsToNearestEven) {
  using geotb::kernels::from_bf16;
  using geotb::kernels::to_bf16;
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3 * 0x1p-9f)), 1.0f + 0x1p-7f);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 0x1p-7f + 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(from_bf16(to_bf16(-2.5f)), -2.5f);
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_TRUE(std::isinf(from_bf16(to_bf16(INFINITY))));
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(NAN))));
  EXPECT_EQ(from_bf16(to_bf16(3.4e38f)), INFINITY);  // above bfloat16's largest finite value: rounds up to inf
}
