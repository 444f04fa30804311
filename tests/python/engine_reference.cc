// The engine's side of tests/python/hier_hook_test.py's "engine" case: what geotb's embedded
// engine trains for hier_ef_topk_int8 on 2 data centers x 2 workers, written out so that a
// PyTorch DDP job with geotb_torch's hook can train the very same thing and compare weights.
//
//   engine_reference OUT_DIR STEPS K DENSITY OVERLAP(0|1) [WORKERS_A,WORKERS_B]   (default 2,2)
//
// Data center a has ranks 0 .. WORKERS_A - 1, b the rest. Writes into OUT_DIR (float32 and int64 little-endian, no header):
//   initial.f32    the initial weights (make_learner's, seed 5), flat, libtorch's parameter order
//   x.f32, y.i64   every step's batch of every rank: step-major, then rank, then 16 examples
//                  (784 floats each: the engine's normalised pixels), and their labels
//   final.f32      rank 0's final weights after the run (the final dense exchange included)
//   meta.json      the configuration and the sizes
// The workload is the engine tests' small one (tests/unit/engine_fixtures.h: MLP 784-32-10, SGD
// lr 0.05 momentum 0.9, 16 examples per worker and step), the first 4000 training examples, iid.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "engine/cluster.h"
#include "engine/data/fashion_mnist.h"
#include "engine/data/partition.h"
#include "engine/model/learner.h"
#include "model/rank_layout.h"
#include "tests/unit/engine_fixtures.h"

using namespace geotb::engine;

namespace {

template <class T>
void write(const std::string& path, const std::vector<T>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  if (!f) {
    std::fprintf(stderr, "engine_reference: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr, "usage: engine_reference OUT_DIR STEPS K DENSITY OVERLAP(0|1) [WORKERS_A,WORKERS_B]\n");
    return 2;
  }
  int wa = 2, wb = 2;
  if (argc == 7 && std::sscanf(argv[6], "%d,%d", &wa, &wb) != 2) {
    std::fprintf(stderr, "engine_reference: %s: expected WORKERS_A,WORKERS_B\n", argv[6]);
    return 2;
  }
  const std::string out = argv[1];
  const int steps = std::atoi(argv[2]), K = std::atoi(argv[3]);
  const double density = std::atof(argv[4]);
  const bool overlap = std::atoi(argv[5]) != 0;

  const WorkloadSpec w = fixtures::small_mlp(steps, 5, 1);  // 784-32-10, SGD 0.05 / 0.9, 16 per step
  ClusterSpec c;
  c.dcs = {{"a", wa}, {"b", wb}};
  geotb::model::WanLink link;
  c.wan = {link};
  const Datasets& data = fixtures::fashion_subset(4000, 500);

  // What every worker starts from and trains on (as the cluster and worker_loop make them).
  const std::unique_ptr<Learner> l = make_learner(w.model, w.seed);
  const size_t n = l->num_params();
  write(out + "/initial.f32", std::vector<float>(l->params(), l->params() + n));
  const geotb::model::RankLayout layout({wa, wb});
  const auto shards = make_partition(data.train, kFashionMnistClasses, w.partition, layout, w.seed);
  std::vector<BatchSampler> samplers;
  for (int r = 0; r < layout.world(); ++r) samplers.emplace_back(shards[static_cast<size_t>(r)], w.seed, r);
  std::vector<float> xs;
  std::vector<int64_t> ys;
  std::vector<uint32_t> idx;
  const size_t in = static_cast<size_t>(w.model.inputs);
  for (int s = 0; s < steps; ++s)
    for (auto& sampler : samplers) {
      sampler.next(static_cast<size_t>(w.batch_per_worker), idx);
      for (uint32_t i : idx) {
        xs.insert(xs.end(), data.train.images.begin() + i * in, data.train.images.begin() + (i + 1) * in);
        ys.push_back(data.train.labels[i]);
      }
    }
  write(out + "/x.f32", xs);
  write(out + "/y.i64", ys);

  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = K;
  hier.density = density;
  hier.overlap = overlap;
  std::vector<float> final_params;
  RunOptions opt;
  run_strategy(c, w, hier, data, opt, &final_params);
  write(out + "/final.f32", final_params);
  std::ofstream(out + "/meta.json") << "{\"steps\": " << steps << ", \"K\": " << K << ", \"density\": " << density
                                    << ", \"overlap\": " << (overlap ? "true" : "false") << ", \"params\": " << n
                                    << ", \"batch\": " << w.batch_per_worker << ", \"hidden\": " << w.model.hidden[0]
                                    << ", \"lr\": " << w.optimizer.lr << ", \"momentum\": " << w.optimizer.momentum
                                    << ", \"sites\": [" << wa << ", " << wb << "]}\n";
  std::printf("engine_reference: %zu parameters, %d steps, K %d, density %g, overlap %d -> %s\n", n, steps, K, density,
              overlap ? 1 : 0, out.c_str());
  return 0;
}
