#include "history/sql_postgres.h"

#include <libpq-fe.h>

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "base/dynamic_library.h"
#include "base/text.h"

namespace laggard::history {
namespace {

// libpq, loaded with dlopen when the first PostgreSQL store is opened: it
// brings OpenSSL with it, which no other command should pay for at start
// (tests/package/startup_libraries_test.sh). Its header gives the types.
struct PqApi {
  decltype(&::PQclear) clear;
  decltype(&::PQconnectdb) connectdb;
  decltype(&::PQconninfoFree) conninfoFree;
  decltype(&::PQconninfoParse) conninfoParse;
  decltype(&::PQerrorMessage) errorMessage;
  decltype(&::PQexecParams) execParams;
  decltype(&::PQexec) exec;
  decltype(&::PQfinish) finish;
  decltype(&::PQfreemem) freemem;
  decltype(&::PQgetisnull) getisnull;
  decltype(&::PQgetlength) getlength;
  decltype(&::PQgetvalue) getvalue;
  decltype(&::PQntuples) ntuples;
  decltype(&::PQresultErrorField) resultErrorField;
  decltype(&::PQresultErrorMessage) resultErrorMessage;
  decltype(&::PQresultStatus) resultStatus;
  decltype(&::PQsetNoticeProcessor) setNoticeProcessor;
  decltype(&::PQstatus) status;
};

// The loaded library, or why it did not load; once per process.
struct PqLoad {
  PqApi api{};
  std::string why;
};

const PqLoad& LoadPq() {
  static const PqLoad loaded = [] {
    PqLoad l;
    std::string tried;
    void* lib = OpenFirstLibrary({"libpq.so.5", "libpq.so"}, tried);
    if (lib == nullptr) {
      l.why = fmt::format(
          "cannot load libpq (tried {}): install Debian's libpq5 (apt-get install libpq5)", tried);
      return l;
    }
    std::string missing;
    auto get = [&](auto& fn, const char* symbol) { LoadSymbol(lib, fn, symbol, missing); };
    PqApi& a = l.api;
    get(a.clear, "PQclear");
    get(a.connectdb, "PQconnectdb");
    get(a.conninfoFree, "PQconninfoFree");
    get(a.conninfoParse, "PQconninfoParse");
    get(a.errorMessage, "PQerrorMessage");
    get(a.execParams, "PQexecParams");
    get(a.exec, "PQexec");
    get(a.finish, "PQfinish");
    get(a.freemem, "PQfreemem");
    get(a.getisnull, "PQgetisnull");
    get(a.getlength, "PQgetlength");
    get(a.getvalue, "PQgetvalue");
    get(a.ntuples, "PQntuples");
    get(a.resultErrorField, "PQresultErrorField");
    get(a.resultErrorMessage, "PQresultErrorMessage");
    get(a.resultStatus, "PQresultStatus");
    get(a.setNoticeProcessor, "PQsetNoticeProcessor");
    get(a.status, "PQstatus");
    if (!missing.empty()) {
      l.why = fmt::format("the libpq loaded lacks {}: not PostgreSQL's libpq", missing);
    }
    return l;
  }();
  return loaded;
}

// Only after Connect() has loaded it.
const PqApi& Pq() { return LoadPq().api; }

struct ResultFree {
  void operator()(PGresult* r) const { Pq().clear(r); }
};
using Result = std::unique_ptr<PGresult, ResultFree>;

// ?1 -> $1: the store's statements are written for both dialects.
std::string Dollars(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  bool quoted = false;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (c == '\'') quoted = !quoted;
    bool param = !quoted && c == '?' && i + 1 < sql.size() && IsDigit(sql[i + 1]);
    out += param ? '$' : c;
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// What an error says, with its SQLSTATE.
std::string ErrorOf(PGconn* conn, const PGresult* r, std::string& state) {
  const char* code = r != nullptr ? Pq().resultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  state = code != nullptr ? code : "";
  std::string text = r != nullptr ? Pq().resultErrorMessage(r) : Pq().errorMessage(conn);
  text = std::string(Trim(text));
  if (text.empty()) text = Trim(Pq().errorMessage(conn));
  return state.empty() ? text : fmt::format("{} (SQLSTATE {})", text, state);
}

}  // namespace

class PgStatement final : public Statement {
 public:
  PgStatement(PostgresDb& db, std::string sql) : db_(db), sql_(std::move(sql)) {}

  void Reset() override {
    result_.reset();
    row_ = -1;
  }
  void BindNull(int i) override { Slot(i).reset(); }
  void BindInt(int i, int64_t v) override { Set(i, std::to_string(v), false); }
  void BindReal(int i, double v) override { Set(i, fmt::format("{}", v), false); }
  void BindText(int i, std::string_view v) override { Set(i, std::string(v), false); }
  void BindBlob(int i, std::string_view v) override { Set(i, std::string(v), true); }

  StatusOr<bool> Step() override {
    if (!result_) {
      std::vector<const char*> values(params_.size());
      std::vector<int> lengths(params_.size()), formats(params_.size());
      for (size_t i = 0; i < params_.size(); ++i) {
        if (!params_[i]) continue;
        values[i] = params_[i]->data();
        lengths[i] = static_cast<int>(params_[i]->size());
        formats[i] = binary_[i] ? 1 : 0;
      }
      result_.reset(Pq().execParams(db_.conn_, sql_.c_str(), static_cast<int>(params_.size()),
                                    nullptr, values.data(), lengths.data(), formats.data(), 0));
      ExecStatusType st = result_ ? Pq().resultStatus(result_.get()) : PGRES_FATAL_ERROR;
      if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        std::string msg = ErrorOf(db_.conn_, result_.get(), db_.last_state_);
        result_.reset();
        return Status::Error(fmt::format("{}: {}", db_.where_, msg));
      }
      db_.last_state_.clear();
      row_ = -1;
    }
    ++row_;
    return row_ < Pq().ntuples(result_.get());
  }

  std::optional<int64_t> Int(int col) const override {
    auto t = Text(col);
    return t ? ParseInt<int64_t>(*t) : std::nullopt;
  }
  // Not ParseDouble: a stored infinity ("Infinity") reads back as one.
  std::optional<double> Real(int col) const override {
    auto t = Text(col);
    if (!t) return std::nullopt;
    double v = 0;
    auto [p, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
    if (ec != std::errc() || p != t->data() + t->size()) return std::nullopt;
    return v;
  }
  std::optional<std::string_view> Text(int col) const override {
    if (!result_ || row_ < 0 || Pq().getisnull(result_.get(), row_, col)) return std::nullopt;
    return std::string_view(Pq().getvalue(result_.get(), row_, col),
                            static_cast<size_t>(Pq().getlength(result_.get(), row_, col)));
  }
  // bytea in text form: \x and two hex digits a byte.
  std::string_view Blob(int col) const override {
    auto t = Text(col);
    blob_.clear();
    if (!t || t->size() < 2 || t->substr(0, 2) != "\\x") return {};
    for (size_t i = 2; i + 1 < t->size(); i += 2) {
      int hi = HexValue((*t)[i]), lo = HexValue((*t)[i + 1]);
      if (hi < 0 || lo < 0) return {};
      blob_ += static_cast<char>(hi * 16 + lo);
    }
    return blob_;
  }

 private:
  std::optional<std::string>& Slot(int i) {
    size_t at = static_cast<size_t>(i - 1);
    if (params_.size() <= at) {
      params_.resize(at + 1);
      binary_.resize(at + 1, false);
    }
    return params_[at];
  }
  void Set(int i, std::string v, bool binary) {
    Slot(i) = std::move(v);
    binary_[static_cast<size_t>(i - 1)] = binary;
  }

  PostgresDb& db_;
  std::string sql_;
  std::vector<std::optional<std::string>> params_;
  std::vector<bool> binary_;
  Result result_;
  int row_ = -1;
  mutable std::string blob_;
};

bool IsPostgresUri(const std::string& path) {
  return StartsWith(path, "postgresql://") || StartsWith(path, "postgres://");
}

std::string PostgresDisplay(const std::string& uri) {
  std::string out = uri;
  // scheme://user:password@host/...: the password goes.
  size_t scheme = out.find("://");
  if (scheme == std::string::npos) return out;
  size_t start = scheme + 3;
  size_t query = out.find('?', start);
  size_t at = out.find('@', start);
  size_t slash = out.find('/', start);
  bool userinfo = at != std::string::npos && (slash == std::string::npos || at < slash) &&
                  (query == std::string::npos || at < query);
  if (userinfo) {
    size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at)
      out = out.substr(0, colon) + ":***" + out.substr(at);
  }
  // ...?password=...&sslpassword=...: their values go too.
  query = out.find('?', start);
  for (size_t p = query; p != std::string::npos && p < out.size(); p = out.find('&', p + 1)) {
    size_t key = p + 1;
    size_t eq = out.find('=', key);
    size_t end = out.find('&', key);
    if (eq == std::string::npos || (end != std::string::npos && eq > end)) continue;
    std::string name = out.substr(key, eq - key);
    if (name != "password" && name != "sslpassword") continue;
    out.replace(eq + 1, (end == std::string::npos ? out.size() : end) - eq - 1, "***");
  }
  return out;
}

namespace {

// The password the URI carries (as libpq reads it), to keep it out of
// libpq's own messages; "" when none.
std::string PasswordOf(const std::string& uri) {
  char* error = nullptr;
  PQconninfoOption* options = Pq().conninfoParse(uri.c_str(), &error);
  Pq().freemem(error);
  std::string password;
  for (PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "password" && o->val != nullptr) password = o->val;
  }
  Pq().conninfoFree(options);
  return password;
}

std::string WithoutPassword(std::string text, const std::string& password) {
  if (password.empty()) return text;
  for (size_t at = text.find(password); at != std::string::npos; at = text.find(password, at + 3)) {
    text.replace(at, password.size(), "***");
  }
  return text;
}

}  // namespace

StatusOr<std::unique_ptr<PostgresDb>> PostgresDb::Connect(const std::string& uri, std::string where,
                                                          bool read_only) {
  if (const PqLoad& l = LoadPq(); !l.why.empty()) {
    return Status::Error(fmt::format("{}: {}", where, l.why));
  }
  PGconn* conn = Pq().connectdb(uri.c_str());
  std::unique_ptr<PostgresDb> db(new PostgresDb(conn, std::move(where)));
  if (conn == nullptr || Pq().status(conn) != CONNECTION_OK) {
    std::string msg = conn != nullptr ? Pq().errorMessage(conn) : "out of memory";
    msg = std::string(Trim(msg));
    return Status::Error(
        fmt::format("{}: cannot connect: {}", db->where_, WithoutPassword(msg, PasswordOf(uri))));
  }
  // Notices (a schema that exists already) are not the user's business.
  Pq().setNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  // What the values are read back as, whatever the server's defaults: blobs
  // in hex, doubles to the last bit.
  if (Status s = db->Exec(
          "SET search_path TO laggard; SET bytea_output TO hex; SET extra_float_digits TO 3");
      !s.ok()) {
    return s;
  }
  if (read_only) {
    if (Status s = db->Exec("SET default_transaction_read_only TO on"); !s.ok()) return s;
  }
  return db;
}

PostgresDb::~PostgresDb() { Pq().finish(conn_); }

Status PostgresDb::Exec(std::string_view sql) {
  Result r(Pq().exec(conn_, std::string(sql).c_str()));
  ExecStatusType st = r ? Pq().resultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
    last_state_.clear();
    return Status::Ok();
  }
  return Status::Error(fmt::format("{}: {}", where_, ErrorOf(conn_, r.get(), last_state_)));
}

StatusOr<std::unique_ptr<Statement>> PostgresDb::Prepare(std::string_view sql) {
  return std::unique_ptr<Statement>(new PgStatement(*this, Dollars(sql)));
}

}  // namespace laggard::history
