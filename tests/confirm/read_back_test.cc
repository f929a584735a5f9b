// A plan's tests as each launcher runs them, and their outputs read back:
// nccl-tests tables into bus bandwidth, the pairs of a suspect host or
// switch into one answer, a CPU job's GEMM verdicts.

#include "confirm/read_back.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "confirm/bisect.h"
#include "confirm/launch.h"
#include "confirm/run.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard::confirm {
namespace {

PlannedTest Pair(std::string a, std::string b, PairRole role, size_t culprit = 0) {
  PlannedTest t;
  t.kind = TestKind::kCommunication;
  t.role = role;
  t.control = role == PairRole::kControl;
  t.culprit = culprit;
  t.hosts = {std::move(a), std::move(b)};
  t.procs = {8, 8};
  t.argv = {"all_reduce_perf", "-b", "8M", "-e", "1G", "-f", "2", "-g", "1"};
  t.time_limit_s = 300;
  return t;
}

PlannedTest Health(std::string host) {
  PlannedTest t;
  t.hosts = {std::move(host)};
  t.argv = {"nvidia-smi", "-q", "-d", "PERFORMANCE"};
  t.time_limit_s = 60;
  return t;
}

TEST(ConfirmLaunchTest, EachLauncherRunsAHostsTestAndAPairOnTheirHosts) {
  PlannedTest smi = Health("node-03");
  EXPECT_EQ(LaunchArgv(smi, Launcher::kPrint), smi.argv);
  EXPECT_EQ(LaunchArgv(smi, Launcher::kMpirun),
            (std::vector<std::string>{"mpirun", "-np", "1", "-H", "node-03:1", "nvidia-smi", "-q",
                                      "-d", "PERFORMANCE"}));
  EXPECT_EQ(LaunchArgv(smi, Launcher::kSrun),
            (std::vector<std::string>{"srun", "--nodes=1", "--ntasks=1", "--nodelist=node-03",
                                      "--time=1", "nvidia-smi", "-q", "-d", "PERFORMANCE"}));
  EXPECT_EQ(LaunchArgv(smi, Launcher::kSsh),
            (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "--",
                                      "node-03", "nvidia-smi -q -d PERFORMANCE"}));
  // The remote shell gets each word quoted unless it is plain.
  PlannedTest odd = smi;
  odd.argv = {"/opt/x`id`=/laggard", "gemm", "it's", "$HOME"};
  EXPECT_EQ(LaunchArgv(odd, Launcher::kSsh).back(),
            "'/opt/x`id`=/laggard' gemm 'it'\\''s' '$HOME'");

  PlannedTest pair = Pair("node-00", "node-01", PairRole::kSuspect);
  pair.procs = {8, 4};
  std::vector<std::string> mpi = LaunchArgv(pair, Launcher::kMpirun);
  ASSERT_GE(mpi.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(mpi.begin(), mpi.begin() + 6),
            (std::vector<std::string>{"mpirun", "-np", "12", "-H", "node-00:8,node-01:4",
                                      "all_reduce_perf"}));
  EXPECT_EQ(LaunchArgv(pair, Launcher::kPrint), mpi);
  EXPECT_EQ(LaunchArgv(pair, Launcher::kSsh), mpi);  // mpirun starts them over ssh
  std::vector<std::string> srun = LaunchArgv(pair, Launcher::kSrun);
  // Uneven counts: the smaller on both nodes, so none gets a task without a
  // GPU.
  EXPECT_EQ(
      std::vector<std::string>(srun.begin(), srun.begin() + 7),
      (std::vector<std::string>{"srun", "--nodes=2", "--ntasks-per-node=4", "--gpus-per-node=4",
                                "--nodelist=node-00,node-01", "--time=5", "all_reduce_perf"}));
  pair.procs = {8, 8};
  EXPECT_EQ(LaunchArgv(pair, Launcher::kSrun)[2], "--ntasks-per-node=8");

  PlannedTest here;  // a CPU GEMM that names no host runs here
  here.argv = {"laggard", "gemm"};
  EXPECT_EQ(LaunchArgv(here, Launcher::kSrun), here.argv);
  EXPECT_TRUE(Reaches(here, Launcher::kLocal, "vm"));
  EXPECT_FALSE(Reaches(smi, Launcher::kLocal, "vm"));
  EXPECT_TRUE(Reaches(Health("vm"), Launcher::kLocal, "vm"));
  EXPECT_TRUE(Reaches(Pair("localhost", "127.0.0.1", PairRole::kSuspect), Launcher::kLocal, "vm"));
  EXPECT_TRUE(Reaches(smi, Launcher::kSrun, "vm"));
  EXPECT_FALSE(Reaches(here, Launcher::kPrint, "vm"));
}

// An all_reduce_perf output as nccl-tests 2.x prints it, sizes 8M..32M,
// with the launcher's command line above it as confirm saves it.
std::string NcclTestsOutput(double busbw) {
  std::string s =
      "mpirun -np 16 -H a:8,b:8 all_reduce_perf -b 8M -e 32M -f 2 -g 1\n"
      "# nThread 1 nGpus 1 minBytes 8388608 maxBytes 33554432 step: 2(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid  4242 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid  4243 on     node-b device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "#\n"
      "#                                                              out-of-place              "
      "         in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)\n";
  int64_t size = 8388608;
  for (double f : {0.5, 0.8, 1.0}) {
    double bw = busbw * f, alg = bw / 1.875;
    double us = static_cast<double>(size) / (alg * 1e3);
    s += fmt::format(
        "  {:>10}  {:>12}     float     sum      -1  {:>7.1f}  {:>6.2f}  {:>6.2f}      0  {:>7.1f} "
        " "
        "{:>6.2f}  {:>6.2f}      0\n",
        size, size / 4, us, alg, bw, us, alg, bw);
    size *= 2;
  }
  s += "# Out of bounds values : 0 OK\n";
  s += fmt::format("# Avg bus bandwidth    : {:.4f}\n#\n", busbw * 0.77);
  return s;
}

class ReadBackTest : public ::testing::Test {
 protected:
  // A run of test i whose output is `text`, read back as confirm does.
  TestRun Ran(size_t i, const std::string& text) {
    std::string file = dir_.File(fmt::format("test-{}.txt", i + 1));
    std::ofstream(file) << text;
    TestRun r;
    r.ran = true;
    r.state = "ran";
    r.file = file;
    std::string why;
    r.busbw = BusBandwidthOf(file, why);
    r.figures = why;
    return r;
  }

  testing_util::TempDir dir_;
};

TEST_F(ReadBackTest, TheLargestSizesBusBandwidthIsTheFigure) {
  TestRun r = Ran(0, NcclTestsOutput(40));
  ASSERT_TRUE(r.LargestBusbw()) << r.figures;
  EXPECT_NEAR(*r.LargestBusbw(), 40, 0.01);
  ASSERT_EQ(r.busbw.size(), 3u);
  EXPECT_EQ(r.busbw[0].size_bytes, 8388608);
  TestRun none = Ran(1,
                     "mpirun ...\n--------------------------------------------------------\n"
                     "mpirun was unable to launch the specified application as it could not "
                     "access or execute an executable:\n");
  EXPECT_FALSE(none.LargestBusbw());
  EXPECT_NE(none.figures.find("no nccl-tests table"), std::string::npos) << none.figures;
}

ConfirmInput OneCulprit(const std::string& host) {
  ConfirmInput in;
  ReportCulprit c;
  c.host = host;
  c.cause_class = "communication";
  in.culprits.push_back(c);
  return in;
}

TEST_F(ReadBackTest, ASuspectSlowWithBothPartnersAndAFastControlIsTheNode) {
  ConfirmInput in = OneCulprit("node-00");
  ConfirmPlan plan;
  plan.tests = {Pair("node-00", "node-01", PairRole::kSuspect),
                Pair("node-00", "node-02", PairRole::kSuspect),
                Pair("node-01", "node-02", PairRole::kControl)};
  std::vector<TestRun> runs = {Ran(0, NcclTestsOutput(12)), Ran(1, NcclTestsOutput(13)),
                               Ran(2, NcclTestsOutput(40))};
  auto c = ReadBack(in, plan, runs);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].verdict, "confirmed") << c[0].figures;
  EXPECT_EQ(c[0].locus, "node");
  EXPECT_EQ(c[0].pairs.size(), 3u);
  EXPECT_NE(c[0].figures.find("node-01 12.0 GB/s (0.30x)"), std::string::npos) << c[0].figures;

  runs = {Ran(0, NcclTestsOutput(39)), Ran(1, NcclTestsOutput(41)), Ran(2, NcclTestsOutput(40))};
  c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].verdict, "refuted") << c[0].figures;

  // Slow with one partner only: the path between them, not the suspect.
  runs = {Ran(0, NcclTestsOutput(12)), Ran(1, NcclTestsOutput(40)), Ran(2, NcclTestsOutput(40))};
  c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].verdict, "inconclusive");
  EXPECT_EQ(c[0].locus, "path");

  // No control pair read: nothing to compare with.
  runs = {Ran(0, NcclTestsOutput(12)), Ran(1, NcclTestsOutput(13)), Ran(2, "no table\n")};
  c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].verdict, "inconclusive");
  EXPECT_NE(c[0].figures.find("no control pair"), std::string::npos) << c[0].figures;

  // Nothing ran (printed only).
  c = ReadBack(in, plan, std::vector<TestRun>(3));
  EXPECT_EQ(c[0].verdict, "not run");
}

// `ibstat` as it prints a CA of one port.
std::string IbstatCa(int index, const std::string& type, const std::string& state, int rate,
                     const std::string& layer) {
  return fmt::format(
      "CA 'mlx5_{}'\n\tCA type: {}\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
      "\tHardware version: 0\n\tNode GUID: 0x946dae0300cde7{:02x}\n\tSystem image GUID: "
      "0x946dae0300cde7{:02x}\n\tPort 1:\n\t\tState: {}\n\t\tPhysical state: {}\n\t\tRate: "
      "{}\n\t\tBase lid: {}\n\t\tLMC: 0\n\t\tSM lid: 334\n\t\tCapability mask: "
      "0xa751e848\n\t\tPort GUID: 0x946dae0300cde7{:02x}\n\t\tLink layer: {}\n",
      index, type, index, index, state, state == "Active" ? "LinkUp" : "Disabled", rate, 70 + index,
      index, layer);
}

// 4 InfiniBand rails (mlx5_0-3) beside a front-end Ethernet NIC of two
// ports, one unused (Down), as real hosts have them.
std::string Ibstat(const std::string& rail2_state, int rail2_rate) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    s += IbstatCa(i, "MT4129", i == 2 ? rail2_state : "Active", i == 2 ? rail2_rate : 400,
                  "InfiniBand");
  }
  s += IbstatCa(4, "MT4125", "Active", 100, "Ethernet");
  s += IbstatCa(5, "MT4125", "Down", 40, "Ethernet");
  return s;
}

TEST_F(ReadBackTest, TheSuspectsIbstatTellsItsNicFromTheNode) {
  EXPECT_TRUE(NicFaults({}).empty());
  ConfirmInput in = OneCulprit("node-00");
  ConfirmPlan plan;
  plan.tests = {Pair("node-00", "node-01", PairRole::kSuspect),
                Pair("node-00", "node-02", PairRole::kSuspect),
                Pair("node-01", "node-02", PairRole::kControl), Health("node-00")};
  plan.tests[3].argv = {"ibstat"};
  auto with_ibstat = [&](const std::string& ibstat, double suspect_gbps) {
    std::vector<TestRun> runs = {Ran(0, NcclTestsOutput(suspect_gbps)),
                                 Ran(1, NcclTestsOutput(suspect_gbps)), Ran(2, NcclTestsOutput(40)),
                                 Ran(3, "ibstat\n" + ibstat)};
    std::string why;
    runs[3].ports = IbstatPortsOf(runs[3].file, why);
    EXPECT_EQ(runs[3].ports.size(), 6u) << why;
    return ReadBack(in, plan, runs).at(0);
  };
  Confirmation degraded = with_ibstat(Ibstat("Active", 200), 20);
  EXPECT_EQ(degraded.verdict, "confirmed");
  EXPECT_EQ(degraded.locus, "nic");
  EXPECT_NE(degraded.figures.find("mlx5_2 port 1 at 200 Gb/s, its peers 400"), std::string::npos)
      << degraded.figures;
  Confirmation down = with_ibstat(Ibstat("Down", 400), 20);
  EXPECT_EQ(down.locus, "nic");
  EXPECT_NE(down.figures.find("mlx5_2 port 1 Down (its 3 peers Active)"), std::string::npos)
      << down.figures;
  // Rails alike; the front-end NIC's unused port is no fault: the node.
  Confirmation node = with_ibstat(Ibstat("Active", 400), 20);
  EXPECT_EQ(node.verdict, "confirmed");
  EXPECT_EQ(node.locus, "node");
  EXPECT_NE(node.figures.find("the node, not one NIC"), std::string::npos) << node.figures;
  // A degraded rail the pairs did not feel: refuted, the port still said.
  Confirmation felt_nothing = with_ibstat(Ibstat("Active", 200), 40);
  EXPECT_EQ(felt_nothing.verdict, "refuted");
  EXPECT_NE(felt_nothing.figures.find("its pairs did not show it"), std::string::npos);
}

TEST_F(ReadBackTest, AFailedOrCutPairIsNeverEvidence) {
  ConfirmInput in = OneCulprit("node-00");
  ConfirmPlan plan;
  plan.tests = {Pair("node-00", "node-01", PairRole::kSuspect),
                Pair("node-00", "node-02", PairRole::kSuspect),
                Pair("node-01", "node-02", PairRole::kControl)};
  // Both suspect pairs died after their first sizes (low figures there):
  // no confirmation from runs that did not end well.
  std::string cut = NcclTestsOutput(40);
  cut = cut.substr(0, cut.find("  16777216"));
  std::vector<TestRun> runs = {Ran(0, cut), Ran(1, cut), Ran(2, NcclTestsOutput(40))};
  runs[0].state = runs[1].state = "exited 1";
  auto c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].verdict, "inconclusive") << c[0].figures;
  EXPECT_NE(c[0].figures.find("exited 1"), std::string::npos) << c[0].figures;
  // One suspect pair fast and the other failed: not refuted.
  runs = {Ran(0, NcclTestsOutput(40)), Ran(1, cut), Ran(2, NcclTestsOutput(40))};
  runs[1].state = "exited 1";
  c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].verdict, "inconclusive") << c[0].figures;
  // A pair that ended well at a smaller largest size: all are compared at
  // the size every pair reached (8M here: 0.5 x 40 against 0.5 x 40).
  runs = {Ran(0, cut), Ran(1, NcclTestsOutput(40)), Ran(2, NcclTestsOutput(40))};
  c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].size_bytes, 8388608);
  EXPECT_EQ(c[0].verdict, "refuted") << c[0].figures;
}

TEST_F(ReadBackTest, PartnersBehindAnotherSwitchLeaveTheUplinkOpen) {
  ConfirmInput in = OneCulprit("node-00");
  in.switch_of = {{"node-00", "leaf-1"}, {"node-02", "leaf-2"}, {"node-03", "leaf-2"}};
  ConfirmPlan plan;
  plan.tests = {Pair("node-00", "node-02", PairRole::kSuspect),
                Pair("node-00", "node-03", PairRole::kSuspect),
                Pair("node-02", "node-03", PairRole::kControl), Health("node-00")};
  plan.tests[3].argv = {"ibstat"};
  std::vector<TestRun> runs = {Ran(0, NcclTestsOutput(12)), Ran(1, NcclTestsOutput(13)),
                               Ran(2, NcclTestsOutput(40))};
  auto c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].verdict, "inconclusive") << c[0].figures;
  EXPECT_EQ(c[0].locus, "node_or_uplink");
  EXPECT_NE(c[0].figures.find("uplink of its switch leaf-1"), std::string::npos) << c[0].figures;
}

TEST_F(ReadBackTest, SlowAcrossTheSwitchesAndFastInsideIsTheFabricNotTheSuspect) {
  // S = node-00 and H1 = node-01 under leaf-1, H2 = node-04 under leaf-2.
  ConfirmInput in = OneCulprit("node-00");
  in.switch_of = {{"node-00", "leaf-1"}, {"node-01", "leaf-1"}, {"node-04", "leaf-2"}};
  ConfirmPlan plan;
  plan.tests = {Pair("node-00", "node-01", PairRole::kSuspect),
                Pair("node-00", "node-04", PairRole::kSuspect),
                Pair("node-01", "node-04", PairRole::kControl)};
  auto c = ReadBack(
      in, plan,
      {Ran(0, NcclTestsOutput(40)), Ran(1, NcclTestsOutput(18)), Ran(2, NcclTestsOutput(17))});
  EXPECT_EQ(c[0].verdict, "refuted") << c[0].figures;
  EXPECT_EQ(c[0].locus, "fabric");
  EXPECT_NE(c[0].figures.find("between switches leaf-1 and leaf-2"), std::string::npos)
      << c[0].figures;
  // The same numbers with every host under one switch: H2 itself.
  in.switch_of["node-04"] = "leaf-1";
  c = ReadBack(
      in, plan,
      {Ran(0, NcclTestsOutput(40)), Ran(1, NcclTestsOutput(18)), Ran(2, NcclTestsOutput(17))});
  EXPECT_EQ(c[0].verdict, "refuted");
  EXPECT_EQ(c[0].locus, "other_host");
  // S slow with both, H1 inside its switch: the node, the uplink ruled out.
  c = ReadBack(
      in, plan,
      {Ran(0, NcclTestsOutput(15)), Ran(1, NcclTestsOutput(16)), Ran(2, NcclTestsOutput(40))});
  EXPECT_EQ(c[0].verdict, "confirmed");
  EXPECT_EQ(c[0].locus, "node");
}

TEST_F(ReadBackTest, ASwitchWithoutAPairInsideIsNeverConfirmed) {
  ConfirmInput in = OneCulprit("node-00");
  in.culprits[0].switch_name = "leaf-1";
  ConfirmPlan plan;
  plan.tests = {Pair("node-00", "node-02", PairRole::kAcross),
                Pair("node-02", "node-03", PairRole::kControl)};
  auto c = ReadBack(in, plan, {Ran(0, NcclTestsOutput(15)), Ran(1, NcclTestsOutput(42))});
  EXPECT_EQ(c[0].verdict, "inconclusive") << c[0].figures;
  EXPECT_EQ(c[0].locus, "node_or_uplink");
  c = ReadBack(in, plan, {Ran(0, NcclTestsOutput(41)), Ran(1, NcclTestsOutput(42))});
  EXPECT_EQ(c[0].verdict, "refuted") << c[0].figures;
  // Across and inside only: inside is the reference; "elsewhere" is never
  // said without a pair there.
  plan.tests[1] = Pair("node-00", "node-01", PairRole::kInside);
  c = ReadBack(in, plan, {Ran(0, NcclTestsOutput(15)), Ran(1, NcclTestsOutput(42))});
  EXPECT_EQ(c[0].verdict, "confirmed") << c[0].figures;
  EXPECT_EQ(c[0].figures.find("elsewhere"), std::string::npos) << c[0].figures;
}

// The corpus' real nccl-tests output (8xH200, NCCL 2.19.3, one 8 GiB size).
// Expected before the first run: 476.96 GB/s, its out-of-place busbw.
TEST(ReadBackCorpusTest, ARealNcclTestsOutputGivesItsBusBandwidth) {
  std::string file = std::string(LAGGARD_CORPUS_DIR) +
                     "/nccl_tests/all_reduce_perf_8xH200_single_8G_azure_nccl2.19.3.txt";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not found (the shared corpus)";
  std::string why;
  std::vector<SizeBandwidth> bw = BusBandwidthOf(file, why);
  ASSERT_EQ(bw.size(), 1u) << why;
  EXPECT_EQ(bw[0].size_bytes, 8589934592);
  EXPECT_DOUBLE_EQ(bw[0].gbps, 476.96);
}

TEST_F(ReadBackTest, ResultsOfTheWrongKindCutOrGarbledAreNotRun) {
  // A folder of what users leave beside their results: an alltoall run on
  // the pair, a table cut before its rows, a binary blob, an empty file.
  std::string alltoall = NcclTestsOutput(10);
  size_t at = alltoall.find("all_reduce_perf");
  alltoall.replace(at, 15, "alltoall_perf  ");
  std::ofstream(dir_.File("alltoall_perf_a_b.txt")) << alltoall;
  std::string cut = NcclTestsOutput(10);
  std::ofstream(dir_.File("cut.txt")) << cut.substr(0, cut.find("#       size"));
  std::ofstream(dir_.File("blob.bin")) << std::string("\x00\xff\x13garbage\n", 12);
  std::ofstream(dir_.File("empty.txt"));
  ConfirmPlan plan;
  plan.tests = {Pair("node-a", "node-b", PairRole::kSuspect)};
  // The cut all_reduce_perf run is the pair's result, with no figure: the
  // read-back names it and compares nothing.
  auto runs = ReadResults(plan, dir_.path());
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_TRUE((*runs)[0].ran);
  EXPECT_EQ(std::filesystem::path((*runs)[0].file).filename(), "cut.txt");
  EXPECT_TRUE((*runs)[0].busbw.empty());
  Confirmation c = ReadBack(OneCulprit("node-a"), plan, *runs).at(0);
  EXPECT_EQ(c.verdict, "inconclusive");
  EXPECT_NE(c.figures.find("no bus bandwidth"), std::string::npos) << c.figures;
  // Without it, the alltoall run is no all_reduce result: not run.
  std::filesystem::remove(dir_.File("cut.txt"));
  runs = ReadResults(plan, dir_.path());
  ASSERT_TRUE(runs.ok());
  EXPECT_FALSE((*runs)[0].ran);
  EXPECT_EQ((*runs)[0].state, "not run");
  EXPECT_FALSE(ReadResults(plan, dir_.File("missing")).ok());
}

// A real H100 host (gpud's test data): 8 InfiniBand rails Active at 400
// beside ConnectX-6 Dx Ethernet ports, three of them Down and unused.
// Expected before the first run: no NIC fault.
TEST(ReadBackCorpusTest, ARealHostsUnusedEthernetPortsAreNoNicFault) {
  std::string file =
      std::string(LAGGARD_CORPUS_DIR) + "/ib_eth/gpud_ibstat.47.0.h100.some.down.0.txt";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not found (the shared corpus)";
  std::string why;
  std::vector<PortReading> ports = IbstatPortsOf(file, why);
  EXPECT_EQ(ports.size(), 12u) << why;
  std::vector<std::string> faults = NicFaults(ports);
  EXPECT_TRUE(faults.empty()) << faults.front();
}

TEST_F(ReadBackTest, ASwitchSlowAcrossItsUplinkOnlyIsTheSwitch) {
  ConfirmInput in = OneCulprit("node-00");
  in.culprits[0].switch_name = "leaf-1";
  in.culprits[0].cause_class = "external";
  ConfirmPlan plan;
  plan.tests = {Pair("node-00", "node-02", PairRole::kAcross),
                Pair("node-00", "node-01", PairRole::kInside),
                Pair("node-02", "node-03", PairRole::kControl)};
  std::vector<TestRun> runs = {Ran(0, NcclTestsOutput(15)), Ran(1, NcclTestsOutput(44)),
                               Ran(2, NcclTestsOutput(42))};
  auto c = ReadBack(in, plan, runs);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].verdict, "confirmed") << c[0].figures;
  EXPECT_EQ(c[0].locus, "switch");

  runs[1] = Ran(1, NcclTestsOutput(14));  // slow inside too: a host under it
  c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].verdict, "inconclusive");
  EXPECT_EQ(c[0].locus, "node");

  runs = {Ran(0, NcclTestsOutput(41)), Ran(1, NcclTestsOutput(44)), Ran(2, NcclTestsOutput(42))};
  c = ReadBack(in, plan, runs);
  EXPECT_EQ(c[0].verdict, "refuted") << c[0].figures;
}

TEST_F(ReadBackTest, ACpuJobsGemmVerdictIsItsCulprits) {
  ConfirmInput in = OneCulprit("vm");
  in.culprits[0].cause_class = "compute_slow";
  PlannedTest gemm;
  gemm.kind = TestKind::kCompute;
  gemm.argv = {"laggard", "gemm", "--cores", "1,0"};
  ConfirmPlan plan;
  plan.tests = {gemm};
  TestRun r;
  r.ran = true;
  r.state = "ran";
  GemmResult core0, core1;
  core0.device = "cpu:0";
  core0.gflops = 100;
  core1.device = "cpu:1";
  core1.gflops = 52;
  r.gemm = {core0, core1};
  JudgeGemm(gemm, r);
  auto c = ReadBack(in, plan, {r});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].verdict, "confirmed");
  EXPECT_EQ(c[0].locus, "compute");
  EXPECT_NE(c[0].figures.find("0.52x"), std::string::npos) << c[0].figures;
}

}  // namespace
}  // namespace laggard::confirm

namespace laggard::confirm {
namespace {

// The network of `hosts` hosts, no host named: what a bisection starts from.
ConfirmInput JobNetwork(int hosts) {
  ConfirmInput in;
  for (int h = 0; h < hosts; ++h) in.hosts.push_back(fmt::format("node-{:02}", h));
  ReportCulprit c;
  c.cause_class = "communication";
  in.culprits.push_back(c);
  return in;
}

// Runs a bisection to its end over 12 hosts with host `bad` slow: each
// round's tests get the figure of the slowest member's link.
Confirmation BisectWith(int bad, size_t& runs_taken) {
  ConfirmInput in = JobNetwork(12);
  EXPECT_TRUE(Bisects(in.culprits[0]));
  ConfirmPlan plan;
  std::vector<TestRun> runs;
  std::string slow = bad >= 0 ? fmt::format("node-{:02}", bad) : "";
  for (int round = 0; round < 10; ++round) {
    BisectState st = BisectNext(in, plan, runs, 0, {});
    if (st.next.empty()) break;
    for (PlannedTest& t : st.next) {
      TestRun r;
      r.ran = true;
      r.state = "ran";
      bool has = std::find(t.hosts.begin(), t.hosts.end(), slow) != t.hosts.end();
      r.busbw = {{1 << 30, has ? 90.0 : 180.0}};
      plan.tests.push_back(std::move(t));
      runs.push_back(r);
    }
  }
  BisectState last = BisectNext(in, plan, runs, 0, {});
  EXPECT_TRUE(last.done);
  runs_taken = last.runs;
  return last.answer;
}

TEST(BisectTest, TheSlowHostIsFoundWithinTwoLogNRuns) {
  EXPECT_EQ(BisectBound(16), 8u);
  EXPECT_EQ(BisectBound(12), 8u);
  EXPECT_EQ(BisectBound(7), 6u);
  for (int bad = 0; bad < 12; ++bad) {
    size_t runs = 0;
    Confirmation c = BisectWith(bad, runs);
    EXPECT_EQ(c.verdict, "confirmed") << bad << ": " << c.figures;
    EXPECT_EQ(c.host, fmt::format("node-{:02}", bad)) << c.figures;
    EXPECT_LE(runs, BisectBound(12)) << bad;
  }
  size_t runs = 0;
  Confirmation none = BisectWith(-1, runs);
  EXPECT_EQ(none.verdict, "refuted") << none.figures;
  EXPECT_EQ(runs, 3u);  // the halves alike, then all together: no slow node
}

TEST(BisectTest, ARoundNotRunYetIsWhatToRunNext) {
  ConfirmInput in = JobNetwork(8);
  ConfirmPlan plan = PlanConfirm(in, {});
  ASSERT_EQ(plan.tests.size(), 2u);
  EXPECT_EQ(plan.tests[0].role, PairRole::kHalf);
  EXPECT_EQ(plan.tests[0].hosts.size(), 4u);
  // Printed, not run: the answer waits for them, and nothing more is planned.
  BisectState st = BisectNext(in, plan, std::vector<TestRun>(2), 0, {});
  EXPECT_TRUE(st.next.empty());
  EXPECT_FALSE(st.done);
  EXPECT_EQ(st.answer.verdict, "not run");
}

}  // namespace
}  // namespace laggard::confirm
