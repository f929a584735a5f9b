// The step-time detector against the run's own noise, on Runs made by hand:
// a short stretch of one rank inside the per-step noise is no straggler and
// one far above it is (RankOnsets::segment_z); ranks in lockstep, whose
// totals agree, are not stragglers by their medians (total_excess).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "analysis/steps/step_time_detector.h"

namespace laggard {
namespace {

constexpr int64_t kSteps = 44;  // 39 analysed after the 5 of warm-up

// Ranks x kSteps steps of `seconds(rank, step)`.
laggard::Run MakeRun(int32_t ranks, const std::function<double(int32_t, int64_t)>& seconds) {
  laggard::Run run;
  run.files.push_back(InputFileInfo{"steps.log", "article", 0, 0, true});
  RunBuilder b;
  for (int32_t r = 0; r < ranks; ++r) {
    for (int64_t s = 0; s < kSteps; ++s) {
      b.AddStep(r, s, static_cast<DurationNs>(std::llround(seconds(r, s) * 1e9)),
                1'700'000'000'000'000'000 + s * 1'000'000'000,
                SourceRef{0, static_cast<uint32_t>(s + 1)});
    }
  }
  b.Finalize(run);
  return run;
}

// Deterministic noise in [-1, 1): a hash of (rank, step).
double Noise(int32_t r, int64_t s) {
  uint64_t h =
      (static_cast<uint64_t>(r) * 1'000'003u + static_cast<uint64_t>(s)) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return static_cast<double>(h % 2001) / 1000.0 - 1.0;
}

std::vector<const Finding*> StragglersOf(const StepAnalysis& a, int32_t rank) {
  std::vector<const Finding*> out;
  for (const Finding& f : a.findings) {
    if (f.code == FindingCode::kStepStraggler && f.entity.rank == rank) out.push_back(&f);
  }
  return out;
}

// 4 ranks at 1 s with +-15% uniform noise per step (sigma ~8.7%, as on the
// real DDP runs of bench/realjobs; MAD-based ~11%); rank 1 at 1 + `bump`
// in steps 25-29.
laggard::Run NoisyRun(double bump) {
  return MakeRun(4, [bump](int32_t r, int64_t s) {
    double v = 1.0 + 0.15 * Noise(r, s);
    if (r == 1 && s >= 25 && s <= 29) v += bump;
    return v;
  });
}

// The segment of rank 1's onsets that holds step 27.
size_t SegmentAtStep27(const RankOnsets& o) {
  for (size_t i = 0; i < o.segments.size(); ++i) {
    if (o.segment_first_step[i] <= 27 && o.segment_last_step[i] >= 27) return i;
  }
  return o.segments.size();
}

TEST(StepNoiseTest, FiveStepsFifteenPercentSlowerInsideTheNoiseAreNoStraggler) {
  StepDetectorOptions opt;
  laggard::Run run = NoisyRun(0.15);  // MeasureSteps keeps pointers into it
  StepMetrics m = MeasureSteps(run, opt);
  MeasureOnsets(m, opt);
  ASSERT_TRUE(m.job.noise_sigma);
  EXPECT_GT(*m.job.noise_sigma, 0.06);
  const RankOnsets& o = m.onsets[1];
  ASSERT_EQ(o.segment_z.size(), o.segments.size());
  size_t i = SegmentAtStep27(o);
  ASSERT_LT(i, o.segments.size());
  // The change points find the stretch, and it is above the 5% band...
  ASSERT_GT(o.segments.size(), 1u);
  EXPECT_GE(o.segments[i].median, opt.flag_threshold);
  // ...but 5 steps of it stand out of the noise by less than segment_min_z.
  EXPECT_LT(o.segment_z[i], opt.segment_min_z);
  StepAnalysis a = DecideSteps(m, opt);
  EXPECT_TRUE(StragglersOf(a, 1).empty()) << StragglersOf(a, 1).front()->message;
  // Without the noise test the stretch would be named.
  StepDetectorOptions no_test = opt;
  no_test.segment_min_z = 0;
  EXPECT_EQ(StragglersOf(DecideSteps(m, no_test), 1).size(), 1u);
}

TEST(StepNoiseTest, FiveStepsFarAboveTheNoiseAreADatedStraggler) {
  StepDetectorOptions opt;
  laggard::Run run = NoisyRun(0.80);
  StepMetrics m = MeasureSteps(run, opt);
  MeasureOnsets(m, opt);
  const RankOnsets& o = m.onsets[1];
  size_t i = SegmentAtStep27(o);
  ASSERT_LT(i, o.segments.size());
  EXPECT_GE(o.segment_z[i], opt.segment_min_z);
  StepAnalysis a = DecideSteps(m, opt);
  std::vector<const Finding*> s = StragglersOf(a, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->onset_step, 25);
  EXPECT_EQ(s[0]->end_step, 29);
}

// Rank 0's steps run 1.08, 1.08, 0.84 s over and over, its peers' 1 s: its
// median is +8% but it takes its peers' total time, as ranks in lockstep
// do.
laggard::Run LockstepRun(double low) {
  return MakeRun(4, [low](int32_t r, int64_t s) {
    if (r != 0) return 1.0;
    return (s - 5) % 3 == 2 ? low : 1.08;
  });
}

TEST(StepNoiseTest, ARankInLockstepWithAHigherMedianIsNoStraggler) {
  StepDetectorOptions opt;
  laggard::Run run = LockstepRun(0.84);
  StepMetrics m = MeasureSteps(run, opt);
  MeasureOnsets(m, opt);
  ASSERT_TRUE(m.ranks[0].excess && m.ranks[0].total_excess);
  EXPECT_NEAR(*m.ranks[0].excess, 0.08, 1e-6);
  EXPECT_GE(*m.ranks[0].z, opt.min_z);
  EXPECT_NEAR(*m.ranks[0].total_excess, 0.0, 0.002);
  EXPECT_FALSE(SlowOverTheRun(m.ranks[0], opt));
  StepAnalysis a = DecideSteps(m, opt);
  EXPECT_TRUE(StragglersOf(a, 0).empty()) << StragglersOf(a, 0).front()->message;
  // Without the test of its total it would be named.
  StepDetectorOptions no_test = opt;
  no_test.min_total_excess = -1;
  EXPECT_EQ(StragglersOf(DecideSteps(m, no_test), 0).size(), 1u);
}

TEST(StepNoiseTest, ARanksOwnShortStepsAreNotRaisedInItsTotal) {
  StepDetectorOptions opt;
  // 1.15, 1.15, 0.70 s: median +15%, total its peers'. The 0.70 s step is
  // 30% under its step's median, past the cap's 20% band: counted as is.
  laggard::Run run = MakeRun(4, [](int32_t r, int64_t s) {
    if (r != 0) return 1.0;
    return (s - 5) % 3 == 2 ? 0.70 : 1.15;
  });
  StepMetrics m = MeasureSteps(run, opt);
  ASSERT_TRUE(m.ranks[0].total_excess);
  EXPECT_NEAR(*m.ranks[0].total_excess, 0.0, 1e-6);
  EXPECT_FALSE(SlowOverTheRun(m.ranks[0], opt));
}

TEST(StepNoiseTest, ARankWhoseTotalIsAlsoHigherIsAStraggler) {
  StepDetectorOptions opt;
  // 1.08, 1.08, 1.0: median +8%, total +5.3%.
  laggard::Run run = LockstepRun(1.0);
  StepMetrics m = MeasureSteps(run, opt);
  MeasureOnsets(m, opt);
  ASSERT_TRUE(m.ranks[0].total_excess);
  EXPECT_NEAR(*m.ranks[0].total_excess, 0.16 / 3, 0.002);
  EXPECT_NEAR(*m.ranks[1].total_excess, -0.16 / 3 / 3 / (1 + 0.16 / 3 / 3), 0.002);
  EXPECT_TRUE(SlowOverTheRun(m.ranks[0], opt));
  StepAnalysis a = DecideSteps(m, opt);
  std::vector<const Finding*> s = StragglersOf(a, 0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->pattern, Pattern::kPersistent);
}

TEST(StepNoiseTest, OnePeersLongPauseDoesNotHideAStraggler) {
  StepDetectorOptions opt;
  // Rank 0 at 1.10 s throughout; rank 2 pauses 10 s of its own in step 20
  // (its peers do not wait: the times are not in lockstep).
  laggard::Run run = MakeRun(4, [](int32_t r, int64_t s) {
    if (r == 0) return 1.10;
    return r == 2 && s == 20 ? 11.0 : 1.0;
  });
  StepMetrics m = MeasureSteps(run, opt);
  ASSERT_TRUE(m.ranks[0].total_excess);
  // Rank 2's pause counts as its step's median (1.05 s) +20%, the clamp
  // (the run's noise is 0), not 11 s: +9.8%, against +1.3% unclamped.
  EXPECT_NEAR(*m.ranks[0].total_excess, 39 * 1.1 / (38 + (2 + 1.05 * 1.2) / 3) - 1, 1e-6);
  EXPECT_TRUE(SlowOverTheRun(m.ranks[0], opt));
}

TEST(StepNoiseTest, TotalsCompareARankWithItsOwnStageOnly) {
  StepDetectorOptions opt;
  // Stage 0 (ranks 0-2) at 1 s, stage 1 (ranks 3-5) at 2 s; rank 4 at
  // 2.2 s and without step 20.
  laggard::Run run = MakeRun(6, [](int32_t r, int64_t) {
    if (r == 4) return 2.2;
    return r < 3 ? 1.0 : 2.0;
  });
  for (StepSeries& s : run.ranks) {
    s.info.pipeline_stage = s.info.rank < 3 ? 0 : 1;
    if (s.info.rank == 4) std::erase_if(s.steps, [](const StepRecord& x) { return x.step == 20; });
  }
  StepMetrics m = MeasureSteps(run, opt);
  ASSERT_TRUE(m.ranks[4].total_excess && m.ranks[0].total_excess && m.ranks[3].total_excess);
  EXPECT_NEAR(*m.ranks[4].total_excess, 0.10, 1e-6);
  EXPECT_NEAR(*m.ranks[0].total_excess, 0.0, 1e-6);
  // Rank 3's peers are ranks 4 (2.2 s, 38 steps) and 5 (2 s).
  EXPECT_NEAR(*m.ranks[3].total_excess, 39 * 2.0 / (38 * 2.1 + 2.0) - 1, 1e-6);
}

}  // namespace
}  // namespace laggard
