// agent_bench: the cost of `laggard agent` on a node, and how many
// concurrent scrapes /metrics takes (targets: < 0.5% of one core and
// < 30 MB RSS at 1 Hz with 8 GPUs; >= 1,000 concurrent scrapes without
// error).
//
// The real binary runs as a child process with 8 scripted GPUs
// (--fake-gpus: the NVML calls themselves are not measured; see
// docs/agent.md), sysfs of this machine, the rolling logs on, sampling at
// 1 Hz. Meanwhile this program plays the node's other parties:
//   - Prometheus: one GET /metrics per second with Accept-Encoding: gzip;
//   - 8 training ranks: one step datagram each per second over UDP.
// (a) overhead   CPU time of the agent process over --seconds (utime+stime
//                from /proc/PID/stat) as % of one core; RSS (VmRSS) at the
//                end and its peak (VmHWM)
// (b) scrapes    --concurrent connections opened at once, each one GET
//                /metrics read to the end; ok / failed, wall time and the
//                slowest; repeated --rounds times
// (c) slow       for each N of --slow-clients: N connections, each from its
//     clients    own source address (127.0.0.2, .3, ... inside 127/8), send
//                `GET /metrics HTTP/1.1\r\nHost: ...\r\n` and nothing more;
//                after 0.3 s, 5 scrapes of /metrics one after another from
//                127.0.0.1, 10 s timeout each; scrapes served, worst and
//                median latency; then the slow connections are closed
//                (docs/reliability.md, "The agent under load")
//
// Usage: agent_bench [--seconds N] [--concurrent N] [--rounds N]
//                    [--slow-clients N[,N...]] [--binary PATH]
//                    [--agent-arg ARG ...]   one more agent flag each (e.g.
//                                            --agent-arg --cpu-probe --agent-arg 0)

#include <arpa/inet.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench_child.h"
#include "http_probe.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;

struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child Spawn(const std::string& binary, const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

std::string FirstLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  return line;
}

int PortAfter(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  return at == std::string::npos ? 0 : std::atoi(text.c_str() + at + marker.size());
}

// utime + stime of `pid` in seconds.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close_paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 3.. after "pid (comm)"
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

long StatusKb(pid_t pid, const std::string& key) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atol(line.c_str() + key.size() + 1);
  }
  return -1;
}

std::string EightGpus() {
  std::string gpus;
  for (int i = 0; i < 8; ++i) {
    gpus += fmt::format(
        R"({}{{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-bench-{}", "bus_id": "00000000:{:02x}:00.0",
  "fields": {{"temp_c": [{{"from_s": 0, "value": 40, "to_value": 70}}, {{"from_s": 600, "value": 70}}],
   "sm_clock_mhz": 1980, "sm_clock_max_mhz": 1980, "mem_clock_mhz": 2619, "mem_clock_max_mhz": 2619,
   "power_w": 650.5, "power_limit_w": 700, "power_limit_default_w": 700, "util_pct": 98,
   "mem_util_pct": 40, "pcie_gen": 5, "pcie_gen_max": 5, "pcie_width": 16, "pcie_width_max": 16,
   "pcie_tx_kb_s": 1200, "pcie_rx_kb_s": 3400, "clock_events": 0, "ecc_uncorrected_volatile": 0}},
  "nvlinks": 18}})",
        i == 0 ? "" : ",\n", i, 0x18 + i * 0x10);
  }
  return "{\"gpus\": [\n" + gpus + "]}\n";
}

// "8,16,200" -> {8, 16, 200}. An entry that is not a positive count is
// reported and left out.
std::vector<int> ParseCounts(const std::string& list) {
  std::vector<int> counts;
  std::istringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    errno = 0;
    long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || n < 1 || n > 1'000'000) {
      std::fprintf(stderr, "agent_bench: --slow-clients: \"%s\" is not a count from 1 to 1000000\n",
                   item.c_str());
      continue;
    }
    counts.push_back(static_cast<int>(n));
  }
  return counts;
}

// The i-th slow client's source address: 127.0.0.2 upwards, counting through
// the 24 host bits of 127/8 and wrapping before 127.255.255.255.
std::string SlowSource(int i) {
  constexpr uint32_t kFirst = 2, kHosts = (1u << 24) - 1 - kFirst;  // 127.0.0.2 .. 127.255.255.254
  uint32_t host = kFirst + static_cast<uint32_t>(i) % kHosts;
  return fmt::format("127.{}.{}.{}", host >> 16, (host >> 8) & 0xff, host & 0xff);
}

// Part (c): `n` slow clients held open while 5 scrapes follow one another.
void SlowClients(int http, int n) {
  std::vector<int> slow;
  slow.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::string source = SlowSource(i);
    int fd = probe::SlowClient(http, source.c_str());
    if (fd < 0) {
      std::printf("(c) %d slow clients: connection %d (from %s) failed: %s; skipped\n", n, i + 1,
                  source.c_str(), std::strerror(errno));
      for (int open : slow) close(open);
      return;
    }
    slow.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  constexpr int kScrapes = 5;
  std::vector<double> latency_s;
  int served = 0;
  std::string first_error;
  for (int i = 0; i < kScrapes; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    probe::HttpResult r = probe::Get(http, "/metrics", 10000);
    latency_s.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (r.status == 200 && r.body.find("laggard_gpu_temp_celsius") != std::string::npos) {
      ++served;
    } else if (first_error.empty()) {
      first_error = r.error.empty() ? fmt::format("status {}", r.status) : r.error;
    }
  }
  for (int fd : slow) close(fd);
  std::sort(latency_s.begin(), latency_s.end());
  std::printf("(c) %d slow clients: %d/%d scrapes served%s%s, worst %.3f s, median %.3f s\n", n,
              served, kScrapes, first_error.empty() ? "" : ", first error: ", first_error.c_str(),
              latency_s.back(), latency_s[kScrapes / 2]);
}

int Main(int argc, char** argv) {
  int seconds = 60, concurrent = 1000, rounds = 3;
  std::vector<int> slow_clients{8, 16, 200};
  std::string binary = LAGGARD_BINARY;
  std::vector<std::string> extra;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--seconds") seconds = std::atoi(argv[i + 1]);
    else if (a == "--concurrent") concurrent = std::atoi(argv[i + 1]);
    else if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (a == "--slow-clients") slow_clients = ParseCounts(argv[i + 1]);
    else if (a == "--binary") binary = argv[i + 1];
    else if (a == "--agent-arg") extra.emplace_back(argv[i + 1]);
  }
  std::string dir = bench::MakeTempDir("laggard-agent-bench");
  if (dir.empty()) return 1;
  std::ofstream(dir + "/gpus.json") << EightGpus();
  std::vector<std::string> args = {"agent",      "--listen",    "127.0.0.1:0",
                                   "--udp",      "127.0.0.1:0", "--interval",
                                   "1s",         "--fake-gpus", dir + "/gpus.json",
                                   "--log-dir",  dir + "/logs", "--host",
                                   "bench-node", "--job",       "bench"};
  args.insert(args.end(), extra.begin(), extra.end());
  Child child = Spawn(binary, args);
  std::string banner = FirstLine(child.out);
  int http = PortAfter(banner, "http://127.0.0.1:");
  int udp = PortAfter(banner, "steps on udp 127.0.0.1:");
  if (http == 0 || udp == 0) {
    std::fprintf(stderr, "agent did not start: %s\n", banner.c_str());
    return 1;
  }
  std::printf("agent_bench: %s, load %s, %u cores\n", bench::CpuModel().c_str(),
              bench::LoadAverage().c_str(), std::thread::hardware_concurrency());
  std::printf("agent: 8 scripted GPUs, 1 Hz sampling, logs on, this machine's sysfs\n\n");

  int sock = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(udp));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int64_t step = 0;
  size_t body_bytes = 0;
  int scrape_failures = 0;
  auto one_second = [&] {
    auto t0 = std::chrono::steady_clock::now();
    for (int rank = 0; rank < 8; ++rank) {
      std::string line = fmt::format(
          "laggard-step rank={} step={} time_s=0.81 compute_s=0.62 gpu={}", rank, step, rank);
      sendto(sock, line.data(), line.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
    }
    ++step;
    probe::HttpResult r = probe::Get(http, "/metrics", 5000, "Accept-Encoding: gzip\r\n");
    if (r.status != 200) ++scrape_failures;
    body_bytes = r.body.size();
    std::this_thread::sleep_until(t0 + std::chrono::seconds(1));
  };
  for (int i = 0; i < 3; ++i) one_second();  // warm-up: first rounds, first allocations
  double cpu0 = ProcessCpuSeconds(child.pid);
  auto wall0 = std::chrono::steady_clock::now();
  for (int i = 0; i < seconds; ++i) one_second();
  double cpu1 = ProcessCpuSeconds(child.pid);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  long rss = StatusKb(child.pid, "VmRSS"), hwm = StatusKb(child.pid, "VmHWM");
  std::printf("(a) overhead over %.0f s: CPU %.3f s = %.3f%% of one core (target < 0.5%%)\n", wall,
              cpu1 - cpu0, 100.0 * (cpu1 - cpu0) / wall);
  std::printf(
      "    RSS %.1f MB, peak %.1f MB (target < 30 MB); /metrics %zu bytes gzipped, %d scrape "
      "failures\n\n",
      rss / 1024.0, hwm / 1024.0, body_bytes, scrape_failures);

  for (int round = 1; round <= rounds; ++round) {
    probe::ConcurrentResult r =
        probe::GetConcurrently(http, "/metrics", concurrent, "laggard_gpu_temp_celsius");
    std::printf(
        "(b) round %d: %d concurrent scrapes: %d ok, %d failed%s%s, %.2f s, slowest %.2f s\n",
        round, concurrent, r.ok, r.failed,
        r.first_error.empty() ? "" : ", first error: ", r.first_error.c_str(), r.seconds,
        r.max_latency_s);
  }
  std::printf("    RSS after: %.1f MB, peak %.1f MB\n\n", StatusKb(child.pid, "VmRSS") / 1024.0,
              StatusKb(child.pid, "VmHWM") / 1024.0);

  for (int n : slow_clients) SlowClients(http, n);
  if (!slow_clients.empty()) {
    std::printf("    RSS after: %.1f MB, peak %.1f MB\n", StatusKb(child.pid, "VmRSS") / 1024.0,
                StatusKb(child.pid, "VmHWM") / 1024.0);
  }

  kill(child.pid, SIGTERM);
  int status = 0;
  waitpid(child.pid, &status, 0);
  std::printf("\nagent exit after SIGTERM: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  close(sock);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}

}  // namespace
}  // namespace laggard

int main(int argc, char** argv) { return laggard::Main(argc, argv); }
