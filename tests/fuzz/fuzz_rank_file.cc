// libFuzzer target: the rank file reader (model/rank_report.h), what `geotb run --net process|dpdk`
// reads from each `geotb worker --out` file. The input is the file's bytes; the target does what
// load_rank_report() does after opening it: parse the JSON (read_json_file), then from_json into
// a RankReport. A FieldError (load_rank_report() names the file in it) or a JSON parse error is the
// expected outcome of a bad file (tests/fuzz/fuzz_util.h). Seeds: tests/fuzz/seeds/rank_file/.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "model/rank_report.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using geotb::model::FieldError;
  geotb::fuzz::read_one<FieldError, nlohmann::json::parse_error>([&] {
    const nlohmann::json j = nlohmann::json::parse(data, data + size);
    geotb::model::RankReport r;
    from_json(j, r);
  });
  return 0;
}
