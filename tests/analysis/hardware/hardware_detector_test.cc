// The hardware detector's two halves on their own: DecideHardware on GPU
// metrics made by hand (a clear cause, a clean control, the clock-gap
// edge), MeasureHardware on a tiny Run.

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/hardware/hardware_detector.h"

namespace laggard {
namespace {

// A loaded H100 of node-00 running rank `gpu`, `clock_gap` below its peers.
GpuMetrics Gpu(int32_t gpu, double clock_gap) {
  GpuMetrics g;
  g.stats.host = "node-00";
  g.stats.gpu = gpu;
  g.stats.rank = gpu;
  g.stats.model = "NVIDIA H100 80GB HBM3";
  g.stats.samples = g.stats.loaded_samples = 60;
  g.stats.peer_sm_clock_mhz = 1980;
  g.stats.sm_clock_mhz = 1980 * (1 - clock_gap);
  g.stats.temp_c_max = 70;
  g.stats.temp_c_median = 65;
  g.stats.power_limit_w = 700;
  g.stats.power_w_median = 600;
  g.stats.util_pct_median = 98;
  g.clock_gap = clock_gap;
  g.peer_power_limit_w = 700;
  g.default_power_limit_w = 700;
  g.max_sm_clock_mhz = 1980;
  g.source = SourceRef{0, 1};
  return g;
}

HardwareMetrics Node(std::vector<double> clock_gaps) {
  HardwareMetrics m;
  for (size_t i = 0; i < clock_gaps.size(); ++i)
    m.gpus.push_back(Gpu(static_cast<int32_t>(i), clock_gaps[i]));
  return m;
}

std::vector<SuspectRank> Suspect(int32_t rank) { return {SuspectRank{rank, 1'000, 2'000}}; }

TEST(HardwareDecisionTest, AHotThrottledGpuOfTheSlowRankIsThermal) {
  HardwareMetrics m = Node({0.0, 0.12, 0.01, 0.0});
  m.gpus[1].stats.hot_share = 0.6;
  m.gpus[1].stats.thermal_reason_share = 0.5;
  m.gpus[1].stats.temp_c_max = 93;
  m.gpus[1].thermal_overlap = true;
  HardwareAnalysis a = DecideHardware(m, Suspect(1), HardwareDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u) << a.findings.back().message;
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.code, FindingCode::kGpuThermal);
  EXPECT_EQ(f.entity.gpu, 1);
  EXPECT_EQ(f.severity, Describe(FindingCode::kGpuThermal).severity);
  EXPECT_EQ(f.overlaps_slow_steps, true);
  EXPECT_NE(f.message.find("during rank 1's slow steps"), std::string::npos) << f.message;
  EXPECT_NEAR(f.confidence, 0.85, 1e-12);
  ASSERT_EQ(a.gpus.size(), 4u);
}

TEST(HardwareDecisionTest, TheSameHotGpuOnAHealthyRankIsAWarningNotBlamed) {
  HardwareMetrics m = Node({0.0, 0.12, 0.01, 0.0});
  m.gpus[1].stats.hot_share = 0.6;
  m.gpus[1].stats.thermal_reason_share = 0.5;
  HardwareAnalysis a = DecideHardware(m, Suspect(3), HardwareDetectorOptions());
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].severity, Severity::kWarning);
  EXPECT_NE(a.findings[0].message.find("rank 1 is not slow, so it is not blamed"),
            std::string::npos);
}

TEST(HardwareDecisionTest, HealthyGpusGiveNoFinding) {
  HardwareMetrics m = Node({0.0, 0.01, -0.01, 0.02});
  EXPECT_TRUE(DecideHardware(m, {}, HardwareDetectorOptions()).findings.empty());
}

TEST(HardwareDecisionTest, TheClockGapThresholdIsInclusive) {
  HardwareDetectorOptions opt;
  HardwareMetrics at = Node({0.0, opt.clock_gap, 0.0});
  HardwareAnalysis a = DecideHardware(at, {}, opt);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kGpuClocksLow);
  EXPECT_EQ(a.findings[0].entity.gpu, 1);
  HardwareMetrics below = Node({0.0, opt.clock_gap - 1e-3, 0.0});
  EXPECT_TRUE(DecideHardware(below, {}, opt).findings.empty());
  // Against its max clock (no same-model peers) the threshold is higher.
  below.gpus[1].clock_gap = opt.clock_gap_vs_max - 1e-3;
  below.gpus[1].peer_is_max = true;
  EXPECT_TRUE(DecideHardware(below, {}, opt).findings.empty());
}

TEST(HardwareDecisionTest, ALoweredPowerLimitIsAPowerCapAndNotAlsoClocks) {
  HardwareMetrics m = Node({0.0, 0.15, 0.0});
  m.gpus[1].stats.power_limit_w = 450;
  HardwareAnalysis a = DecideHardware(m, {}, HardwareDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kGpuPowerCap);
  EXPECT_NE(a.findings[0].message.find("below its default 700 W"), std::string::npos)
      << a.findings[0].message;
}

TEST(HardwareDecisionTest, ALimitLoweredMidRunIsAPowerCapFromThatChange) {
  HardwareMetrics m = Node({0.0, 0.15, 0.0});
  m.gpus[1].stats.power_limit_w = 300;
  m.gpus[1].stats.power_limit_changes = {
      PowerLimitChange{5'000'000'000, 700, 300, SourceRef{0, 7}}};
  HardwareAnalysis a = DecideHardware(m, {}, HardwareDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u) << a.findings.back().message;
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.code, FindingCode::kGpuPowerCap);
  EXPECT_EQ(f.onset_time, 5'000'000'000);
  EXPECT_NE(f.message.find("lowered from 700 W to 300 W at 1970-01-01T00:00:05.000Z, below its "
                           "default 700 W"),
            std::string::npos)
      << f.message;
  ASSERT_FALSE(f.evidence.empty());
  ASSERT_TRUE(f.evidence[0].source);
  EXPECT_EQ(f.evidence[0].source->line, 7u);
}

TEST(HardwareDecisionTest, ALimitLoweredAndRaisedBackIsComparedAtItsLowest) {
  HardwareMetrics m = Node({0.0, 0.0, 0.0});
  m.gpus[1].stats.power_limit_w = 700;  // in force at the end
  m.gpus[1].stats.power_limit_changes = {
      PowerLimitChange{5'000'000'000, 700, 300, SourceRef{0, 7}},
      PowerLimitChange{9'000'000'000, 300, 700, SourceRef{0, 11}}};
  HardwareAnalysis a = DecideHardware(m, {}, HardwareDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u) << a.findings.back().message;
  EXPECT_EQ(a.findings[0].code, FindingCode::kGpuPowerCap);
  EXPECT_NE(a.findings[0].message.find("(raised to 700 W at 1970-01-01T00:00:09.000Z)"),
            std::string::npos)
      << a.findings[0].message;
}

TEST(HardwareDecisionTest, ALimitRaisedMidRunIsAnEventNotACause) {
  HardwareMetrics m = Node({0.0, 0.0, 0.0});
  m.gpus[2].stats.power_limit_changes = {
      PowerLimitChange{5'000'000'000, 600, 700, SourceRef{0, 7}}};
  HardwareAnalysis a = DecideHardware(m, Suspect(2), HardwareDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u) << a.findings.back().message;
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.code, FindingCode::kGpuPowerLimitChanged);
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_EQ(f.onset_time, 5'000'000'000);
  EXPECT_EQ(f.entity.gpu, 2);
  EXPECT_NE(f.message.find("raised from 600 W to 700 W"), std::string::npos) << f.message;
  EXPECT_FALSE(f.cause);
}

// Three H100s of node-00 (ranks 0-2), 10 samples each at full load; GPU 2
// at 1700 MHz, the others at 1980 MHz.
laggard::Run TinyRun() {
  laggard::Run run;
  run.files.push_back(InputFileInfo{"dmon.txt", "nvidia-smi-dmon", 0, 0, true});
  RunBuilder b;
  for (int32_t r = 0; r < 3; ++r) {
    b.SetHost(r, "node-00", "", 0);
    b.SetLocalGpu(r, r, "", 0);
    b.AddStep(r, 0, 1'000'000'000, 0, SourceRef{0, 1});
  }
  b.Finalize(run);
  for (int32_t gpu = 0; gpu < 3; ++gpu) {
    GpuRecord g;
    g.host = "node-00";
    g.index = gpu;
    g.facts.name = "NVIDIA H100 80GB HBM3";
    g.facts.max_sm_clock_mhz = 1980;
    for (int t = 0; t < 10; ++t) {
      GpuSample s;
      s.time_ns = static_cast<TimeNs>(t) * 1'000'000'000;
      s.util_pct = 100;
      s.sm_clock_mhz = gpu == 2 ? 1700 : 1980;
      s.temp_c = 60;
      s.src = SourceRef{0, static_cast<uint32_t>(t + 1)};
      g.samples.push_back(s);
    }
    run.hardware.gpus.push_back(g);
  }
  return run;
}

TEST(HardwareMetricsTest, AGpuBelowItsPeersMeasuresItsClockGapAndOverlap) {
  laggard::Run run = TinyRun();
  RankMap ranks = RankMap::Build(run, std::nullopt);
  // Rank 2 slow from 3 s to 4 s: its samples then are below the clock threshold.
  std::vector<SuspectRank> suspects = {SuspectRank{2, 3'000'000'000, 4'000'000'000}};
  HardwareDetectorOptions opt;
  HardwareMetrics m = MeasureHardware(run, ranks, suspects, opt);
  ASSERT_EQ(m.gpus.size(), 3u);
  const GpuMetrics& g = m.gpus[2];
  EXPECT_EQ(g.stats.rank, 2);
  EXPECT_EQ(g.stats.loaded_samples, 10u);
  EXPECT_EQ(g.stats.sm_clock_mhz, 1700);
  EXPECT_EQ(g.stats.peer_sm_clock_mhz, 1980);
  EXPECT_FALSE(g.peer_is_max);
  EXPECT_NEAR(*g.clock_gap, 1 - 1700.0 / 1980, 1e-12);
  EXPECT_EQ(g.clock_overlap, true);
  EXPECT_EQ(g.thermal_overlap, false);
  EXPECT_FALSE(m.gpus[0].clock_overlap);  // rank 0 is not suspected
  ASSERT_TRUE(g.source);                  // no facts: the first sample
  EXPECT_EQ(g.source->line, 1u);

  HardwareAnalysis a = DecideHardware(m, suspects, opt);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kGpuClocksLow);
  EXPECT_EQ(a.findings[0].overlaps_slow_steps, true);
  HardwareAnalysis whole = AnalyzeHardware(run, ranks, suspects, opt);
  ASSERT_EQ(whole.findings.size(), 1u);
  EXPECT_EQ(whole.findings[0].message, a.findings[0].message);
}

// The driver's violation counters between samples are the time throttled:
// GPU 1's thermal counter grows 3 s of every 10 s (30%) while no sample
// catches the thermal reason active, and its clock sits 14% below its
// peers': thermal, said from the counters. A counter that goes back (a
// driver reload) is skipped.
TEST(HardwareMetricsTest, ViolationCountersGiveTheShareOfTimeThrottled) {
  laggard::Run run = TinyRun();
  for (GpuRecord& g : run.hardware.gpus) {
    for (size_t t = 0; t < g.samples.size(); ++t) {
      const int64_t held = g.index == 1 ? static_cast<int64_t>(t) * 300'000'000 : 0;
      // From sample 5 on the driver was reloaded: the counter starts again.
      g.samples[t].thermal_violation_ns =
          t < 5 ? 1'000'000'000'000 + held : held - (g.index == 1 ? 1'500'000'000 : 0);
      g.samples[t].power_violation_ns = 5'000;
    }
  }
  RankMap ranks = RankMap::Build(run, std::nullopt);
  HardwareDetectorOptions opt;
  HardwareMetrics m = MeasureHardware(run, ranks, {}, opt);
  ASSERT_EQ(m.gpus.size(), 3u);
  const GpuStats& st = m.gpus[1].stats;
  ASSERT_TRUE(st.thermal_counter_share.has_value());
  // Pair (4,5) is skipped (the counter went back at 5): 8 s, 2.4 s held.
  EXPECT_NEAR(*st.thermal_counter_share, 0.3, 1e-9);
  EXPECT_EQ(st.thermal_counter_span_ns, 8'000'000'000);
  EXPECT_EQ(st.power_counter_span_ns, 9'000'000'000);  // the power counter's pairs: all 9
  EXPECT_EQ(st.power_counter_share, 0.0);
  EXPECT_EQ(m.gpus[0].stats.thermal_counter_share, 0.0);
  m.gpus[1].stats.sm_clock_mhz = 1700;
  m.gpus[1].clock_gap = 1 - 1700.0 / 1980;
  HardwareAnalysis a = DecideHardware(m, {}, opt);
  const Finding* thermal = nullptr;
  for (const Finding& f : a.findings) {
    if (f.code != FindingCode::kGpuThermal) continue;
    EXPECT_EQ(thermal, nullptr) << f.message;  // GPU 1's only
    thermal = &f;
  }
  ASSERT_NE(thermal, nullptr);
  EXPECT_EQ(thermal->entity.gpu, 1);
  EXPECT_NE(thermal->message.find("held down for heat 30% of the 8 s between samples"),
            std::string::npos)
      << thermal->message;
  EXPECT_NE(thermal->message.find("though no sample caught the reason active"), std::string::npos)
      << thermal->message;
  // Sample times guessed (a file without dates): no share is measured.
  run.hardware.gpus[1].time_is_approximate = true;
  HardwareMetrics guessed = MeasureHardware(run, ranks, {}, opt);
  EXPECT_FALSE(guessed.gpus[1].stats.thermal_counter_share.has_value());
  EXPECT_FALSE(guessed.gpus[1].stats.power_counter_share.has_value());
}

// One snapshot of the counters: GPU 2 held down for heat 3 h since its
// driver loaded against 5 min on its peers (a warning: where to look); GPU
// 3's 30 min is 3x its peers' only; a lone GPU needs an hour (info). A
// GPU with a thermal finding or a share between samples gets none.
TEST(HardwareDecisionTest, ALongThrottleHistoryAgainstItsPeersIsAWarning) {
  HardwareMetrics m = Node({0.0, 0.0, 0.0, 0.0});
  for (GpuMetrics& g : m.gpus) {
    g.stats.thermal_history_s = 300;
    g.peer_thermal_history_s = 300;
  }
  m.gpus[2].stats.thermal_history_s = 3 * 3600;
  m.gpus[3].stats.thermal_history_s = 1800;
  m.gpus[3].peer_thermal_history_s = 600;
  HardwareAnalysis a = DecideHardware(m, {}, HardwareDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u) << a.findings.back().message;
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.code, FindingCode::kGpuThrottleHistory);
  EXPECT_EQ(f.entity.gpu, 2);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.cause, "thermal");
  EXPECT_NE(f.message.find("held down for heat 3.0 h in all since its driver loaded"),
            std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("against a median of 5 min on its same-model peers"), std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("not active in this snapshot"), std::string::npos) << f.message;

  // Alone: an hour is the floor, and then it is information.
  GpuMetrics lone = Gpu(0, 0.0);
  lone.stats.power_history_s = 1.5 * 3600;
  lone.stats.power_reason_now = true;
  std::optional<Finding> info = ThrottleHistoryFinding(lone, HardwareDetectorOptions());
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->severity, Severity::kInfo);
  EXPECT_NE(info->message.find("active in this snapshot too"), std::string::npos) << info->message;
  lone.stats.power_history_s = 0.9 * 3600;
  EXPECT_FALSE(ThrottleHistoryFinding(lone, HardwareDetectorOptions()).has_value());
  // Samples with a share between them: the run's own measure speaks.
  lone.stats.power_history_s = 5 * 3600;
  lone.stats.power_counter_share = 0.0;
  EXPECT_FALSE(ThrottleHistoryFinding(lone, HardwareDetectorOptions()).has_value());
}

// Each GPU's peers are the other GPUs of its model: two models, repeated
// clocks, odd and even peer counts, a GPU without a clock. The peer medians
// must be the medians of exactly those others.
TEST(HardwareMetricsTest, PeerMediansLeaveOutTheGpuItselfWithinItsModel) {
  laggard::Run run;
  run.files.push_back(InputFileInfo{"dmon.txt", "nvidia-smi-dmon", 0, 0, true});
  const std::vector<std::pair<const char*, std::optional<double>>> fleet = {
      {"H100", 1980}, {"H100", 1700}, {"H100", 1980},         {"H100", 1800}, {"H100", 1900},
      {"A100", 1410}, {"A100", 1300}, {"A100", std::nullopt}, {"A100", 1350}};
  for (size_t i = 0; i < fleet.size(); ++i) {
    GpuRecord g;
    g.host = "node-00";
    g.index = static_cast<int32_t>(i);
    g.facts.name = fleet[i].first;
    for (int t = 0; t < 3; ++t) {
      GpuSample x;
      x.time_ns = t * 1'000'000'000LL;
      x.util_pct = 100;
      if (fleet[i].second) x.sm_clock_mhz = *fleet[i].second;
      g.samples.push_back(x);
    }
    run.hardware.gpus.push_back(g);
  }
  RankMap ranks = RankMap::Build(run, std::nullopt);
  HardwareMetrics m = MeasureHardware(run, ranks, {}, HardwareDetectorOptions());
  ASSERT_EQ(m.gpus.size(), fleet.size());
  auto direct = [&](size_t self) -> std::optional<double> {
    std::vector<double> v;
    for (size_t i = 0; i < fleet.size(); ++i) {
      if (i != self && std::string_view(fleet[i].first) == fleet[self].first && fleet[i].second)
        v.push_back(*fleet[i].second);
    }
    if (v.size() < 2) return std::nullopt;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  for (size_t i = 0; i < fleet.size(); ++i) {
    std::optional<double> want = direct(i);
    // Without a peer median the comparison falls back to the GPU's maximum
    // clock, which none of these has.
    EXPECT_EQ(m.gpus[i].stats.peer_sm_clock_mhz, want) << "GPU " << i;
  }
  EXPECT_EQ(m.gpus[0].stats.peer_sm_clock_mhz, 1850);  // 1700 1800 1900 1980
  EXPECT_EQ(m.gpus[7].stats.peer_sm_clock_mhz, 1350);  // 1300 1350 1410
}

TEST(HardwareMetricsTest, ALimitChangeBetweenSamplesIsMeasuredAtItsSample) {
  laggard::Run run = TinyRun();
  for (GpuSample& s : run.hardware.gpus[1].samples)
    s.power_limit_w = s.time_ns < 4'000'000'000 ? 700 : 350;
  RankMap ranks = RankMap::Build(run, std::nullopt);
  HardwareMetrics m = MeasureHardware(run, ranks, {}, HardwareDetectorOptions());
  EXPECT_TRUE(m.gpus[0].stats.power_limit_changes.empty());
  ASSERT_EQ(m.gpus[1].stats.power_limit_changes.size(), 1u);
  const PowerLimitChange& c = m.gpus[1].stats.power_limit_changes[0];
  EXPECT_EQ(c.time_ns, 4'000'000'000);
  EXPECT_EQ(c.from_w, 700);
  EXPECT_EQ(c.to_w, 350);
  EXPECT_EQ(c.src.line, 5u);
}

// Two inputs of one GPU taken at other times (a `nvidia-smi -q` dump at the
// end, a query CSV through the run) that print other limits: a change, not a
// disagreement; the limit in force is the latest sample's.
TEST(HardwareMergeTest, ALimitThatChangedIsNotAConflictingFact) {
  laggard::Run run;
  run.files.push_back(InputFileInfo{"query.csv", "nvidia-smi-query", 0, 0, true});
  run.files.push_back(InputFileInfo{"q.txt", "nvidia-smi-q", 0, 0, true});
  RunBuilder b;
  GpuRecord csv;
  csv.host = "node-00";
  csv.files = {0};
  csv.facts.enforced_power_limit_w = 700;  // the CSV's first row
  for (int t = 0; t < 4; ++t) {
    GpuSample s;
    s.time_ns = static_cast<TimeNs>(t) * 1'000'000'000;
    s.power_limit_w = t < 2 ? 700 : 300;
    csv.samples.push_back(s);
  }
  GpuRecord dump = csv;
  dump.files = {1};
  dump.facts.enforced_power_limit_w = 300;
  dump.samples.resize(1);
  dump.samples[0].time_ns = 5'000'000'000;
  dump.samples[0].power_limit_w = 300;
  b.AddGpu(csv);
  b.AddGpu(dump);
  b.Finalize(run);
  EXPECT_EQ(b.diagnostics().count(DiagCode::kHwConflictingFacts), 0u);
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  EXPECT_EQ(run.hardware.gpus[0].facts.enforced_power_limit_w, 300);
  EXPECT_EQ(run.hardware.gpus[0].samples.size(), 5u);
}

}  // namespace
}  // namespace laggard
