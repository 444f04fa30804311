#include "emulator/inproc/message_link.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace geotb::emu {

MessageVerdict MessageLink::send_windowless(Nanos now, uint64_t payload_bytes) {
  MessageVerdict mv;
  const uint64_t nseg = std::max<uint64_t>(1, (payload_bytes + seg_.mss_bytes - 1) / seg_.mss_bytes);
  mv.segments = nseg;
  const uint32_t overhead = link_.config().overhead_bytes;

  struct Retry { Nanos at; uint32_t bytes; uint32_t attempts; };
  std::vector<Retry> retries;
  Nanos last_release = now;

  // No ACK comes back (segment offered while the link is down, or cut in flight): the sender's
  // timer fires min_rto after the transmission, doubling per attempt (RFC 6298).
  auto retry_after_timeout = [&](Nanos t, uint32_t frame, uint32_t attempts) {
    const Nanos rto = seg_.min_rto * (1LL << std::min<uint32_t>(attempts - 1, 20));
    retries.push_back({t + rto, frame, attempts + 1});
  };
  auto attempt = [&](Nanos t, uint32_t frame, uint32_t attempts) {
    const Verdict v = link_.offer(t, frame);
    ++mv.transmissions;
    mv.wire_bytes += frame + overhead;
    switch (v.fate) {
      case Fate::kDelivered:
        if (const std::optional<Nanos> cut = link_.next_cut(); cut && LinkModel::lost_to_cut(v, *cut)) {
          // Still on the fibre when it is cut: lost.
          link_.count_lost_in_flight(1, frame);
          retry_after_timeout(t, frame, attempts);
          return;
        }
        last_release = std::max(last_release, v.release);
        return;
      case Fate::kDropLoss:  // detected by duplicate ACKs one RTT after the segment left
        retries.push_back({v.depart + 2 * link_.config().delay, frame, attempts + 1});
        return;
      case Fate::kDropQueueBytes:
      case Fate::kDropQueuePackets:
        retries.push_back({std::max(t, link_.busy_until()) + 2 * link_.config().delay, frame, attempts + 1});
        return;
      case Fate::kDropLinkDown:
        retry_after_timeout(t, frame, attempts);
        return;
    }
  };

  uint64_t left = payload_bytes;
  for (uint64_t i = 0; i < nseg; ++i) {
    const uint32_t pay = static_cast<uint32_t>(std::min<uint64_t>(left, seg_.mss_bytes));
    left -= pay;
    attempt(now, pay + seg_.header_bytes, 1);
  }
  // Retransmission rounds, in time order so the link's clock only moves forward.
  while (!retries.empty()) {
    std::vector<Retry> round;
    round.swap(retries);
    std::stable_sort(round.begin(), round.end(), [](const Retry& a, const Retry& b) { return a.at < b.at; });
    for (const Retry& r : round) {
      if (r.attempts > seg_.max_attempts) {
        mv.delivered = false;
        return mv;
      }
      attempt(r.at, r.bytes, r.attempts);
    }
  }
  mv.delivered = true;
  mv.deliver_at = std::max(last_release, last_delivery_);
  last_delivery_ = mv.deliver_at;
  return mv;
}


// ---------------------------------------------------------------------------------------------
// TCP mode

MessageLink::MessageLink(LinkModel& link, SegmentConfig seg, const LinkModel* reverse)
    : link_(link), reverse_(reverse), seg_(seg) {
  if (seg_.mss_bytes == 0) throw std::invalid_argument("segments: mss_bytes must be > 0");
  if (seg_.initial_cwnd == 0) throw std::invalid_argument("segments: initial_cwnd must be > 0");
  if (seg_.dupthresh == 0) throw std::invalid_argument("segments: dupthresh must be > 0");
  if (seg_.max_attempts == 0) throw std::invalid_argument("segments: max_attempts must be > 0");
  reset();
}

Nanos MessageLink::ack_delay() const { return (reverse_ ? reverse_ : &link_)->config().delay; }

void MessageLink::reset() {
  cc_ = make_congestion_control(seg_.cc);
  w_ = TcpWindow{};
  w_.cwnd = seg_.initial_cwnd;
  w_.ssthresh = seg_.initial_ssthresh;
  state_ = State::kOpen;
  recover_seg_ = 0;
  // The handshake's round trip is the first RTT sample (Linux tcp_synack_rtt_meas): srtt = m,
  // rttvar = m / 2, so RTO = m + max(2 m, min_rto).
  srtt_ = rttvar_ = min_rtt_ = Nanos{0};
  rtt_sample(link_.config().delay + ack_delay());
  out_.clear();
  lost_in_flight_.clear();
  unacked_segs_.clear();
  unsent_.clear();
  rtx_.clear();
  events_ = {};
  sent_any_ = false;
  clock_ = Nanos{0};
  is_cwnd_limited_ = false;
  max_packets_out_ = 0;
  cwnd_usage_tx_ = next_tx_;
  failed_ = false;
  // The receiver (Linux tcp_init_buffer_space, tcp_select_initial_window): sk_rcvbuf =
  // tcp_rmem[1]; window_clamp = tcp_win_from_space() of it (scaling_ratio 128/256); the SYN's
  // window is that rounded down to whole MSS, at most 65535 (not yet scaled); rcv_ssthresh = it;
  // rcvq_space.space = min(rcv_wnd, TCP_INIT_CWND * advmss).
  rcv_ = RcvState{};
  rcv_.rcv_nxt = rcv_.high_seg = next_seg_;
  rcv_.space_seg = next_seg_;
  rcv_.rcvbuf = seg_.rmem_initial_bytes;
  rcv_.window_clamp = rcv_.rcvbuf / 2;
  uint64_t syn_wnd = rcv_.window_clamp;
  if (syn_wnd > seg_.mss_bytes) syn_wnd -= syn_wnd % seg_.mss_bytes;
  syn_wnd = std::min<uint64_t>(syn_wnd, 65535);
  rcv_.rcv_ssthresh = syn_wnd;
  rcv_.space = std::min<uint64_t>(syn_wnd, uint64_t{10} * seg_.mss_bytes);
  snd_wnd_end_ = next_seg_ + syn_wnd / seg_.mss_bytes;
}

void MessageLink::receive(Nanos at, uint64_t seg) {
  // A data segment reaches the receiver at `at`.
  // tcp_grow_window(): rcv_ssthresh += 2 * advmss per data segment, up to window_clamp.
  if (rcv_.rcv_ssthresh < rcv_.window_clamp)
    rcv_.rcv_ssthresh = std::min<uint64_t>(rcv_.rcv_ssthresh + 2 * uint64_t{seg_.mss_bytes}, rcv_.window_clamp);
  rcv_.high_seg = std::max(rcv_.high_seg, seg + 1);
  const uint64_t nxt = unacked_segs_.empty() ? next_seg_ : *unacked_segs_.begin();
  if (nxt > rcv_.rcv_nxt) {
    rcv_.rcv_nxt = nxt;
    // The application reads what arrived in order: tcp_rcv_space_adjust() (tcp_recvmsg). Once per
    // receiver RTT (tp->rcv_rtt_est, here the sender's srtt), the bytes read during it.
    if (!rcv_.measured || at - rcv_.space_time >= srtt_) {
      const uint64_t copied = (rcv_.rcv_nxt - rcv_.space_seg) * seg_.mss_bytes;
      if (rcv_.measured && copied > rcv_.space) {
        rcv_.space = copied;
        // tcp_rcvbuf_grow(): "slow start: allow the sender to double its rate" (2 * space), plus
        // the out-of-order queue's span; sk_rcvbuf = tcp_space_from_win() of it, capped by
        // tcp_rmem[2]; window_clamp = tcp_win_from_space(sk_rcvbuf).
        const uint64_t rcvwin = 2 * rcv_.space + (rcv_.high_seg - rcv_.rcv_nxt) * seg_.mss_bytes;
        const uint64_t rcvbuf = std::min(2 * rcvwin, seg_.rmem_max_bytes);
        if (rcvbuf > rcv_.rcvbuf) {
          rcv_.rcvbuf = rcvbuf;
          rcv_.window_clamp = rcvbuf / 2;
          ++stats_.rcvbuf_grows;
        }
      }
      rcv_.space_seg = rcv_.rcv_nxt;
      rcv_.space_time = at;
      rcv_.measured = true;
    }
  }
  // The ACK carries rcv_nxt and the window (__tcp_select_window: rcv_ssthresh, the receive queue
  // being empty); the right edge never moves left (tcp_select_window does not shrink it).
  snd_wnd_end_ = std::max(snd_wnd_end_, rcv_.rcv_nxt + rcv_.rcv_ssthresh / seg_.mss_bytes);
}

void MessageLink::rtt_sample(Nanos m) {
  if (m.count() <= 0) m = Nanos{1};
  if (srtt_.count() == 0) {
    srtt_ = m;
    rttvar_ = m / 2;
    min_rtt_ = m;
  } else {
    const Nanos err = m > srtt_ ? m - srtt_ : srtt_ - m;
    rttvar_ = (3 * rttvar_ + err) / 4;  // RFC 6298: beta = 1/4
    srtt_ = (7 * srtt_ + m) / 8;        // alpha = 1/8
    min_rtt_ = std::min(min_rtt_, m);
  }
  rto_ = std::min(srtt_ + std::max(4 * rttvar_, seg_.min_rto), seg_.max_rto);
}

Nanos MessageLink::backed_off_rto(uint32_t attempt) const {
  Nanos r = rto_;
  for (uint32_t a = 1; a < attempt && r < seg_.max_rto; ++a) r *= 2;
  return std::min(r, seg_.max_rto);
}

bool MessageLink::cwnd_limited() const {
  // Linux tcp_is_cwnd_limited(): in slow start, grow while cwnd < 2 * the most segments in flight
  // during the last window; else only if the sender was held back by cwnd.
  if (is_cwnd_limited_) return true;
  if (w_.in_slow_start()) return w_.cwnd < 2 * max_packets_out_;
  return false;
}

void MessageLink::restart_after_idle(Nanos idle) {
  // Linux tcp_cwnd_restart(): ssthresh keeps 3/4 of the window, cwnd halves per RTO of idle time
  // after the first, not below min(initial window, cwnd).
  if (state_ == State::kOpen) w_.ssthresh = std::max(w_.ssthresh, (w_.cwnd >> 1) + (w_.cwnd >> 2));
  const uint32_t restart = std::min(seg_.initial_cwnd, w_.cwnd);
  uint32_t cwnd = w_.cwnd;
  Nanos delta = idle;
  while ((delta -= rto_).count() > 0 && cwnd > restart) cwnd >>= 1;
  cwnd = std::max(cwnd, restart);
  if (cwnd < w_.cwnd) ++stats_.restarts;
  w_.cwnd = cwnd;
}

void MessageLink::transmit(Nanos t, uint64_t seg, uint32_t frame, uint32_t attempt) {
  if (out_.empty() && sent_any_) cc_->on_tx_start(t, t - last_sent_);  // Linux CA_EVENT_TX_START
  const Verdict v = link_.offer(t, frame);
  if (mv_) {
    ++mv_->transmissions;
    mv_->wire_bytes += frame + link_.config().overhead_bytes;
  }
  const uint64_t id = next_tx_++;
  Tx x;
  x.seg = seg;
  x.frame = frame;
  x.sent = t;
  x.attempt = attempt;
  last_sent_ = t;
  sent_any_ = true;
  bool lost = v.fate != Fate::kDelivered;
  if (!lost) {
    if (const std::optional<Nanos> cut = link_.next_cut(); cut && LinkModel::lost_to_cut(v, *cut)) {
      link_.count_lost_in_flight(1, frame);  // still on the fibre when it is cut
      lost = true;
    }
  }
  x.lost = lost;
  out_.emplace(id, x);
  if (lost) {
    lost_in_flight_.insert(id);
    events_.push({t + backed_off_rto(attempt), order_++, false, id});
    return;
  }
  events_.push({v.release + ack_delay(), order_++, true, id});
  if (seg >= msg_first_seg_ && seg < msg_end_seg_ && msg_undelivered_ > 0) {
    --msg_undelivered_;
    msg_release_ = std::max(msg_release_, v.release);
  }
}

void MessageLink::try_send(Nanos t, bool force_one) {
  bool sent = false, limited = false;
  while (!rtx_.empty() || !unsent_.empty()) {
    if (!force_one && out_.size() >= w_.cwnd) {
      limited = true;
      break;
    }
    force_one = false;
    if (!rtx_.empty()) {
      const Rtx r = rtx_.front();
      rtx_.pop_front();
      transmit(t, r.seg, r.frame, r.attempt);
    } else {
      if (seg_.receive_window && next_seg_ >= snd_wnd_end_) {  // tcp_snd_wnd_test()
        ++stats_.rwnd_limited;
        break;
      }
      const uint32_t frame = unsent_.front();
      unsent_.pop_front();
      unacked_segs_.insert(next_seg_);
      transmit(t, next_seg_++, frame, 1);
    }
    sent = true;
  }
  if (!sent && !limited) return;
  // Linux tcp_cwnd_validate(): remember whether this window was cwnd-limited, or its peak flight.
  const uint64_t una = out_.empty() ? next_tx_ : out_.begin()->first;
  const uint32_t packets_out = static_cast<uint32_t>(out_.size());
  if (una >= cwnd_usage_tx_ || limited || (!is_cwnd_limited_ && packets_out > max_packets_out_)) {
    is_cwnd_limited_ = limited;
    max_packets_out_ = packets_out;
    cwnd_usage_tx_ = next_tx_;
  }
}

void MessageLink::mark_lost(uint64_t tx, bool fast, Nanos t) {
  auto it = out_.find(tx);
  const Tx x = it->second;
  out_.erase(it);
  lost_in_flight_.erase(tx);
  if (x.attempt >= seg_.max_attempts) {
    failed_ = true;
    return;
  }
  rtx_.push_back({x.seg, x.frame, x.attempt + 1});
  if (!fast) return;
  ++stats_.fast_retransmits;
  if (state_ == State::kOpen) {
    // Enter fast recovery: one window reduction per episode (Linux's PRR ends at ssthresh).
    w_.ssthresh = cc_->ssthresh_after_loss(w_);
    w_.cwnd = w_.ssthresh;
    w_.cwnd_cnt = 0;
    state_ = State::kRecovery;
    recover_seg_ = next_seg_ == 0 ? 0 : next_seg_ - 1;
    ++stats_.recoveries;
    try_send(t, true);  // the fast retransmit goes at once
  }
}

void MessageLink::on_ack(Nanos t, uint64_t tx) {
  auto it = out_.find(tx);
  if (it == out_.end()) return;
  const Tx x = it->second;
  out_.erase(it);
  ++stats_.acked_segments;
  const Nanos sample = t - x.sent;
  rtt_sample(sample);
  unacked_segs_.erase(x.seg);
  if (seg_.receive_window) receive(t - ack_delay(), x.seg);
  // SACK: holes sent before this segment count one more later ACK; dupthresh of them is a loss.
  std::vector<uint64_t> detected;
  for (uint64_t l : lost_in_flight_) {
    if (l > tx) break;
    if (++out_.at(l).acked_after >= seg_.dupthresh) detected.push_back(l);
  }
  for (uint64_t l : detected) mark_lost(l, true, t);
  if (failed_) return;
  if (state_ != State::kOpen && (unacked_segs_.empty() || *unacked_segs_.begin() > recover_seg_)) state_ = State::kOpen;
  if (state_ != State::kRecovery) {
    AckEvent a;
    a.now = t;
    a.acked = 1;
    a.rtt = sample;
    a.min_rtt = min_rtt_;
    a.acked_tx = tx;
    a.next_tx = next_tx_;
    a.cwnd_limited = cwnd_limited();
    cc_->on_ack(w_, a);
  }
  try_send(t, false);
}

void MessageLink::on_timeout(Nanos t, uint64_t tx) {
  if (!lost_in_flight_.count(tx)) return;  // detected by later ACKs meanwhile
  ++stats_.timeouts;
  // Linux tcp_enter_loss(): ssthresh from the window unless already reducing it, cwnd 1, and
  // every hole retransmitted in slow start.
  if (state_ == State::kOpen) {
    w_.ssthresh = cc_->ssthresh_after_loss(w_);
    ++stats_.recoveries;
  }
  cc_->on_rto();
  w_.cwnd = 1;
  w_.cwnd_cnt = 0;
  state_ = State::kLoss;
  recover_seg_ = next_seg_ == 0 ? 0 : next_seg_ - 1;
  mark_lost(tx, false, t);
  const std::vector<uint64_t> rest(lost_in_flight_.begin(), lost_in_flight_.end());
  for (uint64_t l : rest) mark_lost(l, false, t);
  if (failed_) return;
  try_send(t, true);  // the timed-out segment goes whatever is still in flight
}

void MessageLink::advance(Nanos now) {
  if (!seg_.tcp) return;
  while (!events_.empty() && events_.top().at <= now && !failed_) process_next_event();
}

void MessageLink::process_next_event() {
  const Event e = events_.top();
  events_.pop();
  clock_ = std::max(clock_, e.at);
  if (e.ack)
    on_ack(e.at, e.tx);
  else
    on_timeout(e.at, e.tx);
}

MessageVerdict MessageLink::send(Nanos now, uint64_t payload_bytes) {
  if (!seg_.tcp) return send_windowless(now, payload_bytes);
  MessageVerdict mv;
  const uint64_t nseg = std::max<uint64_t>(1, (payload_bytes + seg_.mss_bytes - 1) / seg_.mss_bytes);
  mv.segments = nseg;
  now = std::max(now, clock_);
  clock_ = now;
  advance(now);
  if (seg_.slow_start_after_idle && out_.empty() && sent_any_ && now - last_sent_ > rto_)
    restart_after_idle(now - last_sent_);
  msg_first_seg_ = next_seg_ + unsent_.size();
  msg_end_seg_ = msg_first_seg_ + nseg;
  msg_undelivered_ = nseg;
  msg_release_ = Nanos{0};
  mv_ = &mv;
  uint64_t left = payload_bytes;
  for (uint64_t i = 0; i < nseg; ++i) {
    const uint32_t pay = static_cast<uint32_t>(std::min<uint64_t>(left, seg_.mss_bytes));
    left -= pay;
    unsent_.push_back(pay + seg_.header_bytes);
  }
  try_send(now, false);
  while (msg_undelivered_ > 0 && !failed_) {
    if (events_.empty()) throw std::logic_error("MessageLink: segments left undelivered with no event pending");
    process_next_event();
  }
  mv_ = nullptr;
  if (failed_) {
    mv.delivered = false;
    reset();
    return mv;
  }
  mv.delivered = true;
  mv.deliver_at = std::max(msg_release_, last_delivery_);
  last_delivery_ = mv.deliver_at;
  return mv;
}

}  // namespace geotb::emu
