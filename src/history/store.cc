#include "history/store.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "base/text.h"
#include "history/sql.h"
#include "history/sql_postgres.h"
#include "history/store_internal.h"

namespace laggard::history {
namespace {

// One row's first column, or nullopt when there is no row.
StatusOr<std::optional<int64_t>> FirstId(Statement& st) {
  auto row = st.Step();
  if (!row.ok()) return row.status();
  std::optional<int64_t> id;
  if (*row) id = st.Int(0);
  while (*row) {
    row = st.Step();
    if (!row.ok()) return row.status();
  }
  return id;
}

// The row of an upsert ... RETURNING id.
StatusOr<int64_t> ReturnedId(Statement& st) {
  auto id = FirstId(st);
  if (!id.ok()) return id.status();
  if (!*id) return Status::Error("no id returned");
  return **id;
}

Status Run(Statement& st) {
  while (true) {
    auto row = st.Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
  }
}

// The statements Record() inserts a job's parts with. PostgreSQL: the
// inserts do nothing on a conflict, and a part or host is looked for first
// (find_*): an insert that conflicts still uses up an id and locks the row.
struct PartStatements {
  std::unique_ptr<Statement> part, host, seen, culprit;
  std::unique_ptr<Statement> find_part, find_host, update_part;  // PostgreSQL
};

StatusOr<int64_t> PgHostRow(PartStatements& st, const std::string& name) {
  for (Statement* s : {st.find_host.get(), st.host.get(), st.find_host.get()}) {
    s->Reset();
    s->Bind(1, name);
    auto id = FirstId(*s);
    if (!id.ok()) return id.status();
    if (*id) return **id;  // the insert gave none: another writer's went first
  }
  return Status::Error("no id for it");
}

StatusOr<int64_t> PgPartRow(PartStatements& st, const PartRecord& p) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    Statement& find = *st.find_part;
    find.Reset();
    find.Bind(1, p.key);
    auto row = find.Step();
    if (!row.ok()) return row.status();
    if (*row) {
      int64_t id = find.Int(0).value_or(0);
      bool newer = (p.uuid && find.Text(1) != std::string_view(*p.uuid)) ||
                   (p.serial && find.Text(2) != std::string_view(*p.serial));
      while (*row) {
        row = find.Step();
        if (!row.ok()) return row.status();
      }
      if (newer) {
        Statement& update = *st.update_part;
        update.Reset();
        update.BindInt(1, id);
        update.Bind(2, p.uuid);
        update.Bind(3, p.serial);
        if (auto done = FirstId(update); !done.ok()) return done.status();
      }
      return id;
    }
    if (attempt == 1) break;
    Statement& ins = *st.part;
    ins.Reset();
    ins.Bind(1, p.key);
    ins.Bind(2, std::string(PartKindName(p.kind)));
    ins.Bind(3, std::string(IdentityName(p.identity)));
    ins.Bind(4, p.uuid);
    ins.Bind(5, p.serial);
    ins.Bind(6, p.nic);
    ins.Bind(7, p.switch_name);
    auto id = FirstId(ins);
    if (!id.ok()) return id.status();
    if (*id) return **id;  // else another writer's went first: found next
  }
  return Status::Error("no id for it");
}

// Inserts a job's parts; the first error, with what it was about.
// PostgreSQL: the hosts first and the parts in key order, so that two
// writers upserting the same rows take their locks in one order.
Status InsertParts(const std::string& path, const JobRecord& job, int64_t job_row,
                   PartStatements& st, Dialect dialect, std::vector<KeyedScanPart>& scan) {
  std::map<std::string, int64_t> host_rows;
  auto host_row_of = [&](const std::string& name) -> StatusOr<int64_t> {
    auto [it, added] = host_rows.try_emplace(name, 0);
    if (added) {
      StatusOr<int64_t> row = Status::Error("");
      if (dialect == Dialect::kPostgres) {
        row = PgHostRow(st, name);
      } else {
        st.host->Reset();
        st.host->Bind(1, name);
        row = ReturnedId(*st.host);
      }
      if (!row.ok()) return InContext(path, "host " + name, row.status());
      it->second = *row;
    }
    return it->second;
  };
  std::vector<const PartRecord*> parts;
  for (const PartRecord& p : job.parts) parts.push_back(&p);
  if (dialect == Dialect::kPostgres) {
    std::set<std::string> hosts;
    for (const PartRecord* p : parts) {
      if (p->host) hosts.insert(*p->host);
    }
    for (const std::string& h : hosts) {
      if (auto row = host_row_of(h); !row.ok()) return row.status();
    }
    std::sort(parts.begin(), parts.end(),
              [](const PartRecord* a, const PartRecord* b) { return a->key < b->key; });
  }
  for (const PartRecord* pp : parts) {
    const PartRecord& p = *pp;
    StatusOr<int64_t> part_row = Status::Error("");
    if (dialect == Dialect::kPostgres) {
      part_row = PgPartRow(st, p);
    } else {
      st.part->Reset();
      st.part->Bind(1, p.key);
      st.part->Bind(2, std::string(PartKindName(p.kind)));
      st.part->Bind(3, std::string(IdentityName(p.identity)));
      st.part->Bind(4, p.uuid);
      st.part->Bind(5, p.serial);
      st.part->Bind(6, p.nic);
      st.part->Bind(7, p.switch_name);
      part_row = ReturnedId(*st.part);
    }
    if (!part_row.ok()) return InContext(path, "part " + p.key, part_row.status());
    std::optional<int64_t> host_row;
    if (p.host) {
      auto row = host_row_of(*p.host);
      if (!row.ok()) return row.status();
      host_row = *row;
    }
    Statement& seen = *st.seen;
    seen.Reset();
    seen.BindInt(1, *part_row);
    seen.BindInt(2, job_row);
    seen.Bind(3, host_row);
    seen.Bind(4, p.gpu ? std::optional<int64_t>(*p.gpu) : std::nullopt);
    seen.Bind(5, p.rank ? std::optional<int64_t>(*p.rank) : std::nullopt);
    seen.BindInt(6, p.culprit ? 1 : 0);
    if (Status s = Run(seen); !s.ok()) {
      return InContext(path, "part " + p.key + " seen", s);
    }
    KeyedScanPart& sp = scan.emplace_back();
    sp.key = p.key;
    sp.part = ScanPart{*part_row, host_row,     p.gpu,        p.rank,
                       p.culprit, std::nullopt, std::nullopt, std::nullopt};
    if (!p.culprit) continue;
    sp.part.cause_class = p.cause_class ? std::string_view(*p.cause_class) : "unknown";
    if (p.cause) sp.part.cause = *p.cause;
    sp.part.confidence = p.confidence;
    Statement& culprit = *st.culprit;
    culprit.Reset();
    culprit.BindInt(1, job_row);
    culprit.BindInt(2, *part_row);
    culprit.Bind(3, p.cause_class.value_or("unknown"));
    culprit.Bind(4, p.cause);
    culprit.Bind(5, p.confidence);
    culprit.Bind(6, p.slowdown);
    culprit.Bind(7, fmt::format("{}", fmt::join(p.evidence_codes, " ")));
    if (Status s = Run(culprit); !s.ok()) {
      return InContext(path, "culprit " + p.key, s);
    }
  }
  return Status::Ok();
}

// One row of Load()'s parts query, from column 1 on.
PartRecord PartAt(const Statement& ps) {
  PartRecord p;
  p.key = ps.TextCopy(1).value_or("");
  p.kind = ParsePartKind(ps.Text(2).value_or("")).value_or(PartKind::kRank);
  p.identity = ParseIdentity(ps.Text(3).value_or("")).value_or(Identity::kRank);
  p.host = ps.TextCopy(4);
  if (auto g = ps.Int(5)) p.gpu = static_cast<int32_t>(*g);
  p.uuid = ps.TextCopy(6);
  p.serial = ps.TextCopy(7);
  p.nic = ps.TextCopy(8);
  p.switch_name = ps.TextCopy(9);
  if (auto r = ps.Int(10)) p.rank = static_cast<int32_t>(*r);
  p.culprit = ps.Int(11).value_or(0) != 0;
  if (p.culprit) {
    p.cause_class = ps.TextCopy(12);
    p.cause = ps.TextCopy(13);
    p.confidence = ps.Real(14);
    p.slowdown = ps.Real(15);
    for (std::string_view code : SplitBlanks(ps.Text(16).value_or(""))) {
      p.evidence_codes.emplace_back(code);
    }
  }
  return p;
}

StatusOr<bool> RecordOnce(Db& db, const std::string& path_, const JobRecord& job, bool& retry) {
  retry = false;
  if (Status s = db.Exec(db.BeginWrite()); !s.ok()) {
    retry = db.Retryable();
    return s;
  }
  auto fail = [&](const std::string& what, const Status& why) -> StatusOr<bool> {
    retry = db.Retryable();
    (void)db.Exec("ROLLBACK");
    return InContext(path_, fmt::format("recording job {}: {}", job.job_id, what), why);
  };
  auto ins = db.Prepare(
      "INSERT INTO jobs (job_id, fingerprint, source, recorded_at_s, when_s, timed, first_ns, "
      "last_ns, status, summary, throughput_lost, impact_method) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
      "?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT DO NOTHING RETURNING id");
  if (!ins.ok()) return fail("the job", ins.status());
  Statement& s = **ins;
  s.Bind(1, job.job_id);
  s.Bind(2, job.fingerprint.empty() ? std::nullopt : std::optional<std::string>(job.fingerprint));
  s.Bind(3, job.source);
  s.BindInt(4, job.recorded_at_s);
  s.BindInt(5, job.when_s());
  s.BindInt(6, job.first_ns ? 1 : 0);
  s.Bind(7, job.first_ns);
  s.Bind(8, job.last_ns);
  s.Bind(9, job.status);
  s.Bind(10, job.summary);
  s.Bind(11, job.throughput_lost);
  s.Bind(12,
         job.impact_method.empty() ? std::nullopt : std::optional<std::string>(job.impact_method));
  auto inserted = FirstId(s);
  if (!inserted.ok()) return fail("the job", inserted.status());
  if (!*inserted) {
    // A job of this id or this content is there already.
    if (Status c = db.Exec("COMMIT"); !c.ok()) return c;
    return false;
  }
  int64_t job_row = **inserted;

  PartStatements st;
  bool pg = db.dialect() == Dialect::kPostgres;
  auto part = db.Prepare(
      pg ? "INSERT INTO parts (key, kind, identity, uuid, serial, nic, switch_name) VALUES (?1, "
           "?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(key) DO NOTHING RETURNING id"
         : "INSERT INTO parts (key, kind, identity, uuid, serial, nic, switch_name) VALUES (?1, "
           "?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(key) DO UPDATE SET serial = "
           "coalesce(excluded.serial, parts.serial), uuid = coalesce(excluded.uuid, parts.uuid) "
           "RETURNING id");
  auto host = db.Prepare(pg ? "INSERT INTO hosts (name) VALUES (?1) ON CONFLICT(name) DO NOTHING "
                              "RETURNING id"
                            : "INSERT INTO hosts (name) VALUES (?1) ON CONFLICT(name) DO UPDATE "
                              "SET name = excluded.name RETURNING id");
  if (pg) {
    auto find_part = db.Prepare("SELECT id, uuid, serial FROM parts WHERE key = ?1");
    auto find_host = db.Prepare("SELECT id FROM hosts WHERE name = ?1");
    auto update_part = db.Prepare(
        "UPDATE parts SET uuid = coalesce(?2, uuid), serial = coalesce(?3, serial) WHERE id = ?1");
    for (auto* p : {&find_part, &find_host, &update_part}) {
      if (!p->ok()) return fail("preparing", p->status());
    }
    st.find_part = std::move(*find_part);
    st.find_host = std::move(*find_host);
    st.update_part = std::move(*update_part);
  }
  auto seen = db.Prepare(
      "INSERT INTO seen (part, job, host, gpu, rank, culprit) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  auto culprit = db.Prepare(
      "INSERT INTO culprits (job, part, cause_class, cause, confidence, slowdown, evidence) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  auto scan = db.Prepare(kInsertScan);
  for (auto* p : {&part, &host, &seen, &culprit, &scan}) {
    if (!p->ok()) return fail("preparing", p->status());
  }
  st.part = std::move(*part);
  st.host = std::move(*host);
  st.seen = std::move(*seen);
  st.culprit = std::move(*culprit);
  std::vector<KeyedScanPart> scan_parts;
  if (Status inserted_parts = InsertParts(path_, job, job_row, st, db.dialect(), scan_parts);
      !inserted_parts.ok()) {
    return fail("its parts", inserted_parts);
  }
  int flags = (job.first_ns ? kScanTimed : 0) | (DecidesParts(job.status) ? kScanDecided : 0);
  if (Status row = InsertScanRow(**scan, job.when_s(), job_row, flags, job.job_id, scan_parts);
      !row.ok()) {
    return fail("the job's scan row", row);
  }
  if (Status c = db.Exec("COMMIT"); !c.ok()) return fail("committing", c);
  return true;
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

HistoryStore::HistoryStore(std::string path, std::unique_ptr<Db> db, int64_t schema)
    : path_(std::move(path)), db_(std::move(db)), schema_(schema) {}
HistoryStore::HistoryStore(HistoryStore&&) noexcept = default;
HistoryStore& HistoryStore::operator=(HistoryStore&&) noexcept = default;
HistoryStore::~HistoryStore() = default;

std::string HistoryStore::display() const { return DisplayPath(path_); }

StatusOr<HistoryStore> HistoryStore::Open(const std::string& path, Mode mode) {
  if (path.empty()) {
    return Status::Error(
        "no history path: give --history PATH (neither XDG_DATA_HOME nor HOME is set)");
  }
  auto opened = IsPostgresUri(path) ? OpenPostgres(path, mode) : OpenSqlite(path, mode);
  if (!opened.ok()) return opened.status();
  return HistoryStore(path, std::move(opened->db), opened->schema);
}

StatusOr<bool> HistoryStore::Record(const JobRecord& job) {
  for (int attempt = 0;; ++attempt) {
    bool retry = false;
    auto recorded = RecordOnce(*db_, path_, job, retry);
    if (recorded.ok() || attempt == 4 || !retry) return recorded;
  }
}

StatusOr<std::vector<JobRecord>> HistoryStore::Load(const LoadFilter& filter) const {
  Db& db = *db_;
  ReadTransaction read(db);
  if (!read.status().ok()) return read.status();

  std::string select =
      "SELECT j.id, j.job_id, j.source, j.recorded_at_s, j.first_ns, j.last_ns, j.status, "
      "j.summary, j.throughput_lost, j.impact_method, j.fingerprint, j.when_s FROM jobs j WHERE "
      "j.when_s >= ?1";
  auto jobs =
      db.Prepare(filter.last ? "SELECT * FROM (" + select +
                                   " ORDER BY j.when_s DESC, j.id DESC LIMIT ?2) AS last_jobs "
                                   "ORDER BY when_s, id"
                             : select + " ORDER BY j.when_s, j.id");
  if (!jobs.ok()) return jobs.status();
  Statement& js = **jobs;
  js.BindInt(1, filter.since_s.value_or(INT64_MIN));
  if (filter.last) js.BindInt(2, static_cast<int64_t>(std::min<size_t>(*filter.last, INT64_MAX)));
  std::vector<JobRecord> out;
  std::map<int64_t, size_t> index_of;
  while (true) {
    auto row = js.Step();
    if (!row.ok()) return InContext(path_, "reading jobs", row.status());
    if (!*row) break;
    JobRecord r;
    index_of[js.Int(0).value_or(0)] = out.size();
    r.job_id = js.TextCopy(1).value_or("");
    r.source = js.TextCopy(2).value_or("");
    r.recorded_at_s = js.Int(3).value_or(0);
    r.first_ns = js.Int(4);
    r.last_ns = js.Int(5);
    r.status = js.TextCopy(6).value_or("");
    r.summary = js.TextCopy(7).value_or("");
    r.throughput_lost = js.Real(8);
    r.impact_method = js.TextCopy(9).value_or("");
    r.fingerprint = js.TextCopy(10).value_or("");
    out.push_back(std::move(r));
  }
  if (out.empty()) return out;

  // The jobs' parts: by a range of job rows when the jobs selected fill
  // most of it, else job by job.
  int64_t lo = index_of.begin()->first, hi = index_of.rbegin()->first;
  bool dense = static_cast<int64_t>(out.size()) * 4 >= hi - lo + 1;
  auto parts =
      db.Prepare(std::string("SELECT s.job, p.key, p.kind, p.identity, h.name, s.gpu, "
                             "p.uuid, p.serial, p.nic, p.switch_name, s.rank, s.culprit, "
                             "c.cause_class, c.cause, c.confidence, c.slowdown, c.evidence "
                             "FROM seen s JOIN parts p ON p.id = s.part LEFT JOIN hosts h "
                             "ON h.id = s.host LEFT JOIN culprits c ON c.job = s.job AND "
                             "c.part = s.part WHERE ") +
                 (dense ? "s.job >= ?1 AND s.job <= ?2" : "s.job = ?1"));
  if (!parts.ok()) return parts.status();
  Statement& ps = **parts;
  auto read_rows = [&]() -> Status {
    while (true) {
      auto row = ps.Step();
      if (!row.ok()) return InContext(path_, "reading parts", row.status());
      if (!*row) return Status::Ok();
      auto it = index_of.find(ps.Int(0).value_or(-1));
      if (it == index_of.end()) continue;
      out[it->second].parts.push_back(PartAt(ps));
    }
  };
  if (dense) {
    ps.BindInt(1, lo);
    ps.BindInt(2, hi);
    if (Status s = read_rows(); !s.ok()) return s;
  } else {
    for (const auto& [row, index] : index_of) {
      ps.Reset();
      ps.BindInt(1, row);
      if (Status s = read_rows(); !s.ok()) return s;
    }
  }
  for (JobRecord& r : out) {
    std::sort(r.parts.begin(), r.parts.end(),
              [](const PartRecord& a, const PartRecord& b) { return a.key < b.key; });
  }
  return out;
}

Status HistoryStore::RecordAction(const ActionRecord& a) {
  auto ins = db_->Prepare(
      "INSERT INTO actions (at_s, host, command, reason, applied, exit_code, output) VALUES (?1, "
      "?2, ?3, ?4, ?5, ?6, ?7)");
  if (!ins.ok()) return ins.status();
  Statement& s = **ins;
  s.BindInt(1, a.at_s);
  s.Bind(2, a.host);
  s.Bind(3, a.command);
  s.Bind(4, a.reason);
  s.BindInt(5, a.applied ? 1 : 0);
  s.Bind(6, a.exit_code ? std::optional<int64_t>(*a.exit_code) : std::nullopt);
  s.Bind(7, a.output);
  if (Status done = Run(s); !done.ok()) {
    return InContext(path_, "recording an action", done);
  }
  return Status::Ok();
}

StatusOr<std::vector<ActionRecord>> HistoryStore::Actions() const {
  auto q = db_->Prepare(
      "SELECT at_s, host, command, reason, applied, exit_code, output FROM actions ORDER BY id");
  if (!q.ok()) return q.status();
  std::vector<ActionRecord> out;
  Statement& s = **q;
  while (true) {
    auto row = s.Step();
    if (!row.ok()) return InContext(path_, "reading actions", row.status());
    if (!*row) break;
    ActionRecord a;
    a.at_s = s.Int(0).value_or(0);
    a.host = s.TextCopy(1).value_or("");
    a.command = s.TextCopy(2).value_or("");
    a.reason = s.TextCopy(3).value_or("");
    a.applied = s.Int(4).value_or(0) != 0;
    if (auto e = s.Int(5)) a.exit_code = static_cast<int>(*e);
    a.output = s.TextCopy(6).value_or("");
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace laggard::history
