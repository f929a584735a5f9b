// Megatron's StragglerDetector in the analysis and the verdict
// (analysis/tool_reports/straggler_reports.h, verdict/tool_culprit.cc): one
// report names no culprit, consistent reports do where laggard's own
// evidence cannot decide, and beside laggard's own culprit they agree or
// disagree in its evidence.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "analysis/analyze_run.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

// `n` reports whose slowest round trip is `slow`'s, `spread` above rank 0's;
// with a get_batch of `data_ms` on rank `slow`, and when `gap` is given a
// Bottom 2 list putting the next lowest rank `gap` above it.
std::string Reports(int n, int32_t slow, double spread, double data_ms = 2,
                    std::optional<double> gap = std::nullopt, int first = 0) {
  std::string s;
  for (int i = first; i < first + n; ++i) {
    s += fmt::format(
        "[2024-01-01 00:{:02}:00] | MnRtt/Rnk: 1000.00ms/0 | MxRtt/Rnk: {:.2f}ms/{} | "
        "MnClk/Rnk: 1900.00MHz/{} | MxClk/Rnk: 1980.00MHz/0 | MnDRtt/Rnk: 1.00ms/0 | "
        "MxDRtt/Rnk: {:.2f}ms/{}\n",
        i, 1000 * (1 + spread), slow, slow, data_ms, slow);
    if (gap) {
      s += fmt::format("^^^^ Bottom 2 Ranks with lowest  Etpt(TF): 100.00/{}, {:.2f}/7,\n", slow,
                       100 * (1 + *gap));
    }
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
  laggard::Run run =
      IngestPaths({testing_util::TestData("megatron_straggler", "savanna_40b_hsd.txt")});
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
  laggard::Run run =
      IngestPaths({testing_util::TestData("megatron_straggler", "megatron_readme.txt")});
  Analyses a = AnalyzeRun(run, AnalysisOptions());
  Verdict v = DecideVerdict(run, a);
  EXPECT_EQ(v.status, VerdictStatus::kNoStraggler) << v.summary;
  EXPECT_NE(v.summary.find("within 0.4%"), std::string::npos) << v.summary;
  EXPECT_EQ(Find(a, FindingCode::kToolDataLoaderSlow), nullptr);
}

TEST(ToolReportVerdictTest, ConsistentReportsNameTheRankWhenNothingElseCompares) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Reports(4, 5, 0.10, 2, 0.08));
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

// The round trip the detector times leaves get_batch out: a slow loader on
// the same rank is evidence, not the cause of its round trip.
TEST(ToolReportVerdictTest, ASlowDataLoaderOnTheSameRankIsEvidence) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Reports(3, 2, 0.12, 300, 0.1));
  Diagnosed d = Diagnose(dir);
  ASSERT_EQ(d.v.culprits.size(), 1u);
  EXPECT_EQ(d.v.culprits[0].entity.rank, 2);
  EXPECT_EQ(d.v.culprits[0].cause_class, CauseClass::kUnknown);
  bool data = false;
  for (const std::string& e : d.v.culprits[0].evidence) data |= e.find("get_batch") != e.npos;
  EXPECT_TRUE(data);
}

// A healthy pipeline's last stage is slowest in every report: without
// Bottom lists nothing says it is one rank, and with them its ranks are
// together.
TEST(ToolReportVerdictTest, ASlowestRankNotShownAloneIsNoCulprit) {
  TempDir none;
  WriteFile(none.File("train.log"), Reports(5, 31, 0.09));
  Diagnosed a = Diagnose(none);
  EXPECT_TRUE(a.v.culprits.empty()) << a.v.summary;
  EXPECT_NE(a.v.summary.find("without its Bottom N lists"), std::string::npos) << a.v.summary;
  TempDir group;
  WriteFile(group.File("train.log"), Reports(5, 31, 0.09, 2, 0.003));
  Diagnosed b = Diagnose(group);
  EXPECT_TRUE(b.v.culprits.empty()) << b.v.summary;
  EXPECT_NE(b.v.summary.find("a group of ranks"), std::string::npos) << b.v.summary;
}

// A log and its copy: each report once. Two files of other reports: not
// pooled.
TEST(ToolReportVerdictTest, RepeatedReportsCountOnceAndOtherFilesAreNotPooled) {
  TempDir dup;
  WriteFile(dup.File("slurm-1.out"), Reports(2, 5, 0.10, 2, 0.08));
  WriteFile(dup.File("train.log"), Reports(2, 5, 0.10, 2, 0.08));
  Diagnosed d = Diagnose(dup);
  EXPECT_TRUE(d.v.culprits.empty()) << d.v.summary;
  EXPECT_NE(d.v.summary.find("in 2 of 2 reports"), std::string::npos) << d.v.summary;
  TempDir jobs;
  WriteFile(jobs.File("a/train.log"), Reports(2, 5, 0.10, 2, 0.08));
  WriteFile(jobs.File("b/train.log"), Reports(1, 5, 0.10, 2, 0.08, 30));
  Diagnosed j = Diagnose(jobs);
  EXPECT_TRUE(j.v.culprits.empty()) << j.v.summary;
  const Finding* f = Find(j.a, FindingCode::kToolStragglerReport);
  ASSERT_NE(f, nullptr);
  bool apart = false;
  for (const Evidence& e : f->evidence) apart |= e.text.find("not pooled") != std::string::npos;
  EXPECT_TRUE(apart);
}

// "No straggler" only when every report's extremes are close.
TEST(ToolReportVerdictTest, OneWideReportIsNotNoStraggler) {
  TempDir dir;
  WriteFile(dir.File("train.log"), Reports(3, 5, 0.01) + Reports(2, 9, 0.50, 2, std::nullopt, 3));
  Diagnosed d = Diagnose(dir);
  EXPECT_NE(d.v.status, VerdictStatus::kNoStraggler) << d.v.summary;
}

// Middle pipeline stages load no data: a fastest get_batch of 0 gives no
// ratio.
TEST(ToolReportVerdictTest, RanksThatLoadNoDataMakeNoDataLoaderSuspect) {
  TempDir dir;
  std::string s;
  for (int i = 0; i < 3; ++i) {
    s += fmt::format(
        "[2024-01-01 00:0{}:00] | MnRtt/Rnk: 1000.00ms/1 | MxRtt/Rnk: 1010.00ms/2 | "
        "MnDRtt/Rnk: 0.00ms/9 | MxDRtt/Rnk: 60.00ms/0\n",
        i);
  }
  WriteFile(dir.File("train.log"), s);
  Diagnosed d = Diagnose(dir);
  EXPECT_EQ(Find(d.a, FindingCode::kToolDataLoaderSlow), nullptr);
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

  TempDir even;
  WriteFile(even.File("train.log"), Steps(2, 0.15) + Reports(4, 2, 0.01));
  Diagnosed ev = Diagnose(even);
  ASSERT_FALSE(ev.v.culprits.empty()) << ev.v.summary;
  bool size = false;
  for (const std::string& x : ev.v.culprits[0].evidence)
    size |= x.find("disagrees on the size") != x.npos;
  EXPECT_TRUE(size);

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
  WriteFile(dir.File("train.log"), Steps(-1, 0) + Reports(4, 3, 0.10, 2, 0.08));
  Diagnosed d = Diagnose(dir);
  EXPECT_TRUE(d.v.culprits.empty()) << d.v.summary;
  EXPECT_NE(d.v.summary.find("which holds rank 3 too, finds none"), std::string::npos)
      << d.v.summary;
  // A rank laggard has no step times of: the detector is not overruled.
  TempDir partial;
  WriteFile(partial.File("train.log"), Steps(-1, 0) + Reports(4, 5, 0.10, 2, 0.08));
  Diagnosed p = Diagnose(partial);
  EXPECT_NE(p.v.summary.find("no step times or trace of rank 5"), std::string::npos) << p.v.summary;
}

// A real job's traces and step logs (bench/realjobs: rank 1 computes 1.2x)
// beside a StragglerDetector log: the verdict's culprit cites it, agreeing
// or not.
TEST(ToolReportVerdictTest, BesideRealTracesTheCulpritCitesTheDetector) {
  const std::string job = testing_util::TestData("realjobs", "w2_compute_1.2");
  for (int32_t named : {1, 0}) {
    TempDir dir;
    WriteFile(dir.File("megatron.log"), Reports(4, named, 0.12, 2, 0.1));
    laggard::Run run = testing_util::IngestAll({job, dir.path()});
    Analyses a = AnalyzeRun(run, AnalysisOptions());
    Verdict v = DecideVerdict(run, a);
    ASSERT_FALSE(v.culprits.empty()) << v.summary;
    ASSERT_EQ(v.culprits[0].entity.rank, 1) << v.summary;
    bool cited = false;
    for (const std::string& e : v.culprits[0].evidence) {
      cited |= e.find("StragglerDetector") != e.npos &&
               e.find(named == 1 ? "(agrees)" : "it disagrees") != e.npos;
    }
    EXPECT_TRUE(cited) << "named " << named;
  }
}

}  // namespace
}  // namespace laggard
