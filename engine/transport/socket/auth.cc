#include "engine/transport/socket/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <vector>

#include "engine/transport/transport.h"

namespace geotb::engine::sockauth {
namespace {
constexpr char kLabel[] = "geotb-sock-v1";

void put32(std::vector<uint8_t>& v, uint32_t x) {
  for (int i = 0; i < 4; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}
}  // namespace

sockframe::Nonce fresh_nonce() {
  sockframe::Nonce n;
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1)
    throw TransportError("socket transport: RAND_bytes failed to produce a handshake nonce");
  return n;
}

sockframe::Mac hmac_sha256(std::string_view key, std::span<const uint8_t> data) {
  sockframe::Mac out{};
  unsigned int len = 0;
  // An empty key is legal for HMAC, but OpenSSL wants a non-null pointer.
  static const unsigned char kEmpty = 0;
  const void* k = key.empty() ? static_cast<const void*>(&kEmpty) : static_cast<const void*>(key.data());
  if (HMAC(EVP_sha256(), k, static_cast<int>(key.size()), data.data(), data.size(), out.data(), &len) ==
          nullptr ||
      len != out.size())
    throw TransportError("socket transport: HMAC-SHA256 failed");
  return out;
}

sockframe::Mac handshake_mac(std::string_view secret, Role role, uint32_t connector_rank,
                             uint32_t acceptor_rank, uint32_t world, uint32_t stream,
                             const sockframe::Nonce& nonce_c, const sockframe::Nonce& nonce_a) {
  std::vector<uint8_t> t(kLabel, kLabel + sizeof(kLabel) - 1);
  t.push_back(static_cast<uint8_t>(role));
  put32(t, connector_rank);
  put32(t, acceptor_rank);
  put32(t, world);
  put32(t, stream);
  t.insert(t.end(), nonce_c.begin(), nonce_c.end());
  t.insert(t.end(), nonce_a.begin(), nonce_a.end());
  return hmac_sha256(secret, t);
}

bool mac_equal(const sockframe::Mac& a, const sockframe::Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace geotb::engine::sockauth
