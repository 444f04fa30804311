#include "engine/transport/tags.h"

#include <limits>
#include <string>

namespace geotb::engine {

TagRange::TagRange(std::string_view name, uint64_t base, uint64_t size) : name_(name), base_(base), size_(size) {
  if (size > std::numeric_limits<uint64_t>::max() - base)
    throw TagError(std::string(name) + ": " + std::to_string(size) + " tags from " + std::to_string(base) +
                   " overflow 64 bits");
}

uint64_t TagRange::tag(uint64_t i) const {
  if (i >= size_)
    throw TagError(std::string(name_) + ": tag " + std::to_string(i) + " of a range of " + std::to_string(size_));
  return base_ + i;
}

void TagRange::require(uint64_t n) const {
  if (size_ < n)
    throw TagError(std::string(name_) + ": " + std::to_string(n) + " tags needed, the range has " + std::to_string(size_));
}

TagRange all_tags() { return TagRange("all", 0, uint64_t{1} << 63); }
TagRange strategy_tags() { return TagRange("strategy", 0, uint64_t{1} << 62); }
TagRange group_tags() { return TagRange("intra_dc_group", uint64_t{1} << 62, uint64_t{1} << 62); }

TagRange TagAllocator::take(std::string_view name, uint64_t size) {
  if (size > left())
    throw TagError(std::string(space_.name()) + ": " + std::string(name) + ": " + std::to_string(size) +
                   " tags, only " + std::to_string(left()) + " left");
  TagRange r(name, space_.base() + next_, size);
  next_ += size;
  return r;
}

}  // namespace geotb::engine
