#include "engine/checkpoint/file.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "common/atomic_file.h"

namespace geotb::engine {

namespace {

constexpr char kMagic[8] = {'G', 'E', 'O', 'T', 'B', 'C', 'K', 'P'};
constexpr size_t kDigest = 32;  // SHA-256

std::array<uint8_t, kDigest> sha256(const void* p, size_t n) {
  std::array<uint8_t, kDigest> d{};
  unsigned len = 0;
  if (EVP_Digest(p, n, d.data(), &len, EVP_sha256(), nullptr) != 1 || len != kDigest)
    throw CheckpointError("SHA-256 (libcrypto) failed");
  return d;
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string header_text(const CheckpointHeader& h, int rank) {
  std::string s = "scenario_hash " + h.scenario_hash + "\nstrategy " + h.strategy + "\nworld " + std::to_string(h.world) +
                  "\nstep " + std::to_string(h.step) + "\n";
  if (rank >= 0) s += "rank " + std::to_string(rank) + "\n";
  return s;
}

/// "key value" lines; every key of `keys` exactly once, nothing else.
std::map<std::string, std::string> parse_lines(const std::string& text, const std::string& where,
                                               const std::vector<std::string>& keys) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto sp = line.find(' ');
    const std::string k = line.substr(0, sp), v = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      throw CheckpointError(where + ": unknown header field \"" + k + "\"");
    if (!kv.emplace(k, v).second) throw CheckpointError(where + ": header field \"" + k + "\" twice");
  }
  for (const auto& k : keys)
    if (!kv.count(k)) throw CheckpointError(where + ": header field \"" + k + "\" missing");
  return kv;
}

int parse_int(const std::string& where, const std::string& key, const std::string& v, int lo) {
  try {
    size_t used = 0;
    const long x = std::stol(v, &used);
    if (used == v.size() && x >= lo && x <= 1000000000) return static_cast<int>(x);
  } catch (const std::exception&) {
  }
  throw CheckpointError(where + ": " + key + " \"" + v + "\": not an integer >= " + std::to_string(lo));
}

CheckpointHeader header_of(const std::map<std::string, std::string>& kv, const std::string& where) {
  CheckpointHeader h;
  h.scenario_hash = kv.at("scenario_hash");
  h.strategy = kv.at("strategy");
  h.world = parse_int(where, "world", kv.at("world"), 1);
  h.step = parse_int(where, "step", kv.at("step"), 0);
  return h;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CheckpointError(path + ": cannot open: " + std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_atomically(const std::string& path, std::string_view content) {
  try {
    // A checkpoint holds the model: readable by its owner only (files 0600, directories 0700).
    common::write_file_atomically(path, content, 0600);
  } catch (const common::FileError& e) {
    throw CheckpointError(std::string("checkpoint: ") + e.what());
  }
}

/// Reads the header's scenario, strategy and world against `want`: "<where>: <field> ..., <whose> ...".
void expect_same(const CheckpointHeader& got, const CheckpointHeader& want, const std::string& where,
                 const std::string& whose, bool step_too) {
  auto short_hash = [](const std::string& h) { return h.substr(0, 12); };
  if (got.scenario_hash != want.scenario_hash)
    throw CheckpointError(where + ": scenario hash " + short_hash(got.scenario_hash) + "..., " + whose + " " +
                          short_hash(want.scenario_hash) + "...: a checkpoint of another scenario");
  if (got.strategy != want.strategy)
    throw CheckpointError(where + ": strategy \"" + got.strategy + "\", " + whose + " \"" + want.strategy + "\"");
  if (got.world != want.world)
    throw CheckpointError(where + ": world size " + std::to_string(got.world) + ", " + whose + " " +
                          std::to_string(want.world));
  if (step_too && got.step != want.step)
    throw CheckpointError(where + ": step " + std::to_string(got.step) + ", " + whose + " " + std::to_string(want.step));
}

}  // namespace

std::string sha256_hex(const void* p, size_t n) {
  const auto d = sha256(p, n);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

std::string checkpoint_step_dir(const std::string& dir, const std::string& strategy, int step) {
  return dir + "/" + strategy + "/step-" + std::to_string(step);
}

std::string checkpoint_rank_file(const std::string& step_dir, int rank) {
  return step_dir + "/rank-" + std::to_string(rank) + ".ckpt";
}

void write_rank_checkpoint(const std::string& step_dir, const CheckpointHeader& h, int rank, const StateBuffers& s) {
  std::string out;
  out.reserve(s.payload_bytes() + 64 * (s.entries.size() + 4));
  out.append(kMagic, sizeof kMagic);
  put<uint32_t>(out, kCheckpointFormat);
  const std::string head = header_text(h, rank);
  put<uint32_t>(out, static_cast<uint32_t>(head.size()));
  out += head;
  put<uint64_t>(out, s.entries.size());
  for (const auto& e : s.entries) {
    put<uint32_t>(out, static_cast<uint32_t>(e.name.size()));
    out += e.name;
    put<uint64_t>(out, e.bytes.size());
    out.append(reinterpret_cast<const char*>(e.bytes.data()), e.bytes.size());
  }
  const auto d = sha256(out.data(), out.size());
  out.append(reinterpret_cast<const char*>(d.data()), d.size());
  std::error_code ec;
  std::filesystem::create_directories(step_dir, ec);
  if (ec) throw CheckpointError("checkpoint: cannot create " + step_dir + ": " + ec.message());
  for (const std::filesystem::path& d : {std::filesystem::path(step_dir), std::filesystem::path(step_dir).parent_path()}) {
    std::filesystem::permissions(d, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
    if (ec) throw CheckpointError("checkpoint: cannot restrict " + d.string() + " to its owner: " + ec.message());
  }
  write_atomically(checkpoint_rank_file(step_dir, rank), out);
}

void complete_checkpoint(const std::string& dir, const CheckpointHeader& h) {
  const std::string step_dir = checkpoint_step_dir(dir, h.strategy, h.step);
  write_atomically(step_dir + "/manifest", "format " + std::to_string(kCheckpointFormat) + "\n" + header_text(h, -1));
  write_atomically(dir + "/" + h.strategy + "/latest", "step-" + std::to_string(h.step) + "\n");
}

RankCheckpoint read_rank_checkpoint(const std::string& path) { return parse_rank_checkpoint(slurp(path), path); }

RankCheckpoint parse_rank_checkpoint(const std::string& b, const std::string& path) {
  size_t at = 0;
  auto need = [&](size_t n, const char* what) {
    // n is a length from the file, up to 2^64 - 1: `at + n` could wrap past the check.
    if (b.size() < kDigest || at > b.size() - kDigest || n > b.size() - kDigest - at)
      throw CheckpointError(path + ": truncated: " + std::to_string(b.size()) + " bytes, ends inside the " + what);
  };
  auto get = [&]<class T>(T& v, const char* what) {
    need(sizeof v, what);
    std::memcpy(&v, b.data() + at, sizeof v);
    at += sizeof v;
  };
  if (b.size() < sizeof kMagic || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0)
    throw CheckpointError(path + ": not a geotb checkpoint (no GEOTBCKP magic)");
  at = sizeof kMagic;
  uint32_t version = 0;
  get(version, "format version");
  if (version != kCheckpointFormat)
    throw CheckpointError(path + ": format version " + std::to_string(version) + ", this geotb reads " +
                          std::to_string(kCheckpointFormat));
  // Everything up to the digest must hash to it: a truncated file fails here or on its lengths.
  if (b.size() >= at + kDigest) {
    const auto d = sha256(b.data(), b.size() - kDigest);
    if (std::memcmp(d.data(), b.data() + b.size() - kDigest, kDigest) != 0) {
      // Tell a short file from a corrupt one: walk the declared lengths first.
      size_t walk = at;
      bool short_file = false;
      auto skip = [&](size_t n) {
        if (walk + n > b.size()) short_file = true;
        walk = short_file ? b.size() : walk + n;
      };
      uint32_t hl = 0;
      if (walk + 4 <= b.size()) std::memcpy(&hl, b.data() + walk, 4);
      skip(4);
      skip(hl);
      uint64_t count = 0;
      if (!short_file && walk + 8 <= b.size()) std::memcpy(&count, b.data() + walk, 8);
      skip(8);
      for (uint64_t i = 0; i < count && !short_file; ++i) {
        uint32_t nl = 0;
        if (walk + 4 <= b.size()) std::memcpy(&nl, b.data() + walk, 4);
        skip(4);
        skip(nl);
        uint64_t sz = 0;
        if (!short_file && walk + 8 <= b.size()) std::memcpy(&sz, b.data() + walk, 8);
        skip(8);
        if (sz > b.size()) short_file = true;
        else skip(sz);
      }
      skip(kDigest);
      if (short_file || walk != b.size())
        throw CheckpointError(path + ": truncated: " + std::to_string(b.size()) + " bytes, its lengths declare " +
                              (short_file ? "more" : std::to_string(walk)));
      throw CheckpointError(path + ": checksum mismatch (SHA-256 of the content differs from the one stored): corrupt");
    }
  } else {
    throw CheckpointError(path + ": truncated: " + std::to_string(b.size()) + " bytes");
  }
  uint32_t hl = 0;
  get(hl, "header length");
  need(hl, "header");
  const std::string head = b.substr(at, hl);
  at += hl;
  const auto kv = parse_lines(head, path, {"scenario_hash", "strategy", "world", "step", "rank"});
  RankCheckpoint rc;
  rc.header = header_of(kv, path);
  rc.rank = parse_int(path, "rank", kv.at("rank"), 0);
  uint64_t count = 0;
  get(count, "buffer count");
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t nl = 0;
    get(nl, "buffer name length");
    need(nl, "buffer name");
    StateBuffers::Entry e;
    e.name = b.substr(at, nl);
    at += nl;
    uint64_t sz = 0;
    get(sz, "buffer size");
    need(sz, "buffer");
    e.bytes.assign(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + sz));
    at += sz;
    rc.state.entries.push_back(std::move(e));
  }
  if (at != b.size() - kDigest)
    throw CheckpointError(path + ": " + std::to_string(b.size() - kDigest - at) + " bytes after the last buffer");
  return rc;
}

Checkpoint find_checkpoint(const std::string& path) {
  namespace fs = std::filesystem;
  std::string step_dir = path;
  while (step_dir.size() > 1 && step_dir.back() == '/') step_dir.pop_back();
  if (!fs::exists(step_dir + "/manifest")) {
    if (!fs::exists(step_dir + "/latest")) {
      if (!fs::exists(step_dir))
        throw CheckpointError(path + ": no such checkpoint directory");
      throw CheckpointError(path + ": not a checkpoint: neither " + step_dir + "/manifest (a complete checkpoint) nor " +
                            step_dir + "/latest (a strategy's checkpoints)");
    }
    std::string name = slurp(step_dir + "/latest");
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    if (name.empty() || name.find('/') != std::string::npos)
      throw CheckpointError(step_dir + "/latest: \"" + name + "\": not a step directory name");
    step_dir += "/" + name;
    if (!fs::exists(step_dir + "/manifest"))
      throw CheckpointError(step_dir + "/manifest: missing (the checkpoint " + step_dir + " is incomplete)");
  }
  const std::string mpath = step_dir + "/manifest";
  Checkpoint c;
  c.step_dir = step_dir;
  c.header = parse_manifest(slurp(mpath), mpath);
  return c;
}

CheckpointHeader parse_manifest(const std::string& text, const std::string& where) {
  const auto kv = parse_lines(text, where, {"format", "scenario_hash", "strategy", "world", "step"});
  if (kv.at("format") != std::to_string(kCheckpointFormat))
    throw CheckpointError(where + ": format " + kv.at("format") + ", this geotb reads " + std::to_string(kCheckpointFormat));
  return header_of(kv, where);
}

Checkpoint load_checkpoint(const std::string& path, const CheckpointHeader& expect, const std::vector<int>& ranks_to_read) {
  Checkpoint c = find_checkpoint(path);
  expect_same(c.header, expect, c.step_dir + "/manifest", "this run's", false);
  c.ranks.resize(static_cast<size_t>(c.header.world));
  for (int r = 0; r < c.header.world; ++r) {
    if (!ranks_to_read.empty() && std::find(ranks_to_read.begin(), ranks_to_read.end(), r) == ranks_to_read.end())
      continue;
    const std::string f = checkpoint_rank_file(c.step_dir, r);
    RankCheckpoint rc = read_rank_checkpoint(f);
    expect_same(rc.header, c.header, f, "its manifest's", true);
    if (rc.rank != r) throw CheckpointError(f + ": rank " + std::to_string(rc.rank) + ", the file name says " + std::to_string(r));
    c.ranks[static_cast<size_t>(r)] = std::move(rc.state);
  }
  return c;
}

}  // namespace geotb::engine
