// The agent's host-CPU seam (agent/host_cpu.h): /proc/stat's per-core
// shares and run queue, the per-core speed probe, and their metrics.

#include "agent/host_cpu.h"

#include <algorithm>
#include <string>

#include <pthread.h>
#include <sched.h>

#include <gtest/gtest.h>

#include "agent/agent.h"
#include "agent/clock.h"
#include "test_util.h"

namespace laggard::agent {
namespace {

using testing_util::TempDir;
using testing_util::WriteFile;

// The head of this machine's /proc/stat (Linux 6.1, 2 vCPUs), as the kernel
// prints it: user nice system idle iowait irq softirq steal guest guest_nice.
constexpr const char* kProcStat =
    "cpu  6359466 90035 2481101 2987208 45104 0 47145 0 0 0\n"
    "cpu0 3023946 42174 1170003 1728915 14267 0 20420 0 0 0\n"
    "cpu1 3335520 47861 1311098 1258292 30837 0 26725 0 0 0\n"
    "intr 62256512 0 0 0 0 0\n"
    "ctxt 139463160\n"
    "btime 1796598790\n"
    "processes 1144117\n"
    "procs_running 2\n"
    "procs_blocked 0\n"
    "softirq 64963796 0 5136171 7283497 24766402 4963897 0 2137721 6775200 321164 13579744\n";

TEST(ProcStatTest, ReadsEachCoreAndTheRunQueue) {
  ProcStat s = ParseProcStat(kProcStat);
  EXPECT_EQ(s.parse_errors, 0u);
  ASSERT_EQ(s.cpus.size(), 2u);  // the "cpu" total left out
  EXPECT_EQ(s.cpus[1].cpu, 1);
  EXPECT_EQ(s.cpus[1].user, 3335520u);
  EXPECT_EQ(s.cpus[1].idle, 1258292u);
  EXPECT_EQ(s.cpus[1].iowait, 30837u);
  EXPECT_EQ(s.cpus[1].steal, 0u);
  EXPECT_EQ(s.procs_running, 2u);
  EXPECT_EQ(s.procs_blocked, 0u);
}

TEST(ProcStatTest, GuestTimeIsAlreadyInUserAndNotCountedTwice) {
  // A KVM host's core: guest 400 and guest_nice 50 are inside user and nice.
  ProcStat a = ParseProcStat("cpu0 1000 100 0 1000 0 0 0 0 400 50\n");
  ProcStat b = ParseProcStat("cpu0 1500 100 0 1500 0 0 0 0 800 50\n");
  EXPECT_EQ(a.cpus[0].Total(), 2100u);
  EXPECT_NEAR(CpuDelta(a, b).cores[0].busy_ratio.value_or(-1), 0.5, 1e-12);
}

TEST(ProcStatTest, OldKernelsColumnsDefaultAndBadLinesAreCounted) {
  // A 2.4 kernel's four columns; a cut line; a word for a number.
  ProcStat s = ParseProcStat(
      "cpu0 10 0 5 85\ncpu1 10 0\ncpu2 1 2 x 4\nprocs_running many\nprocs_blocked 3\n");
  ASSERT_EQ(s.cpus.size(), 1u);
  EXPECT_EQ(s.cpus[0].idle, 85u);
  EXPECT_EQ(s.cpus[0].steal, 0u);
  EXPECT_EQ(s.parse_errors, 3u);
  EXPECT_FALSE(s.procs_running.has_value());
  EXPECT_EQ(s.procs_blocked, 3u);
  EXPECT_TRUE(ParseProcStat("").cpus.empty());
}

TEST(ProcStatTest, SharesAreTheRoundsTicks) {
  ProcStat a = ParseProcStat("cpu0 100 0 0 100 0 0 0 0\ncpu1 100 0 0 100 0 0 0 0\n");
  // cpu0: 60 busy, 20 idle, 20 stolen of 100; cpu1: no tick (no share);
  // cpu2: new (no share).
  ProcStat b = ParseProcStat(
      "cpu0 150 0 10 120 0 0 0 20\ncpu1 100 0 0 100 0 0 0 0\ncpu2 5 0 0 5 0 0 0 0\n"
      "procs_running 7\n");
  HostCpu d = CpuDelta(a, b);
  ASSERT_EQ(d.cores.size(), 3u);
  EXPECT_NEAR(d.cores[0].busy_ratio.value_or(-1), 0.8, 1e-12);  // steal counts as not idle
  EXPECT_NEAR(d.cores[0].steal_ratio.value_or(-1), 0.2, 1e-12);
  EXPECT_FALSE(d.cores[1].busy_ratio.has_value());
  EXPECT_FALSE(d.cores[2].busy_ratio.has_value());
  EXPECT_EQ(d.procs_running, 7u);
  // Counters that went back (a core offlined and back): no share.
  EXPECT_FALSE(CpuDelta(b, a).cores[0].busy_ratio.has_value());
}

TEST(CoreProbeTest, EveryAllowedCoreRunsTheWorkAndTheFastestReadsOne) {
  std::vector<int32_t> cores = AllowedCores();
  ASSERT_FALSE(cores.empty());
  cpu_set_t before;
  CPU_ZERO(&before);
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
  // A budget of one smallest probe per core: every core each round.
  HostCpuSampler sampler("", kMinProbeNs * static_cast<DurationNs>(cores.size()));
  HostCpu cpu = sampler.Sample();
  cpu_set_t after;
  CPU_ZERO(&after);
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));  // the caller is never pinned
  EXPECT_GT(sampler.probe_iterations(), 0u);
  ASSERT_EQ(cpu.cores.size(), cores.size());
  double best = 0;
  for (const CoreSample& c : cpu.cores) {
    ASSERT_TRUE(c.probe_s.has_value()) << c.cpu;
    EXPECT_GT(*c.probe_s, 0);
    ASSERT_TRUE(c.speed_ratio.has_value());
    EXPECT_GT(*c.speed_ratio, 0);
    EXPECT_LE(*c.speed_ratio, 1);
    best = std::max(best, *c.speed_ratio);
    EXPECT_FALSE(c.busy_ratio.has_value());  // no /proc/stat read
  }
  EXPECT_EQ(best, 1);
  EXPECT_TRUE(ProbeCores({-1}, 10).empty());
  // No budget: no probe.
  EXPECT_TRUE(HostCpuSampler("", 0).Sample().cores.empty());
}

TEST(CoreProbeTest, ABudgetUnderOneProbePerCoreTakesTheCoresInTurn) {
  std::vector<int32_t> cores = AllowedCores();
  if (cores.size() < 2) GTEST_SKIP() << "one core only: nothing to take in turn";
  HostCpuSampler sampler("", kMinProbeNs);  // one core's probe per round
  HostCpu first = sampler.Sample();
  ASSERT_EQ(first.cores.size(), 1u);
  EXPECT_EQ(first.cores[0].cpu, cores[0]);
  EXPECT_EQ(first.cores[0].speed_ratio, 1);
  HostCpu second = sampler.Sample();  // the next core, and the first's latest
  ASSERT_EQ(second.cores.size(), 2u);
  EXPECT_EQ(second.cores[1].cpu, cores[1]);
  EXPECT_TRUE(second.cores[0].probe_s.has_value());
}

TEST(HostCpuMetricsTest, TheAgentExportsEachCoresSharesSpeedAndTheRunQueue) {
  TempDir root;
  WriteFile(root.File("proc/stat"),
            "cpu0 100 0 0 100 0 0 0 0\ncpu1 100 0 0 100 0 0 0 0\nprocs_running 3\n");
  AgentOptions o;
  o.listen = "127.0.0.1:0";
  o.host = "node-1";
  o.sysfs_root = root.path();
  o.version = "test";
  ManualClock clock(1'700'000'000'000'000'000);
  Agent agent(o, nullptr, "no NVML here", clock);
  ASSERT_TRUE(agent.Open().ok());
  agent.SampleOnce();
  WriteFile(root.File("proc/stat"),
            "cpu0 150 0 10 120 0 0 0 20\ncpu1 190 0 0 110 0 0 0 0\nprocs_running 5\n"
            "procs_blocked 1\n");
  agent.SampleOnce();
  std::string m = agent.Metrics();
  EXPECT_NE(m.find("laggard_host_cpu_busy_ratio{host=\"node-1\",cpu=\"0\"} 0.8\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("laggard_host_cpu_busy_ratio{host=\"node-1\",cpu=\"1\"} 0.9\n"),
            std::string::npos);
  EXPECT_NE(m.find("laggard_host_cpu_steal_ratio{host=\"node-1\",cpu=\"0\"} 0.2\n"),
            std::string::npos);
  EXPECT_NE(m.find("laggard_host_procs_running{host=\"node-1\"} 5\n"), std::string::npos);
  EXPECT_NE(m.find("laggard_host_procs_blocked{host=\"node-1\"} 1\n"), std::string::npos);
  // The probe ran on this machine's cores: the fastest reads 1.
  EXPECT_NE(m.find("# TYPE laggard_host_cpu_probe_seconds gauge"), std::string::npos);
  const size_t speed = m.find("laggard_host_cpu_speed_ratio{host=\"node-1\",cpu=\"");
  ASSERT_NE(speed, std::string::npos);
  bool fastest = false;
  for (size_t at = speed; at != std::string::npos;
       at = m.find("laggard_host_cpu_speed_ratio{", at + 1)) {
    fastest |= m.compare(m.find('}', at), 4, "} 1\n") == 0;
  }
  EXPECT_TRUE(fastest) << m;

  // --cpu-probe 0 and no root: no host-CPU series at all.
  AgentOptions off = o;
  off.sysfs_root.reset();
  off.cpu_probe_ns = 0;
  Agent quiet(off, nullptr, "no NVML here", clock);
  ASSERT_TRUE(quiet.Open().ok());
  quiet.SampleOnce();
  EXPECT_EQ(quiet.Metrics().find("laggard_host_cpu"), std::string::npos);
}

}  // namespace
}  // namespace laggard::agent
