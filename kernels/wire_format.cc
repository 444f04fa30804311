#include "kernels/wire_format.h"

#include <zlib.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace geotb::kernels {
namespace {

template <class T>
inline void put(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);  // little-endian host (x86-64, aarch64); checked in static_assert below
}
template <class T>
inline T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static_assert(std::endian::native == std::endian::little, "wire format assumes a little-endian host");

uint32_t wire_crc(const uint8_t* wire, size_t len) {
  // crc over [0,28) then [32,len): the crc field itself is excluded.
  uLong c = crc32_z(0L, Z_NULL, 0);
  c = crc32_z(c, wire, 28);
  c = crc32_z(c, wire + 32, len - 32);
  return static_cast<uint32_t>(c);
}

[[noreturn]] void fail_wire(const std::string& what) { throw KernelError("wire: " + what); }

}  // namespace

void write_wire_header(const WireHeader& h, uint8_t* w) {
  put<uint32_t>(w + 0, kWireMagic);
  put<uint16_t>(w + 4, h.version);
  put<uint8_t>(w + 6, static_cast<uint8_t>(h.values));
  put<uint8_t>(w + 7, static_cast<uint8_t>(h.indices));
  put<uint64_t>(w + 8, h.n);
  put<uint64_t>(w + 16, h.k);
  put<uint32_t>(w + 24, h.block);
  put<uint32_t>(w + 28, h.crc);
  put<uint64_t>(w + 32, h.index_bytes);
}

uint32_t wire_crc_from_chunks(const uint8_t* header, const uint32_t* chunk_crcs, uint64_t body_len,
                              uint64_t chunk) {
  uLong c = crc32_z(0L, Z_NULL, 0);
  c = crc32_z(c, header, 28);
  c = crc32_z(c, header + 32, kWireHeaderBytes - 32);
  if (body_len == 0) return static_cast<uint32_t>(c);
  if (chunk == 0) throw KernelError("wire_crc_from_chunks: chunk of 0 bytes");
  const uint64_t full = body_len / chunk, tail = body_len % chunk;
#if ZLIB_VERNUM >= 0x12c0
  const uLong op = crc32_combine_gen64(static_cast<z_off64_t>(chunk));  // one shift operator for all
  for (uint64_t j = 0; j < full; ++j) c = crc32_combine_op(c, chunk_crcs[j], op);
#else
  for (uint64_t j = 0; j < full; ++j) c = crc32_combine64(c, chunk_crcs[j], static_cast<z_off64_t>(chunk));
#endif
  if (tail) c = crc32_combine64(c, chunk_crcs[full], static_cast<z_off64_t>(tail));
  return static_cast<uint32_t>(c);
}

size_t encode_wire(uint64_t n, uint64_t k, uint32_t block, ValueCoding values, const uint32_t* idx,
                   const float* scales, const int8_t* q, const float* fvals,
                   std::vector<uint8_t>& wire) {
  IndexCodingChoice ic = choose_index_coding(idx, k, n);
  uint64_t nb = values == ValueCoding::kInt8 ? num_blocks(k, block) : 0;
  uint64_t value_bytes = values == ValueCoding::kInt8 ? k : 4 * k;
  size_t total = kWireHeaderBytes + ic.bytes + 4 * nb + value_bytes;
  wire.resize(total);
  uint8_t* w = wire.data();
  WireHeader h;
  h.values = values;
  h.indices = ic.coding;
  h.n = n;
  h.k = k;
  h.block = block;
  h.index_bytes = ic.bytes;
  write_wire_header(h, w);
  uint8_t* p = w + kWireHeaderBytes;
  encode_indices(ic.coding, idx, k, n, p);
  p += ic.bytes;
  if (values == ValueCoding::kInt8) {
    std::memcpy(p, scales, 4 * nb);
    p += 4 * nb;
    std::memcpy(p, q, k);
  } else {
    std::memcpy(p, fvals, 4 * k);
  }
  put<uint32_t>(w + 28, wire_crc(w, total));
  return ic.bytes;
}

WireHeader check_wire_header(const uint8_t* wire, size_t len, uint64_t expected_n) {
  if (wire == nullptr && len != 0) fail_wire("null buffer");
  if (len < kWireHeaderBytes)
    fail_wire("truncated header: " + std::to_string(len) + " bytes < " + std::to_string(kWireHeaderBytes));
  WireHeader h;
  uint32_t magic = get<uint32_t>(wire);
  if (magic != kWireMagic) fail_wire("bad magic 0x" + [&] { char b[16]; std::snprintf(b, sizeof b, "%08x", magic); return std::string(b); }());
  h.version = get<uint16_t>(wire + 4);
  if (h.version != kWireVersion)
    fail_wire("unsupported version " + std::to_string(h.version) + " (this decoder reads " + std::to_string(kWireVersion) + ")");
  uint8_t vc = wire[6], icod = wire[7];
  if (vc > static_cast<uint8_t>(ValueCoding::kFloat32)) fail_wire("unknown value coding " + std::to_string(vc));
  if (icod > static_cast<uint8_t>(IndexCoding::kBitmap)) fail_wire("unknown index coding " + std::to_string(icod));
  h.values = static_cast<ValueCoding>(vc);
  h.indices = static_cast<IndexCoding>(icod);
  h.n = get<uint64_t>(wire + 8);
  h.k = get<uint64_t>(wire + 16);
  h.block = get<uint32_t>(wire + 24);
  h.crc = get<uint32_t>(wire + 28);
  h.index_bytes = get<uint64_t>(wire + 32);
  if (h.n != expected_n) fail_wire("n=" + std::to_string(h.n) + " but the destination has " + std::to_string(expected_n));
  if (h.n > kMaxElements) fail_wire("n=" + std::to_string(h.n) + " exceeds " + std::to_string(kMaxElements));
  if (h.k > h.n) fail_wire("k=" + std::to_string(h.k) + " > n=" + std::to_string(h.n));
  if (h.k == 0 && h.n != 0) fail_wire("k=0 for n=" + std::to_string(h.n));
  if (h.block == 0 || h.block > kMaxBlock) fail_wire("block=" + std::to_string(h.block) + " outside [1, " + std::to_string(kMaxBlock) + "]");
  // Sizes: every term is bounded (n < 2^32, index_bytes checked first), so no overflow below.
  uint64_t max_index_bytes = h.indices == IndexCoding::kBitmap ? bitmap_index_bytes(h.n) : 5 * h.k;
  if (h.index_bytes > max_index_bytes) fail_wire("index_bytes=" + std::to_string(h.index_bytes) + " too large for k=" + std::to_string(h.k));
  uint64_t nb = h.values == ValueCoding::kInt8 ? num_blocks(h.k, h.block) : 0;
  uint64_t value_bytes = h.values == ValueCoding::kInt8 ? h.k : 4 * h.k;
  uint64_t total = kWireHeaderBytes + h.index_bytes + 4 * nb + value_bytes;
  if (len != total)
    fail_wire((len < total ? "truncated: " : "trailing bytes: ") + std::to_string(len) + " bytes, header implies " + std::to_string(total));
  return h;
}

WireView decode_wire(const uint8_t* wire, size_t len, uint64_t expected_n, std::vector<uint32_t>& idx) {
  WireView v;
  WireHeader& h = v.header;
  h = check_wire_header(wire, len, expected_n);
  const uint64_t nb = h.values == ValueCoding::kInt8 ? num_blocks(h.k, h.block) : 0;
  uint32_t crc = wire_crc(wire, len);
  if (crc != h.crc) fail_wire("checksum mismatch");
  const uint8_t* p = wire + kWireHeaderBytes;
  idx.resize(h.k);
  decode_indices(h.indices, p, h.index_bytes, h.n, h.k, idx.data());
  p += h.index_bytes;
  if (h.values == ValueCoding::kInt8) {
    v.scales = p;
    for (uint64_t b = 0; b < nb; ++b) {
      float s = get<float>(p + 4 * b);
      if (!(s >= 0.0f) || !std::isfinite(s)) fail_wire("scale of block " + std::to_string(b) + " is not finite and >= 0");
    }
    p += 4 * nb;
    v.values = p;
    for (uint64_t j = 0; j < h.k; ++j)
      if (p[j] == 0x80u) fail_wire("int8 value -128 at entry " + std::to_string(j) + " (codes are in [-127,127])");
  } else {
    v.values = p;
    for (uint64_t j = 0; j < h.k; ++j)
      if (!std::isfinite(get<float>(p + 4 * j))) fail_wire("non-finite float32 value at entry " + std::to_string(j));
  }
  return v;
}

}  // namespace geotb::kernels
