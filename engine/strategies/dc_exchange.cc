#include "engine/strategies/dc_exchange.h"
#include "engine/strategies/exchange_timing.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace geotb::engine {

namespace {
constexpr size_t kHeader = sizeof(int64_t);  // sender's clock at hand-off, ns
}  // namespace

DcPeers dc_peers(const WorkerEnv& env) {
  DcPeers p;
  for (int d = 0; d < env.num_dcs; ++d)
    if (d != env.dc) {
      p.leaders.push_back(env.dc_leaders[static_cast<size_t>(d)]);
      p.links.push_back(static_cast<size_t>(d) < env.wan_in.size() ? env.wan_in[static_cast<size_t>(d)] : InboundLink{});
    }
  return p;
}

kernels::CompressConfig ef_round_coding(const StrategyConfig& cfg) {
  kernels::CompressConfig c;
  c.density = cfg.density;
  c.block = cfg.block;
  c.values = cfg.quantize ? kernels::ValueCoding::kInt8 : kernels::ValueCoding::kFloat32;
  c.rounding = kernels::Rounding::kNearest;  // deterministic: every DC member computes the same
  c.topk = kernels::TopkMode::kExact;
  return c;
}

DcExchange::DcExchange(const WorkerEnv& env, TagRange space) : tags_(space) {
  DcPeers p = dc_peers(env);
  peers_ = std::move(p.leaders);
  peer_links_ = std::move(p.links);
}

std::vector<std::vector<uint8_t>> DcExchange::exchange(WorkerEnv& env, const std::vector<uint8_t>& own, int step,
                                                       std::string_view name, uint64_t own_fixed_bytes) {
  return run(env, own, step, name, own_fixed_bytes, nullptr);
}

std::vector<std::vector<uint8_t>> DcExchange::exchange_shaped(WorkerEnv& env, const std::vector<uint8_t>& own,
                                                              int step, std::string_view name, uint64_t network_bytes) {
  return run(env, own, step, name, 0, &network_bytes);
}

std::vector<std::vector<uint8_t>> DcExchange::run(WorkerEnv& env, const std::vector<uint8_t>& own, int step,
                                                  std::string_view name, uint64_t own_fixed_bytes,
                                                  const uint64_t* network_bytes) {
  const TagRange tags = tags_.take(name, 2);
  const uint64_t tag_exchange = tags.tag(0), tag_forward = tags.tag(1);
  std::vector<std::vector<uint8_t>> out;
  ScopedTimer timer(*env.clock, env.times.exposed_comm_ns);
  // The DC's leader now: local rank 0, or the survivor that took over its address (engine/faults/).
  const int leader = env.dc_leaders[static_cast<size_t>(env.dc)];
  if (env.rank != leader) {
    for (size_t i = 0; i < peers_.size(); ++i) out.push_back(env.net->recv(leader, tag_forward));
    return out;
  }
  std::vector<uint8_t> msg(kHeader + own.size());
  const int64_t t0 = env.clock->now().count();
  std::memcpy(msg.data(), &t0, kHeader);
  if (!own.empty()) std::memcpy(msg.data() + kHeader, own.data(), own.size());
  const uint64_t fixed = kHeader + own_fixed_bytes;
  // On the network: the message scaled as the represented model's, or as its sender sized it.
  auto size_of = [&](uint64_t bytes) {
    return network_bytes ? kHeader + *network_bytes : env.net->represented_size(bytes, fixed);
  };
  auto send = [&](int dst, uint64_t tag, const std::vector<uint8_t>& m, uint64_t header) {
    if (network_bytes)
      env.net->send_shaped(dst, tag, m, header + *network_bytes, 1);
    else
      env.net->send_data(dst, tag, m, header + own_fixed_bytes);
  };
  for (int p : peers_) send(p, tag_exchange, msg, kHeader);
  ExchangeRecord rec;
  rec.step = step;
  rec.bytes_sent = size_of(msg.size());
  ExchangeTiming timing(t0);
  for (size_t k = 0; k < peers_.size(); ++k) {
    std::vector<uint8_t> in = env.net->recv(peers_[k], tag_exchange);
    if (in.size() < kHeader) throw TransportError("DC exchange: message of " + std::to_string(in.size()) + " bytes");
    int64_t sent_at;
    std::memcpy(&sent_at, in.data(), kHeader);
    timing.arrived(sent_at, size_of(in.size()), peer_links_[k]);
    out.emplace_back(in.begin() + kHeader, in.end());
  }
  timing.finish(env.clock->now().count(), rec);
  for (int m : dc_ranks_but_self(env))
    for (const auto& w : out) send(m, tag_forward, w, 0);
  env.exchanges.push_back(rec);
  return out;
}

void dc_weighted_sum(const WorkerEnv& env, const std::vector<std::vector<uint8_t>>& peers, const float* own,
                     size_t offset, size_t n, std::vector<float>& out) {
  std::vector<float> peer(n);
  dc_weighted_sum(env, own + offset, n, out, [&](size_t k, float w, float* sum) {
    floats_from(peers[k], offset, peer.data(), n);
    for (size_t i = 0; i < n; ++i) sum[i] += w * peer[i];
  });
}

std::vector<uint8_t> float_bytes(const float* x, size_t n) {
  std::vector<uint8_t> b(n * sizeof(float));
  if (n) std::memcpy(b.data(), x, b.size());
  return b;
}

void floats_from(const std::vector<uint8_t>& bytes, size_t offset, float* out, size_t n) {
  if (bytes.size() < (offset + n) * sizeof(float))
    throw TransportError("DC exchange: message of " + std::to_string(bytes.size()) + " bytes, expected at least " +
                         std::to_string((offset + n) * sizeof(float)));
  if (n) std::memcpy(out, bytes.data() + offset * sizeof(float), n * sizeof(float));
}

}  // namespace geotb::engine
