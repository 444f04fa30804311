// In-process network fabric: endpoints (ranks) grouped into sites (data centers), every message
// between two endpoints carried by the link model between their sites and delivered (on the
// injected clock, or in virtual time) when the model says.
//
//  * inside a site, each ordered endpoint pair has its own LAN link (a non-blocking switch);
//  * between sites a and b, all endpoint pairs share one WAN link per direction, as they share
//    the real WAN; each endpoint pair is its own TCP connection (MessageLink: congestion window,
//    in-order delivery) whose ACK frames go on the reverse direction's link, queued behind that
//    direction's data;
//  * the fabric is a discrete-event simulation of all its links: one EventQueue (segment
//    arrivals, ACK frames' arrivals, retransmission timers) for every connection, run in (time,
//    order) order, so every link sees its offers (data and ACK frames) in time order. A message
//    is receivable once the queue has run its last segment's in-order arrival.
//    - virtual time: the scheduler runs the queue (VirtualNetwork) up to the smallest bound of
//      its actors, between their actions (virtual_time.h);
//    - real time: send() and recv() run it up to clock.now(); a recv waiting for a message in
//      flight sleeps until the next event and runs the queue again.
//    The window-less model (SegmentConfig::tcp = false) settles a message when it is sent.
//  * a message the model cannot deliver (a segment lost max_attempts times: the link stayed
//    down) fails its connection, as a TCP connection times out: every message then in flight on
//    it is undeliverable, recv() of one throws FabricError, and so does the sender's next send()
//    on that connection (the connection then starts afresh).
// Thread-safe: any endpoint may send and receive from its own thread.
#pragma once

#include <boost/container/flat_map.hpp>
#include <boost/container/small_vector.hpp>

#include <condition_variable>
#include <functional>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/takeover.h"
#include "emulator/inproc/event_queue.h"
#include "emulator/inproc/message_link.h"
#include "common/clock.h"
#include "common/link_config.h"
#include "emulator/link/link_model.h"
#include "emulator/inproc/virtual_time.h"

namespace geotb::emu {

struct FabricConfig {
  std::vector<int> site_of;            ///< endpoint -> site index, sites numbered 0..num_sites-1
  int num_sites = 1;
  LinkConfig lan;                      ///< every intra-site endpoint pair, each direction
  /// Between sites: one per direction of every site pair that talks; the i-th link draws
  /// random stream i of `seed` (LAN links the streams after them).
  std::vector<DirectedLink> wan;
  SegmentConfig segments;
  uint64_t seed = 0;
};

/// Per ordered site pair counters (a == b: LAN traffic inside the site).
struct TrafficStats {
  uint64_t messages = 0;
  uint64_t payload_bytes = 0;
  uint64_t wire_bytes = 0;
  uint64_t segments = 0;
  uint64_t retransmissions = 0;
  uint64_t failed_messages = 0;
};

class FabricError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A recv interrupted by raise_alarm(): its endpoint's heartbeat monitor declared a peer dead.
class FabricInterrupted : public FabricError {
 public:
  using FabricError::FabricError;
};

class Fabric {
 public:
  /// Real-time mode: messages are delivered when `clock` (steady, or a fake one in tests) passes
  /// the model's delivery instant.
  Fabric(const FabricConfig& cfg, const Clock& clock);
  /// Virtual-time mode: every endpoint is used by threads bound to actors of `sched`; a send is
  /// offered to the link model at the sending actor's virtual time, in virtual-time order across
  /// actors (VirtualScheduler::act), and a recv advances the receiving actor to the delivery
  /// instant (VirtualScheduler::wait). recv's timeout is then virtual time too. `clock` must be a
  /// VirtualClock of `sched`.
  Fabric(const FabricConfig& cfg, const Clock& clock, VirtualScheduler& sched);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int size() const { return static_cast<int>(cfg_.site_of.size()); }
  int site_of(int endpoint) const { return cfg_.site_of.at(static_cast<size_t>(endpoint)); }

  /// Non-blocking: hands `payload` to the connection src->dst; it becomes receivable when the
  /// link model delivers it. Throws FabricError if an earlier message on this connection was
  /// undeliverable (link down past every retransmission; the window-less model: this one) — the
  /// caller's "peer unreachable".
  /// `network_bytes`: the message's size on the network, what the link model carries and the traffic
  /// counts; default the payload's. A represented model's tensor (docs/guide/represented.md)
  /// is larger than the payload that stands for it. `rounds` > 1: the message stands for that
  /// many dependent transfers (MessageLink::enqueue; the window-less model ignores it).
  void send(int src, int dst, uint64_t tag, std::vector<uint8_t> payload,
            std::optional<uint64_t> network_bytes = std::nullopt, uint64_t rounds = 1);

  /// Blocks until the message (src -> dst, tag) has been delivered, then returns it. Messages
  /// with the same (src, dst, tag) are received in send order. Returns nullopt after `timeout`
  /// (of real waiting for a message that was never sent; virtual time in virtual-time mode) or
  /// after close(). Throws FabricError if the message is undeliverable, and (virtual-time mode)
  /// when no actor can make progress.
  std::optional<std::vector<uint8_t>> recv(int dst, int src, uint64_t tag, Nanos timeout);

  /// Virtual-time mode only: the message (src -> dst, tag) if it has been delivered by the calling
  /// actor's now, else nullopt; never advances the actor. Exact, whatever order the host ran the
  /// senders in: a wait whose deadline is now, resolved once no actor or network event can still
  /// act before it. Throws FabricError outside virtual time, for an undeliverable message, or when
  /// no actor can make progress.
  std::optional<std::vector<uint8_t>> poll(int dst, int src, uint64_t tag);

  /// Schedule a change on the WAN link a->b (and b->a if `both`).
  void schedule(int site_a, int site_b, const LinkChange& change, bool both = true);

  /// Wakes every blocked recv with nullopt; later sends are dropped.
  void close();
  bool closed() const;

  /// recv() calls blocked right now waiting for a message (not those sleeping until a delivery
  /// instant). A count read here is exact: a receiver holds the fabric's lock from the moment it
  /// counts itself until it sleeps on its mailbox. For tests that must know a receiver is blocked.
  int waiting_receivers() const;

  // ---- Node faults (engine/faults/). Virtual-time mode only. ----
  /// `endpoint` is dead (a killed worker): messages to it and from it are dropped from now on,
  /// those waiting in its mailbox discarded, and its own recvs (a dead worker's background
  /// threads) end with nullopt. revive_endpoint() undoes it (a restart). Both
  /// take effect at the calling actor's virtual instant (call them from an actor's thread).
  void kill_endpoint(int endpoint);
  void revive_endpoint(int endpoint);
  bool endpoint_dead(int endpoint) const;
  /// Every recv of `endpoint` blocked now, or started before clear_alarm(), ends with
  /// FabricInterrupted at the instant `at` (its heartbeat monitor declared a peer dead): from any
  /// source if `all`, else only from endpoints of its own site (its intra-DC group; a DC leader's
  /// exchange with the other sites goes on).
  void raise_alarm(int endpoint, Nanos at, bool all = true);
  void clear_alarm(int endpoint);
  bool alarmed(int endpoint) const;
  struct Received {
    int src = -1;
    Nanos delivered_at{0};
    std::vector<uint8_t> payload;
  };
  /// Sends one datagram (UDP-like: one frame of payload + 28 bytes of IP/UDP headers, no
  /// retransmission, lost when the link loses it) on the control queue of the link between the
  /// two endpoints' sites: a second queue with the link's rate, delay, jitter, loss and timeline
  /// and its own serializer and random stream, so that a heartbeat does not wait behind the bulk
  /// data's queue (the TCP model settles a connection's retransmissions at their send, which
  /// would hold every later offer of the direction back by an RTO). Counted in the site pair's
  /// traffic. Virtual-time mode: ordered like send(). Dropped to and from a dead endpoint.
  void send_datagram(int src, int dst, uint64_t tag, std::vector<uint8_t> payload);
  /// Waits until a message with `tag` from any source has been delivered to `dst` (the earliest
  /// delivery first), until the virtual instant `deadline` (nullopt), or until stop() is true
  /// (nullopt). Not interrupted by alarms: the heartbeat monitor's receive. The wait is keyed by
  /// `dst` (VirtualScheduler::wait): whoever changes what stop() reads does it inside
  /// VirtualScheduler::update and calls notify_endpoint(dst) there.
  std::optional<Received> recv_any(int dst, uint64_t tag, Nanos deadline, const std::function<bool()>& stop);
  /// Re-checks the keyed waits of endpoint `dst` (recv, recv_any) at the scheduler's next
  /// re-evaluation. Virtual-time mode, under the scheduler's lock (inside update()); else nothing.
  void notify_endpoint(int dst);

  // ---- A DC leader's successor (engine/faults/: a killed leader's address taken over). ----
  /// The tag of a takeover notice: reserved, outside every range a Transport user may take.
  static constexpr uint64_t kTakeoverTag = (uint64_t{1} << 63) + 4;  // (its payload: common/takeover.h)
  /// From now on every endpoint keeps a copy of the last `last_n` messages it sent to each
  /// endpoint of another site, to be sent again to that endpoint's successor (take_over()).
  void retain_cross_site(size_t last_n);
  /// `successor` takes over the address of the dead endpoint `dead` (of its own site) at the
  /// calling actor's instant: it sends every endpoint of `tell` a takeover notice, a message on
  /// their connection like any other (in order with what it sends them after). When the notice
  /// is delivered at endpoint p, p's view changes: its sends to `dead` (and to anyone `dead`
  /// had taken over) go to `successor`, its recvs from them also take `successor`'s messages,
  /// and the messages p retained for `dead` are sent again to `successor` at that instant (a
  /// message `dead` had received is then received twice; the successor takes what it still
  /// needs by tag, and the rest is never received).
  void take_over(int successor, int dead, const std::vector<int>& tell);
  /// Endpoint p's current address for `endpoint` (itself unless a takeover notice named it).
  int address_of(int p, int endpoint) const;

  TrafficStats stats(int site_a, int site_b) const;
  /// All traffic between different sites.
  TrafficStats wan_total() const;

 private:
  struct Pending {
    bool settled = false;       ///< delivered, or failed
    int notice_dead = -1;       ///< a takeover notice: the endpoint its sender takes over
    bool failed = false;
    Nanos deliver_at{0};        ///< settled: the delivery (or failure) instant
    std::string error;          ///< failed
    std::vector<uint8_t> payload;
  };
  /// The messages of one (src, tag), oldest first. Tags are mostly per message, so a FIFO
  /// mostly holds one: it is held in place (a std::deque allocated 576 bytes per new tag).
  class PendingFifo {
   public:
    bool empty() const { return head_ == v_.size(); }
    const std::shared_ptr<Pending>& front() const { return v_[head_]; }
    void push_back(std::shared_ptr<Pending> p) { v_.push_back(std::move(p)); }
    void pop_back() {
      v_.pop_back();
      if (empty()) clear();
    }
    void pop_front() {
      v_[head_++].reset();
      if (empty()) {
        clear();
      } else if (head_ >= 64 && 2 * head_ >= v_.size()) {  // a long-lived FIFO: drop the taken ones
        v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
    }
    void clear() {
      v_.clear();
      head_ = 0;
    }

   private:
    boost::container::small_vector<std::shared_ptr<Pending>, 1> v_;
    size_t head_ = 0;  ///< v_[0, head_) were taken
  };
  struct Mailbox {
    // A sorted vector: an endpoint holds a few FIFOs at a time (about 2 on average at 4 x 64), each
    // added and removed per message, and a node-based map allocated and freed one per message.
    using Queues = boost::container::flat_map<std::pair<int, uint64_t>, PendingFifo>;
    Queues q;  // (src, tag) -> FIFO
    std::condition_variable cv;
  };
  struct Conn {
    std::unique_ptr<MessageLink> link;
    boost::container::flat_map<uint64_t, std::shared_ptr<Pending>> inflight;  // by message id (a few at a time)
    std::string error;          ///< an undeliverable message: the next send() throws it
  };
  /// The fabric's event queue as the virtual-time scheduler drives it.
  class Network final : public VirtualNetwork {
   public:
    explicit Network(Fabric& f) : f_(f) {}
    std::optional<Nanos> next_event() override;
    bool run_next() override;

   private:
    Fabric& f_;
  };
  LinkModel& direction(int src_site, int dst_site, int src, int dst);
  Conn& connection(int src, int dst);                                                      // mu_ held
  void settle(int src, int dst, uint64_t id, const MessageVerdict& mv);                   // mu_ held
  /// Runs fn(now) under mu_ at the caller's instant: in virtual time through the scheduler's
  /// act() (ordered across actors), on the real clock after running the network up to now.
  void act_now(const std::function<void(Nanos)>& fn);
  void send_at(Nanos now, int src, int dst, uint64_t tag, std::vector<uint8_t>& payload, uint64_t size,
               uint64_t rounds = 1);  // mu_ held
  std::optional<std::vector<uint8_t>> take(int dst, int src, uint64_t tag);               // mu_ held
  // recv() in virtual time; no timeout: poll().
  std::optional<std::vector<uint8_t>> recv_virtual(int dst, int src, uint64_t tag, std::optional<Nanos> timeout);
  bool interrupted(int dst, int src) const;  // mu_ held
  /// The FIFO a recv at dst from src takes its next message from: src's, or its successor's
  /// (the earlier settled front); dst's q.end() if neither has a settled message. mu_ held.
  Mailbox::Queues::iterator ready_queue(int dst, int src, uint64_t tag);
  /// A takeover notice delivered at `at` (queue event): dst now sees `successor` for `dead`.
  void on_takeover(Nanos at, int dst, int successor, int dead);  // mu_ held
  class Takeovers final : public EventQueue::Handler {
   public:
    explicit Takeovers(Fabric& f) : f_(f) {}
    void on_event(Nanos at, uint32_t, uint64_t a, uint64_t b) override;
    std::vector<std::pair<int, int>> notices;  // a: index -> (dst, successor); b: the dead endpoint

   private:
    Fabric& f_;
  };

  FabricConfig cfg_;
  const Clock& clock_;
  VirtualScheduler* sched_ = nullptr;  ///< virtual-time mode; lock order: scheduler, then mu_
  mutable std::mutex mu_;
  bool closed_ = false;
  bool delivered_ = false;             ///< a message was settled since the scheduler last asked
  int waiting_receivers_ = 0;
  EventQueue queue_;
  Network network_{*this};
  std::vector<bool> dead_;                   // per endpoint: killed (node faults)
  std::vector<Nanos> dead_at_;               // per endpoint: when (its own blocked recvs end then)
  std::vector<std::optional<Nanos>> alarm_;  // per endpoint: a pending alarm's instant
  std::vector<bool> alarm_all_;              // per endpoint: the alarm interrupts recvs from every site
  std::map<std::pair<int, int>, std::unique_ptr<LinkModel>> wan_links_;  // ordered site pair
  std::map<std::pair<int, int>, std::unique_ptr<LinkModel>> lan_links_;  // ordered endpoint pair
  std::map<std::pair<int, int>, std::unique_ptr<LinkModel>> ctl_links_;  // datagrams: ordered site pair
  LinkModel& control(int src_site, int dst_site);                        // mu_ held
  std::map<std::pair<int, int>, std::vector<LinkChange>> ctl_changes_;   // the WAN timeline, per direction
  std::map<std::pair<int, int>, Conn> conns_;                            // ordered endpoint pair
  std::vector<std::unique_ptr<Mailbox>> boxes_;
  std::map<std::pair<int, int>, TrafficStats> stats_;
  // Successors (take_over, common/takeover.h): per endpoint, the addresses it knows were taken
  // over and the messages it retained for another site's endpoints.
  size_t retain_n_ = 0;  // retain_cross_site
  struct Retained {
    uint64_t tag;
    std::vector<uint8_t> payload;
    uint64_t size;
    uint64_t rounds;
  };
  std::vector<TakeoverTable<Retained>> takeover_;
  Takeovers takeovers_{*this};
};

}  // namespace geotb::emu
