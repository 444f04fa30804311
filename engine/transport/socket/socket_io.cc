// SocketTransport, framing: frame headers and payloads read into messages and delivered in
// order, and messages written out across a peer's streams (socket_impl.h).
#include "engine/transport/socket/socket_impl.h"

namespace geotb::engine {

// Called with a complete header in c->h. Sets where the payload goes. False: connection gone.
bool SocketTransport::Impl::on_header(Conn* c) {
  const fr::FrameHeader& h = c->h;
  if (h.seq != c->recv_seq) {
    frame_error(c, "sequence number " + std::to_string(h.seq) + ", expected " + std::to_string(c->recv_seq));
    return false;
  }
  c->recv_seq++;
  c->pdst = nullptr;
  c->premain = h.payload_len;
  if (c->st == St::kClosing) return true;  // draining: payloads are read and discarded
  if (h.type == fr::FrameType::kData) {
    if (c->st != St::kOpen) {
      handshake_violation(c, h);
      return false;
    }
    Peer& p = peers[c->peer];
    if (h.msg_id < p.next_deliver || h.msg_id - p.next_deliver >= kMaxMsgsAhead) {
      frame_error(c, "message id " + std::to_string(h.msg_id) + " outside [" + std::to_string(p.next_deliver) +
                         ", +" + std::to_string(kMaxMsgsAhead) + ")");
      return false;
    }
    if (h.msg_len > cfg.max_message_bytes || h.offset > h.msg_len || h.payload_len > h.msg_len - h.offset ||
        (h.payload_len == 0 && h.msg_len != 0)) {
      frame_error(c, "chunk [" + std::to_string(h.offset) + ", +" + std::to_string(h.payload_len) +
                         ") of a " + std::to_string(h.msg_len) + "-byte message");
      return false;
    }
    auto it = p.partial.find(h.msg_id);
    if (it == p.partial.end()) {
      Partial np;
      np.tag = h.tag;
      np.len = h.msg_len;
      try {
        np.buf.resize(h.msg_len);
      } catch (const std::bad_alloc&) {
        const int r = c->peer;
        close_conn(c);
        fail_peer(r, Fail::kFrame, "cannot allocate a " + std::to_string(h.msg_len) + "-byte message from " + who(r));
        return false;
      }
      it = p.partial.emplace(h.msg_id, std::move(np)).first;
    } else if (it->second.tag != h.tag || it->second.len != h.msg_len ||
               it->second.got + h.payload_len > it->second.len) {
      frame_error(c, "chunk of message " + std::to_string(h.msg_id) + " disagrees with earlier chunks");
      return false;
    }
    c->pdst = it->second.buf.data() + h.offset;
    return true;
  }
  c->ctrl.resize(h.payload_len);
  c->pdst = c->ctrl.data();
  return true;
}

// Called once a frame's payload is complete. False: connection gone.
bool SocketTransport::Impl::on_frame(Conn* c) {
  const fr::FrameHeader h = c->h;
  st.frames_received++;
  st.bytes_received += fr::kHeaderBytes + h.payload_len;
  if (c->st == St::kClosing) return true;
  if (h.type == fr::FrameType::kData) {
    Peer& p = peers[c->peer];
    auto it = p.partial.find(h.msg_id);
    const uint8_t* data = it->second.buf.data() + h.offset;
    if (h.payload_len > 0 ? fr::crc32c(data, h.payload_len) != h.payload_crc : h.payload_crc != 0) {
      p.partial.erase(it);
      frame_error(c, "bad payload checksum (message " + std::to_string(h.msg_id) + ", offset " +
                         std::to_string(h.offset) + ")");
      return false;
    }
    st.payload_received += h.payload_len;
    it->second.got += h.payload_len;
    if (it->second.got == it->second.len) deliver_ready(c->peer);
    return true;
  }
  if (c->h.payload_len > 0 && fr::crc32c(c->ctrl.data(), c->ctrl.size()) != h.payload_crc) {
    frame_error(c, std::string("bad payload checksum on ") + fr::type_name(h.type));
    return false;
  }
  switch (h.type) {
    case fr::FrameType::kHeartbeat:
      if (c->st != St::kOpen) {
        handshake_violation(c, h);
        return false;
      }
      return true;
    case fr::FrameType::kGoodbye:
      if (c->st != St::kOpen) {
        handshake_violation(c, h);
        return false;
      }
      c->goodbye_rx = true;
      peers[c->peer].goodbye_seen = true;
      return true;
    default:
      if (c->st == St::kOpen) {  // a handshake frame after the handshake
        frame_error(c, std::string("unexpected ") + fr::type_name(h.type) + " on an open connection");
        return false;
      }
      on_control(c, h, c->ctrl);
      return !c->dead && c->st != St::kClosing;
  }
}

void SocketTransport::Impl::deliver_ready(int r) {
  Peer& p = peers[r];
  std::vector<std::vector<uint8_t>> notices;
  {
    std::lock_guard lk(mu);
    bool any = false;
    while (!p.partial.empty()) {
      auto it = p.partial.begin();
      if (it->first != p.next_deliver || it->second.got != it->second.len) break;
      if (cfg.notice_tag != 0 && it->second.tag == cfg.notice_tag && cfg.on_notice) {
        notices.push_back(std::move(it->second.buf));
      } else if (it->second.tag == reserved_tags::kWitness) {
        witness_message(r, it->second.buf);
      } else if (it->second.tag == kTakeoverTag) {
        taken_over(decode_takeover_notice(it->second.buf).value_or(-1), r);
      } else
        p.mailbox[it->second.tag].push_back(std::move(it->second.buf));
      p.partial.erase(it);
      p.next_deliver++;
      st.messages_received++;
      any = true;
    }
    if (any) cv.notify_all();
  }
  for (auto& n : notices) cfg.on_notice(r, std::move(n));
}

void SocketTransport::Impl::on_readable(Conn* c) {
  if (stale(c)) {  // an old incarnation's connection, the peer revived since
    close_conn(c);
    return;
  }
  size_t budget = kReadBudget;
  bool heard = false;
  while (!c->dead && budget > 0) {
    if (!c->in_frame) {
      if (c->rend - c->rpos >= fr::kHeaderBytes) {
        auto err = fr::decode_header(c->rbuf.data() + c->rpos, &c->h);
        c->rpos += fr::kHeaderBytes;
        if (err) {
          frame_error(c, *err);
          break;
        }
        c->in_frame = true;
        if (!on_header(c)) break;
        continue;
      }
    } else if (c->premain > 0 && c->rend > c->rpos) {
      size_t take = std::min(c->premain, c->rend - c->rpos);
      if (c->st != St::kClosing) {
        std::memcpy(c->pdst, c->rbuf.data() + c->rpos, take);
        c->pdst += take;
      }
      c->rpos += take;
      c->premain -= take;
      continue;
    } else if (c->premain == 0) {
      c->in_frame = false;
      if (!on_frame(c)) break;
      continue;
    }
    // Need more bytes from the socket.
    ssize_t n;
    if (c->in_frame && c->premain >= kDirectReadMin && c->st != St::kClosing) {
      n = ::recv(c->fd, c->pdst, std::min(c->premain, budget), MSG_DONTWAIT);
      if (n > 0) {
        c->pdst += n;
        c->premain -= static_cast<size_t>(n);
      }
    } else {
      if (c->rpos == c->rend) c->rpos = c->rend = 0;
      else if (c->rbuf.size() - c->rend < fr::kHeaderBytes) {
        std::memmove(c->rbuf.data(), c->rbuf.data() + c->rpos, c->rend - c->rpos);
        c->rend -= c->rpos;
        c->rpos = 0;
      }
      n = ::recv(c->fd, c->rbuf.data() + c->rend, c->rbuf.size() - c->rend, MSG_DONTWAIT);
      if (n > 0) c->rend += static_cast<size_t>(n);
    }
    if (n > 0) {
      budget -= std::min(budget, static_cast<size_t>(n));
      heard = true;
      continue;
    }
    if (n == 0) {
      if (c->st == St::kClosing) close_conn(c);
      else conn_broken(c, c->goodbye_rx ? "closed after GOODBYE" : "connection closed by the peer without GOODBYE");
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    if (c->st == St::kClosing) close_conn(c);
    else conn_broken(c, "read: " + errstr(errno));
    break;
  }
  if (heard && c->peer >= 0 && !(cfg.deaf_to && cfg.deaf_to(c->peer))) {
    Peer& p = peers[c->peer];
    p.last_heard = Clock::now();
    p.suspected_at.reset();
  }
}

// Cuts queued messages of peer r into frames for its open outgoing streams, keeping each
// stream's user-space queue under low_water; writes them at once where the socket takes them.
void SocketTransport::Impl::dispatch(int r) {
  Peer& p = peers[r];
  if (p.failed_io || p.out.empty()) return;
  for (;;) {
    Conn* best = nullptr;
    const size_t n = p.out.size();
    for (size_t k = 0; k < n; ++k) {
      Conn* c = find(p.out[(rr + k) % n]);
      if (c && c->st == St::kOpen && c->outq_bytes < low_water && (!best || c->outq_bytes < best->outq_bytes))
        best = c;
    }
    if (!best) return;
    OutFrame f;
    fr::FrameHeader h;
    {
      std::lock_guard lk(mu);
      if (p.sendq.empty() || p.fail != Fail::kNone) return;
      OutMsg& m = p.sendq.front();
      const size_t size = m.data->size();
      const size_t off = m.next_off;
      const size_t len = std::min(cfg.chunk_bytes, size - off);
      m.next_off += len;
      f.owner = m.data;
      f.owner_off = off;
      f.len = len;
      f.data = true;
      f.last_of_msg = off + len == size;
      f.flush_units = len + (f.last_of_msg ? 1 : 0);
      h.type = fr::FrameType::kData;
      h.tag = m.tag;
      h.msg_id = m.id;
      h.msg_len = size;
      h.offset = off;
      h.payload_len = static_cast<uint32_t>(len);
      if (m.next_off >= size) p.sendq.pop_front();
    }
    h.seq = best->send_seq++;
    h.payload_crc = f.len > 0 ? fr::crc32c(f.payload(), f.len) : 0;
    fr::encode_header(h, f.hdr.data());
    best->outq_bytes += fr::kHeaderBytes + f.len;
    best->outq.push_back(std::move(f));
    rr = (rr + 1) % n;
    if (flush_conn(best)) update_mask(best);
  }
}

void SocketTransport::Impl::on_writable(Conn* c) {
  if (!flush_conn(c)) return;
  if (c->outgoing && c->st == St::kOpen) dispatch(c->peer);
  update_mask(c);
}

}  // namespace geotb::engine
