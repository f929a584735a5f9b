// Ingest: turns the paths a user gives into a Run.
//
// Directories are walked recursively (sorted, hidden entries skipped, no
// directory symlinks followed). Each file is sniffed by content (its first
// kSniffBytes, decompressed) and read by the most confident reader; files no
// reader takes are listed as skipped, never fatal. Files are read in
// parallel, one file per thread at a time, and merged in path order so the
// result does not depend on scheduling.

#ifndef LAGGARD_INGEST_INGEST_H_
#define LAGGARD_INGEST_INGEST_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ingest/common/text_reader.h"
#include "ingest/traces/common/trace_reader.h"
#include "model/run.h"

namespace laggard {

struct IngestOptions {
  // PCRE2 pattern applied to a file's full path to find its rank: the group
  // named `rank`, else group 1. When unset, the built-in patterns
  // (rank3, rank-3, rank_3, worker3, ... in the file name, then in its
  // directories) are used.
  std::optional<std::string> rank_from;
  // A file that maps input files to ranks, one `PATH RANK` per line (or
  // `PATH,RANK`; # comments): PATH is a file as listed, or its name, or the
  // end of its path after a '/'; the longest match wins. It gives a file's
  // rank where the content names none, before rank_from and the built-in
  // patterns. A malformed line fails the whole ingest.
  std::optional<std::string> file_ranks;
  // PCRE2 pattern applied to a file's full path to find its host (GPU,
  // network and trace data that do not name one): the group named `host`,
  // else group 1, else the whole match. When unset, the nearest directory
  // below a given input directory that is not a data-kind folder (logs/,
  // nvidia_smi/, ...) or a rank folder names the host: run/node-01/dmon.txt.
  std::optional<std::string> host_from;
  // The name of the ranges that mark a training step in profiler traces,
  // instead of ProfilerStep#N (Kineto) or the built-in NVTX step names
  // (nsys): ingest/traces/common/step_marker.h.
  std::optional<std::string> step_marker;
  // Device kernels that communicate though their names say nothing of NCCL
  // / RCCL (a custom all-reduce, NVSHMEM, DeepEP): substrings of their names,
  // any case (ingest/traces/common/kernel_names.h).
  std::vector<std::string> comm_kernels;
  int threads = 0;  // 0: one per core; files read at once
  // When fewer files are read at once than there are cores, a gzip input
  // is decoded on a helper thread ahead of its reader (Decode::kAhead):
  // more CPU in all (the decoded bytes are copied once more), less wall
  // time when a core is idle. Off by default: on the shared 2-core machine
  // it was slower by CPU and by wall (docs/performance.md); its gain on a
  // quiet machine is not measured yet.
  bool gzip_decode_ahead = false;
  // Called from the ingest threads after each file: (files done, files total,
  // bytes done). Must be thread-safe.
  std::function<void(size_t, size_t, uint64_t)> progress;
};

inline constexpr size_t kSniffBytes = 64 * 1024;

// Fails as a whole only when a given path does not exist or an option is
// invalid; unreadable or unknown files are counted in run.diagnostics.
StatusOr<Run> Ingest(const std::vector<std::string>& paths,
                     const std::vector<const TextReader*>& readers, const IngestOptions& options,
                     const std::vector<const TraceReader*>& trace_readers = {});

// The files Ingest() would read for `paths`, in order.
StatusOr<std::vector<std::string>> ListInputFiles(const std::vector<std::string>& paths);

// Rank named by a path per the built-in patterns, if any (exposed for tests).
std::optional<int32_t> BuiltinRankFromPath(std::string_view path);
// Host named by the directories between `root` (a directory the user gave)
// and the file `path`, per IngestOptions::host_from's default rule.
std::optional<std::string> BuiltinHostFromPath(std::string_view path, std::string_view root);

}  // namespace laggard

#endif  // LAGGARD_INGEST_INGEST_H_
