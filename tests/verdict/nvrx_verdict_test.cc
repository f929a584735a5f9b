// NVRx straggler reports (ingest/step_logs/nvrx_straggler.h,
// analysis/tool_reports/nvrx_reports.h) and what the verdict makes of them:
// the real reports of tests/data/nvrx/ name nobody; a rank alone far below
// the others, report after report, is named; two on one node point to it.

#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "analysis/analyze_run.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::TestData;
using testing_util::WriteFile;

struct Diagnosed {
  laggard::Run run;
  Analyses a;
  Verdict v;
};

Diagnosed Diagnose(const std::string& path) {
  Diagnosed d;
  d.run = IngestPaths({path});
  d.a = AnalyzeRun(d.run, AnalysisOptions());
  d.v = DecideVerdict(d.run, d.a);
  return d;
}

TEST(NvrxReportTest, ReadsTheNemoDemoReportBehindItsPrefixes) {
  laggard::Run run = IngestPaths({TestData("nvrx", "nemo_demo_8rank.txt")});
  ASSERT_EQ(run.nvrx_reports.size(), 1u);
  const NvrxReport& r = run.nvrx_reports[0];
  ASSERT_EQ(r.relative.size(), 8u);
  EXPECT_EQ(r.relative[0].rank, 3);
  EXPECT_DOUBLE_EQ(r.relative[0].score, 0.97);
  EXPECT_EQ(r.relative[0].node, "c032f989068c");
  ASSERT_EQ(r.individual.size(), 8u);
  EXPECT_DOUBLE_EQ(r.individual[7].score, 1.0);
  EXPECT_EQ(r.relative_ranks, 8);
  // The NeMo 2 training line before it is step.garbled (no Megatron
  // "elapsed time per iteration"); the report's lines all read.
  EXPECT_EQ(run.diagnostics.count(DiagCode::kToolReportBadField), 0u);
}

TEST(NvrxReportTest, WorstAndBestListsGiveTheRanksScored) {
  laggard::Run run = IngestPaths({TestData("nvrx", "nemo_docs_512rank.txt")});
  ASSERT_EQ(run.nvrx_reports.size(), 1u);
  const NvrxReport& r = run.nvrx_reports[0];
  EXPECT_EQ(r.relative.size(), 10u);
  EXPECT_EQ(r.relative_ranks, 512);
  EXPECT_EQ(r.individual_ranks, 512);
  EXPECT_EQ(r.relative[0].node, "h100-001-253-012");
}

TEST(NvrxReportTest, TheRealReportsNameNobody) {
  Diagnosed demo = Diagnose(TestData("nvrx", "nemo_demo_8rank.txt"));
  // Its scores are GPU kernels only: "no straggler by its measure", not the
  // job's verdict.
  EXPECT_TRUE(demo.v.culprits.empty()) << demo.v.summary;
  EXPECT_NE(demo.v.summary.find("no straggler by its measure"), std::string::npos)
      << demo.v.summary;
  Diagnosed two = Diagnose(TestData("nvrx", "megatron_bridge_2rank.txt"));
  EXPECT_TRUE(two.v.culprits.empty()) << two.v.summary;
  EXPECT_NE(two.v.summary.find("two ranks"), std::string::npos) << two.v.summary;
  Diagnosed docs = Diagnose(TestData("nvrx", "nemo_docs_512rank.txt"));
  EXPECT_TRUE(docs.v.culprits.empty()) << docs.v.summary;
  EXPECT_NE(docs.v.summary.find("several ranks are as slow"), std::string::npos) << docs.v.summary;
}

// `n` reports of 8 ranks on nodes a (0-3) and b (4-7), each rank's score
// as given; a warning naming `flag` before each when >= 0.
std::string Reports(int n, const std::vector<double>& score, int flag = -1) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (flag >= 0) {
      s += fmt::format(
          "[NeMo W 2025-01-01 00:0{}:00 straggler_det_callback:1] STRAGGLER DETECTION WARNING: "
          "Some GPUs have worse relative performance. Affected ranks: {{StragglerId(rank={}, "
          "node='b')}}\n",
          i, flag);
    }
    s += "GPU relative performance:\n";
    std::vector<int> order = {0, 1, 2, 3, 4, 5, 6, 7};
    std::sort(order.begin(), order.end(), [&](int x, int y) { return score[x] < score[y]; });
    for (int r : order) {
      s += fmt::format("  Rank={} Node={} Score={:.2f}\n", r, r < 4 ? "a" : "b", score[r]);
    }
    s += "\n";
  }
  return s;
}

TEST(NvrxReportTest, ARankAloneFarBelowTheOthersIsNamed) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Reports(3, {0.98, 0.99, 0.97, 0.98, 0.99, 0.62, 0.98, 0.99}, 5));
  Diagnosed d = Diagnose(dir.path());
  ASSERT_EQ(d.run.nvrx_reports.size(), 3u);
  EXPECT_EQ(d.run.nvrx_reports[0].flagged_relative, (std::vector<int32_t>{5}));
  ASSERT_EQ(d.v.culprits.size(), 1u) << d.v.summary;
  EXPECT_EQ(d.v.culprits[0].entity.rank, 5);
  EXPECT_EQ(ConfidenceWord(d.v.culprits[0].confidence), "medium");
  // NVRx's finding carries no measured next step: AnalyzeRun gives it the
  // catalogue's.
  const Finding* named = nullptr;
  for (const Finding& f : d.a.tool_reports.findings) {
    if (f.code == FindingCode::kToolNvrxReport && f.entity.rank == 5) named = &f;
  }
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->next_steps, std::vector<std::string>{
                                   std::string(Describe(FindingCode::kToolNvrxReport).next_step)});
  EXPECT_FALSE(d.v.next_steps.empty());
}

// A log and its copy: one report each, counted once, so one report names
// nobody.
TEST(NvrxReportTest, ACopyOfTheLogCountsOnce) {
  TempDir dir;
  const std::string one = Reports(1, {0.98, 0.99, 0.97, 0.98, 0.99, 0.62, 0.98, 0.99});
  WriteFile(dir.File("train.log"), one);
  WriteFile(dir.File("copy/train.log"), one);
  Diagnosed d = Diagnose(dir.path());
  EXPECT_TRUE(d.v.culprits.empty()) << d.v.summary;
  EXPECT_NE(d.v.summary.find("in its only report"), std::string::npos) << d.v.summary;
}

TEST(NvrxReportTest, TwoLowestAloneOnOneNodePointToTheNode) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Reports(3, {0.98, 0.99, 0.97, 0.98, 0.70, 0.72, 0.98, 0.99}));
  Diagnosed d = Diagnose(dir.path());
  const Finding* node = nullptr;
  for (const Finding& f : d.a.tool_reports.findings) {
    if (f.code == FindingCode::kToolNvrxReport && f.entity.host == "b" && !f.entity.rank) node = &f;
  }
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->severity, Severity::kWarning);
  EXPECT_EQ(node->ranks, (std::vector<int32_t>{4, 5}));
  EXPECT_TRUE(d.v.culprits.empty()) << d.v.summary;  // a node reading, not a rank culprit
}

TEST(NvrxReportTest, ATwoRankJobNamesNobodyAndBadLinesAreCounted) {
  TempDir dir;
  WriteFile(dir.File("train.log"),
            "GPU relative performance:\n"
            "  Rank=0 Node=a Score=0.50\n"
            "  Rank=1 Node=a Score=1.00\n"
            "  Rank=x Node=a Score=1.00\n"
            "  Rank=2 Node=a Score=abc\n"
            "STRAGGLER DETECTION WARNING: Some GPUs performance dropped. Affected ranks: [0]\n"
            "GPU individual performance:\n"
            "  Rank=0 Node=a Score=0.60\n"
            "  Rank=1 Node=a Score=nan\n");
  Diagnosed d = Diagnose(dir.path());
  EXPECT_TRUE(d.v.culprits.empty()) << d.v.summary;
  ASSERT_EQ(d.run.nvrx_reports.size(), 2u);
  EXPECT_EQ(d.run.nvrx_reports[1].flagged_individual, (std::vector<int32_t>{0}));
  EXPECT_TRUE(std::isnan(d.run.nvrx_reports[1].individual[1].score));
  EXPECT_EQ(d.run.diagnostics.count(DiagCode::kToolReportBadField), 2u);
  bool dropped = false;
  for (const Finding& f : d.a.tool_reports.findings)
    dropped |= f.message.find("individual score fell to 0.60") != std::string::npos;
  EXPECT_TRUE(dropped);
}

}  // namespace
}  // namespace laggard
