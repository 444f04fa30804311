// SocketTransport, the handshake and the other control frames: HELLO, the challenge-response
// with the shared secret, adopting a connection as a peer's stream, GOODBYE (socket_impl.h).
#include "engine/transport/socket/socket_impl.h"

namespace geotb::engine {

void SocketTransport::Impl::on_control(Conn* c, const fr::FrameHeader& h, std::span<const uint8_t> pl) {
  using fr::FrameType;
  const bool auth = !cfg.secret.empty();
  if (h.type == FrameType::kReject) {
    std::string reason(pl.begin(), pl.end());
    if (c->peer < 0) {  // an anonymous connection has nothing to refuse
      close_conn(c);
      return;
    }
    st.auth_failures++;
    int r = c->peer;
    close_conn(c);
    fail_peer(r, Fail::kAuth, who(r) + " refused the handshake: " + reason);
    return;
  }
  switch (c->st) {
    case St::kAwaitHello: {
      if (h.type != FrameType::kHello) return handshake_violation(c, h);
      auto hello = fr::decode_hello(pl);
      if (!hello) return handshake_violation(c, h);
      const int from = static_cast<int>(hello->from_rank);
      const bool from_ok = hello->from_rank < static_cast<uint32_t>(cfg.world) && from != cfg.rank;
      std::string bad;
      if (!from_ok) bad = "unexpected rank " + std::to_string(hello->from_rank);
      else if (hello->to_rank != static_cast<uint32_t>(cfg.rank))
        bad = "connection for rank " + std::to_string(hello->to_rank) + " reached rank " + std::to_string(cfg.rank);
      else if (hello->world != static_cast<uint32_t>(cfg.world))
        bad = "world size " + std::to_string(hello->world) + " != " + std::to_string(cfg.world);
      else if (((hello->flags & fr::kHelloFlagAuth) != 0) != auth)
        bad = auth ? "rank " + std::to_string(from) + " has no secret but rank " + std::to_string(cfg.rank) +
                         " requires one"
                   : "rank " + std::to_string(from) + " has a secret but rank " + std::to_string(cfg.rank) +
                         " has none";
      else if (hello->stream >= static_cast<uint32_t>(kMaxStreams))
        bad = "stream index " + std::to_string(hello->stream);
      if (from_ok) {
        std::lock_guard lk(mu);
        if (bad.empty() && peers[from].fail != Fail::kNone) {
          if (!peers[from].restartable)
            bad = "rank " + std::to_string(from) + " already failed here";
          else if (!auth)
            reset_locked(peers[from]);  // its new incarnation (expect_restarts): its address comes with revive()
          // with a secret: reset once the connector has proven it (kChallengeSent)
        }
      }
      if (!bad.empty()) {
        // Refused and counted, and nothing else: anyone who can reach the port can claim any
        // rank, so a refused claim must not fail that rank (the run goes on). A real peer
        // misconfigured (another secret, world size) learns it on its own connection to this
        // rank, which this rank's transport refuses in turn: the connector's side fails.
        reject(c, bad);
        return;
      }
      c->nonce_theirs = hello->nonce;
      c->stream = hello->stream;
      if (!auth) {
        adopt(c, from);
        push_ctrl(c, FrameType::kAccept, {});
        conn_opened(c);
      } else {
        fr::Challenge ch;
        c->claimed = from;  // adopted (the peer's state touched) only once it proves the secret
        ch.from_rank = cfg.rank;
        ch.to_rank = from;
        c->nonce_mine = sockauth::fresh_nonce();
        ch.nonce = c->nonce_mine;
        ch.mac = sockauth::handshake_mac(cfg.secret, sockauth::Role::kAcceptor, from, cfg.rank, cfg.world,
                                         c->stream, c->nonce_theirs, c->nonce_mine);
        push_ctrl(c, FrameType::kChallenge, fr::encode_challenge(ch));
        c->st = St::kChallengeSent;
      }
      if (flush_conn(c)) update_mask(c);
      return;
    }
    case St::kChallengeSent: {
      if (h.type != FrameType::kResponse) return handshake_violation(c, h);
      auto mac = fr::decode_response(pl);
      const auto want = sockauth::handshake_mac(cfg.secret, sockauth::Role::kConnector, c->claimed, cfg.rank,
                                                cfg.world, c->stream, c->nonce_theirs, c->nonce_mine);
      if (!mac || !sockauth::mac_equal(*mac, want)) {
        reject(c, "wrong secret (bad proof from the connector)");  // counted; the claimed rank is not failed
        return;
      }
      {
        // The claim is proven: a restartable peer's new incarnation replaces its failed one now.
        std::lock_guard lk(mu);
        Peer& p = peers[c->claimed];
        if (p.fail != Fail::kNone && p.restartable) reset_locked(p);
        else if (p.fail != Fail::kNone) {
          reject(c, "rank " + std::to_string(c->claimed) + " already failed here");
          return;
        }
      }
      adopt(c, c->claimed);
      push_ctrl(c, FrameType::kAccept, {});
      conn_opened(c);
      if (flush_conn(c)) update_mask(c);
      return;
    }
    case St::kHelloSent: {
      const int r = c->peer;
      if (h.type == FrameType::kAccept && !auth) {
        conn_opened(c);
        dispatch(r);
        return;
      }
      if (h.type != FrameType::kChallenge || !auth) return handshake_violation(c, h);
      auto ch = fr::decode_challenge(pl);
      if (!ch) return handshake_violation(c, h);
      const auto want = sockauth::handshake_mac(cfg.secret, sockauth::Role::kAcceptor, cfg.rank, r, cfg.world,
                                                c->stream, c->nonce_mine, ch->nonce);
      if (ch->from_rank != static_cast<uint32_t>(r) || ch->to_rank != static_cast<uint32_t>(cfg.rank) ||
          !sockauth::mac_equal(ch->mac, want)) {
        reject(c, "wrong secret (bad proof from the acceptor)");
        fail_peer(r, Fail::kAuth, who(r) + " at " + peers[r].addr_text + " failed to prove the shared secret");
        return;
      }
      c->nonce_theirs = ch->nonce;
      const auto mine = sockauth::handshake_mac(cfg.secret, sockauth::Role::kConnector, cfg.rank, r, cfg.world,
                                                c->stream, c->nonce_mine, c->nonce_theirs);
      push_ctrl(c, FrameType::kResponse, std::vector<uint8_t>(mine.begin(), mine.end()));
      c->st = St::kResponseSent;
      if (flush_conn(c)) update_mask(c);
      return;
    }
    case St::kResponseSent: {
      if (h.type != FrameType::kAccept) return handshake_violation(c, h);
      int r = c->peer;
      conn_opened(c);
      dispatch(r);
      return;
    }
    default: return handshake_violation(c, h);
  }
}

// An incoming connection becomes rank `from`'s (after its HELLO, or its proof with a secret).
void SocketTransport::Impl::adopt(Conn* c, int from) {
  sync_io(from);  // c->peer is still -1: a new incarnation's cleanup does not close c itself
  c->peer = from;
  c->incarnation = peers[from].io_incarnation;
}

// A frame that does not belong to this point of the handshake (e.g. DATA before ACCEPT).
void SocketTransport::Impl::handshake_violation(Conn* c, const fr::FrameHeader& h) {
  std::string why = std::string("unexpected ") + fr::type_name(h.type) + " frame during the handshake";
  const int r = c->peer;
  reject(c, why);
  // An incoming connection proves nothing about the rank it claims: refused and counted only.
  if (r >= 0 && c->outgoing) fail_peer(r, Fail::kAuth, "handshake with " + who(r) + " failed: " + why);
}

}  // namespace geotb::engine
