#include "engine/checkpoint/schedule.h"

#include <algorithm>

namespace geotb::engine {

CheckpointSchedule::CheckpointSchedule(int world, int every_steps, const std::atomic<int>* requests, int first_step)
    : progress_(static_cast<size_t>(world), first_step), every_(every_steps), requests_(requests) {
  if (requests_) seen_ = requests_->load();
}

bool CheckpointSchedule::due(int rank, int steps) {
  std::lock_guard<std::mutex> lk(mu_);
  progress_[static_cast<size_t>(rank)] = steps;
  if (requests_) {
    const int now = requests_->load();
    if (now != seen_ && target_ < 0) {
      seen_ = now;
      // Every other rank has decided its boundary progress_[r]; the first one nobody passed:
      int furthest = steps - 1;
      for (size_t r = 0; r < progress_.size(); ++r)
        if (static_cast<int>(r) != rank) furthest = std::max(furthest, progress_[r]);
      target_ = furthest + 1;
    }
  }
  const bool requested = target_ == steps;
  if (target_ >= 0 && *std::min_element(progress_.begin(), progress_.end()) >= target_) target_ = -1;  // all there
  return requested || (every_ > 0 && steps % every_ == 0);
}

void CheckpointWriter::write(int rank, int steps, const StateBuffers& state) {
  CheckpointHeader h;
  h.scenario_hash = opt_.scenario_hash;
  h.strategy = strategy_;
  h.world = world_;
  h.step = steps;
  const std::string step_dir = checkpoint_step_dir(opt_.dir, strategy_, steps);
  write_rank_checkpoint(step_dir, h, rank, state);
  bool last = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = std::find_if(written_.begin(), written_.end(), [&](const auto& w) { return w.first == steps; });
    if (it == written_.end()) it = written_.insert(written_.end(), {steps, 0});
    last = ++it->second == world_;
    if (last) written_.erase(it);
  }
  if (last) {
    complete_checkpoint(opt_.dir, h);
    if (opt_.written) opt_.written(steps, step_dir);
  }
}

}  // namespace geotb::engine
