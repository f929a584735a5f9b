// Megatron's StragglerDetector in the analysis and the verdict
// (analysis/tool_reports/straggler_reports.h, verdict/tool_culprit.cc): one
// report names no culprit, consistent reports do where laggard's own
// evidence cannot decide, and beside laggard's own culprit they agree or
// disagree in its evidence.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "analysis/analyze_run.h"
#include "test_paths.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

// `n` reports whose slowest round trip is `slow`'s, `spread` above rank 0's;
// with a get_batch of `data_ms` on rank `slow`.
std::string Reports(int n, int32_t slow, double spread, double data_ms = 2) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += fmt::format(
        "[2024-01-01 00:0{}:00] | MnRtt/Rnk: 1000.00ms/0 | MxRtt/Rnk: {:.2f}ms/{} | "
        "MnClk/Rnk: 1900.00MHz/{} | MxClk/Rnk: 1980.00MHz/0 | MnDRtt/Rnk: 1.00ms/0 | "
        "MxDRtt/Rnk: {:.2f}ms/{}\n",
        i, 1000 * (1 + spread), slow, slow, data_ms, slow);
  }
  return s;
}

// 4 ranks x 40 steps of the article's lines; rank `slow` `excess` slower.
std::string Steps(int32_t slow, double excess) {
  std::string s;
  for (int step = 0; step < 40; ++step) {
    for (int32_t r = 0; r < 4; ++r) {
      double t = 1.0 + 0.002 * ((step * 7 + r * 3) % 5);
      if (r == slow) t *= 1 + excess;
      s += fmt::format("rank {}, step {}, time {:.4f}s\n", r, step, t);
    }
  }
  return s;
}

struct Diagnosed {
  laggard::Run run;
  Analyses a;
  Verdict v;
};

Diagnosed Diagnose(const TempDir& dir) {
  Diagnosed d;
  d.run = IngestPaths({dir.path()});
  d.a = AnalyzeRun(d.run, AnalysisOptions());
  d.v = DecideVerdict(d.run, d.a);
  return d;
}

const Finding* Find(const Analyses& a, FindingCode code) {
  for (const Finding& f : a.tool_reports.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

TEST(ToolReportVerdictTest, OneReportNamesNoCulpritAndSaysWhy) {
  laggard::Run run = IngestPaths(
      {std::string(LAGGARD_SOURCE_DIR) + "/tests/data/megatron_straggler/savanna_40b_hsd.txt"});
  Analyses a = AnalyzeRun(run, AnalysisOptions());
  Verdict v = DecideVerdict(run, a);
  EXPECT_EQ(v.status, VerdictStatus::kInconclusive);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_NE(v.summary.find("rank 30 slowest in its only report, 8.6% behind"), std::string::npos)
      << v.summary;
  const Finding* data = Find(a, FindingCode::kToolDataLoaderSlow);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->entity.rank, 23);
  EXPECT_EQ(data->severity, Severity::kInfo);
}

TEST(ToolReportVerdictTest, ExtremesWithinSameModelSpreadAreNoStraggler) {
  laggard::Run run = IngestPaths(
      {std::string(LAGGARD_SOURCE_DIR) + "/tests/data/megatron_straggler/megatron_readme.txt"});
  Analyses a = AnalyzeRun(run, AnalysisOptions());
  Verdict v = DecideVerdict(run, a);
  EXPECT_EQ(v.status, VerdictStatus::kNoStraggler) << v.summary;
  EXPECT_NE(v.summary.find("within 0.4%"), std::string::npos) << v.summary;
  EXPECT_EQ(Find(a, FindingCode::kToolDataLoaderSlow), nullptr);
}

TEST(ToolReportVerdictTest, ConsistentReportsNameTheRankWhenNothingElseCompares) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Reports(4, 5, 0.10));
  Diagnosed d = Diagnose(dir);
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  ASSERT_EQ(d.v.culprits.size(), 1u);
  const Culprit& c = d.v.culprits[0];
  EXPECT_EQ(c.entity.rank, 5);
  EXPECT_EQ(c.cause_class, CauseClass::kUnknown);
  EXPECT_LE(c.confidence, kSingleSourceCap);
  EXPECT_EQ(ConfidenceWord(c.confidence), "medium");
  bool clock = false;
  for (const std::string& e : c.evidence) clock |= e.find("the lowest SM clock") != e.npos;
  EXPECT_TRUE(clock);
}

TEST(ToolReportVerdictTest, ASlowDataLoaderOnTheSameRankIsAHostStall) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Reports(3, 2, 0.12, 300));
  Diagnosed d = Diagnose(dir);
  ASSERT_EQ(d.v.culprits.size(), 1u);
  EXPECT_EQ(d.v.culprits[0].entity.rank, 2);
  EXPECT_EQ(d.v.culprits[0].cause_class, CauseClass::kHostStall);
  EXPECT_EQ(d.v.culprits[0].cause, "data_loader");
}

TEST(ToolReportVerdictTest, ASlowestRankThatMovesOrAFewReportsNameNobody) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Reports(2, 5, 0.10) + Reports(2, 6, 0.10));
  Diagnosed moving = Diagnose(dir);
  EXPECT_TRUE(moving.v.culprits.empty()) << moving.v.summary;
  EXPECT_NE(moving.v.summary.find("changes from report to report"), std::string::npos)
      << moving.v.summary;
  TempDir few;
  WriteFile(few.File("train.log"), Reports(2, 5, 0.10));
  Diagnosed two = Diagnose(few);
  EXPECT_TRUE(two.v.culprits.empty()) << two.v.summary;
  EXPECT_NE(two.v.summary.find("so few reports"), std::string::npos) << two.v.summary;
}

TEST(ToolReportVerdictTest, BesideLaggardsOwnCulpritItAgreesOrDisagrees) {
  TempDir agree;
  WriteFile(agree.File("train.log"), Steps(2, 0.15) + Reports(4, 2, 0.12));
  Diagnosed a = Diagnose(agree);
  ASSERT_FALSE(a.v.culprits.empty()) << a.v.summary;
  EXPECT_EQ(a.v.culprits[0].entity.rank, 2);
  bool agrees = false;
  for (const std::string& e : a.v.culprits[0].evidence) agrees |= e.find("(agrees)") != e.npos;
  EXPECT_TRUE(agrees);

  TempDir disagree;
  WriteFile(disagree.File("train.log"), Steps(2, 0.15) + Reports(4, 1, 0.12));
  Diagnosed d = Diagnose(disagree);
  ASSERT_FALSE(d.v.culprits.empty()) << d.v.summary;
  EXPECT_EQ(d.v.culprits[0].entity.rank, 2);
  bool disagrees = false;
  for (const std::string& e : d.v.culprits[0].evidence) {
    disagrees |= e.find("names rank 1 slowest") != e.npos && e.find("disagrees") != e.npos;
  }
  EXPECT_TRUE(disagrees);
}

TEST(ToolReportVerdictTest, LaggardsOwnNoStragglerStandsAgainstConsistentReports) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Steps(-1, 0) + Reports(4, 3, 0.10));
  Diagnosed d = Diagnose(dir);
  EXPECT_TRUE(d.v.culprits.empty()) << d.v.summary;
  EXPECT_NE(d.v.summary.find("the stronger evidence"), std::string::npos) << d.v.summary;
}

}  // namespace
}  // namespace laggard
