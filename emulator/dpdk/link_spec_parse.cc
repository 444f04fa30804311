#include "emulator/dpdk/link_spec_parse.h"

#include <arpa/inet.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "common/units.h"

namespace geotb::emu {

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep)) out.push_back(cur);
  return out;
}
int dc_index(const std::string& name, const std::vector<std::string>& dcs, const std::string& ctx) {
  auto it = std::find(dcs.begin(), dcs.end(), name);
  if (it == dcs.end()) throw std::invalid_argument(ctx + ": unknown data center \"" + name + "\" (declare it with --port)");
  return static_cast<int>(it - dcs.begin());
}
// "A>B" or "A<>B" -> pairs
std::vector<std::pair<int, int>> directions(const std::string& s, const std::vector<std::string>& dcs, const std::string& ctx) {
  if (auto p = s.find("<>"); p != std::string::npos) {
    const int a = dc_index(s.substr(0, p), dcs, ctx), b = dc_index(s.substr(p + 2), dcs, ctx);
    return {{a, b}, {b, a}};
  }
  if (auto p = s.find('>'); p != std::string::npos)
    return {{dc_index(s.substr(0, p), dcs, ctx), dc_index(s.substr(p + 1), dcs, ctx)}};
  throw std::invalid_argument(ctx + ": \"" + s + "\": expected A>B or A<>B");
}
uint64_t parse_uint(const std::string& v, const std::string& key) {
  try {
    size_t pos = 0;
    const unsigned long long x = std::stoull(v, &pos);
    if (pos != v.size()) throw std::invalid_argument("");
    return x;
  } catch (...) {
    throw std::invalid_argument(key + ": \"" + v + "\": expected a non-negative integer");
  }
}
LossConfig parse_ge(const std::string& v) {
  const auto p = split(v, '/');
  if (p.size() != 4) throw std::invalid_argument("ge: \"" + v + "\": expected p_gb/p_bg/loss_good/loss_bad");
  LossConfig l;
  l.kind = LossConfig::Kind::kGilbertElliott;
  l.p_good_to_bad = common::parse_probability(p[0]);
  l.p_bad_to_good = common::parse_probability(p[1]);
  l.loss_good = common::parse_probability(p[2]);
  l.loss_bad = common::parse_probability(p[3]);
  return l;
}
}  // namespace

Ipv4Prefix parse_prefix(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos) throw std::invalid_argument("subnet: \"" + s + "\": expected a.b.c.d/len");
  in_addr a{};
  if (inet_pton(AF_INET, s.substr(0, slash).c_str(), &a) != 1) throw std::invalid_argument("subnet: \"" + s + "\": bad address");
  const uint64_t len = parse_uint(s.substr(slash + 1), "subnet length");
  if (len > 32) throw std::invalid_argument("subnet: \"" + s + "\": length must be <= 32");
  return Ipv4Prefix{ntohl(a.s_addr), static_cast<uint8_t>(len)};
}

PortArg parse_port_arg(const std::string& s) {
  const auto eq = s.find('='), comma = s.find(',');
  if (eq == std::string::npos || comma == std::string::npos || comma < eq)
    throw std::invalid_argument("--port \"" + s + "\": expected NAME=DEVICE,SUBNET");
  return PortArg{s.substr(0, eq), s.substr(eq + 1, comma - eq - 1), parse_prefix(s.substr(comma + 1))};
}

void parse_link_arg(const std::string& s, const std::vector<std::string>& dcs, std::vector<LinkSpec>& out) {
  const auto colon = s.find(':');
  const std::string ctx = "--link \"" + s + "\"";
  const auto dirs = directions(s.substr(0, colon), dcs, ctx);
  LinkConfig c;
  if (colon != std::string::npos) {
    for (const std::string& kv : split(s.substr(colon + 1), ',')) {
      if (kv.empty()) continue;
      const auto eq = kv.find('=');
      if (eq == std::string::npos) throw std::invalid_argument(ctx + ": \"" + kv + "\": expected key=value");
      const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      try {
        if (k == "rate") c.rate_bps = common::parse_bandwidth_bps(v);
        else if (k == "delay") c.delay = common::parse_duration(v);
        else if (k == "jitter") { c.jitter.amount = common::parse_duration(v); if (c.jitter.kind == JitterConfig::Kind::kNone) c.jitter.kind = JitterConfig::Kind::kUniform; }
        else if (k == "jitter_kind") {
          if (v == "uniform") c.jitter.kind = JitterConfig::Kind::kUniform;
          else if (v == "normal") c.jitter.kind = JitterConfig::Kind::kNormal;
          else throw std::invalid_argument("\"" + v + "\": uniform or normal");
        } else if (k == "reorder") c.reorder = parse_uint(v, k) != 0;
        else if (k == "loss") {
          const double p = common::parse_probability(v);
          c.loss = p > 0 ? LossConfig{LossConfig::Kind::kBernoulli, p} : LossConfig{};
        }
        else if (k == "ge") c.loss = parse_ge(v);
        else if (k == "queue_bytes") c.queue_bytes = parse_uint(v, k);
        else if (k == "queue_packets") c.queue_packets = static_cast<uint32_t>(parse_uint(v, k));
        else if (k == "overhead_bytes") c.overhead_bytes = static_cast<uint32_t>(parse_uint(v, k));
        else if (k == "duplicate") c.duplicate_p = common::parse_probability(v);
        else if (k == "corrupt") c.corrupt_p = common::parse_probability(v);
        else throw std::invalid_argument("unknown key");
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(ctx + ": " + k + ": " + e.what());
      }
    }
  }
  if (auto e = LinkModel::validate(c); !e.empty()) throw std::invalid_argument(ctx + ": " + e);
  for (auto [a, b] : dirs) {
    LinkSpec l;
    l.src = a;
    l.dst = b;
    l.model = c;
    out.push_back(l);
  }
}

namespace {
std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}
std::string loss_text(const LossConfig& l) {
  switch (l.kind) {
    case LossConfig::Kind::kNone: return "loss=0";
    case LossConfig::Kind::kBernoulli: return "loss=" + num(l.p);
    case LossConfig::Kind::kGilbertElliott:
      return "ge=" + num(l.p_good_to_bad) + "/" + num(l.p_bad_to_good) + "/" + num(l.loss_good) + "/" + num(l.loss_bad);
  }
  return "";
}
}  // namespace

std::string link_spec_text(const LinkConfig& c) {
  std::ostringstream os;
  os << "rate=" << num(c.rate_bps) << "bps,delay=" << c.delay.count() << "ns";
  if (c.queue_bytes) os << ",queue_bytes=" << c.queue_bytes;
  if (c.queue_packets) os << ",queue_packets=" << c.queue_packets;
  if (c.overhead_bytes != LinkConfig{}.overhead_bytes) os << ",overhead_bytes=" << c.overhead_bytes;
  if (c.jitter.kind != JitterConfig::Kind::kNone && c.jitter.amount.count() > 0)
    os << ",jitter_kind=" << (c.jitter.kind == JitterConfig::Kind::kNormal ? "normal" : "uniform") << ",jitter=" << c.jitter.amount.count() << "ns";
  if (c.reorder) os << ",reorder=1";
  if (c.loss.kind != LossConfig::Kind::kNone) os << "," << loss_text(c.loss);
  if (c.duplicate_p > 0) os << ",duplicate=" << num(c.duplicate_p);
  if (c.corrupt_p > 0) os << ",corrupt=" << num(c.corrupt_p);
  return os.str();
}

std::string change_spec_text(const LinkChange& c) {
  std::ostringstream os;
  os << "at=" << c.at.count() << "ns";
  if (c.rate_bps) os << ",rate=" << num(*c.rate_bps) << "bps";
  if (c.delay) os << ",delay=" << c.delay->count() << "ns";
  if (c.loss) os << "," << loss_text(*c.loss);
  if (c.up) os << ",up=" << (*c.up ? 1 : 0);
  return os.str();
}

void parse_change_arg(const std::string& s, const std::vector<std::string>& dcs, std::vector<LinkSpec>& links) {
  const std::string ctx = "--change \"" + s + "\"";
  LinkChange ch;
  std::vector<std::pair<int, int>> dirs;
  bool have_at = false;
  for (const std::string& kv : split(s, ',')) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw std::invalid_argument(ctx + ": \"" + kv + "\": expected key=value");
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    try {
      if (k == "at") { ch.at = common::parse_duration(v); have_at = true; }
      else if (k == "link") dirs = directions(v, dcs, ctx);
      else if (k == "rate") ch.rate_bps = common::parse_bandwidth_bps(v);
      else if (k == "delay") ch.delay = common::parse_duration(v);
      else if (k == "loss") {
        const double p = common::parse_probability(v);
        ch.loss = p > 0 ? LossConfig{LossConfig::Kind::kBernoulli, p} : LossConfig{};
      }
      else if (k == "ge") ch.loss = parse_ge(v);
      else if (k == "up") ch.up = parse_uint(v, k) != 0;
      else throw std::invalid_argument("unknown key");
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(ctx + ": " + k + ": " + e.what());
    }
  }
  if (!have_at || dirs.empty()) throw std::invalid_argument(ctx + ": needs at= and link=");
  for (auto [a, b] : dirs) {
    bool found = false;
    for (LinkSpec& l : links)
      if (l.src == a && l.dst == b) { l.timeline.push_back(ch); found = true; }
    if (!found) throw std::invalid_argument(ctx + ": no --link " + dcs[a] + ">" + dcs[b] + " to change");
  }
}

}  // namespace geotb::emu
