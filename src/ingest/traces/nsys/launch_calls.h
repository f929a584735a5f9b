// The CUDA runtime API calls of an nsys export by (process, correlationId),
// read in one sequential scan of CUPTI_ACTIVITY_KIND_RUNTIME: the launch call
// of a kernel, memcpy or memset row is the runtime call with its
// correlationId in the same process (CUPTI numbers correlations per process).
//
// nsys writes no index on correlationId. Joining in SQL makes SQLite group
// and index the whole runtime table first (a sort of every row); here the
// calls go into a table indexed by correlationId, dense per process where the
// ids are (CUPTI counts them up from 1), sorted for the rest.

#ifndef LAGGARD_INGEST_TRACES_NSYS_LAUNCH_CALLS_H_
#define LAGGARD_INGEST_TRACES_NSYS_LAUNCH_CALLS_H_

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ingest/traces/nsys/sqlite_db.h"

namespace laggard::nsys_sqlite {

class LaunchCalls {
 public:
  // Reads the runtime table `table` of `db`: correlationId and start, and
  // the process (globalTid bits 24-55) when `by_pid`. `rows_hint`: about how
  // many rows it has (its largest rowid, bounded by the file size), which
  // bounds the dense table: 2 x rows_hint + 65,536 entries of 8 bytes at most.
  QueryResult Read(sqlite3* db, const std::string& table, bool by_pid, uint64_t rows_hint);

  bool by_pid() const { return by_pid_; }
  uint64_t calls() const { return calls_; }

  // The earliest start of a call with `correlation` in process `pid`:
  // nullopt when none, or when the calls carry processes and `pid` is
  // nullopt (an op with no globalPid matches no process).
  std::optional<int64_t> Find(std::optional<int64_t> pid, int64_t correlation) const;
  // The earliest start of a call with `correlation` in any process (for
  // tables without a globalPid column).
  std::optional<int64_t> FindAnyProcess(int64_t correlation) const;

 private:
  static constexpr int64_t kNone = INT64_MAX;
  struct Call {
    uint32_t process = 0;
    int64_t correlation = 0;
    int64_t start = 0;
  };

  std::optional<uint32_t> ProcessIndex(int64_t pid) const;
  uint32_t AddProcess(int64_t pid);
  void Add(uint32_t process, int64_t correlation, int64_t start);
  std::optional<int64_t> FindIn(uint32_t process, int64_t correlation) const;

  bool by_pid_ = false;
  uint64_t calls_ = 0;
  uint64_t rows_hint_ = 0;
  bool reserved_ = false;
  uint64_t dense_budget_ = 0;  // dense entries left, over all processes
  std::unordered_map<int64_t, uint32_t> process_of_pid_;
  int64_t last_pid_ = 0;
  uint32_t last_process_ = UINT32_MAX;
  // Per process index: the earliest start by correlationId (kNone: none).
  std::vector<std::vector<int64_t>> dense_;
  // Calls past the dense range, sorted by (process, correlation), one per
  // pair (the earliest).
  std::vector<Call> sparse_;
};

}  // namespace laggard::nsys_sqlite

#endif  // LAGGARD_INGEST_TRACES_NSYS_LAUNCH_CALLS_H_
