#include "model/json_file.h"

#include "common/atomic_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "model/report_error.h"

namespace geotb::model {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ReportError(fmt::format("{}: cannot open", path));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e999
    throw ReportError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
}

void write_json_atomically(const nlohmann::json& j, const std::string& path, int indent) {
  common::write_file_atomically(path, j.dump(indent) + "\n");
}

}  // namespace geotb::model
