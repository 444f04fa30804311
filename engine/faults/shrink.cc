#include "engine/faults/shrink.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/result.h"
#include "engine/transport/tags.h"

namespace geotb::engine {

namespace {

/// Tags of the agreement: outside every range a Transport user may take, above the heartbeats'.
/// Named by the dead set itself, not by a count of attempts: a survivor that declared fewer peers
/// dead than another (detections come at slightly different instants) asks under another tag, so
/// its view reaches nobody who has a different one, and its receive is interrupted when it
/// declares the rest; it then asks again under the full set's tag, where the others wait. Every
/// view therefore converges, whatever the order of the detections.
uint64_t agreement_tag(const std::set<int>& dead, int k) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the sorted ranks
  for (int d : dead) {
    h ^= static_cast<uint64_t>(d) + 1;
    h *= 1099511628211ull;
  }
  return reserved_tags::kShrinkBase + ((h & ((uint64_t{1} << 60) - 1)) << 1) + static_cast<uint64_t>(k);
}

std::string show(const std::vector<int64_t>& v) {
  std::string s = "step " + (v.empty() ? std::string("?") : std::to_string(v[0])) + ", dead {";
  for (size_t i = 1; i < v.size(); ++i) s += (i > 1 ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

}  // namespace

std::vector<uint8_t> encode_ints(const std::vector<int64_t>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(int64_t));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<int64_t> decode_ints(const std::vector<uint8_t>& b) {
  std::vector<int64_t> v(b.size() / sizeof(int64_t));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(int64_t));
  return v;
}

std::vector<int> FaultGroups::group_of(int rank, const std::set<int>& dead) const {
  std::vector<int> g;
  const int dc = layout.dc_of(rank);
  const int lo = world_group ? 0 : layout.first(dc);
  const int hi = world_group ? world() : lo + layout.workers(dc);
  for (int r = lo; r < hi; ++r)
    if (!dead.count(r)) g.push_back(r);
  return g;
}

std::vector<int> FaultGroups::watched_by(int rank) const {
  std::vector<int> peers = group_of(rank, {});
  peers.erase(std::remove(peers.begin(), peers.end(), rank), peers.end());
  if (!world_group && layout.local_of(rank) == 0)  // a DC leader also watches the other DCs' leaders
    for (int d = 0; d < layout.dcs(); ++d)
      if (d != layout.dc_of(rank)) peers.push_back(layout.first(d));
  return peers;
}

std::vector<int> FaultGroups::witnesses(int observer, int peer, int k) const {
  const int pd = layout.dc_of(peer), od = layout.dc_of(observer);
  std::vector<int> mates;
  for (int r = layout.first(pd); r < layout.first(pd) + layout.workers(pd); ++r)
    if (r != peer && r != observer) mates.push_back(r);
  std::vector<int> third;  // the lowest rank of every site other than both of theirs
  for (int d = 0; d < layout.dcs(); ++d)
    if (d != pd && d != od) third.push_back(layout.first(d));
  const size_t kk = static_cast<size_t>(std::max(k, 0));
  // One third-site witness when the peer has site mates (their LAN is the surest path), as many
  // as fit otherwise; the mates fill the rest.
  const size_t n_third = std::min(third.size(), mates.empty() ? kk : std::min<size_t>(1, kk));
  std::vector<int> out(third.begin(), third.begin() + static_cast<std::ptrdiff_t>(n_third));
  for (size_t i = 0; i < mates.size() && out.size() < kk; ++i) out.push_back(mates[i]);
  std::sort(out.begin(), out.end());
  return out;
}

std::set<int> FaultGroups::watched_outside_group(int rank) const {
  const std::vector<int> group = group_of(rank, {});
  std::set<int> out;
  for (int p : watched_by(rank))
    if (std::find(group.begin(), group.end(), p) == group.end()) out.insert(p);
  return out;
}

std::vector<int> FaultGroups::other_dcs(int rank) const {
  std::vector<int> out;
  for (int r = 0; r < world(); ++r)
    if (layout.dc_of(r) != layout.dc_of(rank)) out.push_back(r);
  return out;
}

std::optional<int> take_over_dead_leader(Transport& net, const FaultGroups& g, int rank, std::vector<int>& dc_leaders,
                                         const std::set<int>& dead, const std::vector<int>& group) {
  if (g.world_group) return std::nullopt;
  int& leader = dc_leaders[static_cast<size_t>(g.layout.dc_of(rank))];
  if (!dead.count(leader)) return std::nullopt;
  const int was = leader;
  leader = group.front();
  if (rank != leader) return std::nullopt;
  net.take_over(was, g.other_dcs(rank));
  return was;
}

std::vector<int> fresh_deaths(const FaultGroups& g, int rank, const std::set<int>& declared, const std::set<int>& handled) {
  std::vector<int> fresh;
  for (int d : declared)
    if (!handled.count(d)) fresh.push_back(d);
  const std::vector<int> mine = g.group_of(rank, {});
  for (int d : fresh)
    if (std::find(mine.begin(), mine.end(), d) == mine.end())
      throw RunError("rank " + std::to_string(rank) + " declared rank " + std::to_string(d) +
                     " (the leader of another data center) dead: this strategy cannot re-address its exchange "
                     "between data centers (policy shrink recovers inside a group only)");
  return fresh;
}

std::vector<int> ring_without(const std::vector<int>& ring, const std::set<int>& dead) {
  std::vector<int> out;
  for (int r : ring)
    if (!dead.count(r)) out.push_back(r);
  return out;
}

void agree_on_group(Transport& net, int rank, const std::vector<int>& group, int step, const std::set<int>& dead) {
  std::vector<int64_t> mine = {step};
  for (int d : dead) mine.push_back(d);
  const int coordinator = group.front();
  if (rank == coordinator) {
    for (int m : group) {
      if (m == rank) continue;
      const std::vector<int64_t> theirs = decode_ints(net.recv(m, agreement_tag(dead, 0)));
      if (theirs != mine)
        throw RunError("shrink: survivors disagree: rank " + std::to_string(rank) + " has " + show(mine) + ", rank " +
                       std::to_string(m) + " has " + show(theirs));
    }
    for (int m : group)
      if (m != rank) net.send(m, agreement_tag(dead, 1), encode_ints(mine));
  } else {
    net.send(coordinator, agreement_tag(dead, 0), encode_ints(mine));
    const std::vector<int64_t> agreed = decode_ints(net.recv(coordinator, agreement_tag(dead, 1)));
    if (agreed != mine)
      throw RunError("shrink: rank " + std::to_string(rank) + " has " + show(mine) + ", the group's coordinator " +
                     std::to_string(coordinator) + " decided " + show(agreed));
  }
}

uint64_t redistributed_stream(int rank, int world, int epoch) {
  return static_cast<uint64_t>(rank + world * epoch);
}

uint64_t rewound_stream(int rank, int world, int epoch) { return static_cast<uint64_t>(rank + world * (epoch + 1000)); }

std::vector<uint32_t> inherit_shards(const FaultGroups& g, int rank, std::vector<uint32_t> shard,
                                     const std::vector<std::vector<uint32_t>>& shards, const std::set<int>& dead,
                                     const std::vector<int>& fresh) {
  const int dc = g.layout.dc_of(rank), lo = g.layout.first(dc), hi = lo + g.layout.workers(dc);
  for (int d : fresh) {
    if (g.layout.dc_of(d) != dc) continue;
    std::vector<int> heirs;
    for (int r = lo; r < hi; ++r)
      if (!dead.count(r)) heirs.push_back(r);
    const auto k = static_cast<size_t>(std::find(heirs.begin(), heirs.end(), rank) - heirs.begin());
    const auto& ds = shards[static_cast<size_t>(d)];
    for (size_t i = k; i < ds.size(); i += heirs.size()) shard.push_back(ds[i]);
  }
  return shard;
}

}  // namespace geotb::engine
