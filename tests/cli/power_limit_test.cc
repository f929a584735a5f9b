// A power limit lowered mid-run and restored, as a user meets it in
// `laggard diagnose`: a simulated 8-rank job whose GPU 2 of node-01 (rank 6)
// was capped from step 15 to step 35, with timestamped step CSVs, traces of
// the last 3 steps (after the cap was lifted) and nvidia-smi's query CSV and
// -q dump (taken at other times, so they print other limits). The verdict
// names rank 6 from the slowdown its cap started, with what that slowdown
// cost against the simulator's healthy control; the change is an event
// with its time and line, not "conflicting facts"; the JSON lists the
// changes and the merged trace draws the limit.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadFile;
using testing_util::TempDir;

using Result = testing_util::CliResult;
using testing_util::RunCli;

TEST(PowerLimitCliTest, ACapLoweredAndRestoredMidRunIsNamedAsAnEventAtItsTime) {
  TempDir dir;
  Result sim = RunCli({"simulate",
                       "--nodes",
                       "2",
                       "--gpus-per-node",
                       "4",
                       "--steps",
                       "60",
                       "--seed",
                       "3",
                       "--step-format",
                       "csv",
                       "--trace-steps",
                       "3",
                       "--fault",
                       "power_cap@node-01:2:0.5,onset=15,end=35",
                       "--no-network",
                       "--no-nccl-tests",
                       "--no-nccl-debug",
                       "-q",
                       "-o",
                       dir.File("sim")});
  ASSERT_EQ(sim.rc, kExitOk) << sim.err;

  Result text = RunCli({"diagnose", dir.File("sim"), "--trace", dir.File("merged.json")});
  ASSERT_EQ(text.rc, kExitOk) << text.err;
  EXPECT_EQ(text.out.rfind("verdict: rank 6 (node-01 GPU 2) is the straggler", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("compute-slow: power_cap"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("of job throughput"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("enforced power limit lowered from 700 W to"), std::string::npos);
  EXPECT_NE(text.out.find("nvidia-smi-query.csv:"), std::string::npos);
  EXPECT_NE(text.out.find("find what lowered the power limit of node-01 GPU 2"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("hardware.conflicting_facts"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("lift the power cap"), std::string::npos) << text.out;

  Result json = RunCli({"diagnose", dir.File("sim"), "--json", "-"});
  ASSERT_EQ(json.rc, kExitOk) << json.err;
  nlohmann::json report = nlohmann::json::parse(json.out);
  // What the cap cost while it lasted, measured before and after, against
  // the simulator's healthy control of the same steps.
  nlohmann::json truth = nlohmann::json::parse(ReadFile(dir.File("sim/truth.json")));
  const nlohmann::json& impact = report["verdict"]["impact"];
  ASSERT_TRUE(impact["throughput_lost"].is_number()) << report["verdict"];
  EXPECT_EQ(impact["method"], "before_after") << report["verdict"];
  ASSERT_TRUE(impact["first_step"].is_number() && impact["last_step"].is_number()) << impact;
  EXPECT_NEAR(impact["first_step"].get<double>(), 15, 2);
  EXPECT_NEAR(impact["last_step"].get<double>(), 35, 2);
  double with = 0, without = 0;
  for (int s = impact["first_step"].get<int>(); s <= impact["last_step"].get<int>(); ++s) {
    with += truth["step_s"][s].get<double>();
    without += truth["healthy_step_s"][s].get<double>();
  }
  EXPECT_NEAR(impact["throughput_lost"].get<double>(), 1 - without / with, 0.03);
  EXPECT_NE(
      text.out.find(fmt::format("of job throughput in steps {}-{}", impact["first_step"].get<int>(),
                                impact["last_step"].get<int>())),
      std::string::npos)
      << text.out;
  const nlohmann::json* gpu = nullptr;
  for (const nlohmann::json& g : report["hardware"]["gpus"]) {
    if (g["host"] == "node-01" && g["gpu"] == 2) gpu = &g;
  }
  ASSERT_NE(gpu, nullptr);
  const nlohmann::json& changes = (*gpu)["power_limit_changes"];
  ASSERT_EQ(changes.size(), 2u) << changes.dump();
  EXPECT_EQ(changes[0]["from_w"], 700.0);
  EXPECT_LT(changes[0]["to_w"].get<double>(), 700.0);
  EXPECT_EQ(changes[1]["to_w"], 700.0);
  EXPECT_TRUE(changes[0]["time"].is_string());
  for (const nlohmann::json& f : report["findings"]) {
    if (f["code"] == "gpu.power_cap") {
      EXPECT_EQ(f["onset_time"], changes[0]["time"]);
    }
  }

  nlohmann::json trace = nlohmann::json::parse(ReadFile(dir.File("merged.json")));
  size_t limit_counters = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e.value("ph", "") == "C" && e.value("name", "") == "GPU 2 power_limit_w") ++limit_counters;
  }
  EXPECT_GT(limit_counters, 0u);
}

}  // namespace
}  // namespace laggard
