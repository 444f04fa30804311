// Wire format of the socket transport (engine/transport/socket/socket_transport.h).
// Every frame is a fixed 64-byte header followed by payload_len bytes. All integers little-endian.
//
//   offset size  field
//   0      4     magic        kMagic (bytes 'G','T','B','F')
//   4      1     version      kVersion (1)
//   5      1     type         FrameType
//   6      2     flags        0 (reserved)
//   8      4     payload_len  bytes after the header (<= kMaxPayload; control frames <= kMaxControlPayload)
//   12     4     payload_crc  crc32c of the payload (0 for an empty payload)
//   16     8     seq          per connection and direction: 0 for the first frame (HELLO / the
//                             acceptor's reply), +1 for every frame after it, no gaps
//   24     8     tag          DATA: the message's tag; 0 otherwise
//   32     8     msg_id       DATA: sender's per-destination message number, 0, 1, 2, ... (orders delivery)
//   40     8     msg_len      DATA: total message bytes
//   48     8     offset       DATA: where this chunk starts in the message; offset + payload_len <= msg_len
//   56     4     reserved     0
//   60     4     header_crc   crc32c of bytes [0, 60)
//
// The header has its own checksum so that msg_len/offset are trusted before the receiver
// allocates a message buffer and reads the payload straight into it; the payload checksum is
// checked afterwards and a mismatch discards the whole message.
//
// Handshake payloads (see socket_transport.h for the exchange):
//   HELLO      52 B: from_rank u32, to_rank u32, world u32, stream u32, flags u32 (bit 0: the
//                    connector has a secret), nonce[32]
//   CHALLENGE  72 B: from_rank u32 (acceptor), to_rank u32 (connector), nonce[32], mac[32]
//   RESPONSE   32 B: mac[32]
//   REJECT    <= kMaxControlPayload: UTF-8 reason
//   ACCEPT, HEARTBEAT, GOODBYE: empty
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace geotb::engine::sockframe {

inline constexpr uint32_t kMagic = 0x46425447u;  // 'G','T','B','F' little-endian
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderBytes = 64;
inline constexpr uint32_t kMaxPayload = 64u << 20;   // largest chunk a receiver accepts
inline constexpr uint32_t kMaxControlPayload = 1024;  // handshake / reject frames
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
inline constexpr uint32_t kHelloFlagAuth = 1u;

enum class FrameType : uint8_t {
  kData = 1,
  kHeartbeat = 2,
  kGoodbye = 3,  // last frame a closing endpoint sends on a connection; EOF follows
  kHello = 4,
  kChallenge = 5,
  kResponse = 6,
  kAccept = 7,
  kReject = 8,
};
const char* type_name(FrameType t);

struct FrameHeader {
  FrameType type = FrameType::kHeartbeat;
  uint32_t payload_len = 0;
  uint32_t payload_crc = 0;
  uint64_t seq = 0;
  uint64_t tag = 0;
  uint64_t msg_id = 0;
  uint64_t msg_len = 0;
  uint64_t offset = 0;
};

/// Writes the 64-byte header, computing header_crc. payload_crc must already be set.
void encode_header(const FrameHeader& h, uint8_t* out);
/// Parses and validates magic, version, type, header_crc, payload_len <= kMaxPayload (and
/// kMaxControlPayload for control types, 0 for HEARTBEAT/GOODBYE/ACCEPT). Returns the reason on
/// failure, std::nullopt on success.
std::optional<std::string> decode_header(const uint8_t* in, FrameHeader* out);

/// CRC-32C (Castagnoli), as iSCSI/ext4: crc32c("123456789") == 0xE3069283. SSE4.2 instruction
/// when the CPU has it, table otherwise. `crc` continues a previous value (0 to start).
uint32_t crc32c(const uint8_t* p, size_t n, uint32_t crc = 0);
/// The table implementation (tests compare it with the hardware path).
uint32_t crc32c_portable(const uint8_t* p, size_t n, uint32_t crc = 0);

using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

struct Hello {
  uint32_t from_rank = 0, to_rank = 0, world = 0, stream = 0, flags = 0;
  Nonce nonce{};
};
struct Challenge {
  uint32_t from_rank = 0, to_rank = 0;
  Nonce nonce{};
  Mac mac{};
};
std::vector<uint8_t> encode_hello(const Hello& h);
std::optional<Hello> decode_hello(std::span<const uint8_t> p);
std::vector<uint8_t> encode_challenge(const Challenge& c);
std::optional<Challenge> decode_challenge(std::span<const uint8_t> p);
std::optional<Mac> decode_response(std::span<const uint8_t> p);

/// Header + payload of one complete frame with crcs filled in (tests and tools that talk to a
/// transport over a raw socket).
std::vector<uint8_t> make_frame(FrameHeader h, std::span<const uint8_t> payload);

}  // namespace geotb::engine::sockframe
