// The quorum of sites (docs/dev/quorum.md): which data centers take part in each round of the
// exchange between data centers when some cannot be reached. A membership service replicated over
// the sites, one member per site (as an etcd cluster with a member in each data center), decides
// each round's sites once; a request succeeds while the requester's side of a partition holds a
// strict majority of the sites. Modelled here, deterministically in virtual time, from the links'
// states: a link down for at least `timeout` separates its sites (the service's own detection
// time); a shorter cut only delays the round, as without quorum.
//
//  * ask(r, s, t): round r's sites, if s is among them. The first request for r from a side that
//    holds a majority decides S_r: the sites of S_{r-1} (and of the admitted joiners) that the
//    requester reaches now. A request from a site left out of S_r, or from a side without a
//    majority, gets nothing: that site pauses.
//  * A paused site polls has_majority(s, t); once its side holds a majority again it asks to
//    join (request_join), and the first round decided after that includes it (admitted_at).
//  * A round already decided when a site is separated: the sites waiting for its message drop it
//    (drop: the decision is amended to their side) unless a leader has already finalized the
//    round with it (it had every message): then the round waits for it, as without quorum.
//  * Two sites: no side of a cut holds a strict majority of two, so both pause until the link is
//    back: the run as without quorum.
//  * A dead site (every worker killed: site_down) is separated from every other site as a site
//    behind cut links is, `timeout` after its last worker died. Restarted (site_up), it is
//    reachable again at once and takes part in the next round decided, with the model its
//    restart handed it (faults/fault_runtime.h): no join and no state from the round.
// Used by hier_ef_topk_int8 and hierarchical with "quorum" (docs/guide/strategies.md "Quorum of
// sites"): cluster.cc builds one per strategy run from the scenario's topology. No libtorch here.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "model/topology.h"

namespace geotb::engine {

class SiteQuorum {
 public:
  using Nanos = std::chrono::nanoseconds;
  /// The instant the link between sites a and b went down, if it is down at t (either direction:
  /// a request needs its answer); nothing if it is up at t.
  using DownSince = std::function<std::optional<Nanos>(int a, int b, Nanos t)>;

  SiteQuorum(int sites, Nanos timeout, DownSince down_since);

  /// How long a link must stay down before its sites are separated.
  Nanos timeout() const { return timeout_; }
  /// Round `round`'s sites, ascending, if `site` takes part in it; nothing if the round was
  /// decided without it or its side holds no majority now (it pauses).
  std::optional<std::vector<int>> ask(int round, int site, Nanos now);
  /// Whether `site`'s side of the partition at `now` holds a strict majority of the sites.
  bool has_majority(int site, Nanos now) const;
  /// A paused site asks to take part again: the first round decided after this includes it (if
  /// the deciding side reaches it).
  void request_join(int site);
  /// The round from which `site` takes part again after its join request; nothing until decided.
  std::optional<int> admitted_at(int site) const;

  /// While round `round` runs: a site waiting for `peer`'s message asks to drop it. Done (true)
  /// when the round is not final yet, `peer` is outside `site`'s side at `now` and that side holds
  /// a majority: the round's sites become those of the side (the decision is amended). True too
  /// if `peer` was already dropped.
  bool drop(int round, int site, int peer, Nanos now);
  /// Every worker of `site` is dead since `since`: the site is separated from the others once
  /// `timeout` has passed, as if its links were down since then.
  void site_down(int site, Nanos since);
  /// The dead `site` was restarted with a replica of the majority's model: reachable again, and
  /// among the sites of the next round decided (if the deciding side reaches it).
  void site_up(int site);
  /// Whether `site` is among round `round`'s sites now.
  bool in_round(int round, int site) const;
  /// A leader has every message it waited for: round `round`'s sites are final from now on (no
  /// drop any more); returns them. The leaders apply the messages of these sites only.
  std::vector<int> finalize(int round, Nanos now);
  /// Round `round`'s sites, ascending; empty if not decided.
  std::vector<int> sites_of(int round) const;
  /// `site` has done its last round (its final synchronisation follows).
  void finished(int site);
  /// Whether every site of the latest decision but `site` has finished: a paused `site` will not
  /// be admitted any more.
  bool others_finished(int site) const;

  /// A change of membership: round `round` and the rounds after it run with `sites`.
  struct Decision {
    int round = 0;
    std::vector<int> sites;
    Nanos at{0};  ///< when it was decided
  };
  /// The first decision and every change, in round order.
  std::vector<Decision> decisions() const;

 private:
  std::set<int> side(int site, Nanos now) const;  // the sites `site` reaches at `now`

  const int sites_;
  const Nanos timeout_;
  DownSince down_since_;
  mutable std::mutex mu_;
  std::map<int, std::vector<int>> decided_;  // round -> its sites
  std::set<int> joining_;                    // asked to join, not admitted yet
  std::map<int, int> admitted_;              // site -> the round it takes part from again
  std::vector<Decision> changes_;
  std::set<int> finished_;
  std::set<int> final_;  // rounds whose sites are final
  std::map<int, Nanos> site_down_;  // dead sites -> since when
  std::set<int> revived_;           // restarted sites, for the next decision
};

/// DownSince of a run's WAN: every link's initial state (both directions' `up`; one down from the
/// start is down since 0) and the timeline's changes of `up`, which apply to both directions at
/// their instant. A pair without a link is down since long before any timeout.
SiteQuorum::DownSince down_since_of(const model::Topology& t);

}  // namespace geotb::engine
