#include "model/asynchrony.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/json_fields.h"

namespace geotb::model {

namespace f = field;

void to_json(json& j, const AsyncSection& a) {
  json sites = json::array();
  for (const AsyncSection::Site& s : a.sites)
    sites.push_back({{"dc", s.dc},
                     {"steps", s.steps},
                     {"rounds", s.rounds},
                     {"staleness_histogram", s.staleness_histogram},
                     {"max_staleness_observed", s.max_staleness_observed},
                     {"wait_at_bound_s", s.wait_at_bound_s},
                     {"round_s", s.round_s}});
  json div = json::array();
  for (const AsyncSection::Divergence& d : a.divergence)
    div.push_back({{"t_s", d.t_s}, {"max_abs_diff", d.max_abs_diff}, {"relative_l2", d.relative_l2}});
  j = {{"max_staleness", a.max_staleness ? json(*a.max_staleness) : json(nullptr)},
       {"staleness_weight", a.staleness_weight},
       {"final_sync", a.final_sync},
       {"sites", sites},
       {"divergence", div}};
}

void from_json(const json& j, AsyncSection& a) {
  a.max_staleness.reset();
  if (!j.at("max_staleness").is_null()) {
    const int64_t s = f::integer(j, "max_staleness");
    if (s < 0 || s > 1000000) f::fail("max_staleness", fmt::format("{}: must be in [0, 1000000] or null", s));
    a.max_staleness = static_cast<int>(s);
  }
  a.staleness_weight = f::str(j, "staleness_weight");
  a.final_sync = f::str(j, "final_sync");
  a.sites.clear();
  for (const json& s : f::array(j, "sites")) {
    AsyncSection::Site site;
    site.dc = static_cast<int>(f::count(s, "dc"));
    site.steps = static_cast<int>(f::count(s, "steps"));
    site.rounds = static_cast<int>(f::count(s, "rounds"));
    for (const json& c : f::array(s, "staleness_histogram")) {
      if (!c.is_number_unsigned()) f::fail("staleness_histogram", "expected counts (integers >= 0)");
      site.staleness_histogram.push_back(c.get<uint64_t>());
    }
    site.max_staleness_observed = static_cast<int>(f::count(s, "max_staleness_observed"));
    site.wait_at_bound_s = f::nonneg(s, "wait_at_bound_s");
    site.round_s = f::numbers(s, "round_s");
    a.sites.push_back(std::move(site));
  }
  a.divergence.clear();
  for (const json& d : f::array(j, "divergence"))
    a.divergence.push_back({f::nonneg(d, "t_s"), f::nonneg(d, "max_abs_diff"), f::nonneg(d, "relative_l2")});
}

AsyncSection summarize_async(std::vector<AsyncSiteLog> sites, const std::string& final_sync) {
  std::sort(sites.begin(), sites.end(), [](const AsyncSiteLog& a, const AsyncSiteLog& b) { return a.dc < b.dc; });
  AsyncSection out;
  out.final_sync = final_sync;
  if (sites.empty()) return out;
  if (sites[0].max_staleness >= 0) out.max_staleness = sites[0].max_staleness;
  out.staleness_weight = sites[0].staleness_weight;
  for (const AsyncSiteLog& s : sites) {
    AsyncSection::Site site;
    site.dc = s.dc;
    site.steps = s.steps;
    site.rounds = s.rounds;
    site.staleness_histogram = s.staleness;
    for (size_t k = 0; k < s.staleness.size(); ++k)
      if (s.staleness[k] > 0) site.max_staleness_observed = static_cast<int>(k);
    site.wait_at_bound_s = s.wait_at_bound_s;
    site.round_s = s.round_s;
    out.sites.push_back(std::move(site));
  }
  // Every instant at which some site's model changed, from the first at which every site has one.
  double start = 0;
  std::vector<double> instants;
  for (const AsyncSiteLog& s : sites) {
    if (s.snapshot_s.empty() || s.snapshots.size() != s.snapshot_s.size()) return out;
    start = std::max(start, s.snapshot_s.front());
    instants.insert(instants.end(), s.snapshot_s.begin(), s.snapshot_s.end());
  }
  std::sort(instants.begin(), instants.end());
  instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  instants.erase(instants.begin(), std::lower_bound(instants.begin(), instants.end(), start));
  const size_t max_points = 2 * kMaxAsyncSnapshots;
  if (instants.size() > max_points) {  // evenly, keeping the first and the last
    std::vector<double> kept;
    for (size_t i = 0; i < max_points; ++i) kept.push_back(instants[i * (instants.size() - 1) / (max_points - 1)]);
    instants = std::move(kept);
  }
  const size_t n = sites[0].snapshots[0].size();
  const double t0 = 0;  // instants are from the strategy's start
  std::vector<double> mean(n);
  std::vector<const std::vector<float>*> at(sites.size());
  for (const double t : instants) {
    bool sized = true;
    for (size_t d = 0; d < sites.size(); ++d) {
      const auto& ts = sites[d].snapshot_s;
      const size_t k = static_cast<size_t>(std::upper_bound(ts.begin(), ts.end(), t) - ts.begin()) - 1;
      at[d] = &sites[d].snapshots[k];
      sized = sized && at[d]->size() == n;
    }
    if (!sized) continue;
    std::fill(mean.begin(), mean.end(), 0.0);
    for (const auto* x : at)
      for (size_t i = 0; i < n; ++i) mean[i] += (*x)[i];
    double mean_sq = 0;
    for (double& m : mean) {
      m /= static_cast<double>(sites.size());
      mean_sq += m * m;
    }
    AsyncSection::Divergence d;
    d.t_s = t - t0;
    for (size_t a = 0; a < at.size(); ++a) {
      double dist_sq = 0;
      for (size_t i = 0; i < n; ++i) {
        const double e = (*at[a])[i] - mean[i];
        dist_sq += e * e;
      }
      if (mean_sq > 0) d.relative_l2 = std::max(d.relative_l2, std::sqrt(dist_sq / mean_sq));
      for (size_t b = a + 1; b < at.size(); ++b)
        for (size_t i = 0; i < n; ++i)
          d.max_abs_diff = std::max(d.max_abs_diff, static_cast<double>(std::fabs((*at[a])[i] - (*at[b])[i])));
    }
    out.divergence.push_back(d);
  }
  return out;
}

}  // namespace geotb::model
