#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace geotb::common {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw FileError(what + " " + path + ": " + std::strerror(err));
}

/// A temporary file next to `target`, removed on destruction unless it was renamed or linked
/// into place.
class TempFile {
 public:
  explicit TempFile(const std::string& target, unsigned mode = 0666) {
    static std::atomic<unsigned> counter{0};
    path_ = target + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1));
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode));
    if (fd_ < 0) fail("cannot create", path_, errno);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  /// Writes everything, flushes it to disk and closes the file.
  void write_all(std::string_view content) {
    const char* p = content.data();
    size_t left = content.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("cannot write", path_, errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (::fsync(fd_) != 0) fail("cannot flush", path_, errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot close", path_, errno);
  }

  /// Renames the file over `target`; from then on it is no longer temporary.
  void rename_to(const std::string& target) {
    if (::rename(path_.c_str(), target.c_str()) != 0) fail("cannot rename " + path_ + " to", target, errno);
    path_.clear();
  }

  /// Links the file as `target` if that name is free; false if it is taken.
  bool link_as(const std::string& target) {
    if (::link(path_.c_str(), target.c_str()) == 0) return true;
    if (errno == EEXIST) return false;
    fail("cannot link " + path_ + " as", target, errno);
  }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content, unsigned mode) {
  TempFile tmp(path, mode);
  tmp.write_all(content);
  tmp.rename_to(path);
}

std::string write_new_file(const std::string& dir, const std::string& stem, const std::string& ext,
                           std::string_view content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FileError("cannot create directory " + dir + ": " + ec.message());
  const std::string first = (fs::path(dir) / (stem + ext)).string();
  TempFile tmp(first);
  tmp.write_all(content);
  for (int i = 1;; ++i) {
    const std::string name = i == 1 ? first : (fs::path(dir) / (stem + "-" + std::to_string(i) + ext)).string();
    if (tmp.link_as(name)) return name;  // the temporary name is removed by ~TempFile
  }
}

}  // namespace geotb::common
