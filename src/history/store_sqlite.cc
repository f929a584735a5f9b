#include "history/store_sqlite.h"

#include <fmt/format.h>

namespace laggard::history {

std::string Where(const std::string& path) { return fmt::format("history {}", path); }

Status Exec(sqlite3* db, std::string_view sql, const std::string& path) {
  char* msg = nullptr;
  int rc = sqlite3_exec(db, std::string(sql).c_str(), nullptr, nullptr, &msg);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string text = msg != nullptr ? msg : sqlite3_errstr(rc);
  sqlite3_free(msg);
  return Status::Error(fmt::format("{}: {}", Where(path), text));
}

StatusOr<Stmt> Prepare(sqlite3* db, std::string_view sql, const std::string& path) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &raw, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(raw);
    return Status::Error(fmt::format("{}: {}", Where(path), sqlite3_errmsg(db)));
  }
  return Stmt(raw);
}

void Bind(sqlite3_stmt* s, int i, const std::optional<std::string>& v) {
  if (v) {
    sqlite3_bind_text(s, i, v->data(), static_cast<int>(v->size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_null(s, i);
  }
}
void Bind(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void Bind(sqlite3_stmt* s, int i, std::optional<int64_t> v) {
  if (v) {
    sqlite3_bind_int64(s, i, *v);
  } else {
    sqlite3_bind_null(s, i);
  }
}
void Bind(sqlite3_stmt* s, int i, std::optional<double> v) {
  if (v) {
    sqlite3_bind_double(s, i, *v);
  } else {
    sqlite3_bind_null(s, i);
  }
}

std::optional<std::string> TextAt(sqlite3_stmt* s, int col) {
  if (sqlite3_column_type(s, col) != SQLITE_TEXT) return std::nullopt;
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, col)));
}
std::optional<int64_t> IntAt(sqlite3_stmt* s, int col) {
  if (sqlite3_column_type(s, col) != SQLITE_INTEGER) return std::nullopt;
  return sqlite3_column_int64(s, col);
}
std::optional<double> RealAt(sqlite3_stmt* s, int col) {
  int t = sqlite3_column_type(s, col);
  if (t != SQLITE_FLOAT && t != SQLITE_INTEGER) return std::nullopt;
  return sqlite3_column_double(s, col);
}

StatusOr<int64_t> QueryInt(sqlite3* db, std::string_view sql, const std::string& path) {
  auto st = Prepare(db, sql, path);
  if (!st.ok()) return st.status();
  int rc = sqlite3_step(st->get());
  if (rc != SQLITE_ROW) {
    return Status::Error(fmt::format("{}: {}", Where(path), sqlite3_errmsg(db)));
  }
  return sqlite3_column_int64(st->get(), 0);
}

}  // namespace laggard::history
