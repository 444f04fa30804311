// Checkpoint files (docs/guide/checkpoints.md). One directory per checkpoint,
//   <dir>/<strategy>/step-<k>/rank-<r>.ckpt   one per rank: its state after k steps
//   <dir>/<strategy>/step-<k>/manifest        written once every rank file is in place
//   <dir>/<strategy>/latest                   "step-<k>": the last complete checkpoint
// every file written atomically (temporary file + fsync + rename, common/atomic_file.h), so a
// crash leaves the previous checkpoint complete and the new one without a manifest (ignored).
//
// A rank file: "GEOTBCKP", format version (u32), header length (u32), header (text lines
// "key value": scenario_hash, strategy, world, rank, step), buffer count (u64), then per buffer:
// name length (u32), name, size (u64), bytes; last the SHA-256 (libcrypto) of everything before
// it. A short file, a bad checksum, a header that disagrees with the manifest or with the run
// that resumes it: CheckpointError naming the file and the mismatch, before anything is restored.
// No libtorch here.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/checkpoint/state.h"
#include "engine/errors.h"

namespace geotb::engine {

inline constexpr uint32_t kCheckpointFormat = 1;

/// A checkpoint that cannot be written, or is refused for resuming (a configuration error:
/// exit status 2, like a bad scenario).
class CheckpointError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

/// What a checkpoint belongs to: every rank file's header, and the manifest.
struct CheckpointHeader {
  std::string scenario_hash;  ///< the scenario's SHA-256 without its "checkpoint" block (hex)
  std::string strategy;       ///< the strategy's name
  int world = 0;              ///< ranks
  int step = 0;               ///< steps done
};

/// SHA-256 of n bytes, 64 lowercase hex digits (libcrypto).
std::string sha256_hex(const void* p, size_t n);

/// <dir>/<strategy>/step-<k> and the rank file in it.
std::string checkpoint_step_dir(const std::string& dir, const std::string& strategy, int step);
std::string checkpoint_rank_file(const std::string& step_dir, int rank);

/// Writes one rank's file (atomically; creates the directories). Throws CheckpointError.
void write_rank_checkpoint(const std::string& step_dir, const CheckpointHeader& h, int rank, const StateBuffers& s);
/// Once every rank file of `h` is written: the manifest, then <dir>/<strategy>/latest.
void complete_checkpoint(const std::string& dir, const CheckpointHeader& h);

/// One rank file, read and verified (magic, version, length, checksum). Throws CheckpointError
/// "<path>: ...".
struct RankCheckpoint {
  CheckpointHeader header;
  int rank = 0;
  StateBuffers state;
};
RankCheckpoint read_rank_checkpoint(const std::string& path);
/// read_rank_checkpoint() on a file's bytes already in memory; `where` (its path) starts every
/// message. The fuzz target (tests/fuzz/fuzz_checkpoint.cc) calls it.
RankCheckpoint parse_rank_checkpoint(const std::string& bytes, const std::string& where);
/// A manifest's text ("format 1", then the header lines: scenario_hash, strategy, world, step),
/// read and checked. Throws CheckpointError "<where>: ...".
CheckpointHeader parse_manifest(const std::string& text, const std::string& where);

/// A complete checkpoint, every rank's state in memory.
struct Checkpoint {
  std::string step_dir;  ///< the directory it was read from
  CheckpointHeader header;
  std::vector<StateBuffers> ranks;  ///< by rank
};

/// Finds the checkpoint at `path` (a step directory with a manifest, or a strategy directory
/// with `latest`) and returns its manifest's header and step directory without reading the rank
/// files. Throws CheckpointError naming the file.
Checkpoint find_checkpoint(const std::string& path);
/// find_checkpoint(), then checks it against what the run resuming it is (`expect`: scenario
/// hash, strategy, world; its step is ignored) and reads every rank file, each verified and
/// checked against the manifest. `ranks_to_read`: empty = all; else only these (a process
/// worker reads its own). Throws CheckpointError before returning anything.
Checkpoint load_checkpoint(const std::string& path, const CheckpointHeader& expect, const std::vector<int>& ranks_to_read = {});

}  // namespace geotb::engine
