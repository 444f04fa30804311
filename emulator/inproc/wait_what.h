// What a virtual-time wait is for, named in a deadlock report: a text, or a pattern with up to
// three numbers formatted only when a report is written. A wait per message (a receive, a
// ring's wait for its send) would otherwise build a string per message, several heap
// allocations each.
#pragma once

#include <cstdint>
#include <string>

namespace geotb::emu {

struct WaitWhat {
  WaitWhat() = default;
  WaitWhat(std::string s) : text(std::move(s)) {}  // NOLINT(google-explicit-constructor): a text
  WaitWhat(const char* s) : text(s) {}              // NOLINT(google-explicit-constructor)
  /// `pattern`: a string literal in fmt's syntax over (a, b, c), e.g. "recv at rank {} from rank
  /// {} tag {}"; positional fields ("{2} to rank {0}") pick among them.
  WaitWhat(const char* pattern, int64_t a, int64_t b, uint64_t c) : pattern(pattern), a(a), b(b), c(c) {}

  /// The text, or the pattern formatted (emulator/inproc/virtual_time.cc).
  std::string str() const;

  std::string text;
  const char* pattern = nullptr;
  int64_t a = 0, b = 0;
  uint64_t c = 0;
};

}  // namespace geotb::emu
