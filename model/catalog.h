// Lookups shared by the model's catalogs (hardware.h's GPUs, represented.h's models): an entry by
// its `name`, case-insensitive, and the list of names for an error message.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace geotb::model {

template <class Entry>
const Entry* find_in_catalog(const std::vector<Entry>& catalog, std::string_view name) {
  std::string key(name);
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const Entry& e : catalog)
    if (e.name == key) return &e;
  return nullptr;
}

template <class Entry>
std::string catalog_names(const std::vector<Entry>& catalog) {
  std::string out;
  for (const Entry& e : catalog) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

}  // namespace geotb::model
