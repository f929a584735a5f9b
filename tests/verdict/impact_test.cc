// What a verdict says a culprit costs: an upper bound at most 1 - 1/(1 +
// slowdown) of the culprit's own slowdown, or the what-if replay's figure,
// and the words that say which (verdict/verdict_helpers.h).

#include <gtest/gtest.h>

#include "verdict/verdict.h"
#include "verdict/verdict_helpers.h"

namespace laggard::verdict_internal {
namespace {

Verdict RankCulprit(double slowdown, double lost) {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity.rank = 5;
  c.slowdown = slowdown;
  v.culprits.push_back(c);
  v.throughput_lost = lost;
  return v;
}

// Eight ranks' traces where the others did not visibly wait: the delay
// share read ~100%, but a rank 1.24x as slow costs at most 19%.
TEST(ImpactTest, UpperBoundIsCappedByTheCulpritsOwnSlowdown) {
  Verdict v = RankCulprit(0.24, 1.0);
  BoundByCulprit(v, 8);
  ASSERT_TRUE(v.throughput_lost.has_value());
  EXPECT_NEAR(*v.throughput_lost, 0.24 / 1.24, 1e-9);
  EXPECT_NEAR(*v.gpu_hours_per_day, 0.24 / 1.24 * 8 * 24, 1e-6);
  EXPECT_EQ(CostPhrase(v), ", costs up to ~19% of job throughput");
}

TEST(ImpactTest, AFigureBelowTheBoundIsKept) {
  Verdict v = RankCulprit(0.5, 0.1);
  BoundByCulprit(v, 4);
  EXPECT_DOUBLE_EQ(*v.throughput_lost, 0.1);
}

TEST(ImpactTest, NoSlowdownOrAJobCulpritLeavesTheFigure) {
  Verdict stall = RankCulprit(0, 0.4);
  stall.culprits[0].slowdown.reset();
  BoundByCulprit(stall, 4);
  EXPECT_DOUBLE_EQ(*stall.throughput_lost, 0.4);
  Verdict job = RankCulprit(0.1, 0.4);
  job.culprits[0].entity = Entity{};
  job.culprits[0].entity.job = true;
  BoundByCulprit(job, 4);
  EXPECT_DOUBLE_EQ(*job.throughput_lost, 0.4);
}

TEST(ImpactTest, AReplayFigureIsNotBoundAndSaysSo) {
  Verdict v = RankCulprit(0.1, 0.3);
  v.impact_method = ImpactMethod::kReplay;
  BoundByCulprit(v, 4);
  EXPECT_DOUBLE_EQ(*v.throughput_lost, 0.3);
  EXPECT_EQ(CostPhrase(v), ", costs ~30% of job throughput (what-if replay)");
  EXPECT_EQ(ImpactMethodName(v.impact_method), "replay");
  v.throughput_lost.reset();
  EXPECT_EQ(CostPhrase(v), "");
}

}  // namespace
}  // namespace laggard::verdict_internal
