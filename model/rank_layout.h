// How a run numbers its workers: data center by data center, in the scenario's order. Data center
// d holds the ranks [first(d), first(d) + workers(d)); its leader is local rank 0, at first(d).
// Data centers may differ in size (4 + 8 workers: ranks 0-3 and 4-11). Every mode and the fault
// agents map ranks through this one type. Header-only, no dependencies.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace geotb::model {

class RankLayout {
 public:
  /// One data center of one worker.
  RankLayout() : RankLayout(std::vector<int>{1}) {}
  /// `workers[d]`: data center d's workers. Throws std::invalid_argument on no DC or a DC of < 1.
  explicit RankLayout(std::vector<int> workers) : workers_(std::move(workers)) {
    if (workers_.empty()) throw std::invalid_argument("rank layout: no data centers");
    first_.push_back(0);
    for (size_t d = 0; d < workers_.size(); ++d) {
      if (workers_[d] < 1)
        throw std::invalid_argument(message({"rank layout: data center ", std::to_string(d), " has ",
                                             std::to_string(workers_[d]), " workers (need at least 1)"}));
      first_.push_back(first_.back() + workers_[d]);
    }
  }
  static RankLayout uniform(int dcs, int workers_per_dc) {
    return RankLayout(std::vector<int>(static_cast<size_t>(std::max(dcs, 0)), workers_per_dc));
  }

  int dcs() const { return static_cast<int>(workers_.size()); }
  int world() const { return first_.back(); }
  int workers(int dc) const { return workers_.at(static_cast<size_t>(dc)); }
  const std::vector<int>& workers() const { return workers_; }
  /// The rank of DC `dc`'s local rank 0.
  int first(int dc) const { return first_.at(static_cast<size_t>(dc)); }
  int rank_of(int dc, int local) const { return first(dc) + local; }
  /// The data center of `rank` (0 <= rank < world()).
  int dc_of(int rank) const {
    if (rank < 0 || rank >= world())
      throw std::out_of_range(message({"rank ", std::to_string(rank), " outside a world of ", std::to_string(world())}));
    return static_cast<int>(std::upper_bound(first_.begin(), first_.end(), rank) - first_.begin()) - 1;
  }
  int local_of(int rank) const { return rank - first(dc_of(rank)); }
  /// Every DC's local rank 0, in DC order.
  std::vector<int> leaders() const { return {first_.begin(), first_.end() - 1}; }
  /// Every DC has the same number of workers.
  bool uniform() const {
    return std::all_of(workers_.begin(), workers_.end(), [&](int w) { return w == workers_[0]; });
  }
  int max_workers() const { return *std::max_element(workers_.begin(), workers_.end()); }
  /// "4 + 8" (or "2 x 4" when uniform): for messages and logs.
  std::string describe() const {
    if (uniform()) return std::to_string(dcs()) + " x " + std::to_string(workers_[0]);
    std::string s;
    for (int w : workers_) {
      if (!s.empty()) s += " + ";
      s += std::to_string(w);
    }
    return s;
  }
  bool operator==(const RankLayout& o) const { return workers_ == o.workers_; }

 private:
  // Appended piece by piece (GCC 12 warns, wrongly, on "literal" + std::string&& chains).
  static std::string message(std::initializer_list<std::string> parts) {
    std::string s;
    for (const std::string& p : parts) s += p;
    return s;
  }
  std::vector<int> workers_;
  std::vector<int> first_;  // prefix sums: first_[d] = sum of workers_[< d], first_.back() = world
};

}  // namespace geotb::model
