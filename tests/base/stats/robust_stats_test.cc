#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

TEST(RobustStatsTest, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(*Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(*Median({4, 1, 3, 2}), 2.5);
  EXPECT_FALSE(Median({}));
}

TEST(RobustStatsTest, QuantileInterpolatesLikeNumpy) {
  // numpy.quantile([1,2,3,4], 0.9) == 3.7
  EXPECT_NEAR(*Quantile({4, 3, 2, 1}, 0.9), 3.7, 1e-12);
  EXPECT_DOUBLE_EQ(*Quantile({5}, 0.25), 5);
}

TEST(RobustStatsTest, MadIgnoresOneOutlier) {
  // Median 3, deviations {2,1,0,1,97} -> MAD 1.
  EXPECT_DOUBLE_EQ(*Mad({1, 2, 3, 4, 100}), 1);
}

TEST(RobustStatsTest, SummarizeAgreesWithTheSingleFunctions) {
  std::vector<double> v = {0.81, 0.80, 0.82, 0.79, 0.98, 0.80};
  auto s = Summarize(v);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->n, 6u);
  EXPECT_DOUBLE_EQ(s->median, *Median(v));
  EXPECT_DOUBLE_EQ(s->mad, *Mad(v));
  EXPECT_DOUBLE_EQ(s->p90, *Quantile(v, 0.9));
  EXPECT_DOUBLE_EQ(s->max, 0.98);
  EXPECT_NEAR(s->mean, 0.8333333, 1e-6);
}

TEST(RobustStatsTest, QuantilesInPlaceMatchTheSortedDefinitionExactly) {
  std::mt19937_64 rng(7);
  const double qs[] = {0.0, 0.1, 0.1, 0.25, 0.5, 0.9, 0.99, 1.0};
  for (size_t n : {1u, 2u, 3u, 8u, 16u, 101u, 4096u}) {
    std::vector<double> v(n);
    // Few distinct values, so ties are common.
    for (double& x : v) x = static_cast<double>(rng() % 17) / 8.0;
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    double got[std::size(qs)];
    QuantilesInPlace(v, qs, got);
    for (size_t i = 0; i < std::size(qs); ++i) {
      double pos = qs[i] * static_cast<double>(n - 1);
      size_t lo = static_cast<size_t>(std::floor(pos));
      size_t hi = std::min(lo + 1, n - 1);
      double want = sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
      EXPECT_DOUBLE_EQ(got[i], want) << "n " << n << " q " << qs[i];
    }
  }
}

}  // namespace
}  // namespace laggard
