#include "engine/hosts/inproc_host.h"

#include <algorithm>

#include "engine/checkpoint/worker_state.h"
#include "engine/collectives/transport_group.h"
#include "engine/errors.h"
#include "engine/transport/transport.h"

namespace geotb::engine {

InprocRun::InprocRun(Config c)
    : c_(std::move(c)),
      // The timeline continues from rank 0's instant at the checkpoint.
      resumed_at_(c_.resume ? resume_point(c_.resume->ranks[0]).elapsed : std::chrono::nanoseconds{0}),
      full_recovery_(c_.faults && c_.faults->full_recovery_possible()),
      start_line_(c_.world, LineDone{this, true}),
      finish_line_(c_.world, LineDone{this, false}) {
  if (c_.checkpoint->writes()) {
    schedule_.emplace(c_.world, c_.checkpoint->every_steps, c_.checkpoint->requests,
                      c_.resume ? c_.resume->header.step : 0);
    writer_.emplace(*c_.checkpoint, c_.run_name, c_.world);
  }
}

void InprocRun::LineDone::operator()() noexcept {
  if (start) {
    run->t_start_ = run->c_.clock->now();
    run->c_.at_start(run->t_start_ - run->resumed_at_);
  } else {
    run->t_end_ = run->c_.clock->now();
  }
}

void InprocRun::virtual_line(VirtualLine& line, const char* what, std::chrono::nanoseconds& instant, bool start) {
  emu::VirtualScheduler& sched = *c_.sched;
  const auto me = sched.current();
  const auto now = sched.now(me);
  sched.update([&] {
    line.latest = std::max(line.latest, now);
    if (++line.arrived < c_.world) return;
    line.released = line.latest;
    instant = line.latest;
    if (start) c_.at_start(instant - resumed_at_);
  });
  try {
    sched.wait(me, [&] { return line.released; }, std::nullopt, what);
  } catch (const emu::SchedulerAborted& e) {
    throw TransportClosed(std::string(what) + ": " + e.what());
  } catch (const emu::DeadlockError& e) {
    throw TransportError(e.what());
  }
}

void InprocRun::virtual_line_drop(VirtualLine& line, std::chrono::nanoseconds& instant) {
  c_.sched->update([&] {
    if (++line.arrived < c_.world) return;
    line.released = line.latest;
    instant = line.latest;
  });
}

std::shared_ptr<const Checkpoint> InprocRun::rewind_to(int steps) {
  std::lock_guard<std::mutex> lk(rewind_mu_);
  for (const auto& [b, c] : rewinds_)
    if (b == steps) return c;
  auto c = std::make_shared<const Checkpoint>(
      load_checkpoint(c_.checkpoint->dir + "/" + c_.run_name,
                      {.scenario_hash = c_.checkpoint->scenario_hash, .strategy = c_.run_name, .world = c_.world}));
  rewinds_.emplace_back(steps, c);
  writer_->forget_after(c->header.step);
  return c;
}

std::chrono::nanoseconds InprocRankHost::start_line() {
  if (run_.c_.sched)
    run_.virtual_line(run_.vstart_, "start barrier", run_.t_start_, true);
  else
    run_.start_line_.arrive_and_wait();
  started_ = true;
  if (run_.c_.faults) run_.c_.faults->started(rank_, run_.t_start_);
  return run_.t_start_;
}

std::chrono::nanoseconds InprocRankHost::restart_line(std::chrono::nanoseconds elapsed) {
  // The loop counts time from t_start - resumed_at (its start minus the resumed state's elapsed).
  return run_.t_start_ - run_.resumed_at_ + elapsed;
}

void InprocRankHost::finish_line() {
  if (run_.c_.sched)
    run_.virtual_line(run_.vfinish_, "finish barrier", run_.t_end_, false);
  else
    run_.finish_line_.arrive_and_wait();
}

FaultHooks* InprocRankHost::faults() { return run_.c_.faults ? &run_.c_.faults->hooks(rank_) : nullptr; }

std::optional<WanCounters> InprocRankHost::checkpoint_wan_counters() {
  if (rank_ != 0) return std::nullopt;
  // Rank 0 keeps the fabric's WAN totals (counters, not weights: as of its checkpoint instant).
  const emu::TrafficStats t = run_.c_.fabric->wan_total();
  return WanCounters{t.messages, t.payload_bytes, t.wire_bytes, t.retransmissions};
}

bool InprocRankHost::rewinds() const {
  return run_.writer_ && (run_.c_.checkpoint->rewind_due || run_.full_recovery_);
}

const StateBuffers* InprocRankHost::rewind(int steps) {
  FaultRuntime* faults = run_.c_.faults;
  const bool due = run_.c_.checkpoint->rewind_due ? run_.c_.checkpoint->rewind_due(rank_, steps)
                                                  : faults->rewind_due(rank_, steps);
  if (!due) return nullptr;
  const std::shared_ptr<const Checkpoint> c = run_.rewind_to(steps);
  if (faults)
    faults->rewound(rank_, steps, c->header.step, resume_point(c->ranks[0]).elapsed,
                    run_.c_.sched->now(run_.c_.sched->current()));
  return &c->ranks[static_cast<size_t>(rank_)];
}

std::optional<RankRejoin> InprocRankHost::after_kill(WorkerEnv& env, const WorkerRecord& rec) {
  FaultRuntime* faults = run_.c_.faults;
  if (!faults || !faults->will_restart(rank_)) {
    killed();
    return std::nullopt;
  }
  // Killed, and restarted later: dead until its group hands it the group's model at the restart's
  // boundary, then on from there with its own times, series and data.
  FirstLife life{env.times, env.exchanges, std::nullopt};
  // A full recovery may restart it ("then": "restarts"), or may never come: it leaves the finish
  // line's count meanwhile, and gives up once every live worker has finished.
  const bool by_recovery = faults->restarts_on_recovery() && faults->full_recovery_possible();
  if (by_recovery) run_.virtual_line_drop(run_.vfinish_, run_.t_end_);
  rejoin_ = faults->await_restart(env, [&] { return by_recovery && run_.vfinish_.released.has_value(); });
  if (!rejoin_) return std::nullopt;
  FaultRuntime::Rejoin& j = *rejoin_;
  // Back in the group its coordinator described, in the tag epoch every rank moved to.
  env.ring = j.ring;
  if (intra_) {
    const auto pos = std::find(j.members.begin(), j.members.end(), rank_) - j.members.begin();
    intra_ = join_transport_group(net_, j.members, static_cast<int>(pos), j.group_tags);
    env.intra = intra_.get();
  }
  RankRejoin back;
  back.from_checkpoint = j.from_checkpoint;
  back.other_site = j.other_site;
  back.tag_epoch = j.tag_epoch;
  back.steps = j.steps;
  if (j.from_checkpoint) {
    // A restarted process: its own state from the checkpoint the survivors went back to, in their
    // grown groups; it counts at the finish line again.
    run_.c_.sched->update([&] { --run_.vfinish_.arrived; });
    restart_checkpoint_ = run_.rewind_to(j.steps);
    restart_state_ = restart_checkpoint_->ranks[static_cast<size_t>(rank_)];
    back.state = &restart_state_;
  } else {
    back.state = &j.state;
    life.series = FirstLife::Series{rec.loss, rec.step_end_s, j.killed_at_step, j.steps};
  }
  back.life = std::move(life);
  return back;
}

void InprocRankHost::killed() {
  if (run_.c_.sched) run_.virtual_line_drop(run_.vfinish_, run_.t_end_);
}

void InprocRankHost::failed() {
  if (run_.c_.sched) return;
  if (!started_) run_.start_line_.arrive_and_drop();
  run_.finish_line_.arrive_and_drop();
}

}  // namespace geotb::engine
