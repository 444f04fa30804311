// A blocking exchange of one message between the leaders of every data center, forwarded to each
// DC's members: the periodic DC averaging of local_sgd and diloco. Every worker calls exchange()
// at the same point with its own message (identical on every worker of a DC); the leader sends
// it to every other DC's leader, receives theirs, records the exchange and forwards them to its
// DC members; a member receives them from its leader. The leader is env.dc_leaders[dc]: local
// rank 0, or the survivor that took over its address after its death (engine/faults/); the
// other DCs' leaders are addressed as local rank 0 throughout. Returns the other DCs' messages
// in DC order. The time it takes is charged to env.times.exposed_comm_ns.
// Tags: each exchange takes two from this object's TagAllocator over strategy_tags() (leaders,
// then the forward); every worker makes the same exchange() calls in the same order.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/strategy.h"
#include "engine/transport/tags.h"
#include "kernels/compress.h"

namespace geotb::engine {

/// The other data centers' leaders (env.dc_leaders, DC order without this DC) and the WAN link from
/// each to this DC: whom a leader exchanges with, and what bounds each message's transfer.
struct DcPeers {
  std::vector<int> leaders;
  std::vector<InboundLink> links;
};
DcPeers dc_peers(const WorkerEnv& env);

/// The error-feedback rounds' coding of hier_ef_topk_int8 and async_ef_topk_int8: top-k by `density`,
/// `block` elements per scale, INT8 (`quantize`) or float32 values, deterministic (nearest rounding,
/// exact top-k) so that every member of a DC computes the same message.
kernels::CompressConfig ef_round_coding(const StrategyConfig& cfg);

class DcExchange {
 public:
  /// `space`: the tags its exchanges take (two each); a strategy that also takes tags of its own
  /// gives it a range of them.
  explicit DcExchange(const WorkerEnv& env, TagRange space = strategy_tags());

  /// `step`: the step the exchange follows (-1: the final synchronisation after the last step),
  /// as recorded in the leader's exchange log. `name`: the tag range's name (a string literal).
  /// `own_fixed_bytes`: the headers of `own` that do not grow with the model (0 for a float
  /// tensor; Transport::send_data).
  std::vector<std::vector<uint8_t>> exchange(WorkerEnv& env, const std::vector<uint8_t>& own, int step,
                                             std::string_view name, uint64_t own_fixed_bytes = 0);
  /// exchange() of a message that every DC sends at the same size and that stands for
  /// `network_bytes` of payload on a representing transport (a represented model's PowerSGD
  /// factors, whose size is not the trained model's scaled: Transport::send_shaped).
  std::vector<std::vector<uint8_t>> exchange_shaped(WorkerEnv& env, const std::vector<uint8_t>& own, int step,
                                                    std::string_view name, uint64_t network_bytes);

 private:
  std::vector<std::vector<uint8_t>> run(WorkerEnv& env, const std::vector<uint8_t>& own, int step,
                                        std::string_view name, uint64_t own_fixed_bytes, const uint64_t* network_bytes);

  std::vector<int> peers_;               // other DCs' leaders, in DC order
  std::vector<InboundLink> peer_links_;  // the WAN link from each of them to this DC
  TagAllocator tags_;
};

/// out = sum_d w_d v_d over the data centers in DC order (w_d = dc_mean_weight, strategy.h; not yet
/// scaled by dc_mean_scale), this DC's v_d = own[0, n) at its own place, so that every worker
/// sums in the same order and every replica's result is bit-identical. add_peer(k, w, out) adds
/// w times the k-th other DC's v (DC order) into out[0, n).
template <class AddPeer>
void dc_weighted_sum(const WorkerEnv& env, const float* own, size_t n, std::vector<float>& out, AddPeer&& add_peer) {
  out.assign(n, 0.0f);
  for (int d = 0, k = 0; d < env.num_dcs; ++d) {
    const float w = dc_mean_weight(env, d);  // 1 unless the DCs weigh differently: exact
    if (d == env.dc) {
      for (size_t i = 0; i < n; ++i) out[i] += w * own[i];
    } else {
      add_peer(static_cast<size_t>(k++), w, out.data());
    }
  }
}

/// dc_weighted_sum of float messages: v_d is floats [offset, offset + n) of each peer's message
/// (DcExchange::exchange's result, in DC order), and own + offset for this DC.
void dc_weighted_sum(const WorkerEnv& env, const std::vector<std::vector<uint8_t>>& peers, const float* own,
                     size_t offset, size_t n, std::vector<float>& out);

/// Float buffers as message bytes and back (host byte order: every rank runs this build).
std::vector<uint8_t> float_bytes(const float* x, size_t n);
/// Copies n floats from `bytes` at float offset `offset`; throws TransportError on a size mismatch.
void floats_from(const std::vector<uint8_t>& bytes, size_t offset, float* out, size_t n);

}  // namespace geotb::engine
