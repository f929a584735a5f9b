#include <gtest/gtest.h>

#include "base/stats/change_point.h"

namespace laggard {
namespace {

TEST(ChangePointTest, FindsTheDocumentedExample) {
  std::vector<double> x = {0, 0, 0, 0, 0.2, 0.2, 0.2, 0.2};
  auto segs = Segmentize(x, {2, 0.05, 4});
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].end, 4u);
  EXPECT_DOUBLE_EQ(segs[1].median, 0.2);
}

TEST(ChangePointTest, NoiseBelowMinShiftIsOneSegment) {
  std::vector<double> x;
  for (int i = 0; i < 200; ++i) x.push_back((i % 7) * 0.004 - 0.012);
  EXPECT_EQ(Segmentize(x, {5, 0.05, 4}).size(), 1u);
}

TEST(ChangePointTest, FindsOnsetAndRecovery) {
  std::vector<double> x(300, 0.0);
  for (int i = 100; i < 200; ++i) x[static_cast<size_t>(i)] = 0.25;
  auto segs = Segmentize(x, {5, 0.05, 4});
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[1].begin, 100u);
  EXPECT_EQ(segs[1].end, 200u);
  EXPECT_DOUBLE_EQ(segs[1].median, 0.25);
}

TEST(ChangePointTest, SingleSpikeCreatesNoSegment) {
  std::vector<double> x(100, 0.0);
  x[50] = 5.0;
  EXPECT_EQ(Segmentize(x, {5, 0.05, 4}).size(), 1u);
}

}  // namespace
}  // namespace laggard
