// job_scan: a job's parts in one row, written with the job (store.cc),
// filled for the jobs of an older store by its migration, read by Scan().

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "history/store.h"
#include "history/store_sqlite.h"

namespace laggard::history {
namespace {

// Ids of rows (parts, hosts) to the indices a JobSink gave them.
class IdMap {
 public:
  void Add(int64_t id, uint32_t index) {
    if (id >= 0 && id < kDense) {
      if (static_cast<size_t>(id) >= dense_.size()) dense_.resize(id + 1, kNone);
      dense_[id] = index;
    } else {
      sparse_[id] = index;
    }
  }
  std::optional<uint32_t> Find(int64_t id) const {
    if (id >= 0 && id < kDense) {
      if (static_cast<size_t>(id) < dense_.size() && dense_[id] != kNone) return dense_[id];
      return std::nullopt;
    }
    auto it = sparse_.find(id);
    return it == sparse_.end() ? std::nullopt : std::optional<uint32_t>(it->second);
  }

 private:
  static constexpr int64_t kDense = 1 << 24;
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> dense_;
  std::unordered_map<int64_t, uint32_t> sparse_;
};

}  // namespace

bool InsertScanRow(sqlite3_stmt* st, int64_t when_s, int64_t job_row, int flags,
                   const std::string& job_id, std::vector<KeyedScanPart>& parts) {
  std::sort(parts.begin(), parts.end(),
            [](const KeyedScanPart& a, const KeyedScanPart& b) { return a.key < b.key; });
  std::vector<ScanPart> sorted;
  sorted.reserve(parts.size());
  for (KeyedScanPart& p : parts) {
    if (p.cause_class) p.part.cause_class = *p.cause_class;
    if (p.cause) p.part.cause = *p.cause;
    sorted.push_back(p.part);
  }
  std::string blob = EncodeScanParts(sorted);
  sqlite3_reset(st);
  sqlite3_bind_int64(st, 1, when_s);
  sqlite3_bind_int64(st, 2, job_row);
  sqlite3_bind_int(st, 3, flags);
  Bind(st, 4, job_id);
  sqlite3_bind_blob(st, 5, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  return sqlite3_step(st) == SQLITE_DONE;
}

// As Load() reads them: a seen row without its part is left out.
Status BackfillJobScan(sqlite3* db, const std::string& path) {
  auto jobs = Prepare(db, "SELECT id, when_s, timed, status, job_id FROM jobs ORDER BY id", path);
  auto parts = Prepare(db,
                       "SELECT s.job, p.key, s.part, s.host, s.gpu, s.rank, s.culprit, "
                       "c.cause_class, c.cause, c.confidence FROM seen s JOIN parts p ON p.id = "
                       "s.part LEFT JOIN culprits c ON c.job = s.job AND c.part = s.part ORDER BY "
                       "s.job",
                       path);
  auto ins = Prepare(db, kInsertScan, path);
  if (!jobs.ok() || !parts.ok() || !ins.ok()) {
    return !jobs.ok() ? jobs.status() : !parts.ok() ? parts.status() : ins.status();
  }
  sqlite3_stmt* js = jobs->get();
  sqlite3_stmt* ps = parts->get();
  int prc = sqlite3_step(ps);
  int jrc;
  std::vector<KeyedScanPart> scan;
  while ((jrc = sqlite3_step(js)) == SQLITE_ROW) {
    int64_t job = sqlite3_column_int64(js, 0);
    scan.clear();
    while (prc == SQLITE_ROW && sqlite3_column_int64(ps, 0) <= job) {
      if (sqlite3_column_int64(ps, 0) == job) {
        KeyedScanPart& sp = scan.emplace_back();
        sp.key = TextAt(ps, 1).value_or("");
        ScanPart& p = sp.part;
        p.part = sqlite3_column_int64(ps, 2);
        p.host = IntAt(ps, 3);
        if (auto g = IntAt(ps, 4)) p.gpu = static_cast<int32_t>(*g);
        if (auto r = IntAt(ps, 5)) p.rank = static_cast<int32_t>(*r);
        p.culprit = IntAt(ps, 6).value_or(0) != 0;
        if (p.culprit) {
          sp.cause_class = TextAt(ps, 7);
          sp.cause = TextAt(ps, 8);
          p.confidence = RealAt(ps, 9);
        }
      }
      prc = sqlite3_step(ps);
    }
    int flags = (IntAt(js, 2).value_or(0) != 0 ? kScanTimed : 0) |
                (DecidesParts(TextAt(js, 3).value_or("")) ? kScanDecided : 0);
    if (!InsertScanRow(ins->get(), IntAt(js, 1).value_or(0), job, flags, TextAt(js, 4).value_or(""),
                       scan)) {
      return Status::Error(fmt::format("{}: job row {}: {}", Where(path), job, sqlite3_errmsg(db)));
    }
  }
  if (jrc != SQLITE_DONE || (prc != SQLITE_DONE && prc != SQLITE_ROW)) {
    return Status::Error(fmt::format("{}: {}", Where(path), sqlite3_errmsg(db)));
  }
  return Status::Ok();
}

Status HistoryStore::Scan(const LoadFilter& filter, JobSink& sink) const {
  if (schema_ < 2) {
    // A store of an older laggard, read before anything records to it (and
    // migrates it): the same jobs, the slow way.
    LoadFilter all_of_them = filter;
    all_of_them.last.reset();
    auto jobs = Load(all_of_them);
    if (!jobs.ok()) return jobs.status();
    FeedJobs(*jobs, sink);
    return Status::Ok();
  }
  sqlite3* db = db_.get();
  ReadTransaction read(db, path_);
  if (!read.status().ok()) return read.status();

  auto parts = Prepare(
      db, "SELECT id, key, kind, identity, uuid, serial, nic, switch_name FROM parts ORDER BY id",
      path_);
  auto hosts = Prepare(db, "SELECT id, name FROM hosts ORDER BY id", path_);
  auto rows = Prepare(db,
                      "SELECT when_s, flags, job_id, parts, job FROM job_scan WHERE when_s >= ?1 "
                      "ORDER BY when_s, job",
                      path_);
  if (!parts.ok() || !hosts.ok() || !rows.ok()) {
    return !parts.ok() ? parts.status() : !hosts.ok() ? hosts.status() : rows.status();
  }
  IdMap part_index, host_index;
  auto n_parts = QueryInt(db, "SELECT count(*) FROM parts", path_);
  auto n_hosts = QueryInt(db, "SELECT count(*) FROM hosts", path_);
  if (n_parts.ok() && n_hosts.ok()) {
    sink.Expect(static_cast<size_t>(*n_parts), static_cast<size_t>(*n_hosts));
  }
  int rc;
  sqlite3_stmt* ps = parts->get();
  while ((rc = sqlite3_step(ps)) == SQLITE_ROW) {
    PartRecord p;
    p.key = TextAt(ps, 1).value_or("");
    p.kind = ParsePartKind(TextAt(ps, 2).value_or("")).value_or(PartKind::kRank);
    p.identity = ParseIdentity(TextAt(ps, 3).value_or("")).value_or(Identity::kRank);
    p.uuid = TextAt(ps, 4);
    p.serial = TextAt(ps, 5);
    p.nic = TextAt(ps, 6);
    p.switch_name = TextAt(ps, 7);
    part_index.Add(sqlite3_column_int64(ps, 0), sink.AddPart(p));
  }
  sqlite3_stmt* hs = hosts->get();
  if (rc == SQLITE_DONE) {
    while ((rc = sqlite3_step(hs)) == SQLITE_ROW) {
      host_index.Add(sqlite3_column_int64(hs, 0), sink.AddHost(TextAt(hs, 1).value_or("")));
    }
  }
  if (rc != SQLITE_DONE) {
    return Status::Error(
        fmt::format("{}: reading parts and hosts: {}", Where(path_), sqlite3_errmsg(db)));
  }

  sqlite3_stmt* rs = rows->get();
  sqlite3_bind_int64(rs, 1, filter.since_s.value_or(INT64_MIN));
  std::vector<ScanPart> scanned;
  CompactJob job;
  while ((rc = sqlite3_step(rs)) == SQLITE_ROW) {
    job.when_s = sqlite3_column_int64(rs, 0);
    int flags = sqlite3_column_int(rs, 1);
    job.timed = (flags & kScanTimed) != 0;
    job.decided = (flags & kScanDecided) != 0;
    job.job_id = std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(rs, 2)),
                                  static_cast<size_t>(sqlite3_column_bytes(rs, 2)));
    std::string_view blob(static_cast<const char*>(sqlite3_column_blob(rs, 3)),
                          static_cast<size_t>(sqlite3_column_bytes(rs, 3)));
    if (!DecodeScanParts(blob, scanned)) {
      return Status::Error(fmt::format("{}: the scan row of job row {} is damaged", Where(path_),
                                       sqlite3_column_int64(rs, 4)));
    }
    job.parts.clear();
    for (ScanPart& sp : scanned) {
      // As Load()'s joins: a part without its parts row is left out, a
      // host without its hosts row is none.
      std::optional<uint32_t> part = part_index.Find(sp.part);
      if (!part) continue;
      CompactPart& cp = job.parts.emplace_back(CompactOf(sp));
      cp.part = *part;
      if (sp.host) cp.host = host_index.Find(*sp.host);
    }
    sink.AddJob(job);
  }
  if (rc != SQLITE_DONE) {
    return Status::Error(fmt::format("{}: reading jobs: {}", Where(path_), sqlite3_errmsg(db)));
  }
  return Status::Ok();
}

}  // namespace laggard::history
