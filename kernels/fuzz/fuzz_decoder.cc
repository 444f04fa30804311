// libFuzzer target for the wire decoder (decompress_add / decode_wire / decode_indices).
// Input byte 0 selects the mode, the rest is the message:
//   bit 0 set: the header checksum is recomputed first, so the fuzzer gets past the crc and
//              exercises the field, index and value validation behind it;
//   bit 1 set: the destination size is taken from the header's n (capped at 4096 so each execution stays cheap), else from
//              byte 1 (usually a mismatch, which must be rejected).
// Any exception other than KernelError, any crash or sanitizer report is a bug.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/compress.h"
#include "kernels/wire_format.h"

using namespace geotb::kernels;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  // libFuzzer's buffer is allocated with the exact size, so ASan reports any overread; a copy
  // (also exact size) is made only when the checksum has to be patched.
  const uint8_t* msg = data + 1;
  const size_t len = size - 1;
  std::vector<uint8_t> patched;
  if ((mode & 1) && len >= kWireHeaderBytes) {
    patched.assign(msg, msg + len);
    uLong c = crc32_z(0L, Z_NULL, 0);
    c = crc32_z(c, patched.data(), 28);
    c = crc32_z(c, patched.data() + 32, len - 32);
    uint32_t c32 = static_cast<uint32_t>(c);
    std::memcpy(patched.data() + 28, &c32, 4);
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
    decompress_add(msg, len, dst.data(), n, 1.0f);
  } catch (const KernelError&) {
    static const std::vector<float> zeros(4096, 0.0f);
    if (n && std::memcmp(dst.data(), zeros.data(), 4 * n) != 0) __builtin_trap();  // dst must be untouched
  }
  // The index decoders on their own, with n and k from the first bytes.
  if (len >= 3) {
    const uint64_t in = 1 + msg[0] * 7u, ik = msg[1] % 64;
    static std::vector<uint32_t> idx(64);
    try {
      decode_indices(static_cast<IndexCoding>(msg[2] & 1), msg + 3, len - 3, in, ik, idx.data());
      for (uint64_t j = 0; j < ik; ++j)
        if (idx[j] >= in || (j && idx[j] <= idx[j - 1])) __builtin_trap();
    } catch (const KernelError&) {
    }
  }
  return 0;
}
