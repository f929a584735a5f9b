// Reader of Nsight Systems SQLite exports (`nsys export --type sqlite`):
// one RankTrace per file, with GPU kernels (classified), memcpy and memset
// ops, NCCL kernels as collective calls and NVTX step ranges. The CLI
// registers it next to the Kineto reader; ingest offers it every file whose
// head is an SQLite header.
//
// What is read, and how nsys versions differ (tables exist only when they
// have rows; columns come and go between versions, so every table is read
// through the columns PRAGMA table_info reports):
//   StringIds                    id -> value, for every *Id / name column
//   CUPTI_ACTIVITY_KIND_KERNEL   start, end, deviceId, streamId and the name
//                                (demangledName, else shortName, mangledName,
//                                name; an integer is a StringIds id, text is
//                                taken as is)
//   CUPTI_ACTIVITY_KIND_MEMCPY   kMemcpy ops named "Memcpy HtoD", ... by copyKind
//   CUPTI_ACTIVITY_KIND_MEMSET   kMemset ops named "Memset"
//   NVTX_EVENTS                  ranges whose whole text (text, else textId)
//                                is "ProfilerStep#N", "step N", "step_N",
//                                "iteration N", ... (any case; ' ', '_', '#',
//                                ':' or '=' before N) -> TraceStep, the
//                                earliest range of each step
//   TARGET_INFO_SESSION_START_TIME  utcEpochNs (see Times)
//   TARGET_INFO_SYSTEM_ENV       Hostname -> host; DeviceEnvironment
//                                ("K=V;K=V") -> rank / world size
//   META_DATA_CAPTURE            (2025.3, not 2023.1) PROCESS_n:
//                                ENVIRONMENT_VARIABLE 'K="V"' rows -> rank /
//                                world size; DEVICE_DISPLAY_NAME as a
//                                fallback host
//   TARGET_INFO_GPU              the device when the file has no device ops
//   EXPORT_META_DATA (2023.1), META_DATA_EXPORT (2025.3): product version
// An export is recognised by StringIds with a CUPTI_*, NVTX_EVENTS or
// TARGET_INFO_* table, or by its export metadata table.
//
// Times: nsys stores ns relative to the capture's start (plus any
// --ts-shift given to nsys export). The reader adds
// TARGET_INFO_SESSION_START_TIME.utcEpochNs when the export has it, so every
// time is ns since the Unix epoch like Kineto's and the ranks of a job land
// on one (NTP-aligned) axis. It adds nothing when the times are already on
// the epoch (exported with --ts-normalize=true, or values past 1e17 ns) and
// leaves them capture-relative when there is no start time. Example, the
// first kernel of cuckoo_hash_report1: start 509437086 + utcEpochNs
// 1705545250348969766 = 1705545250858406852 (2024-01-18T02:34:10.858Z).
//
// Kernel classes, by the demangled name, else the short one (any case; the
// Kineto reader's rules): nccl / rccl communication; flash, fmha,
// attention, sdpa, mem_eff attention; gemm (wgmma too), gemv, xmma,
// cutlass, cublas, nvjet, sm<NN>_*, Cijk_* GEMM; else other compute. An
// NCCL kernel is also a
// CollectiveCall whose collective comes from its name (AllReduce ->
// "allreduce", AllGather, ReduceScatter, Broadcast, AllToAll, Reduce,
// SendRecv / Send / Recv -> "sendrecv"; "" when none). nsys records no
// sequence numbers, groups or sizes; `offset` holds the kernel's rowid.
//
// Rank: RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID (with WORLD_SIZE,
// OMPI_COMM_WORLD_SIZE, SLURM_NTASKS) in the captured environment, in that
// order; else ctx.rank_from_path; else nullopt and a trace.no_rank note.
// Device: the deviceId of more than half of the device ops; with no device
// ops, the export's only GPU.
//
// Damage: a file that SQLite cannot read at all (not a database, cut inside
// the schema, gzip-compressed) or an SQLite file that is not an nsys export
// is one trace.unsupported and no trace. nsys writes the schema last, so a
// real export cut short usually ends up here. A table that fails midway
// (SQLITE_CORRUPT at a cut) keeps the rows before the failure and counts
// trace.truncated; a page the cut goes through is not read at all (SQLite
// would read its missing bytes as zeros). Rows with end < start or missing
// times are trace.bad_event.
//
// Thread-safety: the reader is stateless; each Read() opens its own
// read-only connection. The first one registers a VFS with SQLite.

#ifndef LAGGARD_INGEST_TRACES_NSYS_NSYS_READER_H_
#define LAGGARD_INGEST_TRACES_NSYS_NSYS_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ingest/traces/common/trace_reader.h"
#include "model/time.h"

namespace laggard {

std::unique_ptr<TraceReader> MakeNsysTraceReader();

// What an export says about where it was captured; facts the RankTrace has
// no field for (GPU names, the nsys version) are here for reports and tests.
struct NsysGpu {
  int64_t id = 0;                      // TARGET_INFO_GPU.id
  std::optional<int32_t> cuda_device;  // cuDevice
  std::string name;                    // "NVIDIA GeForce GTX 1660 SUPER"
  std::string bus_location;            // "0000:01:00.0"
  std::string uuid;
};

struct NsysExportInfo {
  std::string product_version;  // "2023.1.2.43"
  std::string schema_version;   // "3.1.2"
  std::optional<std::string> host;
  std::optional<TimeNs> session_start_ns;  // utcEpochNs
  bool times_normalized = false;           // exported with --ts-normalize=true
  std::vector<NsysGpu> gpus;
  std::vector<std::string> tables;  // every table, sorted
};

// Opens `path` read-only and reads the facts above. Fails when SQLite cannot
// read the schema or the database is not an nsys export.
StatusOr<NsysExportInfo> ReadNsysExportInfo(const std::string& path);

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_NSYS_NSYS_READER_H_
