#include "engine/faults/rejoin.h"

#include <algorithm>
#include <cstring>

#include "engine/data/fashion_mnist.h"
#include "engine/faults/shrink.h"
#include "engine/result.h"
#include "engine/worker_loop.h"

namespace geotb::engine {

namespace {

void put_u64(std::vector<uint8_t>& b, uint64_t v) {
  const size_t at = b.size();
  b.resize(at + 8);
  std::memcpy(b.data() + at, &v, 8);
}

void put_bytes(std::vector<uint8_t>& b, const void* p, size_t n) {
  put_u64(b, n);
  b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}

/// Reads the message from the front; every read is checked against its length.
struct Reader {
  const std::vector<uint8_t>& b;
  size_t at = 0;
  uint64_t u64() {
    if (b.size() - at < 8) throw RunError("restart: the state handed over is truncated");
    uint64_t v;
    std::memcpy(&v, b.data() + at, 8);
    at += 8;
    return v;
  }
  std::vector<uint8_t> bytes() {
    const uint64_t n = u64();
    if (n > b.size() - at) throw RunError("restart: the state handed over is truncated");
    std::vector<uint8_t> out(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    return out;
  }
};

}  // namespace

// Layout: tag_epoch, group_tags, steps, |members|, |ring|, members, ring (8 bytes each, as
// encode_ints), |state entries|, each (name, bytes), then only if there are words: |words|, each
// word (length, bytes). The embedded mode's message has none (its bytes, and so its modelled
// delivery time, are what they were before the process modes added them).
std::vector<uint8_t> encode_rejoin(const RejoinMessage& m) {
  std::vector<int64_t> head = {static_cast<int64_t>(m.tag_epoch), static_cast<int64_t>(m.group_tags), m.steps,
                               static_cast<int64_t>(m.members.size()), static_cast<int64_t>(m.ring.size())};
  head.insert(head.end(), m.members.begin(), m.members.end());
  head.insert(head.end(), m.ring.begin(), m.ring.end());
  std::vector<uint8_t> b = encode_ints(head);
  put_u64(b, m.state.entries.size());
  for (const auto& e : m.state.entries) {
    put_bytes(b, e.name.data(), e.name.size());
    put_bytes(b, e.bytes.data(), e.bytes.size());
  }
  if (!m.words.empty()) {
    put_u64(b, m.words.size());
    for (const std::string& w : m.words) put_bytes(b, w.data(), w.size());
  }
  return b;
}

RejoinMessage decode_rejoin(const std::vector<uint8_t>& bytes) {
  Reader r{bytes};
  RejoinMessage m;
  m.tag_epoch = r.u64();
  m.group_tags = r.u64();
  m.steps = static_cast<int>(static_cast<int64_t>(r.u64()));
  const uint64_t ng = r.u64(), nr = r.u64();
  if (ng > bytes.size() / 8 || nr > bytes.size() / 8) throw RunError("restart: the state handed over is truncated");
  for (uint64_t i = 0; i < ng; ++i) m.members.push_back(static_cast<int>(static_cast<int64_t>(r.u64())));
  for (uint64_t i = 0; i < nr; ++i) m.ring.push_back(static_cast<int>(static_cast<int64_t>(r.u64())));
  const uint64_t ne = r.u64();
  for (uint64_t i = 0; i < ne; ++i) {
    StateBuffers::Entry e;
    const std::vector<uint8_t> name = r.bytes();
    e.name.assign(name.begin(), name.end());
    e.bytes = r.bytes();
    m.state.entries.push_back(std::move(e));
  }
  if (r.at < bytes.size()) {
    const uint64_t nw = r.u64();
    for (uint64_t i = 0; i < nw; ++i) {
      const std::vector<uint8_t> w = r.bytes();
      m.words.emplace_back(w.begin(), w.end());
    }
  }
  if (r.at != bytes.size()) throw RunError("restart: " + std::to_string(bytes.size() - r.at) + " bytes past the state handed over");
  return m;
}

RestartSchedule restart_schedule(const model::FaultPlan& plan, const model::RankLayout& layout) {
  RestartSchedule s;
  for (const model::FaultEvent& e : plan.events)
    if (e.kind == model::FaultEvent::Kind::kRestart && e.at_step)
      s.ranks_at[*e.at_step].push_back(layout.rank_of(e.dc, e.worker));
  uint64_t next_epoch = 1;
  for (const auto& [step, ranks] : s.ranks_at) s.epoch_at[step] = next_epoch++;
  return s;
}

std::vector<int> ring_with(const std::vector<int>& ring, const std::vector<int>& back, const std::set<int>& dead,
                           int world) {
  std::vector<int> grown;
  for (int x = 0; x < world; ++x)
    if (!dead.count(x) && (std::find(ring.begin(), ring.end(), x) != ring.end() ||
                           std::find(back.begin(), back.end(), x) != back.end()))
      grown.push_back(x);
  return grown;
}

GrownGroup grow_group(const FaultGroups& groups, int rank, const std::vector<int>& back_all, std::set<int>& handled,
                      const std::vector<int>& ring) {
  const std::vector<int> mine = groups.group_of(rank, {});
  GrownGroup g;
  for (int r : mine)
    if (r != rank && handled.count(r) && std::find(back_all.begin(), back_all.end(), r) != back_all.end())
      g.back.push_back(r);
  for (int r : g.back) handled.erase(r);
  g.group = groups.group_of(rank, handled);
  g.ring = ring_with(ring, g.back, handled, groups.world());
  return g;
}

int rejoin_coordinator(int r, const model::RankLayout& layout, const std::vector<int>& group, const std::set<int>& excluded) {
  for (int m : group)
    if (!excluded.count(m) && layout.dc_of(m) == layout.dc_of(r)) return m;
  for (int m : group)
    if (!excluded.count(m)) return m;
  return -1;
}

void own_sampler(StateBuffers& state, const std::vector<uint32_t>& shard, uint64_t seed, int rank, int world, int steps) {
  const BatchSampler fresh(shard, seed, static_cast<uint64_t>(rank + world * (steps + 1)));
  const BatchSampler::Position pos = fresh.position();
  for (StateBuffers::Entry& e : state.entries) {
    auto put = [&e](const void* p, size_t n) {
      e.bytes.assign(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    if (e.name == "sampler.order") put(pos.order.data(), pos.order.size() * sizeof(uint32_t));
    if (e.name == "sampler.pos") put(&pos.pos, sizeof pos.pos);
    if (e.name == "sampler.epoch") put(&pos.epoch, sizeof pos.epoch);
  }
}

void keep_own_series(WorkerRecord& w, const std::vector<double>& own_loss, const std::vector<double>& own_ends,
                     int killed_at, int back_at) {
  for (int i = 0; i < back_at && i < static_cast<int>(w.loss.size()); ++i)
    w.loss[static_cast<size_t>(i)] = i < killed_at && i < static_cast<int>(own_loss.size())
                                         ? own_loss[static_cast<size_t>(i)]
                                         : std::numeric_limits<double>::quiet_NaN();
  for (int i = 0; i < back_at && i < static_cast<int>(w.step_end_s.size()); ++i)
    w.step_end_s[static_cast<size_t>(i)] = i < static_cast<int>(own_ends.size()) ? own_ends[static_cast<size_t>(i)] : 0;
}

std::function<void(WorkerEnv&, BatchSampler&, WorkerRecord&)> keep_first_life(FirstLife life) {
  return [life = std::move(life)](WorkerEnv& e, BatchSampler&, WorkerRecord& w) {
    e.times = life.times;
    e.exchanges = life.exchanges;
    if (life.series)
      keep_own_series(w, life.series->loss, life.series->step_end_s, life.series->killed_at, life.series->back_at);
  };
}

}  // namespace geotb::engine
