#include "engine/faults/quorum.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>

namespace geotb::engine {

SiteQuorum::SiteQuorum(int sites, Nanos timeout, DownSince down_since)
    : sites_(sites), timeout_(timeout), down_since_(std::move(down_since)) {
  if (sites_ < 1 || !down_since_) throw std::invalid_argument("SiteQuorum: no sites or no link states");
}

std::set<int> SiteQuorum::side(int site, Nanos now) const {
  // The sites reachable from `site` over links not cut for `timeout` by `now` (breadth first). A
  // dead site's links count as cut since its death.
  std::set<int> seen = {site};
  std::vector<int> todo = {site};
  while (!todo.empty()) {
    const int a = todo.back();
    todo.pop_back();
    const auto dead_a = site_down_.find(a);
    for (int b = 0; b < sites_; ++b) {
      if (seen.count(b)) continue;
      std::optional<Nanos> down = down_since_(a, b, now);
      for (auto dead : {dead_a, site_down_.find(b)})
        if (dead != site_down_.end()) down = down ? std::min(*down, dead->second) : dead->second;
      if (down && now - *down >= timeout_) continue;
      seen.insert(b);
      todo.push_back(b);
    }
  }
  return seen;
}

bool SiteQuorum::has_majority(int site, Nanos now) const {
  return 2 * static_cast<int>(side(site, now).size()) > sites_;
}

std::optional<std::vector<int>> SiteQuorum::ask(int round, int site, Nanos now) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = decided_.find(round);
  if (it == decided_.end()) {
    // The members of the latest round decided before this one (every site before the first),
    // and the joiners, that this side reaches.
    std::vector<int> before;
    if (auto prev = decided_.lower_bound(round); prev != decided_.begin()) {
      before = std::prev(prev)->second;
    } else {
      for (int s = 0; s < sites_; ++s) before.push_back(s);
    }
    const std::set<int> reach = side(site, now);
    if (2 * static_cast<int>(reach.size()) <= sites_) return std::nullopt;  // no majority here: pause
    std::set<int> members;
    for (int s : before)
      if (reach.count(s)) members.insert(s);
    for (int s : joining_)
      if (reach.count(s)) members.insert(s);
    for (int s : revived_)
      if (reach.count(s)) members.insert(s);
    if (2 * static_cast<int>(members.size()) <= sites_) return std::nullopt;
    for (int s : members) revived_.erase(s);
    for (int s : members)
      if (joining_.erase(s)) admitted_[s] = round;
    std::vector<int> v(members.begin(), members.end());
    it = decided_.emplace(round, v).first;
    if (changes_.empty() || changes_.back().sites != v) changes_.push_back({round, v, now});
  }
  const std::vector<int>& s = it->second;
  if (std::find(s.begin(), s.end(), site) == s.end()) return std::nullopt;
  return s;
}

void SiteQuorum::site_down(int site, Nanos since) {
  std::lock_guard<std::mutex> lk(mu_);
  site_down_[site] = since;
}

void SiteQuorum::site_up(int site) {
  std::lock_guard<std::mutex> lk(mu_);
  site_down_.erase(site);
  revived_.insert(site);
}

void SiteQuorum::request_join(int site) {
  std::lock_guard<std::mutex> lk(mu_);
  joining_.insert(site);
}

std::optional<int> SiteQuorum::admitted_at(int site) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = admitted_.find(site);
  return it == admitted_.end() ? std::nullopt : std::optional<int>(it->second);
}

bool SiteQuorum::drop(int round, int site, int peer, Nanos now) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = decided_.find(round);
  if (it == decided_.end()) return false;
  std::vector<int>& v = it->second;
  if (std::find(v.begin(), v.end(), peer) == v.end()) return true;
  if (final_.count(round)) return false;
  const std::set<int> reach = side(site, now);
  if (reach.count(peer) || 2 * static_cast<int>(reach.size()) <= sites_) return false;
  std::vector<int> kept;
  for (int s : v)
    if (reach.count(s)) kept.push_back(s);
  if (2 * static_cast<int>(kept.size()) <= sites_) return false;
  v = kept;
  // The amended round and every later decided one (none yet: rounds are decided in order).
  if (!changes_.empty() && changes_.back().round == round) {
    changes_.back().sites = v;
    changes_.back().at = now;
  } else {
    changes_.push_back({round, v, now});
  }
  return true;
}

bool SiteQuorum::in_round(int round, int site) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = decided_.find(round);
  return it != decided_.end() && std::find(it->second.begin(), it->second.end(), site) != it->second.end();
}

std::vector<int> SiteQuorum::finalize(int round, Nanos) {
  std::lock_guard<std::mutex> lk(mu_);
  final_.insert(round);
  auto it = decided_.find(round);
  return it == decided_.end() ? std::vector<int>{} : it->second;
}

std::vector<int> SiteQuorum::sites_of(int round) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = decided_.find(round);
  return it == decided_.end() ? std::vector<int>{} : it->second;
}

void SiteQuorum::finished(int site) {
  std::lock_guard<std::mutex> lk(mu_);
  finished_.insert(site);
}

bool SiteQuorum::others_finished(int site) const {
  std::lock_guard<std::mutex> lk(mu_);
  if (decided_.empty()) return false;
  for (int s : decided_.rbegin()->second)
    if (s != site && !finished_.count(s)) return false;
  return true;
}

std::vector<SiteQuorum::Decision> SiteQuorum::decisions() const {
  std::lock_guard<std::mutex> lk(mu_);
  return changes_;
}

SiteQuorum::DownSince down_since_of(const model::Topology& t) {
  // Per unordered pair: its initial state and its changes of `up`, in time order.
  struct Pair {
    bool up = true;
    std::vector<std::pair<SiteQuorum::Nanos, bool>> changes;
  };
  auto pairs = std::make_shared<std::map<std::pair<int, int>, Pair>>();
  auto key = [](int a, int b) { return std::make_pair(std::min(a, b), std::max(a, b)); };
  for (const model::WanLink& w : t.wan) (*pairs)[key(w.a, w.b)].up = w.a_to_b.up && w.b_to_a.up;
  for (const model::ScheduledChange& c : t.timeline)
    if (c.change.up) (*pairs)[key(c.a, c.b)].changes.emplace_back(c.change.at, *c.change.up);
  for (auto& [k, p] : *pairs)
    std::stable_sort(p.changes.begin(), p.changes.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return [pairs, key](int a, int b, SiteQuorum::Nanos now) -> std::optional<SiteQuorum::Nanos> {
    auto it = pairs->find(key(a, b));
    // No link at all: never reachable directly ("down" since long before any timeout).
    if (it == pairs->end()) return SiteQuorum::Nanos(std::numeric_limits<int64_t>::min() / 4);
    bool up = it->second.up;
    SiteQuorum::Nanos since{0};
    for (const auto& [at, u] : it->second.changes) {
      if (at > now) break;
      if (up && !u) since = at;
      up = u;
    }
    return up ? std::nullopt : std::optional<SiteQuorum::Nanos>(since);
  };
}

}  // namespace geotb::engine
