// Analyses::AllFindings(): every detector's findings reach the reports, in
// report order; a detector left out would drop its findings from every report
// (as the pause detector's once were).

#include "analysis/analyze_run.h"

#include <gtest/gtest.h>

#include <vector>

namespace laggard {
namespace {

Finding Tagged(const char* detector) {
  Finding f;
  f.message = detector;
  return f;
}

TEST(AllFindingsTest, EveryDetectorsFindingsInReportOrder) {
  Analyses a;
  a.tool_reports.findings.push_back(Tagged("tool_reports"));
  a.network.findings.push_back(Tagged("network"));
  a.hardware.findings.push_back(Tagged("hardware"));
  a.host_cpu.findings.push_back(Tagged("host_cpu"));
  a.pauses.findings.push_back(Tagged("pauses"));
  a.steps.findings.push_back(Tagged("steps"));
  a.steps.findings.push_back(Tagged("steps 2"));
  a.traces.findings.push_back(Tagged("traces"));
  a.pipelines.findings.push_back(Tagged("pipelines"));
  a.stall.findings.push_back(Tagged("stall"));
  a.hang.findings.push_back(Tagged("hang"));
  std::vector<std::string> got;
  for (const Finding* f : a.AllFindings()) got.push_back(f->message);
  EXPECT_EQ(
      got, (std::vector<std::string>{"hang", "stall", "pipelines", "traces", "steps", "steps 2",
                                     "pauses", "host_cpu", "hardware", "network", "tool_reports"}));
}

TEST(AllFindingsTest, PointsIntoTheAnalysesNotAtCopies) {
  Analyses a;
  a.pauses.findings.push_back(Tagged("pauses"));
  std::vector<const Finding*> all = a.AllFindings();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], &a.pauses.findings[0]);
  EXPECT_TRUE(Analyses{}.AllFindings().empty());
}

}  // namespace
}  // namespace laggard
