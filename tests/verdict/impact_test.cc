// What a verdict says a culprit costs: an upper bound at most 1 - 1/(1 +
// slowdown) of the culprit's own slowdown, or the what-if replay's figure,
// and the words that say which (verdict/verdict_internal.h).

#include <gtest/gtest.h>

#include "analysis/analyze_run.h"
#include "verdict/verdict.h"
#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

Verdict RankCulprit(double slowdown, double lost) {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity.rank = 5;
  c.slowdown = slowdown;
  v.culprits.push_back(c);
  v.throughput_lost = lost;
  return v;
}

// Eight ranks' traces where the others did not visibly wait: the delay
// share read ~100%, but a rank 1.24x as slow costs at most 19%.
TEST(ImpactTest, UpperBoundIsCappedByTheCulpritsOwnSlowdown) {
  Verdict v = RankCulprit(0.24, 1.0);
  BoundByCulprit(v, 8);
  ASSERT_TRUE(v.throughput_lost.has_value());
  EXPECT_NEAR(*v.throughput_lost, 0.24 / 1.24, 1e-9);
  EXPECT_NEAR(*v.gpu_hours_per_day, 0.24 / 1.24 * 8 * 24, 1e-6);
  EXPECT_EQ(CostPhrase(v), ", costs up to ~19% of job throughput");
}

TEST(ImpactTest, AFigureBelowTheBoundIsKept) {
  Verdict v = RankCulprit(0.5, 0.1);
  BoundByCulprit(v, 4);
  EXPECT_DOUBLE_EQ(*v.throughput_lost, 0.1);
}

TEST(ImpactTest, NoSlowdownOrAJobCulpritLeavesTheFigure) {
  Verdict stall = RankCulprit(0, 0.4);
  stall.culprits[0].slowdown.reset();
  BoundByCulprit(stall, 4);
  EXPECT_DOUBLE_EQ(*stall.throughput_lost, 0.4);
  Verdict job = RankCulprit(0.1, 0.4);
  job.culprits[0].entity = Entity{};
  job.culprits[0].entity.job = true;
  BoundByCulprit(job, 4);
  EXPECT_DOUBLE_EQ(*job.throughput_lost, 0.4);
}

TEST(ImpactTest, AReplayFigureIsNotBoundAndSaysSo) {
  Verdict v = RankCulprit(0.1, 0.3);
  v.impact_method = ImpactMethod::kReplay;
  BoundByCulprit(v, 4);
  EXPECT_DOUBLE_EQ(*v.throughput_lost, 0.3);
  EXPECT_EQ(CostPhrase(v), ", costs ~30% of job throughput (what-if replay)");
  EXPECT_EQ(ImpactMethodName(v.impact_method), "replay");
  v.throughput_lost.reset();
  EXPECT_EQ(CostPhrase(v), "");
}

// A job whose step time rose from 0.80 s to 0.87 s at step 30 (a cost of
// 1 - 0.80 / 0.87 = 8.0%), with `ranks` step series.
Analyses ShiftAt(int64_t first_step, std::optional<int64_t> last_step = std::nullopt) {
  Analyses a;
  LevelShift shift;
  shift.first_step = first_step;
  shift.last_step = last_step;
  shift.steps = 90;
  shift.before_s = 0.80;
  shift.during_s = 0.87;
  a.steps.job.level_shift = shift;
  a.steps.job.ranks = 8;
  return a;
}

Verdict NetworkCulprit() {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity.host = "node-04";
  v.culprits.push_back(c);
  v.summary = "verdict: node-04 is the straggler — communication: nic_degraded, confidence medium";
  return v;
}

// A culprit no step time priced (a link read from ibstat) gets the job's
// own before-and-after figure, said in its summary and its steps.
TEST(ImpactTest, AnUnpricedCulpritIsPricedByTheJobsLevelShift) {
  Verdict v = NetworkCulprit();
  ASSERT_TRUE(PriceByLevelShift(v, ShiftAt(30)));
  EXPECT_NEAR(*v.throughput_lost, 1 - 0.80 / 0.87, 1e-9);
  EXPECT_EQ(v.impact_method, ImpactMethod::kBeforeAfter);
  EXPECT_EQ(ImpactMethodName(v.impact_method), "before_after");
  EXPECT_EQ(v.impact_first_step, 30);
  EXPECT_FALSE(v.impact_last_step.has_value());
  EXPECT_NEAR(*v.gpu_hours_per_day, (1 - 0.80 / 0.87) * 8 * 24, 1e-6);
  EXPECT_EQ(v.summary,
            "verdict: node-04 is the straggler — communication: nic_degraded, confidence medium, "
            "costs ~8% of job throughput since step 30 (step times before and after)");
  // A shift that recovered names its steps.
  Verdict w = NetworkCulprit();
  ASSERT_TRUE(PriceByLevelShift(w, ShiftAt(30, 59)));
  EXPECT_EQ(CostPhrase(w),
            ", cost ~8% of job throughput in steps 30-59 (step times before and after)");
}

TEST(ImpactTest, AnUpperBoundGivesWayOnlyToAMeasurementItsOnsetTies) {
  // Rank 5 slow from step 31, bounded at 19%: the job's 8% since step 30
  // replaces the bound, and the summary's phrase with it.
  Verdict v = RankCulprit(0.24, 0.19);
  v.culprits[0].onset_step = 31;
  v.summary = "verdict: rank 5 is the straggler, confidence high" + CostPhrase(v) + "; also x";
  ASSERT_TRUE(PriceByLevelShift(v, ShiftAt(30)));
  EXPECT_EQ(v.summary,
            "verdict: rank 5 is the straggler, confidence high, costs ~8% of job throughput since "
            "step 30 (step times before and after); also x");
  // No onset of its own: the shift may be another event's; the bound stays.
  Verdict unknown = RankCulprit(0.24, 0.19);
  EXPECT_FALSE(PriceByLevelShift(unknown, ShiftAt(30)));
  EXPECT_EQ(unknown.impact_method, ImpactMethod::kUpperBound);
  // An onset far from the shift's: another event.
  Verdict far = RankCulprit(0.24, 0.19);
  far.culprits[0].onset_step = 50;
  EXPECT_FALSE(PriceByLevelShift(far, ShiftAt(30)));
  Verdict far_unpriced = NetworkCulprit();
  far_unpriced.culprits[0].onset_step = 50;
  EXPECT_FALSE(PriceByLevelShift(far_unpriced, ShiftAt(30)));
  // A measurement above the bound: the culprit cannot cost that much; the
  // rest is something else.
  Verdict small = RankCulprit(0.05, 0.04);
  small.culprits[0].onset_step = 30;
  EXPECT_FALSE(PriceByLevelShift(small, ShiftAt(30)));
  EXPECT_DOUBLE_EQ(*small.throughput_lost, 0.04);
}

// A culprit from traces has no onset step, but its GPU's thermal finding
// has an onset time: a shift that began then is its event, and the
// measurement replaces the traces' upper bound. One that began a minute
// away is another event's, and the bound stays.
TEST(ImpactTest, AGpuAnomalyThatBeganWithTheShiftTiesItToTheCulprit) {
  constexpr TimeNs kShiftStart = 1'764'000'060'000'000'000;
  auto with_gpu_onset = [&](TimeNs onset, FindingCode code) {
    Analyses a = ShiftAt(71);
    a.steps.job.level_shift->start_time = kShiftStart;
    Finding f;
    f.code = code;
    f.entity.rank = 5;
    f.onset_time = onset;
    a.hardware.findings.push_back(f);
    return a;
  };
  Verdict v = RankCulprit(0.24, 0.14);  // bound 19%; the traces' figure 14%
  ASSERT_TRUE(
      PriceByLevelShift(v, with_gpu_onset(kShiftStart + 4'000'000'000, FindingCode::kGpuThermal)));
  EXPECT_EQ(v.impact_method, ImpactMethod::kBeforeAfter);
  EXPECT_NEAR(*v.throughput_lost, 1 - 0.80 / 0.87, 1e-9);  // 8%, within the bound
  Verdict far = RankCulprit(0.24, 0.14);
  EXPECT_FALSE(PriceByLevelShift(
      far, with_gpu_onset(kShiftStart + 60'000'000'000, FindingCode::kGpuThermal)));
  EXPECT_DOUBLE_EQ(*far.throughput_lost, 0.14);
  // Not a cause (a throttle history of past hours): no tie.
  Verdict history = RankCulprit(0.24, 0.14);
  EXPECT_FALSE(
      PriceByLevelShift(history, with_gpu_onset(kShiftStart, FindingCode::kGpuThrottleHistory)));
  // No start time for the shift: no tie, the bound stays.
  Verdict untimed = RankCulprit(0.24, 0.14);
  Analyses a = with_gpu_onset(kShiftStart, FindingCode::kGpuThermal);
  a.steps.job.level_shift->start_time.reset();
  EXPECT_FALSE(PriceByLevelShift(untimed, a));
}

// A pause culprit is priced by the job's isolated slow steps; another
// host-stall culprit, or a figure already there, is not.
TEST(ImpactTest, APauseCulpritIsPricedByItsSlowSteps) {
  Analyses a;
  a.steps.job.spike_steps = {30, 80};
  a.steps.job.spike_cost = 0.012;
  a.steps.job.spike_cost_from = 30;
  a.steps.job.ranks = 16;
  Finding pause;
  pause.code = FindingCode::kHostPause;
  pause.entity.rank = 3;
  a.pauses.findings.push_back(pause);
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity.rank = 3;
  c.cause_class = CauseClass::kHostStall;
  v.culprits.push_back(c);
  v.summary = "verdict: rank 3 is the straggler — host stall: pause, confidence low";
  Verdict other = v;
  ASSERT_TRUE(PriceByPauses(v, a));
  EXPECT_DOUBLE_EQ(*v.throughput_lost, 0.012);
  EXPECT_EQ(ImpactMethodName(v.impact_method), "slow_steps");
  EXPECT_EQ(v.summary,
            "verdict: rank 3 is the straggler — host stall: pause, confidence low, costs ~1.2% of "
            "job throughput since step 30 (its slow steps' extra time)");
  other.culprits[0].entity.rank = 4;
  EXPECT_FALSE(PriceByPauses(other, a));
  other.culprits[0].entity.rank = 3;
  other.throughput_lost = 0.05;
  EXPECT_FALSE(PriceByPauses(other, a));
  EXPECT_DOUBLE_EQ(*other.throughput_lost, 0.05);
  // The job's step time also changed level: its slow steps are not all
  // pauses.
  Verdict shifted = v;
  shifted.throughput_lost.reset();
  a.steps.job.level_shift = ShiftAt(60).steps.job.level_shift;
  EXPECT_FALSE(PriceByPauses(shifted, a));
}

// Where nothing ties the shift to the culprit, it is not priced when
// another culprit could own it, when the culprit's own slowdown cannot cost
// that much, or when its GPU's anomaly began at another time. A shift that
// came back costs no GPU-hours per day.
TEST(ImpactTest, AnUntiedShiftIsNotGivenToACulpritItCannotBelongTo) {
  Verdict two = NetworkCulprit();
  Culprit second;
  second.entity.job = true;
  two.culprits.push_back(second);
  EXPECT_FALSE(PriceByLevelShift(two, ShiftAt(30)));
  Verdict small = NetworkCulprit();
  small.culprits[0].entity = Entity{};
  small.culprits[0].entity.rank = 5;
  small.culprits[0].slowdown = 0.03;  // at most 2.9%, the shift is 8%
  EXPECT_FALSE(PriceByLevelShift(small, ShiftAt(30)));
  Verdict gpu = NetworkCulprit();
  gpu.culprits[0].entity = Entity{};
  gpu.culprits[0].entity.rank = 5;
  Analyses a = ShiftAt(30);
  a.steps.job.level_shift->start_time = 1'764'000'000'000'000'000;
  Finding f;
  f.code = FindingCode::kGpuPowerCap;
  f.entity.rank = 5;
  f.onset_time = 1'764'000'000'000'000'000 + 300'000'000'000;  // 5 min later
  a.hardware.findings.push_back(f);
  EXPECT_FALSE(PriceByLevelShift(gpu, a));
  Verdict back = NetworkCulprit();
  ASSERT_TRUE(PriceByLevelShift(back, ShiftAt(30, 59)));
  EXPECT_FALSE(back.gpu_hours_per_day.has_value());
}

TEST(ImpactTest, ReplaysPatternsAndVerdictsWithoutACulpritAreNotPriced) {
  Verdict replay = RankCulprit(0.3, 0.2);
  replay.impact_method = ImpactMethod::kReplay;
  replay.culprits[0].onset_step = 30;
  EXPECT_FALSE(PriceByLevelShift(replay, ShiftAt(30)));
  Verdict periodic = NetworkCulprit();
  periodic.culprits[0].pattern = Pattern::kPeriodic;
  EXPECT_FALSE(PriceByLevelShift(periodic, ShiftAt(30)));
  Verdict none;
  none.status = VerdictStatus::kNoStraggler;
  EXPECT_FALSE(PriceByLevelShift(none, ShiftAt(30)));
  Verdict inconclusive = NetworkCulprit();
  inconclusive.status = VerdictStatus::kInconclusive;
  EXPECT_FALSE(PriceByLevelShift(inconclusive, ShiftAt(30)));
  // Without a shift nothing changes.
  Verdict plain = NetworkCulprit();
  EXPECT_FALSE(PriceByLevelShift(plain, Analyses()));
  EXPECT_FALSE(plain.throughput_lost.has_value());
  // A job-wide culprit (variable work since step 30) is priced.
  Verdict job;
  job.status = VerdictStatus::kJobWide;
  Culprit c;
  c.entity.job = true;
  job.culprits.push_back(c);
  job.summary = "verdict: workload imbalance — the work per rank varies";
  EXPECT_TRUE(PriceByLevelShift(job, ShiftAt(30)));
  EXPECT_EQ(job.summary,
            "verdict: workload imbalance — the work per rank varies, costs ~8% of job throughput "
            "since step 30 (step times before and after)");
}

// A lone rank the others barely wait for is no straggler (bench/realjobs
// d10: rank 0 on a slower core, last at 1 of 10 collectives, 0.36%).
TEST(CostlessCulpritTest, ARankThatCostsUnderOnePercentIsNoStraggler) {
  auto verdict = [](double lost) {
    Verdict v;
    v.status = VerdictStatus::kStraggler;
    Culprit c;
    c.entity.rank = 0;
    c.cause_class = CauseClass::kHostStall;
    c.cause = "host_contention";
    c.slowdown = 0.27;
    c.confidence = 0.95;
    c.evidence.push_back("host CPU: its probe takes 1.28x as long");
    v.culprits.push_back(c);
    v.throughput_lost = lost;
    v.impact_method = ImpactMethod::kUpperBound;
    v.summary = "verdict: rank 0 is the straggler";
    return v;
  };
  Verdict v = verdict(0.0036);
  EXPECT_TRUE(DropCostlessCulprit(v));
  EXPECT_EQ(v.status, VerdictStatus::kNoStraggler);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_FALSE(v.throughput_lost.has_value());
  EXPECT_EQ(v.summary,
            "verdict: no straggler — rank 0 runs slower (+27%) (host_stall/host_contention), but "
            "the others wait on it so little that it costs at most 0.4% of job throughput: host "
            "CPU: its probe takes 1.28x as long");
  Verdict costly = verdict(0.02);
  EXPECT_FALSE(DropCostlessCulprit(costly));
  EXPECT_EQ(costly.status, VerdictStatus::kStraggler);
  // Priced another way (a replay, slow steps), or two culprits: kept.
  Verdict replay = verdict(0.0036);
  replay.impact_method = ImpactMethod::kReplay;
  EXPECT_FALSE(DropCostlessCulprit(replay));
  Verdict two = verdict(0.0036);
  two.culprits.push_back(two.culprits.front());
  two.culprits.back().entity.rank = 3;
  EXPECT_FALSE(DropCostlessCulprit(two));
}

}  // namespace
}  // namespace laggard::verdict_internal
