// PowerSGD as torch's powerSGD_hook computes it (kernels/powersgd.h has the contract).
#include "kernels/powersgd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>

namespace geotb::kernels {

std::string validate(const PowerSgdConfig& c) {
  std::ostringstream os;
  if (c.rank < 1) {
    os << "matrix_approximation_rank: " << c.rank << ": must be at least 1";
  } else if (c.start_iter < 0) {
    os << "start_powerSGD_iter: " << c.start_iter << ": must be at least 0";
  } else if ((c.error_feedback || c.warm_start) && c.start_iter <= 1) {
    // PowerSGDState's own check: DDP rebuilds its buckets at iteration 1.
    os << "start_powerSGD_iter: " << c.start_iter
       << ": must be above 1 with use_error_feedback or warm_start (PowerSGDState's rule)";
  } else if (!std::isfinite(c.min_compression_rate) || c.min_compression_rate < 0) {
    os << "min_compression_rate: " << c.min_compression_rate << ": must be a finite number >= 0";
  } else if (!std::isfinite(c.orthogonalization_epsilon) || c.orthogonalization_epsilon < 0) {
    os << "orthogonalization_epsilon: " << c.orthogonalization_epsilon << ": must be a finite number >= 0";
  }
  return os.str();
}

// ---- numpy's legacy randint ------------------------------------------------------------------

NumpyRandint::NumpyRandint(uint32_t seed) : mt_(seed) {}

uint32_t NumpyRandint::next() {
  // RandomState.randint(10**9): range 999999999 fits 32 bits, so numpy draws 32-bit words masked
  // to the smallest covering mask (2^30 - 1) until one is in range (buffered_bounded_masked_uint32).
  constexpr uint32_t kRange = 999'999'999u, kMask = (1u << 30) - 1;
  uint32_t v;
  do v = static_cast<uint32_t>(mt_()) & kMask;
  while (v > kRange);
  return v;
}

std::vector<uint32_t> NumpyRandint::save() const {
  std::ostringstream os;
  os << mt_;  // the standard's textual state: 624 words and the position
  std::istringstream is(os.str());
  std::vector<uint32_t> v;
  for (uint64_t w; is >> w;) v.push_back(static_cast<uint32_t>(w));
  return v;
}

void NumpyRandint::restore(const std::vector<uint32_t>& state) {
  if (state.size() != std::mt19937::state_size + 1)
    throw std::invalid_argument("rng: " + std::to_string(state.size()) + " words, expected " +
                                std::to_string(std::mt19937::state_size + 1));
  std::ostringstream os;
  for (size_t i = 0; i < state.size(); ++i) os << (i ? " " : "") << state[i];
  std::istringstream is(os.str());
  std::mt19937 mt;
  is >> mt;
  if (!is && !is.eof()) throw std::invalid_argument("rng: not an MT19937 state");
  mt_ = mt;
}

// ---- the plan ----------------------------------------------------------------------------------

PowerSgdPlan PowerSgdPlan::make(const std::vector<std::vector<int64_t>>& shapes, int rank,
                                double min_compression_rate) {
  PowerSgdPlan plan;
  for (size_t t = 0; t < shapes.size(); ++t) {
    const auto& s = shapes[t];
    if (s.empty()) throw std::invalid_argument("tensor " + std::to_string(t) + ": no dimensions");
    uint64_t rest = 1;
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] <= 0)
        throw std::invalid_argument("tensor " + std::to_string(t) + ": dimension " + std::to_string(d) + ": " +
                                    std::to_string(s[d]) + ": must be positive");
      if (d > 0) rest *= static_cast<uint64_t>(s[d]);
    }
    PowerSgdTensor x;
    x.offset = plan.numel;
    x.rows = static_cast<uint64_t>(s[0]);
    x.cols = rest;
    x.rank = static_cast<int>(std::min<uint64_t>({x.rows, x.cols, static_cast<uint64_t>(rank)}));
    // torch's _should_compress: compressed_size * min_compression_rate < uncompressed_size.
    const double compressed = static_cast<double>((x.rows + x.cols) * static_cast<uint64_t>(x.rank));
    x.compressed = compressed * min_compression_rate < static_cast<double>(x.rows * x.cols);
    if (x.compressed) {
      x.p_offset = plan.p_size;
      x.q_offset = plan.q_size;
      plan.p_size += x.rows * static_cast<uint64_t>(x.rank);
      plan.q_size += x.cols * static_cast<uint64_t>(x.rank);
    } else {
      x.u_offset = plan.uncompressed;
      plan.uncompressed += x.rows * x.cols;
    }
    plan.numel += x.rows * x.cols;
    plan.tensors.push_back(x);
  }
  return plan;
}

// ---- orthogonalisation ------------------------------------------------------------------------

namespace {

// Gram-Schmidt as torch's _orthogonalize_gram_schmidt: the matrix stays float between steps.
uint64_t gram_schmidt(float* m, size_t rows, size_t cols, double epsilon) {
  uint64_t zero = 0;
  for (size_t i = 0; i < cols; ++i) {
    double ss = 0;
    for (size_t r = 0; r < rows; ++r) ss += static_cast<double>(m[r * cols + i]) * m[r * cols + i];
    const float norm = static_cast<float>(std::sqrt(ss));
    if (epsilon == 0 && norm == 0) {
      ++zero;  // torch: 0/0 = NaN everywhere after; its handler's intent: a zero column
      for (size_t r = 0; r < rows; ++r) m[r * cols + i] = 0.0f;
    } else {
      const float div = epsilon == 0 ? norm : static_cast<float>(static_cast<double>(norm) + epsilon);
      for (size_t r = 0; r < rows; ++r) m[r * cols + i] /= div;
    }
    for (size_t j = i + 1; j < cols; ++j) {
      double dot = 0;
      for (size_t r = 0; r < rows; ++r) dot += static_cast<double>(m[r * cols + i]) * m[r * cols + j];
      const float d = static_cast<float>(dot);
      for (size_t r = 0; r < rows; ++r) m[r * cols + j] -= d * m[r * cols + i];
    }
  }
  return zero;
}

// Q of a Householder QR, as LAPACK's geqr2 + org2r (what torch.linalg.qr runs for a few columns):
// reflector j maps column j onto beta e_j with beta = -sign(alpha) |(alpha, x)|, no reflection
// when x = 0; Q = H_0 ... H_{c-1} applied to the first c columns of the identity.
void householder_q(float* m, size_t rows, size_t cols) {
  std::vector<double> a(m, m + rows * cols), tau(cols, 0.0);
  auto at = [&](size_t r, size_t c) -> double& { return a[r * cols + c]; };
  for (size_t j = 0; j < cols; ++j) {
    const double alpha = at(j, j);
    double xs = 0;
    for (size_t r = j + 1; r < rows; ++r) xs += at(r, j) * at(r, j);
    if (xs == 0) continue;  // tau 0: H = I
    const double beta = -std::copysign(std::hypot(alpha, std::sqrt(xs)), alpha);
    tau[j] = (beta - alpha) / beta;
    for (size_t r = j + 1; r < rows; ++r) at(r, j) /= (alpha - beta);
    at(j, j) = beta;
    for (size_t c = j + 1; c < cols; ++c) {
      double w = at(j, c);
      for (size_t r = j + 1; r < rows; ++r) w += at(r, j) * at(r, c);
      at(j, c) -= tau[j] * w;
      for (size_t r = j + 1; r < rows; ++r) at(r, c) -= tau[j] * w * at(r, j);
    }
  }
  std::vector<double> q(rows * cols, 0.0);
  for (size_t c = 0; c < cols; ++c) q[c * cols + c] = 1.0;
  for (size_t jj = cols; jj-- > 0;) {
    if (tau[jj] == 0) continue;
    for (size_t c = 0; c < cols; ++c) {
      double w = q[jj * cols + c];
      for (size_t r = jj + 1; r < rows; ++r) w += at(r, jj) * q[r * cols + c];
      q[jj * cols + c] -= tau[jj] * w;
      for (size_t r = jj + 1; r < rows; ++r) q[r * cols + c] -= tau[jj] * w * at(r, jj);
    }
  }
  for (size_t i = 0; i < rows * cols; ++i) m[i] = static_cast<float>(q[i]);
}

/// out (rows x cols, row-major) = A B with A(i, k) = a[i a_row + k a_col] and B(k, j) =
/// b[k b_row + j b_col] (a transpose is read in place): each sum in double over k ascending,
/// rounded once to float.
void product(const float* a, size_t a_row, size_t a_col, const float* b, size_t b_row, size_t b_col, float* out,
             size_t rows, size_t inner, size_t cols) {
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (size_t k = 0; k < inner; ++k) s += static_cast<double>(a[i * a_row + k * a_col]) * b[k * b_row + j * b_col];
      out[i * cols + j] = static_cast<float>(s);
    }
}

}  // namespace

uint64_t orthogonalize(float* m, size_t rows, size_t cols, double epsilon) {
  if (cols > rows) throw std::invalid_argument("orthogonalize: " + std::to_string(cols) + " columns > " +
                                               std::to_string(rows) + " rows");
  if (cols <= 2) return gram_schmidt(m, rows, cols, epsilon);
  householder_q(m, rows, cols);
  return 0;
}

// ---- the iteration ----------------------------------------------------------------------------

PowerSgd::PowerSgd(const PowerSgdConfig& cfg, const std::vector<std::vector<int64_t>>& shapes)
    : cfg_(cfg), rng_(cfg.random_seed) {
  if (const std::string e = validate(cfg); !e.empty()) throw std::invalid_argument(e);
  plan_ = PowerSgdPlan::make(shapes, cfg.rank, cfg.min_compression_rate);
}

void PowerSgd::begin(float* g, float* unc, float* p, NormalSource* normal) {
  const size_t n = plan_.numel;
  if (cfg_.error_feedback) {
    if (error_.empty()) error_.assign(n, 0.0f);  // torch creates the zero error here
    else
      for (size_t i = 0; i < n; ++i) g[i] += error_[i];
    copy_.assign(g, g + n);
  }
  const bool fresh = !cfg_.warm_start || !has_memory_;
  if (fresh) {
    p_.assign(plan_.p_size, 0.0f);
    q_.assign(plan_.q_size, 0.0f);
    // torch draws the seed whenever it randomises, even for a bucket with nothing to compress.
    const uint32_t seed = rng_.next();
    if (plan_.q_size) {
      if (!normal) throw std::logic_error("PowerSgd::begin: a fresh Q needs a NormalSource");
      normal->seed(seed);
    }
  }
  for (const PowerSgdTensor& t : plan_.tensors) {
    if (!t.compressed) {
      std::memcpy(unc + t.u_offset, g + t.offset, t.rows * t.cols * sizeof(float));
      continue;
    }
    float* q = q_.data() + t.q_offset;
    const size_t r = static_cast<size_t>(t.rank);
    if (fresh) normal->fill(q, t.cols * r);
    zero_columns_ += orthogonalize(q, t.cols, r, cfg_.orthogonalization_epsilon);
    // P = M Q: (rows x cols) (cols x r)
    product(g + t.offset, t.cols, 1, q, r, 1, p + t.p_offset, t.rows, t.cols, r);
  }
  has_memory_ = true;
}

void PowerSgd::after_p(float* g, const float* unc_sum, const float* p_sum, int world, float* q_out) {
  const float w = static_cast<float>(world);
  std::copy(p_sum, p_sum + plan_.p_size, p_.begin());
  for (const PowerSgdTensor& t : plan_.tensors) {
    if (!t.compressed) {
      for (size_t i = 0; i < t.rows * t.cols; ++i) g[t.offset + i] = unc_sum[t.u_offset + i] / w;
      continue;
    }
    const size_t r = static_cast<size_t>(t.rank);
    float* pp = p_.data() + t.p_offset;
    zero_columns_ += orthogonalize(pp, t.rows, r, cfg_.orthogonalization_epsilon);
    // Q = M^T P: (cols x rows) (rows x r), M^T read in place
    product(g + t.offset, 1, t.cols, pp, r, 1, q_out + t.q_offset, t.cols, t.rows, r);
  }
}

void PowerSgd::finish(float* g, const float* q_sum, int world) {
  const float w = static_cast<float>(world);
  for (size_t i = 0; i < plan_.q_size; ++i) q_[i] = q_sum[i] / w;
  for (const PowerSgdTensor& t : plan_.tensors) {
    if (!t.compressed) continue;
    const size_t r = static_cast<size_t>(t.rank);
    // M = P Q^T: (rows x r) (r x cols), Q^T read in place
    product(p_.data() + t.p_offset, r, 1, q_.data() + t.q_offset, 1, r, g + t.offset, t.rows, r, t.cols);
  }
  if (cfg_.error_feedback)
    for (size_t i = 0; i < plan_.numel; ++i) error_[i] = copy_[i] - g[i];
  if (!cfg_.warm_start) has_memory_ = false;
  ++iter_;
}

PowerSgd::State PowerSgd::save() const {
  State s{.iter = iter_, .has_memory = has_memory_ && cfg_.warm_start, .rng = {}, .q = {}, .error = error_};
  if (!cfg_.warm_start) s.rng = rng_.save();
  if (s.has_memory) s.q = q_;
  return s;
}

void PowerSgd::restore(const State& s) {
  auto check = [](const char* what, size_t got, size_t want, bool may_be_empty) {
    if (got != want && !(may_be_empty && got == 0))
      throw std::invalid_argument(std::string(what) + ": " + std::to_string(got) + " values, expected " +
                                  std::to_string(want));
  };
  if (s.iter < 0) throw std::invalid_argument("iter: " + std::to_string(s.iter) + ": negative");
  if (s.has_memory && !cfg_.warm_start) throw std::invalid_argument("has_memory: true without warm start");
  if (s.has_memory) check("q", s.q.size(), plan_.q_size, false);  // else Q is drawn afresh: s.q unread
  check("error", s.error.size(), plan_.numel, true);
  if (!s.rng.empty()) rng_.restore(s.rng);
  iter_ = s.iter;
  has_memory_ = s.has_memory;
  p_.assign(plan_.p_size, 0.0f);
  q_ = s.has_memory ? s.q : std::vector<float>(plan_.q_size, 0.0f);
  error_ = s.error;
}

}  // namespace geotb::kernels
