// The job's step time changing level once (analysis/steps/level_shift.h): one
// rise to the end, a rise that recovered, and the shapes that are not one
// change and must give nothing.

#include "analysis/steps/level_shift.h"

#include "model/run.h"
#include "model/trace.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace laggard {
namespace {

// `n` steps numbered from 0 at `base` seconds, +-0.5% alternating noise,
// steps [from, to) at `base` x `factor`.
std::vector<double> Series(size_t n, double base, size_t from, size_t to, double factor) {
  std::vector<double> s;
  for (size_t i = 0; i < n; ++i) {
    double v = base * (i % 2 == 0 ? 1.005 : 0.995);
    if (i >= from && i < to) v *= factor;
    s.push_back(v);
  }
  return s;
}

std::vector<int64_t> Steps(size_t n, int64_t first = 0) {
  std::vector<int64_t> s;
  for (size_t i = 0; i < n; ++i) s.push_back(first + static_cast<int64_t>(i));
  return s;
}

TEST(LevelShiftTest, ARiseToTheEndIsPricedBeforeAndAfter) {
  auto s = Series(120, 0.8, 30, 120, 1.08);
  auto shift = MeasureLevelShift(Steps(120), s, 1, 0, 0.005);
  ASSERT_TRUE(shift.has_value());
  EXPECT_EQ(shift->first_step, 30);
  EXPECT_FALSE(shift->last_step.has_value());
  EXPECT_EQ(shift->steps, 90u);
  EXPECT_NEAR(shift->before_s, 0.8, 0.005);
  EXPECT_NEAR(shift->during_s, 0.864, 0.005);
  EXPECT_NEAR(shift->cost(), 1 - 1 / 1.08, 0.005);
}

TEST(LevelShiftTest, ARiseThatRecoveredHasItsLastStep) {
  auto s = Series(100, 1.0, 40, 70, 1.2);
  auto shift = MeasureLevelShift(Steps(100, 5), s, 1, 0, 0.005);
  ASSERT_TRUE(shift.has_value());
  EXPECT_EQ(shift->first_step, 45);
  ASSERT_TRUE(shift->last_step.has_value());
  EXPECT_EQ(*shift->last_step, 74);
  EXPECT_NEAR(shift->cost(), 1 - 1 / 1.2, 0.005);
}

TEST(LevelShiftTest, ShapesThatAreNotOneChangeGiveNothing) {
  // The job got faster (warm-up's tail, a cache).
  EXPECT_FALSE(MeasureLevelShift(Steps(100), Series(100, 1.0, 40, 100, 0.9), 1, 0, 0.005));
  // Two rises: which one is the culprit's cannot be told.
  auto two = Series(120, 1.0, 30, 120, 1.1);
  for (size_t i = 70; i < 120; ++i) two[i] *= 1.1;
  EXPECT_FALSE(MeasureLevelShift(Steps(120), two, 1, 0, 0.005));
  // A rise that settles at another level than before.
  auto other = Series(120, 1.0, 40, 80, 1.2);
  for (size_t i = 80; i < 120; ++i) other[i] *= 1.1;
  EXPECT_FALSE(MeasureLevelShift(Steps(120), other, 1, 0, 0.005));
  // Flat.
  EXPECT_FALSE(MeasureLevelShift(Steps(120), Series(120, 1.0, 0, 0, 1.0), 1, 0, 0.005));
  // A steady drift from 1.00 s to 1.06 s over 200 steps: split in two it
  // reads as a step at the middle, but neither half is flat.
  std::vector<double> drift;
  for (size_t i = 0; i < 200; ++i) drift.push_back(1.0 + 0.06 * static_cast<double>(i) / 199);
  EXPECT_FALSE(MeasureLevelShift(Steps(200), drift, 1, 0, 0.001));
}

TEST(LevelShiftTest, AShiftInsideTheNoiseOrTooShortGivesNothing) {
  // 3% in 2% per-step noise: below 5 noise sigmas.
  EXPECT_FALSE(MeasureLevelShift(Steps(120), Series(120, 1.0, 60, 120, 1.03), 1, 0, 0.02));
  // The same 3% in 0.5% noise is a shift.
  EXPECT_TRUE(MeasureLevelShift(Steps(120), Series(120, 1.0, 60, 120, 1.03), 1, 0, 0.005));
  // 5 slow steps at the end: shorter than a segment.
  EXPECT_FALSE(MeasureLevelShift(Steps(60), Series(60, 1.0, 55, 60, 1.3), 1, 0, 0.005));
  // Too few steps for two segments.
  EXPECT_FALSE(MeasureLevelShift(Steps(15), Series(15, 1.0, 8, 15, 1.3), 1, 0, 0.005));
}

TEST(LevelShiftTest, TheProfiledStepsAndMissingStepsAreLeftOut) {
  // Steps 100-119 are the profiler's window, 1.5x slow: without them the
  // job never changed.
  auto s = Series(120, 1.0, 100, 120, 1.5);
  EXPECT_TRUE(MeasureLevelShift(Steps(120), s, 1, 0, 0.005));
  EXPECT_FALSE(MeasureLevelShift(Steps(120), s, 100, 119, 0.005));
  // Steps no rank logged (0) are not fast steps.
  auto gaps = Series(120, 1.0, 0, 0, 1.0);
  for (size_t i = 0; i < 40; ++i) gaps[i] = 0;
  EXPECT_FALSE(MeasureLevelShift(Steps(120), gaps, 1, 0, 0.005));
}

// Step logs with their own start times: the shift's first step starts
// when its records say (the median over ranks).
TEST(LevelShiftTest, StartTimeFromTheRecordsOwnTimes) {
  std::vector<StepSeries> ranks(3);
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (int64_t s = 0; s < 50; ++s) {
      StepRecord rec;
      rec.step = s;
      rec.duration_ns = 1'000'000'000;
      rec.start_ns = TimeNs{1'000'000'000'000} + s * 1'000'000'000 + static_cast<TimeNs>(r) * 1000;
      ranks[r].steps.push_back(rec);
    }
  }
  std::vector<const StepSeries*> series = {&ranks[0], &ranks[1], &ranks[2]};
  laggard::Run run;
  auto t = ShiftStartTime(run, series, Steps(50), std::vector<double>(50, 1.0), std::nullopt, 30);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, TimeNs{1'000'000'000'000} + TimeNs{30'000'000'000} + 1000);
  // A step nobody logged, and no profiled window: unknown.
  EXPECT_FALSE(
      ShiftStartTime(run, series, Steps(50), std::vector<double>(50, 1.0), std::nullopt, 70));
}

// Step logs without times (the article's "rank 0, step 3, time 0.85s") and
// traces of logged steps 40-42: the traces' start of step 40 moved back by
// the logged durations of steps 30-39.
TEST(LevelShiftTest, StartTimeFromTheTracesWindowMovedByTheLoggedDurations) {
  StepSeries rank;
  for (int64_t s = 0; s < 45; ++s) rank.steps.push_back(StepRecord{.step = s, .duration_ns = 1});
  std::vector<const StepSeries*> series = {&rank};
  std::vector<double> median_s(45, 0.5);
  for (size_t i = 35; i < 40; ++i) median_s[i] = 1.0;
  laggard::Run run;
  RankTrace trace;
  trace.steps.push_back(TraceStep{.step = 39, .start_ns = 5'000'000'000'000, .end_ns = 0});
  run.traces.push_back(trace);
  LogStepRange window{.first = 40, .last = 42, .shift = 1, .ranks = 1};
  auto t = ShiftStartTime(run, series, Steps(45), median_s, window, 30);
  ASSERT_TRUE(t.has_value());
  // Steps 30-34 at 0.5 s and 35-39 at 1.0 s: 7.5 s before step 40.
  EXPECT_EQ(*t, TimeNs{5'000'000'000'000} - 7'500'000'000);
  // After the window: moved on.
  auto after = ShiftStartTime(run, series, Steps(45), median_s, window, 42);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(*after, TimeNs{5'000'000'000'000} + 1'000'000'000);
  // A step between without a time: unknown.
  median_s[33] = 0;
  EXPECT_FALSE(ShiftStartTime(run, series, Steps(45), median_s, window, 30));
}

}  // namespace
}  // namespace laggard
