// What the file-reader fuzz targets (tests/fuzz/fuzz_*.cc, built and run by ci/fuzz.sh) share.
// A reader given a bad file throws an error naming the file and the field: that is the expected
// outcome, not a finding. Findings are what libFuzzer reports: a sanitizer report (ASan, UBSan,
// LeakSanitizer), an abort, an uncaught exception, a timeout or running out of memory.
//
// Two switches (environment variables, "1" = on):
//   GEOTB_FUZZ_SEED_CHECK  every input must be accepted: one the reader rejects aborts with the
//                          reader's message. ci/fuzz.sh runs each target once over its seeds with
//                          it, so a seed the reader no longer accepts (a schema change) fails CI
//                          instead of silently starting the fuzzer from the rejection path.
//   GEOTB_FUZZ_STRICT      an exception that is not one of the reader's own error types (a
//                          library error escaping validation: nlohmann::json::type_error,
//                          std::out_of_range, ...) aborts, naming its type. Off in CI: the message
//                          is worse than the reader's own but it is still an error, not a crash.
//                          "log" instead of "1": print each such type once (with the first
//                          message) and go on, to survey them in one run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <string>
#include <string_view>
#include <typeinfo>

namespace geotb::fuzz {

inline bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

[[noreturn]] inline void die(const char* why, const std::exception& e) {
  std::fprintf(stderr, "fuzz: %s: %s: %s\n", why, typeid(e).name(), e.what());
  std::abort();
}

/// Runs `read` (one reader on one input). `Own...`: the reader's own error types (what its
/// file-reading entry point throws for a bad file).
template <class... Own, class F>
void read_one(F&& read) {
  static const bool seed_check = env_on("GEOTB_FUZZ_SEED_CHECK");
  static const bool strict = env_on("GEOTB_FUZZ_STRICT");
  static const bool strict_log = strict && std::string_view(std::getenv("GEOTB_FUZZ_STRICT")) == "log";
  static std::set<std::string> logged;
  try {
    read();
  } catch (const std::exception& e) {
    if (seed_check) die("seed rejected", e);
    const bool own = (... || (dynamic_cast<const Own*>(&e) != nullptr));
    if (!strict || own) return;
    if (!strict_log) die("not the reader's own error type", e);
    // One line per type and message kind ("[json.exception.type_error.302]", or its first 40 characters).
    const std::string_view what = e.what();
    const size_t cut = what.size() > 0 && what[0] == '[' ? what.find(']') + 1 : std::min<size_t>(what.size(), 40);
    if (logged.insert(std::string(typeid(e).name()) + ": " + std::string(what.substr(0, cut))).second)
      std::fprintf(stderr, "fuzz: not the reader's own error type: %s: %s\n", typeid(e).name(), e.what());
  }
}

}  // namespace geotb::fuzz
