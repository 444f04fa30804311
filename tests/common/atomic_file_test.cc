// Atomic writes: the content arrives whole, a failed write leaves the old file and no temporary
// file, new files never replace old ones.
#include "common/atomic_file.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace geotb::common {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A fresh directory, removed with everything in it at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("geotb-atomic-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), fs::directory_iterator())); }
};

TEST(AtomicFile, WritesAndReplaces) {
  TempDir d;
  const std::string p = (d.path / "a.json").string();
  write_file_atomically(p, "first\n");
  EXPECT_EQ(slurp(p), "first\n");
  write_file_atomically(p, "second, longer\n");
  EXPECT_EQ(slurp(p), "second, longer\n");
  EXPECT_EQ(d.entries(), 1u);  // no temporary file left
}

TEST(AtomicFile, FailedWriteLeavesOldFileAndNoTemporary) {
  TempDir d;
  const std::string p = (d.path / "a.json").string();
  write_file_atomically(p, "old\n");
  // Writes past RLIMIT_FSIZE fail with EFBIG (SIGXFSZ ignored): a write that fails halfway.
  struct sigaction ign {}, old_sa {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGXFSZ, &ign, &old_sa);
  rlimit old_lim{};
  getrlimit(RLIMIT_FSIZE, &old_lim);
  rlimit lim = old_lim;
  lim.rlim_cur = 1000;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string what;
  try {
    write_file_atomically(p, std::string(5000, 'x'));
  } catch (const FileError& e) {
    what = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old_lim);
  sigaction(SIGXFSZ, &old_sa, nullptr);
  EXPECT_NE(what.find("cannot write"), std::string::npos) << what;
  EXPECT_EQ(slurp(p), "old\n");
  EXPECT_EQ(d.entries(), 1u);
}

TEST(AtomicFile, MissingDirectoryIsAFileError) {
  TempDir d;
  EXPECT_THROW(write_file_atomically((d.path / "no" / "a.json").string(), "x"), FileError);
  EXPECT_EQ(d.entries(), 0u);
}

TEST(AtomicFile, NewFilesNeverReplaceOldOnes) {
  TempDir d;
  const std::string dir = (d.path / "reports").string();  // created
  EXPECT_EQ(write_new_file(dir, "run", ".json", "1"), (d.path / "reports" / "run.json").string());
  EXPECT_EQ(write_new_file(dir, "run", ".json", "2"), (d.path / "reports" / "run-2.json").string());
  EXPECT_EQ(write_new_file(dir, "run", ".json", "3"), (d.path / "reports" / "run-3.json").string());
  EXPECT_EQ(slurp(d.path / "reports" / "run.json"), "1");
  EXPECT_EQ(slurp(d.path / "reports" / "run-2.json"), "2");
  EXPECT_EQ(slurp(d.path / "reports" / "run-3.json"), "3");
  EXPECT_EQ(static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator())), 3u);
}

}  // namespace
}  // namespace geotb::common
