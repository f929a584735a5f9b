#include "agent/host_cpu.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

namespace laggard::agent {
namespace {

// Splits on spaces and tabs.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<uint64_t> Number(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A "cpuN ..." line: at least user nice system idle; later columns (iowait,
// irq, softirq, steal: kernels since 2.6.11) default to 0.
std::optional<CpuTicks> ParseCpuLine(const std::vector<std::string_view>& f) {
  std::optional<uint64_t> cpu = Number(f[0].substr(3));
  if (!cpu || f.size() < 5 || *cpu > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return std::nullopt;
  CpuTicks t;
  t.cpu = static_cast<int32_t>(*cpu);
  uint64_t* fields[] = {&t.user,   &t.nice, &t.system,  &t.idle,
                        &t.iowait, &t.irq,  &t.softirq, &t.steal};
  for (size_t i = 0; i < std::size(fields) && i + 1 < f.size(); ++i) {
    std::optional<uint64_t> v = Number(f[i + 1]);
    if (!v) return std::nullopt;
    *fields[i] = *v;
  }
  return t;
}

uint64_t RunWork(uint64_t iterations) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint64_t i = 0; i < iterations; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    x ^= x >> 29;
  }
  return x;
}

volatile uint64_t g_sink = 0;  // keeps the work from being optimised away

double TimeWork(uint64_t iterations) {
  auto t0 = std::chrono::steady_clock::now();
  g_sink = g_sink + RunWork(iterations);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string ReadFile(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  if (!ok) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

ProcStat ParseProcStat(std::string_view text) {
  ProcStat out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    std::vector<std::string_view> f = Fields(line);
    if (f.empty()) continue;
    if (f[0].starts_with("cpu") && f[0].size() > 3) {
      if (std::optional<CpuTicks> t = ParseCpuLine(f)) {
        out.cpus.push_back(*t);
      } else {
        ++out.parse_errors;
      }
    } else if (f[0] == "procs_running" || f[0] == "procs_blocked") {
      std::optional<uint64_t> v = f.size() == 2 ? Number(f[1]) : std::nullopt;
      if (!v) {
        ++out.parse_errors;
        continue;
      }
      (f[0] == "procs_running" ? out.procs_running : out.procs_blocked) = *v;
    }
  }
  return out;
}

HostCpu CpuDelta(const ProcStat& before, const ProcStat& now) {
  HostCpu out;
  out.procs_running = now.procs_running;
  out.procs_blocked = now.procs_blocked;
  out.parse_errors = now.parse_errors;
  std::map<int32_t, const CpuTicks*> prior;
  for (const CpuTicks& t : before.cpus) prior[t.cpu] = &t;
  for (const CpuTicks& t : now.cpus) {
    CoreSample c;
    c.cpu = t.cpu;
    auto it = prior.find(t.cpu);
    // A counter that went back (a core taken offline and back) gives no share.
    if (it != prior.end() && t.Total() > it->second->Total() &&
        t.idle + t.iowait >= it->second->idle + it->second->iowait &&
        t.steal >= it->second->steal) {
      const CpuTicks& p = *it->second;
      const double all = static_cast<double>(t.Total() - p.Total());
      const double idle = static_cast<double>((t.idle + t.iowait) - (p.idle + p.iowait));
      c.busy_ratio = std::clamp(1 - idle / all, 0.0, 1.0);
      c.steal_ratio = std::clamp(static_cast<double>(t.steal - p.steal) / all, 0.0, 1.0);
    }
    out.cores.push_back(c);
  }
  return out;
}

std::vector<int32_t> AllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int32_t> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int32_t c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

std::optional<double> ProbeCore(int32_t cpu, uint64_t iterations) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return std::nullopt;
  cpu_set_t old;
  CPU_ZERO(&old);
  if (pthread_getaffinity_np(pthread_self(), sizeof(old), &old) != 0) return std::nullopt;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0) return std::nullopt;
  const double took = TimeWork(iterations);
  pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
  return took;
}

HostCpuSampler::HostCpuSampler(std::string root, DurationNs probe_budget_ns)
    : root_(std::move(root)), probe_budget_ns_(probe_budget_ns) {}

HostCpu HostCpuSampler::Sample() {
  bool ok = false;
  std::string path = root_;
  if (!path.empty() && path.back() != '/') path += '/';
  std::string text = path.empty() ? std::string() : ReadFile(path + "proc/stat", ok);
  HostCpu out;
  if (ok) {
    ProcStat now = ParseProcStat(text);
    out = CpuDelta(previous_.value_or(ProcStat{}), now);
    previous_ = std::move(now);
  }
  if (probe_budget_ns_ <= 0) return out;
  std::vector<int32_t> cores = AllowedCores();
  if (cores.empty()) return out;
  if (iterations_ == 0) {
    // The fastest of a few timings of 20,000 steps: a preempted one is not
    // the core's speed.
    constexpr uint64_t kCalibrate = 20'000;
    double best = std::numeric_limits<double>::max();
    for (int i = 0; i < 5; ++i) best = std::min(best, TimeWork(kCalibrate));
    const double per_core_ns =
        std::max<double>(static_cast<double>(kMinProbeNs),
                         static_cast<double>(probe_budget_ns_) / static_cast<double>(cores.size()));
    iterations_ = std::max<uint64_t>(
        1, static_cast<uint64_t>(per_core_ns / (std::max(best, 1e-9) * 1e9 / kCalibrate)));
    per_round_ = std::clamp<size_t>(
        static_cast<size_t>(static_cast<double>(probe_budget_ns_) / per_core_ns), 1, cores.size());
  }
  for (size_t i = 0; i < std::min(per_round_, cores.size()); ++i) {
    const int32_t c = cores[next_++ % cores.size()];
    if (std::optional<double> s = ProbeCore(c, iterations_)) latest_[c] = *s;
  }
  next_ %= cores.size();
  if (latest_.empty()) return out;
  double fastest = std::numeric_limits<double>::max();
  for (const auto& [c, s] : latest_) fastest = std::min(fastest, s);
  for (const auto& [c, s] : latest_) {
    auto it = std::find_if(out.cores.begin(), out.cores.end(),
                           [c = c](const CoreSample& x) { return x.cpu == c; });
    if (it == out.cores.end()) {
      out.cores.push_back(CoreSample{.cpu = c});
      it = std::prev(out.cores.end());
    }
    it->probe_s = s;
    if (s > 0) it->speed_ratio = fastest / s;
  }
  std::sort(out.cores.begin(), out.cores.end(),
            [](const CoreSample& a, const CoreSample& b) { return a.cpu < b.cpu; });
  return out;
}

}  // namespace laggard::agent
