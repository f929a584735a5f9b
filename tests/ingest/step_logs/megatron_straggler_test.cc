// Megatron's StragglerDetector report lines (megatron_straggler.h): the real
// lines of tests/data/megatron_straggler/ read as their README expects, and
// bad lines counted, never dropped in silence.

#include <gtest/gtest.h>

#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::TestData;
using testing_util::WriteFile;

void ExpectExtremes(const ToolReport& r, ToolMetric m, double min, int32_t min_rank, double max,
                    int32_t max_rank) {
  const ToolExtremes& e = r.metric(m);
  ASSERT_TRUE(e.min && e.max) << static_cast<int>(m);
  EXPECT_NEAR(e.min->value, min, 1e-9) << static_cast<int>(m);
  EXPECT_EQ(e.min->rank, min_rank) << static_cast<int>(m);
  EXPECT_NEAR(e.max->value, max, 1e-9) << static_cast<int>(m);
  EXPECT_EQ(e.max->rank, max_rank) << static_cast<int>(m);
}

TEST(MegatronStragglerTest, ReadsTheReadmesReportAndItsRankLists) {
  laggard::Run run = IngestPaths({TestData("megatron_straggler", "megatron_readme.txt")});
  ASSERT_EQ(run.tool_reports.size(), 1u);
  const ToolReport& r = run.tool_reports[0];
  EXPECT_EQ(r.when, "2024-03-14 23:07:56");
  EXPECT_EQ(r.src.line, 1u);
  ExpectExtremes(r, ToolMetric::kRoundTripMs, 3453.08, 8, 3468.20, 0);
  ExpectExtremes(r, ToolMetric::kPowerW, 601.796, 8, 683.801, 18);  // printed in mW
  ExpectExtremes(r, ToolMetric::kTempC, 52, 0, 65, 21);
  ExpectExtremes(r, ToolMetric::kUtilPct, 97, 8, 100, 6);
  ExpectExtremes(r, ToolMetric::kClockMhz, 1950, 28, 1980, 0);
  ExpectExtremes(r, ToolMetric::kDataMs, 14.27, 23, 34.65, 3);
  ExpectExtremes(r, ToolMetric::kTflops, 296.02, 0, 297.32, 8);
  EXPECT_EQ(r.lowest_tflops,
            (std::vector<RankValue>{{296.02, 0}, {296.17, 2}, {296.23, 1}, {296.23, 4}}));
  EXPECT_EQ(r.highest_tflops,
            (std::vector<RankValue>{{297.28, 15}, {297.28, 11}, {297.32, 12}, {297.32, 8}}));
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_TRUE(run.files[0].used);
}

TEST(MegatronStragglerTest, ReadsTheTwoDecimalStyleWithoutItsOpeningBracket) {
  laggard::Run run = IngestPaths({TestData("megatron_straggler", "savanna_40b_hsd.txt")});
  ASSERT_EQ(run.tool_reports.size(), 1u);
  const ToolReport& r = run.tool_reports[0];
  EXPECT_EQ(r.when, "2024-10-23 01:29:30");
  ExpectExtremes(r, ToolMetric::kRoundTripMs, 1446.49, 13, 1570.32, 30);
  ExpectExtremes(r, ToolMetric::kPowerW, 617.923, 0, 669.787, 20);
  ExpectExtremes(r, ToolMetric::kDataMs, 1.22, 15, 130.33, 23);
  ExpectExtremes(r, ToolMetric::kTflops, 560.82, 30, 608.83, 13);
  EXPECT_TRUE(r.lowest_tflops.empty());
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(MegatronStragglerTest, BadFieldsAreCountedAndTheRestOfTheReportKept) {
  TempDir dir;
  WriteFile(dir.File("train.log"),
            // get_batch in us (the detector's defaults name that unit), a
            // power already in watts, a rank that is no number.
            "[2024-01-01 00:00:00] | MnRtt/Rnk: 100.00ms/1 | MxRtt/Rnk: 120.00ms/x | "
            "MnPwr/Rnk: 300.00W/0 | MnDRtt/Rnk: 500.00us/2 | MxDRtt/Rnk: 2.00ms/3 | "
            "MnTmp/Rnk: 50.00F/0 | Bogus/Rnk: 1/1\n"
            // A rank list whose report came before: kept; one cut short.
            "^^^^ Bottom 3 Ranks with lowest  Etpt(TF): 10.00/1, 11.00/2,\n"
            // A second Bottom list for the same report: no report before it.
            "^^^^ Bottom 1 Ranks with lowest  Etpt(TF): 9.00/7,\n"
            // Truncated mid-field.
            "[2024-01-01 00:01:00] | MnRtt/Rnk: 101.00ms/1 | MxRtt/Rnk: 13\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.tool_reports.size(), 2u);
  const ToolReport& r = run.tool_reports[0];
  EXPECT_NEAR(r.metric(ToolMetric::kRoundTripMs).min->value, 100, 1e-9);
  EXPECT_FALSE(r.metric(ToolMetric::kRoundTripMs).max);
  EXPECT_NEAR(r.metric(ToolMetric::kPowerW).min->value, 300, 1e-9);
  EXPECT_NEAR(r.metric(ToolMetric::kDataMs).min->value, 0.5, 1e-9);
  EXPECT_NEAR(r.metric(ToolMetric::kDataMs).max->value, 2, 1e-9);
  EXPECT_FALSE(r.metric(ToolMetric::kTempC).min);
  EXPECT_EQ(r.lowest_tflops, (std::vector<RankValue>{{10, 1}, {11, 2}}));
  EXPECT_FALSE(run.tool_reports[1].metric(ToolMetric::kRoundTripMs).max);
  // 120.00ms/x, 50.00F, Bogus, the short list, the orphan list, /13 cut.
  EXPECT_EQ(run.diagnostics.count(DiagCode::kToolReportBadField), 6u);
  const auto& examples = run.diagnostics.examples(DiagCode::kToolReportBadField);
  ASSERT_FALSE(examples.empty());
  EXPECT_EQ(examples[0].line, 1u);
  EXPECT_NE(examples[0].message.find("MxRtt"), std::string::npos) << examples[0].message;
}

TEST(MegatronStragglerTest, ReportsBesideIterationLinesLeaveTheStepsAsTheyWere) {
  TempDir dir;
  WriteFile(dir.File("rank-0.log"),
            " iteration       10/    1000 | elapsed time per iteration (ms): 812.3 |\n"
            "[2024-01-01 00:00:00] | MnRtt/Rnk: 800.00ms/1 | MxRtt/Rnk: 880.00ms/3\n"
            " iteration       11/    1000 | elapsed time per iteration (ms): 815.0 |\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_EQ(run.ranks[0].steps.size(), 2u);
  ASSERT_EQ(run.tool_reports.size(), 1u);
  EXPECT_EQ(run.tool_reports[0].src.line, 2u);
}

TEST(MegatronStragglerTest, ListsFollowTheirOwnReportRepeatsAndSuffixesAreHandled) {
  TempDir dir;
  WriteFile(dir.File("train.log"),
            "[2024-01-01 00:00:00] | MnRtt/Rnk: 100.00ms/1 | MxRtt/Rnk: 110.00ms/5 | "
            "MxRtt/Rnk: 101.00ms/7 | MnPwr/Rnk: 4999.00W/0 | MxPwr/Rnk: 683801.00W/3 | "
            "MxEtpt/Rnk: 300.00TF/2 (utils.py:1234)\n"
            // A report line that reads nothing, then its list: not the first's.
            "[2024-01-01 00:01:00] | MnRtt/Rnk: x/1 | MxRtt/Rnk: y/5\n"
            "2024 INFO ^^^^ Bottom 2 Ranks with lowest  Etpt(TF): 100.00/9, 296.00/2,\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.tool_reports.size(), 1u);
  const ToolReport& r = run.tool_reports[0];
  EXPECT_EQ(r.metric(ToolMetric::kRoundTripMs).max->rank, 5);  // the first of two kept
  // One report's power is all mW when any value is.
  EXPECT_NEAR(r.metric(ToolMetric::kPowerW).min->value, 4.999, 1e-9);
  EXPECT_NEAR(r.metric(ToolMetric::kPowerW).max->value, 683.801, 1e-9);
  EXPECT_NEAR(r.metric(ToolMetric::kTflops).max->value, 300, 1e-9);
  EXPECT_TRUE(r.lowest_tflops.empty());
  // The repeated MxRtt, the two unread fields, the orphaned list.
  EXPECT_EQ(run.diagnostics.count(DiagCode::kToolReportBadField), 4u);
}

// A handled traceback followed by more reports did not end the process.
TEST(MegatronStragglerTest, ReportsAfterATracebackAreTheProcessGoingOn) {
  TempDir dir;
  WriteFile(dir.File("rank-0.log"),
            "[2024-01-01 00:00:00] | MnRtt/Rnk: 100.00ms/1 | MxRtt/Rnk: 110.00ms/5\n"
            "Traceback (most recent call last):\n"
            "  File \"train.py\", line 3, in <module>\n"
            "RuntimeError: retried\n"
            "[2024-01-01 00:01:00] | MnRtt/Rnk: 100.00ms/1 | MxRtt/Rnk: 110.00ms/5\n"
            "[2024-01-01 00:02:00] | MnRtt/Rnk: 100.00ms/1 | MxRtt/Rnk: 110.00ms/5\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(run.tool_reports.size(), 3u);
  EXPECT_TRUE(run.hang.events.empty());
}

}  // namespace
}  // namespace laggard
