// The hang detector and the hang verdict: on the Flight Recorder dumps of
// tests/data/hangs (laid out as torch writes them), on real watchdog lines,
// and on small hand-built evidence for the classes the files do not hold.

#include "analysis/hang_detector.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/analyze_run.h"
#include "test_paths.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::IngestAll;
using testing_util::TempDir;
using testing_util::WriteFile;

const std::string kData = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/hangs/";

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

Verdict VerdictOf(const laggard::Run& run, Analyses* a = nullptr) {
  Analyses local = AnalyzeRun(run, AnalysisOptions());
  Verdict v = DecideVerdict(run, local);
  if (a != nullptr) *a = std::move(local);
  return v;
}

TEST(HangDetectorTest, EveryRanksDumpNamesTheRankThatNeverEnqueued) {
  laggard::Run run = IngestAll(FilesIn(kData + "fr_v2.10"));
  ASSERT_EQ(run.hang.dumps.size(), 4u);
  Analyses a;
  Verdict v = VerdictOf(run, &a);
  ASSERT_FALSE(a.hang.findings.empty());
  const Finding& f = a.hang.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHangNotJoined) << f.message;
  EXPECT_EQ(f.entity.rank, 2);
  EXPECT_NE(f.message.find("#6"), std::string::npos) << f.message;
  EXPECT_EQ(v.status, VerdictStatus::kHang);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].entity.rank, 2);
  EXPECT_EQ(v.culprits[0].cause, "not_joined");
  EXPECT_GE(v.culprits[0].confidence, 0.8);  // every member dumped
}

TEST(HangDetectorTest, DumpsOfSomeRanksOnlyAreInconclusiveAndBlameNoSilentRank) {
  // Ranks 0 and 1 wait in #6; ranks 2 and 3 gave no dump: that is not
  // evidence that either of them is the one missing.
  laggard::Run run = IngestAll(FilesIn(kData + "fr_v2.3"));
  ASSERT_EQ(run.hang.dumps.size(), 2u);
  Analyses a;
  Verdict v = VerdictOf(run, &a);
  EXPECT_EQ(v.status, VerdictStatus::kInconclusive) << v.summary;
  EXPECT_TRUE(v.culprits.empty());
  ASSERT_FALSE(a.hang.findings.empty());
  EXPECT_EQ(a.hang.findings[0].code, FindingCode::kHangInconclusive);
  EXPECT_NE(a.hang.findings[0].message.find("2, 3 said nothing"), std::string::npos)
      << a.hang.findings[0].message;
  EXPECT_NE(v.next_steps.at(0).find("TORCH_NCCL_DUMP_ON_TIMEOUT"), std::string::npos);
}

// Hand-built evidence: dumps of a 2-rank default group.
FlightRecorderDump Dump(int32_t rank, int64_t enqueued, int64_t completed,
                        const std::string& op = "nccl:all_reduce",
                        std::vector<int64_t> sizes = {1024}) {
  FlightRecorderDump d;
  d.rank = rank;
  d.version = "2.10";
  d.status.push_back({"0", enqueued, enqueued, completed});
  CollectiveRecord e;
  e.pg_id = "0";
  e.collective_seq = completed + 1;
  e.op = op;
  e.input_sizes = {sizes};
  e.state = CollectiveState::kStarted;
  d.entries.push_back(e);
  return d;
}

laggard::Run TwoRankGroup() {
  laggard::Run run;
  ProcessGroupInfo g;
  g.id = "0";
  g.desc = "default_pg";
  g.ranks = {0, 1};
  run.hang.groups.push_back(g);
  return run;
}

TEST(HangDetectorTest, DifferentOpsUnderOneSequenceNumberAreADesync) {
  laggard::Run run = TwoRankGroup();
  run.hang.groups[0].ranks = {0, 1, 2};
  run.hang.dumps.push_back(Dump(0, 9, 8));
  run.hang.dumps.push_back(Dump(1, 9, 8, "nccl:all_gather", {4096}));
  run.hang.dumps.push_back(Dump(2, 9, 8));
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangDesync) << a.findings[0].message;
  EXPECT_EQ(a.findings[0].ranks, (std::vector<int32_t>{1}));  // the minority
}

TEST(HangDetectorTest, RanksPastTheStuckCollectiveAreAheadNotBlamed) {
  laggard::Run run = TwoRankGroup();
  run.hang.dumps.push_back(Dump(0, 183, 182));
  run.hang.dumps.push_back(Dump(1, 186, 185));
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangDesync);
  EXPECT_EQ(a.findings[0].ranks, (std::vector<int32_t>{0}));
  EXPECT_NE(a.findings[0].message.find("behind by 3"), std::string::npos) << a.findings[0].message;
}

TEST(HangDetectorTest, EveryoneInTheCollectiveWithTransportErrorsNamesTheLink) {
  laggard::Run run = TwoRankGroup();
  run.hang.dumps.push_back(Dump(0, 7, 6));
  run.hang.dumps.push_back(Dump(1, 7, 6));
  HangAnalysis stuck = AnalyzeHang(run);
  ASSERT_FALSE(stuck.findings.empty());
  EXPECT_EQ(stuck.findings[0].code, FindingCode::kHangStuckCollective);

  HangEvent e;
  e.kind = HangEventKind::kTransportError;
  e.rank = 1;
  e.host = "node-2";
  e.peer = "10.0.0.1<45678>";
  e.error_code = 12;
  e.text =
      "node-2:77:80 [1] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<45678> with "
      "error 12";
  run.hang.events.push_back(e);
  HangAnalysis net = AnalyzeHang(run);
  ASSERT_FALSE(net.findings.empty());
  EXPECT_EQ(net.findings[0].code, FindingCode::kHangTransportError);
  EXPECT_EQ(net.findings[0].entity.host, "node-2");
  EXPECT_NE(net.findings[0].evidence.at(0).text.find("none completed"), std::string::npos);
}

TEST(HangDetectorTest, WatchdogAbortIsTheHangsConsequenceNotAMissingProcess) {
  laggard::Run run = TwoRankGroup();
  HangEvent t;
  t.kind = HangEventKind::kWatchdogTimeout;
  t.rank = 0;
  t.pg_id = "0";
  t.seq = 40;
  t.op = "ALLREDUCE";
  run.hang.events.push_back(t);
  HangEvent x;
  x.kind = HangEventKind::kProcessExited;
  x.rank = 0;
  x.exit_code = -6;
  run.hang.events.push_back(x);
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangInconclusive) << a.findings[0].message;
  x.rank = 1;
  x.exit_code = -9;
  run.hang.events.push_back(x);
  HangAnalysis killed = AnalyzeHang(run);
  EXPECT_EQ(killed.findings.at(0).code, FindingCode::kHangProcessMissing);
  EXPECT_EQ(killed.findings[0].entity.rank, 1);
}

TEST(HangDetectorTest, StragglerBeforeTheHangIsNamedAsSuch) {
  TempDir dir;
  std::string log;
  for (int step = 0; step < 40; ++step) {
    for (int rank = 0; rank < 4; ++rank) {
      log += "rank " + std::to_string(rank) + ", step " + std::to_string(step) + ", time " +
             (rank == 2 ? "1.30" : "1.00") + "s\n";
    }
  }
  std::vector<std::string> paths = FilesIn(kData + "fr_v2.10");
  paths.push_back(WriteFile(dir.path() + "/steps.log", log));
  laggard::Run run = IngestAll(paths);
  Verdict v = VerdictOf(run);
  ASSERT_EQ(v.status, VerdictStatus::kHang) << v.summary;
  EXPECT_NE(v.summary.find("rank 2 was a straggler before the hang"), std::string::npos)
      << v.summary;
}

TEST(HangDetectorTest, RealWatchdogLinesGiveAHangVerdictOrSayWhatToCollect) {
  for (const char* name : {"torch1_watchdog.log", "torch2_watchdog_pg.log", "desync_report.log",
                           "collective_mismatch.log", "nccl_transport.log", "gloo.log",
                           "torchrun_failure.log", "pager_cut.log"}) {
    laggard::Run run = IngestAll({kData + name});
    Analyses a;
    Verdict v = VerdictOf(run, &a);
    EXPECT_TRUE(a.hang.hang) << name;
    EXPECT_TRUE(v.status == VerdictStatus::kHang || v.status == VerdictStatus::kInconclusive)
        << name << ": " << v.summary;
    for (const Culprit& c : v.culprits) {
      EXPECT_FALSE(c.evidence.empty()) << name;
    }
  }
}

TEST(HangDetectorTest, NoHangEvidenceNoHangAnalysis) {
  laggard::Run run;
  HangAnalysis a = AnalyzeHang(run);
  EXPECT_FALSE(a.hang);
  EXPECT_TRUE(a.findings.empty());
}

}  // namespace
}  // namespace laggard
