// What the history store's files share (store.cc, store_scan.cc): SQLite
// statements and values, read transactions, and the job_scan rows
// (store.h's layout). Internal to the store.

#ifndef LAGGARD_HISTORY_STORE_SQLITE_H_
#define LAGGARD_HISTORY_STORE_SQLITE_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "history/scan_codec.h"

namespace laggard::history {

struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// "history PATH", the start of every message.
std::string Where(const std::string& path);
Status Exec(sqlite3* db, std::string_view sql, const std::string& path);
StatusOr<Stmt> Prepare(sqlite3* db, std::string_view sql, const std::string& path);
void Bind(sqlite3_stmt* s, int i, const std::optional<std::string>& v);
void Bind(sqlite3_stmt* s, int i, const std::string& v);
void Bind(sqlite3_stmt* s, int i, std::optional<int64_t> v);
void Bind(sqlite3_stmt* s, int i, std::optional<double> v);
// A column's value when it has that type, else nullopt (an INTEGER is a
// REAL too).
std::optional<std::string> TextAt(sqlite3_stmt* s, int col);
std::optional<int64_t> IntAt(sqlite3_stmt* s, int col);
std::optional<double> RealAt(sqlite3_stmt* s, int col);
// One value of a one-row query.
StatusOr<int64_t> QueryInt(sqlite3* db, std::string_view sql, const std::string& path);

// A read transaction: one consistent snapshot while writers go on.
class ReadTransaction {
 public:
  ReadTransaction(sqlite3* db, const std::string& path)
      : db_(db), path_(path), begun_(Exec(db, "BEGIN", path)) {}
  ~ReadTransaction() {
    if (begun_.ok()) (void)Exec(db_, "COMMIT", path_);
  }
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;
  const Status& status() const { return begun_; }

 private:
  sqlite3* db_;
  const std::string& path_;
  Status begun_;
};

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

// Inserts a job's job_scan row, its parts sorted by key; false on failure.
bool InsertScanRow(sqlite3_stmt* st, int64_t when_s, int64_t job_row, int flags,
                   const std::string& job_id, std::vector<KeyedScanPart>& parts);

// The job_scan rows of a store of schema 1 (the migration to 2).
Status BackfillJobScan(sqlite3* db, const std::string& path);

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_STORE_SQLITE_H_
