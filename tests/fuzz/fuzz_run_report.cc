// libFuzzer target: the run report reader (model/report.h), what the regression gate, `geotb
// compare` and the renderers read from a `geotb run` report or a baseline. The input is the
// file's bytes; the target does what load_report() does after opening it: parse the JSON
// (read_json_file), then parse_report(). A ReportError or a JSON parse error is the expected
// outcome of a bad file (tests/fuzz/fuzz_util.h). Seeds: reports/baselines/*.json, whole and with
// every array cut to its first two elements (ci/fuzz.sh).
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "model/report.h"
#include "model/report_error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using geotb::model::ReportError;
  geotb::fuzz::read_one<ReportError, nlohmann::json::parse_error>([&] {
    const nlohmann::json j = nlohmann::json::parse(data, data + size);
    (void)geotb::model::parse_report(j, "fuzz.json");
  });
  return 0;
}
