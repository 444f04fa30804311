#include "engine/faults/estimate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/strategy.h"

namespace geotb::engine {

double cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return aa > 0 && bb > 0 ? std::clamp(ab / std::sqrt(aa * bb), -1.0, 1.0) : 0.0;
}

double rel_error(const float* est, const float* truth, size_t n) {
  double dd = 0, tt = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(est[i]) - truth[i];
    dd += d * d;
    tt += static_cast<double>(truth[i]) * truth[i];
  }
  return tt > 0 ? std::sqrt(dd / tt) : std::sqrt(dd);
}

double estimate_weight(const std::string& weights, double c) {
  if (weights == "seed") return 1.0 + c > 1e-9 ? 1.0 / (1.0 + c) : 1e9;
  if (weights == "similarity") return std::max(c, 0.0);
  return 1.0;
}

std::vector<float> batch_feature(const float* x, size_t count, const std::vector<float>& center) {
  const size_t F = center.size();
  std::vector<double> acc(F, 0.0);
  for (size_t r = 0; r < count; ++r)
    for (size_t k = 0; k < F; ++k) acc[k] += x[r * F + k];
  std::vector<float> out(F);
  for (size_t k = 0; k < F; ++k)
    out[k] = static_cast<float>(acc[k] / static_cast<double>(count ? count : 1) - center[k]);
  return out;
}

double survivor_factor(int L, int N, const std::vector<double>& own_w, const std::vector<double>& W) {
  double share = 1.0;
  for (size_t d = 0; d < own_w.size(); ++d) share += own_w[d] / W[d];
  return static_cast<double>(L) / static_cast<double>(N) * share;
}

void EstimateBoard::put(int dc, int step, int rank, Entry e) {
  std::lock_guard<std::mutex> lk(mu_);
  entries_[{dc, step}][rank] = std::move(e);
}

std::map<int, EstimateBoard::Entry> EstimateBoard::take(int dc, int step) {
  std::lock_guard<std::mutex> lk(mu_);
  std::map<int, Entry> out;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first.first == dc && it->first.second <= step) {
      if (it->first.second == step) out = std::move(it->second);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void EstimateBoard::record(const model::EstimateRecord& r) {
  std::lock_guard<std::mutex> lk(mu_);
  records_.push_back(r);
}

std::vector<model::EstimateRecord> EstimateBoard::records() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<model::EstimateRecord> r = records_;
  std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) {
    return a.step != b.step ? a.step < b.step : a.rank < b.rank;
  });
  return r;
}

struct GradientEstimator::Dead {
  int rank = 0;
  std::unique_ptr<BatchSampler> sampler;
  int next_step = 0;               // the step whose batch the sampler gives next
  std::vector<float> bx;           // its batch of `batch_step`: inputs (batch x features), labels
  std::vector<int64_t> by;
  int batch_step = -1;
  std::vector<float> feature;      // of `feature_step`'s batch
  int feature_step = -1;
  bool has_last = false;           // last_gradient: recovered
  std::vector<float> last;         // its gradient of `last_step`
  int last_step = -1;
};

GradientEstimator::GradientEstimator(Setup s) : s_(std::move(s)), N_(static_cast<int>(s_.dc_ranks.size())) {
  if (!s_.train || !s_.center || !s_.board || N_ < 1) throw std::invalid_argument("GradientEstimator: incomplete setup");
  group_ = s_.dc_ranks;
}

GradientEstimator::~GradientEstimator() = default;

void GradientEstimator::set_group(const std::vector<int>& group) {
  group_ = group;
  for (int r : s_.dc_ranks) {
    const bool alive = std::find(group.begin(), group.end(), r) != group.end();
    if (alive) {
      dead_.erase(r);
      fresh_.erase(std::remove(fresh_.begin(), fresh_.end(), r), fresh_.end());
    } else if (!dead_.count(r)) {
      auto d = std::make_unique<Dead>();
      d->rank = r;
      dead_[r] = std::move(d);
      fresh_.push_back(r);
    }
  }
}

void GradientEstimator::batch(int step, const float* x, size_t count) {
  step_ = step;
  if (!dead_.empty() && (s_.cfg.weights == "seed" || s_.cfg.weights == "similarity"))
    feature_ = batch_feature(x, count, *s_.center);
}

void GradientEstimator::load_batch(Dead& d, int step) {
  if (d.batch_step == step) return;  // read once per step: for the weights, then for the ground truth
  if (!d.sampler || d.next_step > step) {
    d.sampler = std::make_unique<BatchSampler>(s_.shards.at(d.rank), s_.seed, static_cast<uint64_t>(d.rank));
    d.next_step = 0;
  }
  std::vector<uint32_t> idx;
  for (; d.next_step < step; ++d.next_step) d.sampler->next(s_.batch, idx);
  d.sampler->next(s_.batch, idx);
  d.next_step = step + 1;
  const size_t F = s_.train->features();
  d.bx.resize(idx.size() * F);
  d.by.resize(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    std::memcpy(&d.bx[i * F], &s_.train->images[static_cast<size_t>(idx[i]) * F], F * sizeof(float));
    d.by[i] = s_.train->labels[idx[i]];
  }
  d.batch_step = step;
}

void GradientEstimator::recover_last_gradients(WorkerEnv& env) {
  const size_t n = env.learner->num_params();
  std::vector<int> fresh;
  fresh.swap(fresh_);
  if (prev_step_ < 0) return;  // nothing completed with them: no last gradient (the survivors' mean stands in)
  // Σ over the survivors of their own gradients of prev_step_.
  std::vector<float> sum = prev_own_;
  {
    ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
    env.intra->allreduce_mean(sum.data(), n);
  }
  const double L = static_cast<double>(group_.size());
  // At prev_step_ the group's mean was (Σ_members G + Σ estimates + E · survivors' mean) / N, the
  // members then being the survivors now and the fresh dead: their sum F solves
  // N · mean − est = (S + F)(1 + E / L_then) − ... with S the survivors' sum (see estimate.h).
  const double grow = 1.0 + static_cast<double>(prev_no_last_) / static_cast<double>(prev_members_);
  const double per = 1.0 / static_cast<double>(fresh.size());
  std::vector<float> share(n);
  for (size_t k = 0; k < n; ++k) {
    const double total = (static_cast<double>(N_) * prev_mean_[k] - prev_est_[k]) / grow - L * sum[k];
    share[k] = static_cast<float>(total * per);
  }
  for (int r : fresh) {
    Dead& d = *dead_.at(r);
    d.has_last = true;
    d.last = share;
    d.last_step = prev_step_;
  }
}

void GradientEstimator::before_reduce(WorkerEnv& env) {
  scaled_ = false;
  const size_t n = env.learner->num_params();
  float* g = env.learner->grads();
  const bool last = s_.cfg.weights == "last_gradient";
  const bool weighted = s_.cfg.weights == "seed" || s_.cfg.weights == "similarity";
  if (dead_.empty()) {
    if (last) {
      own_.assign(g, g + n);
      est_sum_.assign(n, 0.0f);
      no_last_ = 0;
    }
    return;
  }
  own_.assign(g, g + n);
  const int L = static_cast<int>(group_.size());
  w_.clear();
  if (weighted) {
    std::vector<float> wf;
    for (auto& [r, d] : dead_) {
      if (d->feature_step != step_) {
        load_batch(*d, step_);
        d->feature = batch_feature(d->bx.data(), d->by.size(), *s_.center);
        d->feature_step = step_;
      }
      wf.push_back(static_cast<float>(estimate_weight(s_.cfg.weights, cosine(d->feature.data(), feature_.data(), feature_.size()))));
    }
    std::vector<float> mean = wf;
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      env.intra->allreduce_mean(mean.data(), mean.size());
    }
    std::vector<double> W(wf.size());
    for (size_t d = 0; d < wf.size(); ++d) {
      W[d] = static_cast<double>(mean[d]) * L;
      if (!(W[d] > 0)) wf[d] = 1.0f, W[d] = L;  // every weight 0 (similarity): the survivors' mean
      w_.push_back(wf[d]);
    }
    const float c = static_cast<float>(survivor_factor(L, N_, w_, W));
    for (size_t k = 0; k < n; ++k) g[k] *= c;
  } else if (last) {
    if (!fresh_.empty()) recover_last_gradients(env);
    est_sum_.assign(n, 0.0f);
    no_last_ = 0;
    for (auto& [r, d] : dead_) {
      if (!d->has_last) {
        ++no_last_;
        continue;
      }
      const float f = static_cast<float>(std::pow(s_.cfg.decay, step_ - d->last_step));
      for (size_t k = 0; k < n; ++k) est_sum_[k] += f * d->last[k];
    }
    const float c = static_cast<float>(static_cast<double>(L + no_last_) / N_);
    const float inv_n = static_cast<float>(1.0 / N_);
    for (size_t k = 0; k < n; ++k) g[k] = c * g[k] + est_sum_[k] * inv_n;
  }
  // "equal": nothing to scale: the allreduce's mean over the survivors is shrink's, exactly.
  s_.board->put(s_.dc, step_, s_.rank, {own_, w_});
  scaled_ = true;
}

void GradientEstimator::after_reduce(WorkerEnv& env) {
  const size_t n = env.learner->num_params();
  float* g = env.learner->grads();
  if (s_.cfg.weights == "last_gradient") {
    prev_step_ = step_;
    prev_own_ = own_;
    prev_mean_.assign(g, g + n);
    prev_est_ = est_sum_;
    prev_members_ = static_cast<int>(group_.size());
    prev_no_last_ = no_last_;
  }
  if (!scaled_ || group_.empty() || group_.front() != s_.rank) return;
  // The ground truth: the dead workers' own gradients, from the group's parameters (not charged).
  const std::map<int, EstimateBoard::Entry> entries = s_.board->take(s_.dc, step_);
  if (entries.empty()) return;
  const std::vector<float> mean_after(g, g + n);
  // Σ_i w_i G_i / Σ_i w_i over the survivors' own gradients, in double.
  auto weighted_mean = [&](auto&& weight_of) {
    std::vector<double> acc(n, 0.0);
    double W = 0;
    for (const auto& [rr, e] : entries) {
      const double w = weight_of(e);
      W += w;
      for (size_t k = 0; k < n; ++k) acc[k] += w * e.grad[k];
    }
    std::vector<float> out(n);
    for (size_t k = 0; k < n; ++k) out[k] = static_cast<float>(acc[k] / W);
    return out;
  };
  const std::vector<float> shrink = weighted_mean([](const EstimateBoard::Entry&) { return 1.0; });
  size_t di = 0;
  for (auto& [r, d] : dead_) {
    load_batch(*d, step_);
    env.learner->forward_backward(d->bx.data(), d->by.data(), d->by.size());
    const std::vector<float> truth(env.learner->grads(), env.learner->grads() + n);
    std::vector<float> est;
    if (s_.cfg.weights == "seed" || s_.cfg.weights == "similarity") {
      est = weighted_mean([di](const EstimateBoard::Entry& e) { return e.w.at(di); });
    } else if (s_.cfg.weights == "last_gradient" && d->has_last) {
      const float f = static_cast<float>(std::pow(s_.cfg.decay, step_ - d->last_step));
      est.resize(n);
      for (size_t k = 0; k < n; ++k) est[k] = f * d->last[k];
    } else {
      est = shrink;
    }
    model::EstimateRecord rec;
    rec.step = step_;
    rec.rank = r;
    rec.dc = s_.dc;
    rec.cosine = cosine(est.data(), truth.data(), n);
    rec.rel_error = rel_error(est.data(), truth.data(), n);
    rec.shrink_cosine = cosine(shrink.data(), truth.data(), n);
    rec.shrink_rel_error = rel_error(shrink.data(), truth.data(), n);
    s_.board->record(rec);
    ++di;
  }
  std::memcpy(g, mean_after.data(), n * sizeof(float));
}

}  // namespace geotb::engine
