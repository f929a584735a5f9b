// The processes of the host and the CPU they use: who shares a rank's cores
// (interference from outside the job: another job, a runaway script, a
// neighbour's daemon on the rank's host).
//
//   <root>/proc/<pid>/stat     comm, ppid, utime + stime (USER_HZ ticks, all its
//                              threads), starttime and processor (the CPU
//                              its main thread ran on last)
//   <root>/proc/<pid>/status   Cpus_allowed_list (the cores it may run on)
//   <root>/proc/<pid>/cmdline  its arguments, NUL-separated
//
// Each Scan() reads every process's stat and puts its CPU time since the
// previous scan over the wall time between them: its share of a core (2.0:
// two cores' worth; at most the host's online cores). Every process in
// `job` (the job's ranks, by the pid their step reports carry) is listed;
// their descendants (a data loader's workers, a compile pool) are the
// job's too and are not; of the others, the busiest (at least min_share of
// a core, at most max_listed of them) are listed, with their allowed cores
// and command line. A process is listed from its second scan; a pid whose
// start time changed is a new process of the same pid.
//
// A process that exits between the directory read and its files is left
// out; a stat line that does not parse is counted in ProcScan::parse_errors.
// Nothing here throws.
//
// Thread-safety: one ProcScanner per sampling thread (it keeps the
// previous scan's counters).

#ifndef LAGGARD_AGENT_HOST_PROCS_H_
#define LAGGARD_AGENT_HOST_PROCS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace laggard::agent {

// One /proc/<pid>/stat line's fields that the scan reads.
struct PidStat {
  int64_t pid = 0;
  int64_t ppid = 0;
  std::string comm;
  uint64_t cpu_ticks = 0;    // utime + stime
  uint64_t start_ticks = 0;  // starttime: since boot
  std::optional<int32_t> processor;
};

// nullopt when the line is not "pid (comm) state ..." with at least the
// columns up to starttime. comm may hold spaces and parentheses: it ends at
// the last ')'.
std::optional<PidStat> ParsePidStat(std::string_view line);

// The command line of /proc/<pid>/cmdline: arguments joined by one space,
// bytes that are not printable ASCII as '?', cut to max_len characters
// ("..." added). Empty for a kernel thread.
std::string CmdlineText(std::string_view raw, size_t max_len = 200);

// "Cpus_allowed_list:\t0-3,8" of /proc/<pid>/status, as the list's text.
std::optional<std::string> CpusAllowedList(std::string_view status);

struct ProcSample {
  int64_t pid = 0;
  int64_t ppid = 0;  // a rank's data loader workers are its children
  std::string comm;
  std::string cmdline;
  double cpu_share = 0;                     // of one core, since the previous scan
  std::optional<std::string> cpus_allowed;  // Linux list format, "0-3,8"
  std::optional<int32_t> last_cpu;
};

struct ProcScan {
  std::vector<ProcSample> listed;  // by share, the job's and the busiest others
  uint64_t processes = 0;          // stat files read
  uint64_t parse_errors = 0;
};

// The inode of the PID namespace whose processes <root>/proc lists: this
// process's own (/proc/self/ns/pid) for root "/", else that of the tree's
// pid 1; nullopt when the link cannot be read.
std::optional<uint64_t> ProcPidNamespace(const std::string& root);
// "pid:[4026531836]" -> 4026531836.
std::optional<uint64_t> ParseNamespaceLink(std::string_view link);

class ProcScanner {
 public:
  // `root`: "/" in production, a fake tree in tests.
  explicit ProcScanner(std::string root, double min_share = 0.1, size_t max_listed = 8);
  // `now_s`: a steady clock's reading in seconds (shares are over the time
  // since the previous Scan); `job`: the job's pids, listed whatever their
  // share.
  ProcScan Scan(double now_s, const std::set<int64_t>& job);

 private:
  std::string proc_;  // root + "proc/"
  double min_share_;
  size_t max_listed_;
  double ticks_per_s_;
  double cores_;  // online: no process uses more
  std::optional<double> previous_s_;
  std::map<int64_t, std::pair<uint64_t, uint64_t>> previous_;  // pid -> (ticks, start)
};

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_HOST_PROCS_H_
