// Reading and writing whole JSON files: a reader never sees half a file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace geotb::model {

/// Parses the file; throws ReportError "path: cannot open" or "path: not valid JSON: ...".
nlohmann::json read_json_file(const std::string& path);

/// Writes j.dump(indent) and a newline to `path` atomically (common/atomic_file.h).
/// Throws std::runtime_error naming the file on failure.
void write_json_atomically(const nlohmann::json& j, const std::string& path, int indent = -1);

}  // namespace geotb::model
