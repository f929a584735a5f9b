// End to end: the simulator writes real Kineto traces of a multi-node job
// with one fault, `laggard diagnose` reads them (the real CLI, in-process)
// and the JSON verdict must name what the simulator injected (truth.json).

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.h"
#include "simulator/writers/kineto_traces.h"
#include "simulator/writers/step_logs.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadFile;
using testing_util::TempDir;
using testing_util::WriteFile;

nlohmann::json Diagnose(const std::string& dir, const std::vector<std::string>& flags = {}) {
  std::vector<std::string> args = {"laggard", "diagnose", dir, "--json", "-"};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int rc = RunLaggard(static_cast<int>(argv.size()), argv.data(), out, err);
  EXPECT_EQ(rc, kExitOk) << err.str();
  return nlohmann::json::parse(out.str());
}

sim::TraceScenario Base(uint64_t seed) {
  sim::TraceScenario sc;
  sc.ranks = 16;
  sc.gpus_per_node = 8;
  sc.steps = 3;
  sc.kernels_per_step = 40;
  sc.collectives_per_step = 4;
  sc.seed = seed;
  return sc;
}

TEST(TraceScenarioTest, ComputeSlowGpuIsTheCulpritAcrossNodesWithClockOffsets) {
  TempDir dir;
  auto sc = Base(3);
  sc.compute_slow = sim::ComputeSlowFault{11, 1.2};
  sc.max_clock_offset_ms = 6;
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, dir.path(), /*gzip=*/true).ok());
  auto truth = nlohmann::json::parse(ReadFile(dir.File("truth.json")));
  nlohmann::json r = Diagnose(dir.path());
  const auto& v = r["verdict"];
  EXPECT_EQ(v["status"], "straggler") << v["summary"];
  ASSERT_FALSE(v["culprits"].empty());
  EXPECT_EQ(v["culprits"][0]["rank"], 11);
  EXPECT_EQ(v["culprits"][0]["cause_class"], "compute_slow");
  EXPECT_NEAR(v["culprits"][0]["slowdown"].get<double>(), 0.2, 0.03);
  EXPECT_EQ(r["traces"]["culprit"], 11);
  EXPECT_EQ(r["traces"]["ranks"].size(), 16u);
  // The victims wait longer in NCCL than the culprit.
  double culprit_wait = r["traces"]["ranks"][11]["median_wait_ms"];
  for (const auto& t : r["traces"]["ranks"]) {
    if (t["rank"] != 11) {
      EXPECT_GT(t["median_wait_ms"].get<double>(), culprit_wait);
    }
  }
  (void)truth;
}

TEST(TraceScenarioTest, DataStallIsAHostStall) {
  TempDir dir;
  auto sc = Base(4);
  sc.data_stall = sim::DataStallFault{6, 0.05};
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, dir.path()).ok());
  nlohmann::json r = Diagnose(dir.path());
  const auto& v = r["verdict"];
  ASSERT_FALSE(v["culprits"].empty()) << v["summary"];
  EXPECT_EQ(v["culprits"][0]["rank"], 6);
  EXPECT_EQ(v["culprits"][0]["cause_class"], "host_stall");
}

TEST(TraceScenarioTest, StepsTheLoopNamesItselfAreReadWithStepMarker) {
  TempDir dir;
  auto sc = Base(4);
  sc.data_stall = sim::DataStallFault{6, 0.05};
  sc.step_name = "train_step";  // record_function("train_step"), no profiler.step()
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, dir.path()).ok());
  nlohmann::json without = Diagnose(dir.path());
  for (const auto& t : without["traces"]["ranks"]) EXPECT_EQ(t["steps"], 0);

  nlohmann::json r = Diagnose(dir.path(), {"--step-marker", "train_step"});
  ASSERT_EQ(r["traces"]["ranks"].size(), 16u);
  for (const auto& t : r["traces"]["ranks"]) EXPECT_EQ(t["steps"], 3);
  EXPECT_EQ(r["data_quality"]["notes"].count("trace.no_step_marker"), 0u);
  const auto& v = r["verdict"];
  ASSERT_FALSE(v["culprits"].empty()) << v["summary"];
  EXPECT_EQ(v["culprits"][0]["rank"], 6);
  EXPECT_EQ(v["culprits"][0]["cause_class"], "host_stall");
}

// Two ranks whose all-reduce is a custom kernel (vLLM's, no NCCL in its
// name, no collective args); rank 1's GEMMs take 30% longer, so it arrives
// last at every all-reduce and the kernel ends at the same time on both.
void WriteCustomAllReduceTraces(const std::string& dir) {
  for (int rank = 0; rank < 2; ++rank) {
    std::string events;
    double t = 1000;
    for (int step = 0; step < 4; ++step) {
      double end = 1000 + step * 2000 + 1300 + 400;  // last arrival + transfer
      double gemm = rank == 1 ? 1300 : 1000;
      auto kernel = [&](const std::string& name, double ts, double dur) {
        events += fmt::format(
            R"J({}{{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": {}, "stream": 7}}}})J",
            events.empty() ? "" : ",\n", name, ts, dur, rank);
      };
      kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", t, gemm);
      kernel(
          "void cross_device_reduce_2stage<__nv_bfloat16, 2>(RankData*, RankSignals, Signal*, "
          "__nv_bfloat16*, int, int)",
          t + gemm, end - (t + gemm));
      events +=
          ",\n" +
          fmt::format(
              R"J({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {}, "dur": 2000}})J",
              step, t - 10);
      t = end + 300;
    }
    WriteFile(
        fmt::format("{}/rank-{}.pt.trace.json", dir, rank),
        fmt::format(
            R"J({{"distributedInfo": {{"backend": "nccl", "rank": {}, "world_size": 2}}, "traceEvents": [
{}
]}})J",
            rank, events));
  }
}

TEST(TraceScenarioTest, CustomAllReduceKernelsAreCollectivesWithCommKernel) {
  TempDir dir;
  WriteCustomAllReduceTraces(dir.path());
  nlohmann::json plain = Diagnose(dir.path());
  EXPECT_EQ(plain["traces"]["instances"], 0);
  EXPECT_EQ(plain["traces"]["ranks"][0]["collectives"], 0);

  nlohmann::json r = Diagnose(dir.path(), {"--comm-kernel", "Cross_Device_Reduce"});
  EXPECT_EQ(r["traces"]["instances"], 4);
  EXPECT_EQ(r["traces"]["ranks"][0]["collectives"], 4);
  EXPECT_EQ(r["traces"]["culprit"], 1) << r["verdict"]["summary"];
  EXPECT_EQ(r["traces"]["ranks"][1]["share_last"], 1.0);
  EXPECT_GT(r["traces"]["ranks"][0]["busy_by_class_s"]["communication"].get<double>(), 0);
}

TEST(TraceScenarioTest, SlowNetworkForEveryoneIsCommunicationBound) {
  TempDir dir;
  auto sc = Base(5);
  sc.network_slow = sim::NetworkSlowFault{8};
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, dir.path()).ok());
  nlohmann::json r = Diagnose(dir.path());
  EXPECT_EQ(r["verdict"]["status"], "communication_bound") << r["verdict"]["summary"];
  ASSERT_EQ(r["verdict"]["culprits"].size(), 1u);
  EXPECT_TRUE(r["verdict"]["culprits"][0]["rank"].is_null());
  EXPECT_EQ(r["verdict"]["culprits"][0]["cause_class"], "communication");
}

TEST(TraceScenarioTest, HealthyJobHasNoCulprit) {
  for (uint64_t seed = 10; seed < 14; ++seed) {
    TempDir dir;
    auto sc = Base(seed);
    sc.max_clock_offset_ms = 5;
    ASSERT_TRUE(sim::WriteKinetoTraces(sc, dir.path()).ok());
    nlohmann::json r = Diagnose(dir.path());
    EXPECT_TRUE(r["verdict"]["culprits"].empty())
        << "seed " << seed << ": " << r["verdict"]["summary"];
  }
}

TEST(TraceScenarioTest, SynchronisedStepLogsPlusTracesNameTheCulprit) {
  // The case step times alone cannot decide: end-to-end step logs are
  // synchronised; the traces of the same job show who arrives last.
  TempDir dir;
  sim::StepLogScenario steps;
  steps.ranks = 16;
  steps.steps = 200;
  steps.synchronised = true;
  steps.rank_slowdowns.push_back({9, 0.2, 0});
  ASSERT_TRUE(sim::WriteStepLogs(steps, sim::StepLogFormat::kArticle, dir.File("logs")).ok());
  auto sc = Base(6);
  sc.compute_slow = sim::ComputeSlowFault{9, 1.2};
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, dir.File("traces")).ok());
  nlohmann::json r = Diagnose(dir.path());
  const auto& v = r["verdict"];
  EXPECT_EQ(v["status"], "straggler") << v["summary"];
  EXPECT_EQ(v["culprits"][0]["rank"], 9);
  EXPECT_EQ(v["culprits"][0]["cause_class"], "compute_slow");
  bool synchronised_noted = false;
  for (const auto& f : r["findings"]) synchronised_noted |= f["code"] == "step.synchronised";
  EXPECT_TRUE(synchronised_noted);
}

}  // namespace
}  // namespace laggard
