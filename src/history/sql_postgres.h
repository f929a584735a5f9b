// The history store's SQL over PostgreSQL (sql.h), through libpq: one
// connection (libpq loaded with dlopen when the first store opens: it brings
// OpenSSL, which other commands must not load at start), each statement
// sent with its parameters (PQexecParams, text
// values, blobs as binary) and its whole result read at once (a query of
// 10^6 jobs holds them all in memory: not measured at that scale yet).
//
// The store lives in its own schema, `laggard`, of the database the URI
// names (the connection's search_path), so that another program's tables
// of the same names are never touched.

#ifndef LAGGARD_HISTORY_SQL_POSTGRES_H_
#define LAGGARD_HISTORY_SQL_POSTGRES_H_

#include <memory>
#include <string>

#include "history/sql.h"

struct pg_conn;

namespace laggard::history {

// Whether `path` names a PostgreSQL database: postgresql://… or postgres://….
bool IsPostgresUri(const std::string& path);
// The URI without its password (user:password@, ?password=, ?sslpassword=),
// for messages.
std::string PostgresDisplay(const std::string& uri);

class PostgresDb final : public Db {
 public:
  // Connects to `uri` (libpq's connection URI); `where` begins every
  // message. read_only: every transaction is (default_transaction_read_only).
  static StatusOr<std::unique_ptr<PostgresDb>> Connect(const std::string& uri, std::string where,
                                                       bool read_only = false);
  ~PostgresDb() override;

  Dialect dialect() const override { return Dialect::kPostgres; }
  Status Exec(std::string_view sql) override;
  StatusOr<std::unique_ptr<Statement>> Prepare(std::string_view sql) override;
  std::string_view BeginWrite() const override { return "BEGIN"; }
  std::string_view BeginRead() const override {
    return "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";
  }
  // The SQLSTATE of the last error ("40P01": a deadlock), "" when none.
  const std::string& last_state() const { return last_state_; }
  bool Retryable() const override { return last_state_ == "40P01" || last_state_ == "40001"; }

 private:
  PostgresDb(pg_conn* conn, std::string where) : conn_(conn), where_(std::move(where)) {}
  friend class PgStatement;
  pg_conn* conn_;
  std::string where_;
  std::string last_state_;
};

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_SQL_POSTGRES_H_
