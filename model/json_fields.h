// Strict field access for the model's from_json functions (internal to model/). Every failure
// throws FieldError with the path relative to the object being read; each enclosing reader
// prepends its key (get(), list()), so the error that leaves the top-level reader names the
// whole path: "strategies[0].metrics.samples_per_s: expected a number, got \"fast\"".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/report_error.h"

namespace geotb::model::field {

using nlohmann::json;

/// The value as JSON text, cut to 60 characters for messages.
std::string shown(const json& v);

[[noreturn]] void fail(std::string path, std::string detail);

/// obj[key]; FieldError("", "expected an object, got ...") when obj is not an object,
/// FieldError(key, "missing") when the key is absent.
const json& req(const json& obj, const char* key);
bool has(const json& obj, const char* key);

double number(const json& obj, const char* key);
double nonneg(const json& obj, const char* key);  ///< a number >= 0
int64_t integer(const json& obj, const char* key);
uint64_t count(const json& obj, const char* key);  ///< an integer >= 0
bool boolean(const json& obj, const char* key);   ///< true or false
std::string str(const json& obj, const char* key);
std::string sha256_hex(const json& obj, const char* key);  ///< 64 lowercase hex digits
const json& object(const json& obj, const char* key);
const json& array(const json& obj, const char* key);
std::vector<double> numbers(const json& obj, const char* key);
std::vector<std::string> strings(const json& obj, const char* key);

/// from_json(obj[key], out), the key prepended to the path of any FieldError.
template <class T>
void get(const json& obj, const char* key, T& out) {
  const json& v = req(obj, key);
  try {
    from_json(v, out);
  } catch (FieldError& e) {
    e.prepend(key);
    throw;
  }
}

/// obj[key] as a list of T, element i read with from_json, "key[i]" prepended to its errors.
template <class T>
void list(const json& obj, const char* key, std::vector<T>& out) {
  const json& a = array(obj, key);
  out.clear();
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    T x{};
    try {
      from_json(a[i], x);
    } catch (FieldError& e) {
      e.prepend("[" + std::to_string(i) + "]");
      e.prepend(key);
      throw;
    }
    out.push_back(std::move(x));
  }
}

}  // namespace geotb::model::field
