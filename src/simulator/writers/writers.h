// Internal to the simulator: the writers of one run directory (one file per
// format family) and what they share. See run_writer.h for the layout.

#ifndef LAGGARD_SIMULATOR_WRITERS_WRITERS_H_
#define LAGGARD_SIMULATOR_WRITERS_WRITERS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/status.h"
#include "simulator/cluster/cluster.h"
#include "simulator/run_writer.h"

namespace laggard::sim {

// A file built in memory and written at Close().
class OutFile {
 public:
  explicit OutFile(std::string path) : path_(std::move(path)) {}
  fmt::memory_buffer& buf() { return buf_; }
  template <typename... Args>
  void Print(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(fmt::appender(buf_), f, std::forward<Args>(args)...);
  }
  void Raw(std::string_view s) { buf_.append(s.data(), s.data() + s.size()); }
  // Writes the file; adds its size to *bytes.
  Status Close(uint64_t* bytes);

 private:
  std::string path_;
  fmt::memory_buffer buf_;
};

// UTC calendar time of an instant.
struct Civil {
  int year, month, day, hour, minute, second, millis, weekday;  // weekday 0 = Sunday
};
Civil ToCivil(int64_t ns);

// What every writer needs.
struct RunContext {
  const ClusterRun& run;
  const RunOutputOptions& opt;
  std::string dir;
  int64_t job_start_ns = 0;  // true clock: the first step's start on rank 0
  int64_t job_end_ns = 0;    // true clock: the last step's end on rank 0
  int64_t host_ns(int node, int64_t true_ns) const {
    return true_ns + run.clock_offsets_ns()[static_cast<size_t>(node)];
  }
};

// PCI bus id of GPU i ("18" in 00000000:18:00.0), as on an HGX H100 board.
int GpuBusId(int gpu);
std::string HostIp(int node);  // eth0 address of a host

// nvidia_smi_writer.cc: <host>/nvidia-smi-{dmon.txt,query.csv,q.txt,topo.txt,nvlink.txt}
Status WriteNvidiaSmiFiles(const RunContext& ctx, int node, uint64_t* bytes, int* files);
// network_writer.cc: <host>/ibstat.txt, <host>/ethtool-eth0.txt; switch-map.csv
Status WriteNetworkFiles(const RunContext& ctx, int node, uint64_t* bytes, int* files);
Status WriteSwitchMap(const RunContext& ctx, uint64_t* bytes, int* files);
// nccl_writer.cc: nccl-tests/*.txt (task `index` of NcclTestCount()), nccl-debug.log
int NcclTestCount(const ClusterRun& run, const RunOutputOptions& opt);
Status WriteNcclTest(const RunContext& ctx, int index, uint64_t* bytes, int* files);
Status WriteNcclDebug(const RunContext& ctx, uint64_t* bytes, int* files);
// truth_writer.cc: truth.json
Status WriteTruth(const RunContext& ctx, uint64_t* bytes, int* files);
std::string Headline(const ClusterRun& run);

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_WRITERS_WRITERS_H_
