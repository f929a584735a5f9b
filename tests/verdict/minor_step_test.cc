// MinorStepCost (verdict_internal.h): which step-time stragglers are too
// small to name from step times alone, at the edges of each bound.

#include <gtest/gtest.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// Rank 1 of 2, `used` analysed steps, its median `excess` over its peer's.
StepAnalysis Steps(size_t used, double excess) {
  StepAnalysis s;
  for (int32_t r = 0; r < 2; ++r) {
    RankStepStats st;
    st.info.rank = r;
    st.steps_used = used;
    st.excess = r == 1 ? excess : 0.0;
    s.ranks.push_back(st);
  }
  return s;
}

// Rank 1 slow `spike` on `hits` of `used` steps, periodically.
Finding Periodic(double spike, double hits, double used) {
  Finding f;
  f.code = FindingCode::kStepStraggler;
  f.entity.rank = 1;
  f.pattern = Pattern::kPeriodic;
  f.spike = spike;
  f.slowdown = spike * hits / used;
  return f;
}

// Rank 1 `slowdown` over steps first..last, then recovered.
Finding Episode(double slowdown, int64_t first, int64_t last) {
  Finding f;
  f.code = FindingCode::kStepStraggler;
  f.entity.rank = 1;
  f.pattern = Pattern::kPersistent;
  f.slowdown = slowdown;
  f.onset_step = first;
  f.end_step = last;
  return f;
}

TEST(MinorStepTest, AFewWeakBurstsCostingLittleAreMinor) {
  // The real healthy run's shape: +12% on 4 of 35 steps, 1.4%.
  std::optional<double> cost = MinorStepCost(Periodic(0.12, 4, 35), Steps(35, 0.01));
  ASSERT_TRUE(cost.has_value());
  EXPECT_NEAR(*cost, 0.12 * 4 / 35, 1e-9);
}

TEST(MinorStepTest, EachBoundNamesTheRankAgain) {
  // 2% over the run: +14% on 6 of 35 steps is 2.4%.
  EXPECT_FALSE(MinorStepCost(Periodic(0.14, 6, 35), Steps(35, 0.01)));
  EXPECT_TRUE(MinorStepCost(Periodic(0.14, 4, 35), Steps(35, 0.01)));
  // 15% a hit, however cheap over the run (+60% for 2 of 100 steps).
  EXPECT_FALSE(MinorStepCost(Periodic(0.60, 2, 100), Steps(100, 0.0)));
  EXPECT_TRUE(MinorStepCost(Periodic(0.149, 2, 100), Steps(100, 0.0)));
  // More than 10 hits: a long run's repeatable pattern (+12% on 11 of 1000).
  EXPECT_FALSE(MinorStepCost(Periodic(0.12, 11, 1000), Steps(1000, 0.0)));
  EXPECT_TRUE(MinorStepCost(Periodic(0.12, 9, 1000), Steps(1000, 0.0)));
  // A rank slow over the whole run (its median +5%) whose worst part is
  // short: all of it counts.
  EXPECT_FALSE(MinorStepCost(Periodic(0.12, 4, 35), Steps(35, 0.05)));
  EXPECT_FALSE(MinorStepCost(Episode(0.13, 31, 35), Steps(40, 0.07)));
}

TEST(MinorStepTest, AnEpisodeCountsItsOwnSteps) {
  // +11% over steps 5-9 of 35: 1.6%.
  std::optional<double> cost = MinorStepCost(Episode(0.11, 5, 9), Steps(35, 0.0));
  ASSERT_TRUE(cost.has_value());
  EXPECT_NEAR(*cost, 0.11 * 5 / 35, 1e-9);
  // Over 11 steps: more than 10 hits.
  EXPECT_FALSE(MinorStepCost(Episode(0.05, 5, 15), Steps(35, 0.0)));
  // Not recovered: persistent to the end is never minor.
  Finding to_end = Episode(0.11, 30, 34);
  to_end.end_step.reset();
  EXPECT_FALSE(MinorStepCost(to_end, Steps(35, 0.0)));
}

// A stretch from step 35 to the run's last (39), +12%, against a per-step
// noise of 8%: three standard errors over its 5 steps are 13.5%.
TEST(MinorStepTest, AStretchToTheEndIsMeasuredOverItsOwnSteps) {
  StepAnalysis steps = Steps(35, 0.02);
  steps.job.noise_sigma = 0.08;
  steps.job.first_step = 5;
  steps.job.last_step = 39;
  steps.job.steps = 35;
  Finding late = Episode(0.12, 35, 39);
  late.end_step.reset();
  EXPECT_TRUE(WithinStepNoise(late, steps));
  // A stronger one stands out of its 5 steps' noise.
  late.slowdown = 0.20;
  EXPECT_FALSE(WithinStepNoise(late, steps));
  // A rank slow over the whole run (+6% at z 4) is not judged by its worst
  // stretch alone.
  late.slowdown = 0.12;
  steps.ranks[1].excess = 0.06;
  steps.ranks[1].z = 4.0;
  EXPECT_FALSE(WithinStepNoise(late, steps));
  // From the run's first analysed step: the whole run, as before.
  steps.ranks[1].excess = 0.0;
  steps.ranks[1].z = 0.0;
  late.onset_step = 5;
  EXPECT_FALSE(WithinStepNoise(late, steps));
}

TEST(MinorStepTest, OnlyStepStragglersOfAKnownRank) {
  Finding f = Periodic(0.12, 4, 35);
  f.code = FindingCode::kTraceLateArrival;
  EXPECT_FALSE(MinorStepCost(f, Steps(35, 0.0)));
  f = Periodic(0.12, 4, 35);
  f.entity.rank = 7;  // no such rank analysed
  EXPECT_FALSE(MinorStepCost(f, Steps(35, 0.0)));
}

}  // namespace
}  // namespace laggard::verdict_internal
