// Rule tests of the hardware and network detectors and of how the verdict
// combines them with step times: generated runs (2 hosts x 4 GPUs, one rank
// per GPU) with one cause injected at a time, two causes on two GPUs, and
// the negative controls the issues ask for (a hot GPU on a healthy rank, an
// idle GPU with a low PCIe generation, a healthy cluster).

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include <fmt/format.h>

#include "verdict/verdict.h"

namespace laggard {
namespace {

constexpr int kHosts = 2;
constexpr int kGpus = 4;
constexpr TimeNs kStart = 1'700'000'000'000'000'000;
constexpr int kSteps = 60;

struct Cluster {
  // Per rank: step time factor (1 = healthy) from step `slow_from` on.
  std::vector<double> slow = std::vector<double>(kHosts * kGpus, 1.0);
  int slow_from = 20;
  // Per GPU sample values over time.
  std::function<void(int rank, int t, GpuSample&)> shape = [](int, int, GpuSample&) {};
  std::function<void(int rank, GpuFacts&)> facts = [](int, GpuFacts&) {};
  bool gpu_data = true;
  bool synchronised = false;  // end-to-end step times: equal on every rank
  std::function<void(NetworkData&)> network = [](NetworkData&) {};
};

std::string Host(int h) { return fmt::format("node-{:02d}", h); }

laggard::Run Build(const Cluster& c) {
  RunBuilder b;
  for (int r = 0; r < kHosts * kGpus; ++r) {
    b.SetHost(r, Host(r / kGpus), "", 0);
    b.SetLocalGpu(r, r % kGpus, "", 0);
    TimeNs t = kStart;
    for (int s = 0; s < kSteps; ++s) {
      double factor = s >= c.slow_from ? c.slow[static_cast<size_t>(r)] : 1.0;
      // Deterministic +-0.5% noise.
      int seed = c.synchronised ? s * 17 : r * 31 + s * 17;
      double noise = 1 + 0.005 * ((seed % 11) - 5) / 5.0;
      DurationNs d = static_cast<DurationNs>(1e9 * factor * noise);
      b.AddStep(r, s, d, t, SourceRef{0, static_cast<uint32_t>(s + 1)});
      t += 1'000'000'000;
    }
    if (!c.gpu_data) continue;
    GpuRecord g;
    g.host = Host(r / kGpus);
    g.index = r % kGpus;
    g.facts.name = "NVIDIA H100 80GB HBM3";
    g.facts.max_sm_clock_mhz = 1980;
    g.facts.default_power_limit_w = 700;
    g.facts.enforced_power_limit_w = 700;
    g.facts.slowdown_temp_c = 92;
    g.facts.pcie_gen_max = 5;
    g.facts.pcie_gen_current = 5;
    g.facts.pcie_width_max = 16;
    g.facts.pcie_width_current = 16;
    c.facts(r, g.facts);
    g.files = {1};
    for (int t2 = 0; t2 < kSteps; ++t2) {
      GpuSample x;
      x.time_ns = kStart + int64_t{t2} * 1'000'000'000;
      x.temp_c = 70 + (r % 3);
      x.sm_clock_mhz = 1950 + 5 * (r % 3);
      x.power_w = 560 + 10 * (r % 3);
      x.util_pct = 95;
      x.clock_events = 0;
      x.src = SourceRef{1, static_cast<uint32_t>(t2 + 2)};
      c.shape(r, t2, x);
      g.samples.push_back(x);
    }
    b.AddGpu(std::move(g));
  }
  c.network(b.network());
  laggard::Run run;
  run.files = {InputFileInfo{"steps.csv", "csv", 0, 0, true},
               InputFileInfo{"node/nvidia-smi-dmon.txt", "nvidia-smi-dmon", 0, 0, true}};
  b.Finalize(run);
  return run;
}

struct Result {
  laggard::Run run;
  Analyses a;
  Verdict v;
};

Result Diagnose(const Cluster& c) {
  Result r;
  r.run = Build(c);
  r.a = AnalyzeRun(r.run, AnalysisOptions());
  r.v = DecideVerdict(r.run, r.a);
  return r;
}

std::vector<const Finding*> Codes(const Result& r, FindingCode code) {
  std::vector<const Finding*> out;
  for (const auto* list : {&r.a.hardware.findings, &r.a.network.findings}) {
    for (const Finding& f : *list) {
      if (f.code == code) out.push_back(&f);
    }
  }
  return out;
}

size_t EvidenceFindings(const Result& r) {
  return r.a.hardware.findings.size() + r.a.network.findings.size();
}

TEST(HardwareDetectorTest, HealthyClusterHasNoFindingAndNoCulprit) {
  Result r = Diagnose(Cluster());
  EXPECT_EQ(EvidenceFindings(r), 0u);
  EXPECT_EQ(r.v.status, VerdictStatus::kNoStraggler) << r.v.summary;
}

TEST(HardwareDetectorTest, ThermalThrottlingOnTheSlowRankIsTheCause) {
  Cluster c;
  c.slow[5] = 1.2;
  c.shape = [](int r, int t, GpuSample& x) {
    if (r == 5 && t >= 18) {
      x.temp_c = 93;
      x.sm_clock_mhz = 1500;
      x.clock_events = clock_event::kHwThermalSlowdown;
    }
  };
  Result r = Diagnose(c);
  auto thermal = Codes(r, FindingCode::kGpuThermal);
  ASSERT_EQ(thermal.size(), 1u);
  EXPECT_EQ(thermal[0]->entity.rank, 5);
  EXPECT_EQ(thermal[0]->overlaps_slow_steps, true);
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler);
  const Culprit& top = r.v.culprits.front();
  EXPECT_EQ(top.entity.rank, 5);
  EXPECT_EQ(top.cause_class, CauseClass::kComputeSlow);
  EXPECT_EQ(top.cause, "thermal");
  EXPECT_GE(top.confidence, 0.8) << "step times + GPU metrics agree";
  EXPECT_NE(r.v.summary.find("thermal"), std::string::npos) << r.v.summary;
  EXPECT_NE(r.v.next_steps.front().find("cooling"), std::string::npos);
}

TEST(HardwareDetectorTest, HotGpuOnAHealthyRankIsAWarningNotTheCulprit) {
  Cluster c;
  c.slow[2] = 1.2;  // rank 2 is slow for another reason
  c.shape = [](int r, int, GpuSample& x) {
    if (r == 6) {
      x.temp_c = 94;
      x.sm_clock_mhz = 1600;
    }
  };
  Result r = Diagnose(c);
  auto thermal = Codes(r, FindingCode::kGpuThermal);
  ASSERT_EQ(thermal.size(), 1u);
  EXPECT_EQ(thermal[0]->severity, Severity::kWarning);
  EXPECT_NE(thermal[0]->message.find("not blamed"), std::string::npos);
  ASSERT_FALSE(r.v.culprits.empty());
  EXPECT_EQ(r.v.culprits.front().entity.rank, 2);
  EXPECT_NE(r.v.culprits.front().cause, "thermal");
  for (const Culprit& cu : r.v.culprits) EXPECT_NE(cu.entity.rank, 6);
}

TEST(HardwareDetectorTest, ThrottlingThatBeganInTheLastSamplesIsAThermalWarning) {
  // GPU 6 throttles for heat in its last 4 of 60 loaded samples (7%: below
  // the share rule), clock 1900 vs ~1955; then the job ends and the GPUs
  // idle for 3 samples, as nvidia-smi keeps logging.
  Cluster c;
  c.synchronised = true;
  c.shape = [](int r, int t, GpuSample& x) {
    if (t >= kSteps - 3) {
      x.util_pct = 0;
      x.sm_clock_mhz = 345;
      x.clock_events = 0;
      return;
    }
    if (r == 6 && t >= kSteps - 7) {
      x.temp_c = 88;
      x.sm_clock_mhz = 1900;
      x.clock_events = clock_event::kSwThermalSlowdown;
    }
  };
  Result r = Diagnose(c);
  auto thermal = Codes(r, FindingCode::kGpuThermal);
  ASSERT_EQ(thermal.size(), 1u);
  EXPECT_EQ(thermal[0]->entity.rank, 6);
  EXPECT_EQ(thermal[0]->pattern, Pattern::kOnsetAtEnd);
  EXPECT_EQ(thermal[0]->severity, Severity::kWarning);
  EXPECT_NE(thermal[0]->message.find("last 4 samples"), std::string::npos) << thermal[0]->message;
  // A single throttled sample at the end, or a clock within 2%: nothing.
  c.shape = [](int rank, int t, GpuSample& x) {
    if (rank == 6 && t >= kSteps - 4) {
      x.sm_clock_mhz = 1930;
      x.clock_events = clock_event::kSwThermalSlowdown;
    }
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kGpuThermal).empty());
  c.shape = [](int rank, int t, GpuSample& x) {
    if (rank == 6 && t == kSteps - 1) {
      x.sm_clock_mhz = 1800;
      x.clock_events = clock_event::kSwThermalSlowdown;
    }
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kGpuThermal).empty());
}

TEST(HardwareDetectorTest, LoweredPowerLimitIsAPowerCap) {
  Cluster c;
  c.slow[1] = 1.15;
  c.facts = [](int r, GpuFacts& f) {
    if (r == 1) f.enforced_power_limit_w = 450;
  };
  c.shape = [](int r, int, GpuSample& x) {
    if (r == 1) {
      x.power_w = 448;
      x.sm_clock_mhz = 1600;
      x.clock_events = clock_event::kSwPowerCap;
    }
  };
  Result r = Diagnose(c);
  auto power = Codes(r, FindingCode::kGpuPowerCap);
  ASSERT_EQ(power.size(), 1u);
  EXPECT_NE(power[0]->message.find("450 W"), std::string::npos) << power[0]->message;
  EXPECT_EQ(r.v.culprits.front().cause, "power_cap");
  EXPECT_NE(r.v.next_steps.front().find("-pl 700"), std::string::npos) << r.v.next_steps.front();
}

TEST(HardwareDetectorTest, LowClocksWithoutReasonAreClocks) {
  Cluster c;
  c.slow[7] = 1.12;
  c.shape = [](int r, int, GpuSample& x) {
    if (r == 7) x.sm_clock_mhz = 1700;
  };
  Result r = Diagnose(c);
  ASSERT_EQ(Codes(r, FindingCode::kGpuClocksLow).size(), 1u);
  EXPECT_TRUE(Codes(r, FindingCode::kGpuThermal).empty());
  EXPECT_EQ(r.v.culprits.front().cause, "clocks");
}

TEST(HardwareDetectorTest, NarrowPcieLinkIsADowngrade) {
  Cluster c;
  c.slow[3] = 1.1;
  c.facts = [](int r, GpuFacts& f) {
    if (r == 3) f.pcie_width_current = 8;
  };
  Result r = Diagnose(c);
  auto pcie = Codes(r, FindingCode::kGpuPcieDowngrade);
  ASSERT_EQ(pcie.size(), 1u);
  EXPECT_NE(pcie[0]->message.find("x8 of x16"), std::string::npos);
  EXPECT_EQ(r.v.culprits.front().cause, "pcie_downgrade");
}

TEST(HardwareDetectorTest, IdleGpuWithLowPcieGenerationIsNotADowngrade) {
  Cluster c;
  c.facts = [](int r, GpuFacts& f) {
    if (r == 4) f.pcie_gen_current = 1;  // power saving at idle
  };
  c.shape = [](int r, int, GpuSample& x) {
    if (r == 4) x.util_pct = 0;
  };
  Result r = Diagnose(c);
  EXPECT_TRUE(Codes(r, FindingCode::kGpuPcieDowngrade).empty());
}

TEST(HardwareDetectorTest, TwoCausesOnTwoGpusAreBothNamed) {
  Cluster c;
  c.slow[1] = 1.2;
  c.slow[6] = 1.15;
  c.shape = [](int r, int, GpuSample& x) {
    if (r == 1) {
      x.temp_c = 95;
      x.sm_clock_mhz = 1450;
    }
  };
  c.facts = [](int r, GpuFacts& f) {
    if (r == 6) f.enforced_power_limit_w = 400;
  };
  Result r = Diagnose(c);
  ASSERT_GE(r.v.culprits.size(), 2u);
  std::map<int32_t, std::string> cause;
  for (const Culprit& cu : r.v.culprits) {
    if (cu.entity.rank) cause[*cu.entity.rank] = cu.cause.value_or("");
  }
  EXPECT_EQ(cause[1], "thermal");
  EXPECT_EQ(cause[6], "power_cap");
}

TEST(HardwareDetectorTest, AnomalyOutsideTheSlowStepsLowersConfidence) {
  Cluster c;
  c.slow[5] = 1.2;
  c.slow_from = 40;
  c.shape = [](int r, int t, GpuSample& x) {
    if (r == 5 && t < 10) {  // hot early on, long before the slowdown
      x.temp_c = 93;
      x.sm_clock_mhz = 1500;
      x.clock_events = clock_event::kHwThermalSlowdown;
    }
  };
  Result r = Diagnose(c);
  auto thermal = Codes(r, FindingCode::kGpuThermal);
  ASSERT_EQ(thermal.size(), 1u);
  EXPECT_EQ(thermal[0]->overlaps_slow_steps, false);
  ASSERT_FALSE(r.v.culprits.empty());
  EXPECT_EQ(r.v.culprits.front().entity.rank, 5);
  EXPECT_LE(r.v.culprits.front().confidence, 0.5);
}

TEST(HardwareDetectorTest, LowUtilisationOfVictimsIsNotEvidence) {
  Cluster c;
  c.slow[5] = 1.2;
  c.shape = [](int r, int, GpuSample& x) {
    if (r != 5) x.util_pct = 40;  // victims wait
  };
  Result r = Diagnose(c);
  ASSERT_EQ(Codes(r, FindingCode::kGpuIdleWaiting).size(), 1u);
  EXPECT_EQ(r.v.culprits.front().entity.rank, 5);
}

// Network.

void HealthyPorts(NetworkData& n, int hosts) {
  for (int h = 0; h < hosts; ++h) {
    for (int p = 0; p < 4; ++p) {
      IbPort port;
      port.host = Host(h);
      port.ca = fmt::format("mlx5_{}", p);
      port.state = "Active";
      port.phys_state = "LinkUp";
      port.rate_gbps = 400;
      port.width = 4;
      port.link_layer = "InfiniBand";
      port.ca_type = "MT4129";
      n.ib_ports.push_back(port);
    }
  }
}

TEST(NetworkDetectorTest, HealthyNetworkHasNoFinding) {
  Cluster c;
  c.network = [](NetworkData& n) { HealthyPorts(n, kHosts); };
  Result r = Diagnose(c);
  EXPECT_TRUE(r.a.network.findings.empty());
}

TEST(NetworkDetectorTest, OneDegradedPortAmongEightIsNamedWithItsRanks) {
  Cluster c;
  c.network = [](NetworkData& n) {
    HealthyPorts(n, kHosts);
    n.ib_ports[6].rate_gbps = 200;  // node-01 mlx5_2
  };
  Result r = Diagnose(c);
  auto degraded = Codes(r, FindingCode::kNetLinkDegraded);
  ASSERT_EQ(degraded.size(), 1u);
  EXPECT_EQ(degraded[0]->entity.host, "node-01");
  EXPECT_EQ(degraded[0]->entity.nic, "mlx5_2 port 1");
  EXPECT_EQ(degraded[0]->ranks, (std::vector<int32_t>{4, 5, 6, 7}));
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler);
  EXPECT_EQ(r.v.culprits.front().cause_class, CauseClass::kCommunication);
  EXPECT_EQ(r.v.culprits.front().entity.host, "node-01");
}

TEST(NetworkDetectorTest, DownPortIsPortDown) {
  Cluster c;
  c.network = [](NetworkData& n) {
    HealthyPorts(n, kHosts);
    n.ib_ports[1].state = "Down";
    n.ib_ports[1].phys_state = "Polling";
  };
  Result r = Diagnose(c);
  auto down = Codes(r, FindingCode::kNetPortDown);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0]->entity.host, "node-00");
  EXPECT_GE(down[0]->confidence, 0.8);
}

NcclTestRun PairRun(const std::string& a, const std::string& b, double busbw) {
  NcclTestRun run;
  run.collective = "all_reduce";
  for (int i = 0; i < 16; ++i) {
    NcclTestRank k;
    k.rank = i;
    k.host = i < 8 ? a : b;
    run.ranks.push_back(k);
  }
  for (int64_t size : {int64_t{1} << 28, int64_t{1} << 30, int64_t{1} << 32}) {
    NcclTestRow row;
    row.size_bytes = size;
    row.oop_busbw_gbps = busbw;
    row.oop_wrong = 0;
    run.rows.push_back(row);
  }
  return run;
}

TEST(NetworkDetectorTest, HostAtHalfBandwidthInEveryPairIsNamed) {
  Cluster c;
  c.network = [](NetworkData& n) {
    // 4 hosts in a ring of pair tests; node-02 is in the two slow ones.
    n.nccl_tests.push_back(PairRun("node-00", "node-01", 180));
    n.nccl_tests.push_back(PairRun("node-01", "node-02", 90));
    n.nccl_tests.push_back(PairRun("node-02", "node-03", 92));
    n.nccl_tests.push_back(PairRun("node-03", "node-00", 181));
  };
  Result r = Diagnose(c);
  auto low = Codes(r, FindingCode::kNetBandwidthLow);
  ASSERT_EQ(low.size(), 1u);
  EXPECT_EQ(low[0]->entity.host, "node-02");
  EXPECT_NE(low[0]->next_steps.back().find("all_reduce_perf"), std::string::npos);
}

TEST(NetworkDetectorTest, SocketFallbackOnOneHost) {
  Cluster c;
  c.network = [](NetworkData& n) {
    for (int h = 0; h < 4; ++h) {
      NcclRankInfo r;
      r.host = Host(h);
      r.net = h == 3 ? "Socket" : "IB";
      r.gdr = h != 3;
      n.nccl_ranks.push_back(r);
    }
  };
  Result r = Diagnose(c);
  auto fallback = Codes(r, FindingCode::kNetSocketFallback);
  ASSERT_EQ(fallback.size(), 1u);
  EXPECT_EQ(fallback[0]->entity.host, "node-03");
}

TopologyMatrix Topo(const std::string& host,
                    const std::vector<std::vector<std::string>>& gpu_to_nic) {
  // 4 GPUs x 2 NICs; GPU-GPU links NV18.
  TopologyMatrix t;
  t.host = host;
  t.devices = {"GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1"};
  t.link.assign(6, std::vector<std::string>(6, "NV18"));
  for (size_t i = 0; i < 6; ++i) t.link[i][i] = "X";
  for (size_t g = 0; g < 4; ++g) {
    for (size_t n = 0; n < 2; ++n) t.link[g][4 + n] = t.link[4 + n][g] = gpu_to_nic[g][n];
  }
  t.link[4][5] = t.link[5][4] = "SYS";
  return t;
}

TEST(NetworkDetectorTest, ThreeGpusBehindOneOfTwoNicsShareIt) {
  Cluster c;
  c.network = [](NetworkData& n) {
    n.topologies.push_back(
        Topo("node-00", {{"PIX", "SYS"}, {"PIX", "SYS"}, {"PXB", "SYS"}, {"SYS", "PIX"}}));
    n.topologies.push_back(
        Topo("node-01", {{"PIX", "SYS"}, {"PIX", "SYS"}, {"SYS", "PIX"}, {"SYS", "PIX"}}));
  };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetNicShared);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.host, "node-00");
  EXPECT_EQ(shared[0]->entity.nic, "NIC0");
  EXPECT_NE(shared[0]->message.find("3 GPUs (GPU0, GPU1, GPU2)"), std::string::npos)
      << shared[0]->message;
}

TEST(NetworkDetectorTest, SlowHostsOnOneSwitchPointOutsideTheJob) {
  Cluster c;
  c.slow[1] = 1.2;
  c.slow[5] = 1.2;
  c.network = [](NetworkData& n) {
    n.switch_of = {{"node-00", "leaf-1"}, {"node-01", "leaf-1"}, {"node-02", "leaf-2"}};
  };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1");
}

// node-00 has a port down and node-01 talks NCCL over sockets: both slow,
// both on leaf-1, each with a fault of its own. Two faults, not the switch.
TEST(NetworkDetectorTest, SlowHostsOfOneSwitchWithFaultsOfTheirOwnAreNotTheSwitch) {
  Cluster c;
  c.network = [](NetworkData& n) {
    HealthyPorts(n, 4);
    n.ib_ports[1].state = "Down";
    n.ib_ports[1].phys_state = "Polling";
    for (int h = 0; h < 4; ++h) {
      NcclRankInfo r;
      r.host = Host(h);
      r.net = h == 1 ? "Socket" : "IB";
      r.gdr = h != 1;
      n.nccl_ranks.push_back(r);
    }
    n.switch_of = {
        {"node-00", "leaf-1"}, {"node-01", "leaf-1"}, {"node-02", "leaf-2"}, {"node-03", "leaf-2"}};
  };
  Result r = Diagnose(c);
  EXPECT_TRUE(Codes(r, FindingCode::kNetSharedSwitch).empty());
  ASSERT_EQ(Codes(r, FindingCode::kNetPortDown).size(), 1u);
  ASSERT_EQ(Codes(r, FindingCode::kNetSocketFallback).size(), 1u);
  for (const Culprit& k : r.v.culprits) EXPECT_NE(k.cause, "shared_switch") << r.v.summary;
}

TEST(VerdictEvidenceTest, SynchronisedStepsAndADownNvlinkNameTheGpuWithLowConfidence) {
  Cluster c;
  c.synchronised = true;
  c.facts = [](int r, GpuFacts& f) {
    f.nvlink_total = 18;
    f.nvlink_up = r == 6 ? 12 : 18;
  };
  Result r = Diagnose(c);
  ASSERT_TRUE(r.a.steps.job.synchronised);
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
  const Culprit& top = r.v.culprits.front();
  EXPECT_EQ(top.entity.host, "node-01");
  EXPECT_EQ(top.entity.gpu, 2);
  EXPECT_EQ(top.cause_class, CauseClass::kCommunication);
  EXPECT_EQ(top.cause, "nvlink_down");
  EXPECT_LE(top.confidence, 0.5);
}

// Six hosts on three switches in a ring of pair tests; the two hosts of
// leaf-1 are slow in every run they are in (0.83x), the others have a fast
// run each.
void SwitchRing(NetworkData& n, double slow_busbw) {
  n.switch_of = {{"node-00", "leaf-1"}, {"node-01", "leaf-1"}, {"node-02", "leaf-2"},
                 {"node-03", "leaf-2"}, {"node-04", "leaf-3"}, {"node-05", "leaf-3"}};
  n.nccl_tests.push_back(PairRun("node-00", "node-01", slow_busbw));
  n.nccl_tests.push_back(PairRun("node-01", "node-02", slow_busbw));
  n.nccl_tests.push_back(PairRun("node-02", "node-03", 180));
  n.nccl_tests.push_back(PairRun("node-03", "node-04", 181));
  n.nccl_tests.push_back(PairRun("node-04", "node-05", 179));
  n.nccl_tests.push_back(PairRun("node-05", "node-00", slow_busbw));
}

TEST(NetworkDetectorTest, HostsOfOneSwitchSlowTogetherPointOutsideTheJob) {
  Cluster c;
  c.synchronised = true;
  c.network = [](NetworkData& n) { SwitchRing(n, 150); };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1");
  EXPECT_EQ(shared[0]->pattern, Pattern::kSwitchGroup);
  EXPECT_TRUE(Codes(r, FindingCode::kNetBandwidthLow).empty())
      << "0.83x is above the 0.7x of one slow host";
  // Synchronised step times: the switch's hosts are the culprit, outside the job.
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
  const Culprit& top = r.v.culprits.front();
  EXPECT_EQ(top.cause_class, CauseClass::kExternal);
  EXPECT_EQ(top.cause, "shared_switch");
  EXPECT_EQ(top.entity.switch_name, "leaf-1");
  EXPECT_LE(top.confidence, 0.7);
  EXPECT_NE(r.v.summary.find("the hosts of switch leaf-1"), std::string::npos) << r.v.summary;
}

TEST(NetworkDetectorTest, HostsOfOneSwitchWithinRunToRunNoiseAreNotASwitchGroup) {
  Cluster c;
  c.synchronised = true;
  c.network = [](NetworkData& n) { SwitchRing(n, 176); };  // 2% below the others
  Result r = Diagnose(c);
  EXPECT_TRUE(Codes(r, FindingCode::kNetSharedSwitch).empty());
  EXPECT_NE(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
}

// perfquery counters of six hosts on three switches (two ports each, 1 TB
// sent per port): PortXmitWait = `wait_per_byte` of the host x the bytes,
// with a deterministic +-6% spread between hosts and ports.
void SwitchCounters(NetworkData& n, const std::map<std::string, double>& wait_per_byte) {
  n.switch_of = {{"node-00", "leaf-1"}, {"node-01", "leaf-1"}, {"node-02", "leaf-2"},
                 {"node-03", "leaf-2"}, {"node-04", "leaf-3"}, {"node-05", "leaf-3"}};
  int i = 0;
  for (const auto& [host, w] : wait_per_byte) {
    for (int port = 0; port < 2; ++port, ++i) {
      IbPortCounters c;
      c.host = host;
      c.lid = 10 + i;
      c.extended = true;
      c.xmit_data_bytes = 1'000'000'000'000;
      double spread = 1 + 0.06 * ((i * 7 % 5) - 2) / 2.0;
      c.xmit_wait_ticks = static_cast<int64_t>(w * spread * 1e12);
      c.src = SourceRef{2, static_cast<uint32_t>(1 + 26 * port)};
      n.port_counters.push_back(c);
    }
  }
}

std::map<std::string, double> Waits(double leaf1, double others = 0.04) {
  return {{"node-00", leaf1},         {"node-01", leaf1 * 1.1},   {"node-02", others},
          {"node-03", others * 1.05}, {"node-04", others * 0.95}, {"node-05", others}};
}

TEST(NetworkDetectorTest, PortCountersOfOneCongestedSwitchNameItOnTheirOwn) {
  Cluster c;  // step times unremarkable: the congestion slowed every rank alike
  c.network = [](NetworkData& n) { SwitchCounters(n, Waits(0.16)); };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1");
  EXPECT_EQ(shared[0]->pattern, Pattern::kPortCounters);
  EXPECT_EQ(shared[0]->ranks, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_NE(shared[0]->message.find("node-00, node-01"), std::string::npos) << shared[0]->message;
  ASSERT_EQ(shared[0]->evidence.size(), 1u);
  ASSERT_TRUE(shared[0]->evidence[0].source.has_value());
  EXPECT_EQ(shared[0]->evidence[0].source->file, 2u);
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
  const Culprit& top = r.v.culprits.front();
  EXPECT_EQ(top.cause_class, CauseClass::kExternal);
  EXPECT_EQ(top.cause, "shared_switch");
  EXPECT_EQ(top.entity.switch_name, "leaf-1");
  EXPECT_EQ(top.entity.host, "node-00");
  EXPECT_GE(top.confidence, 0.6);
  EXPECT_LE(top.confidence, 0.7);
}

TEST(NetworkDetectorTest, PortCountersWithinHostToHostNoiseNameNoSwitch) {
  Cluster c;
  c.network = [](NetworkData& n) { SwitchCounters(n, Waits(0.046)); };  // 15% above: noise
  Result r = Diagnose(c);
  EXPECT_TRUE(Codes(r, FindingCode::kNetSharedSwitch).empty());
  EXPECT_NE(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
}

TEST(NetworkDetectorTest, OneHostWaitingMuchLongerIsNoSwitchPattern) {
  Cluster c;
  c.network = [](NetworkData& n) {
    auto w = Waits(0.04);
    w["node-03"] = 0.3;  // its switch neighbour node-02 is normal
    SwitchCounters(n, w);
  };
  Result r = Diagnose(c);
  EXPECT_TRUE(Codes(r, FindingCode::kNetSharedSwitch).empty());
}

TEST(NetworkDetectorTest, AHostAloneOnItsSwitchWaitingMuchLongerNamesItsSwitchWithLowConfidence) {
  Cluster c;
  c.network = [](NetworkData& n) {
    auto w = Waits(0.04);
    w["node-03"] = 0.3;
    SwitchCounters(n, w);
    n.switch_of["node-03"] = "leaf-4";  // alone on its switch
  };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-4");
  EXPECT_EQ(shared[0]->entity.host, "node-03");
  EXPECT_EQ(shared[0]->confidence, 0.5);
  EXPECT_EQ(shared[0]->message.rfind("the only host of the job on switch leaf-4 (node-03)", 0), 0u)
      << shared[0]->message;
}

// A healthy host alone on its switch waits 1.6x its peers' median (hosts
// differ by that much in cabling and firmware): with three tight peers its z
// is high, but one host is one sample, not a switch.
TEST(NetworkDetectorTest, AHostAloneOnItsSwitchWaiting60PercentLongerNamesNoSwitch) {
  Cluster c;
  c.network = [](NetworkData& n) {
    auto w = Waits(0.04);
    w["node-03"] = 0.064;
    SwitchCounters(n, w);
    n.switch_of["node-03"] = "leaf-4";  // alone on its switch
  };
  Result r = Diagnose(c);
  EXPECT_TRUE(Codes(r, FindingCode::kNetSharedSwitch).empty());
  EXPECT_NE(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
}

// A job of five hosts: four on leaf-1, one on leaf-2. One host elsewhere
// gives no spread for a z; the four all waiting over twice as long name it.
TEST(NetworkDetectorTest, FourHostsWaitingFarLongerThanTheOneHostElsewhereNameTheirSwitch) {
  Cluster c;
  c.network = [](NetworkData& n) {
    SwitchCounters(n, {{"node-00", 0.16},
                       {"node-01", 0.17},
                       {"node-02", 0.15},
                       {"node-03", 0.16},
                       {"node-04", 0.04}});
    n.switch_of = {{"node-00", "leaf-1"},
                   {"node-01", "leaf-1"},
                   {"node-02", "leaf-1"},
                   {"node-03", "leaf-1"},
                   {"node-04", "leaf-2"}};
  };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1");
  EXPECT_EQ(shared[0]->confidence, 0.55);
  EXPECT_NE(shared[0]->message.find("too few hosts elsewhere for a spread"), std::string::npos)
      << shared[0]->message;
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
  EXPECT_EQ(r.v.culprits.front().entity.switch_name, "leaf-1");
  // 1.8x the other host is within what leaves differ by: nothing.
  c.network = [](NetworkData& n) {
    SwitchCounters(n, {{"node-00", 0.072},
                       {"node-01", 0.075},
                       {"node-02", 0.07},
                       {"node-03", 0.072},
                       {"node-04", 0.04}});
    n.switch_of = {{"node-00", "leaf-1"},
                   {"node-01", "leaf-1"},
                   {"node-02", "leaf-1"},
                   {"node-03", "leaf-1"},
                   {"node-04", "leaf-2"}};
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
}

// The others spread by 2x among themselves (a noisy fabric): leaf-1's
// hosts are under 4 robust deviations above them, yet each waits 3x their
// median and more than any of them.
TEST(NetworkDetectorTest, HostsAboveEveryOtherByMultiplesNameTheirSwitchDespiteANoisySpread) {
  Cluster c;
  c.network = [](NetworkData& n) {
    SwitchCounters(n, {{"node-00", 0.105},
                       {"node-01", 0.108},
                       {"node-02", 0.052},
                       {"node-03", 0.032},
                       {"node-04", 0.041},
                       {"node-05", 0.028}});
    n.switch_of["node-01"] = "leaf-1";
  };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1");
  EXPECT_EQ(shared[0]->confidence, 0.55);
  EXPECT_NE(shared[0]->message.find("robust deviations above theirs; even its least-waiting host"),
            std::string::npos)
      << shared[0]->message;
  // One of the others as high as leaf-1's least: not apart.
  c.network = [](NetworkData& n) {
    SwitchCounters(n, {{"node-00", 0.105},
                       {"node-01", 0.108},
                       {"node-02", 0.11},
                       {"node-03", 0.032},
                       {"node-04", 0.041},
                       {"node-05", 0.028}});
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
}

// Two hosts, one per switch: one waiting 3x the other is no switch pattern.
TEST(NetworkDetectorTest, OneHostAgainstOneOtherIsNoSwitchPattern) {
  Cluster c;
  c.network = [](NetworkData& n) {
    SwitchCounters(n, {{"node-00", 0.12}, {"node-02", 0.04}});
    n.switch_of = {{"node-00", "leaf-1"}, {"node-02", "leaf-2"}};
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
}

TEST(NetworkDetectorTest, PortCountersWithoutASwitchMapOrWithOneSwitchSayNothing) {
  Cluster c;
  c.network = [](NetworkData& n) {
    SwitchCounters(n, Waits(0.16));
    n.switch_of.clear();
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
  c.network = [](NetworkData& n) {
    SwitchCounters(n, Waits(0.16));
    for (auto& [h, sw] : n.switch_of) sw = "leaf-1";
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
}

TEST(NetworkDetectorTest, HostsThatSentAlmostNothingOverInfinibandAreLeftOut) {
  Cluster c;
  c.network = [](NetworkData& n) {
    SwitchCounters(n, Waits(0.04));
    // node-00 and node-01 fell back to sockets: their IB ports carried only
    // management traffic, waiting a large share of it.
    for (IbPortCounters& p : n.port_counters) {
      if (p.host == "node-00" || p.host == "node-01") {
        p.xmit_data_bytes = 1'000'000;
        p.xmit_wait_ticks = 900'000;
      }
    }
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
}

// A sampling loop's perfquery snapshots of the six hosts of SwitchCounters
// (two ports each), `intervals` + 1 snapshots 10 s apart from
// 2026-11-29T22:00:00Z (+0.3 s per host: each host's clock and loop), each
// interval sending 100 GB per port and waiting wait(host, interval) per
// byte x a deterministic +-10% noise per (host, port, interval).
void SnapshotCounters(NetworkData& n, int intervals,
                      const std::function<double(const std::string&, int)>& wait,
                      bool timed = true) {
  n.switch_of = {{"node-00", "leaf-1"}, {"node-01", "leaf-1"}, {"node-02", "leaf-2"},
                 {"node-03", "leaf-2"}, {"node-04", "leaf-3"}, {"node-05", "leaf-3"}};
  const TimeNs start = 1795989600LL * 1'000'000'000;
  int h = 0;
  for (const auto& [host, sw] : n.switch_of) {
    for (int port = 0; port < 2; ++port) {
      double total_wait = 0, total_data = 0;
      for (int k = 0; k <= intervals; ++k) {
        if (k > 0) {
          double noise = 1 + 0.1 * (((h * 31 + port * 7 + k * 17) % 9) - 4) / 4.0;
          total_data += 100e9;
          total_wait += 100e9 * wait(host, k) * noise;
        }
        IbPortCounters c;
        c.host = host;
        c.lid = 10 + 2 * h + port;
        c.extended = true;
        c.xmit_data_bytes = static_cast<int64_t>(total_data) + 1000;
        c.xmit_wait_ticks = static_cast<int64_t>(total_wait);
        if (timed) c.time_ns = start + k * 10'000'000'000LL + h * 300'000'000LL;
        c.src = SourceRef{2, static_cast<uint32_t>(1 + 53 * k + 26 * port)};
        n.port_counters.push_back(c);
      }
    }
    ++h;
  }
}

// leaf-1's hosts wait 3x in intervals 2 and 6 of 11 and like everyone else
// in the rest: over the run that is 1.36x, inside host-to-host noise.
double CongestedIn2And6(const std::string& host, int k) {
  bool leaf1 = host == "node-00" || host == "node-01";
  return leaf1 && (k == 2 || k == 6) ? 0.12 : 0.04;
}

TEST(NetworkDetectorTest, PortCounterSnapshotsNameASwitchCongestedInSomeIntervals) {
  Cluster c;
  c.network = [](NetworkData& n) { SnapshotCounters(n, 11, CongestedIn2And6); };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1");
  EXPECT_EQ(shared[0]->pattern, Pattern::kPortCounters);
  EXPECT_EQ(shared[0]->confidence, 0.6);
  const std::string& m = shared[0]->message;
  EXPECT_NE(m.find("in 2 of 11 intervals"), std::string::npos) << m;
  EXPECT_NE(m.find("first 2026-11-29T22:00:10.000Z to 2026-11-29T22:00:20.000Z"), std::string::npos)
      << m;
  EXPECT_NE(m.find("last 2026-11-29T22:00:50.000Z to 2026-11-29T22:01:00.000Z"), std::string::npos)
      << m;
  ASSERT_EQ(shared[0]->evidence.size(), 1u);
  ASSERT_TRUE(shared[0]->evidence[0].source.has_value());
  EXPECT_EQ(shared[0]->evidence[0].source->line,
            1u + 53u * 2u);  // the snapshot ending the first interval
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
  EXPECT_EQ(r.v.culprits.front().entity.switch_name, "leaf-1");
  // Without timestamps the snapshots align by their order.
  c.network = [](NetworkData& n) { SnapshotCounters(n, 11, CongestedIn2And6, false); };
  Result untimed = Diagnose(c);
  shared = Codes(untimed, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_NE(shared[0]->message.find("first snapshots 2 to 3"), std::string::npos)
      << shared[0]->message;
}

TEST(NetworkDetectorTest, PortCounterSnapshotsOfDifferentCountsAlignByTime) {
  Cluster c;
  c.network = [](NetworkData& n) {
    SnapshotCounters(n, 11, CongestedIn2And6);
    // node-05's loop started after the first snapshot.
    std::erase_if(n.port_counters, [](const IbPortCounters& p) {
      return p.host == "node-05" && p.time_ns && *p.time_ns < 1795989605LL * 1'000'000'000;
    });
  };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1") << shared[0]->message;
  EXPECT_NE(shared[0]->message.find("in 2 of 10 intervals"), std::string::npos)
      << shared[0]->message;
}

TEST(NetworkDetectorTest, PortCounterSnapshotsCongestedOnceOrOnTwoSwitchesAlikeNameNoSwitch) {
  Cluster c;
  // One interval only: a burst anyone's switch can have.
  c.network = [](NetworkData& n) {
    SnapshotCounters(n, 11, [](const std::string& h, int k) {
      return (h == "node-00" || h == "node-01") && k == 4 ? 0.2 : 0.04;
    });
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
  // Two switches, twice each: neither stands out.
  c.network = [](NetworkData& n) {
    SnapshotCounters(n, 11, [](const std::string& h, int k) {
      bool leaf1 = h == "node-00" || h == "node-01", leaf3 = h == "node-04" || h == "node-05";
      return (leaf1 && (k == 2 || k == 6)) || (leaf3 && (k == 3 || k == 8)) ? 0.12 : 0.04;
    });
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
  // 1.8x in four intervals: under 2x the others, as leaves differ.
  c.network = [](NetworkData& n) {
    SnapshotCounters(n, 11, [](const std::string& h, int k) {
      return (h == "node-00" || h == "node-01") && k % 3 == 0 ? 0.072 : 0.04;
    });
  };
  EXPECT_TRUE(Codes(Diagnose(c), FindingCode::kNetSharedSwitch).empty());
}

// Four hosts on leaf-1, one elsewhere: each of the four above it, by 2x, in
// two intervals names leaf-1; two against one is too easy by chance.
TEST(NetworkDetectorTest, PortCounterSnapshotsOfFourHostsAgainstOneElsewhereNameTheirSwitch) {
  auto congested = [](const std::string& h, int k) {
    return h != "node-04" && (k == 3 || k == 7) ? 0.12 : 0.04;
  };
  Cluster c;
  c.network = [&](NetworkData& n) {
    SnapshotCounters(n, 11, congested);
    std::erase_if(n.port_counters, [](const IbPortCounters& p) { return p.host == "node-05"; });
    n.switch_of = {{"node-00", "leaf-1"},
                   {"node-01", "leaf-1"},
                   {"node-02", "leaf-1"},
                   {"node-03", "leaf-1"},
                   {"node-04", "leaf-2"}};
  };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1") << shared[0]->message;
  EXPECT_NE(shared[0]->message.find("in 2 of 11 intervals"), std::string::npos)
      << shared[0]->message;
  c.network = [&](NetworkData& n) {
    SnapshotCounters(n, 11, congested);
    std::erase_if(n.port_counters, [](const IbPortCounters& p) {
      return p.host == "node-02" || p.host == "node-03" || p.host == "node-05";
    });
    n.switch_of = {{"node-00", "leaf-1"}, {"node-01", "leaf-1"}, {"node-04", "leaf-2"}};
  };
  Result two = Diagnose(c);
  EXPECT_TRUE(Codes(two, FindingCode::kNetSharedSwitch).empty());
}

// Snapshots are cumulative: the run's totals are the last snapshot's, not
// the sum of all (which would weigh the early, quiet part many times over).
TEST(NetworkDetectorTest, PortCounterTotalsAreTheLastSnapshotOfEachPort) {
  Cluster c;
  // leaf-1 waits 25x in the last of 10 intervals only: 3.4x over the run.
  c.network = [](NetworkData& n) {
    SnapshotCounters(n, 10, [](const std::string& h, int k) {
      return (h == "node-00" || h == "node-01") && k == 10 ? 1.0 : 0.04;
    });
  };
  Result r = Diagnose(c);
  auto shared = Codes(r, FindingCode::kNetSharedSwitch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]->entity.switch_name, "leaf-1") << shared[0]->message;
  EXPECT_NE(shared[0]->message.find("over the run"), std::string::npos) << shared[0]->message;
  EXPECT_NE(shared[0]->message.find("waits 3."), std::string::npos) << shared[0]->message;
}

TEST(VerdictEvidenceTest, PortCountersAndAJobSlowdownTogetherNameTheSwitchWithMoreConfidence) {
  Cluster c;
  c.synchronised = true;
  c.slow = std::vector<double>(kHosts * kGpus, 1.3);  // the whole job slows from step 20
  c.network = [](NetworkData& n) { SwitchCounters(n, Waits(0.16)); };
  Result r = Diagnose(c);
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
  const Culprit& top = r.v.culprits.front();
  EXPECT_EQ(top.cause, "shared_switch");
  EXPECT_EQ(top.entity.switch_name, "leaf-1");
  EXPECT_GT(top.confidence, 0.7);
  ASSERT_GE(top.evidence.size(), 2u);
  EXPECT_EQ(top.evidence[1].rfind("step times: ", 0), 0u) << top.evidence[1];
}

TEST(VerdictEvidenceTest, SlowNcclTestsHostWithADowngradedPcieGpuNamesTheGpu) {
  Cluster c;
  c.synchronised = true;
  c.facts = [](int r, GpuFacts& f) {
    if (r == 5) f.pcie_width_current = 8;
  };
  c.network = [](NetworkData& n) {
    n.nccl_tests.push_back(PairRun("node-00", "node-01", 95));
    n.nccl_tests.push_back(PairRun("node-01", "node-02", 96));
    n.nccl_tests.push_back(PairRun("node-02", "node-03", 180));
    n.nccl_tests.push_back(PairRun("node-03", "node-00", 181));
  };
  Result r = Diagnose(c);
  ASSERT_EQ(Codes(r, FindingCode::kNetBandwidthLow).size(), 1u);
  ASSERT_EQ(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
  const Culprit& top = r.v.culprits.front();
  EXPECT_EQ(top.entity.rank, 5);
  EXPECT_EQ(top.entity.host, "node-01");
  EXPECT_EQ(top.entity.gpu, 1);
  EXPECT_EQ(top.cause_class, CauseClass::kCommunication);
  EXPECT_EQ(top.cause, "pcie_downgrade");
}

TEST(VerdictEvidenceTest, SynchronisedStepsOnAHealthyClusterBlameNoOne) {
  Cluster c;
  c.synchronised = true;
  Result r = Diagnose(c);
  EXPECT_NE(r.v.status, VerdictStatus::kStraggler) << r.v.summary;
}

TEST(VerdictEvidenceTest, OnlyGpuMetricsWithoutStepTimesBlameNoOne) {
  Cluster c;
  c.shape = [](int r, int, GpuSample& x) {
    if (r == 3) {
      x.temp_c = 95;
      x.sm_clock_mhz = 1400;
    }
  };
  laggard::Run run = Build(c);
  run.ranks.clear();
  Analyses a = AnalyzeRun(run, AnalysisOptions());
  Verdict v = DecideVerdict(run, a);
  EXPECT_NE(v.status, VerdictStatus::kStraggler) << v.summary;
  ASSERT_EQ(a.hardware.findings.size(), 1u);
}

}  // namespace
}  // namespace laggard
