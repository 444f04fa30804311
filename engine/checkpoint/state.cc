#include "engine/checkpoint/state.h"

namespace geotb::engine {

const StateBuffers::Entry* StateBuffers::find(std::string_view name) const {
  for (const Entry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

uint64_t StateBuffers::payload_bytes() const {
  uint64_t n = 0;
  for (const Entry& e : entries) n += e.bytes.size();
  return n;
}

void StateWriter::bytes(std::string_view name, const void* p, size_t n) {
  std::string full = prefix_ + std::string(name);
  if (out_.find(full)) throw StateError(full + ": written twice");
  StateBuffers::Entry e;
  e.name = std::move(full);
  e.bytes.resize(n);
  if (n) std::memcpy(e.bytes.data(), p, n);
  out_.entries.push_back(std::move(e));
}

StateReader::StateReader(const StateBuffers& in, std::string prefix)
    : StateReader(in, std::move(prefix), std::make_shared<std::vector<bool>>(in.entries.size(), false)) {}

StateReader::StateReader(const StateBuffers& in, std::string prefix, std::shared_ptr<std::vector<bool>> taken)
    : in_(in), prefix_(std::move(prefix)), taken_(std::move(taken)) {}

const std::vector<uint8_t>& StateReader::raw(std::string_view name) {
  const std::string full = prefix_ + std::string(name);
  for (size_t i = 0; i < in_.entries.size(); ++i)
    if (in_.entries[i].name == full) {
      (*taken_)[i] = true;
      return in_.entries[i].bytes;
    }
  throw StateError(full + ": missing from the checkpoint");
}

void StateReader::floats(std::string_view name, float* p, size_t expected) {
  const auto& b = raw(name);
  if (b.size() != expected * sizeof(float)) size_error(name, b.size(), expected * sizeof(float));
  if (expected) std::memcpy(p, b.data(), b.size());
}

bool StateReader::flag(std::string_view name) {
  const auto v = scalar<uint8_t>(name);
  if (v > 1) throw StateError(prefix_ + std::string(name) + ": " + std::to_string(v) + ": not a flag (0 or 1)");
  return v == 1;
}

StateReader StateReader::sub(std::string_view sub) { return StateReader(in_, prefix_ + std::string(sub) + ".", taken_); }

void StateReader::finish() const {
  for (size_t i = 0; i < in_.entries.size(); ++i)
    if (!(*taken_)[i] && in_.entries[i].name.starts_with(prefix_))
      throw StateError(in_.entries[i].name + ": in the checkpoint but not restored (" +
                       std::to_string(in_.entries[i].bytes.size()) + " bytes)");
}

void StateReader::size_error(std::string_view name, size_t got, size_t want) const {
  throw StateError(prefix_ + std::string(name) + ": " + std::to_string(got) + " bytes, expected " +
                   std::to_string(want));
}

}  // namespace geotb::engine
