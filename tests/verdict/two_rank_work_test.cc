// DropTwoRankLateWork (verdict_internal.h): a 2-rank CPU-only job's late
// rank of no known cause whose extra CPU time per step one peer cannot
// tell from the two cores' difference is no culprit.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// bench/realjobs d26 w2_healthy_0 rep 3: rank 1 last at 9 of 10 profiled
// collectives, no cause seen; its thread `work` x rank 0's CPU time per
// step over 31 steps at `z` standard errors.
struct Job {
  Analyses a;
  Verdict v;
};

Job LateTwoRanks(double work = 1.049, double z = 6.9, int ranks = 2) {
  Job j;
  for (int32_t r = 0; r < ranks; ++r) {
    RankTraceStats st;
    st.rank = r;
    st.cpu_only = true;
    j.a.traces.ranks.push_back(st);
    RankCpuStats c;
    c.rank = r;
    c.on_cpu_steps = 40;
    c.work_probed = true;
    c.work_steps = 31;
    c.work_ratio = r == 1 ? work : 1 / work;
    c.work_z = r == 1 ? z : -z;
    c.window_probe_ns = 50'000;
    c.window_cpu_ns = r == 1 ? 18'560'000 : 16'000'000;  // 1.16x in the profiled steps
    j.a.host_cpu.ranks.push_back(c);
  }
  j.a.traces.findings.push_back(MakeFinding(FindingCode::kTraceLateArrival, Entity{.rank = 1}));
  j.v.status = VerdictStatus::kStraggler;
  j.v.summary = "verdict: rank 1 is the straggler";
  j.v.throughput_lost = 0.2;  // its lateness cost 20% of the profile
  Culprit c;
  c.entity.rank = 1;
  c.cause_class = CauseClass::kUnknown;
  c.confidence = 0.75;
  j.v.culprits.push_back(c);
  return j;
}

TEST(TwoRankLateWorkTest, ALateRankWhoseExtraWorkOnePeerCannotTellIsNoCulprit) {
  Job j = LateTwoRanks();
  ASSERT_TRUE(DropTwoRankLateWork(j.v, j.a));
  EXPECT_TRUE(j.v.culprits.empty());
  EXPECT_EQ(j.v.status, VerdictStatus::kNoStraggler);
  // The run's reading is TwoRankExcessNote's (SayCpuWorkUndecided appends
  // it): the drop says why, not the reading twice.
  EXPECT_NE(j.v.summary.find("rank 1 arrives last at the profiled collectives with no cause its "
                             "traces show, its thread using 1.16x its peer's CPU time per step "
                             "there: late for extra work that one peer cannot tell from the two "
                             "cores' difference"),
            std::string::npos)
      << j.v.summary;
  ASSERT_EQ(j.v.next_steps.size(), 1u);
  EXPECT_NE(j.v.next_steps[0].find("rerun with a third rank"), std::string::npos);
  SayCpuWorkUndecided(j.v, j.a, j.v.next_steps);
  EXPECT_NE(j.v.summary.find("rank 1's thread used 1.05x its peer's CPU time per step on CPUs as "
                             "fast by the probe (6.9 standard errors over 31 steps)"),
            std::string::npos)
      << j.v.summary;
  const size_t first = j.v.summary.find("compare with a third rank");
  ASSERT_NE(first, std::string::npos) << j.v.summary;
  EXPECT_EQ(j.v.summary.find("compare with a third rank", first + 1), std::string::npos);
}

TEST(TwoRankLateWorkTest, WithNothingElseToSayTheDropSaysTheReading) {
  // Its core explains the excess for TwoRankExcessNote (a core 1.04x slower
  // over the run: >= 0.75 of its 4.9%), so nothing else would say it.
  Job j = LateTwoRanks();
  Finding slow = MakeFinding(FindingCode::kHostCpuSlow, Entity{.rank = 1});
  slow.slowdown = 0.04;
  j.a.host_cpu.findings.push_back(slow);
  ASSERT_FALSE(UndecidedWorkText(j.a).has_value());
  ASSERT_TRUE(DropTwoRankLateWork(j.v, j.a));
  EXPECT_NE(j.v.summary.find("and 1.05x over 31 steps on CPUs as fast by the probe (6.9 standard "
                             "errors): late for that extra work, but with two ranks a difference "
                             "under 10% may be their two cores'"),
            std::string::npos)
      << j.v.summary;
  EXPECT_NE(j.v.summary.find("compare with a third rank, or swap the ranks' cores"),
            std::string::npos);
}

TEST(TwoRankLateWorkTest, EachFloorHolds) {
  Job more = LateTwoRanks(1.10);  // 10% more: may be a 1.1x fault
  EXPECT_FALSE(DropTwoRankLateWork(more.v, more.a));
  // Its extra CPU time in the window under half its cost there (1.05x:
  // 4.8% of 20%): late for something else.
  Job window = LateTwoRanks();
  window.a.host_cpu.ranks[1].window_cpu_ns = 16'800'000;
  EXPECT_FALSE(DropTwoRankLateWork(window.v, window.a));
  Job onset = LateTwoRanks();  // a slowdown that began mid-run
  onset.v.culprits[0].onset_step = 20;
  EXPECT_FALSE(DropTwoRankLateWork(onset.v, onset.a));
  Job equal = LateTwoRanks(1.02);  // no extra work: late for another reason
  EXPECT_FALSE(DropTwoRankLateWork(equal.v, equal.a));
  Job weak = LateTwoRanks(1.05, 1.5);  // under 2 standard errors
  EXPECT_FALSE(DropTwoRankLateWork(weak.v, weak.a));
  Job few = LateTwoRanks();
  few.a.host_cpu.ranks[1].work_steps = 9;
  EXPECT_FALSE(DropTwoRankLateWork(few.v, few.a));
  Job unprobed = LateTwoRanks();
  unprobed.a.host_cpu.ranks[1].work_probed = false;
  EXPECT_FALSE(DropTwoRankLateWork(unprobed.v, unprobed.a));
  Job four = LateTwoRanks(1.049, 6.9, 4);  // peers enough to tell
  EXPECT_FALSE(DropTwoRankLateWork(four.v, four.a));
  Job gpu = LateTwoRanks();
  for (RankTraceStats& t : gpu.a.traces.ranks) t.cpu_only = false;
  EXPECT_FALSE(DropTwoRankLateWork(gpu.v, gpu.a));
  Job caused = LateTwoRanks();  // a cause observed
  caused.v.culprits[0].cause_class = CauseClass::kHostStall;
  caused.v.culprits[0].cause = "host_contention";
  EXPECT_FALSE(DropTwoRankLateWork(caused.v, caused.a));
  Job other = LateTwoRanks();  // the traces' late rank is another
  other.a.traces.findings[0].entity.rank = 0;
  EXPECT_FALSE(DropTwoRankLateWork(other.v, other.a));
  EXPECT_EQ(other.v.status, VerdictStatus::kStraggler);
}

TEST(TwoRankLateWorkTest, AnUndecidedRankIsSaidOnce) {
  // With a step.cpu_time_high under the 2-rank floor, CpuWorkUndecided says
  // the comparison (SayCpuWorkUndecided appends it): not said here too.
  Job j = LateTwoRanks(1.07, 7);
  Finding more = MakeFinding(FindingCode::kStepCpuTimeHigh, Entity{.rank = 1});
  more.slowdown = 0.07;
  j.a.host_cpu.findings.push_back(more);
  ASSERT_TRUE(DropTwoRankLateWork(j.v, j.a));
  EXPECT_EQ(j.v.summary.find("compare with a third rank"), std::string::npos) << j.v.summary;
  EXPECT_NE(j.v.summary.find("there: late for extra work that one peer cannot tell from the two "
                             "cores' difference"),
            std::string::npos)
      << j.v.summary;
  SayCpuWorkUndecided(j.v, j.a, j.v.next_steps);
  const size_t first = j.v.summary.find("compare with a third rank");
  ASSERT_NE(first, std::string::npos) << j.v.summary;
  EXPECT_EQ(j.v.summary.find("compare with a third rank", first + 1), std::string::npos);
  // The run's 1.07x once, from CpuWorkUndecided.
  const size_t reading = j.v.summary.find("1.07x");
  ASSERT_NE(reading, std::string::npos) << j.v.summary;
  EXPECT_EQ(j.v.summary.find("1.07x", reading + 1), std::string::npos) << j.v.summary;
}

}  // namespace
}  // namespace laggard::verdict_internal
