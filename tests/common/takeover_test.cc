// The takeover protocol's one rank's part (common/takeover.h), which the in-process fabric and the
// socket transport both apply: the notice's bytes, where messages go after a takeover (chains
// too), what is sent again and how many are kept. End to end: the fabric's TakeOver tests
// (virtual_time_tests: VirtualTimeFabric.TakeOver...), the socket transport's SocketTakeOver
// (transport_unit_tests), process_agent_tests' dead DC leader, kill_process and kill_dpdk's leader
// scenarios.
#include "common/takeover.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace geotb {
namespace {

std::vector<std::string> as_vector(const std::deque<std::string>& d) { return {d.begin(), d.end()}; }

TEST(TakeoverNotice, NamesTheDeadRankInEightBytesAndRefusesAnotherLength) {
  const std::vector<uint8_t> n = encode_takeover_notice(5);
  ASSERT_EQ(n.size(), 8u);
  EXPECT_EQ(decode_takeover_notice(n), std::optional<int>(5));
  EXPECT_EQ(decode_takeover_notice(encode_takeover_notice(0)), std::optional<int>(0));
  EXPECT_EQ(decode_takeover_notice({1, 2, 3}), std::nullopt);
  EXPECT_EQ(decode_takeover_notice({}), std::nullopt);
}

TEST(TakeoverTable, KeepsTheLastMessagesAndHandsThemToTheSuccessorOnce) {
  TakeoverTable<std::string> t;
  for (const char* m : {"a", "b", "c", "d"}) t.sent(4, m, 3);  // rank 4 of another site: 3 kept
  t.sent(7, "x", 0);                                         // rank 7: nothing kept
  EXPECT_EQ(t.address_of(4), 4);
  EXPECT_EQ(t.successor_of(4), std::nullopt);
  EXPECT_EQ(as_vector(t.taken_over(4, 5)), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(t.address_of(4), 5);
  EXPECT_EQ(t.successor_of(4), std::optional<int>(5));
  EXPECT_EQ(t.address_of(7), 7);
  EXPECT_TRUE(t.taken_over(4, 5).empty());  // a second notice: nothing kept for 4 any more
  EXPECT_TRUE(t.taken_over(7, 8).empty());
}

TEST(TakeoverTable, AChainSendsWhatTheFirstDeadAnsweredForToTheLastSuccessor) {
  TakeoverTable<std::string> t;
  EXPECT_TRUE(t.taken_over(4, 5).empty());
  t.sent(5, "for 5", 2);  // sent to 4's address, which was 5's
  EXPECT_EQ(as_vector(t.taken_over(5, 6)), (std::vector<std::string>{"for 5"}));
  EXPECT_EQ(t.address_of(4), 6);  // 5 answered for 4: 6 does now
  EXPECT_EQ(t.address_of(5), 6);
  EXPECT_EQ(t.successor_of(4), std::optional<int>(6));
  // A notice naming its sender changes nothing.
  EXPECT_TRUE(t.taken_over(6, 6).empty());
  EXPECT_EQ(t.address_of(6), 6);
}

TEST(TakeoverTable, ForgetsWhatWasKeptForARevivedRank) {
  TakeoverTable<std::string> t;
  t.sent(3, "old", 4);
  t.forget(3);
  t.sent(3, "new", 4);
  EXPECT_EQ(as_vector(t.taken_over(3, 2)), (std::vector<std::string>{"new"}));
}

}  // namespace
}  // namespace geotb
