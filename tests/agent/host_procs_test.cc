// The agent's process scan (agent/host_procs.h): /proc/<pid>/stat, status
// and cmdline read into each busy process's share of a core, and the
// hardware log's host_cpu and host_proc records.

#include "agent/host_procs.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "agent/agent.h"
#include "agent/clock.h"
#include "analysis/host/host_neighbours.h"
#include "test_util.h"

namespace laggard::agent {
namespace {

using testing_util::TempDir;
using testing_util::WriteFile;

// `cat`'s own /proc/self/stat as Linux 6.1 writes it: utime 0, stime 0,
// starttime 6628729, processor 1.
constexpr const char* kCatStat =
    "26095 (cat) R 26089 26089 22851 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 6628729 3133440 "
    "407 18446744073709551615 94174814167040 94174814186921 140733076962016 0 0 0 0 0 0 0 0 0 "
    "17 1 0 0 0 0 0 94174814202928 94174814204544 94175211999232 140733076965822 "
    "140733076965842 140733076965842 140733076967403 0";

// A stat line of `pid` (child of `ppid`, started at `start`) with `comm`,
// utime + stime = `ticks`, on `cpu`.
std::string Stat(int64_t pid, const std::string& comm, uint64_t ticks, int cpu, int64_t ppid = 1,
                 uint64_t start = 100) {
  std::ostringstream s;
  s << pid << " (" << comm << ") R " << ppid << " 1 1 0 -1 0 0 0 0 0 " << ticks / 2 << ' '
    << ticks - ticks / 2 << " 0 0 20 0 1 0 " << start << " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 " << cpu
    << " 0 0 0 0 0";
  return s.str();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteProc(const TempDir& root, int64_t pid, const std::string& comm, uint64_t ticks, int cpu,
               const std::string& allowed, const std::string& cmdline, int64_t ppid = 1,
               uint64_t start = 100) {
  const std::string dir = "proc/" + std::to_string(pid) + "/";
  WriteFile(root.File(dir + "stat"), Stat(pid, comm, ticks, cpu, ppid, start) + "\n");
  WriteFile(root.File(dir + "status"),
            "Name:\t" + comm + "\nCpus_allowed:\t3\nCpus_allowed_list:\t" + allowed + "\n");
  WriteFile(root.File(dir + "cmdline"), cmdline);
}

TEST(PidStatTest, ReadsTheKernelsLine) {
  std::optional<PidStat> s = ParsePidStat(kCatStat);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, 26095);
  EXPECT_EQ(s->ppid, 26089);
  EXPECT_EQ(s->comm, "cat");
  EXPECT_EQ(s->cpu_ticks, 0u);
  EXPECT_EQ(s->start_ticks, 6628729u);
  EXPECT_EQ(s->processor, 1);
  // Our own line, as the kernel writes it now.
  std::ifstream in("/proc/self/stat");
  std::string self;
  std::getline(in, self);
  std::optional<PidStat> mine = ParsePidStat(self);
  ASSERT_TRUE(mine.has_value()) << self;
  EXPECT_EQ(mine->pid, getpid());
  EXPECT_TRUE(mine->processor.has_value());
}

TEST(PidStatTest, ACommandNameWithSpacesAndParenthesesEndsAtTheLastOne) {
  std::optional<PidStat> s = ParsePidStat(Stat(7, "a (b) c", 301, 3));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->comm, "a (b) c");
  EXPECT_EQ(s->cpu_ticks, 301u);
  EXPECT_EQ(s->processor, 3);
}

TEST(PidStatTest, CutOrWrongLinesAreRefused) {
  // Fields 3-22 (state .. starttime): utime 5, stime 6, starttime 77.
  const std::string rest = " R 1 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 77";
  ASSERT_TRUE(ParsePidStat("12 (x)" + rest));
  EXPECT_FALSE(ParsePidStat(""));
  EXPECT_FALSE(ParsePidStat("12 (x) R 1 1"));                       // cut before utime
  EXPECT_FALSE(ParsePidStat("12 (x) R 1 1 1 0 -1 0 0 0 0 0 5 6"));  // cut before starttime
  EXPECT_FALSE(ParsePidStat("x (cat)" + rest));                     // no pid
  EXPECT_FALSE(ParsePidStat("0 (cat)" + rest));                     // pid 0
  EXPECT_FALSE(ParsePidStat("+12 (cat)" + rest));                   // not the kernel's digits
  EXPECT_FALSE(ParsePidStat("12 (cat) R 1 1 1 0 -1 0 0 0 0 0 five 6 0 0 20 0 1 0 77"));
  EXPECT_FALSE(ParsePidStat("12 (cat) R -1 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 77"));  // ppid
  EXPECT_FALSE(ParsePidStat("12 cat" + rest));  // no parentheses
  // Old kernels end before processor: the time is read, the CPU not.
  std::optional<PidStat> old = ParsePidStat("12 (x)" + rest);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->cpu_ticks, 11u);
  EXPECT_EQ(old->start_ticks, 77u);
  EXPECT_FALSE(old->processor.has_value());
}

TEST(CmdlineTest, ArgumentsAreJoinedAndCut) {
  using namespace std::string_literals;
  EXPECT_EQ(CmdlineText("python3\0-c\0while True: pass\0"s), "python3 -c while True: pass");
  EXPECT_EQ(CmdlineText(""), "");  // a kernel thread
  EXPECT_EQ(CmdlineText("a\nb\0"s), "a?b");
  EXPECT_EQ(CmdlineText(std::string(300, 'x'), 10), "xxxxxxxxxx...");
}

TEST(CmdlineTest, CpusAllowedListComesFromStatus) {
  EXPECT_EQ(CpusAllowedList("Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1,4\nMems:\t1\n"),
            "0-1,4");
  EXPECT_FALSE(CpusAllowedList("Name:\tx\n"));
  EXPECT_FALSE(CpusAllowedList("Cpus_allowed_list:\t\n"));
}

TEST(ProcScannerTest, SharesAreCpuTimeOverWallTimeBetweenScans) {
  TempDir root;
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  const uint64_t second = static_cast<uint64_t>(hz);
  using namespace std::string_literals;
  WriteProc(root, 100, "python3", 10, 1, "1", "python3\0-c\0while True: pass\0"s);
  WriteProc(root, 200, "python3", 50, 1, "0-1", "python3\0ddp_job.py\0"s);
  WriteProc(root, 300, "sshd", 7, 0, "0-1", "sshd\0"s);
  WriteProc(root, 500, "reused", 9 * second, 0, "0-1", "old\0"s);
  WriteProc(root, 700, "first", 5, 0, "0-1", "first\0"s);
  WriteProc(root, 210, "loader", 50, 0, "0-1", "python3\0loader\0"s, 200);
  WriteProc(root, 211, "worker", 50, 0, "0-1", "python3\0worker\0"s, 210);
  ProcScanner scanner(root.path(), 0.1, 8);
  ProcScan first = scanner.Scan(10.0, {200});
  EXPECT_EQ(first.processes, 7u);
  EXPECT_TRUE(first.listed.empty());  // no previous scan: no share yet

  // Two seconds later: the hog ran two seconds, the rank 0.4, sshd nothing;
  // pid 400 is new; pid 500's time went back (a new process of that pid).
  WriteProc(root, 100, "python3", 10 + 2 * second, 1, "1", "python3\0-c\0while True: pass\0"s);
  WriteProc(root, 200, "python3", 50 + 2 * second / 5, 0, "0-1", "python3\0ddp_job.py\0"s);
  WriteProc(root, 400, "new", 3 * second, 0, "0-1", "new\0"s);
  WriteProc(root, 500, "reused", second, 0, "0-1", "new\0"s);
  // A new process of pid 700 (another start time) with more CPU time than
  // the old one had: no share from the old one's.
  WriteProc(root, 210, "loader", 50 + second, 0, "0-1", "python3\0loader\0"s, 200);
  WriteProc(root, 211, "worker", 50 + second, 0, "0-1", "python3\0worker\0"s, 210);
  WriteProc(root, 700, "second", 5 + 2 * second, 0, "0-1", "second\0"s, 1, 900);
  WriteFile(root.File("proc/600/stat"), "600 (bad) R 1\n");
  WriteFile(root.File("proc/self/stat"), Stat(100, "python3", 0, 0));  // not a pid: skipped
  ProcScan second_scan = scanner.Scan(12.0, {200});
  EXPECT_EQ(second_scan.processes, 9u);
  EXPECT_EQ(second_scan.parse_errors, 1u);
  // The rank's loader (its child) and the loader's worker are the job's:
  // not listed, however busy. Neither is pid 700's new process.
  ASSERT_EQ(second_scan.listed.size(), 2u);
  const ProcSample& hog = second_scan.listed[0];
  EXPECT_EQ(hog.pid, 100);
  EXPECT_NEAR(hog.cpu_share, 1.0, 1e-9);
  EXPECT_EQ(hog.cmdline, "python3 -c while True: pass");
  EXPECT_EQ(hog.cpus_allowed, "1");
  EXPECT_EQ(hog.last_cpu, 1);
  const ProcSample& rank = second_scan.listed[1];  // listed because asked for
  EXPECT_EQ(rank.pid, 200);
  EXPECT_NEAR(rank.cpu_share, 0.2, 1e-9);
  EXPECT_EQ(rank.cpus_allowed, "0-1");
  EXPECT_EQ(rank.last_cpu, 0);

  // max_listed keeps the busiest others only; the job's still come, and
  // do not take a place.
  ProcScanner one(root.path(), 0.1, 1);
  one.Scan(0.0, {});
  WriteProc(root, 300, "sshd", 7 + second, 0, "0-1", "sshd\0"s);
  WriteProc(root, 100, "python3", 10 + 4 * second, 1, "1", "hog\0"s);
  WriteProc(root, 200, "python3", 50 + second, 0, "0-1", "python3\0ddp_job.py\0"s);
  ProcScan top = one.Scan(2.0, {200});
  ASSERT_EQ(top.listed.size(), 2u);
  EXPECT_EQ(top.listed[0].pid, 100);  // a core's worth
  EXPECT_NEAR(top.listed[0].cpu_share, 1.0, 1e-9);
  EXPECT_EQ(top.listed[1].pid, 200);  // the rank; sshd (0.5) left out
}

TEST(ProcScannerTest, TheAgentLogsHostCpuAndTheBusyProcessesWithTheJobsRanks) {
  TempDir root, logs;
  using namespace std::string_literals;
  WriteFile(root.File("proc/stat"),
            "cpu0 100 0 0 100 0 0 0 0\ncpu1 100 0 0 100 0 0 0 0\nprocs_running 3\n");
  WriteProc(root, 4242, "python3", 0, 1, "1", "python3\0-c\0while True: pass\0"s);
  WriteProc(root, 31, "python3", 0, 1, "1", "python3\0ddp_job.py\0"s);
  AgentOptions o;
  o.listen = "127.0.0.1:0";
  o.host = "node-1";
  o.sysfs_root = root.path();
  o.log_dir = logs.path();
  o.cpu_probe_ns = 0;
  o.proc_scan_ns = 1;  // every round
  o.version = "test";
  ManualClock clock(1'700'000'000'000'000'000);
  Agent agent(o, nullptr, "no NVML here", clock);
  ASSERT_TRUE(agent.Open().ok());
  StepReport report;
  report.rank = 3;
  report.step = 1;
  report.duration_ns = 500'000'000;
  report.pid = 31;
  agent.OnStep(report, StepSource::kUdp);
  agent.SampleOnce();
  WriteFile(root.File("proc/stat"),
            "cpu0 150 0 10 120 0 0 0 20\ncpu1 200 0 0 100 0 0 0 0\nprocs_running 2\n");
  WriteProc(root, 4242, "python3", 500, 1, "1", "python3\0-c\0while True: pass\0"s);
  agent.SampleOnce();
  agent.Stop();
  const std::string log = ReadAll(logs.File("hardware.jsonl"));
  EXPECT_NE(log.find("{\"record\":\"host_cpu\",\"time\":\"2023-11-14T22:13:20.000Z\","
                     "\"host\":\"node-1\",\"procs_running\":2,\"cpu\":[0,1],\"busy\":[0.8,1],"
                     "\"steal\":[0.2,0],\"probe_s\":[null,null],\"speed\":[null,null]}"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("\"record\":\"host_proc\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"pid\":4242,\"ppid\":1,\"comm\":\"python3\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"cpus_allowed\":\"1\",\"cmdline\":\"python3 -c while True: pass\"}"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("\"pid\":31,\"ppid\":1,\"comm\":\"python3\",\"cpu_share\":0,\"last_cpu\":1,"
                     "\"cpus_allowed\":\"1\",\"rank\":3,\"cmdline\":\"python3 ddp_job.py\"}"),
            std::string::npos)
      << log;

  // A rank reporting from another PID namespace than the /proc read: its
  // pid names another process here, so it is not tied.
  std::filesystem::create_directories(root.File("proc/1/ns"));
  std::filesystem::create_symlink("pid:[4026531836]", root.File("proc/1/ns/pid"));
  EXPECT_EQ(ProcPidNamespace(root.path()), 4026531836u);
  EXPECT_EQ(ParseNamespaceLink("pid:[12]"), 12u);
  EXPECT_FALSE(ParseNamespaceLink("net:[12]"));
  EXPECT_FALSE(ParseNamespaceLink("pid:[+12]"));
  TempDir logs2;
  o.log_dir = logs2.path();
  Agent other(o, nullptr, "no NVML here", clock);
  ASSERT_TRUE(other.Open().ok());
  report.pidns = 4026532000;
  other.OnStep(report, StepSource::kUdp);
  report.rank = 4;
  report.pidns = 4026531836;
  other.OnStep(report, StepSource::kUdp);
  other.SampleOnce();
  other.SampleOnce();
  other.Stop();
  const std::string log2 = ReadAll(logs2.File("hardware.jsonl"));
  EXPECT_EQ(log2.find("\"rank\":3"), std::string::npos) << log2;
  EXPECT_NE(log2.find("\"rank\":4"), std::string::npos) << log2;
  EXPECT_NE(
      other.Metrics().find("laggard_agent_step_pids_other_namespace_total{host=\"node-1\"} 1"),
      std::string::npos);

  // Read back as `laggard diagnose` reads it: rank 3's process and its
  // neighbour on cpu 1.
  laggard::Run run = testing_util::IngestPaths({logs.path()});
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  ASSERT_EQ(run.hardware.host_cpu.size(), 1u);
  EXPECT_EQ(run.hardware.host_cpu[0].rounds.size(), 2u);
  std::vector<RankHostCpu> seen = RanksOnHostCpus(run);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].rank, 3);
  EXPECT_EQ(seen[0].pid, 31);
  EXPECT_EQ(seen[0].cpus, std::vector<int32_t>{1});
  ASSERT_EQ(seen[0].neighbours.size(), 1u);
  EXPECT_EQ(seen[0].neighbours[0].cmdline, "python3 -c while True: pass");
}

class PidSink final : public StepSink {
 public:
  void OnStep(const StepReport& r, StepSource) override {
    std::lock_guard<std::mutex> lock(mu);
    pids.emplace_back(r.pid, r.pidns);
  }
  void OnBadLine(BadLine, StepSource, std::string_view) override {}
  void OnDatagram(StepSource) override {}
  std::mutex mu;
  std::vector<std::pair<std::optional<int64_t>, std::optional<uint64_t>>> pids;
};

TEST(StepIntakeCredentialsTest, AUnixReportersPidComesFromTheKernel) {
  TempDir dir;
  PidSink sink;
  StepIntake intake(sink);
  IntakeOptions o;
  o.unix_path = dir.File("steps.sock");
  ASSERT_TRUE(intake.Open(o).ok());
  intake.Start();
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, o.unix_path->c_str(), sizeof addr.sun_path - 1);
  // A pid= the line claims (another namespace's, or wrong) gives way.
  const std::string line = "laggard-step rank=1 step=1 time_s=1 pid=999999 pidns=5";
  ASSERT_EQ(
      sendto(fd, line.data(), line.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
      static_cast<ssize_t>(line.size()));
  close(fd);
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(sink.mu);
      if (!sink.pids.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  intake.Stop();
  ASSERT_EQ(sink.pids.size(), 1u);
  EXPECT_EQ(sink.pids[0].first, getpid());
  EXPECT_EQ(sink.pids[0].second, ProcPidNamespace("/"));
  // Handled without credentials (UDP), the line's own values stand.
  intake.HandleDatagram(line, StepSource::kUdp);
  EXPECT_EQ(sink.pids.back().first, 999999);
  EXPECT_EQ(sink.pids.back().second, 5u);
}

}  // namespace
}  // namespace laggard::agent
