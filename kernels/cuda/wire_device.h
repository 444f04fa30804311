// The wire format's body (kernels/wire_format.h, bytes [40, end)) on the device: index coding
// and the chunked CRC-32 the host combines (wire_crc_from_chunks). Include from .cu files only.
// Every function queues work on `st` and returns without waiting, unless it says otherwise.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/device_arrays.h"
#include "kernels/compress.h"
#include "kernels/index_coding.h"

namespace geotb::kernels::cuda::wire {

/// Bytes per CRC chunk, one thread block each: kCrcThreads pieces of kCrcPiece bytes, combined on
/// the device. 1.5 MB of body (64M floats at 1 %) is 94 chunks for the host to combine.
inline constexpr unsigned kCrcThreads = 256;
inline constexpr uint64_t kCrcPiece = 64;
inline constexpr uint64_t kCrcChunk = kCrcThreads * kCrcPiece;  // 16 KiB

inline uint64_t crc_chunks(uint64_t body_len) { return (body_len + kCrcChunk - 1) / kCrcChunk; }

/// Scratch of the index coder (grow-only).
struct IndexScratch {
  DevArray<uint64_t> len, off, total;
  DevArray<unsigned char> temp;
};

/// Queues the delta-varint sizes of sel[0..k) (strictly increasing, k >= 1) and their sum into
/// *host_total (pinned memory; valid after the stream is synchronised).
void queue_varint_size(const uint32_t* sel, uint64_t k, IndexScratch& s, uint64_t* host_total, cudaStream_t st);

/// Writes the index section for sel[0..k) into out (device, 4-byte aligned, with room for the
/// section rounded up to 4 bytes): delta-varint (queue_varint_size must have run on the same
/// scratch, same stream) or the bitmap of n bits. Bytes past the section may be overwritten with
/// zeros up to the next multiple of 4.
void queue_encode_indices(IndexCoding coding, const uint32_t* sel, uint64_t k, uint64_t n, IndexScratch& s,
                          uint8_t* out, cudaStream_t st);

/// zlib crc32 of each kCrcChunk-byte piece of body[0, len) into out[0, crc_chunks(len)).
/// body must be 4-byte aligned.
void queue_crc_chunks(const uint8_t* body, uint64_t len, uint32_t* out, cudaStream_t st);

/// Scratch of the index decoder (grow-only).
struct DecodeScratch {
  DevArray<uint32_t> mark, rank;
  DevArray<uint64_t> endpos, gap, sum;
  DevArray<unsigned char> temp;
};

/// Queues the decoding of the index section in[0, len) (device memory) of a message whose header
/// says n and k (k >= 1, len < 2^32) into idx[0, k), with every check of decode_indices. Any defect
/// sets *flag (device) to non-zero, and idx is then meaningless; the caller reruns the host decoder
/// for the error message.
void queue_decode_indices(IndexCoding coding, const uint8_t* in, uint64_t len, uint64_t n, uint64_t k,
                          DecodeScratch& s, uint32_t* idx, uint32_t* flag, cudaStream_t st);

/// Queues decode_wire's value checks on aligned device copies of the sections: INT8 scales finite
/// and >= 0 (nb of them) and codes != -128, or float32 values finite. Defects set *flag.
void queue_check_values(ValueCoding values, const float* scales, uint64_t nb, const void* vals, uint64_t k,
                        uint32_t* flag, cudaStream_t st);

}  // namespace geotb::kernels::cuda::wire
