#include "engine/checkpoint/schedule.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace geotb::engine {

bool checkpoint_due(ScheduleState& st, int rank, int steps, int every_steps) {
  st.progress[static_cast<size_t>(rank)] = steps;
  if (st.requests != st.seen && st.target < 0) {
    st.seen = st.requests;
    // Every other rank has decided its boundary progress[r]; the first one nobody passed:
    int furthest = steps - 1;
    for (size_t r = 0; r < st.progress.size(); ++r)
      if (static_cast<int>(r) != rank) furthest = std::max(furthest, static_cast<int>(st.progress[r]));
    st.target = furthest + 1;
  }
  const bool requested = st.target == steps;
  if (st.target >= 0 && *std::min_element(st.progress.begin(), st.progress.end()) >= st.target) st.target = -1;
  return requested || (every_steps > 0 && steps % every_steps == 0);
}

CheckpointSchedule::CheckpointSchedule(int world, int every_steps, const std::atomic<int>* requests, int first_step)
    : every_(every_steps), requests_(requests) {
  st_.progress.assign(static_cast<size_t>(world), first_step);
  if (requests_) st_.requests = st_.seen = requests_->load();
}

bool CheckpointSchedule::due(int rank, int steps) {
  std::lock_guard<std::mutex> lk(mu_);
  if (requests_) st_.requests = requests_->load();
  return checkpoint_due(st_, rank, steps, every_);
}

namespace {

std::vector<int32_t> encode(const ScheduleState& st) {
  std::vector<int32_t> v = {st.requests, st.seen, st.target};
  v.insert(v.end(), st.progress.begin(), st.progress.end());
  return v;
}

}  // namespace

void CheckpointRequestFile::create(const std::string& path, int world, int first_step) {
  ScheduleState st;
  st.progress.assign(static_cast<size_t>(world), first_step);
  const std::vector<int32_t> v = encode(st);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw CheckpointError(path + ": cannot create: " + std::strerror(errno));
  const auto n = static_cast<ssize_t>(v.size() * sizeof(int32_t));
  const bool ok = ::pwrite(fd, v.data(), static_cast<size_t>(n), 0) == n;
  ::close(fd);
  if (!ok) throw CheckpointError(path + ": cannot write: " + std::strerror(errno));
}

CheckpointRequestFile::CheckpointRequestFile(const std::string& path, int world) : path_(path), world_(world) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) throw CheckpointError(path + ": cannot open: " + std::strerror(errno));
}

CheckpointRequestFile::~CheckpointRequestFile() {
  if (fd_ >= 0) ::close(fd_);
}

template <class F>
void CheckpointRequestFile::locked(F&& f) {
  while (::flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) throw CheckpointError(path_ + ": flock: " + std::strerror(errno));
  struct Unlock {
    int fd;
    ~Unlock() { ::flock(fd, LOCK_UN); }
  } unlock{fd_};
  std::vector<int32_t> v(3 + static_cast<size_t>(world_));
  const auto n = static_cast<ssize_t>(v.size() * sizeof(int32_t));
  if (::pread(fd_, v.data(), static_cast<size_t>(n), 0) != n)
    throw CheckpointError(path_ + ": shorter than the " + std::to_string(n) + " bytes of " + std::to_string(world_) + " ranks");
  ScheduleState st;
  st.requests = v[0];
  st.seen = v[1];
  st.target = v[2];
  st.progress.assign(v.begin() + 3, v.end());
  f(st);
  v = encode(st);
  if (::pwrite(fd_, v.data(), static_cast<size_t>(n), 0) != n)
    throw CheckpointError(path_ + ": cannot write: " + std::strerror(errno));
}

void CheckpointRequestFile::request() {
  locked([](ScheduleState& st) { ++st.requests; });
}

bool CheckpointRequestFile::due(int rank, int steps, int every_steps) {
  bool d = false;
  locked([&](ScheduleState& st) { d = checkpoint_due(st, rank, steps, every_steps); });
  return d;
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

void CheckpointWriter::forget_after(int steps) {
  std::lock_guard<std::mutex> lk(mu_);
  std::erase_if(written_, [steps](const auto& w) { return w.first > steps; });
}

}  // namespace geotb::engine
