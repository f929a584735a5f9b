// What NCCL_DEBUG=INFO lines say about each process, gathered line by line.
// Used by the NCCL_DEBUG reader (nccl_debug.cc), which reads whole NCCL logs,
// and by the nccl-tests reader (nccl_tests.cc), whose outputs often hold
// NCCL INFO lines too.
//
// An NCCL line holds "NCCL INFO", "NCCL WARN", "NCCL TRACE" or "NCCL CALL"
// after a prefix, or is NCCL's bare banner "NCCL version 2.19.3+cuda12.2".
// The prefix is, from NCCL 2.4 on, "host:pid:tid [cudaDev] " (WARN adds
// "file.cc:123 (func) " before the level), optionally after a launcher tag
// ("[1,0]<stdout>:", "[default0]:", "node-1: ") or a timestamp; older NCCL
// printed only " [cudaDev] ". A process is (host, pid, cudaDev): one entry per
// GPU that a process drives.
//
// Rank numbers: a process usually joins several communicators (world, tensor-
// and data-parallel groups), each numbering its ranks from 0. The entry keeps
// the rank, size and connections of the largest communicator the process
// joined (the world, whose rank numbers are global); connections printed
// while a smaller communicator was set up are left out. Connections printed
// by an initialisation that never completed are kept when the process
// completed none (the interesting case of a hang).
//
// Not thread-safe; one collector per file.

#ifndef LAGGARD_INGEST_NCCL_NCCL_DEBUG_H_
#define LAGGARD_INGEST_NCCL_NCCL_DEBUG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ingest/common/text_reader.h"

namespace laggard {

// True when `line` is an NCCL log line as described above (for sniffing).
bool IsNcclLogLine(std::string_view line);

class NcclLogCollector {
 public:
  // Reads `line` when it is an NCCL line and returns true; returns false for
  // any other line, which the caller may read itself. Garbled NCCL lines
  // (a "host:pid:tid [dev]" prefix without a level, a connection or
  // communicator line whose numbers cannot be read) are counted as
  // network.bad_record and return true.
  bool Offer(std::string_view line, uint64_t line_number, ReaderContext& ctx);

  // Appends one NcclRankInfo per process, in order of its first line, to
  // ctx.out->network().nccl_ranks and returns how many. When some process
  // has no host (neither in its lines nor from the path), sets `*hostless`,
  // or, when `hostless` is null, counts network.no_host once.
  uint64_t Finish(ReaderContext& ctx, bool* hostless = nullptr);

 private:
  struct Connection {
    NcclConnection conn;
    std::optional<int32_t> comm_nranks;  // size of the communicator being set up
    bool pending = false;                // printed before its communicator was named
    bool self_is_to = false;             // "[receive]": this process is the target
  };
  struct Process {
    NcclRankInfo info;
    bool have_comm = false;
    bool any_complete = false;
    std::optional<int32_t> best_rank, best_nranks;
    std::optional<std::string> best_bus_id;
    std::optional<int32_t> setup_nranks;  // between "Init START" and "Init COMPLETE"
    std::vector<Connection> connections;
    std::map<std::string, std::vector<std::string>> nics_by_net;
    std::string last_nic_net;
    std::optional<std::string> net_named, net_from_via;
    bool gdr_seen = false, no_gdr_seen = false;
  };
  using Key = std::tuple<std::string, int64_t, int32_t>;  // host or "", pid or -1, dev or -1

  Process& ProcessFor(const std::optional<std::string>& host, std::optional<int64_t> pid,
                      std::optional<int32_t> dev, uint64_t line_number, const ReaderContext& ctx);
  void ReadInfo(Process& p, std::string_view msg, uint64_t line_number, ReaderContext& ctx);
  bool ReadComm(Process& p, std::string_view msg);
  bool ReadConnection(Process& p, std::string_view msg);
  bool ReadNics(Process& p, std::string_view msg);

  std::map<Key, size_t> index_;
  std::vector<Process> processes_;
  std::optional<std::string> banner_version_;
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_NCCL_NCCL_DEBUG_H_
