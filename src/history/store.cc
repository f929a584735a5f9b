#include "history/store.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "history/store_sqlite.h"

namespace laggard::history {
namespace {

// Each migration takes the store from version i to i + 1: its SQL, then
// its backfill (when it has one) in the same transaction.
struct Migration {
  std::string_view sql;
  Status (*backfill)(sqlite3* db, const std::string& path) = nullptr;
};

constexpr std::string_view kSchema1 = R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL UNIQUE,
  fingerprint TEXT UNIQUE,
  source TEXT NOT NULL,
  recorded_at_s INTEGER NOT NULL,
  when_s INTEGER NOT NULL,
  timed INTEGER NOT NULL,
  first_ns INTEGER,
  last_ns INTEGER,
  status TEXT NOT NULL,
  summary TEXT NOT NULL,
  throughput_lost REAL,
  impact_method TEXT
);
CREATE INDEX jobs_when ON jobs(when_s, id);
CREATE TABLE parts (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  identity TEXT NOT NULL,
  uuid TEXT,
  serial TEXT,
  nic TEXT,
  switch_name TEXT
);
CREATE TABLE hosts (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE seen (
  job INTEGER NOT NULL,
  part INTEGER NOT NULL,
  host INTEGER,
  gpu INTEGER,
  rank INTEGER,
  culprit INTEGER NOT NULL,
  PRIMARY KEY (job, part)
) WITHOUT ROWID;
CREATE TABLE culprits (
  job INTEGER NOT NULL,
  part INTEGER NOT NULL,
  cause_class TEXT NOT NULL,
  cause TEXT,
  confidence REAL,
  slowdown REAL,
  evidence TEXT NOT NULL,
  PRIMARY KEY (job, part)
) WITHOUT ROWID;
CREATE TABLE actions (
  id INTEGER PRIMARY KEY,
  at_s INTEGER NOT NULL,
  host TEXT NOT NULL,
  command TEXT NOT NULL,
  reason TEXT NOT NULL,
  applied INTEGER NOT NULL,
  exit_code INTEGER,
  output TEXT NOT NULL
);
)sql";

constexpr std::string_view kSchema2 = R"sql(
CREATE TABLE job_scan (
  when_s INTEGER NOT NULL,
  job INTEGER NOT NULL,
  flags INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  parts BLOB NOT NULL,
  PRIMARY KEY (when_s, job)
) WITHOUT ROWID;
)sql";

const Migration kMigrations[] = {
    {kSchema1},                   // 0 -> 1
    {kSchema2, BackfillJobScan},  // 1 -> 2
};
static_assert(std::size(kMigrations) == kSchemaVersion);

constexpr int kBusyTimeoutMs = 60'000;

// The file at `path` begins as every SQLite database does, or is empty.
Status LooksLikeSqlite(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(fmt::format("{}: cannot read the file", Where(path)));
  char header[16] = {};
  in.read(header, sizeof(header));
  std::streamsize got = in.gcount();
  if (got == 0) return Status::Ok();
  if (got < 16 || std::string_view(header, 16) != std::string_view("SQLite format 3\0", 16)) {
    return Status::Error(
        fmt::format("{}: not an SQLite database (offset 0 does not read 'SQLite format 3'); "
                    "left untouched, give another --history path",
                    Where(path)));
  }
  return Status::Ok();
}

// What a database says it is, read in one transaction: a writer creating
// the store commits its tables and its application_id together, so the
// three are seen together.
struct DbIdentity {
  int64_t app = 0, tables = 0, version = 0;
};

StatusOr<DbIdentity> ReadIdentity(sqlite3* db, const std::string& path) {
  if (Status s = Exec(db, "BEGIN", path); !s.ok()) return s;
  DbIdentity id;
  auto app = QueryInt(db, "PRAGMA application_id", path);
  auto tables = app.ok() ? QueryInt(db, "SELECT count(*) FROM sqlite_schema", path) : app;
  auto version = tables.ok() ? QueryInt(db, "PRAGMA user_version", path) : tables;
  (void)Exec(db, "COMMIT", path);
  if (!version.ok()) {
    return Status::Error(version.status().message() + " (a corrupt database? left untouched)");
  }
  return DbIdentity{*app, *tables, *version};
}

// An empty database (no tables, no ids) is ours to initialise; one of ours
// is ours; anything else belongs to another program.
Status CheckIdentity(const DbIdentity& id, const std::string& path) {
  bool empty = id.app == 0 && id.tables == 0 && id.version == 0;
  if (id.app != kApplicationId && !empty) {
    return Status::Error(
        fmt::format("{}: an SQLite database of another program ({} tables, application_id {:#x}, "
                    "user_version {}), not a laggard history; left untouched",
                    Where(path), id.tables, id.app, id.version));
  }
  if (id.version > kSchemaVersion) {
    return Status::Error(fmt::format(
        "{}: written by a newer laggard (schema {}; this one knows up to {}); left untouched",
        Where(path), id.version, kSchemaVersion));
  }
  return Status::Ok();
}

// Checks the store's identity and version, and creates or migrates it
// (read-write).
// The schema it has then: read-only, an older one is read as it is.
StatusOr<int64_t> Prepare(sqlite3* db, const std::string& path, bool writable) {
  auto id = ReadIdentity(db, path);
  if (!id.ok()) return id.status();
  if (Status s = CheckIdentity(*id, path); !s.ok()) return s;
  if (id->version == kSchemaVersion) return id->version;
  if (!writable) {
    if (id->tables == 0) return Status::Error(fmt::format("{}: an empty store", Where(path)));
    return id->version;
  }
  // Another process may be creating or migrating it at the same moment: the
  // write lock decides, and the identity is read again under it.
  if (Status s = Exec(db, "BEGIN IMMEDIATE", path); !s.ok()) return s;
  auto app = QueryInt(db, "PRAGMA application_id", path);
  auto tables = app.ok() ? QueryInt(db, "SELECT count(*) FROM sqlite_schema", path) : app;
  auto now = tables.ok() ? QueryInt(db, "PRAGMA user_version", path) : tables;
  if (!now.ok()) {
    (void)Exec(db, "ROLLBACK", path);
    return now.status();
  }
  if (Status s = CheckIdentity({*app, *tables, *now}, path); !s.ok()) {
    (void)Exec(db, "ROLLBACK", path);
    return s;
  }
  for (int64_t v = *now; v < kSchemaVersion; ++v) {
    Status s = Exec(db, kMigrations[v].sql, path);
    if (s.ok() && kMigrations[v].backfill != nullptr) s = kMigrations[v].backfill(db, path);
    if (!s.ok()) {
      (void)Exec(db, "ROLLBACK", path);
      return Status::Error(fmt::format("migrating to schema {}: {}", v + 1, s.message()));
    }
  }
  Status s = Exec(db,
                  fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}; COMMIT",
                              kApplicationId, kSchemaVersion),
                  path);
  if (!s.ok()) {
    (void)Exec(db, "ROLLBACK", path);
    return s;
  }
  return kSchemaVersion;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The row of an upsert ... RETURNING id.
std::optional<int64_t> ReturnedId(sqlite3_stmt* st) {
  if (sqlite3_step(st) != SQLITE_ROW) return std::nullopt;
  int64_t id = sqlite3_column_int64(st, 0);
  while (sqlite3_step(st) == SQLITE_ROW) {
  }
  return id;
}

// Inserts a job's parts with the statements Record() prepared; "" when all
// went in, else what failed.
std::string InsertParts(const JobRecord& job, int64_t job_row, sqlite3_stmt* part,
                        sqlite3_stmt* host, sqlite3_stmt* seen, sqlite3_stmt* culprit,
                        std::vector<KeyedScanPart>& scan) {
  std::map<std::string, int64_t> host_rows;
  for (const PartRecord& p : job.parts) {
    sqlite3_reset(part);
    Bind(part, 1, p.key);
    Bind(part, 2, std::string(PartKindName(p.kind)));
    Bind(part, 3, std::string(IdentityName(p.identity)));
    Bind(part, 4, p.uuid);
    Bind(part, 5, p.serial);
    Bind(part, 6, p.nic);
    Bind(part, 7, p.switch_name);
    auto part_row = ReturnedId(part);
    if (!part_row) return "part " + p.key;
    std::optional<int64_t> host_row;
    if (p.host) {
      auto [it, added] = host_rows.try_emplace(*p.host, 0);
      if (added) {
        sqlite3_reset(host);
        Bind(host, 1, *p.host);
        auto row = ReturnedId(host);
        if (!row) return "host " + *p.host;
        it->second = *row;
      }
      host_row = it->second;
    }
    sqlite3_reset(seen);
    sqlite3_bind_int64(seen, 1, *part_row);
    sqlite3_bind_int64(seen, 2, job_row);
    Bind(seen, 3, host_row);
    Bind(seen, 4, p.gpu ? std::optional<int64_t>(*p.gpu) : std::nullopt);
    Bind(seen, 5, p.rank ? std::optional<int64_t>(*p.rank) : std::nullopt);
    sqlite3_bind_int(seen, 6, p.culprit ? 1 : 0);
    if (sqlite3_step(seen) != SQLITE_DONE) return "part " + p.key + " seen";
    KeyedScanPart& sp = scan.emplace_back();
    sp.key = p.key;
    sp.part = ScanPart{*part_row, host_row,     p.gpu,        p.rank,
                       p.culprit, std::nullopt, std::nullopt, std::nullopt};
    if (!p.culprit) continue;
    sp.part.cause_class = p.cause_class ? std::string_view(*p.cause_class) : "unknown";
    if (p.cause) sp.part.cause = *p.cause;
    sp.part.confidence = p.confidence;
    sqlite3_reset(culprit);
    sqlite3_bind_int64(culprit, 1, job_row);
    sqlite3_bind_int64(culprit, 2, *part_row);
    Bind(culprit, 3, p.cause_class.value_or("unknown"));
    Bind(culprit, 4, p.cause);
    Bind(culprit, 5, p.confidence);
    Bind(culprit, 6, p.slowdown);
    Bind(culprit, 7, Joined(p.evidence_codes));
    if (sqlite3_step(culprit) != SQLITE_DONE) return "culprit " + p.key;
  }
  return "";
}

// One row of Load()'s parts query, from column 1 on.
PartRecord PartAt(sqlite3_stmt* ps) {
  PartRecord p;
  p.key = TextAt(ps, 1).value_or("");
  p.kind = ParsePartKind(TextAt(ps, 2).value_or("")).value_or(PartKind::kRank);
  p.identity = ParseIdentity(TextAt(ps, 3).value_or("")).value_or(Identity::kRank);
  p.host = TextAt(ps, 4);
  if (auto g = IntAt(ps, 5)) p.gpu = static_cast<int32_t>(*g);
  p.uuid = TextAt(ps, 6);
  p.serial = TextAt(ps, 7);
  p.nic = TextAt(ps, 8);
  p.switch_name = TextAt(ps, 9);
  if (auto r = IntAt(ps, 10)) p.rank = static_cast<int32_t>(*r);
  p.culprit = IntAt(ps, 11).value_or(0) != 0;
  if (p.culprit) {
    p.cause_class = TextAt(ps, 12);
    p.cause = TextAt(ps, 13);
    p.confidence = RealAt(ps, 14);
    p.slowdown = RealAt(ps, 15);
    p.evidence_codes = Split(TextAt(ps, 16).value_or(""));
  }
  return p;
}

}  // namespace

std::string DefaultHistoryPath() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/laggard/history.db";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') {
    return std::string(home) + "/.local/share/laggard/history.db";
  }
  return "";
}

StatusOr<HistoryStore> HistoryStore::Open(const std::string& path, Mode mode) {
  if (path.empty()) {
    return Status::Error(
        "no history path: give --history PATH (neither XDG_DATA_HOME nor HOME is set)");
  }
  std::error_code ec;
  bool exists = std::filesystem::exists(path, ec);
  if (exists) {
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Status::Error(fmt::format("{}: not a regular file", Where(path)));
    }
    if (Status s = LooksLikeSqlite(path); !s.ok()) return s;
  } else if (mode != Mode::kReadWrite) {
    return Status::Error(fmt::format(
        "{}: no such file; record verdicts first with `laggard diagnose --record`", Where(path)));
  } else {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  }
  int flags = mode == Mode::kReadOnly        ? SQLITE_OPEN_READONLY
              : mode == Mode::kWriteExisting ? SQLITE_OPEN_READWRITE
                                             : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  HistoryStore store(path, raw);
  if (rc != SQLITE_OK) {
    return Status::Error(fmt::format("{}: cannot open: {}", Where(path),
                                     raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  auto schema = Prepare(raw, path, mode != Mode::kReadOnly);
  if (!schema.ok()) return schema.status();
  store.schema_ = *schema;
  if (mode != Mode::kReadOnly) {
    if (Status s = Exec(raw, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", path);
        !s.ok()) {
      return s;
    }
  }
  return store;
}

StatusOr<bool> HistoryStore::Record(const JobRecord& job) {
  sqlite3* db = db_.get();
  if (Status s = Exec(db, "BEGIN IMMEDIATE", path_); !s.ok()) return s;
  auto fail = [&](std::string what) -> StatusOr<bool> {
    std::string msg = fmt::format("{}: recording job {}: {}: {}", Where(path_), job.job_id, what,
                                  sqlite3_errmsg(db));
    (void)Exec(db, "ROLLBACK", path_);
    return Status::Error(std::move(msg));
  };
  auto ins = Prepare(db,
                     "INSERT INTO jobs (job_id, fingerprint, source, recorded_at_s, when_s, timed, "
                     "first_ns, last_ns, status, summary, throughput_lost, impact_method) VALUES "
                     "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT DO NOTHING",
                     path_);
  if (!ins.ok()) {
    (void)Exec(db, "ROLLBACK", path_);
    return ins.status();
  }
  sqlite3_stmt* s = ins->get();
  Bind(s, 1, job.job_id);
  Bind(s, 2, job.fingerprint.empty() ? std::nullopt : std::optional<std::string>(job.fingerprint));
  Bind(s, 3, job.source);
  Bind(s, 4, std::optional<int64_t>(job.recorded_at_s));
  Bind(s, 5, std::optional<int64_t>(job.when_s()));
  sqlite3_bind_int(s, 6, job.first_ns ? 1 : 0);
  Bind(s, 7, job.first_ns);
  Bind(s, 8, job.last_ns);
  Bind(s, 9, job.status);
  Bind(s, 10, job.summary);
  Bind(s, 11, job.throughput_lost);
  Bind(s, 12,
       job.impact_method.empty() ? std::nullopt : std::optional<std::string>(job.impact_method));
  if (sqlite3_step(s) != SQLITE_DONE) return fail("the job");
  if (sqlite3_changes(db) == 0) {
    if (Status c = Exec(db, "COMMIT", path_); !c.ok()) return c;
    return false;
  }
  int64_t job_row = sqlite3_last_insert_rowid(db);

  auto part = Prepare(db,
                      "INSERT INTO parts (key, kind, identity, uuid, serial, nic, switch_name) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(key) DO UPDATE SET "
                      "serial = coalesce(excluded.serial, serial), uuid = coalesce(excluded.uuid, "
                      "uuid) RETURNING id",
                      path_);
  auto host = Prepare(db,
                      "INSERT INTO hosts (name) VALUES (?1) ON CONFLICT(name) DO UPDATE SET "
                      "name = excluded.name RETURNING id",
                      path_);
  auto seen = Prepare(db,
                      "INSERT INTO seen (part, job, host, gpu, rank, culprit) VALUES "
                      "(?1, ?2, ?3, ?4, ?5, ?6)",
                      path_);
  auto culprit = Prepare(db,
                         "INSERT INTO culprits (job, part, cause_class, cause, confidence, "
                         "slowdown, evidence) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                         path_);
  auto scan = Prepare(db, kInsertScan, path_);
  if (!part.ok() || !host.ok() || !seen.ok() || !culprit.ok() || !scan.ok()) {
    Status st = !part.ok()      ? part.status()
                : !host.ok()    ? host.status()
                : !seen.ok()    ? seen.status()
                : !culprit.ok() ? culprit.status()
                                : scan.status();
    (void)Exec(db, "ROLLBACK", path_);
    return st;
  }
  std::vector<KeyedScanPart> scan_parts;
  if (std::string what = InsertParts(job, job_row, part->get(), host->get(), seen->get(),
                                     culprit->get(), scan_parts);
      !what.empty()) {
    return fail(what);
  }
  int flags = (job.first_ns ? kScanTimed : 0) | (DecidesParts(job.status) ? kScanDecided : 0);
  if (!InsertScanRow(scan->get(), job.when_s(), job_row, flags, job.job_id, scan_parts)) {
    return fail("the job's scan row");
  }
  if (Status c = Exec(db, "COMMIT", path_); !c.ok()) {
    (void)Exec(db, "ROLLBACK", path_);
    return c;
  }
  return true;
}

StatusOr<std::vector<JobRecord>> HistoryStore::Load(const LoadFilter& filter) const {
  sqlite3* db = db_.get();
  ReadTransaction read(db, path_);
  if (!read.status().ok()) return read.status();

  std::string select =
      "SELECT j.id, j.job_id, j.source, j.recorded_at_s, j.first_ns, j.last_ns, j.status, "
      "j.summary, j.throughput_lost, j.impact_method, j.fingerprint, j.when_s FROM jobs j WHERE "
      "j.when_s >= ?1";
  auto jobs = Prepare(db,
                      filter.last ? "SELECT * FROM (" + select +
                                        " ORDER BY j.when_s DESC, j.id DESC LIMIT ?2) ORDER BY "
                                        "when_s, id"
                                  : select + " ORDER BY j.when_s, j.id",
                      path_);
  if (!jobs.ok()) return jobs.status();
  sqlite3_stmt* js = jobs->get();
  sqlite3_bind_int64(js, 1, filter.since_s.value_or(INT64_MIN));
  if (filter.last) {
    sqlite3_bind_int64(js, 2, static_cast<int64_t>(std::min<size_t>(*filter.last, INT64_MAX)));
  }
  std::vector<JobRecord> out;
  std::map<int64_t, size_t> index_of;
  int rc;
  while ((rc = sqlite3_step(js)) == SQLITE_ROW) {
    JobRecord r;
    index_of[sqlite3_column_int64(js, 0)] = out.size();
    r.job_id = TextAt(js, 1).value_or("");
    r.source = TextAt(js, 2).value_or("");
    r.recorded_at_s = IntAt(js, 3).value_or(0);
    r.first_ns = IntAt(js, 4);
    r.last_ns = IntAt(js, 5);
    r.status = TextAt(js, 6).value_or("");
    r.summary = TextAt(js, 7).value_or("");
    r.throughput_lost = RealAt(js, 8);
    r.impact_method = TextAt(js, 9).value_or("");
    r.fingerprint = TextAt(js, 10).value_or("");
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) {
    return Status::Error(fmt::format("{}: reading jobs: {}", Where(path_), sqlite3_errmsg(db)));
  }
  if (out.empty()) return out;

  // The jobs' parts: by a range of job rows when the jobs selected fill
  // most of it, else job by job.
  int64_t lo = index_of.begin()->first, hi = index_of.rbegin()->first;
  bool dense = static_cast<int64_t>(out.size()) * 4 >= hi - lo + 1;
  auto parts = Prepare(db,
                       std::string("SELECT s.job, p.key, p.kind, p.identity, h.name, s.gpu, "
                                   "p.uuid, p.serial, p.nic, p.switch_name, s.rank, s.culprit, "
                                   "c.cause_class, c.cause, c.confidence, c.slowdown, c.evidence "
                                   "FROM seen s JOIN parts p ON p.id = s.part LEFT JOIN hosts h "
                                   "ON h.id = s.host LEFT JOIN culprits c ON c.job = s.job AND "
                                   "c.part = s.part WHERE ") +
                           (dense ? "s.job >= ?1 AND s.job <= ?2" : "s.job = ?1"),
                       path_);
  if (!parts.ok()) return parts.status();
  sqlite3_stmt* ps = parts->get();
  auto read_rows = [&]() {
    while ((rc = sqlite3_step(ps)) == SQLITE_ROW) {
      auto it = index_of.find(sqlite3_column_int64(ps, 0));
      if (it == index_of.end()) continue;
      out[it->second].parts.push_back(PartAt(ps));
    }
  };
  if (dense) {
    sqlite3_bind_int64(ps, 1, lo);
    sqlite3_bind_int64(ps, 2, hi);
    read_rows();
  } else {
    for (const auto& [row, index] : index_of) {
      sqlite3_reset(ps);
      sqlite3_bind_int64(ps, 1, row);
      read_rows();
      if (rc != SQLITE_DONE) break;
    }
  }
  if (rc != SQLITE_DONE) {
    return Status::Error(fmt::format("{}: reading parts: {}", Where(path_), sqlite3_errmsg(db)));
  }
  for (JobRecord& r : out) {
    std::sort(r.parts.begin(), r.parts.end(),
              [](const PartRecord& a, const PartRecord& b) { return a.key < b.key; });
  }
  return out;
}

Status HistoryStore::RecordAction(const ActionRecord& a) {
  auto ins =
      Prepare(db_.get(),
              "INSERT INTO actions (at_s, host, command, reason, applied, exit_code, output) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
              path_);
  if (!ins.ok()) return ins.status();
  sqlite3_stmt* s = ins->get();
  sqlite3_bind_int64(s, 1, a.at_s);
  Bind(s, 2, a.host);
  Bind(s, 3, a.command);
  Bind(s, 4, a.reason);
  sqlite3_bind_int(s, 5, a.applied ? 1 : 0);
  Bind(s, 6, a.exit_code ? std::optional<int64_t>(*a.exit_code) : std::nullopt);
  Bind(s, 7, a.output);
  if (sqlite3_step(s) != SQLITE_DONE) {
    return Status::Error(
        fmt::format("{}: recording an action: {}", Where(path_), sqlite3_errmsg(db_.get())));
  }
  return Status::Ok();
}

StatusOr<std::vector<ActionRecord>> HistoryStore::Actions() const {
  auto q = Prepare(db_.get(),
                   "SELECT at_s, host, command, reason, applied, exit_code, output FROM actions "
                   "ORDER BY id",
                   path_);
  if (!q.ok()) return q.status();
  std::vector<ActionRecord> out;
  sqlite3_stmt* s = q->get();
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    ActionRecord a;
    a.at_s = IntAt(s, 0).value_or(0);
    a.host = TextAt(s, 1).value_or("");
    a.command = TextAt(s, 2).value_or("");
    a.reason = TextAt(s, 3).value_or("");
    a.applied = IntAt(s, 4).value_or(0) != 0;
    if (auto e = IntAt(s, 5)) a.exit_code = static_cast<int>(*e);
    a.output = TextAt(s, 6).value_or("");
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) {
    return Status::Error(
        fmt::format("{}: reading actions: {}", Where(path_), sqlite3_errmsg(db_.get())));
  }
  return out;
}

}  // namespace laggard::history
