// The errors of reading the model's JSON documents (run reports, rank files).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace geotb::model {

/// A document that cannot be read or is not of the expected kind. The message names the file,
/// the field path and the value ("r.json: strategies[1].metrics.samples_per_s: expected a
/// number, got \"x\"").
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A field that does not fit its type, thrown by the model's from_json functions. path() is
/// relative to the object being read ("" = that object itself); readers of enclosing objects
/// prepend their key. load_report()/parse_report() turn it into a ReportError naming the file.
class FieldError : public std::exception {
 public:
  FieldError(std::string path, std::string detail);
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& path() const { return path_; }
  const std::string& detail() const { return detail_; }
  /// "metrics" + "samples" -> "metrics.samples"; "strategies" + "[0].name" -> "strategies[0].name".
  void prepend(std::string_view key);

 private:
  std::string path_, detail_, message_;
};

/// "source: path: detail", "(top level)" for an empty path.
ReportError report_error(const std::string& source, const FieldError& e);

}  // namespace geotb::model
