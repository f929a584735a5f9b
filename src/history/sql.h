// The SQL the history store speaks, over SQLite or PostgreSQL: one
// connection (Db) and its statements (Statement), with the store's logic
// written once above them (store.cc, store_scan.cc). Internal to the store.
//
// Statements use ?1, ?2, ... for parameters in both dialects (PostgreSQL's
// are rewritten to $1, $2). Values are 64-bit integers, doubles, text and
// blobs, each possibly NULL. A statement runs at its first Step() with the
// values bound since it was made or Reset(); Step() then moves from row to
// row. Text read from a row stays valid until the next Step(); a blob until
// the next Step() or Blob().
//
// One Db per thread.

#ifndef LAGGARD_HISTORY_SQL_H_
#define LAGGARD_HISTORY_SQL_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace laggard::history {

enum class Dialect { kSqlite, kPostgres };

class Statement {
 public:
  virtual ~Statement() = default;
  // Ends the statement's run; its bound values stay until bound again.
  virtual void Reset() = 0;
  virtual void BindNull(int i) = 0;
  virtual void BindInt(int i, int64_t v) = 0;
  virtual void BindReal(int i, double v) = 0;
  virtual void BindText(int i, std::string_view v) = 0;
  virtual void BindBlob(int i, std::string_view v) = 0;
  // true: a row is there; false: the statement ran to its end; an error
  // says what the database said.
  virtual StatusOr<bool> Step() = 0;
  // The row's values; nullopt for NULL (and for a value of another type).
  virtual std::optional<int64_t> Int(int col) const = 0;
  virtual std::optional<double> Real(int col) const = 0;
  virtual std::optional<std::string_view> Text(int col) const = 0;
  virtual std::string_view Blob(int col) const = 0;

  // Bind helpers: NULL for nullopt.
  void Bind(int i, std::optional<int64_t> v) { v ? BindInt(i, *v) : BindNull(i); }
  // NaN is NULL in both stores (SQLite stores it so): what reads back is
  // the same whichever keeps it.
  void Bind(int i, std::optional<double> v) {
    v && !std::isnan(*v) ? BindReal(i, *v) : BindNull(i);
  }
  void Bind(int i, const std::optional<std::string>& v) { v ? BindText(i, *v) : BindNull(i); }
  void Bind(int i, const std::string& v) { BindText(i, v); }
  std::optional<std::string> TextCopy(int col) const {
    auto t = Text(col);
    return t ? std::optional<std::string>(std::string(*t)) : std::nullopt;
  }
};

class Db {
 public:
  virtual ~Db() = default;
  virtual Dialect dialect() const = 0;
  // Runs statements without parameters or rows (several, ';'-separated).
  virtual Status Exec(std::string_view sql) = 0;
  virtual StatusOr<std::unique_ptr<Statement>> Prepare(std::string_view sql) = 0;
  // What a transaction that may write begins with (SQLite: IMMEDIATE, so
  // that two writers wait for each other instead of failing).
  virtual std::string_view BeginWrite() const = 0;
  // A read transaction's start: one consistent snapshot.
  virtual std::string_view BeginRead() const = 0;

  // Whether the last error was the database's "try again" (a deadlock or
  // serialization failure between two writers).
  virtual bool Retryable() const { return false; }

  // The first column of a one-row query as an integer.
  StatusOr<int64_t> QueryInt(std::string_view sql) {
    auto st = Prepare(sql);
    if (!st.ok()) return st.status();
    auto row = (*st)->Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Error("no row from " + std::string(sql));
    return (*st)->Int(0).value_or(0);
  }
};

// A read transaction: one consistent snapshot while writers go on.
class ReadTransaction {
 public:
  explicit ReadTransaction(Db& db) : db_(db), begun_(db.Exec(db.BeginRead())) {}
  ~ReadTransaction() {
    if (begun_.ok()) (void)db_.Exec("COMMIT");
  }
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;
  const Status& status() const { return begun_; }

 private:
  Db& db_;
  Status begun_;
};

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_SQL_H_
