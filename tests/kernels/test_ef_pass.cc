// The streaming pass: the AVX2 and portable versions against each other and against a loop.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "kernels/cpu/ef_pass.h"
#include "kernels/topk.h"
#include "test_util.h"

namespace geotb::kernels {
namespace {

struct Out {
  std::vector<float> res;
  std::vector<uint32_t> idx;
  std::vector<float> val;
  cpu::PassResult pr;
};

template <class F>
Out run(F pass, const std::vector<float>& acc, const std::vector<float>& res_in, uint32_t t, size_t cap) {
  Out o;
  o.res = res_in;
  o.idx.assign(cap + 1, 0xDEADBEEFu);  // one guard slot past cap
  o.val.assign(cap + 1, -1.0f);
  o.pr = pass(acc.data(), o.res.data(), acc.size(), t, o.idx.data(), o.val.data(), cap);
  EXPECT_EQ(o.idx[cap], 0xDEADBEEFu) << "wrote past cap";
  o.idx.resize(std::min(cap, o.pr.candidates));
  o.val.resize(o.idx.size());
  return o;
}

Out reference(const std::vector<float>& acc, const std::vector<float>& res_in, uint32_t t, size_t cap) {
  Out o;
  o.res = res_in;
  o.pr = {0, 0};
  for (size_t i = 0; i < acc.size(); ++i) {
    o.res[i] = acc[i] + res_in[i];
    const uint32_t key = magnitude_key(o.res[i]);
    o.pr.non_finite += key >= kNonFiniteKey;
    if (key >= t) {
      if (o.pr.candidates < cap) {
        o.idx.push_back(static_cast<uint32_t>(i));
        o.val.push_back(o.res[i]);
      }
      ++o.pr.candidates;
    }
  }
  return o;
}

void expect_same(const Out& a, const Out& b) {
  EXPECT_EQ(a.pr.candidates, b.pr.candidates);
  EXPECT_EQ(a.pr.non_finite, b.pr.non_finite);
  ASSERT_EQ(a.idx, b.idx);
  for (size_t j = 0; j < a.val.size(); ++j) ASSERT_EQ(std::bit_cast<uint32_t>(a.val[j]), std::bit_cast<uint32_t>(b.val[j]));
  for (size_t i = 0; i < a.res.size(); ++i) ASSERT_EQ(std::bit_cast<uint32_t>(a.res[i]), std::bit_cast<uint32_t>(b.res[i]));
}

TEST(EfPass, PortableAndAvx2MatchTheReference) {
  for (size_t n : {0ul, 1ul, 15ul, 16ul, 17ul, 33ul, 1000ul, 100003ul}) {
    auto acc = testing::random_normal(n, n + 1), res = testing::random_normal(n, n + 2, 0.5f);
    if (n > 20) {
      acc[3] = INFINITY;  // non-finite in the vector body and in the tail
      acc[n - 1] = NAN;
    }
    for (float thr : {0.0f, 0.5f, 2.5f, 100.0f}) {
      const uint32_t t = magnitude_key(thr);
      for (size_t cap : {n, n / 3, size_t{0}}) {
        const Out want = reference(acc, res, t, cap);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " t=" << thr << " cap=" << cap);
        expect_same(run(cpu::ef_pass_portable, acc, res, t, cap), want);
        if (cpu::has_avx2()) expect_same(run(cpu::ef_pass_avx2, acc, res, t, cap), want);
      }
    }
  }
  if (!cpu::has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: only the portable pass was checked";
}

}  // namespace
}  // namespace geotb::kernels
