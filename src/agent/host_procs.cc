#include "agent/host_procs.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

#include "base/file.h"
#include "base/text.h"

namespace laggard::agent {

std::optional<PidStat> ParsePidStat(std::string_view line) {
  // "pid (comm) state ppid ..." : utime and stime are fields 14 and 15,
  // processor field 39 (proc(5)), counted from pid as field 1.
  size_t open = line.find(" (");
  size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open + 2 ||
      !IsDigit(line.front()))
    return std::nullopt;
  std::optional<int64_t> pid = ParseInt<int64_t>(line.substr(0, open));
  if (!pid || *pid <= 0) return std::nullopt;
  std::vector<std::string_view> f = SplitBlanks(line.substr(close + 1));
  // f[0] is field 3 (state): field k is f[k - 3].
  if (f.size() < 13) return std::nullopt;
  std::optional<uint64_t> utime = ParseInt<uint64_t>(f[11]);
  std::optional<uint64_t> stime = ParseInt<uint64_t>(f[12]);
  std::optional<int64_t> ppid = ParseInt<int64_t>(f[1]);
  if (!utime || !stime || !ppid || *ppid < 0 ||
      *utime > std::numeric_limits<uint64_t>::max() - *stime)
    return std::nullopt;
  PidStat out;
  out.pid = *pid;
  out.ppid = *ppid;
  out.comm = Printable(line.substr(open + 2, close - open - 2), 64);
  out.cpu_ticks = *utime + *stime;
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

ProcScanner::ProcScanner(std::string root, double min_share, size_t max_listed)
    : min_share_(min_share), max_listed_(max_listed) {
  proc_ = std::move(root);
  if (!proc_.empty() && proc_.back() != '/') proc_ += '/';
  proc_ += "proc/";
  long hz = sysconf(_SC_CLK_TCK);
  ticks_per_s_ = hz > 0 ? static_cast<double>(hz) : 100;
}

ProcScan ProcScanner::Scan(double now_s, const std::set<int64_t>& always) {
  ProcScan out;
  std::map<int64_t, uint64_t> ticks;
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
      ticks[st->pid] = st->cpu_ticks;
      double share = -1;
      auto it = previous_ticks_.find(st->pid);
      if (previous_s_ && now_s > *previous_s_ && it != previous_ticks_.end() &&
          st->cpu_ticks >= it->second) {
        share =
            static_cast<double>(st->cpu_ticks - it->second) / ticks_per_s_ / (now_s - *previous_s_);
      }
      seen.emplace_back(std::move(*st), share);
    }
    closedir(dir);
  }
  previous_ticks_ = std::move(ticks);
  previous_s_ = now_s;
  std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first.pid < b.first.pid;
  });
  size_t busy = 0;
  for (auto& [st, share] : seen) {
    const bool wanted = always.count(st.pid) > 0;
    const bool busiest = share >= min_share_ && busy < max_listed_;
    if (!wanted && !busiest) continue;
    if (share < 0) continue;  // new since the previous scan: no share yet
    if (busiest) ++busy;
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
