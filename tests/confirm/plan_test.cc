// The confirmation plan from a diagnose report: which tests, where, and the
// bound of 3 runs per suspect; the CPU GEMM's line format and core lists.

#include "confirm/plan.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "confirm/cpu_gemm.h"

namespace laggard::confirm {
namespace {

using Json = nlohmann::json;

// A report of 4 hosts x 2 GPUs (H100), hosts 0-1 on leaf-1, 2-3 on leaf-2.
Json Report(Json culprits, bool gpus = true) {
  // Without GPUs it is a CPU job: its traces ran on no device.
  Json r;
  r["schema"] = "laggard.report/1";
  r["verdict"] = {{"status", culprits.empty() ? "no_straggler" : "straggler"},
                  {"summary", "verdict: ..."},
                  {"culprits", culprits}};
  Json ranks = Json::array(), gpu_list = Json::array();
  for (int h = 0; h < 4; ++h) {
    for (int g = 0; g < 2; ++g) {
      int rank = h * 2 + g;
      ranks.push_back({{"rank", rank}, {"host", fmt::format("node-{:02}", h)}});
      gpu_list.push_back({{"host", fmt::format("node-{:02}", h)},
                          {"gpu", g},
                          {"rank", rank},
                          {"model", "NVIDIA H100 80GB HBM3"}});
    }
  }
  r["ranks"] = ranks;
  r["hardware"] = {{"gpus", gpus ? gpu_list : Json::array()}};
  if (!gpus)
    r["traces"] = {
        {"ranks", {{{"rank", 0}, {"cpu_only", true}}, {{"rank", 1}, {"cpu_only", true}}}}};
  r["network"] = {{"switch_of",
                   {{"node-00", "leaf-1"},
                    {"node-01", "leaf-1"},
                    {"node-02", "leaf-2"},
                    {"node-03", "leaf-2"}}}};
  return r;
}

ConfirmInput Read(const Json& j) {
  auto in = ReadReport(j.dump(), "report.json");
  EXPECT_TRUE(in.ok()) << in.status().message();
  return in.ok() ? *in : ConfirmInput{};
}

TEST(ConfirmPlanTest, AThrottledGpuGetsItsHealthChecksAndAControlOnAnotherHost) {
  ConfirmInput in = Read(Report(Json::array({{{"rank", 3},
                                              {"host", "node-01"},
                                              {"gpu", 1},
                                              {"cause_class", "compute_slow"},
                                              {"cause", "thermal"},
                                              {"confidence", 0.8}}})));
  ConfirmPlan plan = PlanConfirm(in, {});
  ASSERT_EQ(plan.tests.size(), 5u);
  EXPECT_EQ(plan.tests[0].argv[0], "nvidia-smi");
  EXPECT_EQ(plan.tests[0].hosts, std::vector<std::string>{"node-01"});
  EXPECT_EQ(plan.tests[1].argv, (std::vector<std::string>{"dcgmi", "diag", "-r", "1", "-i", "1"}));
  EXPECT_FALSE(plan.tests[1].control);
  const PlannedTest& control = plan.tests[2];
  EXPECT_TRUE(control.control);
  ASSERT_EQ(control.hosts.size(), 1u);
  EXPECT_NE(control.hosts[0], "node-01");  // another host, the same model
  // The GEMM: every GPU of the suspect's host at once, and the control GPU.
  const PlannedTest& gemm = plan.tests[3];
  EXPECT_EQ(gemm.kind, TestKind::kCompute);
  EXPECT_EQ(gemm.argv,
            (std::vector<std::string>{"laggard", "gemm", "--gpus", "all", "--seconds", "30"}));
  EXPECT_EQ(gemm.hosts, std::vector<std::string>{"node-01"});
  EXPECT_EQ(gemm.gpu, 1);
  EXPECT_FALSE(gemm.control);
  const PlannedTest& gemm_control = plan.tests[4];
  EXPECT_TRUE(gemm_control.control);
  EXPECT_EQ(gemm_control.hosts, control.hosts);
  EXPECT_EQ(gemm_control.argv, gemm.argv);  // every GPU of the control's host, loaded alike
  EXPECT_EQ(gemm_control.gpu, control.gpu);
  // Every GPU test knows its host's GPUs, for srun to allocate them all.
  for (const PlannedTest& t : plan.tests) EXPECT_GT(t.node_gpus, 0) << t.why;
}

TEST(ConfirmPlanTest, ASlowLinkGetsTheTriangleWithItsSwitchNeighbourFirst) {
  ConfirmInput in = Read(Report(Json::array({{{"host", "node-00"},
                                              {"nic", "mlx5_1 port 1"},
                                              {"cause_class", "communication"},
                                              {"cause", "link_degraded"},
                                              {"confidence", 0.7}}})));
  PlanOptions o;
  o.gpus_per_node = 2;
  ConfirmPlan plan = PlanConfirm(in, o);
  // Its switch neighbour first: that pair leaves the switch's uplink out;
  // then its own ports.
  ASSERT_EQ(plan.tests.size(), 4u);
  EXPECT_EQ(plan.tests[3].argv, std::vector<std::string>{"ibstat"});
  EXPECT_EQ(plan.tests[3].hosts, std::vector<std::string>{"node-00"});
  EXPECT_EQ(plan.tests[3].kind, TestKind::kHealth);
  EXPECT_EQ(plan.tests[0].hosts, (std::vector<std::string>{"node-00", "node-01"}));
  EXPECT_EQ(plan.tests[1].hosts, (std::vector<std::string>{"node-00", "node-02"}));
  EXPECT_EQ(plan.tests[2].hosts, (std::vector<std::string>{"node-01", "node-02"}));
  EXPECT_TRUE(plan.tests[2].control);
  EXPECT_EQ(plan.tests[0].argv[0], "all_reduce_perf");
  EXPECT_EQ(plan.tests[0].procs, (std::vector<int>{2, 2}));
  EXPECT_EQ(plan.tests[0].role, PairRole::kSuspect);
  EXPECT_EQ(plan.tests[2].role, PairRole::kControl);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(plan.tests[i].kind, TestKind::kCommunication);
}

TEST(ConfirmPlanTest, NoSuspectGetsMoreThanThreeRuns) {
  Json culprits = Json::array();
  culprits.push_back({{"rank", 3},
                      {"host", "node-01"},
                      {"gpu", 1},
                      {"cause_class", "compute_slow"},
                      {"confidence", 0.8}});
  culprits.push_back({{"host", "node-02"}, {"cause_class", "communication"}, {"confidence", 0.7}});
  culprits.push_back({{"switch", "leaf-1"}, {"cause_class", "external"}, {"confidence", 0.6}});
  ConfirmInput in = Read(Report(culprits));
  ConfirmPlan plan = PlanConfirm(in, {});
  // Benchmark runs (GEMM, nccl-tests) and health checks (nvidia-smi, dcgmi,
  // ibstat) are each at most 3 per suspect.
  std::vector<int> runs(3, 0), checks(3, 0);
  for (const PlannedTest& t : plan.tests)
    ++(t.kind == TestKind::kHealth ? checks : runs)[t.culprit];
  for (int n : runs) EXPECT_LE(n, 3);
  for (int n : checks) EXPECT_LE(n, 3);
  std::vector<int> per(3, 0);
  for (size_t i = 0; i < 3; ++i) per[i] = runs[i] + checks[i];
  EXPECT_GT(per[2], 0);  // the switch: a host under it with one elsewhere
}

TEST(ConfirmPlanTest, AGroupsRanksAreEachTestedAndNoneIsAnothersControl) {
  // Ranks 0 and 2 (node-00 GPU 0, node-01 GPU 0) hot together.
  ConfirmInput in = Read(Report(Json::array({{{"ranks", {0, 2}},
                                              {"cause_class", "compute_slow"},
                                              {"cause", "thermal"},
                                              {"confidence", 0.7}}})));
  ConfirmPlan plan = PlanConfirm(in, {});
  std::set<std::pair<std::string, int>> suspects, controls;
  for (const PlannedTest& t : plan.tests) {
    if (!t.gpu) continue;
    (t.control ? controls : suspects).insert({t.hosts[0], *t.gpu});
  }
  EXPECT_EQ(suspects, (std::set<std::pair<std::string, int>>{{"node-00", 0}, {"node-01", 0}}));
  for (const auto& c : controls) EXPECT_EQ(suspects.count(c), 0u) << c.first << " " << c.second;
}

TEST(ConfirmPlanTest, AGpuJobWithoutGpuMetricsIsNoCpuJob) {
  Json r = Report(Json::array({{{"host", "node-01"},
                                {"gpu", 5},
                                {"cause_class", "compute_slow"},
                                {"confidence", 0.6}}}),
                  false);
  r.erase("traces");
  ConfirmInput in = Read(r);
  EXPECT_FALSE(in.cpu_job);
  ConfirmPlan plan = PlanConfirm(in, {});
  ASSERT_FALSE(plan.tests.empty());
  EXPECT_EQ(plan.tests[0].argv[0], "nvidia-smi");
}

TEST(ConfirmPlanTest, ASharedSwitchIsTestedOnceAcrossAndInsideIt) {
  Json culprits = Json::array();
  for (const char* h : {"node-00", "node-01"}) {
    culprits.push_back({{"host", h},
                        {"switch", "leaf-1"},
                        {"cause_class", "external"},
                        {"cause", "shared_switch"},
                        {"confidence", 0.6}});
  }
  ConfirmPlan plan = PlanConfirm(Read(Report(culprits)), {});
  ASSERT_EQ(plan.tests.size(), 3u);
  EXPECT_EQ(plan.tests[0].hosts, (std::vector<std::string>{"node-00", "node-02"}));  // across
  EXPECT_EQ(plan.tests[1].hosts, (std::vector<std::string>{"node-00", "node-01"}));  // inside
  EXPECT_EQ(plan.tests[2].hosts, (std::vector<std::string>{"node-02", "node-03"}));  // elsewhere
  EXPECT_TRUE(plan.tests[2].control);
}

TEST(ConfirmPlanTest, NumbersOutOfRangeAndOddShapesAreAbsentNotWrapped) {
  auto in = ReadReport(
      R"({"schema":"laggard.report/1","verdict":{"culprits":[{"rank":-1,"gpu":4294967301,"host":"a b"}]},)"
      R"("ranks":[{"rank":1e30}]})",
      "d.json");
  ASSERT_TRUE(in.ok());
  ASSERT_EQ(in->culprits.size(), 1u);
  EXPECT_FALSE(in->culprits[0].rank.has_value());
  EXPECT_FALSE(in->culprits[0].gpu.has_value());
  EXPECT_TRUE(in->ranks.empty());
  EXPECT_TRUE(ReadReport(R"({"schema":"laggard.report/1","verdict":"x"})", "e.json").ok());
  EXPECT_TRUE(ReadReport(R"({"schema":"laggard.report/1","verdict":[1,2]})", "f.json").ok());
  std::string deep = R"({"schema":"laggard.report/1","verdict":)" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  EXPECT_FALSE(ReadReport(deep, "g.json").ok());
}

TEST(ConfirmPlanTest, AHostCulpritsSwitchIsWhereItSitsNotASuspect) {
  // diagnose gives a host's culprit its switch: its neighbours there stay
  // healthy partners.
  ConfirmInput in = Read(Report(Json::array({{{"host", "node-00"},
                                              {"switch", "leaf-1"},
                                              {"nic", "mlx5_1 port 1"},
                                              {"cause_class", "communication"},
                                              {"confidence", 0.8}}})));
  ConfirmPlan plan = PlanConfirm(in, {});
  ASSERT_GE(plan.tests.size(), 1u);
  EXPECT_EQ(plan.tests[0].hosts, (std::vector<std::string>{"node-00", "node-01"}));
}

TEST(ConfirmPlanTest, AHostNameThatIsAnOptionNeverReachesACommandLine) {
  ConfirmInput in = Read(Report(Json::array({{{"host", "-oProxyCommand=touch /tmp/x"},
                                              {"cause_class", "communication"},
                                              {"confidence", 0.7}}})));
  ASSERT_EQ(in.culprits.size(), 1u);
  EXPECT_FALSE(in.culprits[0].host);
  ConfirmPlan plan = PlanConfirm(in, {});
  for (const PlannedTest& t : plan.tests) {
    for (const std::string& h : t.hosts) EXPECT_NE(h[0], '-') << h;
  }
}

TEST(ConfirmPlanTest, ImbalanceIsNotAHardwareQuestion) {
  ConfirmInput in = Read(Report(Json::array({{{"ranks", {2, 3}},
                                              {"cause_class", "imbalance"},
                                              {"cause", "uneven_work"},
                                              {"confidence", 0.6}}})));
  ConfirmPlan plan = PlanConfirm(in, {});
  EXPECT_TRUE(plan.tests.empty());
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("no hardware test"), std::string::npos);
}

TEST(ConfirmPlanTest, ACpuJobTimesTheSuspectCoreAgainstAHealthyOne) {
  ConfirmInput in = Read(Report(
      Json::array({{{"rank", 1}, {"cause_class", "host_stall"}, {"confidence", 0.6}}}), false));
  PlanOptions o;
  o.rank_cores = {{0, 0}, {1, 1}};
  ConfirmPlan plan = PlanConfirm(in, o);
  ASSERT_EQ(plan.tests.size(), 1u);
  EXPECT_EQ(plan.tests[0].kind, TestKind::kCompute);
  EXPECT_EQ(plan.tests[0].argv, (std::vector<std::string>{"laggard", "gemm", "--cores", "1,0"}));
  // Without the map: every core, and a note that says what to give.
  ConfirmPlan blind = PlanConfirm(in, {});
  ASSERT_EQ(blind.tests.size(), 1u);
  EXPECT_EQ(blind.tests[0].argv,
            (std::vector<std::string>{"laggard", "gemm", "--seconds", "0.25"}));
  ASSERT_EQ(blind.notes.size(), 1u);
  EXPECT_NE(blind.notes[0].find("--rank-cores"), std::string::npos);
}

TEST(ConfirmPlanTest, WhatIsNotAReportIsRefused) {
  EXPECT_FALSE(ReadReport("{not json", "a.json").ok());
  auto other = ReadReport(R"({"schema": "something/1"})", "b.json");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not a laggard report"), std::string::npos);
  // Fields of the wrong type are skipped, not trusted.
  auto odd = ReadReport(
      R"({"schema":"laggard.report/1","verdict":{"culprits":[{"rank":"x","host":3}]},"ranks":7})",
      "c.json");
  ASSERT_TRUE(odd.ok()) << odd.status().message();
  ASSERT_EQ(odd->culprits.size(), 1u);
  EXPECT_FALSE(odd->culprits[0].rank.has_value());
  EXPECT_FALSE(odd->culprits[0].host.has_value());
}

TEST(CpuGemmTest, CoreListsAreReadAsTasksetWritesThem) {
  EXPECT_EQ(*ParseCoreList("0-3,6"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(*ParseCoreList("5"), (std::vector<int>{5}));
  EXPECT_FALSE(ParseCoreList("3-1").ok());
  EXPECT_FALSE(ParseCoreList("a").ok());
  EXPECT_FALSE(ParseCoreList("").ok());
}

TEST(CpuGemmTest, ALineReadsBackAsWritten) {
  GemmResult r;
  r.host = "vm";
  r.device = "cpu:1";
  r.n = 512;
  r.reps = 41;
  r.seconds = 1.0;
  r.gflops = 38.21;
  r.gflops_min = 35.9;
  r.gflops_max = 38.77;
  r.blas = "OpenBLAS 0.3.21";
  auto back = ParseGemmLine(GemmLine(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->device, "cpu:1");
  EXPECT_EQ(back->blas, "OpenBLAS 0.3.21");
  EXPECT_DOUBLE_EQ(back->gflops, 38.21);
  EXPECT_FALSE(ParseGemmLine("laggard-gemm host=vm gflops=x").has_value());
  EXPECT_FALSE(ParseGemmLine("something else").has_value());
}

TEST(CpuGemmTest, EveryAllowedCoreIsTimedAndAnotherIsRefused) {
  auto blas = Blas::Load();
  if (!blas.ok()) GTEST_SKIP() << blas.status().message();
  GemmOptions o;
  o.n = 128;
  o.seconds = 0.05;
  o.burst_s = 0.01;
  std::vector<int> cores = AllowedCores();
  ASSERT_FALSE(cores.empty());
  auto results = RunCpuGemm(**blas, cores, o);
  ASSERT_TRUE(results.ok()) << results.status().message();
  ASSERT_EQ(results->size(), cores.size());
  for (const GemmResult& r : *results) {
    EXPECT_GT(r.gflops, 0.1) << r.device;
    EXPECT_GE(r.reps, o.min_reps);
    EXPECT_LE(r.gflops_min, r.gflops);
    EXPECT_LE(r.gflops, r.gflops_max);
  }
  EXPECT_FALSE(RunCpuGemm(**blas, {CPU_SETSIZE - 1}, o).ok());
}

}  // namespace
}  // namespace laggard::confirm

namespace laggard::confirm {
namespace {

TEST(ConfirmSuspectTest, AHostNamedByHandIsPairedWithTheHostsFile) {
  auto in = SuspectInput("node-05",
                         "host,switch\nnode-04,leaf-01\nnode-05,leaf-01\n# a comment\n"
                         "node-00 leaf-00\nnode-01\n",
                         "hosts.csv", 8);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->hosts, (std::vector<std::string>{"node-00", "node-01", "node-04", "node-05"}));
  EXPECT_EQ(in->switch_of.at("node-00"), "leaf-00");
  EXPECT_EQ(in->switch_of.count("node-01"), 0u);
  ASSERT_EQ(in->culprits.size(), 1u);
  EXPECT_EQ(in->culprits[0].cause_class, "communication");
  ConfirmPlan plan = PlanConfirm(*in, {});
  ASSERT_EQ(plan.tests.size(), 4u);  // the triangle and its ports
  EXPECT_EQ(plan.tests[0].hosts, (std::vector<std::string>{"node-05", "node-04"}));
  EXPECT_EQ(plan.tests[1].hosts, (std::vector<std::string>{"node-05", "node-00"}));  // across

  auto gpu = SuspectInput("node-05:3", "node-04\nnode-05\n", "hosts.txt", 4);
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->culprits[0].gpu, 3);
  plan = PlanConfirm(*gpu, {});
  ASSERT_EQ(plan.tests.size(), 5u);  // its two checks, the control's, its GEMM, the control's
  EXPECT_EQ(plan.tests[2].hosts, std::vector<std::string>{"node-04"});  // the control
  EXPECT_EQ(plan.tests[3].hosts, std::vector<std::string>{"node-05"});
  EXPECT_EQ(plan.tests[4].hosts, std::vector<std::string>{"node-04"});
  EXPECT_EQ(plan.tests[4].node_gpus, 4);
}

TEST(ConfirmSuspectTest, WhatIsNotAHostIsAClearError) {
  EXPECT_FALSE(SuspectInput("-oProxyCommand=x", "", "h", 8).ok());
  EXPECT_FALSE(SuspectInput("node-01:x", "", "h", 8).ok());
  // An index no host has: refused, not a plan of 2^31 GPUs per host.
  EXPECT_FALSE(SuspectInput("node-01:2147483647", "node-02\n", "h", 8).ok());
  EXPECT_FALSE(SuspectInput("node-01:1024", "node-02\n", "h", 8).ok());
  EXPECT_TRUE(SuspectInput("node-01:1023", "node-02\n", "h", 8).ok());
  auto bad = SuspectInput("node-01", "node-02 leaf-1 extra\n", "hosts.txt", 8);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hosts.txt:1"), std::string::npos);
  EXPECT_FALSE(SuspectInput("node-01", "node-02\n$(reboot)\n", "hosts.txt", 8).ok());
}

}  // namespace
}  // namespace laggard::confirm
