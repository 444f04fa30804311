// libFuzzer target: the exec report reader (model/exec_report.h), what `geotb compare` and the
// renderers read from a `geotb exec` report. The input is the file's bytes; the target does what
// load_exec_report() does after opening it: parse the JSON (read_json_file), then from_json into an
// ExecReport. Every line of the input also goes through parse_metric_line(), the reader of a
// job's `GEOTB_METRIC {...}` output lines. A FieldError (load_exec_report() names the file in it)
// or a JSON parse error is the expected outcome of a bad file (tests/fuzz/fuzz_util.h). Seeds:
// tests/fuzz/seeds/exec_report/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/exec_report.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using geotb::model::FieldError;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    (void)geotb::model::parse_metric_line(std::string(text.substr(at, end - at)));
    at = end + 1;
  }
  geotb::fuzz::read_one<FieldError, nlohmann::json::parse_error>([&] {
    const nlohmann::json j = nlohmann::json::parse(data, data + size);
    geotb::model::ExecReport r;
    from_json(j, r);
  });
  return 0;
}
