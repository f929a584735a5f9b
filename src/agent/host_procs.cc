#include "agent/host_procs.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

#include "base/file.h"
#include "base/process.h"
#include "base/text.h"

namespace laggard::agent {

std::optional<PidStat> ParsePidStat(std::string_view line) {
  // "pid (comm) state ppid ...": ppid is field 4, utime and stime 14 and
  // 15, starttime 22, processor 39 (proc(5)), counted from pid as field 1.
  size_t open = line.find(" (");
  size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open + 2 ||
      !IsDigit(line.front()))
    return std::nullopt;
  std::optional<int64_t> pid = ParseInt<int64_t>(line.substr(0, open));
  if (!pid || *pid <= 0) return std::nullopt;
  std::vector<std::string_view> f = SplitBlanks(line.substr(close + 1));
  // f[0] is field 3 (state): field k is f[k - 3].
  if (f.size() < 20) return std::nullopt;
  std::optional<uint64_t> utime = ParseInt<uint64_t>(f[11]);
  std::optional<uint64_t> stime = ParseInt<uint64_t>(f[12]);
  std::optional<int64_t> ppid = ParseInt<int64_t>(f[1]);
  std::optional<uint64_t> start = ParseInt<uint64_t>(f[19]);
  if (!utime || !stime || !ppid || *ppid < 0 || !start ||
      *utime > std::numeric_limits<uint64_t>::max() - *stime)
    return std::nullopt;
  PidStat out;
  out.pid = *pid;
  out.ppid = *ppid;
  out.comm = Printable(line.substr(open + 2, close - open - 2), 64);
  out.cpu_ticks = *utime + *stime;
  out.start_ticks = *start;
  if (f.size() > 36) {
    std::optional<int32_t> cpu = ParseInt<int32_t>(f[36]);
    if (cpu && *cpu >= 0) out.processor = cpu;
  }
  return out;
}

std::string CmdlineText(std::string_view raw, size_t max_len) {
  while (!raw.empty() && raw.back() == '\0') raw.remove_suffix(1);
  std::string joined(raw);
  std::replace(joined.begin(), joined.end(), '\0', ' ');
  return Printable(joined, max_len);
}

std::optional<std::string> CpusAllowedList(std::string_view status) {
  constexpr std::string_view kKey = "Cpus_allowed_list:";
  size_t at = status.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = status.substr(at + kKey.size());
  rest = Trim(rest.substr(0, rest.find('\n')));
  if (rest.empty() || rest.size() > 1024) return std::nullopt;
  return std::string(rest);
}

std::optional<uint64_t> ParseNamespaceLink(std::string_view link) {
  if (!link.starts_with("pid:[") || !link.ends_with("]")) return std::nullopt;
  std::optional<uint64_t> v = ParseInt<uint64_t>(link.substr(5, link.size() - 6));
  if (!v || *v == 0 || link[5] == '+') return std::nullopt;
  return v;
}

std::optional<uint64_t> ProcPidNamespace(const std::string& root) {
  std::string path = root == "/" || root.empty() ? "/proc/self/ns/pid" : root + "/proc/1/ns/pid";
  char buf[128];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return std::nullopt;
  return ParseNamespaceLink(std::string_view(buf, static_cast<size_t>(n)));
}

ProcScanner::ProcScanner(std::string root, double min_share, size_t max_listed)
    : min_share_(min_share), max_listed_(max_listed) {
  proc_ = std::move(root);
  if (!proc_.empty() && proc_.back() != '/') proc_ += '/';
  proc_ += "proc/";
  long hz = sysconf(_SC_CLK_TCK);
  ticks_per_s_ = hz > 0 ? static_cast<double>(hz) : 100;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  cores_ = online > 0 ? static_cast<double>(online) : 1;
}

ProcScan ProcScanner::Scan(double now_s, const std::set<int64_t>& job) {
  ProcScan out;
  std::map<int64_t, std::pair<uint64_t, uint64_t>> now;
  std::vector<std::pair<PidStat, double>> seen;  // with the share, when known (-1 not)
  if (DIR* dir = opendir(proc_.c_str())) {
    while (dirent* e = readdir(dir)) {
      std::optional<int64_t> pid = ParseInt<int64_t>(e->d_name);
      if (!pid || *pid <= 0) continue;
      std::optional<std::string> text = ReadFileUpTo(proc_ + e->d_name + "/stat", 4096);
      if (!text) continue;  // exited since the directory was read
      ++out.processes;
      std::optional<PidStat> st = ParsePidStat(Trim(*text));
      if (!st || st->pid != *pid) {
        ++out.parse_errors;
        continue;
      }
      now[st->pid] = {st->cpu_ticks, st->start_ticks};
      double share = -1;
      auto it = previous_.find(st->pid);
      if (previous_s_ && now_s > *previous_s_ && it != previous_.end() &&
          it->second.second == st->start_ticks && st->cpu_ticks >= it->second.first) {
        share = std::min(cores_, static_cast<double>(st->cpu_ticks - it->second.first) /
                                     ticks_per_s_ / (now_s - *previous_s_));
      }
      seen.emplace_back(std::move(*st), share);
    }
    closedir(dir);
  }
  previous_ = std::move(now);
  previous_s_ = now_s;
  // The job's descendants, by their parents (a chain of at most 64).
  std::map<int64_t, int64_t> parent;
  for (const auto& [st, share] : seen) parent[st.pid] = st.ppid;
  std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first.pid < b.first.pid;
  });
  size_t busy = 0;
  for (auto& [st, share] : seen) {
    if (share < 0) continue;  // new since the previous scan: no share yet
    const bool mine = job.count(st.pid) > 0;
    if (!mine) {
      if (share < min_share_ || busy >= max_listed_ || DescendsFrom(st.pid, parent, job)) continue;
      ++busy;
    }
    ProcSample s;
    s.pid = st.pid;
    s.ppid = st.ppid;
    s.comm = std::move(st.comm);
    s.cpu_share = share;
    s.last_cpu = st.processor;
    const std::string dir = proc_ + std::to_string(st.pid);
    if (auto cmd = ReadFileUpTo(dir + "/cmdline", 4096)) s.cmdline = CmdlineText(*cmd);
    if (auto status = ReadFileUpTo(dir + "/status", 16384))
      s.cpus_allowed = CpusAllowedList(*status);
    out.listed.push_back(std::move(s));
  }
  return out;
}

}  // namespace laggard::agent
