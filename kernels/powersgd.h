// PowerSGD (Vogels, Karimireddy, Jaggi, "PowerSGD: Practical Low-Rank Gradient Compression for
// Distributed Optimization", NeurIPS 2019) as PyTorch's DDP communication hook runs it:
// torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py, `powerSGD_hook` and
// `PowerSGDState` (torch 1.13.1, Debian's python3-torch). One PowerSgd object is one replica's
// PowerSGDState for one bucket; the caller does the three allreduces between the phases, so the
// same object serves a DDP group or the leaders of data centers over a WAN. No libtorch here: the
// normal draws of the first Q come from an injected NormalSource (the engine's draws libtorch's
// generator, so that a seed gives torch's Q).
//
// One iteration (PowerSgd::iter() counts them; torch's `state.iter`):
//   iter < start_iter      vanilla: the caller averages the flat tensor (torch divides first,
//                          then allreduces: default_hooks._allreduce_fut). vanilla_done() counts it.
//   otherwise  begin()     g += e (error feedback; e starts at zero); keep g' = g; split the tensors:
//                          each viewed as (shape[0], prod(rest)), rank r = min(rows, cols, rank),
//                          compressed iff (rows + cols) * r * min_compression_rate < rows * cols
//                          (torch's _should_compress; 1-D tensors never pass); Q: the last
//                          iteration's (warm start), or fresh: seed = RandomState(random_seed)
//                          .randint(10^9) (numpy's legacy MT19937), each Q filled with normal
//                          draws from that seed in tensor order; every Q orthogonalised;
//                          P = M Q. Out: the uncompressed tensors (concatenated) and P.
//             caller       allreduce-sum both (P is not divided: it is orthogonalised next)
//             after_p()    uncompressed <- sum / W written back; P <- orthogonalise(sum P);
//                          Q = M^T P. Out: Q.
//             caller       allreduce-sum Q
//             finish()     Q <- sum / W (kept for the warm start); M <- P Q^T written back;
//                          e = g' - g_out (error feedback, every element, the uncompressed ones too).
// Orthogonalisation (torch's _orthogonalize): rank <= 2: Gram-Schmidt, column by column
// col /= (|col| + epsilon), then the rest minus its projection on col; rank > 2:
// torch.linalg.qr, i.e. LAPACK's Householder QR (geqrf + orgqr) whose Q's column signs differ from
// Gram-Schmidt's: reproduced here by a Householder QR. A zero column with epsilon 0: torch divides
// 0 by 0 (its ZeroDivisionError handler, which would fill the column with 0, never runs for a
// tensor) and every later value is NaN; here the column is set to 0, what that handler intends,
// and zero_columns() counts it.
// Arithmetic: products and norms accumulate in double and round once to float; torch's float32
// BLAS rounds differently, by about 1e-7 relative (tests/unit/powersgd_torch_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace geotb::kernels {

/// Standard normal draws for the first Q of each PowerSGD tensor.
class NormalSource {
 public:
  virtual ~NormalSource() = default;
  /// Restarts the stream from `seed` (torch.manual_seed).
  virtual void seed(uint64_t seed) = 0;
  /// The next n draws (one torch.randn(n) call: the split into calls matters to torch's stream).
  virtual void fill(float* out, size_t n) = 0;
};

/// PowerSGDState's hyperparameters, with its defaults.
struct PowerSgdConfig {
  int rank = 1;                       ///< matrix_approximation_rank, >= 1
  int64_t start_iter = 1000;          ///< start_powerSGD_iter: vanilla averaging before it; > 1 with EF or warm start
  double min_compression_rate = 2;    ///< a tensor is compressed only if it saves this factor
  bool error_feedback = true;         ///< use_error_feedback
  bool warm_start = true;             ///< reuse Q from the previous iteration
  double orthogonalization_epsilon = 0;
  uint32_t random_seed = 0;           ///< numpy RandomState's seed of the first Q's
};

/// "" if valid, else "<key>: <value>: <why>" (keys as torch names them).
std::string validate(const PowerSgdConfig& c);

/// numpy.random.RandomState(seed).randint(10**9), draw after draw (legacy MT19937, masked rejection).
class NumpyRandint {
 public:
  explicit NumpyRandint(uint32_t seed);
  uint32_t next();  ///< in [0, 10^9)
  /// MT19937's state (624 words + position), for checkpoints.
  std::vector<uint32_t> save() const;
  void restore(const std::vector<uint32_t>& state);

 private:
  std::mt19937 mt_;  // a value: copies of a PowerSgd draw the same seeds, as replicas do
};

/// One tensor of the bucket as PowerSGD treats it.
struct PowerSgdTensor {
  size_t offset = 0;   ///< first element in the flat tensor
  uint64_t rows = 0, cols = 0;  ///< shape[0], prod(shape[1:]) (1 for a 1-D tensor)
  int rank = 0;        ///< min(rows, cols, config rank)
  bool compressed = false;
  size_t p_offset = 0, q_offset = 0;  ///< in P (rows x rank, row-major) and Q (cols x rank); compressed only
  size_t u_offset = 0; ///< in the uncompressed buffer; uncompressed only
};

/// How a bucket of tensors splits: torch's Step I for `shapes` (each a list of dimensions, in the
/// flat tensor's order) under rank and min_compression_rate.
struct PowerSgdPlan {
  std::vector<PowerSgdTensor> tensors;
  size_t numel = 0;                    ///< the flat tensor
  size_t p_size = 0, q_size = 0;       ///< elements of P and Q, every compressed tensor's
  size_t uncompressed = 0;             ///< elements sent as they are
  static PowerSgdPlan make(const std::vector<std::vector<int64_t>>& shapes, int rank, double min_compression_rate);
};

/// One replica's PowerSGDState for one bucket.
class PowerSgd {
 public:
  /// `shapes`: the tensors of the flat tensor, in order. Throws std::invalid_argument for an
  /// invalid config or a shape with a dimension <= 0.
  PowerSgd(const PowerSgdConfig& cfg, const std::vector<std::vector<int64_t>>& shapes);

  const PowerSgdConfig& config() const { return cfg_; }
  const PowerSgdPlan& plan() const { return plan_; }
  int64_t iter() const { return iter_; }
  bool vanilla() const { return iter_ < cfg_.start_iter; }
  /// A vanilla iteration (the caller averaged the tensor) is over.
  void vanilla_done() { ++iter_; }

  /// Phase 1 of a compressed iteration (!vanilla()): g (plan().numel floats) gets the error
  /// feedback added in place; writes the uncompressed tensors to `unc` (plan().uncompressed)
  /// and P = M Q to `p` (plan().p_size). `normal` draws a fresh Q (first iteration, or every
  /// iteration without warm start): may be null otherwise.
  void begin(float* g, float* unc, float* p, NormalSource* normal);
  /// Phase 2: `unc_sum`, `p_sum` are the sums over the W replicas. Writes the uncompressed means
  /// back into g, orthogonalises P, and writes Q = M^T P to `q` (plan().q_size).
  void after_p(float* g, const float* unc_sum, const float* p_sum, int world, float* q);
  /// Phase 3: `q_sum` summed over the replicas. g <- the decompressed mean (P Q^T / W for the
  /// compressed tensors); e = g_in - g (error feedback); the iteration is over.
  void finish(float* g, const float* q_sum, int world);

  // State (torch's p_memory_dict, q_memory_dict, error_dict, rng, iter), for checkpoints and tests.
  const std::vector<float>& p() const { return p_; }
  const std::vector<float>& q() const { return q_; }
  const std::vector<float>& error() const { return error_; }  ///< empty before the first compressed iteration
  bool has_memory() const { return has_memory_; }
  uint64_t zero_columns() const { return zero_columns_; }
  /// What a later iteration reads (torch's state, less what it never reads again): the iteration;
  /// whether Q is kept, and Q, with warm start; the seed stream without warm start (with it, the
  /// stream draws once, at the first compressed iteration, and never again: before that draw it
  /// is the config's seed); the error. Not P: every iteration computes P = M Q before reading it.
  struct State {
    int64_t iter = 0;
    bool has_memory = false;
    std::vector<uint32_t> rng;  ///< empty: the stream as constructed
    std::vector<float> q, error;
  };
  State save() const;
  /// Throws std::invalid_argument naming the part whose size does not fit this plan.
  void restore(const State& s);

 private:
  PowerSgdConfig cfg_;
  PowerSgdPlan plan_;
  NumpyRandint rng_;
  int64_t iter_ = 0;
  bool has_memory_ = false;
  std::vector<float> p_, q_, error_, copy_;
  uint64_t zero_columns_ = 0;
};

/// torch's _orthogonalize of one rows x cols matrix (row-major, cols <= rows) in place:
/// Gram-Schmidt for cols <= 2, Householder QR's Q otherwise. Returns the zero columns met by
/// Gram-Schmidt with epsilon 0 (set to 0).
uint64_t orthogonalize(float* m, size_t rows, size_t cols, double epsilon);

}  // namespace geotb::kernels
