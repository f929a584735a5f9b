// The CLI's contract: exit codes, the verdict line first, --quiet, --strict,
// --json to stdout, clear errors.

#include <gtest/gtest.h>

#include <sstream>

#include "cli/app.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::TempDir;
using testing_util::WriteFile;

struct Result {
  int rc;
  std::string out, err;
};

Result RunCli(std::vector<std::string> args) {
  args.insert(args.begin(), "laggard");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int rc = RunLaggard(static_cast<int>(argv.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}

std::string FourRanks(bool garbled) {
  std::string text;
  for (int s = 0; s < 30; ++s) {
    for (int r = 0; r < 4; ++r) {
      double t = 0.8 + 0.004 * ((s * 7 + r * 3) % 5) + (r == 2 ? 0.2 : 0);
      text += "rank " + std::to_string(r) + ", step " + std::to_string(s) + ", time " + std::to_string(t) + "s\n";
    }
  }
  if (garbled) text += "rank 1, step 31, time ???\n";
  return text;
}

TEST(CliTest, VerdictLineComesFirst) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("verdict: rank 2 is the straggler", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("data quality"), std::string::npos);
}

TEST(CliTest, QuietPrintsOnlyTheVerdict) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", "--quiet", dir.path()});
  EXPECT_EQ(r.rc, kExitOk);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
}

TEST(CliTest, JsonToStdoutIsTheOnlyOutput) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", "--json", "-", dir.path()});
  EXPECT_EQ(r.rc, kExitOk);
  EXPECT_EQ(r.out.rfind("{\n  \"schema\": \"laggard.report/1\"", 0), 0u);
}

TEST(CliTest, StrictFailsOnBadRecordsOnly) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(true));
  EXPECT_EQ(RunCli({"diagnose", dir.path()}).rc, kExitOk);
  Result r = RunCli({"diagnose", "--strict", dir.path()});
  EXPECT_EQ(r.rc, kExitStrictFailure);
  EXPECT_NE(r.err.find("1 bad record"), std::string::npos) << r.err;
  TempDir clean;
  WriteFile(clean.File("train.log"), FourRanks(false));
  EXPECT_EQ(RunCli({"diagnose", "--strict", clean.path()}).rc, kExitOk);
}

TEST(CliTest, NoUsableInputIsAClearNonZeroExit) {
  TempDir dir;
  WriteFile(dir.File("notes.txt"), "nothing about steps here\n");
  Result r = RunCli({"diagnose", dir.path()});
  EXPECT_EQ(r.rc, kExitNoInput);
  EXPECT_NE(r.err.find("no usable step times, traces, GPU metrics or network data"), std::string::npos) << r.err;
  Result missing = RunCli({"diagnose", "/no/such/laggard/path"});
  EXPECT_EQ(missing.rc, kExitNoInput);
  EXPECT_NE(missing.err.find("/no/such/laggard/path"), std::string::npos);
}

TEST(CliTest, BadStepPatternIsReported) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", "--step-pattern", "(?<step>\\d+", dir.path()});
  EXPECT_EQ(r.rc, kExitNoInput);
  EXPECT_NE(r.err.find("--step-pattern"), std::string::npos) << r.err;
}

TEST(CliTest, DemoDiagnosesItsSimulatedRun) {
  TempDir dir;
  Result r = RunCli({"demo", "-o", dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_NE(r.out.find("verdict: rank 13 (node-01 GPU 5) is the straggler"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir.File("report.json")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("report.html")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("trace.json")));
  EXPECT_NE(r.out.find("HTML report:  " + dir.File("report.html")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("merged trace: " + dir.File("trace.json")), std::string::npos) << r.out;
}

}  // namespace
}  // namespace laggard
