#include "emulator/inproc/fabric.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace geotb::emu {

Fabric::Fabric(const FabricConfig& cfg, const Clock& clock, VirtualScheduler& sched) : Fabric(cfg, clock) {
  sched_ = &sched;
  sched_->set_network(&network_);
}

Fabric::~Fabric() {
  if (sched_) sched_->set_network(nullptr);
}

std::optional<Nanos> Fabric::Network::next_event() {
  std::lock_guard<std::mutex> lk(f_.mu_);
  if (f_.queue_.empty()) return std::nullopt;
  return f_.queue_.next_time();
}

bool Fabric::Network::run_next() {
  std::lock_guard<std::mutex> lk(f_.mu_);
  f_.delivered_ = false;
  f_.queue_.run_next();
  return f_.delivered_;
}

Fabric::Fabric(const FabricConfig& cfg, const Clock& clock) : cfg_(cfg), clock_(clock) {
  if (cfg_.num_sites < 1) throw std::invalid_argument("fabric: num_sites must be >= 1");
  for (size_t e = 0; e < cfg_.site_of.size(); ++e) {
    if (cfg_.site_of[e] < 0 || cfg_.site_of[e] >= cfg_.num_sites) {
      std::ostringstream os;
      os << "fabric: site_of[" << e << "] = " << cfg_.site_of[e] << " outside [0, " << cfg_.num_sites << ")";
      throw std::invalid_argument(os.str());
    }
  }
  // One random stream per link direction, numbered in a fixed order so runs repeat.
  uint64_t stream = 0;
  for (const DirectedLink& l : cfg_.wan) {
    if (l.from == l.to || l.from < 0 || l.to < 0 || l.from >= cfg_.num_sites || l.to >= cfg_.num_sites)
      throw std::invalid_argument("fabric: WAN link from site " + std::to_string(l.from) + " to site " +
                                  std::to_string(l.to) + " is not between two distinct sites");
    wan_links_[{l.from, l.to}] = std::make_unique<LinkModel>(l.config, RandomStream(cfg_.seed, stream++));
  }
  for (size_t e = 0; e < cfg_.site_of.size(); ++e) boxes_.push_back(std::make_unique<Mailbox>());
  dead_.assign(cfg_.site_of.size(), false);
  dead_at_.assign(cfg_.site_of.size(), Nanos{0});
  alarm_.assign(cfg_.site_of.size(), std::nullopt);
  alarm_all_.assign(cfg_.site_of.size(), true);
  takeover_.resize(cfg_.site_of.size());
}

LinkModel& Fabric::direction(int src_site, int dst_site, int src, int dst) {
  if (src_site != dst_site) {
    auto it = wan_links_.find({src_site, dst_site});
    if (it == wan_links_.end())
      throw FabricError("fabric: no WAN link from site " + std::to_string(src_site) + " to site " +
                        std::to_string(dst_site));
    return *it->second;
  }
  auto& l = lan_links_[{src, dst}];
  if (!l) {
    // LAN streams come after every WAN stream; numbered by endpoint pair.
    const uint64_t stream = cfg_.wan.size() + static_cast<uint64_t>(src) * cfg_.site_of.size() + dst;
    l = std::make_unique<LinkModel>(cfg_.lan, RandomStream(cfg_.seed, stream));
  }
  return *l;
}

LinkModel& Fabric::control(int src_site, int dst_site) {
  auto& l = ctl_links_[{src_site, dst_site}];
  if (!l) {
    // The data link's configuration and pending changes; random streams after the LAN's.
    const uint64_t P = cfg_.site_of.size();
    const uint64_t stream = cfg_.wan.size() + P * P + static_cast<uint64_t>(src_site) * cfg_.num_sites + dst_site;
    if (src_site == dst_site) {
      l = std::make_unique<LinkModel>(cfg_.lan, RandomStream(cfg_.seed, stream));
    } else {
      auto it = wan_links_.find({src_site, dst_site});
      if (it == wan_links_.end())
        throw FabricError("fabric: no WAN link from site " + std::to_string(src_site) + " to site " +
                          std::to_string(dst_site));
      l = std::make_unique<LinkModel>(it->second->config(), RandomStream(cfg_.seed, stream));
      for (const LinkChange& c : ctl_changes_[{src_site, dst_site}]) l->schedule(c);
    }
  }
  return *l;
}

void Fabric::send_datagram(int src, int dst, uint64_t tag, std::vector<uint8_t> payload) {
  if (src < 0 || dst < 0 || src >= size() || dst >= size() || src == dst)
    throw FabricError("fabric: bad endpoints " + std::to_string(src) + " -> " + std::to_string(dst));
  auto deliver = [&](Nanos now) {
    if (closed_ || dead_[static_cast<size_t>(src)] || dead_[static_cast<size_t>(dst)]) return;
    const int sa = site_of(src), sb = site_of(dst);
    constexpr uint32_t kIpUdp = 28;
    const Verdict v = control(sa, sb).offer(now, static_cast<uint32_t>(payload.size()) + kIpUdp);
    TrafficStats& st = stats_[{sa, sb}];
    st.messages += 1;
    st.payload_bytes += payload.size();
    st.wire_bytes += payload.size() + kIpUdp + 38;  // + Ethernet header, FCS, preamble, gap
    st.segments += 1;
    if (v.fate != Fate::kDelivered) return;
    Mailbox& box = *boxes_[static_cast<size_t>(dst)];
    auto p = std::make_shared<Pending>();  // a datagram is settled when sent: its fate is the link's verdict
    p->settled = true;
    p->deliver_at = v.release;
    p->payload = std::move(payload);
    box.q[{src, tag}].push_back(std::move(p));
    box.cv.notify_all();
    notify_endpoint(dst);  // under its lock: act()
  };
  act_now(deliver);
}

void Fabric::act_now(const std::function<void(Nanos)>& fn) {
  if (!sched_) {
    std::lock_guard<std::mutex> lk(mu_);
    const Nanos now = clock_.now();
    queue_.run_until(now);
    fn(now);
    return;
  }
  const VirtualScheduler::ActorId me = sched_->current();
  if (me < 0) throw FabricError("fabric: send from a thread that is no actor of the virtual-time scheduler");
  try {
    sched_->act(me, [&](Nanos t) {
      std::lock_guard<std::mutex> lk(mu_);
      fn(t);
    });
  } catch (const SchedulerAborted&) {
    // closed after a failure elsewhere: later sends are dropped, as in real-time mode
  }
}

void Fabric::send(int src, int dst, uint64_t tag, std::vector<uint8_t> payload, std::optional<uint64_t> network_bytes,
                  uint64_t rounds) {
  if (src < 0 || dst < 0 || src >= size() || dst >= size() || src == dst)
    throw FabricError("fabric: bad endpoints " + std::to_string(src) + " -> " + std::to_string(dst));
  const uint64_t bytes = network_bytes.value_or(payload.size());
  act_now([&](Nanos t) { send_at(t, src, dst, tag, payload, bytes, rounds); });
}

Fabric::Conn& Fabric::connection(int src, int dst) {
  Conn& c = conns_[{src, dst}];
  if (c.link) return c;
  const int sa = site_of(src), sb = site_of(dst);
  // ACK frames go back on the reverse direction, behind its data.
  LinkModel* reverse = nullptr;
  if (sa == sb) {
    reverse = &direction(sb, sa, dst, src);
  } else if (auto it = wan_links_.find({sb, sa}); it != wan_links_.end()) {
    reverse = it->second.get();
  }
  c.link = std::make_unique<MessageLink>(direction(sa, sb, src, dst), cfg_.segments, reverse, &queue_);
  c.link->set_on_done([this, src, dst](uint64_t id, const MessageVerdict& mv) { settle(src, dst, id, mv); });
  return c;
}

void Fabric::settle(int src, int dst, uint64_t id, const MessageVerdict& mv) {
  Conn& c = conns_.at({src, dst});
  auto it = c.inflight.find(id);
  if (it == c.inflight.end()) return;
  const std::shared_ptr<Pending> p = it->second;
  c.inflight.erase(it);
  const int sa = site_of(src), sb = site_of(dst);
  TrafficStats& st = stats_[{sa, sb}];
  st.wire_bytes += mv.wire_bytes;
  st.retransmissions += mv.transmissions - std::min(mv.transmissions, mv.segments);
  p->settled = true;
  p->deliver_at = mv.deliver_at;
  if (p->notice_dead >= 0 && mv.delivered) {
    takeovers_.notices.emplace_back(dst, src);
    queue_.push(mv.deliver_at, &takeovers_, 0, takeovers_.notices.size() - 1, static_cast<uint64_t>(p->notice_dead));
  }
  if (!mv.delivered) {
    st.failed_messages += 1;
    p->failed = true;
    p->error = "fabric: message " + std::to_string(src) + " -> " + std::to_string(dst) +
               " undeliverable: link from site " + std::to_string(sa) + " to " + std::to_string(sb) +
               " stayed down through every retransmission";
    c.error = p->error;
  }
  delivered_ = true;
  boxes_[static_cast<size_t>(dst)]->cv.notify_all();
  notify_endpoint(dst);  // under its lock: act() or the network
}

void Fabric::send_at(Nanos now, int src, int dst, uint64_t tag, std::vector<uint8_t>& payload, uint64_t size,
                     uint64_t rounds) {
  if (closed_) return;
  TakeoverTable<Retained>& table = takeover_[static_cast<size_t>(src)];
  dst = table.address_of(dst);  // a taken-over address
  if (retain_n_ > 0 && tag != kTakeoverTag && site_of(src) != site_of(dst))
    table.sent(dst, {tag, payload, size, rounds}, retain_n_);
  if (dead_[static_cast<size_t>(src)] || dead_[static_cast<size_t>(dst)]) return;  // a killed worker's sockets
  Conn& conn = connection(src, dst);
  if (!conn.error.empty()) {
    const std::string e = conn.error;
    conn.error.clear();
    throw FabricError(e);
  }
  const int sa = site_of(src), sb = site_of(dst);
  TrafficStats& st = stats_[{sa, sb}];
  st.messages += 1;
  st.payload_bytes += size;
  auto p = std::make_shared<Pending>();
  p->payload = std::move(payload);
  Mailbox& box = *boxes_[static_cast<size_t>(dst)];
  if (tag == kTakeoverTag) {
    // Handled by the receiving endpoint's stack at its delivery (settle -> on_takeover), not
    // received by anyone: kept out of the mailbox.
    p->notice_dead = decode_takeover_notice(p->payload).value_or(-1);
  } else {
    box.q[{src, tag}].push_back(p);
  }
  if (cfg_.segments.tcp) {
    const uint64_t id = conn.link->next_message_id();
    conn.inflight.emplace(id, p);
    const uint64_t got = conn.link->enqueue(now, size, rounds);
    if (got != id) throw std::logic_error("fabric: message ids out of step");
    st.segments += std::max<uint64_t>(1, (size + cfg_.segments.mss_bytes - 1) / cfg_.segments.mss_bytes);
  } else {
    // The window-less model settles the message now.
    const MessageVerdict mv = conn.link->send(now, size);
    st.segments += mv.segments;
    conn.inflight.emplace(0, p);
    settle(src, dst, 0, mv);
    if (!conn.error.empty()) {
      // As before the event model: the send itself reports the failure.
      if (p->notice_dead < 0) {
        auto& fifo = box.q[{src, tag}];
        fifo.pop_back();
        if (fifo.empty()) box.q.erase({src, tag});
      }
      const std::string e = conn.error;
      conn.error.clear();
      throw FabricError(e);
    }
  }
  box.cv.notify_all();
}

Fabric::Mailbox::Queues::iterator Fabric::ready_queue(int dst, int src, uint64_t tag) {
  Mailbox& box = *boxes_[static_cast<size_t>(dst)];
  auto settled = [&](int from) {
    auto it = box.q.find({from, tag});
    return it == box.q.end() || it->second.empty() || !it->second.front()->settled ? box.q.end() : it;
  };
  auto q = settled(src);
  if (const std::optional<int> successor = takeover_[static_cast<size_t>(dst)].successor_of(src))
    if (auto s = settled(*successor);
        s != box.q.end() && (q == box.q.end() || s->second.front()->deliver_at < q->second.front()->deliver_at))
      q = s;
  return q;
}

std::optional<std::vector<uint8_t>> Fabric::take(int dst, int src, uint64_t tag) {
  Mailbox& box = *boxes_[static_cast<size_t>(dst)];
  const auto q = ready_queue(dst, src, tag);
  if (q == box.q.end()) return std::nullopt;
  const std::shared_ptr<Pending> p = q->second.front();
  q->second.pop_front();
  if (q->second.empty()) box.q.erase(q);
  if (p->failed) throw FabricError(p->error);
  return std::move(p->payload);
}

std::optional<std::vector<uint8_t>> Fabric::recv_virtual(int dst, int src, uint64_t tag, std::optional<Nanos> timeout) {
  const VirtualScheduler::ActorId me = sched_->current();
  if (me < 0)
    throw FabricError(std::string("fabric: ") + (timeout ? "recv" : "poll") +
                      " from a thread that is no actor of the virtual-time scheduler");
  // A poll (no timeout) takes only what is there by now: a later event is for a later call, and
  // waiting for it would move the caller's clock.
  const Nanos deadline = sched_->now(me) + timeout.value_or(Nanos{0});
  // Runs under the scheduler's lock; messages are only added inside act() and settled by the
  // network the scheduler runs, so it sees every change.
  // The lambda captures two pointers, so std::function holds it without allocating (one
  // receive per message: the 16 bytes libstdc++ stores in place).
  const struct {
    int dst, src;
    uint64_t tag;
    bool poll;
    Nanos deadline;
  } w{dst, src, tag, !timeout, deadline};
  const std::function<std::optional<Nanos>()> ready = [this, &w]() -> std::optional<Nanos> {
    std::lock_guard<std::mutex> lk(mu_);
    std::optional<Nanos> at;
    if (interrupted(w.dst, w.src)) {
      at = alarm_[static_cast<size_t>(w.dst)];
    } else if (dead_[static_cast<size_t>(w.dst)]) {
      at = dead_at_[static_cast<size_t>(w.dst)];  // its sockets are gone
    } else if (const auto q = ready_queue(w.dst, w.src, w.tag); q != boxes_[static_cast<size_t>(w.dst)]->q.end()) {
      at = q->second.front()->deliver_at;
    }
    if (w.poll && at && *at > w.deadline) return std::nullopt;
    return at;
  };
  bool got = false;
  try {
    // Keyed by the endpoint: re-checked only when something that ready() reads changes for it
    // (settle, kill_endpoint, raise_alarm, on_takeover notify).
    const char* const what = timeout ? "recv at rank {} from rank {} tag {}" : "poll at rank {} from rank {} tag {}";
    got = sched_->wait(me, ready, deadline, WaitWhat(what, dst, src, tag), static_cast<VirtualScheduler::WaitKey>(dst));
  } catch (const SchedulerAborted&) {
    return std::nullopt;
  } catch (const DeadlockError& e) {
    throw FabricError(e.what());
  }
  std::lock_guard<std::mutex> lk(mu_);
  if (!got || closed_ || dead_[static_cast<size_t>(dst)]) return std::nullopt;
  if (interrupted(dst, src))
    throw FabricInterrupted("recv at rank " + std::to_string(dst) + " from rank " + std::to_string(src) +
                            " interrupted: a peer was declared dead");
  if (!timeout)
    if (const auto q = ready_queue(dst, src, tag);
        q == boxes_[static_cast<size_t>(dst)]->q.end() || q->second.front()->deliver_at > deadline)
      return std::nullopt;
  return take(dst, src, tag);
}

std::optional<std::vector<uint8_t>> Fabric::poll(int dst, int src, uint64_t tag) {
  if (dst < 0 || dst >= size()) throw FabricError("fabric: bad endpoint " + std::to_string(dst));
  if (!sched_) throw FabricError("fabric: poll needs the virtual-time mode");
  return recv_virtual(dst, src, tag, std::nullopt);
}

void Fabric::notify_endpoint(int dst) {
  if (sched_) sched_->notify(static_cast<VirtualScheduler::WaitKey>(dst));
}

std::optional<Fabric::Received> Fabric::recv_any(int dst, uint64_t tag, Nanos deadline,
                                                 const std::function<bool()>& stop) {
  if (!sched_) throw FabricError("fabric: recv_any needs the virtual-time mode");
  const VirtualScheduler::ActorId me = sched_->current();
  if (me < 0) throw FabricError("fabric: recv_any from a thread that is no actor of the virtual-time scheduler");
  const Mailbox& box = *boxes_.at(static_cast<size_t>(dst));
  // The earliest delivery of `tag` from any source (mu_ held).
  auto earliest = [&]() -> std::optional<std::pair<Nanos, int>> {
    std::optional<std::pair<Nanos, int>> best;
    for (const auto& [k, q] : box.q)
      if (k.second == tag && !q.empty() && q.front()->settled && (!best || q.front()->deliver_at < best->first))
        best = std::make_pair(q.front()->deliver_at, k.first);
    return best;
  };
  bool stopped = false;
  const std::function<std::optional<Nanos>()> ready = [&]() -> std::optional<Nanos> {
    if (stop()) return stopped = true, Nanos{0};  // woken at its own instant
    std::lock_guard<std::mutex> lk(mu_);
    // Only a delivery by the deadline: one after it is for a later call (the caller acts at the
    // deadline first, whatever the order in which the host ran the senders).
    if (auto e = earliest(); e && e->first <= deadline) return e->first;
    return std::nullopt;
  };
  bool got = false;
  try {
    // Keyed by the endpoint, like recv: a message to it settling notifies it, and so does the
    // monitor when it sets what stop() reads (notify_endpoint). Unkeyed, every re-evaluation of
    // the scheduler checked every monitor: readiness checks grew as workers x events.
    got = sched_->wait(me, ready, deadline, "heartbeats at rank " + std::to_string(dst),
                       static_cast<VirtualScheduler::WaitKey>(dst));
  } catch (const SchedulerAborted&) {
    return std::nullopt;
  } catch (const DeadlockError& e) {
    throw FabricError(e.what());
  }
  if (!got || stopped) return std::nullopt;
  std::lock_guard<std::mutex> lk(mu_);
  if (closed_) return std::nullopt;
  auto e = earliest();
  if (!e || e->first > deadline) return std::nullopt;
  Received r;
  r.src = e->second;
  r.delivered_at = e->first;
  r.payload = *take(dst, r.src, tag);
  return r;
}

// Virtual time: at the calling actor's instant, in order with every other actor's sends (act), so
// that a message sent before the death in virtual time is not dropped because the host ran the
// death first.
void Fabric::kill_endpoint(int endpoint) {
  auto fn = [&](Nanos t) {
    std::lock_guard<std::mutex> lk(mu_);
    dead_.at(static_cast<size_t>(endpoint)) = true;
    dead_at_.at(static_cast<size_t>(endpoint)) = t;
    boxes_[static_cast<size_t>(endpoint)]->q.clear();
    boxes_[static_cast<size_t>(endpoint)]->cv.notify_all();
    notify_endpoint(endpoint);
  };
  if (sched_) sched_->act(sched_->current(), fn); else fn(clock_.now());
}

void Fabric::revive_endpoint(int endpoint) {
  auto fn = [&] {
    std::lock_guard<std::mutex> lk(mu_);
    dead_.at(static_cast<size_t>(endpoint)) = false;
  };
  if (sched_) sched_->act(sched_->current(), [&](Nanos) { fn(); }); else fn();
}

bool Fabric::endpoint_dead(int endpoint) const {
  std::lock_guard<std::mutex> lk(mu_);
  return dead_.at(static_cast<size_t>(endpoint));
}

bool Fabric::interrupted(int dst, int src) const {
  const auto d = static_cast<size_t>(dst);
  return alarm_[d] && (alarm_all_[d] || site_of(src) == site_of(dst));
}

void Fabric::raise_alarm(int endpoint, Nanos at, bool all) {
  auto fn = [&] {
    std::lock_guard<std::mutex> lk(mu_);
    auto& a = alarm_.at(static_cast<size_t>(endpoint));
    if (!a) {
      a = at;
      alarm_all_[static_cast<size_t>(endpoint)] = all;
    } else if (all) {
      alarm_all_[static_cast<size_t>(endpoint)] = true;
    }
    notify_endpoint(endpoint);
  };
  if (sched_) sched_->update(fn); else fn();
}

void Fabric::clear_alarm(int endpoint) {
  auto fn = [&] {
    std::lock_guard<std::mutex> lk(mu_);
    alarm_.at(static_cast<size_t>(endpoint)).reset();
  };
  if (sched_) sched_->update(fn); else fn();
}

bool Fabric::alarmed(int endpoint) const {
  std::lock_guard<std::mutex> lk(mu_);
  return alarm_.at(static_cast<size_t>(endpoint)).has_value();
}

std::optional<std::vector<uint8_t>> Fabric::recv(int dst, int src, uint64_t tag, Nanos timeout) {
  if (dst < 0 || dst >= size()) throw FabricError("fabric: bad endpoint " + std::to_string(dst));
  if (sched_) return recv_virtual(dst, src, tag, timeout);
  Mailbox& box = *boxes_[static_cast<size_t>(dst)];
  const auto key = std::make_pair(src, tag);
  std::unique_lock<std::mutex> lk(mu_);
  // 1. Wait (in real time) for the message to be sent.
  ++waiting_receivers_;
  const bool got = box.cv.wait_for(lk, timeout, [&] {
    if (closed_) return true;
    auto it = box.q.find(key);
    return it != box.q.end() && !it->second.empty();
  });
  --waiting_receivers_;
  if (!got || closed_) return std::nullopt;
  // 2. It is in flight: run the network up to now, sleeping until its next event, until it is
  //    settled; then until its delivery instant (the window-less model's may be ahead).
  std::shared_ptr<Pending> p = box.q.find(key)->second.front();
  while (!p->settled) {
    queue_.run_until(clock_.now());
    if (p->settled) break;
    if (closed_) return std::nullopt;
    if (queue_.empty()) throw FabricError("fabric: a message in flight with no network event pending");
    const Nanos next = queue_.next_time();
    lk.unlock();
    clock_.sleep_until(next);
    lk.lock();
  }
  lk.unlock();
  clock_.sleep_until(p->deliver_at);
  lk.lock();
  if (closed_) return std::nullopt;
  return take(dst, src, tag);
}

void Fabric::schedule(int site_a, int site_b, const LinkChange& change, bool both) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = wan_links_.find({site_a, site_b});
  if (it == wan_links_.end())
    throw std::invalid_argument("fabric: no WAN link between sites " + std::to_string(site_a) + " and " +
                                std::to_string(site_b));
  it->second->schedule(change);
  if (both) wan_links_.at({site_b, site_a})->schedule(change);
  // The control queues (datagrams) follow the same timeline, made now or when first used.
  for (auto dir : {std::make_pair(site_a, site_b), std::make_pair(site_b, site_a)}) {
    if (dir.first == site_b && !both) break;
    ctl_changes_[dir].push_back(change);
    if (auto c = ctl_links_.find(dir); c != ctl_links_.end()) c->second->schedule(change);
  }
}

void Fabric::close() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
    for (auto& b : boxes_) b->cv.notify_all();
  }
  // After mu_ is released: the lock order is scheduler, then mu_.
  if (sched_) sched_->abort("fabric closed");
}

bool Fabric::closed() const {
  std::lock_guard<std::mutex> lk(mu_);
  return closed_;
}

int Fabric::waiting_receivers() const {
  std::lock_guard<std::mutex> lk(mu_);
  return waiting_receivers_;
}

TrafficStats Fabric::stats(int site_a, int site_b) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = stats_.find({site_a, site_b});
  return it == stats_.end() ? TrafficStats{} : it->second;
}

TrafficStats Fabric::wan_total() const {
  std::lock_guard<std::mutex> lk(mu_);
  TrafficStats t;
  for (const auto& [k, s] : stats_) {
    if (k.first == k.second) continue;
    t.messages += s.messages;
    t.payload_bytes += s.payload_bytes;
    t.wire_bytes += s.wire_bytes;
    t.segments += s.segments;
    t.retransmissions += s.retransmissions;
    t.failed_messages += s.failed_messages;
  }
  return t;
}

void Fabric::retain_cross_site(size_t last_n) {
  std::lock_guard<std::mutex> lk(mu_);
  retain_n_ = last_n;
}

void Fabric::take_over(int successor, int dead, const std::vector<int>& tell) {
  if (!sched_) throw FabricError("fabric: take_over needs the virtual-time mode");
  if (successor < 0 || dead < 0 || successor >= size() || dead >= size() || site_of(successor) != site_of(dead))
    throw FabricError("fabric: endpoint " + std::to_string(successor) + " cannot take over endpoint " +
                      std::to_string(dead) + " (not of its site)");
  act_now([&](Nanos t) {
    for (int p : tell) {
      if (p == successor || p == dead) continue;
      std::vector<uint8_t> notice = encode_takeover_notice(dead);
      send_at(t, successor, p, kTakeoverTag, notice, notice.size());
    }
  });
}

int Fabric::address_of(int p, int endpoint) const {
  std::lock_guard<std::mutex> lk(mu_);
  return takeover_.at(static_cast<size_t>(p)).address_of(endpoint);
}

void Fabric::Takeovers::on_event(Nanos at, uint32_t, uint64_t a, uint64_t b) {
  const auto [dst, successor] = notices.at(a);
  f_.on_takeover(at, dst, successor, static_cast<int>(b));
}

void Fabric::on_takeover(Nanos at, int dst, int successor, int dead) {
  // What dst had sent to the dead (and may not have been received) goes to its successor now.
  std::deque<Retained> kept = takeover_[static_cast<size_t>(dst)].taken_over(dead, successor);
  for (auto& [tag, bytes, size, rounds] : kept) {
    std::vector<uint8_t> copy = bytes;
    send_at(at, dst, successor, tag, copy, size, rounds);
  }
  delivered_ = true;  // recvs at dst may be ready now
  boxes_[static_cast<size_t>(dst)]->cv.notify_all();
  notify_endpoint(dst);
}

}  // namespace geotb::emu
