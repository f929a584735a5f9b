// What the history store's files share (store.cc, store_scan.cc,
// store_schema.cc): messages, the job_scan rows (store.h's layout), and the
// opening of each kind of store. Internal to the store.

#ifndef LAGGARD_HISTORY_STORE_INTERNAL_H_
#define LAGGARD_HISTORY_STORE_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "history/scan_codec.h"
#include "history/sql.h"
#include "history/store.h"

namespace laggard::history {

// "history PATH" (a PostgreSQL URI without its password), the start of
// every message.
std::string Where(const std::string& path);
// The store as shown: a path, or a PostgreSQL URI without its password.
std::string DisplayPath(const std::string& path);
// "history PATH: WHAT: why", `why` without its own "history PATH: ".
Status InContext(const std::string& path, std::string_view what, const Status& why);

// job_scan.flags
inline constexpr int kScanTimed = 1;
inline constexpr int kScanDecided = 2;

inline constexpr std::string_view kInsertScan =
    "INSERT INTO job_scan (when_s, job, flags, job_id, parts) VALUES (?1, ?2, ?3, ?4, ?5)";

// A part of the job_scan row being built, with its key (the row's order).
struct KeyedScanPart {
  std::string key;
  ScanPart part;
  // The culprit's texts when nothing else holds them (the part's views
  // are pointed at them once the list stops growing).
  std::optional<std::string> cause_class, cause;
};

// Inserts a job's job_scan row, its parts sorted by key.
Status InsertScanRow(Statement& st, int64_t when_s, int64_t job_row, int flags,
                     const std::string& job_id, std::vector<KeyedScanPart>& parts);

// The job_scan rows of a store of schema 1 (the migration to 2).
Status BackfillJobScan(Db& db);

// Opens (creating or migrating when `mode` writes) the SQLite store at
// `path`, or the PostgreSQL one at a postgresql:// URI; the schema it has.
struct OpenedDb {
  std::unique_ptr<Db> db;
  int64_t schema = kSchemaVersion;
};
StatusOr<OpenedDb> OpenSqlite(const std::string& path, HistoryStore::Mode mode);
StatusOr<OpenedDb> OpenPostgres(const std::string& uri, HistoryStore::Mode mode);

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_STORE_INTERNAL_H_
