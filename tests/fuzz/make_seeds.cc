// Seeds for fuzz_checkpoint (tests/fuzz/fuzz_checkpoint.cc), written by the checkpoint writer
// itself (write_rank_checkpoint, complete_checkpoint), each file with fuzz_checkpoint's mode byte
// in front: 0 a whole rank file, 1 a rank file without its digest, 2 a manifest.
//
//   make_seeds synth OUTDIR
//       ci/fuzz.sh, every run: rank files of the shapes a worker writes (the buffer names of a
//       hier_ef_topk_int8 rank 0 and of a naive_ddp rank 1 of scenarios/tiny.json, each buffer
//       a few bytes) and their manifests, in the format this build writes.
//   make_seeds trim OUTDIR STEP_DIR...
//       a real checkpoint (`geotb run` on a scenario with a "checkpoint" block: STEP_DIR is
//       <dir>/<strategy>/step-<k>) cut to seed size: ranks 0 and 1, every buffer cut to its
//       first 16 bytes (8-byte scalars stay whole), header and names as written. Its output is
//       committed in tests/fuzz/seeds/checkpoint/ (docs/measurements/fuzzing.md says how).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/checkpoint/file.h"

using namespace geotb::engine;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void put(const fs::path& out, char mode, const std::string& bytes) {
  std::ofstream f(out, std::ios::binary);
  f.put(mode);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + out.string());
}

/// Writes rank `rank`'s state and the manifest with the real writer into a scratch directory, and
/// the seeds from them: <name>-rank<r>.whole (mode 0), .nodigest (mode 1), <name>-manifest (2).
void emit(const fs::path& out, const std::string& name, const CheckpointHeader& h, int rank, const StateBuffers& s) {
  const fs::path scratch = fs::temp_directory_path() / ("geotb-fuzz-seeds-" + std::to_string(getpid()));
  const std::string step_dir = checkpoint_step_dir(scratch.string(), h.strategy, h.step);
  write_rank_checkpoint(step_dir, h, rank, s);
  complete_checkpoint(scratch.string(), h);
  const std::string file = slurp(checkpoint_rank_file(step_dir, rank));
  // The writer's output must read back: a seed the reader refuses starts the fuzzer nowhere.
  const RankCheckpoint back = parse_rank_checkpoint(file, name);
  if (back.rank != rank || back.state.entries.size() != s.entries.size())
    throw std::runtime_error(name + ": does not read back");
  (void)parse_manifest(slurp(step_dir + "/manifest"), name);
  put(out / (name + "-rank" + std::to_string(rank) + ".whole"), 0, file);
  put(out / (name + "-rank" + std::to_string(rank) + ".nodigest"), 1, file.substr(0, file.size() - 32));
  put(out / (name + "-manifest"), 2, slurp(step_dir + "/manifest"));
  fs::remove_all(scratch);
}

StateBuffers synthetic(const std::vector<std::pair<std::string, size_t>>& shape) {
  StateBuffers s;
  uint8_t v = 1;
  for (const auto& [name, size] : shape) {
    StateBuffers::Entry e;
    e.name = name;
    for (size_t i = 0; i < size; ++i) e.bytes.push_back(v++);
    s.entries.push_back(std::move(e));
  }
  return s;
}

int synth(const fs::path& out) {
  const std::string hash = "abc1deb1794d3070b91d914cb9c2141f22751fc3fecfa5f09a958080846ae80d";
  // hier_ef_topk_int8, rank 0 of scenarios/tiny.json (2 DCs x 2 workers) after step 40: the
  // names a real one holds, sizes cut to <= 16 bytes.
  emit(out, "synth-hier", {hash, "hier_ef_topk_int8", 4, 40}, 0,
       synthetic({{"strategy.anchor", 16}, {"strategy.mark", 16}, {"strategy.residual", 16}, {"step", 8},
                  {"clock.elapsed_ns", 8}, {"params", 16}, {"sgd.momentum", 16}, {"sgd.first", 1},
                  {"sampler.order", 16}, {"sampler.pos", 8}, {"sampler.epoch", 8}, {"times.compute_ns", 8},
                  {"times.exposed_comm_ns", 8}, {"times.compress_ns", 8}, {"times.overlapped_comm_ns", 8},
                  {"exchanges", 16}, {"record.loss", 16}, {"record.step_end_s", 16}, {"record.snapshot_steps", 16},
                  {"record.snapshots", 16}, {"mode.wan.messages", 8}, {"mode.wan.payload_bytes", 8},
                  {"mode.wan.wire_bytes", 8}, {"mode.wan.retransmissions", 8}}));
  // naive_ddp, rank 1: empty buffers too.
  emit(out, "synth-ddp", {hash, "naive_ddp", 4, 40}, 1,
       synthetic({{"step", 8}, {"clock.elapsed_ns", 8}, {"params", 16}, {"sgd.momentum", 16}, {"sgd.first", 1},
                  {"exchanges", 0}, {"record.loss", 16}, {"record.step_end_s", 0}}));
  // A world of one, step 0, no buffers at all.
  emit(out, "synth-empty", {hash, "local_sgd", 1, 0}, 0, StateBuffers{});
  return 0;
}

int trim(const fs::path& out, const std::vector<std::string>& step_dirs) {
  for (const std::string& dir : step_dirs) {
    const Checkpoint c = find_checkpoint(dir);
    for (int r = 0; r < std::min(c.header.world, 2); ++r) {
      RankCheckpoint rc = read_rank_checkpoint(checkpoint_rank_file(c.step_dir, r));
      for (auto& e : rc.state.entries)
        if (e.bytes.size() > 16) e.bytes.resize(16);
      emit(out, "real-" + c.header.strategy, rc.header, r, rc.state);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "synth") {
      fs::create_directories(args[1]);
      return synth(args[1]);
    }
    if (args.size() >= 3 && args[0] == "trim") {
      fs::create_directories(args[1]);
      return trim(args[1], {args.begin() + 2, args.end()});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: make_seeds synth OUTDIR | make_seeds trim OUTDIR STEP_DIR...\n");
  return 2;
}
