#include "engine/hosts/socket_host.h"

#include "engine/checkpoint/worker_state.h"
#include "engine/errors.h"

namespace geotb::engine {

SocketRankHost::SocketRankHost(SocketRankHostConfig c) : c_(std::move(c)) {
  if (checkpoints() && !c_.ckpt->requests_file.empty())
    requests_ = std::make_unique<CheckpointRequestFile>(c_.ckpt->requests_file, c_.world);
}

Checkpoint SocketRankHost::load_own(const std::string& why) const {
  if (c_.ckpt->dir.empty()) throw RunError("rank " + std::to_string(c_.rank) + ": " + why + " without a checkpoint directory");
  return load_checkpoint(c_.ckpt->dir + "/" + c_.run_name,
                         {.scenario_hash = c_.ckpt->scenario_hash, .strategy = c_.run_name, .world = c_.world}, {c_.rank});
}

RankRejoin SocketRankHost::rejoin_from(RejoinMessage& m) {
  RankRejoin back;
  back.tag_epoch = m.tag_epoch;
  back.steps = m.steps;
  const RankReport& pr = *c_.predecessor;
  back.life = FirstLife{pr.times, pr.exchanges, std::nullopt};
  if (m.state.entries.empty()) {
    // A full recovery's restart: its own state from the checkpoint the survivors went back to (the
    // last complete one: none completes after a kill), its own shard where it left it there, in
    // the survivors' tag epoch; only its time accounting and exchange log are its predecessor's
    // (a full recovery never restarts a DC leader, whose log it is: empty here).
    restart_ = load_own("restarted by a full recovery");
    back.from_checkpoint = true;
    back.state = &restart_->ranks[static_cast<size_t>(c_.rank)];
  } else {
    // From the group's state at the boundary, on its own shard; its own series kept.
    back.state = &m.state;
    back.life.series = FirstLife::Series{pr.loss, pr.step_end_s, *pr.faults->killed_at_step, m.steps};
  }
  return back;
}

std::chrono::nanoseconds SocketRankHost::start_line() {
  store_barrier(*c_.store, c_.key + "start", c_.world);
  t_start_ = c_.clock->now();
  if (c_.faults) c_.faults->port.started(t_start_);
  if (c_.rank == 0 && c_.started) c_.started();
  return t_start_;
}

std::chrono::nanoseconds SocketRankHost::restart_line(std::chrono::nanoseconds) {
  t_start_ = c_.clock->now();  // its own instant: the others passed the start line long ago
  return t_start_;
}

void SocketRankHost::finish_line() {
  // Training is over here: a peer that leaves after the barrier (a lossy WAN can turn its goodbye
  // into a reset) is no death to recover from.
  if (c_.faults) c_.faults->port.done(*c_.env);
  store_barrier(*c_.store, c_.key + "end", c_.world);  // a killed rank arrived at its kill point
  t_end_ = c_.clock->now();
}

bool SocketRankHost::checkpoint_due(int steps) {
  const int every = c_.ckpt->every_steps;
  return requests_ ? requests_->due(c_.rank, steps, every) : every > 0 && steps % every == 0;
}

std::optional<WanCounters> SocketRankHost::checkpoint_wan_counters() {
  // This rank's WAN counters so far (the report's totals cover the whole run); a restarted rank's
  // with its predecessor's, as its report counts them.
  const model::WanSent before = c_.predecessor ? c_.predecessor->wan_sent : model::WanSent{};
  return WanCounters{before.messages + c_.net->wan_messages(), before.payload_bytes + c_.net->wan_payload_bytes(),
                     before.wire_bytes + c_.net->wan_wire_bytes(), std::nullopt};
}

void SocketRankHost::checkpoint_commit(int steps, const StateBuffers& state) {
  const CheckpointHeader h{.scenario_hash = c_.ckpt->scenario_hash, .strategy = c_.run_name, .world = c_.world, .step = steps};
  const std::string step_dir = checkpoint_step_dir(c_.ckpt->dir, c_.run_name, steps);
  write_rank_checkpoint(step_dir, h, c_.rank, state);
  // The last rank to have written completes it (the store counts; nobody waits).
  if (store_add(*c_.store, c_.key + "ckpt/" + std::to_string(steps), 1) == c_.world) {
    complete_checkpoint(c_.ckpt->dir, h);
    if (c_.ckpt->written) c_.ckpt->written(steps, step_dir);
  }
}

const StateBuffers* SocketRankHost::rewind(int steps) {
  if (!c_.faults->port.rewind_due(steps)) return nullptr;
  back_ = load_own("goes back to a checkpoint");
  const StateBuffers& mine = back_->ranks[static_cast<size_t>(c_.rank)];
  c_.faults->port.rewinding(steps, back_->header.step, resume_point(mine).elapsed);
  return &mine;
}

std::optional<RankRejoin> SocketRankHost::after_kill(WorkerEnv&, const WorkerRecord&) {
  // Stopped dead before the step's synchronisation: no goodbye to anyone (the transport is not
  // closed); what it sent before its death arrives (as in the embedded fabric).
  c_.sock->drain(c_.peer_timeout);
  // It counts as arrived at the end barrier and as left: the live ranks wait for nobody dead,
  // whether the timeline's kills fired or not (a kill at an instant past the end does not). A
  // rank whose restart follows comes back to arrive and leave as its new process.
  if (!c_.faults->port.restarted_after(*c_.faults->port.log().killed_at_step)) {
    const int P = c_.world;
    if (store_add(*c_.store, c_.key + "end", 1) == P) store_set(*c_.store, c_.key + "end/done", {1});
    if (c_.serve_store && store_add(*c_.store, c_.key + "left", 1) == P - 1) store_set(*c_.store, c_.key + "left/done", {1});
  }
  return std::nullopt;
}

}  // namespace geotb::engine
