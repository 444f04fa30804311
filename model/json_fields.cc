#include "model/json_fields.h"

#include <fmt/format.h>

namespace geotb::model::field {

std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

void fail(std::string path, std::string detail) { throw FieldError(std::move(path), std::move(detail)); }

const json& req(const json& obj, const char* key) {
  if (!obj.is_object()) fail("", fmt::format("expected an object, got {}", shown(obj)));
  auto it = obj.find(key);
  if (it == obj.end()) fail(key, "missing");
  return *it;
}

bool has(const json& obj, const char* key) { return obj.is_object() && obj.contains(key); }

double number(const json& obj, const char* key) {
  const json& v = req(obj, key);
  if (!v.is_number()) fail(key, fmt::format("expected a number, got {}", shown(v)));
  return v.get<double>();
}

double nonneg(const json& obj, const char* key) {
  const double x = number(obj, key);
  if (!(x >= 0)) fail(key, fmt::format("must be >= 0, got {}", x));
  return x;
}

int64_t integer(const json& obj, const char* key) {
  const json& v = req(obj, key);
  if (!v.is_number_integer()) fail(key, fmt::format("expected an integer, got {}", shown(v)));
  return v.get<int64_t>();
}

uint64_t count(const json& obj, const char* key) {
  const int64_t x = integer(obj, key);
  if (x < 0) fail(key, fmt::format("must be >= 0, got {}", x));
  return static_cast<uint64_t>(x);
}

bool boolean(const json& obj, const char* key) {
  const json& v = req(obj, key);
  if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", shown(v)));
  return v.get<bool>();
}

std::string str(const json& obj, const char* key) {
  const json& v = req(obj, key);
  if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", shown(v)));
  return v.get<std::string>();
}

const json& object(const json& obj, const char* key) {
  const json& v = req(obj, key);
  if (!v.is_object()) fail(key, fmt::format("expected an object, got {}", shown(v)));
  return v;
}

const json& array(const json& obj, const char* key) {
  const json& v = req(obj, key);
  if (!v.is_array()) fail(key, fmt::format("expected a list, got {}", shown(v)));
  return v;
}

std::vector<double> numbers(const json& obj, const char* key) {
  const json& a = array(obj, key);
  std::vector<double> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number()) fail(fmt::format("{}[{}]", key, i), fmt::format("expected a number, got {}", shown(a[i])));
    out.push_back(a[i].get<double>());
  }
  return out;
}

std::vector<std::string> strings(const json& obj, const char* key) {
  const json& a = array(obj, key);
  std::vector<std::string> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) fail(fmt::format("{}[{}]", key, i), fmt::format("expected a string, got {}", shown(a[i])));
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

std::string sha256_hex(const json& obj, const char* key) {
  const std::string s = str(obj, key);
  if (s.size() != 64 || s.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail(key, shown(obj.at(key)) + ": expected a SHA-256, 64 lowercase hex digits");
  return s;
}

}  // namespace geotb::model::field
