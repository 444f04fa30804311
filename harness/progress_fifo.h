// A process-mode run's progress, from the reporting worker to the coordinator (`geotb run --net
// process|dpdk`), over a named pipe in the run's work directory: the worker writes
// "progress <done> <total> <seconds>\n" lines, each one write() (atomic: shorter than PIPE_BUF);
// the coordinator reads what is there at each of its polls without blocking and keeps the last
// complete line. Best effort on both sides: a full pipe drops a line, a worker that cannot open
// the pipe reports no progress (the run goes on). A FIFO is a file: the dpdk mode's workers, in
// network namespaces of their own, reach it as the process mode's do.
#pragma once

#include <optional>
#include <string>

namespace geotb::harness {

struct ProgressPoint {
  int done = 0;
  int total = 0;
  double seconds = 0;  ///< since the first step, on the run's clock
};

/// "progress 12 60 3.250" -> {12, 60, 3.25}; nullopt for anything else.
std::optional<ProgressPoint> parse_progress_line(const std::string& line);

/// The coordinator's end: creates the FIFO (replacing a file of that name) and opens it to read,
/// non-blocking; removes it when destroyed. Throws std::runtime_error naming the path and errno.
class ProgressReader {
 public:
  explicit ProgressReader(std::string path);
  ~ProgressReader();
  ProgressReader(const ProgressReader&) = delete;
  ProgressReader& operator=(const ProgressReader&) = delete;
  const std::string& path() const { return path_; }
  /// The last complete line written since the previous call, if any (never blocks).
  std::optional<ProgressPoint> poll();

 private:
  std::string path_;
  int fd_ = -1;
  std::string partial_;  // bytes after the last newline read so far
};

/// The worker's end: opens `path` to write, non-blocking (the coordinator's reader is open before
/// it starts). Inactive, with one line on stderr, when it cannot.
class ProgressWriter {
 public:
  explicit ProgressWriter(const std::string& path);
  ~ProgressWriter();
  ProgressWriter(const ProgressWriter&) = delete;
  ProgressWriter& operator=(const ProgressWriter&) = delete;
  void write(int done, int total, double seconds);

 private:
  int fd_ = -1;
};

}  // namespace geotb::harness
