// The step-time detector's two halves on their own: DecideSteps on metrics
// made by hand (a clear straggler, a clean control, the threshold edges),
// MeasureSteps / MeasureOnsets on a tiny Run.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "analysis/steps/step_time_detector.h"

namespace laggard {
namespace {

constexpr size_t kSteps = 40;

// Hand-made metrics of ranks whose median steps are 1 s x (1 + excess[r]),
// every step the same (no slow steps, one change-point segment each); the
// job's step times are not synchronised (spread 2%).
struct HandMade {
  std::vector<StepSeries> series;
  StepMetrics m;
};

HandMade Metrics(const std::vector<double>& excess) {
  HandMade h;
  const size_t R = excess.size();
  h.series.resize(R);
  for (size_t r = 0; r < R; ++r) {
    h.series[r].info.rank = static_cast<int32_t>(r);
    for (size_t s = 0; s < kSteps; ++s) {
      h.series[r].steps.push_back(StepRecord{static_cast<int64_t>(s), 1'000'000'000, std::nullopt,
                                             SourceRef{0, static_cast<uint32_t>(s + 1)}});
    }
  }
  StepMetrics& m = h.m;
  for (const StepSeries& s : h.series) m.series.push_back(&s);
  m.attributed = true;
  m.comparable = R >= 2;
  for (size_t s = 0; s < kSteps; ++s) m.step_numbers.push_back(static_cast<int64_t>(s));
  m.step_median_s.assign(kSteps, 1.0);
  m.step_ranks.assign(kSteps, R);
  m.step_slowest.assign(kSteps, 0);
  m.group_of.assign(R, 0);
  m.group_rank_medians_s.assign(1, {});
  std::vector<double> excesses;
  for (size_t r = 0; r < R; ++r) {
    RankStepStats st;
    st.info = h.series[r].info;
    st.steps_total = st.steps_used = kSteps;
    Summary sum;
    sum.n = kSteps;
    sum.median = sum.mean = sum.p10 = sum.p90 = sum.min = sum.max = 1 + excess[r];
    st.seconds = sum;
    st.excess = excess[r];
    m.ranks.push_back(st);
    m.group_rank_medians_s[0].push_back(1 + excess[r]);
    m.peer_median_s.push_back(1.0);
    excesses.push_back(excess[r]);
    RankOnsets o;
    o.points = kSteps;
    o.first_step = 0;
    o.segments.push_back(Segment{0, kSteps, excess[r]});
    o.segment_first_step.push_back(0);
    o.segment_last_step.push_back(static_cast<int64_t>(kSteps - 1));
    m.onsets.push_back(o);
  }
  double center = *Median(excesses);
  double sigma = std::max(0.005, kMadToSigma * *Mad(excesses));
  for (RankStepStats& st : m.ranks) st.z = (*st.excess - center) / sigma;
  m.job.ranks = R;
  m.job.steps = kSteps;
  m.job.median_step_s = 1.0;
  m.job.baseline_step_s = 1.0;
  m.job.sync_spread = 0.02;
  m.job.sync_rank_offset = 0.02;
  m.slow_steps.assign(R, {});
  m.slow_step_excess.assign(R, {});
  m.slow_step_threshold = 0.10;
  return h;
}

std::vector<const Finding*> Stragglers(const StepAnalysis& a) {
  std::vector<const Finding*> out;
  for (const Finding& f : a.findings) {
    if (f.code == FindingCode::kStepStraggler) out.push_back(&f);
  }
  return out;
}

TEST(StepDecisionTest, OneRankTwentyPercentSlowIsAPersistentStraggler) {
  HandMade h = Metrics({0.0, 0.002, -0.001, 0.20, 0.001, -0.002, 0.0, 0.001});
  StepAnalysis a = DecideSteps(h.m, StepDetectorOptions());
  std::vector<const Finding*> s = Stragglers(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->entity.rank, 3);
  EXPECT_EQ(s[0]->pattern, Pattern::kPersistent);
  EXPECT_EQ(s[0]->band, SlowdownBand::kStraggler);
  EXPECT_NEAR(*s[0]->slowdown, 0.20, 1e-12);
  EXPECT_EQ(s[0]->message.find("rank 3: median 1.20 s vs peers 1.00 s, +20%"), 0u) << s[0]->message;
  EXPECT_TRUE(a.ranks[3].flagged);
  EXPECT_FALSE(a.ranks[0].flagged);
  EXPECT_FALSE(a.job.synchronised);
}

TEST(StepDecisionTest, RanksWithinTheNormalVariationGiveNoFinding) {
  HandMade h = Metrics({0.0, 0.004, -0.003, 0.002, 0.001, -0.004, 0.003, -0.001});
  StepAnalysis a = DecideSteps(h.m, StepDetectorOptions());
  EXPECT_TRUE(a.findings.empty());
  for (const RankStepStats& r : a.ranks) EXPECT_FALSE(r.flagged);
}

TEST(StepDecisionTest, TheFlagThresholdIsInclusive) {
  // Eight ranks at 0 and one at exactly flag_threshold: z = 0.05 / 0.005.
  std::vector<double> excess(9, 0.0);
  StepDetectorOptions opt;
  excess[4] = opt.flag_threshold;
  HandMade at = Metrics(excess);
  EXPECT_EQ(Stragglers(DecideSteps(at.m, opt)).size(), 1u);
  excess[4] = opt.flag_threshold - 1e-4;
  HandMade below = Metrics(excess);
  EXPECT_TRUE(Stragglers(DecideSteps(below.m, opt)).empty());
}

TEST(StepDecisionTest, ARankBelowMinZAndTheFlagThresholdIsNotFlagged) {
  std::vector<double> excess(9, 0.0);
  excess[2] = 0.06;  // z = 12 against the 0.5% spread floor
  HandMade h = Metrics(excess);
  StepDetectorOptions opt;
  EXPECT_EQ(Stragglers(DecideSteps(h.m, opt)).size(), 1u);
  opt.min_z = 13;
  opt.flag_threshold = 0.07;  // no change-point segment passes either
  EXPECT_TRUE(Stragglers(DecideSteps(h.m, opt)).empty());
}

TEST(StepDecisionTest, SynchronisedStepsNameNoOne) {
  HandMade h = Metrics({0.0, 0.0, 0.30, 0.0});
  h.m.job.sync_spread = 0.001;
  h.m.job.sync_rank_offset = 0.002;
  StepDetectorOptions opt;
  EXPECT_TRUE(StepsSynchronised(h.m, opt));
  StepAnalysis a = DecideSteps(h.m, opt);
  EXPECT_TRUE(Stragglers(a).empty());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kStepsSynchronised);
  // At the offset threshold itself the job is no longer synchronised.
  h.m.job.sync_rank_offset = opt.sync_rank_offset;
  EXPECT_FALSE(StepsSynchronised(h.m, opt));
}

TEST(StepDecisionTest, SlowStepsOfOneRankAtARegularPeriodArePeriodic) {
  HandMade h = Metrics(std::vector<double>(6, 0.0));
  for (int64_t s = 3; s < static_cast<int64_t>(kSteps); s += 8) {
    h.m.slow_steps[1].push_back(s);
    h.m.slow_step_excess[1].push_back(0.5);
    ++h.m.slow_events;
  }
  StepAnalysis a = DecideSteps(h.m, StepDetectorOptions());
  std::vector<const Finding*> s = Stragglers(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->entity.rank, 1);
  EXPECT_EQ(s[0]->pattern, Pattern::kPeriodic);
  EXPECT_EQ(s[0]->period_steps, 8.0);
  EXPECT_EQ(s[0]->onset_step, 3);
  EXPECT_NEAR(*s[0]->spike, 0.5, 1e-12);
  // Three bursts are below min_bursts (4): no pattern, and the single rank
  // holding every slow step is an intermittent straggler instead.
  h.m.slow_steps[1].resize(3);
  h.m.slow_step_excess[1].resize(3);
  h.m.slow_events = 3;
  StepAnalysis fewer = DecideSteps(h.m, StepDetectorOptions());
  s = Stragglers(fewer);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->pattern, Pattern::kIntermittent);
}

TEST(StepDecisionTest, OneSeriesHasNoPeers) {
  HandMade h = Metrics({0.0});
  StepAnalysis a = DecideSteps(h.m, StepDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kNoPeers);
}

// 4 ranks x 12 steps of 1 s, rank 2 at 1.2 s from its first step on.
laggard::Run TinyRun() {
  laggard::Run run;
  run.files.push_back(InputFileInfo{"steps.log", "article", 0, 0, true});
  RunBuilder b;
  for (int32_t r = 0; r < 4; ++r) {
    for (int64_t s = 0; s < 12; ++s) {
      DurationNs d = r == 2 ? 1'200'000'000 : 1'000'000'000;
      b.AddStep(r, s, d, 1'700'000'000'000'000'000 + s * 1'000'000'000,
                SourceRef{0, static_cast<uint32_t>(s)});
    }
  }
  b.Finalize(run);
  return run;
}

TEST(StepMetricsTest, ARankAtTwentyPercentMeasuresItsExcessAndSlowSteps) {
  laggard::Run run = TinyRun();
  StepDetectorOptions opt;
  StepMetrics m = MeasureSteps(run, opt);
  ASSERT_EQ(m.series.size(), 4u);
  EXPECT_TRUE(m.comparable);
  // Warm-up: the first 5 of 12 steps.
  ASSERT_EQ(m.step_numbers.size(), 7u);
  EXPECT_EQ(m.step_numbers.front(), 5);
  EXPECT_EQ(m.job.first_step, 5);
  EXPECT_EQ(m.job.steps, 7u);
  EXPECT_NEAR(*m.job.median_step_s, 1.0, 1e-6);
  EXPECT_NEAR(*m.ranks[2].excess, 0.2, 1e-6);
  EXPECT_NEAR(*m.ranks[0].excess, 0.0, 1e-6);
  EXPECT_GT(*m.ranks[2].z, 30);  // against the 0.5% spread floor
  EXPECT_EQ(m.ranks[2].slowest_share, 1.0);
  EXPECT_NEAR(*m.job.sync_rank_offset, 0.2, 1e-6);
  // Noise is 0, so the slow-step threshold is its floor, and rank 2 is slow
  // in every analysed step.
  EXPECT_EQ(m.slow_step_threshold, opt.slow_step_excess);
  EXPECT_EQ(m.slow_steps[2].size(), 7u);
  EXPECT_TRUE(m.slow_steps[0].empty());
  EXPECT_EQ(m.slow_events, 7u);
  EXPECT_TRUE(m.onsets.empty());
  EXPECT_FALSE(StepsSynchronised(m, opt));

  MeasureOnsets(m, opt);
  ASSERT_EQ(m.onsets.size(), 4u);
  ASSERT_EQ(m.onsets[2].segments.size(), 1u);
  EXPECT_NEAR(m.onsets[2].segments[0].median, 0.2, 1e-6);
  EXPECT_EQ(m.onsets[2].first_step, 5);
  EXPECT_EQ(m.onsets[2].points, 7u);

  StepAnalysis a = DecideSteps(m, opt);
  std::vector<const Finding*> s = Stragglers(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->entity.rank, 2);
  // Without rank 2 the slowest rank takes 1.0 s instead of 1.2 s.
  EXPECT_NEAR(*ThroughputLost(m, a.ranks), 1 - 1.0 / 1.2, 1e-6);

  StepAnalysis whole = AnalyzeStepTimes(run, opt);
  ASSERT_EQ(whole.findings.size(), a.findings.size());
  EXPECT_EQ(whole.findings[0].message, a.findings[0].message);
  EXPECT_EQ(whole.job.throughput_lost, ThroughputLost(m, a.ranks));
}

// A synchronous job of 4 ranks and 40 steps: every rank's step takes the
// same 1 s (job-wide 1.5 s in steps 20-24), rank 1 computes 0.72 s instead
// of 0.6 s. `compute_from`: ranks from this one on log no compute time.
laggard::Run SynchronisedRun(int32_t compute_from = 4) {
  laggard::Run run;
  for (int32_t r = 0; r < 4; ++r) {
    StepSeries& s = run.ranks.emplace_back();
    s.info.rank = r;
    for (int64_t i = 0; i < 40; ++i) {
      StepRecord& x = s.steps.emplace_back();
      x.step = i;
      x.duration_ns = i >= 20 && i < 25 ? 1'500'000'000 : 1'000'000'000;
      double jitter = 1 + 0.004 * static_cast<double>((i * 5 + r * 3) % 5);
      if (r < compute_from)
        x.compute_ns = static_cast<DurationNs>(6e8 * (r == 1 ? 1.2 : 1.0) * jitter);
    }
  }
  return run;
}

TEST(StepComputeBasisTest, ComputeTimesJudgeTheRanksAndStepTimesTheJob) {
  laggard::Run run = SynchronisedRun();
  StepDetectorOptions opt;
  ASSERT_TRUE(ComputeOnlyRun(run, opt).has_value());
  StepAnalysis a = AnalyzeStepTimes(run, opt);
  EXPECT_EQ(a.job.basis, StepBasis::kComputeTime);
  EXPECT_TRUE(a.job.step_times_synchronised);
  EXPECT_FALSE(a.job.synchronised);
  std::vector<const Finding*> s = Stragglers(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->entity.rank, 1);
  EXPECT_NEAR(*s[0]->slowdown, 0.2, 0.02);
  EXPECT_NE(s[0]->message.find("median compute time"), std::string::npos) << s[0]->message;
  // The job's own slowdown is read from the end-to-end steps.
  ASSERT_EQ(a.job.episodes.size(), 1u);
  EXPECT_EQ(a.job.episodes[0].start_step, 20);
  size_t synchronised = 0, slowdowns = 0;
  for (const Finding& f : a.findings) {
    synchronised += f.code == FindingCode::kStepsSynchronised;
    slowdowns += f.code == FindingCode::kJobSlowdown;
  }
  EXPECT_EQ(synchronised, 0u);
  EXPECT_EQ(slowdowns, 1u);
  // After 5 warm-up steps: rank 1's 0.7286 s against the next slowest
  // rank's 0.6096 s, in each of 35 steps that take 37.5 s end to end.
  ASSERT_TRUE(a.job.throughput_lost.has_value());
  EXPECT_NEAR(*a.job.throughput_lost, 35 * (0.72864 - 0.6096) / 37.5, 0.002);
}

TEST(StepComputeBasisTest, WithoutComputeTimesOnEveryRankStepTimesAreCompared) {
  laggard::Run run = SynchronisedRun(/*compute_from=*/3);
  StepDetectorOptions opt;
  EXPECT_FALSE(ComputeOnlyRun(run, opt).has_value());
  StepAnalysis a = AnalyzeStepTimes(run, opt);
  EXPECT_EQ(a.job.basis, StepBasis::kStepTime);
  EXPECT_TRUE(a.job.synchronised);
  EXPECT_TRUE(Stragglers(a).empty());
}

TEST(StepMetricsTest, AnEmptyRunHasNoSeries) {
  laggard::Run run;
  StepMetrics m = MeasureSteps(run, StepDetectorOptions());
  EXPECT_TRUE(m.series.empty());
  EXPECT_TRUE(DecideSteps(m, StepDetectorOptions()).findings.empty());
}

// A run big enough for the passes to take several threads (>= 2^18 step
// records per thread): stragglers with onsets, a periodic rank, missing
// steps. Every metric must be the same on 1 thread and on 4.
laggard::Run LargeRun() {
  laggard::Run run;
  run.files.push_back(InputFileInfo{"steps.log", "article", 0, 0, true});
  RunBuilder b;
  uint64_t state = 12345;
  auto noise = [&] {  // xorshift: deterministic, +-2%
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (static_cast<double>(state % 4001) / 4000.0 - 0.5) * 0.04;
  };
  for (int32_t r = 0; r < 4096; ++r) {
    for (int64_t s = 0; s < 260; ++s) {
      if ((r * 31 + s) % 97 == 0) continue;  // a missing step
      double f = 1 + noise();
      if (r == 700 && s >= 120) f += 0.2;
      if (r == 3001) f += 0.08;
      if (r == 42 && s % 25 == 0) f += 0.5;
      b.AddStep(r, s, static_cast<DurationNs>(1e9 * f),
                1'700'000'000'000'000'000 + s * 1'000'000'000,
                SourceRef{0, static_cast<uint32_t>(s)});
    }
  }
  b.Finalize(run);
  return run;
}

TEST(StepMetricsTest, TheMetricsDoNotDependOnTheThreads) {
  laggard::Run run = LargeRun();
  StepDetectorOptions one, four;
  one.threads = 1;
  four.threads = 4;
  StepMetrics a = MeasureSteps(run, one), b = MeasureSteps(run, four);
  MeasureOnsets(a, one);
  MeasureOnsets(b, four);
  // Bit for bit (NaN marks the missing steps).
  ASSERT_EQ(a.seconds_by_step.size(), b.seconds_by_step.size());
  EXPECT_EQ(std::memcmp(a.seconds_by_step.data(), b.seconds_by_step.data(),
                        a.seconds_by_step.size() * sizeof(float)),
            0);
  EXPECT_EQ(a.step_median_s, b.step_median_s);
  EXPECT_EQ(a.step_slowest, b.step_slowest);
  EXPECT_EQ(a.step_ranks, b.step_ranks);
  EXPECT_EQ(a.group_step_median_s, b.group_step_median_s);
  EXPECT_EQ(a.job.sync_spread, b.job.sync_spread);
  EXPECT_EQ(a.job.sync_rank_offset, b.job.sync_rank_offset);
  EXPECT_EQ(a.job.noise_sigma, b.job.noise_sigma);
  EXPECT_EQ(a.slow_steps, b.slow_steps);
  EXPECT_EQ(a.slow_step_excess, b.slow_step_excess);
  EXPECT_EQ(a.slow_events, b.slow_events);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  ASSERT_EQ(a.onsets.size(), b.onsets.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].seconds->median, b.ranks[r].seconds->median);
    EXPECT_EQ(a.ranks[r].excess, b.ranks[r].excess);
    EXPECT_EQ(a.ranks[r].z, b.ranks[r].z);
    EXPECT_EQ(a.ranks[r].slowest_share, b.ranks[r].slowest_share);
    ASSERT_EQ(a.onsets[r].segments.size(), b.onsets[r].segments.size()) << r;
    EXPECT_EQ(a.onsets[r].segment_first_step, b.onsets[r].segment_first_step);
  }
  StepAnalysis da = DecideSteps(a, one), db = DecideSteps(b, four);
  ASSERT_EQ(da.findings.size(), db.findings.size());
  for (size_t i = 0; i < da.findings.size(); ++i) {
    EXPECT_EQ(da.findings[i].code, db.findings[i].code);
    EXPECT_EQ(da.findings[i].message, db.findings[i].message);
  }
  // The injected ranks are found (so the run exercises the decisions).
  EXPECT_TRUE(da.ranks[700].flagged);
  EXPECT_TRUE(da.ranks[3001].flagged);
}

}  // namespace
}  // namespace laggard
