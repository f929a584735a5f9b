// The host CPU detector (analysis/host/host_cpu_detector.h) and its verdict rule
// (verdict/host_cpu_culprit.cc), from step tables with the CPU columns
// python/laggard_step.py and bench/realjobs/ddp_job.py write.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "analysis/analyze_run.h"
#include "base/stats/robust_stats.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

// A step table of `ranks` ranks, 30 steps of 1 s; `wait_ms(rank)` is the
// rank's run-queue wait per step, `compute_ms(rank)` its compute time.
std::string Table(int ranks, auto wait_ms, auto compute_ms) {
  std::string t = "rank,step,step_time_ms,compute_ms,cpu_ms,cpu_wait_ms\n";
  for (int step = 0; step < 30; ++step) {
    for (int r = 0; r < ranks; ++r) {
      // A little noise per step and rank, as a real scheduler gives.
      double jitter = ((step * 7 + r * 3) % 5) * 0.4;
      t += fmt::format("{},{},1000,{},{},{}\n", r, step, compute_ms(r) + jitter, 480 + jitter,
                       wait_ms(r) + jitter);
    }
  }
  return t;
}

struct Diagnosed {
  laggard::Run run;
  Analyses a;
  Verdict v;
};

Diagnosed Diagnose(const std::string& table) {
  TempDir dir;
  WriteFile(dir.File("steps.csv"), table);
  Diagnosed d;
  d.run = IngestPaths({dir.path()});
  d.a = AnalyzeRun(d.run, AnalysisOptions());
  d.v = DecideVerdict(d.run, d.a);
  return d;
}

TEST(HostCpuDetectorTest, ARankThatWaitsForACpuIsHostContention) {
  // Rank 3 shares its core with a hog: it waits 450 ms a step, its compute
  // stretches to 950 ms; its CPU time is its peers'.
  Diagnosed d = Diagnose(Table(
      4, [](int r) { return r == 3 ? 450.0 : 1.0; }, [](int r) { return r == 3 ? 950.0 : 500.0; }));
  ASSERT_EQ(d.run.ranks[3].cpu.size(), 30u);
  EXPECT_EQ(d.run.ranks[3].cpu[0].runq_wait_ns, 451'600'000);
  ASSERT_EQ(d.a.host_cpu.findings.size(), 1u);
  const Finding& f = d.a.host_cpu.findings[0];
  EXPECT_EQ(f.code, FindingCode::kHostCpuContention);
  EXPECT_EQ(f.entity.rank, 3);
  EXPECT_NEAR(f.slowdown.value_or(0), 0.45 / 0.55, 0.02);
  EXPECT_GE(f.confidence, 0.85);
  EXPECT_NE(f.evidence.back().text.find("the same work"), std::string::npos)
      << f.evidence.back().text;
  ASSERT_FALSE(d.v.culprits.empty());
  const Culprit& c = d.v.culprits[0];
  EXPECT_EQ(c.entity.rank, 3);
  EXPECT_EQ(c.cause_class, CauseClass::kHostStall);
  EXPECT_EQ(c.cause, "host_contention");
  ASSERT_FALSE(d.v.next_steps.empty());
  EXPECT_NE(d.v.next_steps[0].find("taskset"), std::string::npos) << d.v.next_steps[0];
}

// Four ranks on two cores, ranks 0 and 2 on one 1.5x slower, a busy loop on
// the other (bench/realjobs w4_cpu_hog, cores 1.7x apart): ranks 1 and 3 wait
// 320 ms a step against 260, 23% more (under min_excess_over_peers), but
// 2.0 s per second on a CPU against 1.08: named for the host.
std::string TwoCoreTable(double hog_wait_ms, double hog_cpu_ms) {
  std::string t = "rank,step,step_time_ms,cpu_ms,cpu_wait_ms\n";
  for (int step = 0; step < 30; ++step) {
    for (int r = 0; r < 4; ++r) {
      double jitter = ((step * 7 + r * 3) % 5) * 0.4;
      bool hog_core = r % 2 == 1;
      t += fmt::format("{},{},600,{},{}\n", r, step, (hog_core ? hog_cpu_ms : 240.0) + jitter,
                       (hog_core ? hog_wait_ms : 260.0) + jitter);
    }
  }
  return t;
}

TEST(HostCpuDetectorTest, ARankWaitingTwiceItsCpuTimeIsContentionOnUnequalCores) {
  Diagnosed d = Diagnose(TwoCoreTable(320, 160));
  std::vector<int32_t> named;
  for (const Finding& f : d.a.host_cpu.findings) {
    if (f.code != FindingCode::kHostCpuContention) continue;
    named.push_back(*f.entity.rank);
    bool said = false;
    for (const Evidence& e : f.evidence)
      said |= e.text.find("per second it runs") != std::string::npos;
    EXPECT_TRUE(said) << f.message;
  }
  EXPECT_EQ(named, (std::vector<int32_t>{1, 3}));
}

TEST(HostCpuDetectorTest, EachWaitPerCpuFloorHolds) {
  auto contention = [](const std::string& table) {
    Diagnosed d = Diagnose(table);
    return std::count_if(
        d.a.host_cpu.findings.begin(), d.a.host_cpu.findings.end(),
        [](const Finding& f) { return f.code == FindingCode::kHostCpuContention; });
  };
  // Under min_wait_per_cpu: 1.4 s a second against the peers' 0.5 (its
  // extra wait 23% of theirs).
  std::string low = "rank,step,step_time_ms,cpu_ms,cpu_wait_ms\n";
  // Under min_wait_per_cpu_over_peers: every rank waits ~2 s a second
  // (three threads to a core), ranks 1 and 3 2.6 (their extra wait 23%).
  std::string alike = low;
  // Runnable under min_runnable_share of the step: 320 + 160 of 1000 ms.
  std::string blocked = low;
  for (int step = 0; step < 30; ++step) {
    for (int r = 0; r < 4; ++r) {
      double jitter = ((step * 7 + r * 3) % 5) * 0.4;
      bool odd = r % 2 == 1;
      low += fmt::format("{},{},600,{},{}\n", r, step, (odd ? 229.0 : 520.0) + jitter,
                         (odd ? 320.0 : 260.0) + jitter);
      alike += fmt::format("{},{},600,{},{}\n", r, step, (odd ? 123.0 : 130.0) + jitter,
                           (odd ? 320.0 : 260.0) + jitter);
      blocked += fmt::format("{},{},1000,{},{}\n", r, step, (odd ? 160.0 : 240.0) + jitter,
                             (odd ? 320.0 : 260.0) + jitter);
    }
  }
  EXPECT_EQ(contention(low), 0);
  EXPECT_EQ(contention(alike), 0);
  EXPECT_EQ(contention(blocked), 0);
  // The same ranks runnable most of a 600 ms step are named.
  EXPECT_EQ(contention(TwoCoreTable(320, 160)), 2);
}

// ExplainVariableWorkByHostCpu on 4 ranks whose CPU time per profiled step
// (30-39) is `cpu_ms(rank, step)`, each waiting `wait_share` of its 100 ms
// step: whether the variable-work finding is demoted to info.
bool Demoted(auto cpu_ms, double wait_share = 0.3, bool cpu_only = true, int steps = 10,
             LogStepRange profiled = LogStepRange{30, 39}) {
  Run run;
  HostCpuAnalysis host;
  for (int32_t r = 0; r < 4; ++r) {
    StepSeries s;
    s.info.rank = r;
    RankCpuStats st;
    st.rank = r;
    st.step_ns = 100'000'000;
    st.wait_ns = static_cast<DurationNs>(wait_share * 1e8);
    double window = 0;
    for (int step = 30; step < 30 + steps; ++step) {
      double ms = cpu_ms(r, step);
      s.cpu.push_back(StepCpu{step, static_cast<DurationNs>(ms * 1e6), std::nullopt, std::nullopt});
      window += ms * 1e6 / steps;
    }
    st.window_cpu_ns = static_cast<DurationNs>(window);
    run.ranks.push_back(std::move(s));
    host.ranks.push_back(st);
  }
  std::vector<Finding> traces = {MakeFinding(FindingCode::kTraceVariableWork)};
  traces[0].next_steps = {"balance the work per rank"};
  ExplainVariableWorkByHostCpu(run, profiled, cpu_only, host, traces, HostCpuDetectorOptions());
  return traces[0].severity == Severity::kInfo && traces[0].next_steps.empty();
}

TEST(HostCpuDetectorTest, VariableWorkOnSharedCoresWithSteadyCpuTimeIsInformation) {
  auto steady = [](int r, int step) { return 24.0 + ((step * 7 + r * 3) % 5) * 0.2; };
  EXPECT_TRUE(Demoted(steady));
  // A profiled range as wide as a corrupt trace's step numbers can make it:
  // the steps with CPU times are read, nothing sized by the range.
  EXPECT_TRUE(Demoted(steady, 0.3, true, 10, LogStepRange{-(int64_t{1} << 62), int64_t{1} << 62}));
  // Negative controls: each keeps the finding.
  EXPECT_FALSE(Demoted(steady, 0.3, /*cpu_only=*/false));  // a GPU job
  EXPECT_FALSE(Demoted(steady, 0.01));                     // no rank waits for a CPU
  EXPECT_FALSE(Demoted(steady, 0.3, true, 2));             // 2 profiled steps
  // The CPU time varies with the work: ranks 0 and 2, then 1 and 3, do 1.5x.
  EXPECT_FALSE(Demoted([](int r, int step) { return step % 2 == r % 2 ? 36.0 : 24.0; }));
  // Rank 3 does 1.3x every step (the MAD of 4 ranks does not see one).
  EXPECT_FALSE(Demoted([&](int r, int step) { return steady(r, step) * (r == 3 ? 1.3 : 1); }));
}

TEST(HostCpuDetectorTest, ARankWaitingForABusierCoRunnerIsNotContention) {
  // Rank 1 and 3's core: no loop, their own work heavier (wait 1.3 s per
  // second run): what two job ranks sharing a core give, not a third thread.
  Diagnosed d = Diagnose(TwoCoreTable(320, 246));
  for (const Finding& f : d.a.host_cpu.findings)
    EXPECT_NE(f.code, FindingCode::kHostCpuContention) << f.message;
}

TEST(HostCpuDetectorTest, ASlowRankThatDoesNotWaitStaysComputeSlow) {
  // Rank 3 does more work (compute 1.9x, CPU time too), nobody waits.
  Diagnosed d = Diagnose(Table(
      4, [](int) { return 1.0; }, [](int r) { return r == 3 ? 950.0 : 500.0; }));
  EXPECT_TRUE(d.a.host_cpu.findings.empty());
  ASSERT_FALSE(d.v.culprits.empty());
  EXPECT_EQ(d.v.culprits[0].entity.rank, 3);
  EXPECT_NE(d.v.culprits[0].cause, "host_contention");
}

TEST(HostCpuDetectorTest, RanksThatAllShareCoresAlikeNameNobody) {
  // Four ranks on two cores: every rank waits about half its step; one a
  // little more, by the scheduler's luck.
  Diagnosed d = Diagnose(Table(
      4, [](int r) { return r == 1 ? 520.0 : 450.0; }, [](int) { return 950.0; }));
  EXPECT_TRUE(d.a.host_cpu.findings.empty());
  for (const Culprit& c : d.v.culprits) EXPECT_NE(c.cause, "host_contention");
}

TEST(HostCpuDetectorTest, NamesTheWaitingRankWhenStepTimesAreSynchronised) {
  // Equal compute columns (the job logged none that differ): the wait alone
  // names rank 1.
  Diagnosed d = Diagnose(Table(
      2, [](int r) { return r == 1 ? 300.0 : 0.5; }, [](int) { return 700.0; }));
  ASSERT_EQ(d.a.host_cpu.findings.size(), 1u);
  ASSERT_EQ(d.v.culprits.size(), 1u);
  EXPECT_EQ(d.v.culprits[0].entity.rank, 1);
  EXPECT_EQ(d.v.culprits[0].cause, "host_contention");
}

TEST(HostCpuDetectorTest, AWaitingPairOutweighsAStepOnlyRankOfUnknownCause) {
  // Four ranks on two cores, a hog on the second: ranks 1 and 3 wait 60 ms
  // a step against 38 ms; rank 0's steps read 7% long with no cause
  // (bench/realjobs w4_cpu_hog): the measured wait names 1 and 3.
  std::string t = "rank,step,step_time_ms,cpu_ms,cpu_wait_ms\n";
  for (int step = 0; step < 30; ++step) {
    for (int r = 0; r < 4; ++r) {
      double jitter = ((step * 7 + r * 3) % 5) * 0.4;
      t += fmt::format("{},{},{},{},{}\n", r, step, (r == 0 ? 134 : 125) + jitter, 35 + jitter,
                       (r % 2 == 1 ? 72 : 49) + jitter);
    }
  }
  Diagnosed d = Diagnose(t);
  ASSERT_EQ(d.a.host_cpu.findings.size(), 2u);
  ASSERT_EQ(d.v.culprits.size(), 2u);
  for (const Culprit& c : d.v.culprits) {
    EXPECT_TRUE(c.entity.rank == 1 || c.entity.rank == 3) << c.entity.rank.value_or(-1);
    EXPECT_EQ(c.cause, "host_contention");
  }
  EXPECT_NE(d.v.culprits[0].evidence.back().find("rank 0 (+7%)"), std::string::npos)
      << d.v.culprits[0].evidence.back();
}

// Four ranks, nobody waits; rank 3's compute and probe run `compute` and
// `probe` times its peers'.
std::string ProbeTable(double compute, double probe) {
  std::string t = "rank,step,step_time_ms,compute_ms,cpu_ms,cpu_wait_ms,cpu_probe_us\n";
  for (int step = 0; step < 30; ++step) {
    for (int r = 0; r < 4; ++r) {
      double jitter = ((step * 7 + r * 3) % 5) * 0.004;
      double c = r == 3 ? compute : 1.0, p = r == 3 ? probe : 1.0;
      t += fmt::format("{},{},1000,{},{},1,{}\n", r, step, 500 * c * (1 + jitter),
                       480 * c * (1 + jitter), 200 * p * (1 + jitter));
    }
  }
  return t;
}

TEST(HostCpuDetectorTest, ARankOnASlowerCpuIsHostContention) {
  // Rank 3 computes 1.2x as long, and its probe runs 1.2x as long: its CPU.
  Diagnosed d = Diagnose(ProbeTable(1.2, 1.2));
  ASSERT_EQ(d.a.host_cpu.findings.size(), 1u);
  const Finding& f = d.a.host_cpu.findings[0];
  EXPECT_EQ(f.code, FindingCode::kHostCpuSlow);
  EXPECT_EQ(f.entity.rank, 3);
  EXPECT_NEAR(f.slowdown.value_or(0), 0.2, 0.01);
  ASSERT_FALSE(d.v.culprits.empty());
  EXPECT_EQ(d.v.culprits[0].entity.rank, 3);
  EXPECT_EQ(d.v.culprits[0].cause, "host_contention");
  EXPECT_EQ(d.v.culprits[0].cause_class, CauseClass::kHostStall);
}

TEST(HostCpuDetectorTest, MoreWorkOnAnEqualCpuIsNotTheHost) {
  // Compute 1.5x, probe as its peers': more work, not a slower CPU.
  Diagnosed d = Diagnose(ProbeTable(1.5, 1.02));
  // Its thread used 1.5x the CPU time per step: more work, a finding.
  ASSERT_EQ(d.a.host_cpu.findings.size(), 1u);
  EXPECT_EQ(d.a.host_cpu.findings[0].code, FindingCode::kStepCpuTimeHigh);
  EXPECT_NEAR(d.a.host_cpu.findings[0].slowdown.value_or(0), 0.5, 0.01);
  ASSERT_FALSE(d.v.culprits.empty());
  // Step times alone do not say why (cause unknown): not the host.
  EXPECT_EQ(d.v.culprits[0].entity.rank, 3);
  EXPECT_NE(d.v.culprits[0].cause_class, CauseClass::kHostStall);
  // A slower CPU that explains a part of it only: not the host, with the
  // probe in its evidence.
  Diagnosed part = Diagnose(ProbeTable(1.6, 1.15));
  ASSERT_FALSE(part.v.culprits.empty());
  EXPECT_NE(part.v.culprits[0].cause_class, CauseClass::kHostStall);
  bool noted = false;
  for (const std::string& e : part.v.culprits[0].evidence)
    noted |= e.find("explains part of it") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(HostCpuDetectorTest, MildMoreWorkIsMeasuredStepByStep) {
  // Compute 1.1x on a CPU as fast: 30 steps, a tight spread.
  Diagnosed d = Diagnose(ProbeTable(1.1, 1.0));
  ASSERT_EQ(d.a.host_cpu.findings.size(), 1u);
  const Finding& f = d.a.host_cpu.findings[0];
  EXPECT_EQ(f.code, FindingCode::kStepCpuTimeHigh);
  EXPECT_EQ(f.entity.rank, 3);
  EXPECT_NEAR(f.slowdown.value_or(0), 0.1, 0.01);
  const RankCpuStats& r = d.a.host_cpu.ranks[3];
  EXPECT_EQ(r.work_steps, 30u);
  EXPECT_TRUE(r.work_probed);
  EXPECT_GT(r.work_z, HostCpuDetectorOptions().min_cpu_time_z);
  // 1.03x: inside the 5% band, however many steps.
  EXPECT_TRUE(Diagnose(ProbeTable(1.03, 1.0)).a.host_cpu.findings.empty());
}

TEST(HostCpuDetectorTest, WorkPerProbeIsTheMedianOfCpuTimeOverProbeTime) {
  // Rank 3 computes 1.2x on a CPU 1.2x as slow: its CPU time over its probe
  // time is its peers'; the 1.5x rank on an equal CPU reads 1.5x theirs.
  Diagnosed slow = Diagnose(ProbeTable(1.2, 1.2));
  Diagnosed more = Diagnose(ProbeTable(1.5, 1.0));
  const RankCpuStats& s3 = slow.a.host_cpu.ranks[3];
  const RankCpuStats& s0 = slow.a.host_cpu.ranks[0];
  const RankCpuStats& m3 = more.a.host_cpu.ranks[3];
  const RankCpuStats& m0 = more.a.host_cpu.ranks[0];
  ASSERT_TRUE(s3.work_per_probe && s0.work_per_probe && m3.work_per_probe && m0.work_per_probe);
  EXPECT_EQ(s3.work_per_probe_steps, 30u);
  EXPECT_NEAR(*s3.work_per_probe / *s0.work_per_probe, 1.0, 0.03);
  EXPECT_NEAR(*m3.work_per_probe / *m0.work_per_probe, 1.5, 0.05);
}

TEST(HostCpuDetectorTest, TheProfiledStepsAndTheStepsOutsideThemAreMeasuredApart) {
  // 40 steps, the profiler's 30-39: 20 ms of CPU time there, 10 ms outside.
  laggard::Run run;
  run.ranks.emplace_back();
  for (int64_t step = 0; step < 40; ++step) {
    run.ranks[0].cpu.push_back(StepCpu{.step = step,
                                       .on_cpu_ns = step >= 30 ? 20'000'000 : 10'000'000,
                                       .probe_ns = step >= 30 ? 90'000 : 50'000});
  }
  HostCpuAnalysis a;
  a.ranks.push_back(RankCpuStats{});
  MeasureWindowProbes(run, LogStepRange{.first = 30, .last = 39}, a);
  EXPECT_EQ(a.ranks[0].window_cpu_ns.value_or(0), 20'000'000);
  EXPECT_EQ(a.ranks[0].window_probe_ns.value_or(0), 90'000);
  EXPECT_EQ(a.ranks[0].outside_cpu_ns.value_or(0), 10'000'000);
  EXPECT_EQ(a.ranks[0].outside_probe_ns.value_or(0), 50'000);
  // Nine steps outside: too few to say what the run did without the window.
  HostCpuAnalysis few;
  few.ranks.push_back(RankCpuStats{});
  MeasureWindowProbes(run, LogStepRange{.first = 9, .last = 39}, few);
  EXPECT_FALSE(few.ranks[0].outside_cpu_ns.has_value());
  EXPECT_FALSE(few.ranks[0].outside_probe_ns.has_value());
  EXPECT_TRUE(few.ranks[0].window_cpu_ns.has_value());
}

// The window noise: each rank's mean CPU time per step over window-long
// stretches of the unprofiled steps (5-14, 10-19, 15-24 of 40: clear of the
// warm-up and of the window 30-39 by 2 steps) against its peers' median.
laggard::Run WindowNoiseRun(int ranks, double rank1_odd_stretch) {
  laggard::Run run;
  for (int r = 0; r < ranks; ++r) {
    run.ranks.emplace_back();
    for (int64_t step = 0; step < 40; ++step) {
      double ms = 10;
      if (r == 0 && step >= 30) ms = 20;  // the window's own excess
      if (r == 0 && step < 5) ms = 30;    // warm-up
      // Rank 1's steps 10-14 (in two stretches) run rank1_odd_stretch x.
      if (r == 1 && step >= 10 && step < 15) ms *= rank1_odd_stretch;
      run.ranks[r].cpu.push_back(
          StepCpu{.step = step, .on_cpu_ns = static_cast<DurationNs>(ms * 1e6)});
    }
  }
  return run;
}

TEST(HostCpuDetectorTest, TheWindowNoiseIsReadOutsideTheWindowAndItsMargins) {
  HostCpuAnalysis calm;
  calm.ranks.resize(4);
  MeasureWindowProbes(WindowNoiseRun(4, 1.0), LogStepRange{.first = 30, .last = 39}, calm);
  ASSERT_TRUE(calm.window_noise.has_value());
  EXPECT_EQ(calm.window_noise_samples, 12u);  // 3 stretches x 4 ranks
  EXPECT_DOUBLE_EQ(*calm.window_noise, 0);    // neither the window nor the warm-up counted
  // Rank 1 at 1.4x in steps 10-14: its two stretches read 1.2x (of 12
  // ratios, 2 at 1.2, 10 at 1.0: the MAD stays 0, a robust spread).
  HostCpuAnalysis odd;
  odd.ranks.resize(4);
  MeasureWindowProbes(WindowNoiseRun(4, 1.4), LogStepRange{.first = 30, .last = 39}, odd);
  EXPECT_DOUBLE_EQ(odd.window_noise.value_or(-1), 0);
  // Two ranks: no peers' median to stray from.
  HostCpuAnalysis two;
  two.ranks.resize(2);
  MeasureWindowProbes(WindowNoiseRun(2, 1.0), LogStepRange{.first = 30, .last = 39}, two);
  EXPECT_FALSE(two.window_noise.has_value());
  // A window of steps 20-29: only 5-14 clears it by 2 steps (4 ratios of
  // the kMinNoiseSamples 6).
  HostCpuAnalysis mid;
  mid.ranks.resize(4);
  MeasureWindowProbes(WindowNoiseRun(4, 1.0), LogStepRange{.first = 20, .last = 29}, mid);
  EXPECT_FALSE(mid.window_noise.has_value());
  EXPECT_EQ(mid.window_noise_samples, 4u);
}

// Ranks at 10, 11, ... ms of CPU time per step (window 30-39 of 40: 3
// stretches a rank). Each rank's peers' median by hand: 3 ranks, 10/11.5,
// 11/11, 12/10.5: MAD 1 - 10/11.5 = 0.1304; 4 ranks, 10/12, 11/12, 12/11,
// 13/11: median 1.0038, MAD 0.1288; 5 ranks: 10/12.5 ... 14/11.5, MAD
// 0.1304. A stray step 10^12 of rank 0 adds no stretch and no time.
TEST(HostCpuDetectorTest, TheWindowNoiseIsEachRanksStrayFromItsPeersMedian) {
  for (auto [ranks, mad] : {std::pair{3, 1 - 10 / 11.5}, std::pair{4, 0.128787878787879},
                            std::pair{5, 1 - 10 / 11.5}}) {
    laggard::Run run;
    for (int r = 0; r < ranks; ++r) {
      run.ranks.emplace_back();
      for (int64_t step = 0; step < 40; ++step)
        run.ranks[r].cpu.push_back(StepCpu{.step = step, .on_cpu_ns = (10 + r) * 1'000'000});
    }
    run.ranks[0].cpu.push_back(StepCpu{.step = 1'000'000'000'000, .on_cpu_ns = 1'000'000});
    HostCpuAnalysis a;
    a.ranks.resize(static_cast<size_t>(ranks));
    MeasureWindowProbes(run, LogStepRange{.first = 30, .last = 39}, a);
    EXPECT_EQ(a.window_noise_samples, 3u * static_cast<size_t>(ranks)) << ranks << " ranks";
    EXPECT_NEAR(a.window_noise.value_or(-1), kMadToSigma * mad, 1e-6) << ranks << " ranks";
  }
}

TEST(HostCpuDetectorTest, TheMeanProbeCapsAPreemptedProbe) {
  // Rank 3's probe 200 us but one step's 20 ms (preempted while probing):
  // capped at 3x its median, the mean reads (29 * 200 + 600) / 30.
  std::string t = "rank,step,step_time_ms,cpu_ms,cpu_probe_us\n";
  for (int step = 0; step < 30; ++step) {
    for (int r = 0; r < 4; ++r) {
      t += fmt::format("{},{},1000,480,{}\n", r, step, r == 3 && step == 7 ? 20000 : 200);
    }
  }
  Diagnosed d = Diagnose(t);
  ASSERT_TRUE(d.a.host_cpu.ranks[3].probe_mean_ns.has_value());
  EXPECT_NEAR(*d.a.host_cpu.ranks[3].probe_mean_ns, (29 * 200e3 + 600e3) / 30, 1);
  EXPECT_NEAR(*d.a.host_cpu.ranks[0].probe_mean_ns, 200e3, 1);
}

TEST(HostCpuDetectorTest, ACoreSlowForHalfTheRunIsNotMoreWork) {
  // Rank 3's core runs 1.5x slower in steps 0-14 (its probe and its CPU
  // time alike), then as fast as its peers'. Over the run its CPU time's
  // median is ~1.25x; in the steps whose probes agree it is 1.0x.
  std::string t = "rank,step,step_time_ms,compute_ms,cpu_ms,cpu_wait_ms,cpu_probe_us\n";
  for (int step = 0; step < 30; ++step) {
    for (int r = 0; r < 4; ++r) {
      double jitter = ((step * 7 + r * 3) % 5) * 0.004;
      double slow = r == 3 && step < 15 ? 1.5 : 1.0;
      t += fmt::format("{},{},1000,{},{},1,{}\n", r, step, 500 * slow * (1 + jitter),
                       480 * slow * (1 + jitter), 200 * slow * (1 + jitter));
    }
  }
  Diagnosed d = Diagnose(t);
  for (const Finding& f : d.a.host_cpu.findings)
    EXPECT_NE(f.code, FindingCode::kStepCpuTimeHigh) << f.message;
  EXPECT_EQ(d.a.host_cpu.ranks[3].work_steps, 15u);
  EXPECT_NEAR(d.a.host_cpu.ranks[3].work_ratio.value_or(0), 1.0, 0.02);
}

// 4 ranks sharing 2 cores in pairs, the second core 1.5x slower (probe
// and CPU time alike): ranks 0 and 2 on the fast core, 1 and 3 on the slow
// one; rank 3 also computes `work` x. Each rank is compared with the peer
// beside it.
std::string PairsTable(double work) {
  std::string t = "rank,step,step_time_ms,compute_ms,cpu_ms,cpu_wait_ms,cpu_probe_us\n";
  for (int step = 0; step < 30; ++step) {
    for (int r = 0; r < 4; ++r) {
      double jitter = ((step * 7 + r * 3) % 5) * 0.004;
      double core = r % 2 == 1 ? 1.5 : 1.0, w = r == 3 ? work : 1.0;
      t += fmt::format("{},{},1000,{},{},1,{}\n", r, step, 500 * core * w * (1 + jitter),
                       480 * core * w * (1 + jitter), 200 * core * (1 + jitter));
    }
  }
  return t;
}

TEST(HostCpuDetectorTest, OnUnequalCoresEachRankIsComparedWithTheOneBesideIt) {
  Diagnosed d = Diagnose(PairsTable(1.3));
  const Finding* more = nullptr;
  for (const Finding& f : d.a.host_cpu.findings) {
    if (f.code == FindingCode::kStepCpuTimeHigh) {
      EXPECT_EQ(more, nullptr) << f.message;
      more = &f;
    }
  }
  ASSERT_NE(more, nullptr);
  EXPECT_EQ(more->entity.rank, 3);
  EXPECT_NEAR(more->slowdown.value_or(0), 0.3, 0.02);  // against rank 1, not 1.95x
  // Rank 1 against rank 3 alone reads low; ranks 0 and 2 read 1.0.
  EXPECT_NEAR(d.a.host_cpu.ranks[1].work_ratio.value_or(0), 1 / 1.3, 0.02);
  EXPECT_NEAR(d.a.host_cpu.ranks[0].work_ratio.value_or(0), 1.0, 0.02);
  // Healthy pairs on unequal cores: no rank does more work.
  Diagnosed healthy = Diagnose(PairsTable(1.0));
  for (const Finding& f : healthy.a.host_cpu.findings)
    EXPECT_NE(f.code, FindingCode::kStepCpuTimeHigh) << f.message;
}

// Probes spread over a 1.6x range, so that each rank's peers as fast
// differ from step to step: every rank's work ratio is the median, over its
// steps, of its CPU time over the median CPU time of the peers whose probe
// is within 5% of its own that step, recomputed here peer by peer.
TEST(HostCpuDetectorTest, PeersAsFastAreThoseWithinTheGapOfItsOwnProbe) {
  constexpr int kRanks = 6, kSteps = 30;
  std::vector<std::vector<double>> cpu(kSteps, std::vector<double>(kRanks));
  std::vector<std::vector<double>> probe = cpu;
  std::string t = "rank,step,step_time_ms,cpu_ms,cpu_wait_ms,cpu_probe_us\n";
  for (int step = 0; step < kSteps; ++step) {
    for (int r = 0; r < kRanks; ++r) {
      // Integers, so that the table holds them exactly.
      probe[step][r] = 50 + (step * 7 + r * 13) % 31;
      cpu[step][r] = 400 + (step * 11 + r * 5) % 37 + 3 * r;
      t += fmt::format("{},{},1000,{},1,{}\n", r, step, cpu[step][r], probe[step][r]);
    }
  }
  Diagnosed d = Diagnose(t);
  ASSERT_EQ(d.a.host_cpu.ranks.size(), static_cast<size_t>(kRanks));
  for (int r = 0; r < kRanks; ++r) {
    std::vector<double> ratios;
    for (int step = 0; step < kSteps; ++step) {
      std::vector<double> same;
      for (int q = 0; q < kRanks; ++q) {
        // Within 5% either way, the bounds included (60 and 63 are peers).
        if (q != r && probe[step][q] * 1.05 >= probe[step][r] &&
            probe[step][q] <= probe[step][r] * 1.05)
          same.push_back(cpu[step][q]);
      }
      if (!same.empty()) ratios.push_back(cpu[step][r] / *Median(same));
    }
    const RankCpuStats& got = d.a.host_cpu.ranks[r];
    if (ratios.size() < HostCpuDetectorOptions().min_cpu_time_steps) {
      EXPECT_FALSE(got.work_ratio.has_value()) << "rank " << r;
      continue;
    }
    EXPECT_EQ(got.work_steps, ratios.size()) << "rank " << r;
    ASSERT_TRUE(got.work_ratio.has_value()) << "rank " << r;
    EXPECT_NEAR(*got.work_ratio, *Median(ratios), 1e-9) << "rank " << r;
  }
}

TEST(HostCpuDetectorTest, ARankWithNoPeerOnACoreAsFastIsNotMeasured) {
  // Rank 3's core is 1.5x slower in every step, and no peer shares it.
  Diagnosed d = Diagnose(ProbeTable(1.5, 1.5));
  EXPECT_FALSE(d.a.host_cpu.ranks[3].work_ratio.has_value());
  for (const Finding& f : d.a.host_cpu.findings)
    EXPECT_NE(f.code, FindingCode::kStepCpuTimeHigh) << f.message;
}

TEST(HostCpuDetectorTest, StepsToTellScaleAsTheSquareOfTheShortfall) {
  // 1.08x over 10 kept steps of 20 at 2.5 standard errors: 5 needs 4x the
  // kept steps, 40, so 80 of the run's.
  RankCpuStats r;
  r.work_ratio = 1.08;
  r.work_steps = 10;
  r.on_cpu_steps = 20;
  r.work_z = 2.5;
  EXPECT_EQ(StepsToTell(r, HostCpuDetectorOptions()), 80u);
  r.work_ratio = 1.03;  // inside the band: nothing to tell
  EXPECT_FALSE(StepsToTell(r, HostCpuDetectorOptions()).has_value());
}

TEST(HostCpuDetectorTest, TheStepsToTellAnExcessScaleAsTheSquareOfTheSpread) {
  // Three ranks, their per-step work ratios spread 0.2, 0.1 and 0.3, 20
  // of 40 steps kept: a 10% excess stands 5 standard errors above 1 in 19
  // runs of 20 over ((5 + 1.645) x 0.2 / 0.1)^2 = 176.6 kept steps, 354 of
  // the run's.
  std::vector<RankCpuStats> ranks(3);
  const double sigma[] = {0.2, 0.1, 0.3};
  for (size_t i = 0; i < 3; ++i) {
    ranks[i].rank = static_cast<int32_t>(i);
    ranks[i].work_ratio = 1.0;
    ranks[i].work_probed = true;
    ranks[i].work_steps = 20;
    ranks[i].on_cpu_steps = 40;
    ranks[i].work_sigma = sigma[i];
  }
  std::optional<WorkSensitivity> w = StepsToTellExcess(ranks, 0.1, HostCpuDetectorOptions());
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->steps, 354u);
  EXPECT_DOUBLE_EQ(w->sigma, 0.2);
  EXPECT_EQ(w->compared, 20u);
  EXPECT_EQ(w->run_steps, 40u);
  // A 20% excess: a quarter of the steps (88.3, rounded up).
  EXPECT_EQ(StepsToTellExcess(ranks, 0.2, HostCpuDetectorOptions())->steps, 89u);
  // Ranks of fewer than min_cpu_time_steps, or unprobed, do not count: one
  // rank left is no run to measure.
  ranks[0].work_steps = 9;
  ranks[1].work_probed = false;
  EXPECT_FALSE(StepsToTellExcess(ranks, 0.1, HostCpuDetectorOptions()).has_value());
  EXPECT_FALSE(StepsToTellExcess(ranks, 0.0, HostCpuDetectorOptions()).has_value());
}

// Two ranks, 40 steps of 16 ms, the whole job at 25 ms in steps 20-24
// while rank 1's probe takes 1.5x as long and its CPU time per step is
// `cpu_rise` times its own (its core slowed: the same work takes more CPU).
std::string CoreSlowedEpisode(double cpu_rise) {
  std::string t = "rank,step,step_time_ms,cpu_ms,cpu_wait_ms,cpu_probe_us\n";
  for (int step = 0; step < 40; ++step) {
    const bool slow = step >= 20 && step <= 24;
    for (int r = 0; r < 2; ++r) {
      const double jitter = ((step * 7 + r * 3) % 5) * 0.1;
      const bool core = slow && r == 1;
      t += fmt::format("{},{},{},{},0.2,{}\n", r, step, (slow ? 25.0 : 16.0) + jitter,
                       (core ? 14.0 * cpu_rise : 14.0) + jitter, core ? 78.0 : 52.0 + jitter);
    }
  }
  return t;
}

// A job-wide slowdown while one rank's core slowed: the machine, said so;
// its CPU time rising beyond what its core explains (1.5x) is more work.
TEST(HostCpuDetectorTest, AJobWideSlowdownOfOneRanksCoreIsTheMachine) {
  Diagnosed core = Diagnose(CoreSlowedEpisode(1.6));
  EXPECT_EQ(core.v.status, VerdictStatus::kJobWide) << core.v.summary;
  EXPECT_NE(core.v.summary.find("rank 1's CPU ran a fixed piece of work 1.49x"), std::string::npos)
      << core.v.summary;
  EXPECT_NE(core.v.summary.find("the machine slowed, not the job"), std::string::npos)
      << core.v.summary;
  Diagnosed work = Diagnose(CoreSlowedEpisode(2.2));
  EXPECT_EQ(work.v.summary.find("the machine slowed"), std::string::npos) << work.v.summary;
}

TEST(HostCpuDetectorTest, ASlowProbeAloneNamesNobody) {
  // Equal compute, rank 3's probe 1.3x: a slower CPU that does not slow the
  // job names no culprit by itself.
  Diagnosed d = Diagnose(ProbeTable(1.0, 1.3));
  ASSERT_EQ(d.a.host_cpu.findings.size(), 1u);
  EXPECT_TRUE(d.v.culprits.empty());
}

TEST(HostCpuDetectorTest, SmallOrShortWaitsAreNoFinding) {
  // 3% of the step: inside the 5% band.
  EXPECT_TRUE(Diagnose(Table(
                           2, [](int r) { return r == 1 ? 30.0 : 0.5; }, [](int) { return 700.0; }))
                  .a.host_cpu.findings.empty());
  // Fewer steps than the detector needs.
  laggard::Run run;
  RunBuilder b;
  for (int step = 0; step < 3; ++step) {
    for (int r = 0; r < 2; ++r) {
      b.AddStep(r, step, 1'000'000'000, std::nullopt, SourceRef{0, 1});
      b.AddStepCpu(r, StepCpu{step, 500'000'000, r == 1 ? 400'000'000 : 0});
    }
  }
  run.files.push_back(InputFileInfo{"x.csv", "csv", 0, 6, true});
  b.Finalize(run);
  EXPECT_TRUE(AnalyzeHostCpu(run, HostCpuDetectorOptions()).findings.empty());
}

TEST(HostCpuDetectorTest, CpuColumnsAreReadAndBadValuesCounted) {
  TempDir dir;
  WriteFile(dir.File("steps.csv"),
            "rank,step,step_time_ms,cpu,cpu_ms,cpu_wait_ms\n"
            "0,0,1000,3,400,10\n"
            "0,1,1000,3,x,12\n"
            "0,2,1000,3,,\n");
  WriteFile(dir.File("train.log"),
            "laggard-step rank=1 step=0 time_s=1 cpu_s=0.4 cpu_wait_ms=7 cpu_probe_us=210\n"
            "laggard-step rank=1 step=1 time_s=1 cpu_wait_s=-1 cpu_probe_s=0\n");
  WriteFile(dir.File("agent.jsonl"),
            "{\"rank\":2,\"step\":0,\"step_time_s\":1,\"phase_cpu_s\":0.3,"
            "\"phase_cpu_wait_s\":0.02}\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 3u);
  // A bare "cpu" column is not a time (a core number here); cpu_ms is.
  ASSERT_EQ(run.ranks[0].cpu.size(), 2u);
  EXPECT_EQ(run.ranks[0].cpu[0].on_cpu_ns, 400'000'000);
  EXPECT_EQ(run.ranks[0].cpu[0].runq_wait_ns, 10'000'000);
  EXPECT_FALSE(run.ranks[0].cpu[1].on_cpu_ns.has_value());
  EXPECT_EQ(run.ranks[0].cpu[1].runq_wait_ns, 12'000'000);
  ASSERT_EQ(run.ranks[1].cpu.size(), 1u);
  EXPECT_EQ(run.ranks[1].cpu[0].on_cpu_ns, 400'000'000);
  EXPECT_EQ(run.ranks[1].cpu[0].runq_wait_ns, 7'000'000);
  EXPECT_EQ(run.ranks[1].cpu[0].probe_ns, 210'000);
  ASSERT_EQ(run.ranks[2].cpu.size(), 1u);
  EXPECT_EQ(run.ranks[2].cpu[0].runq_wait_ns, 20'000'000);
  // "x", -1 s of wait, and a probe of 0 s (no work takes no time).
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepBadCpuTime), 3u);
  EXPECT_EQ(run.ranks[0].steps.size(), 3u);  // the steps stay
}

}  // namespace
}  // namespace laggard
