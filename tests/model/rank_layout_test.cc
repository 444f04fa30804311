// model::RankLayout: ranks numbered DC by DC, data centers of different sizes.
#include "model/rank_layout.h"

#include <gtest/gtest.h>

using geotb::model::RankLayout;

TEST(RankLayout, NumbersRanksDataCenterByDataCenter) {
  const RankLayout l({4, 8, 1});
  EXPECT_EQ(l.dcs(), 3);
  EXPECT_EQ(l.world(), 13);
  EXPECT_EQ(l.leaders(), (std::vector<int>{0, 4, 12}));
  EXPECT_EQ(l.dc_of(0), 0);
  EXPECT_EQ(l.dc_of(3), 0);
  EXPECT_EQ(l.dc_of(4), 1);
  EXPECT_EQ(l.dc_of(11), 1);
  EXPECT_EQ(l.dc_of(12), 2);
  EXPECT_EQ(l.local_of(11), 7);
  EXPECT_EQ(l.rank_of(1, 7), 11);
  EXPECT_EQ(l.workers(1), 8);
  EXPECT_EQ(l.max_workers(), 8);
  EXPECT_FALSE(l.uniform());
  EXPECT_EQ(l.describe(), "4 + 8 + 1");
  EXPECT_THROW(l.dc_of(13), std::out_of_range);
  EXPECT_THROW(l.dc_of(-1), std::out_of_range);
}

TEST(RankLayout, UniformIsTheOldArithmetic) {
  const RankLayout l = RankLayout::uniform(3, 4);
  EXPECT_TRUE(l.uniform());
  EXPECT_EQ(l.describe(), "3 x 4");
  for (int r = 0; r < 12; ++r) {
    EXPECT_EQ(l.dc_of(r), r / 4);
    EXPECT_EQ(l.local_of(r), r % 4);
  }
  EXPECT_EQ(RankLayout().world(), 1);
}

TEST(RankLayout, RefusesNoDataCenterAndEmptyOnes) {
  EXPECT_THROW(RankLayout(std::vector<int>{}), std::invalid_argument);
  try {
    RankLayout({2, 0});
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "rank layout: data center 1 has 0 workers (need at least 1)");
  }
}
