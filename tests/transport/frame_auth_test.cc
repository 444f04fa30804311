// Wire format, HMAC and stream derivation: exact values for crafted inputs.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "engine/transport/socket/auth.h"
#include "engine/transport/socket/frame.h"
#include "engine/transport/socket/socket_transport.h"
#include "test_util.h"

namespace fr = geotb::engine::sockframe;
namespace au = geotb::engine::sockauth;
using geotb::engine::SocketTransport;

TEST(SocketFrame, Crc32cCheckValueHardwareAndTableAgree) {
  const std::string s = "123456789";
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  EXPECT_EQ(fr::crc32c(p, s.size()), 0xE3069283u);
  EXPECT_EQ(fr::crc32c_portable(p, s.size()), 0xE3069283u);
  // Continuation: crc(a||b) == crc(b, crc(a)).
  EXPECT_EQ(fr::crc32c(p + 4, 5, fr::crc32c(p, 4)), 0xE3069283u);
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 1000u, 65537u}) {
    auto v = geotb::test::pattern(n, n);
    EXPECT_EQ(fr::crc32c(v.data(), n), fr::crc32c_portable(v.data(), n)) << n;
  }
}

TEST(SocketFrame, HeaderRoundTripsAndEveryByteIsChecked) {
  fr::FrameHeader h;
  h.type = fr::FrameType::kData;
  h.payload_len = 4096;
  h.payload_crc = 0xDEADBEEF;
  h.seq = 0x0102030405060708ull;
  h.tag = 77;
  h.msg_id = 5;
  h.msg_len = 1 << 20;
  h.offset = 8192;
  uint8_t b[fr::kHeaderBytes];
  fr::encode_header(h, b);
  fr::FrameHeader d;
  ASSERT_FALSE(fr::decode_header(b, &d).has_value());
  EXPECT_EQ(d.type, h.type);
  EXPECT_EQ(d.payload_len, h.payload_len);
  EXPECT_EQ(d.payload_crc, h.payload_crc);
  EXPECT_EQ(d.seq, h.seq);
  EXPECT_EQ(d.tag, h.tag);
  EXPECT_EQ(d.msg_id, h.msg_id);
  EXPECT_EQ(d.msg_len, h.msg_len);
  EXPECT_EQ(d.offset, h.offset);
  for (size_t i = 0; i < fr::kHeaderBytes; ++i) {
    uint8_t c[fr::kHeaderBytes];
    std::memcpy(c, b, sizeof(c));
    c[i] ^= 0x10;
    EXPECT_TRUE(fr::decode_header(c, &d).has_value()) << "flipped byte " << i << " accepted";
  }
}

TEST(SocketFrame, ImpossibleLengthsRejectedEvenWithValidCrc) {
  fr::FrameHeader h;
  uint8_t b[fr::kHeaderBytes];
  fr::FrameHeader d;
  h.type = fr::FrameType::kData;
  h.payload_len = fr::kMaxPayload + 1;
  fr::encode_header(h, b);
  EXPECT_TRUE(fr::decode_header(b, &d).has_value());
  h.type = fr::FrameType::kHello;
  h.payload_len = fr::kMaxControlPayload + 1;
  fr::encode_header(h, b);
  EXPECT_TRUE(fr::decode_header(b, &d).has_value());
  h.type = fr::FrameType::kHeartbeat;
  h.payload_len = 1;
  fr::encode_header(h, b);
  EXPECT_TRUE(fr::decode_header(b, &d).has_value());
  h.payload_len = 0;
  fr::encode_header(h, b);
  EXPECT_FALSE(fr::decode_header(b, &d).has_value());
}

TEST(SocketFrame, HandshakePayloadsRoundTrip) {
  fr::Hello h{3, 9, 16, 2, fr::kHelloFlagAuth, {}};
  h.nonce[0] = 1;
  h.nonce[31] = 2;
  auto e = fr::encode_hello(h);
  EXPECT_EQ(e.size(), 52u);
  auto d = fr::decode_hello(e);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->from_rank, 3u);
  EXPECT_EQ(d->to_rank, 9u);
  EXPECT_EQ(d->world, 16u);
  EXPECT_EQ(d->stream, 2u);
  EXPECT_EQ(d->flags, fr::kHelloFlagAuth);
  EXPECT_EQ(d->nonce, h.nonce);
  e.pop_back();
  EXPECT_FALSE(fr::decode_hello(e).has_value());
  fr::Challenge c{4, 5, {}, {}};
  c.mac[7] = 9;
  auto ce = fr::encode_challenge(c);
  EXPECT_EQ(ce.size(), 72u);
  auto cd = fr::decode_challenge(ce);
  ASSERT_TRUE(cd.has_value());
  EXPECT_EQ(cd->mac, c.mac);
}

TEST(SocketAuth, HmacSha256Rfc4231Case2) {
  const std::string data = "what do ya want for nothing?";
  auto m = au::hmac_sha256("Jefe", std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  const uint8_t want[32] = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
                            0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
                            0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
  EXPECT_EQ(0, std::memcmp(m.data(), want, 32));
}

TEST(SocketAuth, HandshakeMacBindsRoleRanksWorldStreamAndBothNonces) {
  fr::Nonce nc{}, na{};
  nc[0] = 1;
  na[0] = 2;
  const auto base = au::handshake_mac("s", au::Role::kConnector, 1, 2, 4, 0, nc, na);
  EXPECT_TRUE(au::mac_equal(base, au::handshake_mac("s", au::Role::kConnector, 1, 2, 4, 0, nc, na)));
  fr::Nonce nc2 = nc, na2 = na;
  nc2[31] ^= 1;
  na2[31] ^= 1;
  EXPECT_FALSE(au::mac_equal(base, au::handshake_mac("t", au::Role::kConnector, 1, 2, 4, 0, nc, na)));
  EXPECT_FALSE(au::mac_equal(base, au::handshake_mac("s", au::Role::kAcceptor, 1, 2, 4, 0, nc, na)));
  EXPECT_FALSE(au::mac_equal(base, au::handshake_mac("s", au::Role::kConnector, 2, 1, 4, 0, nc, na)));
  EXPECT_FALSE(au::mac_equal(base, au::handshake_mac("s", au::Role::kConnector, 1, 3, 4, 0, nc, na)));
  EXPECT_FALSE(au::mac_equal(base, au::handshake_mac("s", au::Role::kConnector, 1, 2, 5, 0, nc, na)));
  EXPECT_FALSE(au::mac_equal(base, au::handshake_mac("s", au::Role::kConnector, 1, 2, 4, 1, nc, na)));
  EXPECT_FALSE(au::mac_equal(base, au::handshake_mac("s", au::Role::kConnector, 1, 2, 4, 0, nc2, na)));
  EXPECT_FALSE(au::mac_equal(base, au::handshake_mac("s", au::Role::kConnector, 1, 2, 4, 0, nc, na2)));
  EXPECT_NE(au::fresh_nonce(), au::fresh_nonce());
}

TEST(SocketDeriveStreams, CeilBdpOverSockbufClamped) {
  constexpr size_t MiB = 1 << 20;
  // 1 Gbit/s x 30 ms = 3.75 MB.
  EXPECT_EQ(SocketTransport::derive_streams(1e9, 0.030, 4 * MiB), 1);
  EXPECT_EQ(SocketTransport::derive_streams(1e9, 0.030, 1 * MiB), 4);   // 3.58 -> 4
  EXPECT_EQ(SocketTransport::derive_streams(1e9, 0.030, 3750000), 1);   // exactly one buffer
  EXPECT_EQ(SocketTransport::derive_streams(1e9, 0.030, 3749999), 2);   // one byte short
  EXPECT_EQ(SocketTransport::derive_streams(8e6, 1.0, 500000), 2);      // 1e6 B / 5e5 B, exact
  EXPECT_EQ(SocketTransport::derive_streams(10e9, 0.150, 4 * MiB), 16); // 187.5 MB: 45 -> clamp 16
  EXPECT_EQ(SocketTransport::derive_streams(10e9, 0.030, 4 * MiB), 9);  // 37.5 MB / 4 MiB = 8.94
  EXPECT_EQ(SocketTransport::derive_streams(0, 0.030, 4 * MiB), 1);     // unknown rate
  EXPECT_EQ(SocketTransport::derive_streams(1e9, 0, 4 * MiB), 1);
  EXPECT_EQ(SocketTransport::derive_streams(1e9, 0.030, 0), 1);
  EXPECT_EQ(SocketTransport::derive_streams(1e3, 1e-3, 4 * MiB), 1);    // tiny BDP
}
