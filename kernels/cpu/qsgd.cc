// QSGD on the CPU: the quantiser, the encoder and the validating decoder of kernels/qsgd.h.
#include "kernels/qsgd.h"

#include <zlib.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/index_coding.h"
#include "kernels/quantize.h"
#include "kernels/wire_format.h"

namespace geotb::kernels {
namespace {

static_assert(std::endian::native == std::endian::little, "wire format assumes a little-endian host");

template <class T>
inline void put(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <class T>
inline T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr size_t kCrcAt = 24;

uint32_t qsgd_crc(const uint8_t* wire, size_t len) {
  uLong c = crc32_z(0L, Z_NULL, 0);
  c = crc32_z(c, wire, kCrcAt);
  c = crc32_z(c, wire + kQsgdHeaderBytes, len - kQsgdHeaderBytes);
  return static_cast<uint32_t>(c);
}

[[noreturn]] void fail(const std::string& what) { throw KernelError("qsgd wire: " + what); }

uint64_t num_buckets(uint64_t n, uint32_t bucket) { return (n + bucket - 1) / bucket; }

uint64_t splitmix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Unpacks n codes of `width` bits (LSB first) from `p`; calls f(i, code) for each. Returns the
/// bits left over in the last byte (the padding), shifted down.
template <class F>
uint64_t unpack(const uint8_t* p, uint64_t n, uint32_t width, F&& f) {
  const uint64_t mask = (uint64_t{1} << width) - 1;
  uint64_t acc = 0;
  uint32_t bits = 0;
  for (uint64_t i = 0; i < n; ++i) {
    while (bits < width) {
      acc |= static_cast<uint64_t>(*p++) << bits;
      bits += 8;
    }
    f(i, static_cast<uint32_t>(acc & mask));
    acc >>= width;
    bits -= width;
  }
  return acc;
}

}  // namespace

uint32_t qsgd_level_bits(uint32_t levels) {
  // ceil(log2(s + 1)) = the bit width of s.
  return static_cast<uint32_t>(std::bit_width(levels));
}

uint64_t qsgd_wire_bytes(uint64_t n, uint32_t levels, uint32_t bucket) {
  const uint64_t code_bits = n * (qsgd_level_bits(levels) + 1);
  return kQsgdHeaderBytes + 4 * num_buckets(n, bucket) + (code_bits + 7) / 8;
}

uint64_t qsgd_seed(uint64_t base, uint64_t stream, uint64_t counter) {
  return splitmix(splitmix(splitmix(base) ^ stream) ^ counter);
}

QsgdStats qsgd_encode(const float* v, size_t n, const QsgdConfig& cfg, std::vector<uint8_t>& wire) {
  auto bad = [](const std::string& m) { throw KernelError("qsgd_encode: " + m); };
  if (cfg.levels < 1 || cfg.levels > kQsgdMaxLevels)
    bad("QsgdConfig.levels=" + std::to_string(cfg.levels) + " outside [1, " + std::to_string(kQsgdMaxLevels) + "]");
  if (cfg.bucket < 1 || cfg.bucket > kMaxBlock)
    bad("QsgdConfig.bucket=" + std::to_string(cfg.bucket) + " outside [1, " + std::to_string(kMaxBlock) + "]");
  if (n > kMaxElements) bad("n=" + std::to_string(n) + " exceeds " + std::to_string(kMaxElements));
  if (n > 0 && v == nullptr) bad("null v with n=" + std::to_string(n));
  const uint32_t s = cfg.levels, d = cfg.bucket;
  const uint64_t nb = num_buckets(n, d);
  // Pass 1: the norms (and the input checked) before anything is written.
  thread_local std::vector<float> norms;
  norms.resize(nb);
  for (uint64_t b = 0; b < nb; ++b) {
    const uint64_t lo = b * d, hi = lo + d < n ? lo + d : n;
    double ss = 0;
    for (uint64_t i = lo; i < hi; ++i) {
      if (!std::isfinite(v[i])) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v[i]));
        bad("non-finite v[" + std::to_string(i) + "] = " + buf);
      }
      ss += static_cast<double>(v[i]) * static_cast<double>(v[i]);
    }
    const float norm = static_cast<float>(std::sqrt(ss));
    if (!std::isfinite(norm))
      bad("the norm of bucket " + std::to_string(b) + " (elements [" + std::to_string(lo) + ", " + std::to_string(hi) +
          ")) overflows float32");
    norms[b] = norm;
  }
  const uint64_t total = qsgd_wire_bytes(n, s, d);
  wire.assign(total, 0);
  uint8_t* w = wire.data();
  put<uint32_t>(w + 0, kQsgdWireMagic);
  put<uint16_t>(w + 4, kQsgdWireVersion);
  put<uint16_t>(w + 6, 0);
  put<uint64_t>(w + 8, n);
  put<uint32_t>(w + 16, s);
  put<uint32_t>(w + 20, d);
  if (nb) std::memcpy(w + kQsgdHeaderBytes, norms.data(), 4 * nb);
  // Pass 2: the levels, packed as they come.
  const uint32_t width = qsgd_level_bits(s) + 1;
  uint8_t* out = w + kQsgdHeaderBytes + 4 * nb;
  uint64_t acc = 0;
  uint32_t bits = 0;
  const double ds = static_cast<double>(s);
  for (uint64_t b = 0; b < nb; ++b) {
    const uint64_t lo = b * d, hi = lo + d < n ? lo + d : n;
    const double norm = static_cast<double>(norms[b]);
    for (uint64_t i = lo; i < hi; ++i) {
      uint32_t l = 0;
      if (norm > 0) {
        // |v_i| s exact in double; r <= s since norm >= |v_i| (kernels/qsgd.h).
        const double r = static_cast<double>(std::fabs(v[i])) * ds / norm;
        if (r >= ds) {
          l = s;
        } else {
          l = static_cast<uint32_t>(r);  // floor: r >= 0
          const double p = r - static_cast<double>(l);
          if (static_cast<double>(stochastic_uniform(cfg.seed, i)) < p) ++l;
        }
      }
      const uint32_t code = l << 1 | (l > 0 && v[i] < 0.0f ? 1u : 0u);
      acc |= static_cast<uint64_t>(code) << bits;
      bits += width;
      while (bits >= 8) {
        *out++ = static_cast<uint8_t>(acc);
        acc >>= 8;
        bits -= 8;
      }
    }
  }
  if (bits) *out++ = static_cast<uint8_t>(acc);
  put<uint32_t>(w + kCrcAt, qsgd_crc(w, total));
  return {.n = n, .buckets = nb, .wire_bytes = total};
}

QsgdHeader qsgd_read_header(const uint8_t* wire, size_t len, uint64_t expected_n) {
  if (wire == nullptr && len != 0) fail("null buffer");
  if (len < kQsgdHeaderBytes)
    fail("truncated header: " + std::to_string(len) + " bytes < " + std::to_string(kQsgdHeaderBytes));
  const uint32_t magic = get<uint32_t>(wire);
  if (magic != kQsgdWireMagic) {
    char b[16];
    std::snprintf(b, sizeof b, "%08x", magic);
    fail(std::string("bad magic 0x") + b);
  }
  QsgdHeader h;
  h.version = get<uint16_t>(wire + 4);
  if (h.version != kQsgdWireVersion)
    fail("unsupported version " + std::to_string(h.version) + " (this decoder reads " +
         std::to_string(kQsgdWireVersion) + ")");
  if (const uint16_t r = get<uint16_t>(wire + 6); r != 0) fail("reserved=" + std::to_string(r) + ", expected 0");
  h.n = get<uint64_t>(wire + 8);
  h.levels = get<uint32_t>(wire + 16);
  h.bucket = get<uint32_t>(wire + 20);
  h.crc = get<uint32_t>(wire + kCrcAt);
  if (h.n != expected_n)
    fail("n=" + std::to_string(h.n) + " but the destination has " + std::to_string(expected_n));
  if (h.n > kMaxElements) fail("n=" + std::to_string(h.n) + " exceeds " + std::to_string(kMaxElements));
  if (h.levels < 1 || h.levels > kQsgdMaxLevels)
    fail("levels=" + std::to_string(h.levels) + " outside [1, " + std::to_string(kQsgdMaxLevels) + "]");
  if (h.bucket < 1 || h.bucket > kMaxBlock)
    fail("bucket=" + std::to_string(h.bucket) + " outside [1, " + std::to_string(kMaxBlock) + "]");
  const uint64_t total = qsgd_wire_bytes(h.n, h.levels, h.bucket);  // n < 2^32, width <= 17: no overflow
  if (len != total)
    fail((len < total ? "truncated: " : "trailing bytes: ") + std::to_string(len) + " bytes, header implies " +
         std::to_string(total));
  if (qsgd_crc(wire, len) != h.crc) fail("checksum mismatch");
  return h;
}

void qsgd_decode_add(const uint8_t* wire, size_t len, float* dst, size_t n, float alpha) {
  const QsgdHeader h = qsgd_read_header(wire, len, n);
  const uint64_t nb = num_buckets(h.n, h.bucket);
  const uint8_t* norms = wire + kQsgdHeaderBytes;
  for (uint64_t b = 0; b < nb; ++b) {
    const float x = get<float>(norms + 4 * b);
    if (!(x >= 0.0f) || !std::isfinite(x)) fail("norm of bucket " + std::to_string(b) + " is not finite and >= 0");
  }
  const uint8_t* codes = norms + 4 * nb;
  const uint32_t width = qsgd_level_bits(h.levels) + 1, s = h.levels;
  // Validation pass: nothing touched until the whole message is known good.
  uint64_t bad_at = h.n;
  std::string why;
  const uint64_t padding = unpack(codes, h.n, width, [&](uint64_t i, uint32_t code) {
    if (bad_at != h.n) return;
    if ((code >> 1) > s) {
      bad_at = i;
      why = "level " + std::to_string(code >> 1) + " > levels=" + std::to_string(s);
    } else if (code == 1) {
      bad_at = i;
      why = "sign bit set on level 0";
    }
  });
  if (bad_at != h.n) fail("element " + std::to_string(bad_at) + ": " + why);
  if (padding != 0) fail("nonzero padding bits after the last code");
  if (h.n > 0 && dst == nullptr) throw KernelError("qsgd_decode_add: null dst");
  const double ds = static_cast<double>(s);
  double norm = 0;
  uint64_t next_bucket = 0;
  unpack(codes, h.n, width, [&](uint64_t i, uint32_t code) {
    if (i == next_bucket) {
      norm = static_cast<double>(get<float>(norms + 4 * (i / h.bucket)));
      next_bucket += h.bucket;
    }
    const float mag = qsgd_value(code >> 1, norm, ds);
    dst[i] += alpha * ((code & 1u) ? -mag : mag);
  });
}

}  // namespace geotb::kernels
