// Message-level view of one TCP connection over a LinkModel direction.
//
// The in-process WAN moves whole messages, not packets, but charges them what a Linux TCP
// connection's packets would cost. The model (documented in docs/guide/wan-model.md):
//  * a message of S payload bytes is cut into ceil(S / mss_bytes) segments (at least one); each
//    segment is a frame of payload + header_bytes (IPv4 20 + TCP 20 + timestamps 12) offered to
//    the link, which adds its own per-frame Ethernet overhead; the connection is a byte stream:
//    a message's segments queue behind the previous message's;
//  * congestion window (SegmentConfig::tcp, the default): at most cwnd segments are in flight
//    (sent, neither ACKed nor known lost). Defaults are Linux's: initial window 10 (RFC 6928,
//    TCP_INIT_CWND), slow start (+1 per ACKed segment, RFC 3465 byte counting), congestion
//    avoidance by the scenario's algorithm (Reno RFC 5681, CUBIC RFC 9438; congestion_control.h),
//    growth only while cwnd-limited (RFC 7661, Linux tcp_is_cwnd_limited), restart after an idle
//    period longer than the RTO (RFC 5681 4.1, Linux tcp_slow_start_after_idle = 1:
//    tcp_cwnd_restart halves cwnd per RTO idle, not below min(cwnd, 10));
//  * every segment is ACKed by the receiver when it arrives (no delayed ACKs; SACK as Linux
//    negotiates it): the ACK is a real frame of header_bytes (52) offered to the reverse link
//    (`reverse`) at the arrival instant, so it queues behind whatever that direction's serializer
//    holds (the other direction's bulk data, other connections' ACKs) and takes its propagation
//    delay; it reaches the sender at that frame's release. An ACK frame the reverse link does not
//    deliver (dropped, down, cut) is cumulative: what it said rides on the connection's next ACK
//    frame, and the sender's retransmission timer (RTO after the transmission) covers a last one.
//    Without a reverse link (a connection used alone) the ACK takes `link`'s delay, no frame;
//  * a segment lost on the path (Bernoulli or Gilbert-Elliott loss, queue overflow) is detected
//    when 3 segments sent after it have been ACKed (fast retransmit, RFC 5681 / 6675, Linux's
//    tcp_reordering = 3): the window is reduced once per recovery episode (ssthresh by the
//    algorithm, cwnd = ssthresh) and the segment retransmitted at once; recovery ends when every
//    segment sent before it began is ACKed. Fewer than 3 later ACKs (a tail loss), or a link
//    down: the retransmission timer fires RTO after the transmission, RTO = srtt + max(4 rttvar,
//    min_rto) (RFC 6298 with Linux's 200 ms floor, TCP_RTO_MIN), doubling per attempt up to
//    max_rto (TCP_RTO_MAX 120 s); the window drops to 1 and slow start follows (Linux TCP_CA_Loss).
//    The RTT estimator starts from the handshake's sample (the two one-way delays). Not modelled:
//    tail loss probes, delayed ACKs, HyStart++ (Linux's CUBIC HyStart is);
//  * receive window (SegmentConfig::receive_window, the default): the sender never sends a segment
//    beyond the right edge the receiver last advertised (its rcv_nxt + window, carried by the ACK),
//    as Linux's tcp_snd_wnd_test(). The receiver is Linux's (net/ipv4/tcp_input.c, tcp_output.c,
//    kernel 6.16+; defaults net.ipv4.tcp_rmem = 4096 131072 33554432, tcp_moderate_rcvbuf = 1)
//    and its application reads every in-order byte at once (Gloo's receive is always posted):
//    - sk_rcvbuf starts at tcp_rmem[1]; window_clamp = tcp_win_from_space(sk_rcvbuf) with the
//      default scaling_ratio (TCP_DEFAULT_SCALING_RATIO: half of the buffer is window);
//    - the SYN's window (tcp_select_initial_window) is window_clamp rounded down to whole MSS, at
//      most 65535 (unscaled); rcv_ssthresh starts there and grows by 2 MSS per data segment
//      received up to window_clamp (tcp_grow_window); the advertised window is rcv_ssthresh
//      (__tcp_select_window with an empty receive queue);
//    - buffer autotuning (tcp_rcv_space_adjust, tcp_rcvbuf_grow): when the application has read,
//      once per receiver RTT, if the bytes read during the last RTT exceed rcvq_space.space (at
//      first min(rcv_wnd, TCP_INIT_CWND * MSS)), space = those bytes and sk_rcvbuf grows to hold a
//      window of 2 * space plus the out-of-order span (at most tcp_rmem[2]), window_clamp
//      following it. The receiver's RTT (tcp_rcv_rtt_measure_ts, from timestamps) is a moving
//      average (gain 1/8, from the handshake's sample) of each data segment's arrival minus the
//      send instant of the ACK it echoes: its own path plus the path of the ACK that let it go
//      (the reverse one-way delay for a segment no ACK released); the window is counted in whole
//      segments of mss_bytes;
//  * the sender is paced by the bottleneck: a window's segments are offered when the window
//    allows and queue at the link's serializer, as a real burst queues at the bottleneck (the
//    in-process mode builds its links without a queue limit);
//  * after max_attempts transmissions of one segment the connection is dead (a socket's
//    ETIMEDOUT): every message not yet delivered on it is undeliverable and the connection starts
//    afresh;
//  * an outage cuts what is on the fibre (LinkModel): a segment the link delivered but would
//    release after a scheduled outage start is lost (counted as lost in flight), as the DPDK data
//    plane drops frames from its delay line at the cut;
//  * the connection delivers in order: a message is delivered when its last segment is, and never
//    before the previous message on the same connection (head-of-line blocking).
//  * a message larger than SegmentConfig::fluid_above_bytes (a represented model's tensors,
//    docs/guide/represented.md) is a bulk transfer, whose cost must not grow with its bytes: it
//    follows the messages before it on the stream and goes segment by segment (the model above)
//    while the window grows, until the window is steady, min(cwnd, advertised) >= 95 % of
//    W = min(receive window at tcp_rmem[2] / 2, the path's BDP, the congestion control's long-run
//    response to the loss rate q: CUBIC 1.054 (RTT^3 / q^3)^(1/4) segments, RFC 9438 section 5.1
//    with C = 0.4, beta = 0.7; Reno sqrt(3 / (2 q)), Mathis et al. 1997; the larger of the two for
//    CUBIC's Reno-friendly region), or until fluid_head_max_bytes have gone that way. A transfer
//    with few loss events is not in that long run: the segment model's goodput then depends on
//    where its losses fall (docs/measurements/represented-models.md). The rest (the tail) is a fluid:
//    the window grows from where it is to W as the congestion control grows it (slow start
//    doubling per RTT below ssthresh, then CUBIC's W - C (K - t)^3 or Reno's one segment per
//    RTT), in steps of one RTT (100 ms above ssthresh), then stays at W; each step is serialized
//    at min(link rate, window / RTT)
//    (LinkModel::offer_bulk: rate changes, outages paused through the RTO backoff, expected
//    retransmissions serialized), its ACKs occupy the reverse serializer once the tail is in (one
//    block: a transfer the other way that started meanwhile runs alike, the next queues). The message is
//    delivered when its last head segment is in order and the tail's last frame has arrived;
//    later messages on the connection wait for it. Not modelled inside the tail: jitter, queue
//    limits, losses' individual recoveries (docs/measurements/represented-models.md compares the
//    two models where both run);
// SegmentConfig::tcp = false keeps the window-less model: every segment offered at once, a lost
// segment retransmitted one RTT after it left, a segment offered while the link is down after
// min_rto doubling per attempt.
// Events (tcp mode): a data segment's arrival at the receiver, an ACK's arrival at the sender, a
// retransmission timer; they run on an EventQueue in (time, order) order. In a fabric one queue
// drives every connection and the fabric runs it (fabric.h); enqueue() hands a message to the
// connection at `now` (the queue must have run every event before `now`) and the message is
// delivered, reported through the done callback, when the queue runs its last segment's in-order
// arrival. A connection used alone owns its queue: send() enqueues and runs the queue until every
// segment of the message is on its way (its delivery instant is then known) or it fails; events
// due afterwards are run by later calls (send(), advance()); a message sent before the queue's
// time is taken at that time. The sender's transmissions carry no timer unless they are lost (the
// model knows a frame's fate when it offers it) or their ACK frame was: then RTO after they left.
// Pure and single-threaded like LinkModel; time is passed in.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <vector>

#include "emulator/inproc/congestion_control.h"
#include "emulator/inproc/event_queue.h"
#include "emulator/link/link_model.h"

namespace geotb::emu {

struct SegmentConfig {
  uint32_t mss_bytes = 1448;    ///< payload bytes per segment (MTU 1500)
  uint32_t header_bytes = 52;   ///< L3+L4 header bytes per segment
  /// Floor of the retransmission timeout (Linux TCP_RTO_MIN, 200 ms; RFC 6298 says 1 s).
  Nanos min_rto{std::chrono::milliseconds(200)};
  Nanos max_rto{std::chrono::seconds(120)};  ///< ceiling of the backed-off timeout (Linux TCP_RTO_MAX)
  uint32_t max_attempts = 12;   ///< transmissions per segment before the message fails
  bool tcp = true;              ///< congestion window and ACK clock; false: the window-less model
  CcAlgorithm cc = CcAlgorithm::kCubic;  ///< congestion avoidance (Linux's default: cubic)
  uint32_t initial_cwnd = 10;   ///< segments (RFC 6928; Linux TCP_INIT_CWND)
  /// Slow start threshold of a new connection: none (Linux TCP_INFINITE_SSTHRESH) unless a route
  /// metric sets one (ip route ... ssthresh N).
  uint32_t initial_ssthresh = kInfiniteSsthresh;
  uint32_t dupthresh = 3;       ///< later segments ACKed before a hole is a loss (RFC 5681; tcp_reordering)
  bool slow_start_after_idle = true;  ///< Linux net.ipv4.tcp_slow_start_after_idle (default 1)
  /// The receiver's advertised window limits the sender (Linux receiver with buffer autotuning);
  /// false: the window is unlimited (the congestion window alone).
  bool receive_window = true;
  /// net.ipv4.tcp_rmem[1]: the receive buffer a connection starts with (Linux 4.20+: 131072).
  uint64_t rmem_initial_bytes = 131072;
  /// net.ipv4.tcp_rmem[2]: autotuning's ceiling (Linux 6.16+: 33554432; 6291456 before).
  uint64_t rmem_max_bytes = 33554432;
  /// Messages above this many payload bytes are bulk transfers (the fluid model above). The
  /// default, 64 MiB, is above every message of a model that trains for real here.
  uint64_t fluid_above_bytes = uint64_t{64} << 20;
  /// A bulk transfer's head (segment by segment) ends here even if the window is not steady.
  uint64_t fluid_head_max_bytes = uint64_t{64} << 20;
};

struct MessageVerdict {
  bool delivered = false;
  Nanos deliver_at{0};          ///< valid when delivered
  uint64_t segments = 0;
  uint64_t transmissions = 0;   ///< segments + retransmissions
  uint64_t wire_bytes = 0;      ///< frame bytes offered to the link, headers and overhead included
};

/// Connection counters since it was built (tcp mode).
struct TcpStats {
  uint64_t fast_retransmits = 0;  ///< losses detected by 3 later ACKs
  uint64_t timeouts = 0;          ///< retransmission timer expiries
  uint64_t recoveries = 0;        ///< window reductions (loss events): recovery episodes + timeouts
  uint64_t restarts = 0;          ///< idle restarts that shrank the window
  uint64_t acked_segments = 0;
  uint64_t rwnd_limited = 0;      ///< times new data waited for the receiver's window
  uint64_t rcvbuf_grows = 0;      ///< receive buffer autotuning steps (tcp_rcvbuf_grow)
  uint64_t bulk_transfers = 0;    ///< messages carried by the fluid model
  uint64_t fluid_segments = 0;    ///< of their segments, those in the fluid tails (not simulated one by one)
};

/// The receiver's side of the connection (Linux names), bytes.
struct RcvState {
  uint64_t rcvbuf = 0;           ///< sk_rcvbuf
  uint64_t window_clamp = 0;     ///< tp->window_clamp
  uint64_t rcv_ssthresh = 0;     ///< tp->rcv_ssthresh: the window advertised
  uint64_t space = 0;            ///< tp->rcvq_space.space
  uint64_t space_seg = 0;        ///< tp->rcvq_space.seq, in segments
  Nanos space_time{0};           ///< tp->rcvq_space.time
  bool measured = false;         ///< space_time set
  uint64_t rcv_nxt = 0;          ///< next in-order segment expected
  uint64_t high_seg = 0;         ///< one past the highest segment received
};

class MessageLink final : private EventQueue::Handler {
 public:
  /// Called when a message is settled: delivered (deliver_at = the instant its last segment
  /// arrived in order) or undeliverable.
  using DoneFn = std::function<void(uint64_t id, const MessageVerdict&)>;

  /// `link` is the direction this connection sends on; it may be shared with other connections
  /// and must outlive this object. `reverse` (optional) is the direction ACKs return on: every ACK
  /// is a frame offered to it (default: none, the ACK takes `link`'s delay). `queue` (optional)
  /// is the event queue shared with the other connections of a fabric (default: its own).
  MessageLink(LinkModel& link, SegmentConfig seg, LinkModel* reverse = nullptr, EventQueue* queue = nullptr);

  /// Alone (own queue, no done callback): enqueues the message and runs the queue until every one
  /// of its segments is on its way (a transmission of it released by the link: its arrival
  /// instant is then known) and returns the delivery instant, or until it fails. Later events
  /// (ACKs) are run by later calls.
  MessageVerdict send(Nanos now, uint64_t payload_bytes);

  /// The id enqueue() gives the next message.
  uint64_t next_message_id() const { return next_msg_id_; }
  /// Hands a message of `payload_bytes` to the connection at `now` (tcp mode); returns its id. The
  /// queue must have run every event before `now`. The message is settled later, when the queue
  /// runs the event that settles it: through `on_done` if set, else kept for send().
  /// `rounds` > 1: the message stands for that many dependent transfers of equal parts (a group of
  /// a bucketed allreduce's buckets, docs/guide/represented.md); it is a bulk transfer whatever
  /// its size, and its tail's parts are chained (LinkModel::offer_bulk).
  uint64_t enqueue(Nanos now, uint64_t payload_bytes, uint64_t rounds = 1);
  void set_on_done(DoneFn fn) { on_done_ = std::move(fn); }

  /// Runs the queue's events up to `now` (ACKs, timers); send() does it itself.
  void advance(Nanos now);

  const TcpWindow& window() const { return w_; }
  Nanos rto() const { return rto_; }
  Nanos srtt() const { return srtt_; }
  /// The latest RTT sample (an ACK's arrival - its segment's transmission).
  Nanos latest_rtt() const { return latest_rtt_; }
  uint32_t in_flight() const { return static_cast<uint32_t>(out_.size()); }
  const TcpStats& tcp_stats() const { return stats_; }
  const RcvState& receiver() const { return rcv_; }
  /// One past the last segment the receiver's latest advertised window lets the sender send.
  uint64_t send_window_end() const { return snd_wnd_end_; }

 private:
  enum Kind : uint32_t { kArrive = 0, kAck = 1, kTimeout = 2, kBulkDone = 3 };
  void on_event(Nanos at, uint32_t kind, uint64_t a, uint64_t b) override;
  MessageVerdict send_windowless(Nanos now, uint64_t payload_bytes);
  void enqueue_segments(Nanos now, uint64_t id, uint64_t payload_bytes);
  uint64_t append_segments(uint64_t payload_bytes);  // to unsent_; returns the segment count
  void restart_if_idle(Nanos now);
  void pump(Nanos t);
  void start_bulk(Nanos t, uint64_t id, uint64_t payload_bytes, uint64_t rounds);
  void refill_bulk(Nanos t);
  void bulk_tail(Nanos t);
  double steady_window() const;  // W, segments
  void deliver_ready(Nanos t);
  void on_bulk_done(Nanos t, uint64_t id);
  Nanos ack_delay() const;
  void reset();
  void rtt_sample(Nanos m);
  void try_send(Nanos t, bool force_one);
  void transmit(Nanos t, uint64_t seg, uint32_t frame, uint32_t attempt);
  void on_arrive(Nanos t, uint64_t tx, uint64_t seg);
  void on_ack_frame(Nanos t, uint64_t ack_id);
  void on_ack(Nanos t, uint64_t tx);
  void on_timeout(Nanos t, uint64_t tx);
  void mark_lost(uint64_t tx, bool enter_recovery, Nanos t);
  void restart_after_idle(Nanos idle);
  void receive_window_update(Nanos at, bool advanced);
  void fail_all(Nanos t);
  bool cwnd_limited() const;
  Nanos backed_off_rto(uint32_t attempt) const;
  void push(Nanos at, Kind k, uint64_t a, uint64_t b = 0) { q_->push(at, this, (gen_ << 2) | k, a, b); }

  LinkModel& link_;
  LinkModel* reverse_;
  SegmentConfig seg_;
  EventQueue own_q_;
  EventQueue* q_;
  Nanos last_delivery_{0};

  // --- tcp mode ---
  struct Tx {
    uint64_t seg = 0;
    uint32_t frame = 0;
    Nanos sent{0};
    uint32_t attempt = 1;
    bool lost = false;          // dropped or cut: no ACK will come
    uint32_t acked_after = 0;   // later transmissions ACKed since (toward dupthresh)
    Nanos ack_path{0};          // the path of the ACK that let it go (its echoed timestamp's age at send)
  };
  struct Rtx {
    uint64_t seg;
    uint32_t frame;
    uint32_t attempt;
  };
  struct Msg {
    uint64_t id = 0;
    uint64_t first_seg = 0, end_seg = 0;
    MessageVerdict mv;
    std::vector<bool> released;  // per segment: a transmission of it is on its way (not lost)
    uint64_t unreleased = 0;
    Nanos last_release{0};       // the latest of their releases
    bool returned = false;       // send() returned its verdict already
  };
  struct AckFrame {
    std::vector<uint64_t> txs;  // transmissions received since the last ACK frame that got through
    uint64_t wnd_end;           // rcv_nxt + advertised window, segments
    Nanos sent_at;              // when the receiver sent it (its timestamp, TSval)
  };
  enum class State : uint8_t { kOpen, kRecovery, kLoss };

  std::unique_ptr<CongestionControl> cc_;
  TcpWindow w_;
  State state_ = State::kOpen;
  uint64_t recover_seg_ = 0;            // recovery ends when every segment <= it is ACKed
  Nanos srtt_{0}, rttvar_{0}, min_rtt_{0}, rto_{0}, latest_rtt_{0};
  std::map<uint64_t, Tx> out_;          // in flight, by transmission number
  std::set<uint64_t> lost_in_flight_;   // of out_: lost, not yet detected
  std::set<uint64_t> unacked_segs_;
  std::deque<uint32_t> unsent_;         // frames of segments next_seg_, next_seg_ + 1, ...
  std::deque<Rtx> rtx_;
  uint64_t next_tx_ = 0, next_seg_ = 0;
  uint32_t gen_ = 0;                    // events of an earlier incarnation (before a reset) are ignored
  Nanos last_sent_{0};
  bool sent_any_ = false;
  // Linux tcp_cwnd_validate state
  bool is_cwnd_limited_ = false;
  uint32_t max_packets_out_ = 0;
  uint64_t cwnd_usage_tx_ = 0;
  // messages not yet delivered, in stream order
  std::deque<Msg> msgs_;
  uint64_t next_msg_id_ = 0;
  std::map<uint64_t, MessageVerdict> settled_;  // without on_done_: for send()
  Nanos last_returned_{0};              // latest delivery send() returned
  DoneFn on_done_;
  bool failed_ = false;
  TcpStats stats_;
  // the receiver
  RcvState rcv_;
  std::set<uint64_t> rcv_ooo_;          // segments received above rcv_nxt
  Nanos rcv_rtt_{0};                    // the receiver's RTT estimate (tp->rcv_rtt_est)
  Nanos ack_path_{0};                   // transmit(): the ACK being processed (else the reverse delay)
  std::vector<uint64_t> ack_pending_;   // transmissions received, not yet told by an ACK that got through
  std::map<uint64_t, AckFrame> acks_;   // ACK frames on the way, by id
  uint64_t next_ack_id_ = 0;
  uint64_t snd_wnd_end_ = 0;            // sender's view: rcv_nxt + window of the latest ACK, segments
  // bulk transfers (the fluid model)
  struct Deferred {
    uint64_t id;
    uint64_t bytes;
    uint64_t rounds;
  };
  std::deque<Deferred> deferred_;       // messages behind a bulk transfer, in stream order
  struct Bulk {
    uint64_t id = 0;
    uint64_t remaining = 0;             // payload bytes neither segmented nor in the tail yet
    uint64_t head_bytes = 0;            // payload bytes sent segment by segment
    uint64_t bytes = 0;                 // the whole message's payload bytes
    uint64_t rounds = 1;                // dependent parts (enqueue); the tail keeps its share
    bool tail_started = false;          // remaining went to the fluid tail (or there was none)
    bool tail_ok = true;
    Nanos tail_release{0};              // the tail's last frame arrives (0: no tail)
    uint64_t ack_segs = 0;              // the tail's segments, whose ACKs the reverse direction owes
  };
  std::optional<Bulk> bulk_;            // the bulk transfer in progress
};

}  // namespace geotb::emu
