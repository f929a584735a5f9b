// The history store's SQL over SQLite (sql.h): a file opened with
// sqlite3_open_v2, its statements prepared once and stepped.

#ifndef LAGGARD_HISTORY_SQL_SQLITE_H_
#define LAGGARD_HISTORY_SQL_SQLITE_H_

#include <sqlite3.h>

#include <memory>
#include <string>

#include "history/sql.h"

namespace laggard::history {

class SqliteDb final : public Db {
 public:
  // sqlite3_open_v2(path, flags); `where` begins every message.
  static StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path, int flags,
                                                  std::string where);
  ~SqliteDb() override;

  Dialect dialect() const override { return Dialect::kSqlite; }
  Status Exec(std::string_view sql) override;
  StatusOr<std::unique_ptr<Statement>> Prepare(std::string_view sql) override;
  std::string_view BeginWrite() const override { return "BEGIN IMMEDIATE"; }
  std::string_view BeginRead() const override { return "BEGIN"; }
  sqlite3* raw() const { return db_; }

 private:
  SqliteDb(sqlite3* db, std::string where) : db_(db), where_(std::move(where)) {}
  sqlite3* db_;
  std::string where_;
};

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_SQL_SQLITE_H_
