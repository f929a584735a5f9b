// What `laggard agent` saw on a rank's cores (model/hardware.h HostCpuLog):
// the processes that are not the job's and used them, the share of them
// the hypervisor gave another guest (steal), and how fast they ran the
// agent's probe. The verdict adds it to a rank slowed by its host
// (host_contention): whom to stop or move.
//
// Records outside the job's span are left out (its steps' times, when
// logged, widened by kJobSpanSlackNs, model/hardware.h).
//
// A rank's process is the one the agent's host_proc records tie to it
// (the pid of its step reports), on the host that logged them; its cores
// are the CPUs it may run on (cpus_allowed), else those it was seen on
// (last_cpu). Its window is the span of those records: the agent lists a
// rank's process at every scan once it reported a step.
//
// The job's processes: every process tied to a rank on that host, and
// their descendants (by ppid, through the processes logged; the agent
// leaves the job's descendants out of its log). Any other process is
// a neighbour of the rank when the cores it may run on meet the rank's and
// it used at least kMinNeighbourShare of a core over the window's scans
// (its share at each scan in the window, 0 at a scan that did not list it,
// averaged over them).
//
// Steal and speed: the mean over the window's host_cpu rounds of the
// rank's cores' steal share and of their speed (the host's fastest core's
// probe over theirs).

#ifndef LAGGARD_ANALYSIS_HOST_HOST_NEIGHBOURS_H_
#define LAGGARD_ANALYSIS_HOST_HOST_NEIGHBOURS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/run.h"

namespace laggard {

// A process using a fifth of a core on a rank's cores takes a fifth of
// the time a pinned single-threaded rank could run there.
inline constexpr double kMinNeighbourShare = 0.2;

struct CpuNeighbour {
  int64_t pid = 0;
  std::string comm;
  std::string cmdline;
  double cpu_share = 0;               // of one core, mean over the rank's window, on all its cores
  std::vector<int32_t> cpus;          // the rank's cores it may run on
  std::vector<int32_t> cpus_allowed;  // all the cores it may run on
  SourceRef src;                      // its busiest record
};

struct RankHostCpu {
  int32_t rank = 0;
  std::string host;
  int64_t pid = 0;
  std::vector<int32_t> cpus;             // the rank's cores
  size_t scans = 0;                      // process scans in its window
  double window_s = 0;                   // from its first scan to its last
  std::vector<CpuNeighbour> neighbours;  // busiest first
  std::optional<double> steal;           // mean share of its cores
  std::optional<double> speed;           // mean speed of its cores (1: the host's fastest)
};

// Per rank the agent tied to a process, by rank.
std::vector<RankHostCpu> RanksOnHostCpus(const Run& run);

// `rank`'s entry, or nullptr.
const RankHostCpu* FindRankHostCpu(const std::vector<RankHostCpu>& all, int32_t rank);

// "0-3,8" for a sorted CPU list.
std::string CpuListText(const std::vector<int32_t>& cpus);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HOST_HOST_NEIGHBOURS_H_
