// Shared-secret authentication of socket transport connections: HMAC-SHA256 (OpenSSL libcrypto)
// over a transcript that binds both ranks, the world size, the stream index and both fresh nonces.
//
// Exchange (connector C opens the TCP connection to acceptor A; see socket_transport.h):
//   C -> A  HELLO      {C, A, world, stream, nonce_c}
//   A -> C  CHALLENGE  {A, C, nonce_a, mac_A}   mac_A = handshake_mac(kAcceptor, ...)
//   C -> A  RESPONSE   {mac_C}                  mac_C = handshake_mac(kConnector, ...)
//   A -> C  ACCEPT
// Each side proves the secret over the other side's fresh nonce (no replay); the role label
// differs, so a proof can neither be reflected back nor reused in the other direction.
// It authenticates who opened the connection, not each later frame (no per-frame MAC, no
// encryption): an on-path attacker who can rewrite TCP segments is out of scope.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/transport/socket/frame.h"

namespace geotb::engine::sockauth {

enum class Role : uint8_t { kAcceptor = 'A', kConnector = 'C' };

/// 32 bytes from OpenSSL's CSPRNG (RAND_bytes). Throws TransportError if it fails.
sockframe::Nonce fresh_nonce();

/// HMAC-SHA256(key, data).
sockframe::Mac hmac_sha256(std::string_view key, std::span<const uint8_t> data);

/// HMAC-SHA256(secret, "geotb-sock-v1" || role || connector u32 || acceptor u32 || world u32 ||
///             stream u32 || nonce_c || nonce_a), integers little-endian.
sockframe::Mac handshake_mac(std::string_view secret, Role role, uint32_t connector_rank,
                             uint32_t acceptor_rank, uint32_t world, uint32_t stream,
                             const sockframe::Nonce& nonce_c, const sockframe::Nonce& nonce_a);

/// Constant-time comparison (CRYPTO_memcmp).
bool mac_equal(const sockframe::Mac& a, const sockframe::Mac& b);

}  // namespace geotb::engine::sockauth
