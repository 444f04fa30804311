// libFuzzer target for the QSGD wire decoder (qsgd_decode_add / qsgd_read_header) and encoder.
// Input byte 0 selects the mode, the rest is the message:
//   bit 0 set: the header checksum is recomputed first, so the fuzzer gets past the crc and
//              exercises the norm, level, sign and padding validation behind it;
//   bit 1 set: the destination size is taken from the header's n (capped at 4096 so each
//              execution stays cheap), else from byte 1 (usually a mismatch, which must be rejected).
// Then the message's bytes, read as floats, are encoded with levels and bucket taken from its
// first bytes and decoded again: the encoder must accept every finite input (or name a norm that
// overflows float32), write exactly qsgd_wire_bytes, and every decoded value must be a level of
// its bucket next to the input (|Q(v_i)| = qsgd_value(l, norm, s), l floor or ceil of |v_i| s / norm).
// Any exception other than KernelError, any crash or sanitizer report is a bug.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/qsgd.h"

using namespace geotb::kernels;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  const uint8_t* msg = data + 1;
  const size_t len = size - 1;
  std::vector<uint8_t> patched;
  if ((mode & 1) && len >= kQsgdHeaderBytes) {
    patched.assign(msg, msg + len);
    uLong c = crc32_z(0L, Z_NULL, 0);
    c = crc32_z(c, patched.data(), 24);
    c = crc32_z(c, patched.data() + kQsgdHeaderBytes, len - kQsgdHeaderBytes);
    const uint32_t c32 = static_cast<uint32_t>(c);
    std::memcpy(patched.data() + 24, &c32, 4);
    msg = patched.data();
  }
  uint64_t n = data[1];
  if ((mode & 2) && len >= 16) {
    std::memcpy(&n, msg + 8, 8);
    if (n > 4096) n = 4096;
  }
  static std::vector<float> dst(4096);
  std::fill(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(n), 0.0f);
  try {
    qsgd_decode_add(msg, len, dst.data(), n, 1.0f);
  } catch (const KernelError&) {
    static const std::vector<float> zeros(4096, 0.0f);
    if (n && std::memcmp(dst.data(), zeros.data(), 4 * n) != 0) __builtin_trap();  // dst must be untouched
  }
  // The encoder on the input's bytes as floats (non-finite ones replaced by 0).
  if (len >= 4) {
    const size_t m = std::min<size_t>(len / 4, 1024);
    std::vector<float> v(m);
    std::memcpy(v.data(), msg, 4 * m);
    for (float& x : v)
      if (!std::isfinite(x)) x = 0.0f;
    const uint32_t levels = 1 + (static_cast<uint32_t>(msg[0]) | static_cast<uint32_t>(msg[1] & 0x3F) << 8) % kQsgdMaxLevels;
    const uint32_t bucket = 1 + static_cast<uint32_t>(msg[2]) % 64;
    std::vector<uint8_t> wire;
    try {
      qsgd_encode(v.data(), m, {.levels = levels, .bucket = bucket, .seed = msg[3]}, wire);
    } catch (const KernelError&) {
      return 0;  // a norm over float32's range (the only rejection of finite input)
    }
    if (wire.size() != qsgd_wire_bytes(m, levels, bucket)) __builtin_trap();
    std::vector<float> q(m, 0.0f);
    qsgd_decode_add(wire.data(), wire.size(), q.data(), m, 1.0f);  // must not throw
    for (size_t i = 0; i < m; ++i) {
      float norm;
      std::memcpy(&norm, wire.data() + kQsgdHeaderBytes + 4 * (i / bucket), 4);
      if (norm == 0.0f) {
        if (q[i] != 0.0f) __builtin_trap();
        continue;
      }
      // The levels the encoder may pick: floor(r) and ceil(r), at most s; the value must be one of
      // theirs exactly.
      const double r = static_cast<double>(std::fabs(v[i])) * levels / norm;
      bool found = false;
      for (double k = std::floor(r); k <= std::min<double>(std::ceil(r), levels); ++k)
        found = found || qsgd_value(static_cast<uint32_t>(k), norm, levels) == std::fabs(q[i]);
      if (!found) __builtin_trap();
      if (q[i] != 0.0f && std::signbit(q[i]) != std::signbit(v[i])) __builtin_trap();
    }
  }
  return 0;
}
