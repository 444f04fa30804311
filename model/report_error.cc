#include "model/report_error.h"

#include <fmt/format.h>

namespace geotb::model {

FieldError::FieldError(std::string path, std::string detail) : path_(std::move(path)), detail_(std::move(detail)) {
  prepend("");
}

void FieldError::prepend(std::string_view key) {
  if (!key.empty()) {
    if (path_.empty()) path_ = std::string(key);
    else if (path_.front() == '[') path_ = std::string(key) + path_;
    else path_ = std::string(key) + "." + path_;
  }
  message_ = fmt::format("{}: {}", path_.empty() ? "(top level)" : path_, detail_);
}

ReportError report_error(const std::string& source, const FieldError& e) {
  return ReportError(fmt::format("{}: {}", source, e.what()));
}

}  // namespace geotb::model
