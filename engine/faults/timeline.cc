#include "engine/faults/timeline.h"

namespace geotb::engine {

RankFaultTimeline::RankFaultTimeline(const model::FaultPlan& plan, const model::RankLayout& layout, int rank)
    : plan_(plan), layout_(layout), rank_(rank), slow_(plan.events.size()) {}

std::optional<double> RankFaultTimeline::step_begins(int step, Nanos elapsed, double at_s, const AddRecord& add,
                                                     const EndRecord& end) {
  std::optional<double> factor;
  for (size_t i = 0; i < plan_.events.size(); ++i) {
    const model::FaultEvent& e = plan_.events[i];
    if (e.kind != model::FaultEvent::Kind::kSlow || layout_.rank_of(e.dc, e.worker) != rank_) continue;
    Slow& s = slow_[i];
    if (!s.started) {
      if (!(e.at_step ? step >= *e.at_step : elapsed >= *e.at)) continue;
      s.started = true;
      s.step = step;
      s.start = elapsed;
      factor = e.factor;
      model::FaultRecord r;
      r.event = "slow";
      r.rank = rank_;
      r.dc = e.dc;
      r.worker = e.worker;
      r.at_s = at_s;
      r.step = step;
      r.policy = "none";
      r.factor = e.factor;
      s.record = add(r);
    } else if (!s.ended && (e.steps ? step >= s.step + *e.steps : elapsed - s.start >= *e.duration)) {
      s.ended = true;
      factor = 1.0;
      end(s.record, at_s);
    }
  }
  return factor;
}

bool RankFaultTimeline::kill_due(int step, Nanos elapsed) {
  for (size_t i = 0; i < plan_.events.size(); ++i) {
    const model::FaultEvent& e = plan_.events[i];
    if (e.kind != model::FaultEvent::Kind::kKill || layout_.rank_of(e.dc, e.worker) != rank_ || fired_.count(i)) continue;
    if (e.at_step ? *e.at_step == step : elapsed >= *e.at) {
      fired_.insert(i);
      return true;
    }
  }
  return false;
}

}  // namespace geotb::engine
