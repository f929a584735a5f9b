// SlowCoreCulprits (verdict_internal.h): where nothing else names a
// straggler, a CPU-only job's rank whose core ran the probe slower over the
// run and whose thread used more CPU time per step is a culprit with the
// host as the cause; AlsoCpuWorkCulprit's more-work rank confirmed by
// peers on its own core (kSameCoreProbe); ProbeWorkCulprit, a 2-rank
// job's rank that does more work for its core's speed; and
// SlowerCoreOnAverage, a compute-slow rank that only sat on a slower core.

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// Adds rank `r` to `a`: its traces (CPU ops only unless not `cpu_only`)
// and its CPU picture, 40 steps with a CPU time and a probe, returned to
// fill in.
RankCpuStats& AddRank(Analyses& a, int32_t r, bool cpu_only = true) {
  RankTraceStats st;
  st.rank = r;
  st.cpu_only = cpu_only;
  a.traces.ranks.push_back(st);
  RankCpuStats c;
  c.rank = r;
  c.on_cpu_steps = 40;
  c.probe_steps = 40;
  a.host_cpu.ranks.push_back(c);
  return a.host_cpu.ranks.back();
}

// A CPU-only job (GPU ops when not `cpu_only`) of `probe.size()` ranks:
// rank r's core ran the probe probe[r] x the others' (a host.cpu_slow
// finding when >= 1.1, as the detector makes it) and its thread used
// work[r] x their CPU time per step, over 40 steps.
Analyses Job(const std::vector<double>& probe, const std::vector<double>& work,
             bool cpu_only = true) {
  Analyses a;
  for (int32_t r = 0; r < static_cast<int32_t>(probe.size()); ++r) {
    RankCpuStats& c = AddRank(a, r, cpu_only);
    c.on_cpu_mean_ns = 20e6 * work[r];
    c.probe_ns = static_cast<DurationNs>(50'000 * probe[r]);
    if (probe[r] >= 1.1) {
      Finding slow = MakeFinding(FindingCode::kHostCpuSlow, Entity{.rank = r});
      slow.slowdown = probe[r] - 1;
      slow.confidence = 0.85;
      slow.evidence.push_back(
          Evidence{"host CPU: the probe takes longer on rank " + std::to_string(r), std::nullopt});
      slow.next_steps = {"compare rank " + std::to_string(r) + "'s cores"};
      a.host_cpu.findings.push_back(slow);
    }
  }
  return a;
}

TEST(SlowCoreTest, ARankOnASlowerCoreThatWorksLongerIsHostContention) {
  // bench/realjobs d17 w2_compute_1.1_r0: rank 1's core 1.58x, its thread
  // 1.2x rank 0's CPU time per step, step times in lockstep.
  Analyses a = Job({1.0, 1.58}, {1.0, 1.2});
  std::vector<std::string> next = {"profile another window"};
  std::optional<SlowCore> got = SlowCoreCulprits(a, {}, next);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->culprits.size(), 1u);
  const Culprit& c = got->culprits.front();
  EXPECT_EQ(c.entity.rank, 1);
  EXPECT_EQ(c.cause_class, CauseClass::kHostStall);
  EXPECT_EQ(c.cause.value_or(""), "host_contention");
  EXPECT_NEAR(c.slowdown.value_or(0), 0.2, 1e-9);
  EXPECT_NEAR(got->lost, 0.2 / 1.2, 1e-9);
  EXPECT_LE(c.confidence, kSingleSourceCap);
  ASSERT_EQ(c.evidence.size(), 2u);
  EXPECT_NE(c.evidence[1].find("1.20x its peers' CPU time per step"), std::string::npos)
      << c.evidence[1];
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next.front(), "compare rank 1's cores");
}

TEST(SlowCoreTest, EachFloorHolds) {
  std::vector<std::string> next;
  // The core 1.19x: under kSlowCoreNamed.
  Analyses mild = Job({1.0, 1.19}, {1.0, 1.2});
  EXPECT_FALSE(SlowCoreCulprits(mild, {}, next).has_value());
  // The thread's CPU time per step 1.04x: the slower core does not make
  // it compute longer (a probe does not feel all a step does).
  Analyses same = Job({1.0, 1.58}, {1.0, 1.04});
  EXPECT_FALSE(SlowCoreCulprits(same, {}, next).has_value());
  // A GPU job: a slower CPU need not slow it.
  Analyses gpu = Job({1.0, 1.58}, {1.0, 1.2}, /*cpu_only=*/false);
  EXPECT_FALSE(SlowCoreCulprits(gpu, {}, next).has_value());
  // A rank just set aside (the caller's `not_these`).
  Analyses dropped = Job({1.0, 1.58}, {1.0, 1.2});
  EXPECT_FALSE(SlowCoreCulprits(dropped, {1}, next).has_value());
  // Too few steps with a CPU time to compare.
  Analyses few = Job({1.0, 1.58}, {1.0, 1.2});
  for (RankCpuStats& r : few.host_cpu.ranks) r.on_cpu_steps = 5;
  EXPECT_FALSE(SlowCoreCulprits(few, {}, next).has_value());
  EXPECT_TRUE(next.empty());
}

TEST(SlowCoreTest, EveryRankOnASlowerCoreTheSlowestFirst) {
  // 4 ranks on 2 cores: ranks 0 and 2 share the slower one.
  Analyses a = Job({1.3, 1.0, 1.5, 1.0}, {1.1, 1.0, 1.12, 0.98});
  std::vector<std::string> next;
  std::optional<SlowCore> got = SlowCoreCulprits(a, {}, next);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->culprits.size(), 2u);
  EXPECT_EQ(got->culprits[0].entity.rank, 2);
  EXPECT_EQ(got->culprits[1].entity.rank, 0);
  // The larger extra CPU time prices it: rank 2's +12% of its peers'
  // median (1.0 of ranks 0, 1, 3: 1.1, 1.0, 0.98).
  const double more = 1.12 / 1.0 - 1;
  EXPECT_NEAR(got->lost, more / (1 + more), 1e-9);
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front(), "compare rank 2's cores");
}

// bench/realjobs d15 w4_two_faults_r2: rank 3 stalls (the culprit named),
// rank 1 computes 1.5x: 1.55x its peers' CPU time step by step at
// `z` standard errors; ranks 1 and 3 share the slower core (probes 79.5
// and 78.4 us against 52), where rank 3's thread used `partner` ms per
// step against rank 1's 31.5.
struct Hidden {
  Analyses a;
  Verdict v;
};
// The verdict's first culprit: rank 3, stalled (host_stall, 0.95).
void NameStalledRank3(Verdict& v) {
  Culprit stalled;
  stalled.entity.rank = 3;
  stalled.cause_class = CauseClass::kHostStall;
  stalled.confidence = 0.95;
  v.status = VerdictStatus::kStraggler;
  v.culprits.push_back(stalled);
}

Hidden TwoFaults(double z, double partner, double partner_probe = 78.4) {
  Hidden h;
  const double cpu[] = {17.8, 31.5, 17.6, partner};
  const double probe[] = {52.0, 79.5, 52.3, partner_probe};
  for (int32_t r = 0; r < 4; ++r) {
    RankCpuStats& c = AddRank(h.a, r);
    c.on_cpu_mean_ns = cpu[r] * 1e6;
    c.probe_ns = static_cast<DurationNs>(probe[r] * 1000);
    if (r == 1) {
      c.work_probed = true;
      c.work_steps = 24;
      c.work_ratio = 1.55;
      c.work_z = z;
    }
  }
  Finding more = MakeFinding(FindingCode::kStepCpuTimeHigh, Entity{.rank = 1});
  more.slowdown = 0.55;
  more.confidence = 0.53;
  more.evidence.push_back(Evidence{"rank 1 uses 1.55x its peers' CPU time", std::nullopt});
  h.a.host_cpu.findings.push_back(more);
  // Its core ran the probe 1.52x: by itself, enough to veto the work.
  Finding slow = MakeFinding(FindingCode::kHostCpuSlow, Entity{.rank = 1});
  slow.slowdown = 0.52;
  slow.evidence.push_back(Evidence{"host CPU: the probe takes longer on rank 1", std::nullopt});
  h.a.host_cpu.findings.push_back(slow);
  NameStalledRank3(h.v);
  return h;
}

TEST(SameCoreWorkTest, APeerOnItsCoreConfirmsTheHiddenRank) {
  Hidden h = TwoFaults(6.9, 22.5);  // 31.5 / 22.5 = 1.40 against its core's peer
  std::vector<std::string> next;
  ASSERT_TRUE(AlsoCpuWorkCulprit(h.v, h.a, next));
  ASSERT_EQ(h.v.culprits.size(), 2u);
  EXPECT_EQ(h.v.culprits[1].entity.rank, 1);
  EXPECT_EQ(h.v.culprits[1].cause_class, CauseClass::kComputeSlow);
}

TEST(SameCoreWorkTest, WithoutThatPeerTheFloorsStay) {
  std::vector<std::string> next;
  // Its core's peer used nearly as much (31.5 / 26 = 1.21 < 1 + 0.55 / 2):
  // not confirmed, so at 12 standard errors, over the hidden floor of 10,
  // its core's 1.52x still explains the work; at 6.9, the floor holds too.
  Hidden near = TwoFaults(12, 26.0);
  EXPECT_FALSE(AlsoCpuWorkCulprit(near.v, near.a, next));
  Hidden near_weak = TwoFaults(6.9, 26.0);
  EXPECT_FALSE(AlsoCpuWorkCulprit(near_weak.v, near_weak.a, next));
  // Without the core's slowness, 12 standard errors name it (the veto above
  // is what held).
  Hidden fast_core = TwoFaults(12, 26.0);
  std::erase_if(fast_core.a.host_cpu.findings,
                [](const Finding& f) { return f.code == FindingCode::kHostCpuSlow; });
  EXPECT_TRUE(AlsoCpuWorkCulprit(fast_core.v, fast_core.a, next));
  // No peer on its core (rank 3's probe 8% off).
  Hidden alone = TwoFaults(6.9, 22.5, 85.9);
  EXPECT_FALSE(AlsoCpuWorkCulprit(alone.v, alone.a, next));
  // Confirmed, but under the detector's own 5 standard errors.
  Hidden weak = TwoFaults(4.5, 22.5);
  EXPECT_FALSE(AlsoCpuWorkCulprit(weak.v, weak.a, next));
  EXPECT_EQ(near.v.culprits.size(), 1u);
}

// bench/realjobs d24 w4_two_faults rep 0: rank 3 sleeps (named), rank 1
// computes 1.5x; their CPU time per step over their probe time: rank 0
// 1.0, rank 1 `per`, rank 2 `other`, rank 3 `named`; no step.cpu_time_high.
Hidden ProbeWorkBehind(double per, double other = 0.99, double named = 0.92) {
  Hidden h;
  const double wpp[] = {1.0, per, other, named};
  for (int32_t r = 0; r < 4; ++r) {
    RankCpuStats& c = AddRank(h.a, r);
    c.work_per_probe = wpp[r] * 0.3;
    c.work_per_probe_steps = 40;
  }
  NameStalledRank3(h.v);
  return h;
}

TEST(HiddenProbeWorkTest, MoreWorkForItsCoresSpeedBehindAnotherCulpritIsNamed) {
  Hidden h = ProbeWorkBehind(1.37);
  std::vector<std::string> next;
  ASSERT_TRUE(AlsoCpuWorkCulprit(h.v, h.a, next));
  ASSERT_EQ(h.v.culprits.size(), 2u);
  const Culprit& c = h.v.culprits[1];
  EXPECT_EQ(c.entity.rank, 1);
  EXPECT_EQ(c.cause_class, CauseClass::kComputeSlow);
  // Against ranks 0 and 2 only (0.995): 1.377x.
  EXPECT_NEAR(c.slowdown.value_or(0), 0.377, 0.001);
  EXPECT_DOUBLE_EQ(c.confidence, kHiddenWorkPerProbeConfidence);
  ASSERT_FALSE(c.evidence.empty());
  EXPECT_NE(c.evidence[0].find("rank 1's thread used 1.38x the CPU time per step for its core's "
                               "speed of the other ranks not named"),
            std::string::npos)
      << c.evidence[0];
  EXPECT_NE(c.evidence[0].find("the others read at most 1.01x"), std::string::npos)
      << c.evidence[0];
  EXPECT_NE(c.evidence.back().find("hidden behind rank 3"), std::string::npos) << c.evidence.back();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NE(next[0].find("compare what rank 1 computes"), std::string::npos) << next[0];
}

TEST(HiddenProbeWorkTest, EachFloorHolds) {
  std::vector<std::string> next;
  Hidden below = ProbeWorkBehind(1.22);  // under 1.25x (a CPU hog's ranks read to 1.20x)
  EXPECT_FALSE(AlsoCpuWorkCulprit(below.v, below.a, next));
  Hidden two = ProbeWorkBehind(1.37, 1.12);  // rank 2 1.12x rank 0's: a second more-work rank
  EXPECT_FALSE(AlsoCpuWorkCulprit(two.v, two.a, next));
  // A named rank that waits for a CPU reads low: no baseline. Against all
  // three others rank 1's 1.15 would read 1.28x (over 0.9); against ranks
  // 0 and 2, 1.21x.
  Hidden low = ProbeWorkBehind(1.15, 0.9, 0.5);
  EXPECT_FALSE(AlsoCpuWorkCulprit(low.v, low.a, next));
  // Fewer than three ranks not named: a group culprit, or a 3-rank job.
  Hidden group = ProbeWorkBehind(1.37);
  group.v.culprits[0].entity.rank.reset();
  group.v.culprits[0].ranks = {0, 2, 3};
  EXPECT_FALSE(AlsoCpuWorkCulprit(group.v, group.a, next));
  Hidden three = ProbeWorkBehind(1.37);
  three.a.host_cpu.ranks.pop_back();
  three.a.traces.ranks.pop_back();
  three.v.culprits[0].entity.rank = 2;
  EXPECT_FALSE(AlsoCpuWorkCulprit(three.v, three.a, next));
  Hidden comm = ProbeWorkBehind(1.37);  // a throttled link's peers poll in gloo
  comm.v.culprits[0].cause_class = CauseClass::kCommunication;
  EXPECT_FALSE(AlsoCpuWorkCulprit(comm.v, comm.a, next));
  Hidden bound = ProbeWorkBehind(1.37);
  bound.a.traces.findings.push_back(MakeFinding(FindingCode::kTraceCommBound, Entity{.job = true}));
  EXPECT_FALSE(AlsoCpuWorkCulprit(bound.v, bound.a, next));
  Hidden gpu = ProbeWorkBehind(1.37);  // a GPU job: its CPU time is not its compute
  gpu.a.traces.ranks[1].cpu_only = false;
  EXPECT_FALSE(AlsoCpuWorkCulprit(gpu.v, gpu.a, next));
  Hidden few = ProbeWorkBehind(1.37);  // 9 steps: under min_cpu_time_steps
  few.a.host_cpu.ranks[1].work_per_probe_steps = 9;
  EXPECT_FALSE(AlsoCpuWorkCulprit(few.v, few.a, next));
  Hidden alone = ProbeWorkBehind(1.37);  // no culprit to hide behind
  alone.v.culprits.clear();
  alone.v.status = VerdictStatus::kNoStraggler;
  EXPECT_FALSE(AlsoCpuWorkCulprit(alone.v, alone.a, next));
  EXPECT_TRUE(next.empty());
  // Just over the floor names it.
  Hidden at = ProbeWorkBehind(1.26 * 0.99);
  EXPECT_TRUE(AlsoCpuWorkCulprit(at.v, at.a, next));
}

// A 4-rank CPU-only job with nothing else to say: its per-step work ratios
// spread `sigma`, 25 of 40 steps kept; rank 3 reads `top` at `z`.
Analyses Sensitive(double sigma, double top, double z) {
  Analyses a = Job({1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0});
  for (RankCpuStats& r : a.host_cpu.ranks) {
    r.work_probed = true;
    r.work_steps = 25;
    r.work_sigma = sigma;
    r.work_ratio = r.rank == 3 ? top : 0.99;
    r.work_z = r.rank == 3 ? z : -0.3;
  }
  return a;
}

TEST(WorkSensitivityTest, SaysTheStepsATenPercentExcessNeedsAndTheLargestExcess) {
  // d24 w4_compute_1.1 rep 0: rank 3 at 1.05x, 1.3 standard errors; a
  // spread of 0.19: ((5 + 1.645) x 0.19 / 0.1)^2 / (25 / 40) = 255.04.
  Analyses a = Sensitive(0.19, 1.049, 1.3);
  Verdict v;
  v.status = VerdictStatus::kNoStraggler;
  v.summary = "verdict: no straggler found";
  std::vector<std::string> next;
  SayCpuWorkUndecided(v, a, next);
  EXPECT_NE(v.summary.find("the largest excess: rank 3's thread used 1.05x its peers' CPU time per "
                           "step over 25 steps on CPUs as fast, 1.3 standard errors (naming it "
                           "needs >= 1.05x at 5)"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("varies ±19% step to step) a rank with 10% more work stands out in 19 "
                           "runs of 20 over ~256 steps; this run had 40 (25 compared): run ~256 "
                           "steps to tell"),
            std::string::npos)
      << v.summary;
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0].ends_with("run ~256 steps to tell")) << next[0];
}

TEST(WorkSensitivityTest, TheRunsStepsNotTheComparedOnesDecideWhetherItHadEnough) {
  // A spread of 0.06: ((6.645 x 0.06 / 0.1)^2 = 15.9 compared steps, 26
  // of the run's at 25 of 40 kept: more than the 25 compared, fewer than
  // the 40 the run had: enough. Rank 3 at 1.02x is no excess to say.
  std::optional<SensitivityNote> note = WorkSensitivityText(Sensitive(0.06, 1.02, 3));
  ASSERT_TRUE(note.has_value());
  EXPECT_FALSE(note->too_short);
  EXPECT_EQ(note->text.find("the largest excess"), std::string::npos) << note->text;
  EXPECT_TRUE(
      note->text.ends_with("stands out in 19 runs of 20 over ~26 steps; this run had 40 "
                           "(25 compared): enough"))
      << note->text;
  Verdict v;
  v.status = VerdictStatus::kNoStraggler;
  std::vector<std::string> next;
  SayCpuWorkUndecided(v, Sensitive(0.06, 1.02, 3), next);
  EXPECT_TRUE(next.empty());  // nothing to do
}

TEST(WorkSensitivityTest, TheLargestExcessIsOneNoOtherRuleSpeaksFor) {
  // Under 1 standard error; or at the excess floor (CpuWorkUndecided, or
  // a finding, speaks for it); or on a core that explains it: not said.
  EXPECT_EQ(WorkSensitivityText(Sensitive(0.19, 1.045, 0.8))->text.find("largest"),
            std::string::npos);
  EXPECT_EQ(WorkSensitivityText(Sensitive(0.19, 1.3, 8))->text.find("largest"), std::string::npos);
  Analyses core = Sensitive(0.19, 1.045, 1.3);
  Finding slow = MakeFinding(FindingCode::kHostCpuSlow, Entity{.rank = 3});
  slow.slowdown = 0.04;  // >= 0.75 of its 4.5%
  core.host_cpu.findings.push_back(slow);
  EXPECT_EQ(WorkSensitivityText(core)->text.find("largest"), std::string::npos);
  EXPECT_EQ(WorkSensitivityText(Sensitive(0.19, 1.08, 2))->text.find("largest"), std::string::npos);
  // The same 1.045x at 1.3 standard errors on a core as fast is said.
  EXPECT_NE(WorkSensitivityText(Sensitive(0.19, 1.045, 1.3))->text.find("largest"),
            std::string::npos);
}

TEST(WorkSensitivityTest, NotForTwoRanksAGpuJobOrAStragglerVerdict) {
  Analyses two = Job({1.0, 1.0}, {1.0, 1.0});
  for (RankCpuStats& r : two.host_cpu.ranks) {
    r.work_probed = true;
    r.work_steps = 25;
    r.work_sigma = 0.19;
    r.work_ratio = 1.0;
  }
  EXPECT_FALSE(WorkSensitivityText(two).has_value());
  Analyses gpu = Sensitive(0.19, 1.05, 1.3);
  for (RankTraceStats& t : gpu.traces.ranks) t.cpu_only = false;
  EXPECT_FALSE(WorkSensitivityText(gpu).has_value());
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  v.summary = "verdict: rank 1";
  std::vector<std::string> next;
  SayCpuWorkUndecided(v, Sensitive(0.19, 1.05, 1.3), next);
  EXPECT_EQ(v.summary, "verdict: rank 1");
}

// A 2-rank CPU-only job: rank 1's thread used `ratio` x rank 0's CPU time
// per step on probed steps, `z` standard errors over 25 steps.
Analyses TwoRankExcess(double ratio, double z) {
  Analyses a = Job({1.0, 1.0}, {1.0, ratio});
  for (RankCpuStats& r : a.host_cpu.ranks) {
    r.work_probed = true;
    r.work_steps = 25;
    r.work_sigma = 0.1;
    r.work_ratio = r.rank == 1 ? ratio : 1 / ratio;
    r.work_z = r.rank == 1 ? z : -z;
  }
  return a;
}

TEST(TwoRankExcessTest, SaysTheExcessAndTheRunThatCanTell) {
  // d28 w2_compute_1.1_r0: the 1.1x rank at 1.09x, "no straggler" alone.
  Verdict v;
  v.status = VerdictStatus::kNoStraggler;
  v.summary = "verdict: no straggler found";
  std::vector<std::string> next;
  SayCpuWorkUndecided(v, TwoRankExcess(1.09, 2.2), next);
  EXPECT_NE(v.summary.find("rank 1's thread used 1.09x its peer's CPU time per step on CPUs as "
                           "fast by the probe (2.2 standard errors over 25 steps), but with two "
                           "ranks more steps cannot tell a difference under 15% from their two "
                           "cores'"),
            std::string::npos)
      << v.summary;
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0].ends_with("compare with a third rank, or swap the ranks' cores")) << next[0];
  // Under 1.025x, under 1 standard error, at 1.15x (a finding's rule
  // speaks), or on a core that explains it: nothing said.
  EXPECT_FALSE(TwoRankExcessNote(TwoRankExcess(1.02, 3)).has_value());
  EXPECT_FALSE(TwoRankExcessNote(TwoRankExcess(1.09, 0.8)).has_value());
  EXPECT_FALSE(TwoRankExcessNote(TwoRankExcess(1.15, 6)).has_value());
  Analyses core = TwoRankExcess(1.09, 2.2);
  Finding slow = MakeFinding(FindingCode::kHostCpuSlow, Entity{.rank = 1});
  slow.slowdown = 0.08;  // >= 0.75 of its 9%
  core.host_cpu.findings.push_back(slow);
  EXPECT_FALSE(TwoRankExcessNote(core).has_value());
  // Not with three ranks (WorkSensitivityText speaks there), nor a GPU job.
  Analyses three = Sensitive(0.1, 1.09, 2.2);
  EXPECT_FALSE(TwoRankExcessNote(three).has_value());
  Analyses gpu = TwoRankExcess(1.09, 2.2);
  for (RankTraceStats& t : gpu.traces.ranks) t.cpu_only = false;
  EXPECT_FALSE(TwoRankExcessNote(gpu).has_value());
}

// Where no culprit is named, the core's veto stays whatever its peers say:
// a healthy rank on a slower core alone reads as more work (bench/realjobs
// d11: 1.25x on a core 1.24x slow).
TEST(SameCoreWorkTest, ANamedAloneRankKeepsTheCoresVeto) {
  Hidden h = TwoFaults(12, 22.5);  // confirmed by its core's peer (1.40x)
  std::vector<std::string> next;
  EXPECT_FALSE(CpuWorkCulprit(h.a, next).has_value());
  std::erase_if(h.a.host_cpu.findings,
                [](const Finding& f) { return f.code == FindingCode::kHostCpuSlow; });
  EXPECT_TRUE(CpuWorkCulprit(h.a, next).has_value());
}

// Another rank's extra CPU time that more steps would tell is said instead
// of a slower core: rank 3 at 1.09x over 14 steps, 4.2 standard errors.
TEST(SlowCoreTest, NotWhileAnotherRanksWorkIsUndecided) {
  Analyses a = Job({1.0, 1.42, 1.0, 1.0}, {1.0, 1.12, 1.0, 1.02});
  for (RankCpuStats& r : a.host_cpu.ranks) {
    r.work_probed = true;
    r.work_steps = 14;
    r.work_ratio = r.rank == 3 ? 1.09 : 1.0;
    r.work_z = r.rank == 3 ? 4.2 : 0;
  }
  std::vector<std::string> next;
  ASSERT_TRUE(CpuWorkUndecided(a).has_value());
  EXPECT_FALSE(SlowCoreCulprits(a, {}, next).has_value());
  a.host_cpu.ranks[3].work_ratio = 1.0;  // decided: nothing more to tell
  a.host_cpu.ranks[3].work_z = 0;
  EXPECT_FALSE(CpuWorkUndecided(a).has_value());
  EXPECT_TRUE(SlowCoreCulprits(a, {}, next).has_value());
}

// A 2-rank CPU-only job: rank 1's CPU time over its probe time is `per`
// x rank 0's, its core runs the probe `core` x rank 0's, so its CPU time
// per step is per * core x rank 0's.
Analyses TwoRanks(double per, double core) {
  Analyses a;
  for (int32_t r = 0; r < 2; ++r) {
    RankCpuStats& c = AddRank(a, r);
    c.work_per_probe_steps = 40;
    c.probe_ns = static_cast<DurationNs>(r == 1 ? 80'000 * core : 80'000);
    c.work_per_probe = r == 1 ? 0.3 * per : 0.3;
    c.on_cpu_mean_ns = r == 1 ? 24e6 * per * core : 24e6;
  }
  return a;
}

TEST(ProbeWorkTest, MoreWorkForItsCoresSpeedIsComputeSlow) {
  // bench/realjobs d18 w2_compute_1.5_r2: 1.5x for its core's speed on a
  // core 0.75x as slow: 1.125x the CPU time per step.
  Analyses a = TwoRanks(1.5, 0.75);
  std::vector<std::string> next;
  std::optional<ProbeWork> got = ProbeWorkCulprit(a, next);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->culprit.entity.rank, 1);
  EXPECT_EQ(got->culprit.cause_class, CauseClass::kComputeSlow);
  EXPECT_NEAR(got->culprit.slowdown.value_or(0), 0.5, 1e-9);
  EXPECT_NEAR(got->lost, 0.125 / 1.125, 1e-9);
  EXPECT_EQ(got->culprit.confidence, kTwoRankProbeWorkConfidence);
  ASSERT_FALSE(next.empty());
}

TEST(ProbeWorkTest, EachFloorHolds) {
  std::vector<std::string> next;
  // Under kTwoRankProbeWork: the probe does not feel all that slows a GEMM.
  Analyses mild = TwoRanks(1.3, 1.0);  // 1.3x the CPU time too: only the floor holds
  EXPECT_FALSE(ProbeWorkCulprit(mild, next).has_value());
  // Its faster core hides it all (0.6 x 1.5 = 0.9x the CPU time): the job
  // does not wait for it.
  Analyses hidden = TwoRanks(1.5, 0.6);
  EXPECT_FALSE(ProbeWorkCulprit(hidden, next).has_value());
  // Three ranks: peers on cores as fast tell more work (CpuWorkCulprit).
  Analyses three = TwoRanks(1.5, 0.75);
  RankTraceStats st;
  st.rank = 2;
  st.cpu_only = true;
  three.traces.ranks.push_back(st);
  EXPECT_FALSE(ProbeWorkCulprit(three, next).has_value());
  // A GPU job.
  Analyses gpu = TwoRanks(1.5, 0.75);
  for (RankTraceStats& r : gpu.traces.ranks) r.cpu_only = false;
  EXPECT_FALSE(ProbeWorkCulprit(gpu, next).has_value());
  // Too few steps with both a CPU time and a probe.
  Analyses few = TwoRanks(1.5, 0.75);
  for (RankCpuStats& r : few.host_cpu.ranks) r.work_per_probe_steps = 5;
  EXPECT_FALSE(ProbeWorkCulprit(few, next).has_value());
  EXPECT_TRUE(next.empty());
}

TEST(FasterCoreHidesWorkTest, SaysItOnlyWhereTheFasterCoreHidesItAll) {
  // 1.5x for its core's speed on a core 0.6x as slow: 0.9x the CPU time.
  Analyses hidden = TwoRanks(1.5, 0.6);
  std::optional<std::string> said = FasterCoreHidesWork(hidden);
  ASSERT_TRUE(said.has_value());
  EXPECT_NE(said->find("rank 1's thread used 1.50x its peer's"), std::string::npos) << *said;
  EXPECT_NE(said->find("swap the ranks' cores"), std::string::npos) << *said;
  // Under kTwoRankProbeWork.
  EXPECT_FALSE(FasterCoreHidesWork(TwoRanks(1.3, 0.6)).has_value());
  // Its CPU time per step 1.05x or more: ProbeWorkCulprit names it.
  EXPECT_FALSE(FasterCoreHidesWork(TwoRanks(1.5, 0.75)).has_value());
  // Its core no faster: nothing hides (1.5 x 1.0: ProbeWorkCulprit's too).
  EXPECT_FALSE(FasterCoreHidesWork(TwoRanks(1.5, 1.0)).has_value());
  // Three ranks: a peer on a core as fast tells.
  Analyses three = TwoRanks(1.5, 0.6);
  RankTraceStats st;
  st.rank = 2;
  st.cpu_only = true;
  three.traces.ranks.push_back(st);
  EXPECT_FALSE(FasterCoreHidesWork(three).has_value());
}

// A one-rank culprit read from the traces, +23%, on a core that ran the
// probe 1.54x its peer's over the run (host.cpu_slow) and `window` x its
// peer's in the profiled steps, where its CPU time was `window_cpu` x its
// peer's: renamed host_contention unless its core there was faster.
Culprit Enriched(double window, double window_cpu) {
  Analyses a;
  for (int32_t r = 0; r < 2; ++r) {
    RankCpuStats& c = AddRank(a, r);
    c.window_probe_ns = static_cast<DurationNs>(r == 1 ? 50'000 * window : 50'000);
    c.window_cpu_ns = static_cast<DurationNs>(r == 1 ? 20e6 * window_cpu : 20e6);
  }
  Finding slow = MakeFinding(FindingCode::kHostCpuSlow, Entity{.rank = 1});
  slow.slowdown = 0.54;
  slow.evidence.push_back(
      Evidence{"host CPU: the probe takes 1.54x as long on rank 1", std::nullopt});
  a.host_cpu.findings.push_back(slow);
  a.traces.findings.push_back(MakeFinding(FindingCode::kTraceComputeSlow, Entity{.rank = 1}));
  Culprit c;
  c.entity.rank = 1;
  c.cause_class = CauseClass::kComputeSlow;
  c.slowdown = 0.23;
  c.confidence = 0.75;
  std::vector<std::string> next;
  EnrichHostCpu(c, a, next);
  return c;
}

TEST(EnrichHostCpuTest, TheRunsSlowerCoreDoesNotExplainACulpritOnAFasterOneThere) {
  // bench/realjobs d16: 0.59x there, its CPU time 1.14x: 1.9x per probe.
  Culprit kept = Enriched(0.59, 1.14);
  EXPECT_EQ(kept.cause_class, CauseClass::kComputeSlow);
  ASSERT_FALSE(kept.evidence.empty());
  EXPECT_NE(kept.evidence.back().find("0.59x in the profiled steps where it was read"),
            std::string::npos)
      << kept.evidence.back();
  // Its core there within the probes' band (0.96x): the run's core explains it.
  EXPECT_EQ(Enriched(0.96, 1.14).cause, "host_contention");
  // Faster there, but no more CPU time for its core's speed (1.09x): the same.
  EXPECT_EQ(Enriched(0.59, 0.59 * 1.09).cause, "host_contention");
}

// A compute-slow culprit from the traces whose core ran the probe `core` x
// its peer's on average and whose work per probe is `work` x theirs.
TEST(SlowerCoreOnAverageTest, TheSameWorkOnASlowerCoreIsTheHosts) {
  // A core slow all run: its median probe `core` x its peer's too.
  auto rename = [](double core, double work, bool cpu_only = true, double window = 1.0) {
    Analyses a = TwoRanks(work, core);
    for (RankTraceStats& r : a.traces.ranks) r.cpu_only = cpu_only;
    a.host_cpu.ranks[0].probe_mean_ns = 50'000;
    a.host_cpu.ranks[1].probe_mean_ns = 50'000 * core;
    a.host_cpu.ranks[0].window_probe_ns = 50'000;
    a.host_cpu.ranks[1].window_probe_ns = static_cast<DurationNs>(50'000 * core);
    a.host_cpu.ranks[0].window_cpu_ns = 20'000'000;
    a.host_cpu.ranks[1].window_cpu_ns = static_cast<DurationNs>(20'000'000 * core * window);
    Finding ops = MakeFinding(FindingCode::kTraceComputeSlow, Entity{.rank = 1});
    ops.next_steps = {"check rank 1's GPU"};
    a.traces.findings.push_back(ops);
    Culprit c;
    c.entity.rank = 1;
    c.cause_class = CauseClass::kComputeSlow;
    c.slowdown = 0.16;
    std::vector<std::string> next = {"check rank 1's GPU"};
    const bool renamed = SlowerCoreOnAverage(c, a, next);
    if (renamed) {
      EXPECT_EQ(c.cause_class, CauseClass::kHostStall);
      EXPECT_EQ(c.cause.value_or(""), "host_contention");
      EXPECT_EQ(next.size(), 1u);  // the ops' step gone, the host's first
      EXPECT_NE(next.front().find("compare the cores of rank 1"), std::string::npos);
    } else {
      EXPECT_EQ(c.cause_class, CauseClass::kComputeSlow);
    }
    return renamed;
  };
  // bench/realjobs d19 w2_healthy_0_r3: 1.32x the mean probe, 1.02x work.
  EXPECT_TRUE(rename(1.32, 1.02));
  EXPECT_FALSE(rename(1.18, 1.02));                      // its core not slower enough on average
  EXPECT_FALSE(rename(1.32, 1.06));                      // more work for its core's speed too
  EXPECT_FALSE(rename(1.32, 1.02, /*cpu_only=*/false));  // a GPU job
  // More work for its core's speed in the profiled steps, where the
  // culprit was read (a fault that began late in the run).
  EXPECT_FALSE(rename(1.32, 1.02, true, /*window=*/1.15));
  EXPECT_TRUE(rename(1.32, 1.02, true, /*window=*/1.05));
}

TEST(SlowerCoreOnAverageTest, APartTimeSlowCoreIsReadFromTheRunsMeans) {
  auto rename = [](double median, double cpu, double window) {
    // bench/realjobs d27 w2_healthy_0_r3: probes of 50 or ~95 us, mean
    // 1.33x its peer's, median 1.08x; per-step work per probe 1.09x.
    Analyses a = TwoRanks(1.09, median);
    a.host_cpu.ranks[1].on_cpu_mean_ns = 24e6 * cpu;
    a.host_cpu.ranks[0].probe_mean_ns = 50'000;
    a.host_cpu.ranks[1].probe_mean_ns = 50'000 * 1.33;
    a.host_cpu.ranks[0].window_probe_ns = 50'000;
    a.host_cpu.ranks[1].window_probe_ns = 50'000;
    a.host_cpu.ranks[0].window_cpu_ns = 20'000'000;
    a.host_cpu.ranks[1].window_cpu_ns = static_cast<DurationNs>(20'000'000 * window);
    a.traces.findings.push_back(MakeFinding(FindingCode::kTraceComputeSlow, Entity{.rank = 1}));
    Culprit c;
    c.entity.rank = 1;
    c.cause_class = CauseClass::kComputeSlow;
    c.slowdown = 0.25;
    std::vector<std::string> next;
    const bool renamed = SlowerCoreOnAverage(c, a, next) && c.cause == "host_contention";
    if (renamed) {
      EXPECT_NE(c.evidence.back().find("1.33x as long as its peers' on average over the run, "
                                       "1.08x by the median (slowed part of the time)"),
                std::string::npos)
          << c.evidence.back();
      EXPECT_NE(c.evidence.back().find("1.05x for its core's mean speed"), std::string::npos)
          << c.evidence.back();
    }
    return renamed;
  };
  // CPU time 1.40x: 1.05x for its core's mean speed (the window 1.135x).
  EXPECT_TRUE(rename(1.08, 1.40, 1.135));
  EXPECT_FALSE(rename(1.08, 1.50, 1.135));  // 1.13x for its mean core: more work
  EXPECT_FALSE(rename(1.08, 1.40, 1.25));   // more work in the profiled steps
  // Slow all the time (median 1.25x, mean 1.33x): per step, 1.09x is more work.
  EXPECT_FALSE(rename(1.25, 1.40, 1.05));
}

}  // namespace
}  // namespace laggard::verdict_internal
