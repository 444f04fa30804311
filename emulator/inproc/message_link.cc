#include "emulator/inproc/message_link.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace geotb::emu {

MessageVerdict MessageLink::send_windowless(Nanos now, uint64_t payload_bytes) {
  MessageVerdict mv;
  const uint64_t nseg = std::max<uint64_t>(1, (payload_bytes + seg_.mss_bytes - 1) / seg_.mss_bytes);
  mv.segments = nseg;
  if (payload_bytes > seg_.fluid_above_bytes) {  // a bulk transfer: every segment at once, fluid
    ++stats_.bulk_transfers;
    const LinkModel::Bulk b =
        link_.offer_bulk(now, nseg, payload_bytes + nseg * seg_.header_bytes, 0, seg_.min_rto, seg_.max_attempts);
    mv.transmissions = b.transmissions;
    mv.wire_bytes = b.wire_bytes;
    mv.delivered = b.delivered;
    if (b.delivered) {
      mv.deliver_at = std::max(b.release, last_delivery_);
      last_delivery_ = mv.deliver_at;
    }
    return mv;
  }
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

MessageLink::MessageLink(LinkModel& link, SegmentConfig seg, LinkModel* reverse, EventQueue* queue)
    : link_(link), reverse_(reverse), seg_(seg), q_(queue ? queue : &own_q_) {
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
  rcv_rtt_ = srtt_;
  ack_path_ = ack_delay();
  out_.clear();
  lost_in_flight_.clear();
  unacked_segs_.clear();
  unsent_.clear();
  rtx_.clear();
  ++gen_;
  sent_any_ = false;
  is_cwnd_limited_ = false;
  max_packets_out_ = 0;
  cwnd_usage_tx_ = next_tx_;
  failed_ = false;
  msgs_.clear();
  rcv_ooo_.clear();
  ack_pending_.clear();
  acks_.clear();
  deferred_.clear();
  bulk_.reset();
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

void MessageLink::receive_window_update(Nanos at, bool advanced) {
  // A data segment reached the receiver at `at` (rcv_nxt already moved past what it completed).
  // tcp_grow_window(): rcv_ssthresh += 2 * advmss per data segment, up to window_clamp.
  if (rcv_.rcv_ssthresh < rcv_.window_clamp)
    rcv_.rcv_ssthresh = std::min<uint64_t>(rcv_.rcv_ssthresh + 2 * uint64_t{seg_.mss_bytes}, rcv_.window_clamp);
  if (!advanced) return;
  // The application reads what arrived in order: tcp_rcv_space_adjust() (tcp_recvmsg). Once per
  // receiver RTT (tp->rcv_rtt_est, here the sender's srtt), the bytes read during it.
  if (!rcv_.measured || at - rcv_.space_time >= rcv_rtt_) {
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

void MessageLink::on_arrive(Nanos t, uint64_t tx, uint64_t seg) {
  // The receiver: in-order data advances rcv_nxt (with what waited out of order behind a hole).
  bool advanced = false;
  if (auto it = out_.find(tx); it != out_.end()) {
    // tcp_rcv_rtt_measure_ts(): now - the echoed timestamp, averaged as the sender's srtt.
    const Nanos m = std::max(Nanos{1}, t - it->second.sent + it->second.ack_path);
    rcv_rtt_ = (7 * rcv_rtt_ + m) / 8;
  }
  if (seg >= rcv_.rcv_nxt && !rcv_ooo_.count(seg)) {
    rcv_.high_seg = std::max(rcv_.high_seg, seg + 1);
    if (seg == rcv_.rcv_nxt) {
      ++rcv_.rcv_nxt;
      while (!rcv_ooo_.empty() && *rcv_ooo_.begin() == rcv_.rcv_nxt) {
        rcv_ooo_.erase(rcv_ooo_.begin());
        ++rcv_.rcv_nxt;
      }
      advanced = true;
    } else {
      rcv_ooo_.insert(seg);
    }
  }
  if (seg_.receive_window) receive_window_update(t, advanced);
  deliver_ready(t);
  // The ACK (cumulative, SACK): it carries rcv_nxt and the window (__tcp_select_window:
  // rcv_ssthresh, the receive queue being empty); the right edge never moves left.
  ack_pending_.push_back(tx);
  AckFrame a{std::move(ack_pending_), rcv_.rcv_nxt + rcv_.rcv_ssthresh / seg_.mss_bytes, t};
  ack_pending_.clear();
  Nanos arrive = t + ack_delay();
  if (reverse_) {
    const Verdict v = reverse_->offer(t, seg_.header_bytes);
    bool through = v.fate == Fate::kDelivered;
    if (through) {
      if (const std::optional<Nanos> cut = reverse_->next_cut(); cut && LinkModel::lost_to_cut(v, *cut)) {
        reverse_->count_lost_in_flight(1, seg_.header_bytes);
        through = false;
      }
    }
    if (!through) {
      // The next ACK frame says it again; if none comes, the sender's timer fires.
      ack_pending_ = std::move(a.txs);
      if (auto it = out_.find(tx); it != out_.end() && !it->second.lost)
        push(it->second.sent + backed_off_rto(it->second.attempt), kTimeout, tx);
      return;
    }
    arrive = v.release;
  }
  const uint64_t id = next_ack_id_++;
  acks_.emplace(id, std::move(a));
  push(arrive, kAck, id);
}

void MessageLink::on_ack_frame(Nanos t, uint64_t ack_id) {
  auto it = acks_.find(ack_id);
  if (it == acks_.end()) return;
  AckFrame a = std::move(it->second);
  acks_.erase(it);
  snd_wnd_end_ = std::max(snd_wnd_end_, a.wnd_end);
  ack_path_ = t - a.sent_at;  // what this ACK lets go echoes its timestamp
  for (uint64_t tx : a.txs) {
    on_ack(t, tx);
    if (failed_) break;
  }
  ack_path_ = ack_delay();
}

void MessageLink::rtt_sample(Nanos m) {
  if (m.count() <= 0) m = Nanos{1};
  latest_rtt_ = m;
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
  // Counted to the message the segment belongs to (none: a spurious retransmission of a delivered one).
  auto m = std::upper_bound(msgs_.begin(), msgs_.end(), seg, [](uint64_t s, const Msg& x) { return s < x.first_seg; });
  Msg* msg = m != msgs_.begin() && seg < std::prev(m)->end_seg ? &*std::prev(m) : nullptr;
  if (msg) {
    ++msg->mv.transmissions;
    msg->mv.wire_bytes += frame + link_.config().overhead_bytes;
  }
  const uint64_t id = next_tx_++;
  Tx x;
  x.seg = seg;
  x.frame = frame;
  x.sent = t;
  x.attempt = attempt;
  x.ack_path = ack_path_;
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
    push(t + backed_off_rto(attempt), kTimeout, id);
    return;
  }
  push(v.release, kArrive, id, seg);
  if (msg && !msg->released[seg - msg->first_seg]) {
    msg->released[seg - msg->first_seg] = true;
    --msg->unreleased;
    msg->last_release = std::max(msg->last_release, v.release);
  }
}

void MessageLink::try_send(Nanos t, bool force_one) {
  refill_bulk(t);
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
  if (!out_.count(tx)) return;  // ACKed, or detected lost by later ACKs, meanwhile
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
  q_->run_until(now);
}

void MessageLink::on_event(Nanos at, uint32_t kind, uint64_t a, uint64_t b) {
  if ((kind >> 2) != (gen_ & 0x3fffffffu)) return;  // scheduled before a reset
  switch (kind & 3u) {
    case kArrive: on_arrive(at, a, b); break;
    case kAck: on_ack_frame(at, a); break;
    case kTimeout: on_timeout(at, a); break;
    case kBulkDone: on_bulk_done(at, a); break;
    default: break;
  }
  if (failed_) fail_all(at);
}

void MessageLink::fail_all(Nanos t) {
  // A segment went max_attempts times: the connection is dead (Linux: ETIMEDOUT); every message
  // not yet delivered on it is undeliverable, and the connection starts afresh.
  std::deque<Msg> dead;
  dead.swap(msgs_);
  for (const Deferred& d : deferred_) {
    Msg m;
    m.id = d.id;
    dead.push_back(std::move(m));
  }
  reset();
  for (Msg& m : dead) {
    m.mv.delivered = false;
    m.mv.deliver_at = t;
    if (on_done_) on_done_(m.id, m.mv);
    else if (!m.returned) settled_.emplace(m.id, m.mv);
  }
}

uint64_t MessageLink::enqueue(Nanos now, uint64_t payload_bytes, uint64_t rounds) {
  if (!seg_.tcp) throw std::logic_error("MessageLink::enqueue: the window-less model settles messages in send()");
  now = std::max(now, q_->now());
  const uint64_t id = next_msg_id_++;
  if (bulk_ || !deferred_.empty() || payload_bytes > seg_.fluid_above_bytes || rounds > 1) {
    deferred_.push_back({id, payload_bytes, rounds});
    pump(now);
  } else {
    enqueue_segments(now, id, payload_bytes);
  }
  if (failed_) fail_all(now);
  return id;
}

void MessageLink::restart_if_idle(Nanos now) {
  if (seg_.slow_start_after_idle && out_.empty() && sent_any_ && now - last_sent_ > rto_)
    restart_after_idle(now - last_sent_);
}

uint64_t MessageLink::append_segments(uint64_t payload_bytes) {
  // ceil(S / mss) segments, at least one (an empty message is one header-only segment).
  const uint64_t nseg = std::max<uint64_t>(1, (payload_bytes + seg_.mss_bytes - 1) / seg_.mss_bytes);
  uint64_t left = payload_bytes;
  for (uint64_t i = 0; i < nseg; ++i) {
    const uint32_t pay = static_cast<uint32_t>(std::min<uint64_t>(left, seg_.mss_bytes));
    left -= pay;
    unsent_.push_back(pay + seg_.header_bytes);
  }
  return nseg;
}

void MessageLink::enqueue_segments(Nanos now, uint64_t id, uint64_t payload_bytes) {
  restart_if_idle(now);
  Msg m;
  m.id = id;
  m.first_seg = next_seg_ + unsent_.size();
  m.mv.segments = append_segments(payload_bytes);
  m.end_seg = m.first_seg + m.mv.segments;
  m.released.assign(m.mv.segments, false);
  m.unreleased = m.mv.segments;
  msgs_.push_back(std::move(m));
  try_send(now, false);
}

void MessageLink::pump(Nanos t) {
  while (!bulk_ && !deferred_.empty() && !failed_) {
    const Deferred d = deferred_.front();
    deferred_.pop_front();
    if (d.bytes > seg_.fluid_above_bytes || d.rounds > 1)
      start_bulk(t, d.id, d.bytes, d.rounds);
    else
      enqueue_segments(t, d.id, d.bytes);
  }
}

void MessageLink::deliver_ready(Nanos t) {
  // Every message whose last segment is now in order is delivered (byte stream: in send order);
  // a bulk transfer also needs its tail arrived.
  bool bulk_done = false;
  while (!msgs_.empty() && rcv_.rcv_nxt >= msgs_.front().end_seg) {
    const bool is_bulk = bulk_ && msgs_.front().id == bulk_->id;
    if (is_bulk && (!bulk_->tail_started || bulk_->tail_release > t)) break;  // on_bulk_done comes back
    Msg m = std::move(msgs_.front());
    msgs_.pop_front();
    m.mv.delivered = true;
    m.mv.deliver_at = std::max(t, last_delivery_);
    last_delivery_ = m.mv.deliver_at;
    if (is_bulk) {
      bulk_.reset();
      bulk_done = true;
    }
    if (on_done_) on_done_(m.id, m.mv);
    else if (!m.returned) settled_.emplace(m.id, m.mv);
  }
  if (bulk_done) pump(t);
}

double MessageLink::steady_window() const {
  const LinkConfig& lc = link_.config();
  const double mss = seg_.mss_bytes;
  const double rtt_s = std::chrono::duration<double>(lc.delay + ack_delay()).count();
  const double wire_seg = mss + seg_.header_bytes + lc.overhead_bytes;
  double w = seg_.receive_window ? std::floor(static_cast<double>(seg_.rmem_max_bytes / 2) / mss)
                                 : std::numeric_limits<double>::infinity();
  if (lc.rate_bps > 0 && rtt_s > 0) w = std::min(w, std::ceil(lc.rate_bps * rtt_s / 8 / wire_seg));
  const double q = lc.loss.kind == LossConfig::Kind::kNone ? 0.0 : lc.loss.stationary_loss();
  if (q > 0) {
    // The congestion control's long-run response to the loss rate (RFC 9438 section 5.1, C = 0.4,
    // beta = 0.7; Reno sqrt(3 / (2 q)), Mathis et al. 1997; CUBIC's Reno-friendly region).
    const double reno = std::sqrt(1.5 / q);
    const double cubic = 1.054 * std::pow(rtt_s, 0.75) / std::pow(q, 0.75);
    w = std::min(w, seg_.cc == CcAlgorithm::kReno ? reno : std::max(reno, cubic));
  }
  return std::max(w, 1.0);
}

void MessageLink::start_bulk(Nanos t, uint64_t id, uint64_t payload_bytes, uint64_t rounds) {
  ++stats_.bulk_transfers;
  restart_if_idle(t);
  Msg m;
  m.id = id;
  m.first_seg = m.end_seg = next_seg_ + unsent_.size();
  msgs_.push_back(std::move(m));
  Bulk b;
  b.id = id;
  b.remaining = payload_bytes;
  b.bytes = payload_bytes;
  b.rounds = std::max<uint64_t>(1, rounds);
  bulk_ = b;
  refill_bulk(t);
  try_send(t, false);
}

void MessageLink::refill_bulk(Nanos t) {
  // Keeps the head's segments ahead of the window (1 MiB at a time) until the window is steady or
  // the head is fluid_head_max_bytes long; then the rest goes to the tail.
  if (!bulk_ || bulk_->tail_started) return;
  const uint64_t mss = seg_.mss_bytes;
  const uint64_t chunk = std::max<uint64_t>(1, (uint64_t{1} << 20) / mss) * mss;
  const uint64_t low = std::max<uint64_t>(1024, 2 * uint64_t{w_.cwnd});
  while (bulk_->remaining > 0 && unsent_.size() < low) {
    const double w = steady_window();
    const double rwnd = seg_.receive_window ? static_cast<double>(rcv_.rcv_ssthresh / mss) : w;
    const bool steady = state_ == State::kOpen && std::min<double>(w_.cwnd, rwnd) >= 0.95 * w;
    if (steady || bulk_->head_bytes >= seg_.fluid_head_max_bytes) {
      bulk_tail(t);
      return;
    }
    const uint64_t c = std::min(bulk_->remaining, chunk);
    const uint64_t nseg = append_segments(c);
    Msg& m = msgs_.back();
    m.end_seg += nseg;
    m.mv.segments += nseg;
    m.released.resize(m.released.size() + nseg, false);
    m.unreleased += nseg;
    bulk_->remaining -= c;
    bulk_->head_bytes += c;
  }
  if (bulk_->remaining == 0) bulk_->tail_started = true;  // all of it went segment by segment
}

void MessageLink::bulk_tail(Nanos t) {
  Bulk& b = *bulk_;
  Msg& m = msgs_.back();
  b.tail_started = true;
  const uint64_t mss = seg_.mss_bytes;
  // The head's segments not sent yet join the tail (they are the last of unsent_: later messages
  // wait for the bulk), so that nothing is serialized beside the tail that it does not account for.
  while (!unsent_.empty() && m.end_seg > std::max(m.first_seg, next_seg_)) {
    b.remaining += unsent_.back() - seg_.header_bytes;
    b.head_bytes -= unsent_.back() - seg_.header_bytes;
    unsent_.pop_back();
    --m.end_seg;
    --m.mv.segments;
    m.released.pop_back();
    --m.unreleased;
  }
  const LinkConfig& lc = link_.config();
  const Nanos rtt = lc.delay + ack_delay();
  const double rtt_s = std::max(1e-9, std::chrono::duration<double>(rtt).count());
  const double wire_seg = static_cast<double>(mss + seg_.header_bytes + lc.overhead_bytes);
  const double w_end = steady_window();
  const double rwnd = seg_.receive_window ? static_cast<double>(rcv_.rcv_ssthresh / mss) : w_end;
  double w = std::min({static_cast<double>(w_.cwnd), rwnd, w_end});
  // The window's growth to W: slow start (doubling per RTT) below ssthresh, then CUBIC
  // W - C (K - tau)^3 with K = cbrt((W - w_ss) / C) (it meets W at tau = K) or Reno one segment
  // per RTT, in steps of 100 ms.
  const double C = 0.4;
  const double ssthresh = std::min<double>(w_.ssthresh, w_end);
  double K = -1;  // set when congestion avoidance starts
  uint64_t left_segs = (b.remaining + mss - 1) / mss;
  const uint64_t tail_segs = left_segs;
  const uint64_t last_pay = b.remaining - (tail_segs - 1) * mss;
  double tau = 0;
  LinkModel::Bulk last;
  last.delivered = true;
  if (b.rounds > 1 && left_segs > 0) {
    // A chain of parts (a group of buckets): the tail's share of them, each a dependent step, at
    // the window the head reached (steady after the first message: the chain's gaps are one-way
    // delays, shorter than the RTO, so the window does not restart between parts).
    const uint64_t parts = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::llround(static_cast<double>(b.rounds) * static_cast<double>(b.remaining) /
                                              static_cast<double>(std::max<uint64_t>(1, b.bytes)))));
    const double cap = w * wire_seg * 8 / rtt_s;
    last = link_.offer_bulk(t, left_segs, b.remaining + left_segs * seg_.header_bytes, cap, rto_, seg_.max_attempts,
                            std::min(parts, left_segs));
    m.mv.transmissions += last.transmissions;
    m.mv.wire_bytes += last.wire_bytes;
    if (last.delivered) left_segs = 0;
  }
  while (left_segs > 0 && last.delivered) {
    double next_w = w_end, dur = 0, win = w_end;
    uint64_t segs = left_segs;
    if (w < w_end * 0.999) {
      double w1, step_s;
      if (w < ssthresh * 0.999) {  // slow start: one RTT carries the window, which then doubles
        step_s = rtt_s;
        w1 = std::min(ssthresh, 2 * w);
        win = w;
      } else {
        step_s = std::max(rtt_s, 0.1);
        if (K < 0) {
          K = std::cbrt(std::max(0.0, w_end - w) / C);
          tau = 0;
        }
        w1 = seg_.cc == CcAlgorithm::kReno ? std::min(w_end, w + step_s / rtt_s)
                                           : std::min(w_end, w_end - C * std::pow(std::max(0.0, K - tau - step_s), 3));
        win = 0.5 * (w + w1);
      }
      segs = std::min<uint64_t>(left_segs, std::max<uint64_t>(1, static_cast<uint64_t>(win * step_s / rtt_s)));
      next_w = w1;
      dur = step_s;
    }
    const double cap = win * wire_seg * 8 / rtt_s;
    const uint64_t bytes = (segs == left_segs ? (segs - 1) * mss + last_pay : segs * mss) + segs * seg_.header_bytes;
    last = link_.offer_bulk(t, segs, bytes, cap, rto_, seg_.max_attempts);
    m.mv.transmissions += last.transmissions;
    m.mv.wire_bytes += last.wire_bytes;
    if (!last.delivered) break;
    left_segs -= segs;
    w = next_w;
    tau += dur;
  }
  b.ack_segs = tail_segs;  // their ACKs: offered to the reverse direction once the tail is in (on_bulk_done)
  m.mv.segments += tail_segs;
  stats_.acked_segments += tail_segs;
  stats_.fluid_segments += tail_segs;
  b.remaining = 0;
  b.tail_ok = last.delivered;
  b.tail_release = last.delivered ? last.release : last.depart;
  if (last.delivered) {
    // The connection after it: the window where the growth left it, the receive buffer grown.
    w_.cwnd = std::max(w_.cwnd, static_cast<uint32_t>(std::min(w, 1e9)));
    if (seg_.receive_window && rcv_.rcv_ssthresh < static_cast<uint64_t>(w) * mss) {
      rcv_.rcvbuf = std::max(rcv_.rcvbuf, std::min(seg_.rmem_max_bytes, 2 * static_cast<uint64_t>(w) * mss));
      rcv_.window_clamp = std::max(rcv_.window_clamp, rcv_.rcvbuf / 2);
      rcv_.rcv_ssthresh = rcv_.window_clamp;
    }
    last_sent_ = std::max(last_sent_, last.depart);
  }
  push(b.tail_release, kBulkDone, b.id);
}

void MessageLink::on_bulk_done(Nanos t, uint64_t id) {
  if (!bulk_ || bulk_->id != id) return;
  // The tail's ACKs, one block on the reverse serializer after the tail: a transfer the other way
  // that started meanwhile is not held up by them (both directions' tails run alike, as their
  // interleaved ACKs would let them), the next one queues behind them.
  if (reverse_ && bulk_->tail_ok && bulk_->ack_segs > 0)
    (void)reverse_->offer_bulk(t, bulk_->ack_segs, bulk_->ack_segs * seg_.header_bytes, 0, rto_, seg_.max_attempts);
  bulk_->ack_segs = 0;
  if (!bulk_->tail_ok) {  // the link stayed down through every retransmission
    failed_ = true;
    return;
  }
  deliver_ready(t);
}

MessageVerdict MessageLink::send(Nanos now, uint64_t payload_bytes) {
  if (!seg_.tcp) return send_windowless(now, payload_bytes);
  advance(now);
  const uint64_t id = enqueue(now, payload_bytes);
  auto released = [&]() -> Msg* {
    for (Msg& m : msgs_)
      if (m.id == id) return m.unreleased == 0 && !(bulk_ && bulk_->id == id) ? &m : nullptr;
    return nullptr;
  };
  for (;;) {
    if (auto it = settled_.find(id); it != settled_.end()) {
      const MessageVerdict mv = it->second;
      settled_.erase(it);
      if (mv.delivered) last_returned_ = std::max(last_returned_, mv.deliver_at);
      return mv;
    }
    if (Msg* m = released()) {
      // Every segment's arrival is known: the in-order delivery is the latest of them and of the
      // previous messages' deliveries.
      m->returned = true;
      MessageVerdict mv = m->mv;
      mv.delivered = true;
      mv.deliver_at = std::max(m->last_release, last_returned_);
      last_returned_ = mv.deliver_at;
      return mv;
    }
    if (q_->empty()) throw std::logic_error("MessageLink: a message left unsettled with no event pending");
    q_->run_next();
  }
}

}  // namespace geotb::emu
