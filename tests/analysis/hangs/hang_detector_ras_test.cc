// The hang detector on NCCL RAS status reports (tests/data/hangs/ncclras):
// a process RAS lost is hang.process_missing with its host and pid; ranks
// behind in the operation counts of two queries are hang.not_joined; a
// healthy report, or one query's small MISMATCH alone, is no hang; a rank
// RAS names above the others' count is never blamed.

#include <gtest/gtest.h>

#include "analysis/analyze_run.h"
#include "analysis/hangs/hang_detector.h"
#include "test_paths.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::IngestAll;
using testing_util::TempDir;
using testing_util::WriteFile;

const std::string kRas = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/hangs/ncclras/";

TEST(HangDetectorRasTest, ProcessRasCouldNotReachIsMissingWithHostAndPid) {
  laggard::Run run = IngestAll({kRas + "example_exit_incomplete.txt"});
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_TRUE(a.hang);
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHangProcessMissing) << f.message;
  EXPECT_EQ(f.entity.host, "node1");
  EXPECT_EQ(f.entity.rank, 7);  // the communicator of all 8 ranks: global ranks
  EXPECT_EQ(f.entity.gpu, 3);
  EXPECT_NE(f.message.find("3748990"), std::string::npos) << f.message;
  EXPECT_NE(f.next_steps.front().find("ps -o pid,stat,etime -p 3748990"), std::string::npos);
  EXPECT_DOUBLE_EQ(f.confidence, 0.6);
}

TEST(HangDetectorRasTest, DeadProcessWithoutCommunicatorsIsStillMissing) {
  laggard::Run run = IngestAll({kRas + "example_exit_dead.txt"});
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHangProcessMissing) << f.message;
  EXPECT_EQ(f.entity.host, "node1");
  EXPECT_FALSE(f.entity.rank.has_value());  // no communicator left to say which rank
  EXPECT_DOUBLE_EQ(f.confidence, 0.8);
}

TEST(HangDetectorRasTest, SameCountsInTwoQueriesNameTheRankBehind) {
  laggard::Run run = IngestAll({kRas + "constructed_behind_two_queries.txt"});
  Analyses analyses = AnalyzeRun(run, AnalysisOptions());
  ASSERT_FALSE(analyses.hang.findings.empty());
  const Finding& f = analyses.hang.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHangNotJoined) << f.message;
  EXPECT_EQ(f.ranks, (std::vector<int32_t>{5}));
  EXPECT_EQ(f.entity.host, "10.0.0.12");
  EXPECT_NE(f.message.find("2 queries"), std::string::npos) << f.message;
  EXPECT_DOUBLE_EQ(f.confidence, 0.7);
  Verdict v = DecideVerdict(run, analyses);
  EXPECT_EQ(v.status, VerdictStatus::kHang);
  ASSERT_FALSE(v.culprits.empty());
  EXPECT_EQ(v.culprits[0].entity.rank, 5);
}

TEST(HangDetectorRasTest, HealthyReportOrOneQuerysMismatchAloneIsNoHang) {
  for (const char* name : {"example_healthy.txt", "docs_healthy.txt", "docs_mismatch.txt",
                           "example_sleep_mismatch.txt"}) {
    laggard::Run run = IngestAll({kRas + name});
    ASSERT_FALSE(run.hang.ras.empty()) << name;
    EXPECT_FALSE(AnalyzeHang(run).hang) << name;
  }
}

TEST(HangDetectorRasTest, MismatchBesideAWatchdogTimeoutNamesTheRankBehindAtLowConfidence) {
  TempDir dir;
  std::string log = WriteFile(
      dir.File("rank-0.log"),
      "[rank0]:[E321 02:07:08.408000 1 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=65, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
      "Timeout(ms)=600000) ran for 600029 milliseconds before timing out.\n");
  laggard::Run run = IngestAll({log, kRas + "example_sleep_mismatch.txt"});
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_TRUE(a.hang);
  const Finding* behind = nullptr;
  for (const Finding& f : a.findings) {
    if (f.code == FindingCode::kHangNotJoined) behind = &f;
  }
  ASSERT_NE(behind, nullptr) << a.findings.front().message;
  EXPECT_EQ(behind->ranks, (std::vector<int32_t>{7}));
  EXPECT_DOUBLE_EQ(behind->confidence, 0.4);
}

TEST(HangDetectorRasTest, RanksNamedAboveTheOthersCountAreAheadNotBlamed) {
  // One rank ahead of seven: RAS names the one (the outlier), who is not behind.
  std::string report =
      "Communicators... (0.003s)\n=============\n\n"
      "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
      "    #  in group  per comm  per node  per comm  in group\n"
      "    0         1         2         4         8         8   RUNNING  MISMATCH\n\n"
      "Errors\n======\n\nWarnings\n========\n\n"
      "#0-0 (5f0e2a64c1d9b377) MISMATCH\n"
      "  Communicator ranks have different AllReduce operation counts\n"
      "  7 ranks have launched up to operation 1200\n"
      "  Rank 2 has launched up to operation 1201 -- GPU 2 managed by process 9 on node n0\n\n";
  TempDir dir;
  std::string path = WriteFile(dir.File("ras.txt"), report + report);
  laggard::Run run = IngestAll({path});
  ASSERT_EQ(run.hang.ras.size(), 2u);
  HangAnalysis a = AnalyzeHang(run);
  for (const Finding& f : a.findings) {
    EXPECT_TRUE(std::find(f.ranks.begin(), f.ranks.end(), 2) == f.ranks.end()) << f.message;
    EXPECT_NE(f.entity.rank, 2) << f.message;
  }
}

TEST(HangDetectorRasTest, RanksOfASmallerCommunicatorAreNotTakenAsGlobalRanks) {
  // The 4-rank communicator of an 8-rank job: RAS's rank 3 is not global rank 3.
  std::string report =
      "Job summary\n===========\n\n"
      "  Nodes  Processes         GPUs  Processes     GPUs\n"
      "(total)   per node  per process    (total)  (total)\n"
      "      2          4            1          8        8\n\n"
      "Communicators... (0.003s)\n=============\n\n"
      "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
      "    #  in group  per comm  per node  per comm  in group\n"
      "    0         1         2         4         8         8   RUNNING      OK\n"
      "    1         2         1         4         4         7   RUNNING  INCOMPLETE\n\n"
      "Errors\n======\n\n"
      "INCOMPLETE\n  Missing communicator data from 1 job process\n"
      "  Process 77 on node n1 managing GPU 3\n\n"
      "#1-1 (00000000000000aa) INCOMPLETE\n  Missing communicator data from 1 rank\n"
      "  Rank 3 -- GPU 3 managed by process 77 on node n1\n\n"
      "Warnings\n========\n";
  TempDir dir;
  laggard::Run run = IngestAll({WriteFile(dir.File("ras.txt"), report)});
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHangProcessMissing);
  EXPECT_TRUE(f.ranks.empty());
  EXPECT_NE(f.message.find("rank 3 of communicator 00000000000000aa"), std::string::npos)
      << f.message;
}

}  // namespace
}  // namespace laggard
