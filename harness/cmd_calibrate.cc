#include "harness/cmd_calibrate.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "common/atomic_file.h"
#include "common/units.h"
#include "engine/model/calibrate.h"
#include "harness/calibrate_compress.h"
#include "harness/git_revision.h"
#include "harness/report.h"
#include "harness/scenario.h"
#include "model/hardware.h"

namespace geotb::harness {
namespace {

using json = nlohmann::json;

struct CalibrateArgs {
  std::string scenario;
  std::string device;     ///< "" = the scenario's workload.device
  std::string out;        ///< "" = print only
  int reps = 50, warmup = 10;
  std::string block;      ///< "d_model=4096,heads=32,..."; "" = the default block on a GPU, none on the CPU
  bool no_block = false;
  std::string gpu;        ///< catalog key for the block's MFU ("" = matched by the device's name)
  std::string density = "1%";
  uint64_t compress_elements = 0;  ///< 0 = the model's parameters
};

json timing_json(const engine::Timing& t) {
  return {{"median_s", t.median_s}, {"min_s", t.min_s}, {"max_s", t.max_s}, {"reps", t.reps}};
}

engine::BlockConfig parse_block(const std::string& text) {
  engine::BlockConfig b;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("--block: \"" + item + "\": expected key=value");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (k == "dtype") {
      b.dtype = v;
      continue;
    }
    int64_t x = 0;
    try {
      size_t used = 0;
      x = std::stoll(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
    } catch (const std::exception&) {
      throw std::invalid_argument("--block: " + k + "=" + v + ": expected an integer");
    }
    if (k == "d_model") b.d_model = x;
    else if (k == "heads") b.heads = x;
    else if (k == "ffn") b.ffn = x;
    else if (k == "seq") b.seq = x;
    else if (k == "batch") b.batch = x;
    else throw std::invalid_argument("--block: \"" + k + "\": unknown key (d_model, heads, ffn, seq, batch, dtype)");
  }
  if (auto e = engine::validate(b); !e.empty()) throw std::invalid_argument("--block: " + e.substr(6));  // "block.x: ..."
  return b;
}

/// The catalog GPU whose display name starts with the device's name, if exactly one does.
const model::GpuSpec* match_gpu(const std::string& device_name) {
  const model::GpuSpec* found = nullptr;
  for (const model::GpuSpec& g : model::gpu_catalog())
    if (std::string(g.display).rfind(device_name + " ", 0) == 0) {
      if (found) return nullptr;
      found = &g;
    }
  return found;
}

int calibrate(const CalibrateArgs& a) {
  std::optional<Scenario> loaded = load_scenario_or_report(a.scenario);
  if (!loaded) return 2;
  Scenario& sc = *loaded;
  engine::ModelConfig m = sc.workload.model;
  if (!a.device.empty()) m.device = a.device;
  // Errors are "device: ...": the scenario's field, or the option that set it.
  const std::string field = a.device.empty() ? "workload." : "--";
  std::string e = engine::validate(m);
  if (e.empty()) e = engine::device_error(m.device);
  if (!e.empty()) {
    fmt::print(stderr, "geotb: error: {}{}\n", field, e);
    return 2;
  }
  if (a.reps < 1 || a.reps > 100000 || a.warmup < 0 || a.warmup > 100000) {
    fmt::print(stderr, "geotb: error: --reps: {} / --warmup: {}: reps in [1, 100000], warmup in [0, 100000]\n", a.reps,
               a.warmup);
    return 2;
  }
  double density = 0;
  try {
    density = common::parse_probability(a.density);
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: --density: \"{}\": {}\n", a.density, e.what());
    return 2;
  }
  if (!(density > 0)) {
    fmt::print(stderr, "geotb: error: --density: \"{}\": must be > 0\n", a.density);
    return 2;
  }
  const bool gpu = m.device != "cpu";
  std::optional<engine::BlockConfig> block;
  try {
    if (!a.no_block && (!a.block.empty() || gpu)) block = parse_block(a.block);
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 2;
  }
  const model::GpuSpec* peak = nullptr;
  if (!a.gpu.empty()) {
    peak = model::find_gpu(a.gpu);
    if (!peak) {
      fmt::print(stderr, "geotb: error: --gpu: \"{}\": unknown GPU (the catalog has: {})\n", a.gpu, model::gpu_names());
      return 2;
    }
  }

  const model::DeviceContext dev = engine::device_info(m.device);
  if (!peak && gpu) peak = match_gpu(dev.name);
  const size_t params = engine::param_count(m);
  const size_t batch = static_cast<size_t>(sc.workload.batch_per_worker);
  fmt::print("geotb calibrate: {} on {} ({}), libtorch {}{}\n", a.scenario, dev.device, dev.name, dev.torch,
             dev.cuda.empty() ? "" : ", CUDA " + dev.cuda);

  // 1. The scenario's model: one training step at its batch.
  const engine::Timing step = engine::time_training_step(m, batch, a.warmup, a.reps, sc.seed);
  fmt::print("  step      {} ({} params, batch {}): median {:.4f} ms [{:.4f}, {:.4f}] over {}\n", m.name, params, batch,
             step.median_s * 1e3, step.min_s * 1e3, step.max_s * 1e3, step.reps);
  // 2. The reduction: a += b over at least 16M floats (smaller ones measure the launch, not the rate).
  const size_t reduce_n = std::max<size_t>(params, size_t{1} << 24);
  const engine::Timing reduce = engine::time_reduce(m.device, reduce_n, a.warmup, a.reps);
  const double reduce_ns = reduce.median_s * 1e9 / static_cast<double>(reduce_n);
  fmt::print("  reduce    {} floats: {:.4f} ns/element ({:.0f} GB/s of 12 bytes per element)\n", reduce_n, reduce_ns,
             12.0 / reduce_ns);
  // 3. Compression on the backend the device has.
  const size_t compress_n = a.compress_elements ? a.compress_elements : params;
  const bool cuda_compress = gpu && cuda_kernels_available();
  const CompressTiming comp = time_compress(cuda_compress, compress_n, density, a.warmup, a.reps, sc.seed);
  const double compress_ns = comp.time.median_s * 1e9 / static_cast<double>(compress_n);
  fmt::print("  compress  {} floats at {} on {}: {:.4f} ns/element (median {:.4f} ms)\n", compress_n, a.density,
             comp.backend, compress_ns, comp.time.median_s * 1e3);

  json out;
  out["geotb_calibrate"] = 1;
  out["measured_at"] = utc_now_iso();
  out["git_revision"] = kGitRevision;
  out["device"] = gpu ? json(dev)
                      : json{{"device", "cpu"}, {"name", dev.name}, {"hardware_threads", dev.multiprocessors},
                             {"torch", dev.torch}};
  out["scenario"] = {{"file", a.scenario}, {"name", sc.name}, {"model", m.name}, {"hidden", m.hidden},
                     {"params", params}, {"batch_per_worker", batch}};
  out["compute"] = {{"step_time", fmt::format("{:.3f}us", step.median_s * 1e6)},
                    {"reduce_ns_per_element", reduce_ns},
                    {"compress_ns_per_element", compress_ns}};
  json meas;
  meas["step"] = timing_json(step);
  meas["step"]["warmup"] = a.warmup;
  meas["step"]["what"] = "forward + backward + SGD update on the device, random inputs, synchronised";
  meas["reduce"] = timing_json(reduce);
  meas["reduce"]["elements"] = reduce_n;
  meas["reduce"]["what"] = "a += b, float32";
  meas["compress"] = timing_json(comp.time);
  meas["compress"]["elements"] = compress_n;
  meas["compress"]["density"] = density;
  meas["compress"]["backend"] = comp.backend;
  meas["compress"]["what"] = "compress_ef: error feedback, top-k, INT8 blocks of 256, index coding";

  if (block) {
    const engine::BlockTiming bt = engine::time_transformer_block(*block, m.device, std::min(a.warmup, 5),
                                                                  std::max(5, std::min(a.reps, 20)), sc.seed);
    const double flops_per_s = bt.flops / bt.time.median_s;
    json b = timing_json(bt.time);
    b["config"] = {{"d_model", block->d_model}, {"heads", block->heads}, {"ffn", block->ffn},
                   {"seq", block->seq}, {"batch", block->batch}, {"dtype", block->dtype}};
    b["what"] = "RMSNorm, causal MHA (scaled_dot_product_attention), RMSNorm, SwiGLU; forward + backward";
    b["params"] = bt.params;
    b["flops"] = bt.flops;
    b["flops_per_s"] = flops_per_s;
    fmt::print("  block     d={} heads={} ffn={} seq={} batch={} {}: median {:.3f} ms, {:.1f} TFLOP/s", block->d_model,
               block->heads, block->ffn, block->seq, block->batch, block->dtype, bt.time.median_s * 1e3,
               flops_per_s / 1e12);
    if (peak) {
      const double mfu = flops_per_s / peak->peak_dense_bf16_flops;
      b["gpu"] = std::string(peak->name);
      b["peak_dense_bf16_flops"] = peak->peak_dense_bf16_flops;
      b["mfu"] = mfu;
      out["derived_compute"] = {{"gpu", std::string(peak->name)}, {"mfu", std::round(mfu * 1e4) / 1e4}};
      fmt::print(", MFU {:.3f} of {} ({:.0f} TFLOP/s peak dense BF16)", mfu, peak->name, peak->peak_dense_bf16_flops / 1e12);
    }
    fmt::print("\n");
    meas["transformer_block"] = b;
  }
  out["measurements"] = meas;
  const std::string text = out.dump(1) + "\n";
  if (a.out.empty()) {
    fmt::print("{}", text);
  } else {
    try {
      common::write_file_atomically(a.out, text);
    } catch (const std::exception& e) {
      fmt::print(stderr, "geotb: error: --out: {}: {}\n", a.out, e.what());
      return 1;
    }
    fmt::print("profile: {}\n", a.out);
  }
  return 0;
}

}  // namespace

void register_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Measure this machine's step, reduce and compress rates for a scenario's model on a device; write a "
                   "compute profile ({\"compute\": {\"calibrated\": FILE}})");
  cmd->add_option("scenario", args->scenario, "Scenario file: its workload.model, batch_per_worker and seed")->required();
  cmd->add_option("--device", args->device, "cpu, cuda or cuda:N (default: the scenario's workload.device)");
  cmd->add_option("--out", args->out, "Write the profile here (default: print it)");
  cmd->add_option("--reps", args->reps, "Timed repetitions of each measurement")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed repetitions first")->capture_default_str();
  cmd->add_option("--block", args->block,
                  "A transformer block to time, d_model=4096,heads=32,ffn=14336,seq=2048,batch=1,dtype=bf16 (the "
                  "defaults; timed by default on a GPU)");
  cmd->add_flag("--no-block", args->no_block, "Do not time a transformer block");
  cmd->add_option("--gpu", args->gpu, "Catalog GPU whose peak gives the block's MFU (default: matched by name)");
  cmd->add_option("--density", args->density, "Top-k density of the compression timing")->capture_default_str();
  cmd->add_option("--compress-elements", args->compress_elements,
                  "Elements per compression (default: the model's parameters)");
  cmd->callback([args]() {
    int rc = 0;
    try {
      rc = calibrate(*args);
    } catch (const std::exception& e) {
      fmt::print(stderr, "geotb: error: calibrate: {}\n", e.what());
      rc = 1;
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace geotb::harness
