#include "engine/faults/full_recovery_board.h"

#include <algorithm>

#include "engine/result.h"
#include "engine/faults/shrink.h"

namespace geotb::engine {

FullRecoveryBoard::FullRecoveryBoard(std::shared_ptr<StoreHandle> store, std::string key, int world, int64_t threshold,
                                     bool restarts, Nanos restart_after)
    : store_(std::move(store)),
      key_(std::move(key)),
      world_(world),
      threshold_(threshold),
      restarts_(restarts),
      restart_after_(restart_after) {}

std::optional<FullRecoveryBoard::Decided> FullRecoveryBoard::count(const std::vector<int>& fresh, const emu::Clock& clock) {
  const auto n = static_cast<int64_t>(fresh.size());
  const int64_t total = store_add(*store_, key_ + "dead", n);
  // Which deaths: filed under the total this addition reached, so that the decider can walk them back.
  if (restarts_)
    store_set(*store_, key_ + "dead_at/" + std::to_string(total), encode_ints(std::vector<int64_t>(fresh.begin(), fresh.end())));
  if (total - n >= threshold_ || total < threshold_) return std::nullopt;  // not the one that crosses it
  const Decided d{total, clock.now()};
  store_add(*store_, key_ + "decided", 1);  // the mark, before any boundary is read
  int64_t furthest = 0;
  for (int r = 0; r < world_; ++r) furthest = std::max(furthest, store_add(*store_, key_ + "at/" + std::to_string(r), 0));
  if (restarts_) {
    std::vector<int64_t> back;
    for (int64_t t = total; t > 0;) {
      const std::vector<int64_t> dead = decode_ints(store_get(*store_, key_ + "dead_at/" + std::to_string(t)));
      if (dead.empty()) throw RunError("full recovery: no deaths filed under the count " + std::to_string(t));
      back.insert(back.end(), dead.begin(), dead.end());
      t -= static_cast<int64_t>(dead.size());
    }
    std::sort(back.begin(), back.end());
    store_set(*store_, key_ + "restart", encode_ints(back));
    store_set(*store_, key_ + "decided_ns", bytes_of(std::to_string(d.at.count())));
  }
  store_set(*store_, key_ + "boundary", bytes_of(std::to_string(furthest + 1)));
  return d;
}

std::optional<int> FullRecoveryBoard::boundary(int rank, int steps) {
  if (boundary_) return boundary_;
  // Where this rank is, then whether it was decided (in this order: see the file's comment).
  store_add(*store_, key_ + "at/" + std::to_string(rank), steps - published_);
  published_ = steps;
  if (store_add(*store_, key_ + "decided", 0) == 0) return std::nullopt;
  boundary_ = std::stoi(string_of(store_get(*store_, key_ + "boundary")));  // set right after the mark
  if (restarts_)  // set before the boundary
    for (int64_t r : decode_ints(store_get(*store_, key_ + "restart"))) restarted_.push_back(static_cast<int>(r));
  return boundary_;
}

FullRecoveryBoard::Nanos FullRecoveryBoard::up_at() {
  if (!up_at_) up_at_ = Nanos(std::stoll(string_of(store_get(*store_, key_ + "decided_ns")))) + restart_after_;
  return *up_at_;
}

}  // namespace geotb::engine
