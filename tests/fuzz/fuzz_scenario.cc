// libFuzzer target: the scenario parser (harness/scenario.h). The input is a scenario file's
// bytes; the target does what load_scenario() does after reading the file (parse the JSON, then
// parse_scenario(): every field validated, the strategy table consulted, the hash computed),
// then what `geotb run` checks next on the parsed scenario (check_faults_for_mode,
// check_represented_for_mode). A ScenarioError, or the JSON parse error load_scenario() turns into
// one, is the expected outcome of a bad file (tests/fuzz/fuzz_util.h). Seeds: scenarios/*.json.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "harness/scenario.h"
#include "tests/fuzz/fuzz_util.h"

#ifndef GEOTB_SCENARIO_DIR
#define GEOTB_SCENARIO_DIR "scenarios"  // relative to the working directory
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using geotb::harness::ScenarioError;
  geotb::fuzz::read_one<ScenarioError, nlohmann::json::parse_error>([&] {
    const nlohmann::json j = nlohmann::json::parse(data, data + size);
    // Relative trace files (timeline[].trace) resolve as for a file in scenarios/: the seeds are
    // the shipped scenarios (ci/fuzz.sh defines the directory).
    const geotb::harness::Scenario sc = geotb::harness::parse_scenario(j, "fuzz.json", GEOTB_SCENARIO_DIR);
    geotb::harness::check_faults_for_mode(sc);
    geotb::harness::check_represented_for_mode(sc);
  });
  return 0;
}
