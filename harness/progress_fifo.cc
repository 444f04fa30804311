#include "harness/progress_fifo.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace geotb::harness {

std::optional<ProgressPoint> parse_progress_line(const std::string& line) {
  ProgressPoint p;
  char tail = 0;
  if (std::sscanf(line.c_str(), "progress %d %d %lf%c", &p.done, &p.total, &p.seconds, &tail) != 3) return std::nullopt;
  if (p.done < 0 || p.total < p.done || !(p.seconds >= 0)) return std::nullopt;
  return p;
}

ProgressReader::ProgressReader(std::string path) : path_(std::move(path)) {
  ::unlink(path_.c_str());
  if (::mkfifo(path_.c_str(), 0600) != 0)
    throw std::runtime_error(fmt::format("progress pipe {}: mkfifo: {}", path_, std::strerror(errno)));
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    const int e = errno;
    ::unlink(path_.c_str());
    throw std::runtime_error(fmt::format("progress pipe {}: open: {}", path_, std::strerror(e)));
  }
}

ProgressReader::~ProgressReader() {
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());
}

std::optional<ProgressPoint> ProgressReader::poll() {
  std::optional<ProgressPoint> last;
  char buf[4096];
  for (;;) {
    const ssize_t got = ::read(fd_, buf, sizeof buf);
    if (got <= 0) break;  // nothing now (EAGAIN), no writer (0), or an error: try again next poll
    partial_.append(buf, static_cast<size_t>(got));
    for (size_t nl; (nl = partial_.find('\n')) != std::string::npos;) {
      if (auto p = parse_progress_line(partial_.substr(0, nl))) last = p;
      partial_.erase(0, nl + 1);
    }
  }
  if (partial_.size() > 4096) partial_.clear();  // no newline in that much: not ours
  return last;
}

ProgressWriter::ProgressWriter(const std::string& path) {
  // A coordinator gone before this worker: EPIPE from write(), not a SIGPIPE ending the worker.
  ::signal(SIGPIPE, SIG_IGN);
  fd_ = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0)
    std::fprintf(stderr, "geotb worker: --progress-fifo %s: %s: no progress reported\n", path.c_str(),
                 std::strerror(errno));
}

ProgressWriter::~ProgressWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void ProgressWriter::write(int done, int total, double seconds) {
  if (fd_ < 0) return;
  const std::string line = fmt::format("progress {} {} {:.3f}\n", done, total, seconds);
  // One write, shorter than PIPE_BUF: whole or not at all. A full pipe (EAGAIN) drops it.
  if (::write(fd_, line.data(), line.size()) < 0 && errno != EAGAIN) {
    std::fprintf(stderr, "geotb worker: progress pipe: %s: no more progress reported\n", std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace geotb::harness
