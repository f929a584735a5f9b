// Read-only SQLite access for the nsys reader: an immutable connection
// through a VFS that shows a cut file only up to its last whole page (so a
// truncated export yields its rows up to the cut), bounded value sizes, an
// untrusted schema, and small typed column helpers.

#ifndef LAGGARD_INGEST_TRACES_NSYS_SQLITE_DB_H_
#define LAGGARD_INGEST_TRACES_NSYS_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace laggard::nsys_sqlite {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// The database at `path`, read-only and immutable.
StatusOr<Db> OpenReadOnly(const std::string& path);

// `identifier` as an SQL quoted identifier.
std::string Quote(std::string_view identifier);

// Outcome of one query: rows stepped through, and SQLite's message when it
// failed (at prepare time or midway).
struct QueryResult {
  uint64_t rows = 0;
  std::optional<std::string> error;
};

template <typename RowFn>
QueryResult ForEachRow(sqlite3* db, const std::string& sql, RowFn&& on_row) {
  QueryResult result;
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    result.error = sqlite3_errmsg(db);
    sqlite3_finalize(raw);
    return result;
  }
  Stmt stmt(raw);
  for (;;) {
    int rc = sqlite3_step(raw);
    if (rc == SQLITE_ROW) {
      ++result.rows;
      on_row(raw);
      continue;
    }
    if (rc != SQLITE_DONE) result.error = sqlite3_errmsg(db);
    break;
  }
  return result;
}

// One column fetch (sqlite3_column_value) for both the type and the value:
// the reader calls this ~15 times per row of tables of millions of rows.
inline std::optional<int64_t> IntAt(sqlite3_stmt* s, int col) {
  sqlite3_value* v = sqlite3_column_value(s, col);
  if (sqlite3_value_type(v) != SQLITE_INTEGER) return std::nullopt;
  return sqlite3_value_int64(v);
}

std::optional<std::string_view> TextAt(sqlite3_stmt* s, int col);

// The names of a table's columns (PRAGMA table_info); empty when the table
// cannot be described.
std::vector<std::string> ColumnsOf(sqlite3* db, std::string_view table);

bool Has(const std::vector<std::string>& cols, std::string_view name);

// `name` quoted when the table has it, else NULL, for a SELECT list whose
// positions do not depend on the nsys version.
std::string ColumnOrNull(const std::vector<std::string>& cols, std::string_view name);

// The same, qualified by the alias `t` of the activity table in a join.
std::string TColumnOrNull(const std::vector<std::string>& cols, std::string_view name);

}  // namespace laggard::nsys_sqlite

#endif  // LAGGARD_INGEST_TRACES_NSYS_SQLITE_DB_H_
