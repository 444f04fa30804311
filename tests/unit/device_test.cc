// workload.device and the calibration timers (engine/model/calibrate.h), on every build. The GPU
// replica against the CPU's is in the gpu suite (tests/gpu/engine_device_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/model/calibrate.h"
#include "engine/model/learner.h"
#include "engine_fixtures.h"

namespace geotb::engine {
namespace {

using fixtures::mlp_on;

TEST(Device, ValidateNamesTheDeviceAndTheForms) {
  EXPECT_EQ(validate(mlp_on("cpu")), "");
  EXPECT_EQ(validate(mlp_on("cuda")), "");
  EXPECT_EQ(validate(mlp_on("cuda:3")), "");
  EXPECT_EQ(validate(mlp_on("tpu")), "device: \"tpu\": expected \"cpu\", \"cuda\" or \"cuda:N\"");
  EXPECT_EQ(validate(mlp_on("cuda:-1")), "device: \"cuda:-1\": expected \"cpu\", \"cuda\" or \"cuda:N\"");
  EXPECT_EQ(device_error("cpu"), "");
  EXPECT_EQ(device_error("cuda:x"), "device: \"cuda:x\": expected \"cpu\", \"cuda\" or \"cuda:N\"");
}

// Without a GPU (CI), "cuda" is refused with the reason; with one, an index beyond it is.
TEST(Device, ACudaDeviceThisMachineLacksIsRefusedWithTheReason) {
  const bool gpu = device_error("cuda").empty();
  const std::string dev = gpu ? "cuda:99" : "cuda";
  const std::string want = gpu ? "device: \"cuda:99\": only " : "device: \"cuda\": no CUDA device";
  EXPECT_EQ(device_error(dev).rfind(want, 0), 0u) << device_error(dev);
  EXPECT_THROW(make_learner(mlp_on(dev), 1), std::invalid_argument);
  EXPECT_THROW(time_training_step(mlp_on(dev), 8, 0, 1, 1), std::invalid_argument);
  EXPECT_THROW(device_info(dev), std::invalid_argument);
}

TEST(Calibrate, SummarizeTakesTheMedianMinimumAndMaximum) {
  const Timing odd = summarize({3, 1, 2});
  EXPECT_EQ(odd.median_s, 2);
  EXPECT_EQ(odd.min_s, 1);
  EXPECT_EQ(odd.max_s, 3);
  EXPECT_EQ(odd.reps, 3);
  EXPECT_EQ(summarize({4, 1, 3, 2}).median_s, 2.5);
  EXPECT_THROW(summarize({}), std::invalid_argument);
}

TEST(Calibrate, CpuTimersRunAndTheBlocksCountsAreExact) {
  const Timing step = time_training_step(mlp_on("cpu"), 8, 1, 3, 7);
  EXPECT_EQ(step.reps, 3);
  EXPECT_GT(step.min_s, 0);
  EXPECT_LE(step.min_s, step.median_s);
  EXPECT_LE(step.median_s, step.max_s);
  const Timing reduce = time_reduce("cpu", 1000, 0, 2);
  EXPECT_EQ(reduce.reps, 2);
  EXPECT_GT(reduce.min_s, 0);
  BlockConfig b;
  b.d_model = 32;
  b.heads = 4;
  b.ffn = 64;
  b.seq = 16;
  b.batch = 2;
  b.dtype = "fp32";
  const BlockTiming bt = time_transformer_block(b, "cpu", 0, 2, 1);
  EXPECT_EQ(bt.time.reps, 2);
  EXPECT_EQ(bt.params, 4.0 * 32 * 32 + 3.0 * 32 * 64 + 2 * 32);              // 10304
  EXPECT_EQ(bt.flops, 3.0 * 2 * 16 * (2 * (4.0 * 32 * 32 + 3.0 * 32 * 64) + 2.0 * 16 * 32));  // 2064384
  const model::DeviceContext d = device_info("cpu");
  EXPECT_EQ(d.device, "cpu");
  EXPECT_FALSE(d.torch.empty());
}

TEST(Calibrate, BadBlocksNameTheField) {
  BlockConfig b;
  b.heads = 5;
  EXPECT_EQ(validate(b), "block.heads: 5: must divide d_model");
  b = {};
  b.dtype = "fp8";
  EXPECT_EQ(validate(b), "block.dtype: \"fp8\": expected \"bf16\" or \"fp32\"");
  b = {};
  b.seq = 0;
  EXPECT_EQ(validate(b), "block.seq: 0: must be in [1, 1048576]");
  EXPECT_THROW(time_transformer_block(b, "cpu", 0, 1, 1), std::invalid_argument);
}

}  // namespace
}  // namespace geotb::engine
