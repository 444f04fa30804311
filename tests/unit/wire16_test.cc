// 16-bit wires ("wire": "bf16" | "fp16", docs/guide/strategies.md "16-bit wires"): the 16-bit rings
// (Gloo's and the eager one) against references computed hop by hop here, their WAN bytes
// (trained and represented); naive_ddp against torch's compress hooks restated here; hierarchical's
// 16-bit exchange with error feedback against its update rule restated here, round by round, and
// a noisy run that converges as float32's. 2 DCs x 2 workers, each a thread with a fake learner
// (its gradients written by the test), an intra-DC group that averages its members, and the
// in-process fabric between all four (no libtorch).
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <thread>

#include "emulator/inproc/fabric.h"
#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/strategies/table.h"
#include "engine/transport/emulated.h"
#include "fabric_fixtures.h"
#include "strategy_fixtures.h"
#include "kernels/wire16.h"

using namespace geotb;
using namespace geotb::engine;
using namespace std::chrono_literals;
using kernels::Bf16;
using kernels::Fp16;
using kernels::Wire16;
using geotb::engine::test::FakeIntra;
using geotb::engine::test::FakeLearner;
using geotb::engine::test::Group;

namespace {

const char* name(Wire16 w) { return w == Wire16::kBf16 ? "bf16" : "fp16"; }
uint16_t encode(Wire16 w, float f) { return w == Wire16::kBf16 ? Bf16::encode(f) : Fp16::encode(f); }
float decode(Wire16 w, uint16_t h) { return w == Wire16::kBf16 ? Bf16::decode(h) : Fp16::decode(h); }
/// One hop's sum as Gloo's float16 (and NCCL's half/bfloat16) computes it: in float, rounded to 16 bits.
uint16_t hop(Wire16 w, uint16_t own, uint16_t partial) { return encode(w, decode(w, own) + decode(w, partial)); }

using Data16 = std::vector<std::vector<uint16_t>>;  // per rank

/// Seeded finite values of format w, magnitudes 2^-4 .. 2^4: a sum of a few rounds at every hop.
Data16 random16(Wire16 w, int p, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> val(0.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-4, 4);
  Data16 d(static_cast<size_t>(p), std::vector<uint16_t>(n));
  for (auto& r : d)
    for (auto& h : r) h = encode(w, std::ldexp(val(rng), ex(rng)));
  return d;
}

/// Gloo's ring (gloo/allreduce.cc) on 2-byte elements: element j lies in segment 2j / seg, of rank
/// group G = segment / (S/P). Reduce-scatter starts group G at rank G - 1 (its own value), which
/// sends it to its ring predecessor G - 2, who adds its own, ... down to rank G (P values, P - 1
/// hops); the allgather then copies the sum to every rank.
std::vector<uint16_t> gloo_reference(Wire16 w, const Data16& d, const GlooRingOptions& o = {}) {
  const size_t p = d.size(), n = d[0].size();
  const GlooRingLayout L = gloo_ring_layout(2 * n, p, o, 2);
  std::vector<uint16_t> out(n);
  for (size_t j = 0; j < n; ++j) {
    const size_t g = (2 * j / L.segment_bytes) / L.segments_per_rank;
    uint16_t acc = d[(g + p - 1) % p][j];
    for (size_t k = 2; k <= p; ++k) acc = hop(w, d[(g + p - k) % p][j], acc);
    out[j] = acc;
  }
  return out;
}

/// The eager ring (collectives/ring_allreduce.h): chunk c = [c n / p, (c + 1) n / p) starts at rank
/// c and goes up the ring, c + 1, ..., c + p - 1.
std::vector<uint16_t> eager_reference(Wire16 w, const Data16& d) {
  const size_t p = d.size(), n = d[0].size();
  std::vector<uint16_t> out(n);
  for (size_t c = 0; c < p; ++c)
    for (size_t j = c * n / p; j < (c + 1) * n / p; ++j) {
      uint16_t acc = d[c][j];
      for (size_t k = 1; k < p; ++k) acc = hop(w, d[(c + k) % p][j], acc);
      out[j] = acc;
    }
  return out;
}

/// Runs body(transport, rank) on the 2 * per_site ranks of a two-site fabric (unlimited links, no
/// delay; `scale`: the transports' represented-model scale); returns the WAN traffic.
emu::TrafficStats on_ranks(int per_site, double scale, const std::function<void(Transport&, int)>& body) {
  emu::SteadyClock clock;
  emu::Fabric f(geotb::test::two_sites(per_site, 0, 0ns), clock);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2 * per_site; ++r)
    threads.emplace_back([&, r] {
      EmulatedTransport t(f, r, 10s, nullptr, scale);
      body(t, r);
    });
  for (auto& t : threads) t.join();
  return f.wan_total();
}

std::vector<int> ring_of(int p) {
  std::vector<int> ring;
  for (int r = 0; r < p; ++r) ring.push_back(r);
  return ring;
}

// (format, ranks per site, elements, Gloo's segments cut at 3 elements)
class GlooRing16 : public ::testing::TestWithParam<std::tuple<Wire16, int, size_t, bool>> {};

// Every rank ends with the hop-by-hop reference, bit for bit; with 3 or more ranks the reference
// differs from a float sum rounded once and from the other direction's order (so a ring that
// summed in float, or in another order, would fail).
TEST_P(GlooRing16, SumsHopByHopInGloosOrder) {
  const auto [w, per_site, n, tiny] = GetParam();
  const int p = 2 * per_site;
  GlooRingOptions o;
  if (tiny) o.max_segment_bytes = 6;  // 3 elements: many segments per rank
  Data16 d = random16(w, p, n, 7 + static_cast<uint32_t>(n));
  const Data16 in = d;
  on_ranks(per_site, 1.0, [&](Transport& t, int r) {
    gloo_ring_allreduce_sum(t, ring_of(p), d[static_cast<size_t>(r)].data(), n, w, all_tags(), o);
  });
  const std::vector<uint16_t> want = gloo_reference(w, in, o);
  for (int r = 0; r < p; ++r) EXPECT_EQ(d[static_cast<size_t>(r)], want) << "rank " << r;
  if (p >= 3 && n >= 100) {
    size_t once = 0, reversed = 0;
    for (size_t j = 0; j < n; ++j) {
      float f = 0;
      uint16_t rev = in[0][j];
      for (int r = 0; r < p; ++r) f += decode(w, in[static_cast<size_t>(r)][j]);
      for (int r = 1; r < p; ++r) rev = hop(w, in[static_cast<size_t>(r)][j], rev);
      once += encode(w, f) != want[j];
      reversed += rev != want[j];
    }
    EXPECT_GT(once, 0u) << "no element where rounding every hop matters: the test would not see a float sum";
    EXPECT_GT(reversed, 0u) << "no element where the order matters";
  }
}

// (format, ranks per site, elements)
class EagerRing16 : public ::testing::TestWithParam<std::tuple<Wire16, int, size_t>> {};

TEST_P(EagerRing16, SumsHopByHopInRingOrder) {
  const auto [w, per_site, n] = GetParam();
  const int p = 2 * per_site;
  Data16 d = random16(w, p, n, 11 + static_cast<uint32_t>(n));
  const Data16 in = d;
  on_ranks(per_site, 1.0, [&](Transport& t, int r) {
    ring_allreduce_sum(t, ring_of(p), d[static_cast<size_t>(r)].data(), n, w, all_tags());
  });
  const std::vector<uint16_t> want = eager_reference(w, in);
  for (int r = 0; r < p; ++r) EXPECT_EQ(d[static_cast<size_t>(r)], want) << "rank " << r;
  if (p >= 3 && n >= 100) {
    EXPECT_NE(want, gloo_reference(w, in)) << "the two rings' orders should differ somewhere";
  }
}

template <typename Param>
std::string ring_case(const ::testing::TestParamInfo<Param>& i) {
  std::string s = std::string(name(std::get<0>(i.param))) + "_p" + std::to_string(2 * std::get<1>(i.param)) + "_n" +
                  std::to_string(std::get<2>(i.param));
  if constexpr (std::tuple_size_v<Param> == 4) s += std::get<3>(i.param) ? "_tiny" : "";
  return s;
}

INSTANTIATE_TEST_SUITE_P(Sizes, GlooRing16,
                         ::testing::Combine(::testing::Values(Wire16::kBf16, Wire16::kFp16), ::testing::Values(1, 2, 3),
                                            ::testing::Values(size_t{1}, size_t{7}, size_t{1000}), ::testing::Bool()),
                         ring_case<GlooRing16::ParamType>);
INSTANTIATE_TEST_SUITE_P(Sizes, EagerRing16,
                         ::testing::Combine(::testing::Values(Wire16::kBf16, Wire16::kFp16), ::testing::Values(1, 2, 3),
                                            ::testing::Values(size_t{1}, size_t{7}, size_t{1000})),
                         ring_case<EagerRing16::ParamType>);

TEST(Ring16, GloosLayoutCountsTwoByteElements) {
  // 1000 halves on 2 ranks: 2000 bytes, segments of ceil(2000 / 4) = 500 bytes, 4 of them.
  auto L = gloo_ring_layout(2000, 2, {}, 2);
  EXPECT_EQ(L.segment_bytes, 500u);
  EXPECT_EQ(L.num_segments, 4u);
  // 7 halves on 4 ranks: ceil(14 / 8) = 2 bytes (one element), 2P = 8 segments; float32's would be 4 bytes.
  L = gloo_ring_layout(14, 4, {}, 2);
  EXPECT_EQ(L.segment_bytes, 2u);
  EXPECT_EQ(L.num_segments, 8u);
  EXPECT_EQ(gloo_ring_layout(28, 4).segment_bytes, 4u);
  // 2^20 halves on 2 ranks: 2 MiB in 1 MiB segments (float32's 4 MiB: 4 of them): fewer tags.
  EXPECT_EQ(gloo_ring_layout(2u << 20, 2, {}, 2).num_segments, 2u * 2);
  EXPECT_EQ(gloo_ring_tag_count(1u << 20, 2, {}, 2), 4u * (4 - 2));
  EXPECT_EQ(gloo_ring_tag_count(1u << 20, 2), 4u * (4 - 2));  // float32: 4 segments of 1 MiB too
  EXPECT_EQ(gloo_ring_tag_count(3u << 20, 2, {}, 2), 4u * (6 - 3));
  EXPECT_EQ(gloo_ring_tag_count(3u << 20, 2), 4u * (12 - 6));
  // A represented model's ring stays Gloo's while the 2-byte layout keeps its segment count.
  EXPECT_TRUE(gloo_ring_represents(1000, 100.0, 8, {}, 2));
  EXPECT_FALSE(gloo_ring_represents(1000, 1e6, 8, {}, 2));
  // 300,000 floats x 8 = 2.4 M elements on 4 ranks: 9.6 MB in float32 (more than 8 segments of
  // 1 MiB: not representable), 4.8 MB in 16 bits (8 segments: representable).
  EXPECT_FALSE(gloo_ring_represents(300000, 8.0, 4));
  EXPECT_TRUE(gloo_ring_represents(300000, 8.0, 4, {}, 2));
}

TEST(Ring16, WanBytesHalveForTheDataAndNotForGloosControlMessages) {
  // P = 2 (one rank per site: every message crosses the WAN), n = 1000. Gloo's ring, 4 segments:
  // per phase and rank 2 receiver-ready notifications (48 bytes) and 2 sends (48-byte preamble +
  // a segment: 1000 bytes in float32, 500 in 16 bits).
  std::vector<std::vector<float>> f(2, std::vector<float>(1000, 1.0f));
  Data16 h(2, std::vector<uint16_t>(1000, encode(Wire16::kBf16, 1.0f)));
  const auto f32 = on_ranks(1, 1.0, [&](Transport& t, int r) {
    gloo_ring_allreduce_sum(t, {0, 1}, f[static_cast<size_t>(r)].data(), 1000, all_tags());
  });
  const auto b16 = on_ranks(1, 1.0, [&](Transport& t, int r) {
    gloo_ring_allreduce_sum(t, {0, 1}, h[static_cast<size_t>(r)].data(), 1000, Wire16::kBf16, all_tags());
  });
  EXPECT_EQ(f32.messages, 16u);
  EXPECT_EQ(b16.messages, 16u);
  EXPECT_EQ(f32.payload_bytes, 2u * 2u * (2u * 48u + 2u * (48u + 1000u)));
  EXPECT_EQ(b16.payload_bytes, 2u * 2u * (2u * 48u + 2u * (48u + 500u)));
  EXPECT_EQ(h[0], std::vector<uint16_t>(1000, encode(Wire16::kBf16, 2.0f)));
  // The eager ring: 2 steps, each rank one chunk of 500 elements: exactly half.
  const auto e32 = on_ranks(1, 1.0, [&](Transport& t, int r) {
    ring_allreduce_sum(t, {0, 1}, f[static_cast<size_t>(r)].data(), 1000, all_tags());
  });
  const auto e16 = on_ranks(1, 1.0, [&](Transport& t, int r) {
    ring_allreduce_sum(t, {0, 1}, h[static_cast<size_t>(r)].data(), 1000, Wire16::kFp16, all_tags());
  });
  EXPECT_EQ(e32.payload_bytes, 2u * 2u * 500u * 4u);
  EXPECT_EQ(e16.payload_bytes, 2u * 2u * 500u * 2u);
}

TEST(Ring16, ARepresentedModelsMessagesCarryTwoBytesPerElement) {
  // Scale 1000: every tensor message stands for 1000 times its payload (Transport::represented_size);
  // Gloo's preambles do not scale. 16-bit segments of 500 bytes stand for 500,000.
  Data16 h(2, std::vector<uint16_t>(1000, 0));
  const auto g16 = on_ranks(1, 1000.0, [&](Transport& t, int r) {
    gloo_ring_allreduce_sum(t, {0, 1}, h[static_cast<size_t>(r)].data(), 1000, Wire16::kFp16, all_tags());
  });
  EXPECT_EQ(g16.payload_bytes, 2u * 2u * (2u * 48u + 2u * (48u + 500u * 1000u)));
  // A bucket group's shape (DdpBuckets::shape): chunk c stands for its part of the group's
  // represented elements, 2 bytes each (4 in float32), whatever the proxy's slice holds.
  const RingShape shape{.elements = 3'000'001, .rounds = 1};
  std::vector<std::vector<float>> f(2, std::vector<float>(10, 0.0f));
  const auto s32 = on_ranks(1, 300000.0, [&](Transport& t, int r) {
    ring_allreduce_sum(t, {0, 1}, f[static_cast<size_t>(r)].data(), 10, all_tags(), shape);
  });
  const auto s16 = on_ranks(1, 300000.0, [&](Transport& t, int r) {
    ring_allreduce_sum(t, {0, 1}, h[static_cast<size_t>(r)].data(), 10, Wire16::kBf16, all_tags(), &shape);
  });
  // Chunks of 1,500,000 and 1,500,001 elements, each sent once per phase.
  EXPECT_EQ(s32.payload_bytes, 2u * 3'000'001u * 4u);
  EXPECT_EQ(s16.payload_bytes, 2u * 3'000'001u * 2u);
}

// --- The strategies on 2 DCs x 2 workers -------------------------------------------------------

/// Worker r's gradient element i at `step`, given its model x.
using GradFn = std::function<float(int r, int step, size_t i, const float* x)>;

struct WorkerOut {
  std::vector<float> x, x_before_finish;
  StateBuffers state;  // the strategy's checkpoint state after the last step, before finish()
  std::vector<ExchangeRecord> exchanges;
  std::vector<float> floats(const std::string& buf) const {
    const auto* e = state.find(buf);
    std::vector<float> v(e ? e->bytes.size() / sizeof(float) : 0);
    if (e && !v.empty()) std::memcpy(v.data(), e->bytes.data(), e->bytes.size());
    return v;
  }
};
struct RunOut {
  std::vector<WorkerOut> ranks;
  emu::TrafficStats wan;
};

/// `steps` steps of `cfg` (then save, then finish()) on ranks 0, 1 (DC 0) and 2, 3 (DC 1), ring
/// 0-1-2-3, from x0, SGD `sc`.
RunOut run(const StrategyConfig& cfg, int steps, const std::vector<float>& x0, const GradFn& grad, const SgdConfig& sc) {
  const size_t n = x0.size();
  emu::SteadyClock clock;
  emu::Fabric fabric(geotb::test::two_sites(2, 0, 0ns), clock);
  Group g0(2, n), g1(2, n);
  Group* groups[2] = {&g0, &g1};
  RunOut out;
  out.ranks.resize(4);
  std::vector<std::thread> threads;
  const model::RankLayout layout = model::RankLayout::uniform(2, 2);
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      FakeLearner learner(x0);
      Sgd opt(sc, n);
      EmulatedTransport net(fabric, r, 10s);
      FakeIntra intra(*groups[layout.dc_of(r)], layout.local_of(r));
      WorkerEnv env = geotb::engine::test::fixture_env(r, layout, learner, opt, net, intra, clock);
      auto s = find_strategy(cfg.name).make(cfg, env);
      for (int step = 0; step < steps; ++step) {
        for (size_t i = 0; i < n; ++i) learner.grads()[i] = grad(r, step, i, learner.params());
        s->step(env, step);
      }
      WorkerOut& o = out.ranks[static_cast<size_t>(r)];
      o.x_before_finish.assign(learner.params(), learner.params() + n);
      StateWriter w(o.state);
      s->save(env, w);
      s->finish(env);
      o.x.assign(learner.params(), learner.params() + n);
      o.exchanges = env.exchanges;
    });
  for (auto& t : threads) t.join();
  out.wan = fabric.wan_total();
  return out;
}

SgdConfig sgd(double lr, double momentum) {
  SgdConfig c;
  c.lr = lr;
  c.momentum = momentum;
  return c;
}

// naive_ddp, one step: rank r's gradient g_r; what torch's compress hook sends is
// h_r = 16-bit(float(16-bit(g_r)) / 4) (cast, then divide in 16 bits), the ring sums the h_r hop by
// hop in 16 bits, the sum cast back is the averaged gradient ĝ, and SGD's first step is x0 - lr ĝ.
// Crafted elements: 0: 65520 on rank 0 (binary16 inf before the division: torch casts first; its
// quarter, 16380, would fit); 1: 2^-24 on every rank (binary16's smallest subnormal, divided by 4
// in 16 bits: 0; float32's mean is 2^-24); 2: 1 + 2^-9 (bfloat16 rounds it to 1, binary16 holds it).
// The rest: seeded, of every magnitude from 2^-6 to 2^6.
constexpr size_t kDdpN = 64;
float ddp_grad(int r, size_t i) {
  if (i == 0) return r == 0 ? 65520.0f : 1.0f;
  if (i == 1) return 0x1p-24f;
  if (i == 2) return 1.0f + 0x1p-9f;
  std::mt19937 rng(static_cast<uint32_t>(1000 * r + i));
  std::normal_distribution<float> v(0.0f, 1.0f);
  return std::ldexp(v(rng), static_cast<int>(i % 13) - 6);
}

TEST(NaiveDdp16, TheAveragedGradientIsTorchsCompressHookOverTheRing) {
  const std::vector<float> x0(kDdpN, 0.5f);
  for (const Wire16 w : {Wire16::kBf16, Wire16::kFp16})
    for (const char* collective : {"gloo_ring", "eager_ring"}) {
      SCOPED_TRACE(std::string(name(w)) + " " + collective);
      StrategyConfig c{"naive_ddp"};
      c.wire = name(w);
      c.collective = collective;
      ASSERT_EQ(find_strategy("naive_ddp").validate(c), "");
      const RunOut got = run(c, 1, x0, [](int r, int, size_t i, const float*) { return ddp_grad(r, i); }, sgd(0.5, 0.5));
      Data16 h(4, std::vector<uint16_t>(kDdpN));
      for (int r = 0; r < 4; ++r)
        for (size_t i = 0; i < kDdpN; ++i)
          h[static_cast<size_t>(r)][i] = encode(w, decode(w, encode(w, ddp_grad(r, i))) / 4.0f);
      const std::vector<uint16_t> sum = std::string(collective) == "gloo_ring" ? gloo_reference(w, h) : eager_reference(w, h);
      std::vector<float> want(kDdpN);
      for (size_t i = 0; i < kDdpN; ++i) want[i] = x0[i] - 0.5f * decode(w, sum[i]);
      for (int r = 0; r < 4; ++r) EXPECT_EQ(got.ranks[static_cast<size_t>(r)].x, want) << "rank " << r;
      // The crafted elements.
      if (w == Wire16::kFp16) {
        EXPECT_EQ(want[0], -INFINITY);  // cast before the division, as torch: inf
        EXPECT_EQ(want[1], 0.5f);       // 2^-24 / 4 underflows to 0
        EXPECT_EQ(want[2], 0.5f - 0.5f * (1.0f + 0x1p-9f));
      } else {
        // bfloat16(65520) = 65536, a quarter 16384, to which each hop's 0.25 adds nothing (ulp 128).
        EXPECT_EQ(want[0], 0.5f - 0.5f * 16384.0f);
        EXPECT_EQ(want[1], 0.5f - 0.5f * 0x1p-24f);
        EXPECT_EQ(want[2], 0.0f);  // 1 + 2^-9 rounds to 1 in bfloat16 (8 significant bits)
      }
      // The float32 wire differs (the test sees a wire that is not 16 bits).
      c.wire = "float32";
      const RunOut f32 = run(c, 1, x0, [](int r, int, size_t i, const float*) { return ddp_grad(r, i); }, sgd(0.5, 0.5));
      EXPECT_NE(f32.ranks[0].x, want);
      EXPECT_TRUE(f32.ranks[0].exchanges.empty());  // ring steps are not logged as exchanges
    }
}

TEST(NaiveDdp16, WanBytesOfTheRingHalve) {
  // 64 elements on 4 ranks, Gloo's ring: 8 segments (2P) of 32 bytes in float32, 16 in 16 bits;
  // the ranks whose ring predecessor is across the WAN (0 -> 3 and 2 -> 1) each send S - S/P = 6
  // segments per phase, and get a 48-byte receiver-ready notification for each.
  const std::vector<float> x0(kDdpN, 0.5f);
  auto wan = [&](const char* wire, const char* collective) {
    StrategyConfig c{"naive_ddp"};
    c.wire = wire;
    c.collective = collective;
    return run(c, 1, x0, [](int r, int, size_t i, const float*) { return ddp_grad(r, i); }, sgd(0.5, 0.5)).wan.payload_bytes;
  };
  EXPECT_EQ(wan("float32", "gloo_ring"), 2u * 2u * 6u * (48u + (48u + 32u)));
  EXPECT_EQ(wan("bf16", "gloo_ring"), 2u * 2u * 6u * (48u + (48u + 16u)));
  EXPECT_EQ(wan("fp16", "gloo_ring"), 2u * 2u * 6u * (48u + (48u + 16u)));
  // The eager ring: 6 steps, ranks 1 -> 2 and 3 -> 0 cross the WAN, a chunk of 16 elements each.
  EXPECT_EQ(wan("float32", "eager_ring"), 2u * 6u * 16u * 4u);
  EXPECT_EQ(wan("bf16", "eager_ring"), 2u * 6u * 16u * 2u);
}

// hierarchical: its update rule (docs/guide/strategies.md) restated for a 16-bit wire, on the
// fixture's 2 + 2 workers, SGD lr 0.5 momentum 0.5, K = 2:
//   every step  g_d = (g_a + g_b) / 2, SGD;
//   every round u = x_d - m_d, v = u + e_d, s = 16-bit(v) saturated, e_d = v - s;
//               blocking: x̄ += (s_0 + s_1) / 2, x_d = x̄ + e_d;
//               overlap:  x̄ += (s_0 + s_1) / 2 of the previous round, x_d = x̄ + s + e_d;  m_d = x_d;
//   finish      (overlap: the round in flight into x̄), then float32: w_d = x_d - m_d + e_d,
//               x = x̄ + (w_0 + w_1) / 2 everywhere.
// Elements: 0, 1 carry more significant bits than either format (rounded every round); 2 a tiny
// gradient whose progress binary16 cannot hold (its residual grows until it can be sent); 3 a huge
// one whose progress is beyond 65504 (binary16 saturates, the excess waits in the residual).
constexpr size_t kHierN = 6;
float hier_grad(int r, int step, size_t i) {
  const float k = static_cast<float>(1 + r + 4 * step);
  switch (i) {
    case 0: return k * 0x1.2345p-3f;
    case 1: return -k * 0x1.fedcp-1f + 0x1p-13f;
    case 2: return k * 0x1p-36f;
    case 3: return -k * 0x1.8p15f;
    case 4: return (r % 2 ? -1.0f : 1.0f) * 0x1.0101p+1f;
    default: return 0.0f;
  }
}

struct HierRef {
  std::vector<float> x_before_finish[2], anchor, mark[2], resid[2], x;
};

float sat16(Wire16 w, float v) {
  const float s = decode(w, encode(w, v));
  if (std::isinf(s) && std::isfinite(v)) return v < 0 ? -(w == Wire16::kBf16 ? Bf16::kMax : Fp16::kMax)
                                                      : (w == Wire16::kBf16 ? Bf16::kMax : Fp16::kMax);
  return s;
}

HierRef hier_reference(std::optional<Wire16> w, bool overlap, int steps, const std::vector<float>& x0) {
  const size_t n = x0.size();
  const float lr = 0.5f, mu = 0.5f;
  std::vector<float> x[2] = {x0, x0}, m[2], mark[2] = {x0, x0}, e[2], s[2], s_prev[2], xbar = x0;
  for (int d = 0; d < 2; ++d) m[d] = e[d] = s[d] = s_prev[d] = std::vector<float>(n, 0.0f);
  bool in_flight = false;
  auto add_mean = [&](const std::vector<float>* own) {
    for (size_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int d = 0; d < 2; ++d) sum += 1.0f * own[d][i];
      xbar[i] += sum * 0.5f;
    }
  };
  for (int step = 0; step < steps; ++step) {
    for (int d = 0; d < 2; ++d)
      for (size_t i = 0; i < n; ++i) {
        float sum = 0;
        for (int r = 2 * d; r < 2 * d + 2; ++r) sum += hier_grad(r, step, i);
        const float g = sum / 2.0f;
        m[d][i] = step == 0 ? g + 0.0f * x[d][i] : mu * m[d][i] + (g + 0.0f * x[d][i]);
        x[d][i] -= lr * m[d][i];
      }
    if ((step + 1) % 2 != 0) continue;
    for (int d = 0; d < 2; ++d)
      for (size_t i = 0; i < n; ++i) {
        const float v = (x[d][i] - mark[d][i]) + e[d][i];
        s[d][i] = w ? sat16(*w, v) : v;
        e[d][i] = v - s[d][i];
      }
    if (overlap) {
      if (in_flight) add_mean(s_prev);
      for (int d = 0; d < 2; ++d) {
        for (size_t i = 0; i < n; ++i) x[d][i] = xbar[i] + s[d][i] + e[d][i];
        s_prev[d] = s[d];
      }
      in_flight = true;
    } else {
      add_mean(s);
      for (int d = 0; d < 2; ++d)
        for (size_t i = 0; i < n; ++i) x[d][i] = xbar[i] + e[d][i];
    }
    for (int d = 0; d < 2; ++d) mark[d] = x[d];
  }
  HierRef ref;
  for (int d = 0; d < 2; ++d) ref.x_before_finish[d] = x[d];
  if (in_flight) add_mean(s_prev);
  ref.anchor = xbar;
  for (int d = 0; d < 2; ++d) {
    ref.mark[d] = mark[d];
    ref.resid[d] = e[d];
  }
  std::vector<float> wd[2];
  for (int d = 0; d < 2; ++d) {
    wd[d].resize(n);
    for (size_t i = 0; i < n; ++i) wd[d][i] = (x[d][i] - mark[d][i]) + e[d][i];
  }
  add_mean(wd);
  ref.x = xbar;
  return ref;
}

TEST(Hierarchical16, RoundByRoundTheRuleWithErrorFeedback) {
  const std::vector<float> x0 = {1.0f, -2.0f, 0.0f, 3.0f, 0.0f, 0.5f};
  constexpr int kSteps = 8;  // 4 rounds
  for (const Wire16 w : {Wire16::kBf16, Wire16::kFp16})
    for (const bool overlap : {false, true}) {
      SCOPED_TRACE(std::string(name(w)) + (overlap ? " overlap" : " blocking"));
      StrategyConfig c{"hierarchical"};
      c.K = 2;
      c.overlap = overlap;
      c.wire = name(w);
      ASSERT_EQ(find_strategy("hierarchical").validate(c), "");
      const RunOut got = run(c, kSteps, x0, [](int r, int step, size_t i, const float*) { return hier_grad(r, step, i); },
                             sgd(0.5, 0.5));
      const HierRef ref = hier_reference(w, overlap, kSteps, x0);
      for (int r = 0; r < 4; ++r) {
        const WorkerOut& o = got.ranks[static_cast<size_t>(r)];
        const int d = r / 2;
        EXPECT_EQ(o.x_before_finish, ref.x_before_finish[d]) << "rank " << r;
        EXPECT_EQ(o.floats("anchor"), ref.anchor) << "rank " << r;
        EXPECT_EQ(o.floats("mark"), ref.mark[d]) << "rank " << r;
        EXPECT_EQ(o.floats("residual"), ref.resid[d]) << "rank " << r;
        EXPECT_EQ(o.x, ref.x) << "rank " << r;  // the final exchange is float32: every replica the same
      }
      // Each leader logs its 4 rounds (8 + 2 bytes per element) and the final float32 exchange.
      for (int r : {0, 2}) {
        const auto& ex = got.ranks[static_cast<size_t>(r)].exchanges;
        ASSERT_EQ(ex.size(), 5u) << "rank " << r;
        for (size_t k = 0; k < 4; ++k) EXPECT_EQ(ex[k].bytes_sent, 8u + 2 * kHierN) << "round " << k;
        EXPECT_EQ(ex[4].step, -1);
        EXPECT_GE(ex[4].bytes_sent, 8u + 40u + 4 * kHierN);
      }
      // Teeth: the wire rounded (residuals non-zero) and the anchor and the models are not
      // float32's. (These gradients do not depend on the model, so the final exchange, which
      // delivers the residuals, ends at float32's model up to the rounding of the sums.)
      const HierRef f32 = hier_reference(std::nullopt, overlap, kSteps, x0);
      EXPECT_EQ(f32.resid[0], std::vector<float>(kHierN, 0.0f));
      EXPECT_NE(ref.resid[0], f32.resid[0]);
      EXPECT_NE(ref.anchor, f32.anchor);
      EXPECT_NE(ref.x_before_finish[0], f32.x_before_finish[0]);
      c.wire = "float32";
      const RunOut g32 = run(c, kSteps, x0, [](int r, int step, size_t i, const float*) { return hier_grad(r, step, i); },
                             sgd(0.5, 0.5));
      EXPECT_EQ(g32.ranks[0].x, f32.x);
      EXPECT_EQ(g32.ranks[0].floats("residual"), f32.resid[0]);
    }
}

TEST(Hierarchical16, BinaryHalfUnderflowAndOverflowWaitInTheResidual) {
  // Element 2's progress per round is below 2^-25 (binary16 sends 0), element 3's beyond 65504
  // (binary16 sends 65504): without error feedback both would be lost for good. With it, the
  // residual holds them: sent + residual is the progress, every round (the reference above), and
  // the final float32 exchange delivers what is left: the same model as a float32 wire's within
  // float rounding of the sums.
  const std::vector<float> x0 = {1.0f, -2.0f, 0.0f, 3.0f, 0.0f, 0.5f};
  const HierRef ref = hier_reference(Wire16::kFp16, false, 8, x0);
  const HierRef f32 = hier_reference(std::nullopt, false, 8, x0);
  EXPECT_NE(ref.resid[0][2], 0.0f);
  EXPECT_EQ(ref.anchor[2], x0[2]) << "binary16 sent element 2 after all: the test would not see the underflow";
  EXPECT_GT(std::abs(ref.resid[0][3]), 1000.0f) << "no saturation";
  for (size_t i = 0; i < kHierN; ++i) EXPECT_NEAR(ref.x[i], f32.x[i], 1e-6 * (1 + std::abs(f32.x[i]))) << i;
}

// A noisy quadratic: DC d pulls towards c_d (worker r's gradient x - c_d plus seeded Gaussian noise
// of sigma 1), 256 elements, 160 steps, K = 4, SGD lr 0.05 momentum 0.5. The 16-bit wires' rounding
// (relative 2^-9 for bfloat16, 2^-12 for binary16, of each round's progress) is carried by the
// residual, so the model follows float32's: each 16-bit run's mean squared distance to the optimum
// mean(c_d) is within 10 % of float32's (which is the noise's: ~1e-2, against 1e2 at the start), and
// the runs differ by far less than the noise.
TEST(Hierarchical16, ANoisyRunConvergesAsFloat32s) {
  constexpr size_t n = 256;
  std::vector<float> c[2] = {std::vector<float>(n), std::vector<float>(n)}, opt(n);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 10.0f);
  for (size_t i = 0; i < n; ++i) {
    c[0][i] = nd(rng);
    c[1][i] = nd(rng);
    opt[i] = (c[0][i] + c[1][i]) / 2;
  }
  const std::vector<float> x0(n, 0.0f);
  const GradFn grad = [&](int r, int step, size_t i, const float* x) {
    std::mt19937 g(static_cast<uint32_t>(((step * 4 + r) << 10) + static_cast<int>(i)));
    std::normal_distribution<float> noise(0.0f, 1.0f);
    return x[i] - c[r / 2][i] + noise(g);
  };
  auto msd = [&](const std::vector<float>& x) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += (x[i] - opt[i]) * (x[i] - opt[i]);
    return s / n;
  };
  StrategyConfig cfg{"hierarchical"};
  cfg.K = 4;
  const RunOut f32 = run(cfg, 160, x0, grad, sgd(0.05, 0.5));
  const double e32 = msd(f32.ranks[0].x), e0 = msd(x0);
  EXPECT_LT(e32, 1e-3 * e0) << "float32 did not converge";
  for (const char* wire : {"bf16", "fp16"}) {
    SCOPED_TRACE(wire);
    cfg.wire = wire;
    const RunOut r16 = run(cfg, 160, x0, grad, sgd(0.05, 0.5));
    for (int r = 1; r < 4; ++r) EXPECT_EQ(r16.ranks[static_cast<size_t>(r)].x, r16.ranks[0].x) << "rank " << r;
    const double e16 = msd(r16.ranks[0].x);
    EXPECT_LT(e16, 1.1 * e32) << "float32 " << e32;
    EXPECT_GT(e16, 0.9 * e32) << "float32 " << e32;
    double diff = 0;
    for (size_t i = 0; i < n; ++i) diff += std::pow(r16.ranks[0].x[i] - f32.ranks[0].x[i], 2);
    EXPECT_GT(diff, 0.0) << "the 16-bit wire changed nothing";
    EXPECT_LT(diff / n, 0.01 * e32);
    // The WAN bytes: every round 8 + 2 n instead of float32's 8 + 40 + index + 4 n.
    const auto& ex = r16.ranks[0].exchanges;
    ASSERT_EQ(ex.size(), 41u);
    EXPECT_EQ(ex[0].bytes_sent, 8u + 2 * n);
    EXPECT_EQ(f32.ranks[0].exchanges[0].bytes_sent, 8u + 40 + n / 8 + 4 * n)
        << "float32's round: the clock, the wire header, a bitmap of n bits, n floats";
    EXPECT_EQ(ex[40].bytes_sent, f32.ranks[0].exchanges[40].bytes_sent);  // the final exchange: float32
  }
}

}  // namespace
