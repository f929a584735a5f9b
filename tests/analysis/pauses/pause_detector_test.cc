// Rule tests of the pause detector (analysis/pauses/pause_detector.h) on small
// hand-built runs: 4 busy GPUs of one host sampled every second, one of
// them dipping alone at the job's slow steps; and the negative controls
// that must name no one (every GPU busy, two GPUs dipping as often, dips
// shared by two GPUs, more dips than spikes, step times that are not
// synchronised, a trace culprit).

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "analysis/pauses/pause_detector.h"

namespace laggard {
namespace {

constexpr TimeNs kStart = 1'700'000'000'000'000'000;
constexpr TimeNs kSecond = 1'000'000'000;
constexpr int kGpus = 4;
constexpr int kSamples = 60;

// Per GPU: sample second -> utilisation; every other sample reads 100%.
using Dips = std::map<int, std::map<int, double>>;

laggard::Run GpuRun(const Dips& dips) {
  laggard::Run run;
  for (int i = 0; i < kGpus; ++i) {
    GpuRecord g;
    g.host = "node-00";
    g.index = i;
    for (int t = 0; t < kSamples; ++t) {
      GpuSample x;
      x.time_ns = kStart + t * kSecond;
      x.util_pct = 100;
      auto gpu = dips.find(i);
      if (gpu != dips.end() && gpu->second.count(t)) x.util_pct = gpu->second.at(t);
      x.src = SourceRef{0, static_cast<uint32_t>(100 * i + t + 1)};
      g.samples.push_back(x);
    }
    run.hardware.gpus.push_back(std::move(g));
  }
  return run;
}

StepAnalysis SpikySteps(std::vector<int64_t> spikes) {
  StepAnalysis s;
  s.job.synchronised = true;
  s.job.spike_excess.assign(spikes.size(), 0.8);
  s.job.spike_steps = std::move(spikes);
  return s;
}

PauseAnalysis Analyze(const laggard::Run& run, const StepAnalysis& steps,
                      const TraceAnalysis& traces = {}) {
  return AnalyzePauses(run, steps, traces, RankMap::Build(run, std::nullopt),
                       PauseDetectorOptions());
}

TEST(PauseDetectorTest, OneGpuDippingAloneAtTheJobsSlowStepsIsTheOneThatPauses) {
  laggard::Run run = GpuRun({{2, {{20, 60}, {40, 54}}}});
  PauseAnalysis a = Analyze(run, SpikySteps({20, 40}));
  ASSERT_EQ(a.findings.size(), 1u);
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHostPause);
  EXPECT_EQ(f.entity.host, "node-00");
  EXPECT_EQ(f.entity.gpu, 2);
  EXPECT_EQ(f.entity.rank, std::nullopt);
  EXPECT_EQ(f.cause, "pause");
  EXPECT_DOUBLE_EQ(f.confidence, 0.5);
  EXPECT_DOUBLE_EQ(*f.slowdown, 0.8);
  ASSERT_EQ(f.evidence.size(), 2u);
  EXPECT_NE(f.evidence[0].text.find("GPU 2 of node-00 drops to 54% utilisation 2 times"),
            std::string::npos)
      << f.evidence[0].text;
  ASSERT_TRUE(f.evidence[0].source);
  EXPECT_EQ(f.evidence[0].source->line, 100u * 2 + 40 + 1);  // the lowest sample
  EXPECT_NE(f.evidence[1].text.find("2 isolated steps (20, 40), +80% each"), std::string::npos)
      << f.evidence[1].text;
  ASSERT_EQ(f.next_steps.size(), 1u);
  EXPECT_EQ(f.next_steps[0].rfind("find what pauses GPU 2 of node-00's process", 0), 0u)
      << f.next_steps[0];
}

TEST(PauseDetectorTest, ThePausingGpusRankIsNamedWhenKnown) {
  laggard::Run run = GpuRun({{2, {{20, 60}, {40, 60}}}});
  StepSeries s;
  s.info.rank = 6;
  s.info.host = "node-00";
  s.info.local_gpu = 2;
  run.ranks.push_back(s);
  PauseAnalysis a = Analyze(run, SpikySteps({20, 40}));
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].entity.rank, 6);
  EXPECT_EQ(a.findings[0].next_steps[0].rfind("find what pauses rank 6's process", 0), 0u);
}

TEST(PauseDetectorTest, DipsLessThanTwoSecondsApartAreOnePauseAtItsLowest) {
  laggard::Run run = GpuRun({{1, {{20, 96}, {21, 70}, {40, 80}}}});
  PauseMetrics m =
      MeasurePauses(run, SpikySteps({20, 40}), TraceAnalysis(), PauseDetectorOptions());
  ASSERT_TRUE(m.applicable);
  ASSERT_EQ(m.saturated.size(), 4u);
  const GpuPauses& g = m.saturated[1];
  EXPECT_EQ(g.gpu, 1u);
  ASSERT_EQ(g.pauses.size(), 2u);
  EXPECT_EQ(g.pauses[0].time_ns, kStart + 20 * kSecond);
  EXPECT_DOUBLE_EQ(g.pauses[0].lowest_util_pct, 70);
  EXPECT_EQ(g.pauses[0].src.line, 100u + 21 + 1);
  EXPECT_EQ(g.pauses[1].time_ns, kStart + 40 * kSecond);
}

TEST(PauseDetectorTest, OneLoneDipForSeveralSpikesIsNamedAtLowerConfidence) {
  laggard::Run run = GpuRun({{3, {{20, 90}}}});
  PauseAnalysis a = Analyze(run, SpikySteps({20, 40, 50}));
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_DOUBLE_EQ(a.findings[0].confidence, 0.4);
}

TEST(PauseDetectorTest, EveryGpuBusyNamesNoOne) {
  laggard::Run run = GpuRun({});
  PauseMetrics m =
      MeasurePauses(run, SpikySteps({20, 40}), TraceAnalysis(), PauseDetectorOptions());
  EXPECT_TRUE(m.applicable);
  for (const GpuPauses& g : m.saturated) EXPECT_TRUE(g.pauses.empty());
  EXPECT_TRUE(Analyze(run, SpikySteps({20, 40})).findings.empty());
}

TEST(PauseDetectorTest, TwoGpusDippingAsOftenNameNoOne) {
  laggard::Run run = GpuRun({{0, {{20, 60}, {40, 60}}}, {3, {{30, 60}, {50, 60}}}});
  EXPECT_TRUE(Analyze(run, SpikySteps({20, 40})).findings.empty());
}

TEST(PauseDetectorTest, ADipSharedByTwoGpusIsNotLone) {
  laggard::Run run = GpuRun({{0, {{20, 60}}}, {1, {{20, 60}}}});
  EXPECT_TRUE(Analyze(run, SpikySteps({20})).findings.empty());
}

TEST(PauseDetectorTest, MoreThanTwoPausesPerJobSpikeAreNotTheJobsPauses) {
  laggard::Run run = GpuRun({{2, {{5, 60}, {20, 60}, {35, 60}}}});
  EXPECT_TRUE(Analyze(run, SpikySteps({20})).findings.empty());
}

TEST(PauseDetectorTest, AppliesOnlyToSynchronisedStepsWithoutATraceCulprit) {
  laggard::Run run = GpuRun({{2, {{20, 60}, {40, 60}}}});
  StepAnalysis unsynchronised = SpikySteps({20, 40});
  unsynchronised.job.synchronised = false;
  EXPECT_FALSE(
      MeasurePauses(run, unsynchronised, TraceAnalysis(), PauseDetectorOptions()).applicable);
  EXPECT_TRUE(Analyze(run, unsynchronised).findings.empty());
  TraceAnalysis traced;
  traced.culprit = 5;
  EXPECT_TRUE(Analyze(run, SpikySteps({20, 40}), traced).findings.empty());
  EXPECT_TRUE(Analyze(run, SpikySteps({})).findings.empty());
}

TEST(PauseDetectorTest, GpusWithApproximateTimesOrTooFewSamplesAreNotJudged) {
  laggard::Run run = GpuRun({{2, {{20, 60}, {40, 60}}}});
  run.hardware.gpus[2].time_is_approximate = true;
  EXPECT_TRUE(Analyze(run, SpikySteps({20, 40})).findings.empty());
  laggard::Run few = GpuRun({{2, {{5, 60}}}});
  for (GpuRecord& g : few.hardware.gpus) g.samples.resize(9);
  EXPECT_TRUE(MeasurePauses(few, SpikySteps({5}), TraceAnalysis(), PauseDetectorOptions())
                  .saturated.empty());
}

}  // namespace
}  // namespace laggard
