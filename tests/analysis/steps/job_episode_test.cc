// Whole-job episodes on real-job noise: isolated spikes are jitter, a
// sustained slowdown is an episode however noisy the job, and the
// profiler's own window is not the job slowing down (step_time_detector.h,
// profiled_steps.h).

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "analysis/steps/profiled_steps.h"
#include "analysis/steps/step_time_detector.h"

namespace laggard {
namespace {

constexpr int64_t kSteps = 40;

// 2 ranks with the same step times, seconds(step) each (synchronous DDP);
// the rank of each trace in `traced` gets ProfilerStep#(s - 1) ranges of
// the durations of logged steps s in [first, last], as torch 1.13 names them.
laggard::Run JobOf(const std::function<double(int64_t)>& seconds, int64_t first = -1,
                   int64_t last = -1) {
  laggard::Run run;
  run.files.push_back(InputFileInfo{"rank.log", "article", 0, 0, true});
  RunBuilder b;
  for (int32_t r = 0; r < 2; ++r) {
    for (int64_t s = 0; s < kSteps; ++s) {
      auto d = static_cast<DurationNs>(seconds(s) * 1e9 * (r == 0 ? 1.0 : 1.001));
      b.AddStep(r, s, d, std::nullopt, SourceRef{0, static_cast<uint32_t>(s + 1)});
    }
    if (first < 0) continue;
    RankTrace t;
    t.rank = r;
    t.producer = "torch-legacy";
    TimeNs at = 0;
    for (int64_t s = first; s <= last; ++s) {
      auto d = static_cast<DurationNs>(seconds(s) * 1e9 * (r == 0 ? 1.0 : 1.001));
      t.steps.push_back(TraceStep{s - 1, at, at + d});
      at += d;
    }
    b.AddTrace(std::move(t));
  }
  b.Finalize(run);
  return run;
}

// Noisy healthy steps: 80 ms +- ~16%, deterministic.
double Noisy(int64_t s) { return 0.080 * (1 + 0.16 * std::sin(static_cast<double>(s) * 2.3)); }

size_t Count(const StepAnalysis& a, FindingCode code) {
  size_t n = 0;
  for (const Finding& f : a.findings) n += f.code == code;
  return n;
}

TEST(JobEpisodeTest, IsolatedSpikesOnANoisyJobAreNoJobSlowdown) {
  // Steps 12 and 27 (+65%, +45%) and 33-34 (+40%): the real healthy jobs'
  // spikes that read as "the whole job slowed in steps 8-8".
  laggard::Run run = JobOf([](int64_t s) {
    if (s == 12) return Noisy(s) * 1.65;
    if (s == 27) return Noisy(s) * 1.45;
    if (s == 33 || s == 34) return Noisy(s) * 1.4;
    return Noisy(s);
  });
  StepAnalysis a = AnalyzeStepTimes(run, StepDetectorOptions());
  EXPECT_EQ(Count(a, FindingCode::kJobSlowdown), 0u);
  EXPECT_EQ(Count(a, FindingCode::kPeriodicSlowdown), 0u);
  EXPECT_TRUE(a.job.episodes.empty());
}

TEST(JobEpisodeTest, ASustainedSlowdownOfANoisyJobIsAnEpisode) {
  // The article's case on a noisy job: 3x from step 25 on.
  laggard::Run run = JobOf([](int64_t s) { return Noisy(s) * (s >= 25 ? 3.0 : 1.0); });
  StepAnalysis a = AnalyzeStepTimes(run, StepDetectorOptions());
  ASSERT_EQ(Count(a, FindingCode::kJobSlowdown), 1u);
  ASSERT_EQ(a.job.episodes.size(), 1u);
  EXPECT_EQ(a.job.episodes[0].start_step, 25);
  EXPECT_EQ(a.job.episodes[0].end_step, kSteps - 1);
  // The level shift does not widen the noise the threshold is made of.
  ASSERT_TRUE(a.job.step_noise_sigma);
  EXPECT_LT(*a.job.step_noise_sigma, 0.3);
}

TEST(JobEpisodeTest, NoiseRaisesTheEpisodeThreshold) {
  // +40% for 5 steps: a slowdown on a quiet job, noise on one whose steps
  // vary by ~16%.
  auto quiet = [](int64_t s) { return 0.080 * (s >= 20 && s < 25 ? 1.4 : 1.0); };
  StepAnalysis q = AnalyzeStepTimes(JobOf(quiet), StepDetectorOptions());
  EXPECT_EQ(Count(q, FindingCode::kJobSlowdown), 1u);
  auto noisy = [](int64_t s) { return Noisy(s) * (s >= 20 && s < 25 ? 1.4 : 1.0); };
  StepAnalysis n = AnalyzeStepTimes(JobOf(noisy), StepDetectorOptions());
  EXPECT_EQ(Count(n, FindingCode::kJobSlowdown), 0u);
}

TEST(JobEpisodeTest, TheProfilersWindowIsItsCostNotAJobSlowdown) {
  // Steps 30-39 profiled and 40% slower, traced as ProfilerStep#29..#38.
  auto seconds = [](int64_t s) { return 0.080 * (s >= 30 ? 1.4 : 1.0); };
  laggard::Run run = JobOf(seconds, 30, 39);
  std::optional<LogStepRange> prof = ProfiledLogSteps(run);
  ASSERT_TRUE(prof);
  EXPECT_EQ(prof->shift, 1);
  EXPECT_EQ(prof->first, 30);
  EXPECT_EQ(prof->last, 39);
  EXPECT_EQ(prof->ranks, 2u);
  StepAnalysis a = AnalyzeStepTimes(run, StepDetectorOptions());
  EXPECT_EQ(Count(a, FindingCode::kJobSlowdown), 0u);
  ASSERT_EQ(Count(a, FindingCode::kStepProfilerWindow), 1u);
  // Without the traces it is an episode to the last step.
  StepAnalysis untraced = AnalyzeStepTimes(JobOf(seconds), StepDetectorOptions());
  EXPECT_EQ(Count(untraced, FindingCode::kJobSlowdown), 1u);
}

TEST(JobEpisodeTest, TheProfilersWarmUpStepIsPartOfItsWindow) {
  // torch.profiler's warm-up step (29) records like the active ones
  // (30-39), and the step after them (40) exports the trace: a real 2-rank
  // job's healthy run slowed in steps 29-33 and was called job_wide.
  auto seconds = [](int64_t s) { return 0.080 * (s >= 29 && s <= 33 ? 1.45 : 1.0); };
  StepAnalysis a = AnalyzeStepTimes(JobOf(seconds, 30, 39), StepDetectorOptions());
  EXPECT_EQ(Count(a, FindingCode::kJobSlowdown), 0u);
  EXPECT_EQ(Count(a, FindingCode::kStepProfilerWindow), 1u);
  StepDetectorOptions no_warmup;
  no_warmup.profiler_warmup_steps = 0;
  EXPECT_EQ(Count(AnalyzeStepTimes(JobOf(seconds, 30, 39), no_warmup), FindingCode::kJobSlowdown),
            1u);
  // Three steps before the window are not its warm-up.
  auto earlier = [](int64_t s) { return 0.080 * (s >= 27 && s <= 33 ? 1.45 : 1.0); };
  StepAnalysis b = AnalyzeStepTimes(JobOf(earlier, 30, 39), StepDetectorOptions());
  EXPECT_EQ(Count(b, FindingCode::kJobSlowdown), 1u);
}

TEST(JobEpisodeTest, ASlowdownReachingPastTheProfilersWindowStaysAnEpisode) {
  auto seconds = [](int64_t s) { return 0.080 * (s >= 20 ? 2.0 : 1.0); };
  StepAnalysis a = AnalyzeStepTimes(JobOf(seconds, 30, 39), StepDetectorOptions());
  EXPECT_EQ(Count(a, FindingCode::kJobSlowdown), 1u);
  EXPECT_EQ(Count(a, FindingCode::kStepProfilerWindow), 0u);
}

TEST(ProfiledStepsTest, TraceDurationsThatMatchNoLoggedStepsGiveNoMapping) {
  laggard::Run run = JobOf(Noisy);
  RankTrace t;
  t.rank = 0;
  constexpr DurationNs kSecond = 1'000'000'000;
  for (int64_t s = 0; s < 5; ++s) t.steps.push_back(TraceStep{s, s * kSecond, (s + 1) * kSecond});
  run.traces.push_back(t);  // 1 s steps against ~80 ms logs
  EXPECT_FALSE(ProfiledLogSteps(run));
}

}  // namespace
}  // namespace laggard
