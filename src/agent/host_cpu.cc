#include "agent/host_cpu.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <map>
#include <system_error>
#include <thread>

#include "base/file.h"
#include "base/text.h"

namespace laggard::agent {
namespace {

// A "cpuN ..." line: at least user nice system idle; later columns (iowait,
// irq, softirq, steal: kernels since 2.6.11) default to 0. guest and
// guest_nice are already in user and nice, so not added.
std::optional<CpuTicks> ParseCpuLine(const std::vector<std::string_view>& f) {
  std::optional<uint64_t> cpu = ParseInt<uint64_t>(f[0].substr(3));
  if (!cpu || f.size() < 5 || *cpu > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return std::nullopt;
  CpuTicks t;
  t.cpu = static_cast<int32_t>(*cpu);
  uint64_t* fields[] = {&t.user,   &t.nice, &t.system,  &t.idle,
                        &t.iowait, &t.irq,  &t.softirq, &t.steal};
  for (size_t i = 0; i < std::size(fields) && i + 1 < f.size(); ++i) {
    std::optional<uint64_t> v = ParseInt<uint64_t>(f[i + 1]);
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
    asm volatile("" : "+r"(x));  // each step done, in the timed span
  }
  return x;
}

volatile uint64_t g_sink = 0;  // keeps the work from being optimised away

double TimeWork(uint64_t iterations) {
  auto t0 = std::chrono::steady_clock::now();
  g_sink = g_sink + RunWork(iterations);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

ProcStat ParseProcStat(std::string_view text) {
  ProcStat out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    std::vector<std::string_view> f = SplitBlanks(line);
    if (f.empty()) continue;
    if (f[0].starts_with("cpu") && f[0].size() > 3) {
      if (std::optional<CpuTicks> t = ParseCpuLine(f)) {
        out.cpus.push_back(*t);
      } else {
        ++out.parse_errors;
      }
    } else if (f[0] == "procs_running" || f[0] == "procs_blocked") {
      std::optional<uint64_t> v = f.size() == 2 ? ParseInt<uint64_t>(f[1]) : std::nullopt;
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

namespace {

// A CPU set sized for this machine's possible CPUs (more than CPU_SETSIZE
// on the largest hosts).
class CpuSet {
 public:
  CpuSet()
      : count_(std::max<long>(CPU_SETSIZE, sysconf(_SC_NPROCESSORS_CONF))),
        set_(CPU_ALLOC(count_)),
        size_(CPU_ALLOC_SIZE(count_)) {
    if (set_ != nullptr) CPU_ZERO_S(size_, set_);
  }
  ~CpuSet() {
    if (set_ != nullptr) CPU_FREE(set_);
  }
  CpuSet(const CpuSet&) = delete;
  CpuSet& operator=(const CpuSet&) = delete;
  cpu_set_t* get() { return set_; }
  size_t size() const { return size_; }
  long count() const { return count_; }

 private:
  long count_;
  cpu_set_t* set_;
  size_t size_;
};

}  // namespace

std::vector<int32_t> AllowedCores() {
  // The process's (its main thread's) mask: the agent's own threads are
  // never pinned (the probe runs on a thread of its own).
  CpuSet set;
  std::vector<int32_t> out;
  if (set.get() == nullptr || sched_getaffinity(getpid(), set.size(), set.get()) != 0) return out;
  for (long c = 0; c < set.count(); ++c) {
    if (CPU_ISSET_S(c, set.size(), set.get())) out.push_back(static_cast<int32_t>(c));
  }
  return out;
}

std::map<int32_t, double> ProbeCores(const std::vector<int32_t>& cores, uint64_t iterations) {
  std::map<int32_t, double> out;
  // A thread of its own, pinned to each core in turn and then gone: no
  // agent thread keeps a pinned (user-requested) mask.
  try {
    std::thread probe([&] {
      for (int32_t cpu : cores) {
        CpuSet one;
        if (cpu < 0 || cpu >= one.count() || one.get() == nullptr) continue;
        CPU_SET_S(cpu, one.size(), one.get());
        if (pthread_setaffinity_np(pthread_self(), one.size(), one.get()) != 0) continue;
        // Untimed first: a core woken from sleep, or at a low clock, runs
        // its first microseconds slower than its speed.
        g_sink = g_sink + RunWork(iterations / 4 + 1);
        out[cpu] = TimeWork(iterations);
      }
    });
    probe.join();
  } catch (const std::system_error&) {  // no thread to spare: no probe this round
    out.clear();
  }
  return out;
}

HostCpuSampler::HostCpuSampler(std::string root, DurationNs probe_budget_ns)
    : root_(std::move(root)), probe_budget_ns_(probe_budget_ns) {}

void HostCpuSampler::Calibrate() {
  // Doubled until one run takes >= 200 us on this clock, then the fastest
  // of three: a preempted run is not the core's speed.
  uint64_t n = 20'000;
  double took = TimeWork(n);
  while (took < 200e-6 && n < (uint64_t{1} << 40)) {
    n *= 2;
    took = TimeWork(n);
  }
  for (int i = 0; i < 2; ++i) took = std::min(took, TimeWork(n));
  ns_per_step_ = std::max(took * 1e9 / static_cast<double>(n), 1e-3);
}

HostCpu HostCpuSampler::Sample() {
  std::string path = root_;
  if (!path.empty() && path.back() != '/') path += '/';
  std::optional<std::string> text =
      path.empty() ? std::nullopt : ReadFileUpTo(path + "proc/stat", 1 << 20);
  HostCpu out;
  if (text) {
    ProcStat now = ParseProcStat(*text);
    out = CpuDelta(previous_.value_or(ProcStat{}), now);
    previous_ = std::move(now);
  }
  if (probe_budget_ns_ <= 0) return out;
  std::vector<int32_t> cores = AllowedCores();
  if (cores.empty()) return out;
  if (ns_per_step_ <= 0) Calibrate();
  // Each round from the cores allowed now: their number sets the work per
  // probe and how many a round takes.
  const double per_core_ns =
      std::max<double>(static_cast<double>(kMinProbeNs),
                       static_cast<double>(probe_budget_ns_) / static_cast<double>(cores.size()));
  const uint64_t iterations =
      std::clamp<uint64_t>(static_cast<uint64_t>(per_core_ns / ns_per_step_), 1, kMaxProbeSteps);
  if (iterations != iterations_) latest_.clear();  // other work: not comparable
  iterations_ = iterations;
  std::erase_if(latest_, [&](const auto& e) {
    return !std::binary_search(cores.begin(), cores.end(), e.first);
  });
  const size_t per_round = std::clamp<size_t>(
      static_cast<size_t>(static_cast<double>(probe_budget_ns_) / per_core_ns), 1, cores.size());
  // The next cores after the last one probed, wrapping.
  auto from = std::upper_bound(cores.begin(), cores.end(), last_probed_);
  std::vector<int32_t> take;
  for (size_t i = 0; i < per_round; ++i) {
    if (from == cores.end()) from = cores.begin();
    take.push_back(*from++);
  }
  last_probed_ = take.back();
  for (const auto& [c, s] : ProbeCores(take, iterations_)) latest_[c] = s;
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
