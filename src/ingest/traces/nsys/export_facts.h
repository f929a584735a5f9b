// What the nsys reader reads of an Nsight Systems SQLite export besides its
// activity tables: the schema, the export's metadata and versions, the
// session start, the rank from the launched process's environment, the
// host and the GPUs. Internal to ingest/traces/nsys/.

#ifndef LAGGARD_INGEST_TRACES_NSYS_EXPORT_FACTS_H_
#define LAGGARD_INGEST_TRACES_NSYS_EXPORT_FACTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ingest/traces/nsys/nsys_reader.h"
#include "ingest/traces/nsys/sqlite_db.h"

namespace laggard::nsys_sqlite {

inline constexpr std::string_view kNvtxTable = "NVTX_EVENTS";

// Rank and world size from an environment, in order of trust: torchrun /
// torch.distributed, then Open MPI, then Slurm.
struct EnvRank {
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
};

// Everything read besides the activity tables.
struct ExportFacts {
  NsysExportInfo info;
  uint64_t file_bytes = 0;
  EnvRank env;
  std::vector<std::string> failures;  // "table: message" of reads that failed midway
};

// Opens `path` and reads the schema and the export's metadata into `db_out`
// and the result. An error means the file cannot be used at all.
StatusOr<ExportFacts> ReadExportFacts(const std::string& path, Db& db_out);

}  // namespace laggard::nsys_sqlite

#endif  // LAGGARD_INGEST_TRACES_NSYS_EXPORT_FACTS_H_
