// The verdict from GPU metrics alone, where step times are synchronised and
// no trace was taken: one throttled GPU is the culprit; two throttled GPUs
// in one job are both named (a synchronous job waits for each), not
// "inconclusive"; a healthy job's GPUs name no one.

#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::RunCli;
using testing_util::TempDir;

nlohmann::json Diagnose(const TempDir& tmp, const std::vector<std::string>& faults, int seed) {
  std::vector<std::string> args = {
      "simulate",     "--nodes", "4",      "--gpus-per-node",    "8",
      "--steps",      "160",     "--seed", std::to_string(seed), "--no-traces",
      "--no-effects", "-q",      "-o",     tmp.File("run")};
  for (const std::string& f : faults) {
    args.push_back("--fault");
    args.push_back(f);
  }
  auto sim = RunCli(args);
  EXPECT_EQ(sim.rc, kExitOk) << sim.err;
  auto r = RunCli({"diagnose", tmp.File("run"), "--json", "-"});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  return nlohmann::json::parse(r.out);
}

std::set<std::pair<std::string, int>> CulpritGpus(const nlohmann::json& report) {
  std::set<std::pair<std::string, int>> out;
  for (const auto& c : report["verdict"]["culprits"]) {
    if (c["host"].is_string() && c["gpu"].is_number()) {
      out.insert({c["host"].get<std::string>(), c["gpu"].get<int>()});
    }
  }
  return out;
}

TEST(HardwareOnlyVerdictTest, TwoThrottledGpusInOneJobAreBothNamed) {
  TempDir tmp;
  auto report = Diagnose(tmp, {"thermal@node-01:3:0.224", "clocks_locked@node-02:2:0.235"}, 28);
  EXPECT_EQ(report["verdict"]["status"], "straggler") << report["verdict"]["summary"];
  EXPECT_EQ(CulpritGpus(report),
            (std::set<std::pair<std::string, int>>{{"node-01", 3}, {"node-02", 2}}))
      << report["verdict"]["summary"];
  for (const auto& c : report["verdict"]["culprits"]) {
    EXPECT_EQ(c["cause_class"], "compute_slow");
    EXPECT_LE(c["confidence"].get<double>(), 0.5);  // unconfirmed by timing
  }
}

TEST(HardwareOnlyVerdictTest, AHealthyJobsGpusNameNoOne) {
  for (int seed : {5, 6}) {
    TempDir tmp;
    auto report = Diagnose(tmp, {}, seed);
    EXPECT_TRUE(report["verdict"]["culprits"].empty()) << report["verdict"]["summary"];
  }
}

}  // namespace
}  // namespace laggard
