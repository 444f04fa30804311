#include "engine/checkpoint/worker_state.h"

#include <stdexcept>

namespace geotb::engine {

namespace {

/// ExchangeRecord as a fixed-size record (host byte order).
struct PackedExchange {
  int64_t step;
  uint64_t bytes_sent;
  double seconds, lower_bound_s, rtt_s;
  int64_t K;  // adaptive K's decision at this round; 0: a fixed K
};

}  // namespace

void save_worker_state(WorkerEnv& env, Strategy& strategy, const BatchSampler& sampler, const WorkerRecord& rec,
                       int steps_done, std::chrono::nanoseconds elapsed, StateBuffers& out) {
  StateWriter w(out);
  // The strategy first: its save() may complete the round in flight (which logs an exchange and
  // charges time), and what follows must include that.
  StateWriter ws = w.sub("strategy");
  strategy.save(env, ws);
  const size_t n = env.learner->num_params();
  w.i64("step", steps_done);
  w.i64("clock.elapsed_ns", elapsed.count());
  w.bytes("params", env.learner->params(), n * sizeof(float));
  w.floats("sgd.momentum", env.opt->momentum_buffer());
  w.flag("sgd.first", env.opt->before_first_step());
  const BatchSampler::Position p = sampler.position();
  w.vec("sampler.order", p.order);
  w.u64("sampler.pos", p.pos);
  w.u64("sampler.epoch", p.epoch);
  w.u64("times.compute_ns", env.times.compute_ns);
  w.u64("times.exposed_comm_ns", env.times.exposed_comm_ns);
  w.u64("times.compress_ns", env.times.compress_ns);
  w.u64("times.overlapped_comm_ns", env.times.overlapped_comm_ns);
  std::vector<PackedExchange> xs;
  for (const ExchangeRecord& e : env.exchanges) xs.push_back({e.step, e.bytes_sent, e.seconds, e.lower_bound_s, e.rtt_s, e.K});
  w.vec("exchanges", xs);
  const auto done = static_cast<size_t>(steps_done);
  w.vec("record.loss", std::vector<double>(rec.loss.begin(), rec.loss.begin() + static_cast<std::ptrdiff_t>(std::min(done, rec.loss.size()))));
  w.vec("record.step_end_s",
        std::vector<double>(rec.step_end_s.begin(),
                            rec.step_end_s.begin() + static_cast<std::ptrdiff_t>(std::min(done, rec.step_end_s.size()))));
  std::vector<int64_t> snap_steps(rec.snapshot_steps.begin(), rec.snapshot_steps.end());
  w.vec("record.snapshot_steps", snap_steps);
  std::vector<float> snaps;
  for (const auto& s : rec.snapshots) snaps.insert(snaps.end(), s.begin(), s.end());
  w.floats("record.snapshots", snaps);
}

ResumePoint rewind_worker(const StateBuffers& state, WorkerEnv& env, std::unique_ptr<Strategy>& strategy,
                          const std::function<std::unique_ptr<Strategy>()>& make, BatchSampler& sampler,
                          WorkerRecord& rec, int total_steps) {
  StateBuffers settled;
  StateWriter w(settled);
  strategy->save(env, w);  // completes what is in flight, so the old strategy leaves nothing behind
  strategy = make();
  const WorkerTimes spent = env.times;
  std::vector<ExchangeRecord> logged = env.exchanges;
  const std::vector<double> ends = rec.step_end_s;
  const ResumePoint p = restore_worker_state(state, env, *strategy, sampler, rec, total_steps);
  env.times = spent;
  env.exchanges = std::move(logged);
  for (size_t i = static_cast<size_t>(p.steps_done); i < ends.size() && i < rec.step_end_s.size(); ++i)
    rec.step_end_s[i] = ends[i];
  return p;
}

ResumePoint resume_point(const StateBuffers& in) {
  StateReader r(in);
  ResumePoint p;
  const int64_t step = r.i64("step");
  if (step < 0 || step > 1000000000) throw StateError("step: " + std::to_string(step) + ": out of range");
  p.steps_done = static_cast<int>(step);
  p.elapsed = std::chrono::nanoseconds(r.i64("clock.elapsed_ns"));
  if (p.elapsed.count() < 0) throw StateError("clock.elapsed_ns: " + std::to_string(p.elapsed.count()) + ": negative");
  return p;
}

ResumePoint restore_worker_state(const StateBuffers& in, WorkerEnv& env, Strategy& strategy, BatchSampler& sampler,
                                 WorkerRecord& rec, int total_steps) {
  const ResumePoint p = resume_point(in);
  if (p.steps_done >= total_steps)
    throw StateError("step: " + std::to_string(p.steps_done) + ": the run has " + std::to_string(total_steps) +
                     " steps: nothing left to resume");
  StateReader r(in);
  r.i64("step");
  r.i64("clock.elapsed_ns");
  const size_t n = env.learner->num_params();
  const auto done = static_cast<size_t>(p.steps_done);
  r.floats("params", env.learner->params(), n);
  std::vector<float> m;
  r.floats("sgd.momentum", m, n);
  const bool first = r.flag("sgd.first");
  BatchSampler::Position pos;
  r.vec("sampler.order", pos.order);
  pos.pos = r.u64("sampler.pos");
  pos.epoch = r.u64("sampler.epoch");
  try {
    env.opt->restore(m, first);
    sampler.set_position(pos);
  } catch (const std::invalid_argument& e) {
    throw StateError(e.what());
  }
  env.times.compute_ns = r.u64("times.compute_ns");
  env.times.exposed_comm_ns = r.u64("times.exposed_comm_ns");
  env.times.compress_ns = r.u64("times.compress_ns");
  env.times.overlapped_comm_ns = r.u64("times.overlapped_comm_ns");
  std::vector<PackedExchange> xs;
  r.vec("exchanges", xs);
  env.exchanges.clear();
  for (const PackedExchange& x : xs)
    env.exchanges.push_back({.step = static_cast<int>(x.step), .bytes_sent = x.bytes_sent, .seconds = x.seconds,
                             .lower_bound_s = x.lower_bound_s, .rtt_s = x.rtt_s,
                             .K = static_cast<int>(x.K)});
  std::vector<double> loss, ends;
  r.vec("record.loss", loss);
  if (loss.size() != done)
    throw StateError("record.loss: " + std::to_string(loss.size()) + " steps, the checkpoint is at step " +
                     std::to_string(done));
  std::copy(loss.begin(), loss.end(), rec.loss.begin());
  r.vec("record.step_end_s", ends);
  if (!rec.step_end_s.empty()) {
    if (ends.size() != done)
      throw StateError("record.step_end_s: " + std::to_string(ends.size()) + " steps, the checkpoint is at step " +
                       std::to_string(done));
    std::copy(ends.begin(), ends.end(), rec.step_end_s.begin());
  }
  std::vector<int64_t> snap_steps;
  r.vec("record.snapshot_steps", snap_steps);
  std::vector<float> snaps;
  r.floats("record.snapshots", snaps, snap_steps.size() * n);
  rec.snapshot_steps.assign(snap_steps.begin(), snap_steps.end());
  rec.snapshots.clear();
  for (size_t i = 0; i < snap_steps.size(); ++i)
    rec.snapshots.emplace_back(snaps.begin() + static_cast<std::ptrdiff_t>(i * n),
                               snaps.begin() + static_cast<std::ptrdiff_t>((i + 1) * n));
  StateReader rs = r.sub("strategy");
  strategy.restore(env, rs);
  for (const auto& e : in.entries)
    if (e.name.starts_with("mode.")) r.raw(e.name);  // the mode's own: it reads them itself
  r.finish();
  return p;
}

StateBuffers with_wan_counters(const StateBuffers& state, const WanCounters& c) {
  StateBuffers out = state;
  StateWriter w(out, "mode.wan.");
  w.u64("messages", c.messages);
  w.u64("payload_bytes", c.payload_bytes);
  w.u64("wire_bytes", c.wire_bytes);
  if (c.retransmissions) w.u64("retransmissions", *c.retransmissions);
  return out;
}

std::optional<WanCounters> wan_counters_of(const StateBuffers& state) {
  if (!state.find("mode.wan.messages")) return std::nullopt;
  StateReader rd(state, "mode.wan.");
  WanCounters c;
  c.messages = rd.u64("messages");
  c.payload_bytes = rd.u64("payload_bytes");
  c.wire_bytes = rd.u64("wire_bytes");
  if (state.find("mode.wan.retransmissions")) c.retransmissions = rd.u64("retransmissions");
  return c;
}

}  // namespace geotb::engine
