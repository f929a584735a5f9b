#include "history/sql_sqlite.h"

#include <fmt/format.h>

namespace laggard::history {
namespace {

class SqliteStatement final : public Statement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* st, const std::string& where)
      : db_(db), st_(st), where_(where) {}
  ~SqliteStatement() override { sqlite3_finalize(st_); }

  void Reset() override { sqlite3_reset(st_); }
  void BindNull(int i) override { sqlite3_bind_null(st_, i); }
  void BindInt(int i, int64_t v) override { sqlite3_bind_int64(st_, i, v); }
  void BindReal(int i, double v) override { sqlite3_bind_double(st_, i, v); }
  void BindText(int i, std::string_view v) override {
    sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int i, std::string_view v) override {
    sqlite3_bind_blob(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  StatusOr<bool> Step() override {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return Status::Error(fmt::format("{}: {}", where_, sqlite3_errmsg(db_)));
  }
  std::optional<int64_t> Int(int col) const override {
    if (sqlite3_column_type(st_, col) != SQLITE_INTEGER) return std::nullopt;
    return sqlite3_column_int64(st_, col);
  }
  std::optional<double> Real(int col) const override {
    int t = sqlite3_column_type(st_, col);
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER) return std::nullopt;
    return sqlite3_column_double(st_, col);
  }
  std::optional<std::string_view> Text(int col) const override {
    if (sqlite3_column_type(st_, col) != SQLITE_TEXT) return std::nullopt;
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, col));
    return std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(st_, col)));
  }
  std::string_view Blob(int col) const override {
    const void* p = sqlite3_column_blob(st_, col);
    if (p == nullptr) return {};
    return std::string_view(static_cast<const char*>(p),
                            static_cast<size_t>(sqlite3_column_bytes(st_, col)));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_;
  const std::string& where_;
};

}  // namespace

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, int flags,
                                                   std::string where) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, std::move(where)));
  if (rc != SQLITE_OK) {
    return Status::Error(fmt::format("{}: cannot open: {}", db->where_,
                                     raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  return db;
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

Status SqliteDb::Exec(std::string_view sql) {
  char* msg = nullptr;
  int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &msg);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string text = msg != nullptr ? msg : sqlite3_errstr(rc);
  sqlite3_free(msg);
  return Status::Error(fmt::format("{}: {}", where_, text));
}

StatusOr<std::unique_ptr<Statement>> SqliteDb::Prepare(std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &raw, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(raw);
    return Status::Error(fmt::format("{}: {}", where_, sqlite3_errmsg(db_)));
  }
  return std::unique_ptr<Statement>(new SqliteStatement(db_, raw, where_));
}

}  // namespace laggard::history
