// `laggard confirm` and `laggard gemm` end to end, on reports of real
// PyTorch jobs (tests/data/realjobs): a CPU hog on rank 1's core is planned
// as a GEMM of its core against rank 0's, run here and judged; a healthy run
// has nothing to confirm; what is not a report is refused.

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "confirm/cpu_gemm.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::RunCli;
using testing_util::TempDir;
using testing_util::TestData;
using testing_util::WriteFile;

std::string ReportOf(const TempDir& tmp, const std::string& run) {
  std::string json = tmp.File(run + ".json");
  auto r = RunCli({"diagnose", TestData("realjobs", run), "--json", json, "-q"});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  return json;
}

TEST(ConfirmCliTest, AHoggedRanksCoreIsPlannedAgainstAHealthyRanksAndRunHere) {
  TempDir tmp;
  std::string report = ReportOf(tmp, "w2_cpu_hog");
  auto plan = RunCli({"confirm", report});
  ASSERT_EQ(plan.rc, kExitOk) << plan.err;
  EXPECT_NE(plan.out.find("printed only"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("--rank-cores"), std::string::npos) << plan.out;

  auto run = RunCli({"confirm", report, "--launcher", "local", "--rank-cores", "0:0,1:1", "--out",
                     tmp.File("out"), "--laggard", LAGGARD_BINARY, "--json"});
  ASSERT_EQ(run.rc, kExitOk) << run.err;
  auto j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["tests"].size(), 1u) << run.out;
  const auto& t = j["tests"][0];
  EXPECT_EQ(t["kind"], "compute");
  EXPECT_EQ(t["argv"].back(), "1,0");
  ASSERT_TRUE(t.contains("run")) << run.out;
  if (t["run"]["state"] != "ran") {
    // OpenBLAS missing: the test is marked with the reason.
    EXPECT_EQ(t["run"]["state"], "exited 2") << run.out;
    EXPECT_TRUE(t["run"]["reason"].is_string()) << run.out;
    GTEST_SKIP() << "laggard gemm could not run here: " << t["run"].dump();
  }
  std::string verdict = t["run"]["verdict"];
  EXPECT_TRUE(verdict == "confirmed" || verdict == "refuted" || verdict == "inconclusive")
      << verdict;
  EXPECT_NE(t["run"]["figures"].get<std::string>().find("suspect core cpu:1 GEMM"),
            std::string::npos);
}

TEST(ConfirmCliTest, AHealthyRunHasNothingToConfirm) {
  TempDir tmp;
  std::string report = ReportOf(tmp, "w2_healthy");
  auto r = RunCli({"confirm", report});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_NE(r.out.find("nothing to confirm"), std::string::npos) << r.out;
  auto j = RunCli({"confirm", report, "--json"});
  EXPECT_EQ(j.rc, kExitOk) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_TRUE(doc["tests"].empty());
  EXPECT_NE(doc["notes"][0].get<std::string>().find("nothing to confirm"), std::string::npos);
}

TEST(ConfirmCliTest, WhatIsNotAReportIsAClearError) {
  TempDir tmp;
  auto missing = RunCli({"confirm", tmp.File("none.json")});
  EXPECT_EQ(missing.rc, kExitNoInput);
  EXPECT_NE(missing.err.find("cannot read"), std::string::npos);
  auto other = RunCli({"confirm", WriteFile(tmp.File("x.json"), "{\"a\": 1}")});
  EXPECT_EQ(other.rc, kExitNoInput);
  EXPECT_NE(other.err.find("not a laggard report"), std::string::npos) << other.err;
  auto cores = RunCli({"confirm", ReportOf(tmp, "w2_cpu_hog"), "--rank-cores", "one"});
  EXPECT_EQ(cores.rc, kExitNoInput);
  EXPECT_NE(cores.err.find("RANK:CORE"), std::string::npos) << cores.err;
}

TEST(GemmCliTest, OneLinePerCoreOrAClearError) {
  auto r = RunCli({"gemm", "--seconds", "0.05", "--n", "64", "--cores", "0"});
  if (r.rc != kExitOk) {
    EXPECT_NE(r.err.find("libopenblas0"), std::string::npos) << r.err;
    GTEST_SKIP() << r.err;
  }
  EXPECT_EQ(r.out.rfind("laggard-gemm host=", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("device=cpu:0"), std::string::npos) << r.out;
  auto bad = RunCli({"gemm", "--cores", "x"});
  EXPECT_EQ(bad.rc, kExitNoInput);
}

TEST(ConfirmCliTest, GemmTimesEachGpuThroughCublasAndSaysWhichFailed) {
  // tests/fake_cuda stands in for the CUDA runtime and cuBLAS; NVML is
  // scripted, with the GPUs on the buses the fake gives them.
  TempDir tmp;
  std::string script = WriteFile(tmp.File("gpus.json"), R"({"gpus": [
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
     "fields": {"sm_clock_mhz": 1410, "temp_c": 60}},
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-1", "bus_id": "00000000:28:00.0",
     "fields": {"sm_clock_mhz": 1410, "temp_c": 60}}]})");
  setenv("FAKE_CUDA_TFLOPS", "200,150", 1);
  std::vector<std::string> args = {"gemm",
                                   "--gpus",
                                   "all",
                                   "--cudart-lib",
                                   LAGGARD_FAKE_CUDA_LIB,
                                   "--cublas-lib",
                                   LAGGARD_FAKE_CUDA_LIB,
                                   "--fake-gpus",
                                   script,
                                   "--n",
                                   "4096",
                                   "--seconds",
                                   "0.2"};
  auto r = RunCli(args);
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  auto lines = [](const std::string& out) {
    std::vector<confirm::GemmResult> got;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (auto g = confirm::ParseGemmLine(line)) got.push_back(*g);
    }
    return got;
  };
  auto got = lines(r.out);
  ASSERT_EQ(got.size(), 2u) << r.out;
  EXPECT_EQ(got[1].device, "gpu:1");
  EXPECT_EQ(got[1].model, "NVIDIA A100-SXM4-80GB");
  EXPECT_NEAR(got[1].gflops / got[0].gflops, 0.75, 0.03) << r.out;
  EXPECT_EQ(got[0].dtype, "bf16");

  setenv("FAKE_CUDA_FAIL", "malloc@0", 1);
  auto failed = RunCli(args);
  unsetenv("FAKE_CUDA_FAIL");
  EXPECT_EQ(failed.rc, kExitStrictFailure);
  EXPECT_EQ(lines(failed.out).size(), 1u) << failed.out;
  EXPECT_NE(failed.err.find("gpu:0: cudaMalloc: out of memory"), std::string::npos) << failed.err;

  auto both = RunCli({"gemm", "--gpus", "0", "--cores", "1"});
  EXPECT_EQ(both.rc, kExitNoInput);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
  auto bad = RunCli({"gemm", "--gpus", "first"});
  EXPECT_EQ(bad.rc, kExitNoInput);
  unsetenv("FAKE_CUDA_TFLOPS");
  auto absent = RunCli({"gemm", "--gpus", "all", "--cudart-lib", "/nonexistent/libcudart.so"});
  EXPECT_EQ(absent.rc, kExitNoInput);
  EXPECT_NE(absent.err.find("cannot load the CUDA runtime"), std::string::npos) << absent.err;
}

// The whole loop on files confirm itself wrote: simulate a degraded NIC,
// diagnose, confirm from the run's own nccl-tests and ibstat (--results,
// --out), then diagnose the run with the confirmation folder beside it.
TEST(ConfirmCliTest, AConfirmationFolderConfirmWroteFoldsIntoTheVerdict) {
  TempDir tmp;
  std::string run = tmp.File("run");
  ASSERT_EQ(RunCli({"simulate", "-o", run, "--nodes", "8", "--gpus-per-node", "4", "--fault",
                    "nic_degraded@node-05:mlx5_2"})
                .rc,
            kExitOk);
  std::string report = tmp.File("report.json");
  ASSERT_EQ(RunCli({"diagnose", run, "--json", report, "-q"}).rc, kExitOk);
  auto before = nlohmann::json::parse(testing_util::ReadFile(report));
  ASSERT_EQ(before["verdict"]["culprits"][0]["host"], "node-05");
  double confidence = before["verdict"]["culprits"][0]["confidence"];
  std::string out = tmp.File("confirm");
  auto confirmed = RunCli({"confirm", report, "--results", run, "--out", out});
  ASSERT_EQ(confirmed.rc, kExitOk) << confirmed.err;
  EXPECT_NE(confirmed.out.find("confirmed (nic)"), std::string::npos) << confirmed.out;
  std::string folded = tmp.File("folded.json");
  auto again = RunCli({"diagnose", run, out, "--json", folded});
  ASSERT_EQ(again.rc, kExitOk) << again.err;
  EXPECT_NE(again.err.find("1 of 1 confirmation matched"), std::string::npos) << again.err;
  auto after = nlohmann::json::parse(testing_util::ReadFile(folded));
  EXPECT_DOUBLE_EQ(after["verdict"]["culprits"][0]["confidence"].get<double>(),
                   confidence + (1 - confidence) / 2);
  ASSERT_EQ(after["confirmation"].size(), 1u);
  EXPECT_EQ(after["confirmation"][0]["verdict"], "confirmed");
  EXPECT_EQ(after["confirmation"][0]["locus"], "nic");
  EXPECT_EQ(after["confirmation"][0]["folded"], true);
  // The confirmation folder is not read as the run's data.
  EXPECT_EQ(after["verdict"]["culprits"].size(), before["verdict"]["culprits"].size());
}

}  // namespace
}  // namespace laggard
