// The process mode's progress pipe (harness/progress_fifo.h): lines from the worker's end reach
// the coordinator's, the last complete one wins, anything else is ignored, and neither end blocks.
#include "harness/progress_fifo.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

using geotb::harness::parse_progress_line;
using geotb::harness::ProgressReader;
using geotb::harness::ProgressWriter;

namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(getpid()))).string();
}

TEST(ProgressFifo, ParsesOnlyWholeProgressLines) {
  const auto p = parse_progress_line("progress 12 60 3.250");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->done, 12);
  EXPECT_EQ(p->total, 60);
  EXPECT_EQ(p->seconds, 3.25);
  for (const char* bad : {"", "progress", "progress 1 2", "progress 3 2 1.0", "progress -1 2 1.0",
                          "progress 1 2 -1.0", "progress 1 2 1.0x", "geotb worker: rank 0", "progress 1 2 nan"})
    EXPECT_FALSE(parse_progress_line(bad)) << bad;
}

TEST(ProgressFifo, TheLastCompleteLineWinsAndNothingBlocks) {
  const std::string path = temp_path("geotb-progress-test");
  {
    ProgressReader r(path);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
    EXPECT_FALSE(r.poll());  // no writer yet: nothing, at once
    {
      ProgressWriter w(path);
      w.write(1, 60, 0.5);
      w.write(2, 60, 1.5);
      const auto p = r.poll();
      ASSERT_TRUE(p);
      EXPECT_EQ(p->done, 2);
      EXPECT_EQ(p->seconds, 1.5);
      EXPECT_FALSE(r.poll());  // read already
      w.write(60, 60, 30.0);
    }
    const auto p = r.poll();  // written before the writer closed
    ASSERT_TRUE(p);
    EXPECT_EQ(p->done, 60);
    EXPECT_FALSE(r.poll());   // no writer any more: nothing, at once
    // A second writer (a worker spawned again) is read as the first was.
    ProgressWriter again(path);
    again.write(7, 60, 2.0);
    ASSERT_TRUE(r.poll());
  }
  EXPECT_FALSE(std::filesystem::exists(path));  // the reader removes its pipe
  // No reader: the writer is inactive, and writing does not fail or block.
  ProgressWriter none(path);
  none.write(1, 2, 3.0);
}

}  // namespace
