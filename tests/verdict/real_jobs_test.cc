// Verdicts on the files real PyTorch DDP jobs wrote (tests/data/realjobs/,
// kept runs of bench/realjobs: Debian's torch 1.13, gloo, CPU, on a 2-vCPU
// host): each directory is diagnosed as `laggard diagnose DIR` would, and
// its verdict checked against the job's injected fault. The simulator wrote
// none of these files; see tests/data/realjobs/README.md for how each was
// made and why it is here.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analyze_run.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "test_paths.h"
#include "test_util.h"
#include "verdict/verdict.h"
#include "verdict/verdict_internal.h"

namespace laggard {
namespace {

const std::string kData = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/realjobs/";

struct Expected {
  std::string dir;
  VerdictStatus status;
  // The culprits' ranks and cause classes, in order; empty: none with a rank.
  std::vector<std::pair<int32_t, CauseClass>> culprits;
  // The first culprit's pattern, when checked.
  std::optional<Pattern> pattern = std::nullopt;
};

void PrintTo(const Expected& e, std::ostream* os) { *os << e.dir; }

Verdict Diagnose(const std::string& dir, laggard::Run* out = nullptr) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name != "truth.json" && name != "README.md") paths.push_back(entry.path().string());
  }
  auto readers = MakeDefaultTextReaders(std::nullopt);
  EXPECT_TRUE(readers.ok()) << readers.status().message();
  TraceReaderSet trace_readers = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 2;
  auto run = Ingest(paths, readers->readers, options, trace_readers.readers);
  EXPECT_TRUE(run.ok()) << run.status().message();
  if (!run.ok()) return Verdict();
  Verdict v = DecideVerdict(*run, AnalyzeRun(*run, AnalysisOptions()));
  if (out != nullptr) *out = std::move(*run);
  return v;
}

// Whether a line of the culprit's evidence holds `words`.
bool Says(const Culprit& c, std::string_view words) {
  return std::any_of(c.evidence.begin(), c.evidence.end(),
                     [&](const std::string& e) { return e.find(words) != std::string::npos; });
}

class RealJobTest : public ::testing::TestWithParam<Expected> {};

TEST_P(RealJobTest, VerdictNamesTheInjectedFault) {
  const Expected& e = GetParam();
  Verdict v = Diagnose(kData + e.dir);
  EXPECT_EQ(VerdictStatusName(v.status), VerdictStatusName(e.status)) << v.summary;
  std::vector<std::pair<int32_t, CauseClass>> got;
  for (const Culprit& c : v.culprits) {
    if (c.entity.rank) got.emplace_back(*c.entity.rank, c.cause_class);
  }
  ASSERT_EQ(got.size(), e.culprits.size()) << v.summary;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, e.culprits[i].first) << v.summary;
    EXPECT_EQ(CauseClassName(got[i].second), CauseClassName(e.culprits[i].second)) << v.summary;
  }
  if (e.pattern) {
    ASSERT_TRUE(v.culprits.at(0).pattern.has_value()) << v.summary;
    EXPECT_EQ(PatternName(*v.culprits.at(0).pattern), PatternName(*e.pattern)) << v.summary;
  }
}

// A job killed while rank 2 wrote its trace: half the file. The cut is
// located and counted, and the other ranks' files still name the culprit.
TEST(RealJobTest, AHogOnARanksCoreIsHostContention) {
  for (std::string dir : {"w2_cpu_hog", "w4_cpu_hog"}) {
    Verdict v = Diagnose(kData + dir);
    ASSERT_FALSE(v.culprits.empty()) << dir << ": " << v.summary;
    for (const Culprit& c : v.culprits) EXPECT_EQ(c.cause, "host_contention") << dir;
    EXPECT_NE(v.summary.find("host_contention"), std::string::npos) << v.summary;
  }
}

// The same hog with a real `laggard agent` beside the job (realjobs.py
// --agent): its hardware log names the busy loop that shares cpu 1 with
// ranks 1 and 3, and the verdict says to stop it first.
TEST(RealJobTest, TheAgentNamesTheHogsCommandLine) {
  laggard::Run run;
  Verdict v = Diagnose(kData + "w4_cpu_hog_agent", &run);
  // The rank lines name no host: each rank's is the agent's, said.
  EXPECT_EQ(run.diagnostics.count(DiagCode::kRankHostFromAgent), 4u);
  EXPECT_EQ(v.summary.rfind("verdict: rank 1 (vm) is the straggler", 0), 0u) << v.summary;
  ASSERT_EQ(v.culprits.size(), 2u) << v.summary;
  for (const Culprit& c : v.culprits) {
    EXPECT_EQ(c.entity.host.value_or(""), "vm");
    EXPECT_EQ(c.cause, "host_contention") << v.summary;
    bool named = false;
    for (const std::string& e : c.evidence) {
      named |= e.starts_with("agent on vm, over ") &&
               e.find("pid 12691 (python3), not one of the job's processes") != std::string::npos &&
               e.ends_with("-c while True: pass`");
    }
    EXPECT_TRUE(named) << "rank " << c.entity.rank.value_or(-1);
  }
  ASSERT_FALSE(v.next_steps.empty());
  EXPECT_EQ(v.next_steps[0].rfind("stop or move pid 12691 on vm (`", 0), 0u) << v.next_steps[0];
  EXPECT_TRUE(v.next_steps[0].ends_with("where ranks 1, 3 run")) << v.next_steps[0];
}

// A healthy run whose steps 6-8 ran +50% on both ranks (24 ms against 16,
// their CPU time and probes as before) and recovered: ~3% of the run, said
// in a no-straggler verdict, not made the job's state.
TEST(RealJobTest, AJobWideBlipThatPassedIsNoStraggler) {
  Verdict v = Diagnose(kData + "w2_healthy_passing_blip");
  EXPECT_EQ(VerdictStatusName(v.status), VerdictStatusName(VerdictStatus::kNoStraggler))
      << v.summary;
  EXPECT_TRUE(v.culprits.empty()) << v.summary;
  EXPECT_NE(v.summary.find("the whole job slowed for 3 steps (6-8"), std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("and recovered"), std::string::npos) << v.summary;
}

// A healthy run whose machine slowed for 13 steps: the job-wide verdict
// says the CPUs slowed on every rank (their probes), not the job.
TEST(RealJobTest, AJobWideSlowdownOfTheMachineSaysSo) {
  Verdict v = Diagnose(kData + "w2_healthy_machine_slowed");
  EXPECT_EQ(v.status, VerdictStatus::kJobWide) << v.summary;
  EXPECT_NE(v.summary.find("the machine slowed, not the job"), std::string::npos) << v.summary;
  ASSERT_FALSE(v.next_steps.empty());
  EXPECT_NE(v.next_steps[0].find("look at the machines"), std::string::npos) << v.next_steps[0];
}

// A healthy run whose job slowed while one rank's core did (its probe
// 1.47x, its CPU time 1.62x for the same work): the machine, said so.
TEST(RealJobTest, AJobWideSlowdownOfOneRanksCoreSaysTheMachineSlowed) {
  Verdict v = Diagnose(kData + "w2_healthy_core_slowed_episode");
  EXPECT_TRUE(v.status == VerdictStatus::kJobWide || v.status == VerdictStatus::kNoStraggler)
      << v.summary;
  EXPECT_TRUE(std::none_of(v.culprits.begin(), v.culprits.end(), [](const Culprit& c) {
    return c.entity.rank.has_value();
  })) << v.summary;
  EXPECT_NE(v.summary.find("rank 1's CPU ran a fixed piece of work"), std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("the machine slowed, not the job"), std::string::npos) << v.summary;
}

// Rank 3 computes 1.1x on a host whose cores differ: against the peers
// whose CPU ran the probe as fast as its own, step by step, its thread used
// 1.08x their CPU time over 25 steps, enough to name it (against all its
// peers, on the 14 steps whose probes agreed with theirs, 1.09x at 4.2
// standard errors was too few: "run ~58 steps to tell" before).
TEST(RealJobTest, AMildStragglerAgainstPeersOnCoresAsFastIsNamed) {
  Verdict v = Diagnose(kData + "w4_compute_1.1_few_steps");
  EXPECT_EQ(v.status, VerdictStatus::kStraggler) << v.summary;
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  EXPECT_EQ(v.culprits[0].entity.rank, 3) << v.summary;
  EXPECT_EQ(v.culprits[0].cause_class, CauseClass::kComputeSlow) << v.summary;
}

// Healthy, 2 ranks: rank 0 used 1.09x rank 1's CPU time per step on cores
// its probe calls equal. With one peer that may be the cores, so no
// culprit, and the verdict says what would tell.
TEST(RealJobTest, TwoRanksNeedMoreThanAMildCpuTimeExcess) {
  Verdict v = Diagnose(kData + "w2_healthy_two_cores");
  EXPECT_EQ(v.status, VerdictStatus::kNoStraggler) << v.summary;
  EXPECT_TRUE(v.culprits.empty()) << v.summary;
  EXPECT_NE(v.summary.find("with two ranks a difference under 15%"), std::string::npos)
      << v.summary;
}

// Rank 1 computes 1.1x: its thread 1.09x rank 0's CPU time per step on
// cores as fast (4.8 standard errors, under the detector's 5): no culprit,
// and the verdict says the excess and the run that can tell it from the
// cores ("no straggler" with nothing more before).
TEST(RealJobTest, TwoRanksSayAMildExcessTheDetectorLeft) {
  Verdict v = Diagnose(kData + "w2_compute_1.1_excess_said");
  EXPECT_EQ(v.status, VerdictStatus::kNoStraggler) << v.summary;
  EXPECT_TRUE(v.culprits.empty()) << v.summary;
  EXPECT_NE(v.summary.find("rank 1's thread used 1.09x its peer's CPU time per step"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("compare with a third rank, or swap the ranks' cores"),
            std::string::npos)
      << v.summary;
}

// Rank 1 computes 1.5x on a core that ran the probe 0.64x as long as rank
// 0's: its CPU time per step reads 0.97x rank 0's, per unit of its core's
// speed 1.5x. The faster core hides the fault from step and op times, so no
// culprit, and the verdict says what would tell (a third rank, or the
// cores swapped).
TEST(RealJobTest, ExtraWorkAFasterCoreHidesIsSaid) {
  Verdict v = Diagnose(kData + "w2_compute_1.5_faster_core_hides");
  EXPECT_EQ(v.status, VerdictStatus::kNoStraggler) << v.summary;
  EXPECT_TRUE(v.culprits.empty()) << v.summary;
  EXPECT_NE(v.summary.find("rank 1's thread used 1.5"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("either it does more work and the faster core hides it"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("swap the ranks' cores"), std::string::npos) << v.summary;
}

// A busy loop on core 1 (ranks pinned r mod 2): ranks 1 and 3 wait 49-51
// ms a step for a CPU against their peers' 22. The traces blame rank 1's
// ops (2.29x as long) but its CPU time over the run is 1.07x its peers':
// not more work, so that culprit is set aside; the wait that stretched its
// ops names it and rank 3 for the host.
TEST(RealJobTest, ARankSetAsideThatWaitsForACpuIsNamedForIt) {
  Verdict v = Diagnose(kData + "w4_cpu_hog_ops_set_aside");
  EXPECT_EQ(v.status, VerdictStatus::kStraggler) << v.summary;
  ASSERT_EQ(v.culprits.size(), 2u) << v.summary;
  bool said = false;
  for (const Culprit& c : v.culprits) {
    EXPECT_TRUE(c.entity.rank == 1 || c.entity.rank == 3) << v.summary;
    EXPECT_EQ(c.cause_class, CauseClass::kHostStall) << v.summary;
    EXPECT_EQ(c.cause, "host_contention") << v.summary;
    for (const std::string& e : c.evidence)
      said |= e.find("it is named for its wait for a CPU, which stretched its ops") !=
              std::string::npos;
  }
  EXPECT_TRUE(said) << v.summary;
}

// A busy loop on core 1 while core 0 runs the probe 1.63x as long: ranks 1
// and 3 wait 32 ms a step against their peers' 26 (+21%), but 2.0 s per
// second on a CPU against 1.07 (a third thread on their core). Named for
// the host ahead of ranks 0 and 2, whose core is slower.
TEST(RealJobTest, AHogBesideASlowerCoreIsNamedByTheWaitPerCpuSecond) {
  Verdict v = Diagnose(kData + "w4_cpu_hog_slower_other_core");
  EXPECT_EQ(v.status, VerdictStatus::kStraggler) << v.summary;
  ASSERT_GE(v.culprits.size(), 2u) << v.summary;
  std::vector<int32_t> first_two;
  for (size_t i = 0; i < 2; ++i) {
    first_two.push_back(v.culprits[i].entity.rank.value_or(-1));
    EXPECT_EQ(v.culprits[i].cause, "host_contention") << v.summary;
  }
  std::sort(first_two.begin(), first_two.end());
  EXPECT_EQ(first_two, (std::vector<int32_t>{1, 3})) << v.summary;
}

// Rank 1 computes 2.0x from step 20; it sat on the slower core until step
// 27 (its probe 1.54x rank 0's over the run), then the ranks swapped cores:
// in the profiled steps (30-39) its core ran the probe 0.59x rank 0's, its
// ops 1.23x, last at 10 of 10 collectives. The run's slower core is not why.
TEST(RealJobTest, ACulpritOnTheFasterCoreInTheWindowIsNotTheRunsSlowerCore) {
  Verdict v = Diagnose(kData + "w2_onset_compute_cores_swapped");
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  EXPECT_EQ(v.culprits[0].entity.rank, 1) << v.summary;
  EXPECT_EQ(v.culprits[0].cause_class, CauseClass::kComputeSlow) << v.summary;
  EXPECT_TRUE(Says(v.culprits[0], "in the profiled steps where it was read: not why")) << v.summary;
}

// Healthy, 4 ranks on 2 cores (cores within 1.05x): the ops' compute per
// profiled step spreads 26% between the ranks, a different rank slowest
// each step, while the ranks' CPU time per step spreads ~1.4%: they share
// cores and wait for them. Not workload imbalance.
TEST(RealJobTest, OpsThatVaryOnSharedCoresWithSteadyCpuTimeAreNoImbalance) {
  laggard::Run run;
  Verdict v = Diagnose(kData + "w4_healthy_shared_cores_vary", &run);
  EXPECT_EQ(v.status, VerdictStatus::kNoStraggler) << v.summary;
  EXPECT_TRUE(v.culprits.empty()) << v.summary;
  Analyses a = AnalyzeRun(run, AnalysisOptions());
  const Finding* vw = nullptr;
  for (const Finding& f : a.traces.findings)
    if (f.code == FindingCode::kTraceVariableWork) vw = &f;
  ASSERT_NE(vw, nullptr);
  EXPECT_EQ(vw->severity, Severity::kInfo);
  EXPECT_NE(vw->message.find("they share cores, the work does not vary"), std::string::npos)
      << vw->message;
  EXPECT_TRUE(vw->next_steps.empty());
}

// A 2-rank culprit is compared with one peer only: never "high".
TEST(RealJobTest, TwoRankCulpritsStayBelowHigh) {
  Verdict v = Diagnose(kData + "w2_compute_1.2");
  ASSERT_FALSE(v.culprits.empty()) << v.summary;
  EXPECT_LE(v.culprits[0].confidence, verdict_internal::kTwoRankCap) << v.summary;
  EXPECT_EQ(v.summary.find("confidence high"), std::string::npos) << v.summary;
  // It read higher before the cap: the cap says so in its evidence.
  EXPECT_TRUE(Says(v.culprits[0], "no third says which is the odd one")) << v.summary;
}

// No real run here changes its step time level once (bench/realjobs: faults
// act from the first step, the host's cores drift): none may get a cost
// measured before and after, nor a pause's; a figure there would be another
// event's, read as the culprit's.
// A peer's passing slowdown in step times (rank 0, +11% over steps 5-9,
// within the run's noise over 5 steps) neither contradicts the traces'
// culprit nor lowers its confidence.
TEST(RealJobTest, APassingPeerSlowdownDoesNotContradictTheTraces) {
  Verdict v = Diagnose(kData + "w4_onset_compute_passing_peer");
  ASSERT_FALSE(v.culprits.empty()) << v.summary;
  EXPECT_EQ(v.summary.find("step times point at"), std::string::npos) << v.summary;
  EXPECT_GE(v.culprits[0].confidence, 0.8) << v.summary;
}

// The more-work rank is priced by its own bound, and no next step names
// rank 0, whose step times' median reads +6% (its total time within its
// peers': no step-time culprit), as the suspect.
TEST(RealJobTest, AMoreWorkRankNamedAloneIsPricedByItsOwnBound) {
  Verdict v = Diagnose(kData + "w4_compute_1.1_step_time_peer");
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  ASSERT_TRUE(v.culprits[0].slowdown);
  const double s = *v.culprits[0].slowdown;
  ASSERT_TRUE(v.throughput_lost) << v.summary;
  EXPECT_NEAR(*v.throughput_lost, s / (1 + s), 1e-9);
  EXPECT_EQ(v.impact_method, ImpactMethod::kUpperBound);
  EXPECT_EQ(v.summary.rfind("verdict: rank 3", 0), 0u) << v.summary;
  for (const std::string& n : v.next_steps) {
    EXPECT_EQ(n.find("on rank 0"), std::string::npos) << n;
  }
}

// A compute-slow rank the profiled steps back (its core no slower there,
// its CPU time higher) but its CPU time over the run does not (a 2.0x
// fault from step 20, on the faster core): named, said, at most medium.
TEST(RealJobTest, AFaultFromMidRunOnTheFasterCoreIsNamedAtMostMedium) {
  Verdict v = Diagnose(kData + "w2_onset_compute_fast_core");
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  EXPECT_LE(v.culprits[0].confidence, 0.75) << v.summary;
  bool said = false;
  for (const std::string& e : v.culprits[0].evidence) {
    said |= e.find("in the profiled steps its thread used") != std::string::npos &&
            e.find("began mid-run") != std::string::npos;
  }
  EXPECT_TRUE(said) << v.summary;
}

// A healthy rank whose CPU time per step in the profiled steps (1.11x its
// peers') is within what 10-step stretches of the other steps show by
// chance, and 1.00x over the run, is not named on its ops' 1.25x; rank 3
// computes 1.1x on a core 1.5x slow, which the run cannot tell.
TEST(RealJobTest, AWindowExcessWithinTheRunsNoiseNamesNoOne) {
  Verdict v = Diagnose(kData + "w4_compute_1.1_window_peer");
  std::string said = v.summary;
  for (const Culprit& c : v.culprits) {
    EXPECT_EQ(c.entity.rank, 3) << v.summary;
    for (const std::string& e : c.evidence) said += "\n" + e;
  }
  EXPECT_NE(said.find("rank 1's CPU ops 1.25x as long as its peers' and its thread's CPU time "
                      "per step 1.11x theirs, within what"),
            std::string::npos)
      << said;
}

// A 2-rank more-work excess below medium confidence is said with what
// would tell (a third rank, or the cores swapped), not named.
TEST(RealJobTest, ALowTwoRankExcessIsSaidNotNamed) {
  Verdict v = Diagnose(kData + "w2_healthy_low_two_rank_excess");
  EXPECT_TRUE(v.culprits.empty()) << v.summary;
  EXPECT_NE(v.summary.find("rank 1's thread used 1.21x its peer's CPU time per step on CPUs as "
                           "fast by the probe, but over too few such steps"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("compare with a third rank, or swap the ranks' cores"),
            std::string::npos)
      << v.summary;
}

// A 2.0x fault from step 20 whose rank took the slower core at step 23:
// in the profiled steps its CPU time (2.56x) and ops (2.79x) are more than
// that core (1.79x by the probe) makes; over the run 1.41x. Named, not
// dropped as a passing difference of the cores.
TEST(RealJobTest, AWindowOnlyRankOnASlowerCoreDoingMoreThanItMakesIsNamed) {
  Verdict v = Diagnose(kData + "w2_onset_compute_slower_core_window");
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  EXPECT_EQ(v.culprits[0].entity.rank, 1);
  EXPECT_EQ(v.culprits[0].cause_class, CauseClass::kComputeSlow);
  EXPECT_LT(v.culprits[0].confidence, kHighConfidence);
  EXPECT_TRUE(Says(v.culprits[0], "1.43x what that core's slowness explains, its ops 1.56x"))
      << v.summary;
}

// Rank 3 computes 1.1x on cores 1.76x apart, ranks floating: too few steps
// with agreeing probes to name it, but its CPU time per step for its core's
// speed tops the field alone: said as the largest excess, with the steps
// the run would need, and not named.
TEST(RealJobTest, AClearTopOfWorkPerProbeIsSaidWithTheStepsToTell) {
  Verdict v = Diagnose(kData + "w4_compute_1.1_probe_work_top");
  EXPECT_TRUE(v.culprits.empty()) << v.summary;
  EXPECT_NE(v.summary.find("the largest excess: rank 3's thread used 1.12x its peers' CPU time "
                           "per step for its core's speed"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("run ~531 steps to tell"), std::string::npos) << v.summary;
  // Its core the faster by the probe's median: said, as part may be the cores'.
  EXPECT_NE(v.summary.find("where part of it may be the cores'"), std::string::npos) << v.summary;
}

// Beside a rank the run backs (rank 3, 2.0x from step 20), a rank the
// profiled steps alone name (rank 0: 1.12x CPU time there, 1.03x over the
// run) is not named, and the verdict says why.
TEST(RealJobTest, AWindowOnlyRankBesideABackedCulpritIsNotNamed) {
  Verdict v = Diagnose(kData + "w4_onset_compute_window_second");
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  EXPECT_EQ(v.culprits[0].entity.rank, 3);
  EXPECT_TRUE(Says(v.culprits[0], "the profiled steps alone name rank 0")) << v.summary;
}

// The profiled steps' culprit (rank 0, a passing difference of the cores
// in the window) set aside, the rank on the slower core over the run is
// named for its host, with the reason it replaced the window's culprit and
// the host's next step, not the drop's "nothing to fix".
TEST(RealJobTest, ASlowerCoreOverTheRunReplacesTheWindowsCulprit) {
  Verdict v = Diagnose(kData + "w2_compute_1.1_slow_core");
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  EXPECT_EQ(v.culprits[0].cause.value_or(""), "host_contention") << v.summary;
  bool said = false;
  for (const std::string& e : v.culprits[0].evidence) {
    said |= e.starts_with("the profiled steps' culprit set aside: ") &&
            e.find("rank 0's CPU ops 1.37x") != std::string::npos;
  }
  EXPECT_TRUE(said) << v.summary;
  ASSERT_FALSE(v.next_steps.empty());
  EXPECT_NE(v.next_steps.front().find("compare the cores of rank 1"), std::string::npos)
      << v.next_steps.front();
  for (const std::string& step : v.next_steps) {
    EXPECT_EQ(step.find("nothing to fix"), std::string::npos) << step;
  }
}

// A busy loop on the core of ranks 1 and 3: the late group is named for
// its wait for a CPU, and the more-work reading (its evidence line, the
// partition next step) is gone.
TEST(RealJobTest, AWaitingLateGroupIsHostContentionNotUnevenWork) {
  Verdict v = Diagnose(kData + "w4_cpu_hog_late_pair");
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  const Culprit& c = v.culprits[0];
  EXPECT_EQ(c.ranks, (std::vector<int32_t>{1, 3})) << v.summary;
  EXPECT_EQ(c.cause.value_or(""), "host_contention") << v.summary;
  bool said = false;
  for (const std::string& e : c.evidence) {
    EXPECT_NE(e, verdict_internal::kAssumedMoreWork);
    said |= e.find("not more work; the wait for a CPU stretched their ops") != std::string::npos;
  }
  EXPECT_TRUE(said) << v.summary;
  for (const std::string& step : v.next_steps) {
    EXPECT_EQ(step.find("partition"), std::string::npos) << step;
  }
}

// Beside a communication-bound job, a rank's extra CPU time per step alone
// is said, not named: gloo polls on a CPU while it waits for a transfer.
TEST(RealJobTest, CpuTimeBesideTheNetworkIsSaidNotNamed) {
  Verdict v = Diagnose(kData + "w4_comm_100mbit_cpu_time_beside");
  EXPECT_EQ(v.status, VerdictStatus::kCommBound) << v.summary;
  EXPECT_NE(v.summary.find("beside it, not named: rank 1"), std::string::npos) << v.summary;
  EXPECT_EQ(v.summary.find("a smaller problem beside it"), std::string::npos) << v.summary;
}

TEST(RealJobTest, NoRealRunIsPricedByAChangeItDidNotHave) {
  size_t runs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kData)) {
    if (!entry.is_directory()) continue;
    ++runs;
    Verdict v = Diagnose(entry.path().string());
    EXPECT_NE(v.impact_method, ImpactMethod::kBeforeAfter) << entry.path() << ": " << v.summary;
    EXPECT_NE(v.impact_method, ImpactMethod::kSlowSteps) << entry.path() << ": " << v.summary;
  }
  EXPECT_GE(runs, 20u);
}

TEST(RealJobBadInputTest, AHalfWrittenTraceStillGivesTheVerdict) {
  testing_util::TempDir dir;
  const std::string src = kData + "w4_host_stall_15ms/";
  for (const auto& entry : std::filesystem::directory_iterator(src)) {
    std::string name = entry.path().filename().string();
    if (name == "truth.json") continue;
    if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") {
      std::string plain = testing_util::ReadGzip(entry.path().string());
      if (name == "trace_rank2.json.gz") plain.resize(plain.size() / 2);
      testing_util::WriteFile(dir.File(name.substr(0, name.size() - 3)), plain);
    } else {
      std::filesystem::copy_file(entry.path(), dir.File(name));
    }
  }
  laggard::Run run;
  Verdict v = Diagnose(dir.path(), &run);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kTraceTruncated), 1u);
  ASSERT_FALSE(v.culprits.empty()) << v.summary;
  EXPECT_EQ(v.culprits[0].entity.rank, 3) << v.summary;
  EXPECT_EQ(v.culprits[0].cause_class, CauseClass::kHostStall) << v.summary;
}

// Two jobs' folders given together (a 4-rank and a 2-rank job, ranks 0
// and 1 in both): the second job's traces and steps of the same ranks are
// located and counted, and the verdict is the first job's.
TEST(RealJobBadInputTest, TwoJobsInOneFolderAreCountedNotMixed) {
  std::vector<std::string> paths = {kData + "w4_host_stall_15ms", kData + "w2_compute_1.2"};
  auto readers = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(readers.ok());
  TraceReaderSet trace_readers = MakeDefaultTraceReaders();
  IngestOptions options;
  auto run = Ingest(paths, readers->readers, options, trace_readers.readers);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->diagnostics.count(DiagCode::kTraceDuplicateRank), 2u);
  EXPECT_GT(run->diagnostics.count(DiagCode::kStepDuplicate), 0u);
  Verdict v = DecideVerdict(*run, AnalyzeRun(*run, AnalysisOptions()));
  ASSERT_FALSE(v.culprits.empty()) << v.summary;
  EXPECT_EQ(v.culprits[0].entity.rank, 3) << v.summary;
  EXPECT_EQ(v.culprits[0].cause_class, CauseClass::kHostStall) << v.summary;
}

// A real dp 2 x pp 2 pipeline job (pipeline_job.py) whose last stage has 3x
// the layers, on a host whose noise made rank 0 (stage 0) 18% slower than
// its role peer rank 1 and late at 29 of 96 collectives; CI's draw of
// 2026-12-02 named it compute-slow. It still computes half of what stage
// 1's ranks do per step, so the stage is the bottleneck, no worker.
TEST(RealPipelineJobTest, ANoisyLightStageRankGivesWayToTheHeavyStage) {
  Verdict v = Diagnose(kData + "dp2pp2_heavy_stage_3x");
  EXPECT_EQ(VerdictStatusName(v.status), VerdictStatusName(VerdictStatus::kJobWide)) << v.summary;
  ASSERT_EQ(v.culprits.size(), 1u) << v.summary;
  const Culprit& c = v.culprits[0];
  EXPECT_EQ(CauseClassName(c.cause_class), CauseClassName(CauseClass::kImbalance)) << v.summary;
  EXPECT_FALSE(c.entity.rank.has_value()) << v.summary;
  ASSERT_TRUE(c.entity.pp_stage.has_value()) << v.summary;
  EXPECT_EQ(*c.entity.pp_stage, 1) << v.summary;
  EXPECT_EQ(c.ranks, (std::vector<int32_t>{2, 3})) << v.summary;
}

INSTANTIATE_TEST_SUITE_P(
    Runs, RealJobTest,
    ::testing::Values(
        // Rank 1's CPU ops run 1.06x as long as rank 0's and it is last at
        // 9 of 10 collectives: the host's noise, not a fault.
        Expected{"w2_healthy", VerdictStatus::kNoStraggler, {}},
        // 4 healthy ranks on 2 vCPUs: per-step compute spreads by ~20%
        // between ranks, which is not variable work.
        Expected{"w4_healthy", VerdictStatus::kNoStraggler, {}},
        // Rank 1 idles 4.73 ms more than rank 0 over a 384 ms profile
        // (1.2%) and is last at 5 of 10 collectives: chance, not a stall.
        Expected{"w2_healthy_idle_noise", VerdictStatus::kNoStraggler, {}},
        // Rank 0's ops read 1.26x as long one by one, but its compute took
        // 1.6% longer in all: a noisy host's op timings, not a slow rank.
        Expected{"w4_healthy_op_noise", VerdictStatus::kNoStraggler, {}},
        Expected{"w2_compute_1.2", VerdictStatus::kStraggler, {{1, CauseClass::kComputeSlow}}},
        // A healthy dp 2 x pp 2 pipeline: stage 1's ranks wait for stage 0
        // at every receive ("late together"), and per-step compute spreads
        // 26% between ranks on the shared host; neither is a straggler.
        Expected{"dp2pp2_healthy", VerdictStatus::kNoStraggler, {}},
        Expected{"w2_data_stall_15ms", VerdictStatus::kStraggler, {{0, CauseClass::kHostStall}}},
        // Rank 1 sleeps 250 ms before every 5th step's forward.
        Expected{"w2_periodic_250ms",
                 VerdictStatus::kStraggler,
                 {{1, CauseClass::kHostStall}},
                 Pattern::kPeriodic},
        // Rank 3 of 4 sleeps 15 ms before forward; 4 ranks share 2 vCPUs,
        // so the others take its core meanwhile and it is last at only 4
        // of 10 collectives, but it idles 31% of its profile (others <= 4%).
        Expected{"w4_host_stall_15ms", VerdictStatus::kStraggler, {{3, CauseClass::kHostStall}}},
        // A busy loop pinned to rank 1's core (ranks pinned, 2 cores): rank
        // 1 waits ~half its step for a CPU (its step table's cpu_wait_ms).
        Expected{"w2_cpu_hog", VerdictStatus::kStraggler, {{1, CauseClass::kHostStall}}},
        // 4 ranks pinned to 2 cores, the loop on the second: ranks 1 and 3
        // wait 60-72 ms a step, ranks 0 and 2 38-49 ms.
        Expected{"w4_cpu_hog",
                 VerdictStatus::kStraggler,
                 {{1, CauseClass::kHostStall}, {3, CauseClass::kHostStall}}},
        // Healthy; in the profiled window (the last 10 steps) rank 0's core
        // ran 1.8x faster (its probe), so rank 1's ops read 1.42x as long,
        // but over the run rank 1 used 0.98x rank 0's CPU time per step.
        Expected{"w2_healthy_window_transient", VerdictStatus::kNoStraggler, {}},
        // Healthy; in steps 5-17 both ranks' cores ran 1.6-1.9x slower
        // (their probes) and the steps took +65%: the machine slowed.
        Expected{"w2_healthy_machine_slowed", VerdictStatus::kJobWide, {}},
        // Healthy; in the profiled steps (30-39) rank 1's core ran its
        // probe 1.43x as long as rank 0's, so rank 1 arrives last at 7 of 9
        // collectives there: not a slow rank. Over the run rank 0's core
        // ran it 1.26x as long and its thread used 1.18x rank 1's CPU time
        // per step: the host made rank 0 the slower one.
        Expected{"w2_healthy_window_core_slowed",
                 VerdictStatus::kStraggler,
                 {{0, CauseClass::kHostStall}}},
        // Rank 3 computes 1.5x; 4 ranks on 2 vCPUs put healthy rank 0 at
        // +5% in step times, but in the profiled steps rank 0 arrives
        // 1.09 ms before the median: rank 3 alone.
        Expected{"w4_compute_1.5_step_noise",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kComputeSlow}}},
        // Rank 3 computes 1.5x; the traces put healthy rank 1 in a late
        // group with it ("uneven work"), but only rank 3's thread uses more
        // CPU time per step (1.41x; rank 1 0.98x): rank 3 alone.
        Expected{"w4_compute_1.5_late_group",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kComputeSlow}}},
        // Rank 1 computes 1.5x. In the profiled steps rank 0 waits inside
        // its own backward ops, so its ops read as long and it arrives last;
        // its CPU time per step, step by step on equal cores, is 1.44x.
        Expected{
            "w2_compute_1.5_cpu_time", VerdictStatus::kStraggler, {{1, CauseClass::kComputeSlow}}},
        // Rank 3 computes 1.1x: 1.08x the CPU time per step over 28 steps.
        Expected{"w4_compute_1.1", VerdictStatus::kStraggler, {{3, CauseClass::kComputeSlow}}},
        // Healthy; rank 1's core ran slow for the first half of the run: its
        // CPU time's median over the run is 1.18x, but step by step, where
        // the probes agree, it is rank 0's.
        Expected{"w2_healthy_core_slowed_half", VerdictStatus::kInconclusive, {}},
        // Rank 1 computes 1.5x, rank 3 stalls 50 ms: rank 3 is last at every
        // profiled collective, and rank 1 shows only in its CPU time per
        // step (1.43x, step by step on equal cores).
        Expected{"w4_two_faults_hidden",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kHostStall}, {1, CauseClass::kComputeSlow}}},
        // A busy loop on the core of ranks 1 and 3: late together with ops
        // 1.16x as long, each waiting 34% of its step for a CPU at 1.06x
        // its peers' CPU time: the wait, not more work (uneven work before).
        Expected{"w4_cpu_hog_late_pair", VerdictStatus::kStraggler, {{1, CauseClass::kHostStall}}},
        // Rank 1 sleeps 15 ms; healthy rank 0, its one peer, waits for it in
        // the collectives at 1.28x its CPU time (named compute-slow beside
        // it before): with two ranks no baseline tells a second fault.
        Expected{
            "w2_host_stall_waiting_peer", VerdictStatus::kStraggler, {{1, CauseClass::kHostStall}}},
        // Rank 1 computes 1.5x on a core 1.6x faster than rank 0's: step
        // times within 0.5%, its CPU time per step 1.12x, 1.5x for its
        // core's speed ("no straggler" before).
        Expected{
            "w2_compute_1.5_fast_core", VerdictStatus::kStraggler, {{1, CauseClass::kComputeSlow}}},
        // Healthy; rank 1 spends a third of its steps on the slower core
        // (probe median 1.07x, mean 1.32x), its ops 1.16x in the window,
        // its work per unit of its core's speed 1.02x: the host's straggler
        // (named compute-slow before, a false culprit).
        Expected{
            "w2_healthy_floating_core", VerdictStatus::kStraggler, {{1, CauseClass::kHostStall}}},
        // Rank 0's data stall makes 93% of the waiting; healthy rank 3 on a
        // core 1.71x slow is the traces' second slow rank, raised to high
        // by its host evidence: it stays second (first before).
        Expected{"w4_data_stall_second_slow_rank",
                 VerdictStatus::kStraggler,
                 {{0, CauseClass::kHostStall}, {3, CauseClass::kHostStall}}},
        // The same faults with ranks 1 and 3 on the slower core: rank 1's
        // 1.55x at 6.9 standard errors, its core 1.52x slow, is confirmed
        // by rank 3 on its core over the run (1.40x rank 3's CPU time).
        Expected{"w4_two_faults_same_core",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kHostStall}, {1, CauseClass::kComputeSlow}}},
        // Healthy; rank 1 +8% over 5 steps (28-32) against a per-step noise
        // of 7.6%: three standard errors over 5 steps are 12.8%.
        Expected{"w4_healthy_short_episode", VerdictStatus::kNoStraggler, {}},
        // Healthy; rank 1's steps ran +12% every 4 steps (4 of 35), ~1.4%
        // over the run on a host whose cores drift apart: minor, not named.
        Expected{"w2_healthy_periodic_minor", VerdictStatus::kNoStraggler, {}},
        // Rank 3 computes 2.0x from step 20; healthy rank 0 ran +11% in
        // steps 5-9 (~1.6% over the run): rank 3 alone, not contradicted.
        // Healthy; rank 1 at 1.21x its peer's CPU time over 14 probe-matched
        // steps, confidence 0.49: said, with what would tell, not named.
        Expected{"w2_healthy_low_two_rank_excess", VerdictStatus::kNoStraggler, {}},
        Expected{"w4_onset_compute_passing_peer",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kComputeSlow}}},
        // Rank 0's data loader stalls; healthy rank 1's core ran 1.62x slow
        // over the run, and its 1.52x CPU time on the steps whose probes
        // agreed is no second, compute-slow culprit.
        Expected{"w2_data_stall_slow_core_peer",
                 VerdictStatus::kStraggler,
                 {{0, CauseClass::kHostStall}}},
        // Healthy; rank 1's last 5 steps ran +12%, measured over those 5
        // steps inside the run's noise: no straggler.
        Expected{"w4_healthy_late_stretch", VerdictStatus::kNoStraggler, {}},
        // Healthy; rank 2's last 6 steps +9% on a host that slowed twice.
        Expected{"w4_healthy_late_stretch_slowed", VerdictStatus::kNoStraggler, {}},
        // Rank 3 computes 1.1x (1.09x the CPU time per step over 34 probed
        // steps); step times put healthy rank 0 at +6%: the measured work
        // wins over the step times' unexplained few percent.
        Expected{"w4_compute_1.1_step_time_peer",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kComputeSlow}}},
        // A 100 Mbit/s link on rank 1 of 2: every transfer crosses it.
        Expected{"w2_comm_100mbit", VerdictStatus::kCommBound, {}},
        // Rank 1 computes 1.5x, rank 3 stalls 50 ms before forward: rank 3
        // arrives last, rank 1 hides behind it.
        Expected{"w4_two_faults",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kHostStall}, {1, CauseClass::kComputeSlow}}},
        // The 100 Mbit/s link again (d11), transfers 64-80% of each step:
        // rank 1 also sits on a core 1.5x slower (host contention, up to
        // 7%), a smaller problem beside the link;
        Expected{"w2_comm_100mbit_slow_core", VerdictStatus::kCommBound, {}},
        // rank 0 arrives last at 8 of 10 collectives, its ops 1.01x rank
        // 1's (read "no straggler" before);
        Expected{"w2_comm_100mbit_late_equal", VerdictStatus::kCommBound, {}},
        // 4 ranks on cores 1.8x apart, compute per step spreads 32% (read
        // "workload imbalance" before).
        Expected{"w4_comm_100mbit_compute_varies", VerdictStatus::kCommBound, {}},
        // A calm host (d39): healthy rank 1's thread used 1.17x its peers'
        // CPU time per step with no slower ops; the ranks poll inside the
        // transfers (said as a smaller problem, compute-slow +17%, before).
        Expected{"w4_comm_100mbit_cpu_time_beside", VerdictStatus::kCommBound, {}},
        // Rank 1 sleeps 250 ms every 5th step: in the 10 profiled steps it
        // is last at 2 of 9 collectives only, with 95% of all delay (read
        // "periodic interference, no single rank" before).
        Expected{"w2_periodic_two_stalls",
                 VerdictStatus::kStraggler,
                 {{1, CauseClass::kHostStall}},
                 Pattern::kPeriodic},
        // Healthy: in the profiled steps rank 0's probe ran ~1.6x rank 1's
        // (under 1.1x over the run) and its ops 1.39x: its core slowed
        // while the profiler ran (compute-slow before).
        Expected{"w2_healthy_window_core_slower", VerdictStatus::kNoStraggler, {}},
        // Healthy: rank 1's core ran the probe 1.41x rank 0's in the
        // profiled steps (0.98x over the run), its ops 1.15x; its CPU time
        // per step 1.06x over the run with the window, 0.97x outside it
        // (compute-slow before).
        Expected{"w2_healthy_window_core_work_outside", VerdictStatus::kNoStraggler, {}},
        // Healthy: rank 1 idles 12.0 ms more than rank 0 in the profiled
        // steps (~5% of them), last at 6 of 10 collectives, its ops at rank
        // 0's speed (host-stalled before the 8% idle floor).
        Expected{"w2_healthy_idle_5pct", VerdictStatus::kNoStraggler, {}},
        // Healthy: rank 1 last at 9 of 10 collectives, no cause in its
        // traces; its thread 1.05x rank 0's CPU time per step on CPUs as
        // fast, which one peer cannot tell from the cores ("rank 1,
        // cause unknown" before).
        Expected{"w2_healthy_late_more_cpu", VerdictStatus::kNoStraggler, {}},
        // Healthy: rank 1's core 1.26x in the profiled steps, 1.12x
        // outside, its CPU time the core's (1.07x over the run): its core
        // slowed (named compute-slow when a core slower outside kept it).
        Expected{"w2_healthy_window_core_slower_outside", VerdictStatus::kNoStraggler, {}},
        // Healthy: rank 0's core slowed part of the time (probes ~50 or
        // ~95 us: 1.33x rank 1's on average, 1.08x by the median), its CPU
        // time per step 1.40x, 1.05x for its core's mean speed; 1.43x on
        // the steps whose probes matched (compute-slow before): the host's.
        Expected{"w2_healthy_core_slowed_part_time",
                 VerdictStatus::kStraggler,
                 {{0, CauseClass::kHostStall}}},
        // Healthy, 4 ranks: rank 3's thread used 1.25x its peers' CPU time
        // on the steps whose probes agreed, on a core 1.24x slower over the
        // run: its core, not more work (compute-slow before), named with
        // the host as the cause.
        Expected{"w4_healthy_core_explains_work",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kHostStall}}},
        // Healthy, 4 ranks on 2 cores: ranks 1 and 3 arrive late together
        // by 1.41 ms with ops at their peers' speed and no idle, ~5% of the
        // profile (named "ranks 1, 3, cause unknown" before): not them.
        // Rank 0's core ran the probe 1.29x as long over the run, its
        // thread 1.08x its peers' CPU time per step: the host's culprit.
        Expected{"w4_healthy_late_pair", VerdictStatus::kStraggler, {{0, CauseClass::kHostStall}}},
        // Rank 1 computes 1.1x on a core 1.58x slower over the run (its
        // CPU time per step 1.21x rank 0's); in the profiled steps rank 0's
        // core was the slower (its ops 1.37x), set aside: rank 1, the host.
        Expected{
            "w2_compute_1.1_slow_core", VerdictStatus::kStraggler, {{1, CauseClass::kHostStall}}},
        // Rank 1 computes 1.2x on the fast core; rank 0's core ran the
        // probe 1.63x as long, and rank 0 is last at 7 of 10 collectives
        // (90% of the waiting, ~10% of the profile) with ops 1.09x rank
        // 1's: the host's core makes it the job's straggler ("no
        // straggler" before).
        Expected{"w2_compute_1.2_slow_core_peer",
                 VerdictStatus::kStraggler,
                 {{0, CauseClass::kHostStall}}},
        // Rank 0's loader sleeps 15 ms a batch (last at 9 of 10
        // collectives); healthy rank 3's step times +7%, but it is last at
        // none and waits 6.8 ms per collective (named first, host
        // contention, before).
        Expected{"w4_data_stall_15ms_waiting_peer",
                 VerdictStatus::kStraggler,
                 {{0, CauseClass::kHostStall}}},
        // Rank 3 computes 1.1x: 1.06x its peers' CPU time over 27 probed
        // steps; healthy rank 1's steps 11-15 ran +14% (~2% of the run;
        // named "cause unknown" before).
        Expected{"w4_compute_1.1_passing_peer",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kComputeSlow}}},
        // Rank 1 computes 2.0x from step 20 on the faster core (healthy
        // rank 0's ran the probe 1.72x as long): over the run its CPU time
        // per step is 0.95x rank 0's, in the profiled steps its ops 1.21x
        // with its core's probe 0.60x ("no straggler: a passing difference
        // of the host's cores" before).
        Expected{"w2_onset_compute_fast_core",
                 VerdictStatus::kStraggler,
                 {{1, CauseClass::kComputeSlow}}}),
    [](const ::testing::TestParamInfo<Expected>& param) {
      std::string name = param.param.dir;
      for (char& ch : name) {
        if (ch == '.') ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace laggard
