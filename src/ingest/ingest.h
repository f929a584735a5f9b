// Ingest: turns the paths a user gives into a Run.
//
// Directories are walked recursively (sorted, hidden entries skipped, no
// directory symlinks followed). Each file is read once: one reached again
// (a folder given twice, a folder and its subfolder, another spelling, a
// hard link: the same device and inode) is noted as file.duplicate. A FIFO,
// socket or device, given or found, is refused as file.unreadable without
// blocking. Each file is sniffed by content (its first
// kSniffBytes, decompressed) and read by the most confident reader; files no
// reader takes are listed as skipped, never fatal. Files are read in
// parallel, one file per thread at a time, and merged in path order so the
// result does not depend on scheduling.

#ifndef LAGGARD_INGEST_INGEST_H_
#define LAGGARD_INGEST_INGEST_H_

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <span>
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
  // Tell apart the jobs the files hold (ingest/jobs.h) and read one into the
  // Run: `job` (1-based, diagnose --job) or the largest (the most ranks);
  // Run::jobs lists them. Off: every file is read into the Run.
  bool split_jobs = false;
  std::optional<int32_t> job;
  // When fewer files are read at once than there are cores, a gzip input
  // is decoded on a helper thread ahead of its reader (Decode::kAhead):
  // more CPU in all (the decoded bytes are copied once more), less wall
  // time when a core is idle. Off by default: on a shared 2-core VM it is
  // slower by CPU and by wall (docs/performance.md); its gain on a quiet
  // machine is not measured.
  bool gzip_decode_ahead = false;
  // Called from the ingest threads after each file: (files done, files total,
  // bytes done). Must be thread-safe.
  std::function<void(size_t, size_t, uint64_t)> progress;
};

inline constexpr size_t kSniffBytes = 64 * 1024;

// One profiler trace as its reader gave it (a FileFacts entry).
struct TraceFacts {
  std::string producer;  // RankTrace::producer: "kineto", "nsys"
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
  std::optional<std::string> host;
  std::optional<int32_t> device;
  bool cpu_only = false;
  bool truncated = false;
  uint64_t steps = 0;        // step ranges (ProfilerStep#N, NVTX, --step-marker)
  uint64_t events = 0;       // events seen in the file
  uint64_t events_lost = 0;  // after a truncation point (estimate)
  uint64_t ops = 0;          // device ops kept (CPU ops in a CPU-only trace)
  uint64_t kernels = 0;      // of `ops`: GPU kernels, i.e. on a device, not memcpy / memset
  uint64_t collectives = 0;
  std::array<uint64_t, static_cast<size_t>(OpClass::kCount)> ops_by_class{};  // by OpClass
};

// One op timeline as its reader gave it (a FileFacts entry).
struct TimelineFacts {
  uint64_t workers = 0;
  uint64_t workers_placed = 0;  // with their (dp, pp, tp) known
  std::optional<int32_t> first_rank, last_rank;
  std::optional<ParallelLayout> layout;
  uint64_t ops = 0;
  uint64_t steps = 0;  // distinct step numbers
  std::optional<int64_t> first_step, last_step;
  std::array<uint64_t, kTimelineOpKinds> ops_by_kind{};  // by TimelineOpKind
};

// One Flight Recorder dump as its reader gave it (a FileFacts entry): its
// header, per-group progress and the last few entries of its ring buffer.
struct DumpFacts {
  static constexpr size_t kLastEntries = 3;
  std::optional<int32_t> rank;
  std::string version;
  std::string format;  // "pickle" or "json"
  std::string comm_lib_version;
  bool truncated = false;
  uint64_t entries = 0;
  std::vector<GroupProgress> status;
  std::vector<CollectiveRecord> last_entries;  // the last kLastEntries, frames dropped
};

// Network records of one file, by kind (model/network.h).
struct NetworkFacts {
  uint64_t ib_ports = 0;
  uint64_t eth_links = 0;
  uint64_t nccl_tests = 0;      // nccl-tests runs
  uint64_t nccl_test_rows = 0;  // rows of their size tables
  uint64_t nccl_ranks = 0;      // processes of NCCL_DEBUG logs
  uint64_t topologies = 0;
  uint64_t port_counters = 0;
  uint64_t switch_map_hosts = 0;
  uint64_t p2p_tests = 0;   // p2pBandwidthLatencyTest runs
  uint64_t node_pairs = 0;  // rows of node-pair bandwidth tables
  // Every record but the table rows: ports, links, runs, processes,
  // matrices, counter blocks, mapped hosts and node pairs.
  uint64_t records() const {
    return ib_ports + eth_links + nccl_tests + nccl_ranks + topologies + port_counters +
           switch_map_hosts + p2p_tests + node_pairs;
  }
};

// Hang lines of one file (model/hang.h), by kind, and the first of them.
struct HangFacts {
  static constexpr size_t kShownEvents = 50;
  uint64_t events = 0;
  std::array<uint64_t, static_cast<size_t>(HangEventKind::kCount)> by_kind{};
  uint64_t groups = 0;           // process groups the lines named
  bool truncated = false;        // HangLogInfo::truncated
  std::string truncation;        // HangLogInfo::truncation
  std::vector<HangEvent> shown;  // the first kShownEvents events
};

// The facts of one trace or op timeline, and the network records by kind:
// what FileFacts holds per file, for a whole run's traces, timelines and
// network data too.
TraceFacts FactsOfTrace(const RankTrace& trace);
TimelineFacts FactsOfTimeline(const OpTimeline& timeline);
DumpFacts FactsOfDump(const FlightRecorderDump& dump);
NetworkFacts CountNetwork(const NetworkData& network);
// Every host the network records name (ports, links, nccl-tests ranks,
// NCCL processes, topologies, counters, p2p tests, node pairs, the switch
// map), unsorted, with repeats.
std::vector<std::string> NetworkHosts(const NetworkData& network);

// What reading one input file gave, counted on its reader's output before
// the files are merged into the Run: a rank, a step or a GPU that two files
// describe counts in both, and steps the merge drops as duplicates are still
// counted. Ranks and steps are those of the file's step records (a rank map
// names ranks without steps). For `laggard inspect`, which shows ingest
// without a diagnosis.
struct FileFacts {
  // What reading the file counted. The run's diagnostics hold these and the
  // checks of the merge (duplicates across files, missing ranks, rank.unknown).
  Diagnostics diagnostics;
  uint64_t step_records = 0;        // with or without a rank
  uint64_t unattributed_steps = 0;  // of step_records: without a rank
  uint64_t ranks = 0;               // ranks the file named
  std::optional<int32_t> first_rank, last_rank;
  uint64_t distinct_steps = 0;  // step numbers among step_records
  std::optional<int64_t> first_step, last_step;
  std::vector<TraceFacts> traces;
  std::vector<TimelineFacts> op_timelines;
  std::vector<DumpFacts> dumps;  // Flight Recorder dumps
  uint64_t groups = 0;           // process groups the file names (FR pg_config)
  uint64_t gpus = 0;             // GPU records (one per GPU, MIG instance and time base)
  uint64_t gpu_samples = 0;
  NetworkFacts network;
  HangFacts hang;
  uint64_t tool_reports = 0;       // Megatron StragglerDetector reports (model/tool_report.h)
  uint64_t nvrx_reports = 0;       // NVRx straggler reports
  std::vector<std::string> hosts;  // hosts of its ranks, traces, GPUs and network records; sorted
};

// Fails as a whole only when a given path does not exist or an option is
// invalid; unreadable or unknown files are counted in run.diagnostics.
// When `file_facts` is given it is filled with one entry per Run::files
// entry, in the same order; without it nothing is summarised.
StatusOr<Run> Ingest(const std::vector<std::string>& paths,
                     const std::vector<const TextReader*>& readers, const IngestOptions& options,
                     const std::vector<const TraceReader*>& trace_readers = {},
                     std::vector<FileFacts>* file_facts = nullptr);

// Ingest() in its three steps, so that one process can read a share of the
// files and another merge them (laggard diagnose --mpi, src/mpi/):
// PlanIngest() checks the options and lists the files, alike in every
// process; ReadIngestFiles() reads some of them; MergeIngest() merges one
// result per listed file, in file order, into the Run. Ingest() is the three
// in one process.
struct IngestPlan {
  struct State;  // ingest.cc
  std::shared_ptr<const State> state;

  // The files to read, in order; a file's index here is its index in Run::files.
  const std::vector<std::string>& files() const;
  // Their sizes when listed (0 where stat failed): the shares' balance.
  const std::vector<uint64_t>& bytes() const;
  // The rank files()[i]'s path names (--file-ranks, --rank-from or the
  // built-in patterns), if any: the content may still name another.
  std::optional<int32_t> RankOfPath(size_t i) const;
};

// What reading one file gave: its builder, its reader's name ("" when no
// reader took it), the bytes read and the records taken.
struct IngestFileResult {
  RunBuilder builder;
  std::string format;
  uint64_t bytes = 0;
  uint64_t records = 0;
};

StatusOr<IngestPlan> PlanIngest(const std::vector<std::string>& paths,
                                const IngestOptions& options);
// Reads the files of `plan` at `indices`, options.threads at a time; the
// results are parallel to `indices`.
std::vector<IngestFileResult> ReadIngestFiles(const IngestPlan& plan,
                                              const std::vector<const TextReader*>& readers,
                                              const std::vector<const TraceReader*>& trace_readers,
                                              const IngestOptions& options,
                                              std::span<const uint32_t> indices);
// `results` holds one entry per plan.files(), in order.
Run MergeIngest(const IngestPlan& plan, std::vector<IngestFileResult>&& results,
                std::vector<FileFacts>* file_facts = nullptr);

// The files Ingest() would read for `paths`, in order.
StatusOr<std::vector<std::string>> ListInputFiles(const std::vector<std::string>& paths);

// Rank named by a path per the built-in patterns, if any (exposed for tests).
std::optional<int32_t> BuiltinRankFromPath(std::string_view path);
// Host named by the directories between `root` (a directory the user gave)
// and the file `path`, per IngestOptions::host_from's default rule.
std::optional<std::string> BuiltinHostFromPath(std::string_view path, std::string_view root);

}  // namespace laggard

#endif  // LAGGARD_INGEST_INGEST_H_
