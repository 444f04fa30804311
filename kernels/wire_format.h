// Versioned wire format of one compressed tensor (produced by compress_ef, consumed by
// decompress_add). All integers little-endian, no padding, no alignment assumed.
//
//   offset size  field
//   0      4     magic        0x43544B47 ("GKTC" as bytes 'G','K','T','C')
//   4      2     version      kWireVersion (1)
//   6      1     value coding ValueCoding: 0 = INT8 with per-block float scales, 1 = float32
//   7      1     index coding IndexCoding: 0 = delta-varint, 1 = bitmap (index_coding.h)
//   8      8     n            elements in the dense tensor (<= kMaxElements)
//   16     8     k            elements sent (1 <= k <= n; 0 only when n == 0)
//   24     4     block        INT8 block size in sent elements (1 <= block <= kMaxBlock);
//                             recorded for float32 too
//   28     4     crc32        zlib crc32 of bytes [0,28) followed by bytes [32, end)
//   32     8     index_bytes  size of the index section
//   40     -     indices      index_bytes bytes
//          -     scales       INT8 only: ceil(k/block) float32, block b covers sent elements
//                             [b*block, min(k,(b+1)*block)) in index order; finite, >= 0
//          -     values       INT8: k int8 in [-127,127]; float32: k finite float32
//   The message ends exactly there: any other length is rejected.
// Dequantised value of sent element j: float(q[j]) * scales[j / block] (one float multiply),
// or the float32 value itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/compress.h"
#include "kernels/index_coding.h"

namespace geotb::kernels {

inline constexpr uint32_t kWireMagic = 0x43544B47u;
inline constexpr uint16_t kWireVersion = 1;
inline constexpr size_t kWireHeaderBytes = 40;
inline constexpr uint32_t kMaxBlock = 1u << 24;

struct WireHeader {
  uint16_t version = kWireVersion;
  ValueCoding values = ValueCoding::kInt8;
  IndexCoding indices = IndexCoding::kDeltaVarint;
  uint64_t n = 0;
  uint64_t k = 0;
  uint32_t block = 0;
  uint32_t crc = 0;
  uint64_t index_bytes = 0;
};

/// ceil(k / block)
inline uint64_t num_blocks(uint64_t k, uint32_t block) { return (k + block - 1) / block; }

/// Encodes a message. idx[0..k) strictly increasing and < n. For kInt8, scales has
/// num_blocks(k, block) entries and q has k entries; for kFloat32, fvals has k entries
/// (the other pointers may be null). Replaces `wire`. Returns the index section size.
size_t encode_wire(uint64_t n, uint64_t k, uint32_t block, ValueCoding values, const uint32_t* idx,
                   const float* scales, const int8_t* q, const float* fvals,
                   std::vector<uint8_t>& wire);

/// Writes the 40-byte header of h into out[0, 40), crc field included (as h.crc).
void write_wire_header(const WireHeader& h, uint8_t* out);

/// The crc field of a message from its header (out[0, 40) as write_wire_header wrote it; the crc
/// field itself is ignored) and the zlib crc32 of each `chunk`-byte piece of its body (bytes
/// [40, end), body_len of them; the last piece may be shorter). Equals the crc encode_wire writes;
/// lets a device checksum the body in parallel and the host combine the pieces (zlib).
uint32_t wire_crc_from_chunks(const uint8_t* header, const uint32_t* chunk_crcs, uint64_t body_len,
                              uint64_t chunk);

/// A validated message. Pointers point into the caller's wire buffer.
struct WireView {
  WireHeader header;
  const uint8_t* scales = nullptr;  ///< num_blocks float32 (INT8 only), unaligned
  const uint8_t* values = nullptr;  ///< k int8 or k float32, unaligned
};

/// The header checks of decode_wire alone (every header field, and the length the header implies);
/// the checksum and the sections are not read. Throws KernelError like decode_wire.
WireHeader check_wire_header(const uint8_t* wire, size_t len, uint64_t expected_n);

/// Validates every field of the message (see the table above; expected_n must equal n),
/// decodes the indices into idx (resized to k) and checks the values. Throws KernelError
/// naming the field on any defect; never reads outside wire[0, len).
WireView decode_wire(const uint8_t* wire, size_t len, uint64_t expected_n,
                     std::vector<uint32_t>& idx);

}  // namespace geotb::kernels
