// The terminal report's per-rank trace table: which rows a reader sees for
// a small and a large job, and traces without a rank; a rank's host where
// its trace names none, in the terminal and JSON reports alike.

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report/json_document.h"
#include "report/report.h"
#include "report_fixture.h"

namespace laggard {
namespace {

using report_json::Json;
using testing_util::FixtureOptions;
using testing_util::SimulatedRun;
using testing_util::TempDir;

std::string Text(const ReportInput& in) {
  std::ostringstream out;
  RenderText(in, TextOptions{}, out);
  return out.str();
}

// The lines of the trace table: from its header row to the first line that
// is not indented.
std::vector<std::string> TraceTable(const std::string& text) {
  std::vector<std::string> rows;
  std::istringstream in(text);
  std::string line;
  bool on = false;
  while (std::getline(in, line)) {
    if (line.rfind("  rank ", 0) == 0) on = true;
    if (on && line.rfind("  ", 0) != 0) break;
    if (on) rows.push_back(line);
  }
  return rows;
}

std::string FirstCell(const std::string& row) {
  size_t b = row.find_first_not_of(' ');
  size_t e = row.find("  ", b);
  return row.substr(b, e - b);
}

TEST(TextReportTest, ASmallJobShowsEveryRankInRankOrder) {
  TempDir dir;
  auto d = SimulatedRun(dir.path(), FixtureOptions{.hardware = false, .ranks = 8});
  std::vector<std::string> table = TraceTable(Text(d->input()));
  ASSERT_EQ(table.size(), 9u) << Text(d->input());  // header + 8 ranks
  for (int r = 0; r < 8; ++r)
    EXPECT_EQ(FirstCell(table[static_cast<size_t>(r) + 1]), std::to_string(r));
  EXPECT_NE(table[0].find("compute"), std::string::npos);
  EXPECT_NE(table[0].find("idle"), std::string::npos);
}

TEST(TextReportTest, ALargeJobShowsTheCulpritFirstAndTheMedianOfAllRanks) {
  TempDir dir;
  auto d = SimulatedRun(dir.path(), FixtureOptions{.hardware = false, .ranks = 16});
  ASSERT_EQ(d->analyses.traces.ranks.size(), 16u);
  ASSERT_EQ(d->analyses.traces.culprit, testing_util::kFixtureCulprit);
  std::string text = Text(d->input());
  std::vector<std::string> table = TraceTable(text);
  // header, 6 ranks, the median row, the "more ranks" line
  ASSERT_EQ(table.size(), 9u) << text;
  EXPECT_EQ(FirstCell(table[1]), std::to_string(testing_util::kFixtureCulprit)) << text;
  EXPECT_EQ(FirstCell(table[7]), "median of 16") << text;
  EXPECT_EQ(table[8], "  ... 10 more ranks (all of them: --json or --html)");
  // The culprit was last at every matched collective; the median rank never.
  EXPECT_NE(table[1].find("100%"), std::string::npos) << table[1];
}

TEST(TextReportTest, TracesWithoutARankGetTheirOwnRowsAndFileNames) {
  TempDir dir;
  auto d = SimulatedRun(dir.path(), FixtureOptions{.hardware = false, .ranks = 8});
  RankTrace& lost = d->run.traces[3];
  const int32_t lost_rank = *lost.rank;
  lost.rank.reset();
  d->analyses.traces = AnalyzeTraces(d->run);
  ASSERT_EQ(d->analyses.traces.ranks.size(), 7u);
  ASSERT_EQ(d->analyses.traces.unranked.size(), 1u);
  std::string text = Text(d->input());
  EXPECT_NE(text.find("traces: 7 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find(", 1 without a rank"), std::string::npos) << text;
  std::vector<std::string> table = TraceTable(text);
  ASSERT_EQ(table.size(), 10u) << text;  // header, 7 ranks, 1 without, its file
  EXPECT_EQ(FirstCell(table[8]), "no rank #1");
  EXPECT_EQ(table[9], "  #1: " + d->run.files[lost.file].path);
  for (size_t i = 1; i <= 7; ++i) EXPECT_NE(FirstCell(table[i]), std::to_string(lost_rank));
}

// A rank whose trace names no host reads the host its step records name
// (or the agent's, RunBuilder's HostsFromAgent); with neither, "-" (null
// in the JSON report).
TEST(TextReportTest, ARankWhoseTraceNamesNoHostShowsItsStepRecordsHost) {
  TempDir dir;
  auto d = SimulatedRun(dir.path(), FixtureOptions{.hardware = false, .ranks = 8});
  for (RankTrace& t : d->run.traces) t.host.reset();
  for (StepSeries& s : d->run.ranks) s.info.host.reset();
  ASSERT_FALSE(d->run.ranks.empty());
  d->run.ranks[1].info.host = "vm-7";
  const int32_t rank = d->run.ranks[1].info.rank;
  d->analyses.traces = AnalyzeTraces(d->run);
  std::string text = Text(d->input());
  std::vector<std::string> table = TraceTable(text);
  ASSERT_EQ(table.size(), 9u) << text;
  for (size_t i = 1; i < table.size(); ++i) {
    std::istringstream row(table[i]);
    std::string label, host;
    row >> label >> host;
    EXPECT_EQ(host, label == std::to_string(rank) ? "vm-7" : "-") << table[i];
  }
  // The JSON report's traces.ranks[] says the same.
  Json report = Json::parse(RenderJson(d->input()));
  for (const Json& t : report["traces"]["ranks"]) {
    if (t["rank"].get<int32_t>() == rank) {
      EXPECT_EQ(t["host"], "vm-7");
    } else {
      EXPECT_TRUE(t["host"].is_null()) << t.dump();
    }
  }
}

}  // namespace
}  // namespace laggard
