// LateOnSlowCoreCulprit (a rank the traces found late but did not blame,
// on a core the probe measured slower), StepStragglerTracedWaiting (a
// small step-time straggler the traces show waiting) and
// StragglerOutsideProfile (a step-time episode the traces did not cover) and
// SayCpuWorkUndecided's ask for more steps, verdict_internal.h.

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

constexpr DurationNs kWindow = 250'000'000;  // 250 ms profiled

// A 2-rank job with no straggler named, whose traces found rank 0 last at
// `share_last` of the collectives, holding the others up `lost` of the
// profile, not blamed (info) unless `blamed`; rank 0's probe runs `run` x
// rank 1's over the run (a host.cpu_slow finding when >= 1.1) and
// `window` x in the profiled steps.
struct Job {
  Analyses a;
  Verdict v;
};

Job LateJob(double share_last, double lost, double run, double window, bool cpu_only = true,
            bool blamed = false) {
  Job j;
  for (int32_t r = 0; r < 2; ++r) {
    RankTraceStats st;
    st.rank = r;
    st.cpu_only = cpu_only;
    st.window_ns = kWindow;
    st.instances = 10;
    st.share_last = r == 0 ? share_last : 1 - share_last;
    st.delay_caused_ns = r == 0 ? static_cast<DurationNs>(lost * kWindow) : 0;
    j.a.traces.ranks.push_back(st);
    RankCpuStats c;
    c.rank = r;
    c.probe_steps = 40;
    c.probe_ns = static_cast<DurationNs>(r == 0 ? 50'000 * run : 50'000);
    c.window_probe_ns = static_cast<DurationNs>(r == 0 ? 50'000 * window : 50'000);
    j.a.host_cpu.ranks.push_back(c);
  }
  Finding late = MakeFinding(FindingCode::kTraceLateArrival, Entity{.rank = 0});
  late.severity = blamed ? Severity::kCritical : Severity::kInfo;
  j.a.traces.findings.push_back(late);
  if (run >= 1.1) {
    Finding slow = MakeFinding(FindingCode::kHostCpuSlow, Entity{.rank = 0});
    slow.slowdown = run - 1;
    slow.confidence = 0.85;
    slow.evidence.push_back(Evidence{"host CPU: the probe takes longer on rank 0", std::nullopt});
    slow.next_steps = {"compare rank 0's cores"};
    j.a.host_cpu.findings.push_back(slow);
  }
  j.v.status = VerdictStatus::kNoStraggler;
  return j;
}

TEST(LateOnSlowCoreTest, ALateRankOnASlowerCoreIsHostContention) {
  Job j = LateJob(0.7, 0.10, 1.63, 1.26);
  std::vector<std::string> next;
  std::optional<LateOnSlowCore> got = LateOnSlowCoreCulprit(j.v, j.a, next);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->culprit.entity.rank, 0);
  EXPECT_EQ(got->culprit.cause_class, CauseClass::kHostStall);
  EXPECT_EQ(got->culprit.cause.value_or(""), "host_contention");
  EXPECT_NEAR(got->lost, 0.10, 1e-6);
  EXPECT_NEAR(got->culprit.slowdown.value_or(0), 0.10 / 0.90, 1e-6);
  EXPECT_LE(got->culprit.confidence, kSingleSourceCap);
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front(), "compare rank 0's cores");
}

TEST(LateOnSlowCoreTest, ItsCostIsAShareOfTheLongestWindow) {
  Job j = LateJob(0.7, 0.10, 1.63, 1.26);
  j.a.traces.ranks[1].window_ns = 2 * kWindow;  // the profile: rank 1's 500 ms
  std::vector<std::string> next;
  std::optional<LateOnSlowCore> got = LateOnSlowCoreCulprit(j.v, j.a, next);
  ASSERT_TRUE(got.has_value());
  EXPECT_NEAR(got->lost, 0.05, 1e-6);
}

TEST(LateOnSlowCoreTest, EachFloorHolds) {
  std::vector<std::string> next;
  // Last at under 60% of the collectives.
  Job rarely = LateJob(0.59, 0.10, 1.63, 1.26);
  EXPECT_FALSE(LateOnSlowCoreCulprit(rarely.v, rarely.a, next));
  // Its core slower over the run, but not in the profiled steps.
  Job window = LateJob(0.7, 0.05, 1.63, 1.09);
  EXPECT_FALSE(LateOnSlowCoreCulprit(window.v, window.a, next));
  // No host.cpu_slow over the run.
  Job run = LateJob(0.7, 0.05, 1.08, 1.3);
  EXPECT_FALSE(LateOnSlowCoreCulprit(run.v, run.a, next));
  // The window's 1.2x explains under 0.75 of a +43% delay.
  Job explains = LateJob(0.7, 0.30, 1.63, 1.2);
  EXPECT_FALSE(LateOnSlowCoreCulprit(explains.v, explains.a, next));
  EXPECT_TRUE(next.empty());
}

TEST(LateOnSlowCoreTest, NotForABlamedLateRankAGpuJobOrAStragglerVerdict) {
  std::vector<std::string> next;
  Job blamed = LateJob(0.7, 0.10, 1.63, 1.26, /*cpu_only=*/true, /*blamed=*/true);
  EXPECT_FALSE(LateOnSlowCoreCulprit(blamed.v, blamed.a, next));
  Job gpu = LateJob(0.7, 0.10, 1.63, 1.26, /*cpu_only=*/false);
  EXPECT_FALSE(LateOnSlowCoreCulprit(gpu.v, gpu.a, next));
  Job job_wide = LateJob(0.7, 0.10, 1.63, 1.26);
  job_wide.v.status = VerdictStatus::kJobWide;
  EXPECT_FALSE(LateOnSlowCoreCulprit(job_wide.v, job_wide.a, next));
}

// A +7% step straggler on rank 3, whose traces show it after the median by
// `late_ms` of a 44 ms step, last at `share_last` of 10 collectives.
std::optional<std::string> Waiting(double slowdown, double late_ms, double share_last) {
  Finding f = MakeFinding(FindingCode::kStepStraggler, Entity{.rank = 3});
  f.slowdown = slowdown;
  TraceAnalysis traces;
  traces.median_step_ns = 44'000'000;
  RankTraceStats st;
  st.rank = 3;
  st.instances = 10;
  st.share_last = share_last;
  st.median_lateness_ns = static_cast<DurationNs>(late_ms * 1e6);
  st.median_wait_ns = 6'780'000;
  traces.ranks.push_back(st);
  return StepStragglerTracedWaiting(f, traces);
}

TEST(StepStragglerTracedWaitingTest, EarlyOrLastAtNoneIsWaiting) {
  EXPECT_TRUE(Waiting(0.07, -1.0, 0.2).has_value());
  std::optional<std::string> none = Waiting(0.07, 0.28, 0.0);
  ASSERT_TRUE(none.has_value());
  EXPECT_NE(none->find("last at none of 10 collectives"), std::string::npos) << *none;
  EXPECT_NE(none->find("waits 6.78 ms"), std::string::npos) << *none;
}

TEST(StepStragglerTracedWaitingTest, LateByAPercentOfAStepOrLargeIsNot) {
  // Last at none but 0.5 ms (1.1% of the step) after the median: a second
  // rank hiding behind the culprit may arrive so.
  EXPECT_FALSE(Waiting(0.07, 0.5, 0.0).has_value());
  EXPECT_FALSE(Waiting(0.07, 0.28, 0.1).has_value());
  EXPECT_FALSE(Waiting(0.12, -1.0, 0.0).has_value());
}

// Traces of 4 ranks over 10 collectives, 44 ms steps, naming `culprit` late.
TraceAnalysis TracedCulprit(int32_t culprit) {
  TraceAnalysis traces;
  traces.culprit = culprit;
  traces.median_step_ns = 44'000'000;
  for (int32_t r = 0; r < 4; ++r) {
    RankTraceStats st;
    st.rank = r;
    st.instances = 10;
    traces.ranks.push_back(st);
  }
  Finding late = MakeFinding(FindingCode::kTraceLateArrival, Entity{.rank = culprit});
  late.confidence = 0.75;
  traces.findings.push_back(late);
  return traces;
}

// The traced culprit's own small step straggler still agrees with it,
// though its traces show it early at the median (a stalled rank late at
// one collective of each step).
TEST(StepStragglerTracedWaitingTest, TheCulpritsOwnStepStragglerStillAgrees) {
  laggard::Run run;
  StepAnalysis steps;
  Finding step = MakeFinding(FindingCode::kStepStraggler, Entity{.rank = 2});
  step.slowdown = 0.06;
  step.onset_step = 5;
  step.pattern = Pattern::kPersistent;
  step.confidence = 0.6;
  steps.findings.push_back(step);
  TraceAnalysis traces = TracedCulprit(2);
  for (RankTraceStats& st : traces.ranks) {
    st.share_last = st.rank == 2 ? 0.3 : 0.2;
    st.median_lateness_ns = st.rank == 2 ? -500'000 : 0;
  }
  Verdict v = BaseVerdict(run, steps, traces);
  ASSERT_FALSE(v.culprits.empty()) << v.summary;
  EXPECT_EQ(v.culprits[0].entity.rank, 2);
  EXPECT_EQ(v.culprits[0].onset_step, 5) << v.summary;  // from the step finding: it agreed
  EXPECT_EQ(v.summary.find("step times point at"), std::string::npos) << v.summary;
}

// Another rank's step-time episode before the profiled steps does not cap
// the traced culprit's confidence ("but step times point at rank 0").
TEST(StragglerOutsideProfileTest, AnEarlierEpisodeDoesNotContradictTheTraces) {
  laggard::Run run;
  StepAnalysis steps;
  steps.job.profiled_steps = LogStepRange{.first = 30, .last = 39};
  steps.job.last_step = 39;
  Finding step = MakeFinding(FindingCode::kStepStraggler, Entity{.rank = 0});
  step.slowdown = 0.16;
  step.onset_step = 5;
  step.end_step = 10;
  step.pattern = Pattern::kPersistent;
  steps.findings.push_back(step);
  TraceAnalysis traces = TracedCulprit(3);
  Verdict v = BaseVerdict(run, steps, traces);
  ASSERT_FALSE(v.culprits.empty()) << v.summary;
  EXPECT_EQ(v.culprits[0].entity.rank, 3);
  EXPECT_EQ(v.summary.find("step times point at"), std::string::npos) << v.summary;
  EXPECT_GT(v.culprits[0].confidence, kContradictedCap) << v.summary;
  // In the profiled steps, it contradicts.
  steps.findings[0].onset_step = 30;
  steps.findings[0].end_step = 35;
  Verdict in = BaseVerdict(run, steps, traces);
  EXPECT_NE(in.summary.find("step times point at rank 0"), std::string::npos) << in.summary;
}

TEST(StragglerOutsideProfileTest, OnlyAnEpisodeWhollyOutsideTheTracedSteps) {
  StepAnalysis steps;
  steps.job.profiled_steps = LogStepRange{.first = 30, .last = 39};
  Finding f = MakeFinding(FindingCode::kStepStraggler, Entity{.rank = 0});
  f.onset_step = 5;
  f.end_step = 10;
  EXPECT_TRUE(StragglerOutsideProfile(f, steps));
  f.end_step = 30;
  EXPECT_FALSE(StragglerOutsideProfile(f, steps));
  steps.job.last_step = 39;
  f.end_step.reset();  // to the end of the run: into the traced steps
  EXPECT_FALSE(StragglerOutsideProfile(f, steps));
  f.onset_step = 40;
  EXPECT_TRUE(StragglerOutsideProfile(f, steps));
  steps.job.profiled_steps.reset();  // steps not known: the traces may have seen it
  EXPECT_FALSE(StragglerOutsideProfile(f, steps));
}

// A no-straggler verdict of a 4-rank CPU-only job whose rank 3 used 1.09x
// its peers' CPU time over 14 probed steps, at 4.2 standard errors: no
// culprit, and it says how many steps would tell.
TEST(SayCpuWorkUndecidedTest, TooFewStepsAsksForMore) {
  Analyses a;
  for (int32_t r = 0; r < 4; ++r) {
    RankTraceStats st;
    st.rank = r;
    st.cpu_only = true;
    a.traces.ranks.push_back(st);
    RankCpuStats c;
    c.rank = r;
    c.on_cpu_steps = 40;
    c.work_steps = 14;
    c.work_ratio = r == 3 ? 1.09 : 1.0;
    c.work_z = r == 3 ? 4.2 : 0;
    c.work_probed = true;
    a.host_cpu.ranks.push_back(c);
  }
  Verdict v;
  v.status = VerdictStatus::kNoStraggler;
  v.summary = "verdict: no straggler found";
  std::vector<std::string> next;
  SayCpuWorkUndecided(v, a, next);
  EXPECT_NE(v.summary.find("rank 3's thread used 1.09x"), std::string::npos) << v.summary;
  // 14 * (5 / 4.2)^2 / (14 / 40) = 56.7: ~57 steps.
  EXPECT_NE(v.summary.find("run ~57 steps to tell"), std::string::npos) << v.summary;
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NE(next[0].find("run ~57 steps"), std::string::npos);
  EXPECT_TRUE(v.culprits.empty());
}

}  // namespace
}  // namespace laggard::verdict_internal
