// Progress of `geotb run`: one line rewritten in place on a terminal, plain lines (at most one
// every few seconds) when stdout is a file or a pipe, e.g. in CI logs.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace geotb::harness {

class Progress {
 public:
  Progress(std::FILE* out, std::string label, size_t samples_per_step);
  /// Called after each step with the steps done, the total and seconds since start.
  void update(int done, int total, double seconds);
  void finish(const std::string& tail);

 private:
  std::FILE* out_;
  std::string label_;
  size_t samples_per_step_;
  bool tty_;
  double last_print_ = -1e9;
};

}  // namespace geotb::harness
