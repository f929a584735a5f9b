// StallDoesMoreWork (verdict_internal.h): a rank the traces read as a host
// stall whose thread does more work per step on CPUs as fast, its ops
// busier by half as much, is compute-slow; a stall named with its cause,
// another rank's more work, CPU time outside the ops, or a GPU job's stall
// are left.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

struct Stalled {
  Analyses a;
  Verdict v;
};

// A 4-rank job (CPU ops only unless not `cpu_only`), rank 3 the verdict's
// stalled culprit; rank `more` used 1 + `excess` (1.42x) its peers' CPU
// time per step on CPUs as fast over 21 steps, at `z` standard errors, its
// traced ops busy `ops` times its peers' (1.4x).
Stalled StallJob(int32_t more, double z = 21, bool cpu_only = true, double excess = 0.42,
                 double ops = 1.4) {
  Stalled s;
  for (int32_t r = 0; r < 4; ++r) {
    RankTraceStats st;
    st.rank = r;
    st.cpu_only = cpu_only;
    st.steps = 10;
    st.compute_busy_ns = static_cast<DurationNs>(r == more ? 1e8 * ops : 1e8);
    s.a.traces.ranks.push_back(st);
    RankCpuStats c;
    c.rank = r;
    c.on_cpu_steps = 21;
    c.probe_steps = 21;
    c.on_cpu_mean_ns = r == more ? 20e6 * (1 + excess) : 20e6;
    c.probe_ns = 50'000;
    if (r == more) {
      c.work_probed = true;
      c.work_steps = 21;
      c.work_ratio = 1 + excess;
      c.work_z = z;
    }
    s.a.host_cpu.ranks.push_back(c);
  }
  Finding work = MakeFinding(FindingCode::kStepCpuTimeHigh, Entity{.rank = more});
  work.slowdown = excess;
  work.confidence = 0.7;
  work.evidence.push_back(Evidence{"rank uses 1.42x its peers' CPU time per step", std::nullopt});
  work.next_steps = {"compare what the rank computes with its peers'"};
  s.a.host_cpu.findings.push_back(work);
  Finding stall = MakeFinding(FindingCode::kTraceHostStall, Entity{.rank = 3});
  stall.next_steps = {"look at rank 3's host: data loader workers"};
  s.a.traces.findings.push_back(stall);
  Culprit c;
  c.entity.rank = 3;
  c.cause_class = CauseClass::kHostStall;
  c.confidence = 0.7;
  c.evidence.push_back("traces: rank 3 idles 42 ms more than rank 0");
  s.v.status = VerdictStatus::kStraggler;
  s.v.culprits.push_back(c);
  return s;
}

TEST(StallDoesMoreWorkTest, AStalledRankThatComputesMoreIsComputeSlow) {
  Stalled s = StallJob(3);
  std::vector<std::string> next = {"look at rank 3's host: data loader workers"};
  ASSERT_TRUE(StallDoesMoreWork(s.v, s.a, next));
  ASSERT_EQ(s.v.culprits.size(), 1u);
  const Culprit& c = s.v.culprits[0];
  EXPECT_EQ(c.entity.rank, 3);
  EXPECT_EQ(c.cause_class, CauseClass::kComputeSlow);
  EXPECT_NEAR(c.slowdown.value_or(0), 0.42, 1e-9);
  // The stall's evidence stays; its host next step gives way to the work's.
  EXPECT_NE(std::find(c.evidence.begin(), c.evidence.end(),
                      "traces: rank 3 idles 42 ms more than rank 0"),
            c.evidence.end());
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], "compare what the rank computes with its peers'");
}

TEST(StallDoesMoreWorkTest, OtherStallsAreLeft) {
  std::vector<std::string> next;
  // Another rank does the more work: rank 3's stall stays.
  Stalled other = StallJob(1);
  EXPECT_FALSE(StallDoesMoreWork(other.v, other.a, next));
  EXPECT_EQ(other.v.culprits[0].cause_class, CauseClass::kHostStall);
  // Too few standard errors for the detector to call it more work.
  Stalled weak = StallJob(3, 2);
  EXPECT_FALSE(StallDoesMoreWork(weak.v, weak.a, next));
  EXPECT_EQ(weak.v.culprits[0].cause_class, CauseClass::kHostStall);
  // Just under the bar (1.24x), and at it (1.25x, its ops 1.25x).
  Stalled under = StallJob(3, 21, true, 0.24);
  EXPECT_FALSE(StallDoesMoreWork(under.v, under.a, next));
  Stalled at = StallJob(3, 21, true, 0.25, 1.25);
  EXPECT_TRUE(StallDoesMoreWork(at.v, at.a, next));
  // Its ops at its peers' busy time: the CPU time is spent outside them
  // (inline decoding, GC), a stall still.
  Stalled outside = StallJob(3, 21, true, 0.42, 1.0);
  EXPECT_FALSE(StallDoesMoreWork(outside.v, outside.a, next));
  EXPECT_EQ(outside.v.culprits[0].cause_class, CauseClass::kHostStall);
  // Busy times are compared per profiled step: 1.4x the busy time over
  // twice the steps is its peers' pace.
  Stalled longer = StallJob(3);
  longer.a.traces.ranks[3].steps = 20;
  EXPECT_FALSE(StallDoesMoreWork(longer.v, longer.a, next));
  // What a wait itself costs (cold caches after a 50 ms sleep read 1.06-1.09x,
  // bench/realjobs d38): a stall still.
  Stalled wait = StallJob(3, 21, true, 0.09);
  EXPECT_FALSE(StallDoesMoreWork(wait.v, wait.a, next));
  EXPECT_EQ(wait.v.culprits[0].cause_class, CauseClass::kHostStall);
  // A cause named for the stall (the probe's or the agent's contention).
  Stalled named = StallJob(3);
  named.v.culprits[0].cause = "host_contention";
  EXPECT_FALSE(StallDoesMoreWork(named.v, named.a, next));
  // A GPU job: the thread's CPU time is not its compute.
  Stalled gpu = StallJob(3, 21, /*cpu_only=*/false);
  EXPECT_FALSE(StallDoesMoreWork(gpu.v, gpu.a, next));
  EXPECT_EQ(gpu.v.culprits[0].cause_class, CauseClass::kHostStall);
}

}  // namespace
}  // namespace laggard::verdict_internal
