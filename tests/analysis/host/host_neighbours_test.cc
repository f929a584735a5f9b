// What the agent saw on a rank's cores (analysis/host/host_neighbours.h) and
// how the verdict says it (SayWhatTheAgentSaw, verdict_internal.h).

#include "analysis/host/host_neighbours.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "verdict/verdict_internal.h"

namespace laggard {
namespace {

constexpr TimeNs kT0 = 1'714'564'800'000'000'000;
constexpr TimeNs kSecond = 1'000'000'000;

HostProcReading Proc(TimeNs t, int64_t pid, int64_t ppid, const std::string& cmd, double share,
                     std::vector<int32_t> allowed, std::optional<int32_t> rank = std::nullopt) {
  return HostProcReading{.time_ns = t,
                         .pid = pid,
                         .ppid = ppid,
                         .comm = cmd.substr(0, cmd.find(' ')),
                         .cmdline = cmd,
                         .cpu_share = share,
                         .cpus_allowed = std::move(allowed),
                         .rank = rank};
}

// node-1, cores 0 and 1, five scans: rank 3 (pid 31) pinned to cpu 1 and
// rank 2 (pid 30) to cpu 0; a busy loop on cpu 1 for four of the scans; a
// loader worker of rank 3 on cpu 1; sshd on cpu 0; a light cron job on
// both; a busy process on node-2 (another host). Steal 10% and speed 0.8
// on cpu 1.
Run Host() {
  Run run;
  HostCpuLog log{.host = "node-1"};
  for (int s = 0; s < 5; ++s) {
    TimeNs t = kT0 + s * kSecond;
    log.procs.push_back(Proc(t, 31, 1, "python3 ddp_job.py", 0.6, {1}, 3));
    log.procs.push_back(Proc(t, 30, 1, "python3 ddp_job.py", 0.9, {0}, 2));
    if (s > 0) log.procs.push_back(Proc(t, 4242, 1, "python3 -c while True: pass", 0.98, {1}));
    log.procs.push_back(Proc(t, 50, 31, "python3 loader", 0.9, {1}));
    log.procs.push_back(Proc(t, 22, 1, "sshd", 0.9, {0}));
    log.procs.push_back(Proc(t, 77, 1, "cron job", 0.15, {0, 1}));
    log.rounds.push_back(
        HostCpuRound{.time_ns = t,
                     .cores = {CoreReading{.cpu = 0, .steal = 0, .speed = 1},
                               CoreReading{.cpu = 1, .steal = 0.1, .speed = 0.8}}});
  }
  // After the job: not in rank 3's window.
  log.procs.push_back(Proc(kT0 + 9 * kSecond, 99, 1, "late hog", 1.0, {1}));
  run.hardware.host_cpu.push_back(log);
  HostCpuLog other{.host = "node-2"};
  other.procs.push_back(Proc(kT0, 4243, 1, "other host hog", 1.0, {1}));
  run.hardware.host_cpu.push_back(other);
  return run;
}

TEST(HostNeighboursTest, TheBusyProcessOnARanksCoresThatIsNotTheJobsIsItsNeighbour) {
  std::vector<RankHostCpu> seen = RanksOnHostCpus(Host());
  ASSERT_EQ(seen.size(), 2u);
  const RankHostCpu* r3 = FindRankHostCpu(seen, 3);
  ASSERT_NE(r3, nullptr);
  EXPECT_EQ(r3->host, "node-1");
  EXPECT_EQ(r3->pid, 31);
  EXPECT_EQ(r3->cpus, std::vector<int32_t>{1});
  EXPECT_EQ(r3->scans, 5u);
  ASSERT_EQ(r3->neighbours.size(), 1u);  // not its loader, sshd (cpu 0), cron (0.15), late hog
  EXPECT_EQ(r3->neighbours[0].pid, 4242);
  EXPECT_NEAR(r3->neighbours[0].cpu_share, 0.98 * 4 / 5, 1e-9);  // absent from one scan
  EXPECT_EQ(r3->neighbours[0].cmdline, "python3 -c while True: pass");
  EXPECT_EQ(r3->neighbours[0].cpus, std::vector<int32_t>{1});
  EXPECT_NEAR(r3->steal.value_or(-1), 0.1, 1e-12);
  EXPECT_NEAR(r3->speed.value_or(-1), 0.8, 1e-12);
  const RankHostCpu* r2 = FindRankHostCpu(seen, 2);
  ASSERT_NE(r2, nullptr);
  ASSERT_EQ(r2->neighbours.size(), 1u);
  EXPECT_EQ(r2->neighbours[0].pid, 22);  // sshd on its core
  EXPECT_EQ(r2->steal, 0);
  EXPECT_EQ(FindRankHostCpu(seen, 5), nullptr);
  EXPECT_TRUE(RanksOnHostCpus(laggard::Run{}).empty());
}

// Rank 3 tied to a process on node-1 (Host()) and, with fewer scans, on
// node-3 (two jobs numbering their ranks alike): the rank's own host
// decides; with none named, neither host's neighbours are its.
TEST(HostNeighboursTest, ARankTwoHostsTieToIsOnItsOwnHostOrNone) {
  laggard::Run run = Host();
  HostCpuLog third{.host = "node-3"};
  for (int s = 0; s < 2; ++s) {
    TimeNs t = kT0 + s * kSecond;
    third.procs.push_back(Proc(t, 61, 1, "python3 other_job.py", 0.9, {0}, 3));
    third.procs.push_back(Proc(t, 62, 1, "node-3 hog", 1.0, {0}));
  }
  run.hardware.host_cpu.push_back(third);
  std::vector<RankHostCpu> seen = RanksOnHostCpus(run);
  EXPECT_EQ(FindRankHostCpu(seen, 3), nullptr);  // no host of its own: neither
  ASSERT_NE(FindRankHostCpu(seen, 2), nullptr);  // one host tied rank 2

  run.ranks.emplace_back();
  run.ranks.back().info.rank = 3;
  run.ranks.back().info.host = "node-3";
  seen = RanksOnHostCpus(run);
  const RankHostCpu* r3 = FindRankHostCpu(seen, 3);
  ASSERT_NE(r3, nullptr);
  EXPECT_EQ(r3->host, "node-3");  // its own, not the host with more scans
  EXPECT_EQ(r3->pid, 61);
  ASSERT_EQ(r3->neighbours.size(), 1u);
  EXPECT_EQ(r3->neighbours[0].pid, 62);

  run.ranks.back().info.host = "NODE-3.cluster.local";  // node-3, spelled its own way
  seen = RanksOnHostCpus(run);
  r3 = FindRankHostCpu(seen, 3);
  ASSERT_NE(r3, nullptr);
  EXPECT_EQ(r3->host, "node-3");

  // Addresses are not shortened: 10.0.0.1 is not 10.0.0.3 (node-3 renamed).
  for (HostCpuLog& log : run.hardware.host_cpu) {
    if (log.host == "node-3") log.host = "10.0.0.3";
  }
  run.ranks.back().info.host = "10.0.0.1";
  EXPECT_EQ(FindRankHostCpu(RanksOnHostCpus(run), 3), nullptr);
  for (HostCpuLog& log : run.hardware.host_cpu) {
    if (log.host == "10.0.0.3") log.host = "node-3";
  }

  run.ranks.back().info.host.reset();  // its trace names node-1
  run.traces.emplace_back();
  run.traces.back().rank = 3;
  run.traces.back().host = "node-1";
  seen = RanksOnHostCpus(run);
  r3 = FindRankHostCpu(seen, 3);
  ASSERT_NE(r3, nullptr);
  EXPECT_EQ(r3->host, "node-1");
  EXPECT_EQ(r3->pid, 31);
}

TEST(HostNeighboursTest, NothingButTheJobOnARanksCoresIsNoNeighbour) {
  // Two ranks pinned to cores 0 and 1 with their loaders (children) and a
  // compile worker (a grandchild), all busy; rank 1 restarted under a new
  // pid, whose records are read; the old pid's loader is the job's too.
  laggard::Run run;
  HostCpuLog log{.host = "node-1"};
  for (int s = 0; s < 4; ++s) {
    TimeNs t = kT0 + s * kSecond;
    log.procs.push_back(Proc(t, 30, 1, "python3 train.py", 0.9, {0}, 0));
    log.procs.push_back(Proc(t, s < 2 ? 31 : 41, 1, "python3 train.py", 0.9, {1}, 1));
    log.procs.push_back(Proc(t, 50, 30, "pt_data_worker", 0.9, {0}));
    log.procs.push_back(Proc(t, 51, 50, "compile worker", 0.9, {0, 1}));
    log.procs.push_back(Proc(t, 52, 31, "pt_data_worker", 0.9, {1}));
    log.rounds.push_back(HostCpuRound{
        .time_ns = t,
        .cores = {CoreReading{.cpu = 0, .steal = 0}, CoreReading{.cpu = 1, .steal = 0}}});
  }
  run.hardware.host_cpu.push_back(log);
  std::vector<RankHostCpu> seen = RanksOnHostCpus(run);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen[0].neighbours.empty());
  EXPECT_TRUE(seen[1].neighbours.empty());
  EXPECT_EQ(seen[1].pid, 41);  // the pid it reported from last
  EXPECT_EQ(seen[1].scans, 2u);
  Analyses a;
  a.host_cpu.seen_by_agent = seen;
  Verdict v;
  Culprit c;
  c.entity.rank = 1;
  c.cause = "host_contention";
  v.culprits.push_back(c);
  verdict_internal::SayWhatTheAgentSaw(v, a);
  EXPECT_TRUE(v.culprits[0].evidence.empty());
  EXPECT_TRUE(v.next_steps.empty());
}

TEST(HostNeighboursTest, OneNeighbourOfTwoCulpritsIsOneNextStep) {
  laggard::Run run;
  HostCpuLog log{.host = "vm"};
  for (int s = 0; s < 3; ++s) {
    TimeNs t = kT0 + s * kSecond;
    log.procs.push_back(Proc(t, 31, 1, "python3 train.py", 0.3, {1}, 1));
    log.procs.push_back(Proc(t, 33, 1, "python3 train.py", 0.3, {1}, 3));
    log.procs.push_back(Proc(t, 99, 1, "stress -c 8", 3.5, {0, 1, 2, 3}));
  }
  run.hardware.host_cpu.push_back(log);
  Analyses a;
  a.host_cpu.seen_by_agent = RanksOnHostCpus(run);
  Verdict v;
  for (int32_t r : {1, 3}) {
    Culprit c;
    c.entity.rank = r;
    c.cause = "host_contention";
    v.culprits.push_back(c);
  }
  Culprit group;  // rank 1 again, in a group: said once
  group.ranks = {1, 3};
  group.cause = "host_contention";
  v.culprits.push_back(group);
  verdict_internal::SayWhatTheAgentSaw(v, a);
  EXPECT_EQ(v.culprits[0].evidence.at(0),
            "agent on vm, over 2 s: pid 99 (stress), not one of the job's processes, used 3.50 "
            "cores' worth in all, on cpus 0-3, rank 1's cpu 1 among them: `stress -c 8`");
  ASSERT_EQ(v.next_steps.size(), 1u);
  EXPECT_EQ(v.next_steps[0],
            "stop or move pid 99 on vm (`stress -c 8`): it used 3.50 cores' worth in all, on cpus "
            "0-3, ranks 1, 3's cpu 1 among them");
}

TEST(HostNeighboursTest, AnotherJobsRanksAndNeighboursAreLeftOutByTheStepsTimes) {
  laggard::Run run = Host();
  // An hour later: the next job's rank 3 (pid 8) on cpu 1 beside a busy
  // build (pid 9), logged by the same agent.
  HostCpuLog after{.host = "node-1"};
  for (int s = 0; s < 3; ++s) {
    TimeNs t = kT0 + 3600 * kSecond + s * kSecond;
    after.procs.push_back(Proc(t, 8, 1, "python3 next.py", 0.5, {1}, 3));
    after.procs.push_back(Proc(t, 9, 1, "make -j", 1.0, {1}));
  }
  run.hardware.host_cpu.push_back(after);
  // Without step times the latest job's process is rank 3's.
  std::vector<RankHostCpu> untimed = RanksOnHostCpus(run);
  ASSERT_NE(FindRankHostCpu(untimed, 3), nullptr);
  EXPECT_EQ(FindRankHostCpu(untimed, 3)->pid, 8);
  // With this job's steps timed, the other job is left out.
  StepSeries s;
  s.info.rank = 3;
  s.steps.push_back(StepRecord{.step = 0, .duration_ns = 4 * kSecond, .start_ns = kT0});
  run.ranks.push_back(s);
  std::vector<RankHostCpu> timed = RanksOnHostCpus(run);
  const RankHostCpu* r3 = FindRankHostCpu(timed, 3);
  ASSERT_NE(r3, nullptr);
  EXPECT_EQ(r3->pid, 31);
  ASSERT_EQ(r3->neighbours.size(), 1u);
  EXPECT_EQ(r3->neighbours[0].pid, 4242);
}

TEST(HostNeighboursTest, CpuListsAreWrittenAsLinuxPrintsThem) {
  EXPECT_EQ(CpuListText({}), "");
  EXPECT_EQ(CpuListText({1}), "1");
  EXPECT_EQ(CpuListText({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
}

TEST(HostNeighboursTest, TheVerdictNamesTheNeighbourOfAHostContentionCulpritFirst) {
  Analyses a;
  a.host_cpu.seen_by_agent = RanksOnHostCpus(Host());
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity.rank = 3;
  c.cause_class = CauseClass::kHostStall;
  c.cause = "host_contention";
  v.culprits.push_back(c);
  Culprit other;  // compute-slow: the agent's view is not its cause
  other.entity.rank = 2;
  other.cause_class = CauseClass::kComputeSlow;
  v.culprits.push_back(other);
  v.next_steps = {"check rank 3's host"};
  verdict_internal::SayWhatTheAgentSaw(v, a);
  const std::vector<std::string>& e = v.culprits[0].evidence;
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0],
            "agent on node-1, over 4 s: pid 4242 (python3), not one of the job's processes, used "
            "0.78 of a core on cpu 1, where rank 3 runs: `python3 -c while True: pass`");
  EXPECT_EQ(e[1],
            "agent on node-1: the hypervisor ran another guest for 10% of the time of rank 3's "
            "cpu 1 (steal)");
  EXPECT_EQ(e[2],
            "agent on node-1: rank 3's cpu 1 ran the agent's probe at 0.80x the host's "
            "fastest core");
  EXPECT_TRUE(v.culprits[1].evidence.empty());
  ASSERT_EQ(v.next_steps.size(), 3u);
  EXPECT_EQ(v.next_steps[0],
            "stop or move pid 4242 on node-1 (`python3 -c while True: pass`): it used 0.78 of a "
            "core on cpu 1, where rank 3 runs");
  EXPECT_EQ(v.next_steps[1].rfind("move rank 3 off node-1", 0), 0u) << v.next_steps[1];
  EXPECT_EQ(v.next_steps[2], "check rank 3's host");

  // Without the agent's log: nothing said.
  Analyses none;
  Verdict same;
  same.culprits.push_back(c);
  verdict_internal::SayWhatTheAgentSaw(same, none);
  EXPECT_TRUE(same.culprits[0].evidence.empty());
}

}  // namespace
}  // namespace laggard
