// The live stall detector: which rank stopped reporting steps while the
// others wait, from step reports alone, and the verdict `laggard watch`
// gives on it.

#include "analysis/hangs/stall_detector.h"

#include <gtest/gtest.h>

#include "analysis/analyze_run.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

constexpr TimeNs kT0 = 1'714'564'800'000'000'000;  // 2024-05-01T12:00:00Z
constexpr DurationNs kSecond = 1'000'000'000;

RankProgress Rank(int32_t rank, int64_t last_step, TimeNs last_report,
                  DurationNs typical = kSecond) {
  RankProgress p;
  p.rank = rank;
  p.host = "node-" + std::to_string(rank / 4);
  p.gpu = rank % 4;
  p.last_step = last_step;
  p.last_report_ns = last_report;
  p.typical_ns = typical;
  p.reports = 50;
  return p;
}

// Eight ranks of a synchronous job at 1 s a step: rank 5 never reported
// step 49, the others did (at kT0) and wait in step 50.
std::vector<RankProgress> SyncHang() {
  std::vector<RankProgress> ranks;
  for (int32_t r = 0; r < 8; ++r) {
    ranks.push_back(r == 5 ? Rank(r, 48, kT0 - kSecond) : Rank(r, 49, kT0));
  }
  return ranks;
}

TEST(StallDetectorTest, RankBehindTheWaitingOthersIsStalledOnceSilentLongEnough) {
  // The threshold: 1.5 x 1 s + 5 s = 6.5 s after rank 5's last report.
  StallAnalysis early = FindStalls(SyncHang(), kT0 + 5 * kSecond);
  EXPECT_TRUE(early.judged);
  EXPECT_EQ(early.silence_ns, 6'500'000'000);
  EXPECT_TRUE(early.stalled.empty());
  EXPECT_TRUE(early.findings.empty());

  StallAnalysis a = FindStalls(SyncHang(), kT0 + 6 * kSecond);
  ASSERT_EQ(a.stalled.size(), 1u);
  EXPECT_EQ(a.stalled[0].rank, 5);
  EXPECT_EQ(a.stalled[0].last_step, 48);
  EXPECT_EQ(a.stalled[0].steps_behind, 1);
  EXPECT_EQ(a.stalled[0].silent_ns, 7 * kSecond);
  EXPECT_FALSE(a.job_stalled);
  ASSERT_EQ(a.findings.size(), 1u);
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.code, FindingCode::kHangRankStalled);
  EXPECT_EQ(f.entity.rank, 5);
  EXPECT_EQ(f.entity.host, "node-1");
  EXPECT_EQ(f.entity.gpu, 1);
  EXPECT_EQ(f.onset_step, 49);
  EXPECT_EQ(f.message,
            "rank 5 (node-1 GPU 1) stopped reporting after step 48, 7.0 s ago (typical step "
            "1.0 s), while 7 of the 8 ranks reported step 49 and wait for it");
  EXPECT_GE(f.confidence, 0.8);
  ASSERT_FALSE(f.next_steps.empty());
  EXPECT_NE(f.next_steps[0].find("py-spy dump"), std::string::npos);
}

TEST(StallDetectorTest, TheThresholdScalesWithTheTypicalStep) {
  std::vector<RankProgress> ranks = SyncHang();
  for (RankProgress& p : ranks) p.typical_ns = 60 * kSecond;
  // 1.5 x 60 s + 5 s = 95 s: well inside the 2 x 60 s + 10 s the alert has.
  EXPECT_TRUE(FindStalls(ranks, kT0 + 90 * kSecond).stalled.empty());
  EXPECT_EQ(FindStalls(ranks, kT0 + 95 * kSecond).stalled.size(), 1u);
}

TEST(StallDetectorTest, RanksThatStopAtTheSameStepAreAJobStallWithNoRankBlamed) {
  std::vector<RankProgress> ranks;
  for (int32_t r = 0; r < 8; ++r) ranks.push_back(Rank(r, 49, kT0 + r * 1'000'000));
  StallAnalysis a = FindStalls(ranks, kT0 + 30 * kSecond);
  EXPECT_TRUE(a.stalled.empty());
  EXPECT_TRUE(a.job_stalled);
  EXPECT_EQ(a.job_step, 49);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangJobStalled);
  EXPECT_TRUE(a.findings[0].entity.job);
  EXPECT_FALSE(a.findings[0].entity.rank);
  // Still running: nothing at all.
  StallAnalysis running = FindStalls(ranks, kT0 + 2 * kSecond);
  EXPECT_FALSE(running.job_stalled);
  EXPECT_TRUE(running.findings.empty());
}

TEST(StallDetectorTest, RankThatStopsWhileTheOthersGoOnIsStalled) {
  // Ranks that do not wait for each other: rank 2 stopped at step 10, the
  // others are at step 40 and still reporting.
  std::vector<RankProgress> ranks = {Rank(0, 40, kT0), Rank(1, 40, kT0),
                                     Rank(2, 10, kT0 - 30 * kSecond), Rank(3, 40, kT0)};
  StallAnalysis a = FindStalls(ranks, kT0 + kSecond / 2);
  ASSERT_EQ(a.stalled.size(), 1u);
  EXPECT_EQ(a.stalled[0].rank, 2);
  EXPECT_EQ(a.stalled[0].steps_behind, 30);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_NE(a.findings[0].message.find("and go on"), std::string::npos) << a.findings[0].message;
  EXPECT_LT(a.findings[0].confidence, 0.8);
}

TEST(StallDetectorTest, MostRanksBehindAFewAheadBlamesNoRank) {
  // Seven ranks at step 48, one at 49: the one ahead is not evidence against
  // seven others.
  std::vector<RankProgress> ranks;
  for (int32_t r = 0; r < 8; ++r) ranks.push_back(Rank(r, r == 0 ? 49 : 48, kT0));
  StallAnalysis a = FindStalls(ranks, kT0 + 30 * kSecond);
  EXPECT_TRUE(a.stalled.empty());
  EXPECT_TRUE(a.job_stalled);
}

TEST(StallDetectorTest, TwoRanksEachBehindOneAheadAreBothStalledInATwoRankJob) {
  StallAnalysis a = FindStalls({Rank(0, 49, kT0), Rank(1, 48, kT0 - kSecond)}, kT0 + 10 * kSecond);
  ASSERT_EQ(a.stalled.size(), 1u);
  EXPECT_EQ(a.stalled[0].rank, 1);
}

TEST(StallDetectorTest, RanksWithTooFewReportsAreNotJudged) {
  std::vector<RankProgress> ranks = SyncHang();
  ranks[5].reports = 2;
  StallAnalysis a = FindStalls(ranks, kT0 + 60 * kSecond);
  EXPECT_TRUE(a.stalled.empty());
  // The other seven, all at step 49 and silent: a job stall.
  EXPECT_TRUE(a.job_stalled);
  EXPECT_FALSE(FindStalls({Rank(0, 49, kT0)}, kT0 + 60 * kSecond).judged);
  EXPECT_FALSE(FindStalls({}, kT0).judged);
}

TEST(StallDetectorTest, AtAHangTheRankWhoseStepsEndBehindIsNamedWithoutAClock) {
  std::vector<RankProgress> ranks = SyncHang();
  for (RankProgress& p : ranks) p.last_report_ns = 0;  // article lines: no wall clock
  ranks[5].last_src = SourceRef{5, 49};
  StallAnalysis a = FindStallsAtHang(ranks);
  EXPECT_TRUE(a.at_hang);
  ASSERT_EQ(a.stalled.size(), 1u);
  EXPECT_EQ(a.stalled[0].rank, 5);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangRankStalled);
  EXPECT_EQ(a.findings[0].message,
            "rank 5 (node-1 GPU 1) never finished step 49: its steps end at step 48, while 7 of "
            "the 8 ranks finished step 49 before the job hung (they wait for it)");
  EXPECT_EQ(a.findings[0].confidence, 0.6);
  ASSERT_FALSE(a.findings[0].evidence.empty());
  EXPECT_EQ(a.findings[0].evidence[0].source->line, 49u);
  // Every log ends at one step, or most end behind: nobody is named.
  for (RankProgress& p : ranks) p.last_step = 49;
  EXPECT_TRUE(FindStallsAtHang(ranks).findings.empty());
  for (RankProgress& p : ranks) p.last_step = p.rank == 0 ? 49 : 48;
  EXPECT_TRUE(FindStallsAtHang(ranks).findings.empty());
}

// A run as `laggard watch` builds it from Prometheus: step records with
// their wall clock. Rank 3 of 4 reported steps 0-18, the others 0-19.
laggard::Run LiveRun() {
  RunBuilder b;
  for (int32_t r = 0; r < 4; ++r) {
    b.SetHost(r, "node-" + std::to_string(r / 2), "prometheus", 0);
    for (int64_t s = 0; s < (r == 3 ? 19 : 20); ++s) {
      b.AddStep(r, s, kSecond, kT0 + s * kSecond, SourceRef{0, 0});
    }
  }
  laggard::Run run;
  b.Finalize(run);
  return run;
}

TEST(StallDetectorTest, ProgressFromStepRecordsUsesTheirEnds) {
  std::vector<RankProgress> p = ProgressFromSteps(LiveRun());
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[3].rank, 3);
  EXPECT_EQ(p[3].last_step, 18);
  EXPECT_EQ(p[3].last_report_ns, kT0 + 19 * kSecond);
  EXPECT_EQ(p[3].typical_ns, kSecond);
  EXPECT_EQ(p[3].reports, 19u);
  EXPECT_EQ(p[3].host, "node-1");
}

TEST(StallDetectorTest, LiveAnalysisGivesAHangVerdictOnTheStalledRankOfflineNone) {
  laggard::Run run = LiveRun();
  AnalysisOptions live;
  live.live_now_ns = kT0 + 30 * kSecond;
  Analyses a = AnalyzeRun(run, live);
  ASSERT_EQ(a.stall.stalled.size(), 1u);
  Verdict v = DecideVerdict(run, a);
  EXPECT_EQ(v.status, VerdictStatus::kHang) << v.summary;
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].entity.rank, 3);
  EXPECT_EQ(v.culprits[0].entity.host, "node-1");
  EXPECT_EQ(v.culprits[0].cause, "stalled");
  EXPECT_NE(v.summary.find("rank 3 (node-1) stopped reporting after step 18"), std::string::npos)
      << v.summary;

  // The same records offline: no "now", no stall.
  Analyses offline = AnalyzeRun(run, AnalysisOptions());
  EXPECT_FALSE(offline.stall.judged);
  EXPECT_NE(DecideVerdict(run, offline).status, VerdictStatus::kHang);
}

TEST(StallDetectorTest, JobStallIsAnInconclusiveVerdict) {
  RunBuilder b;
  for (int32_t r = 0; r < 4; ++r) {
    for (int64_t s = 0; s < 20; ++s) b.AddStep(r, s, kSecond, kT0 + s * kSecond, SourceRef{0, 0});
  }
  laggard::Run run;
  b.Finalize(run);
  AnalysisOptions live;
  live.live_now_ns = kT0 + 60 * kSecond;
  Analyses a = AnalyzeRun(run, live);
  Verdict v = DecideVerdict(run, a);
  EXPECT_EQ(v.status, VerdictStatus::kInconclusive) << v.summary;
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_NE(v.summary.find("the job stopped"), std::string::npos) << v.summary;
}

}  // namespace
}  // namespace laggard
