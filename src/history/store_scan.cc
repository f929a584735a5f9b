// job_scan: a job's parts in one row, written with the job (store.cc),
// filled for the jobs of an older store by its migration, read by Scan().

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "history/sql.h"
#include "history/store.h"
#include "history/store_internal.h"

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

Status InsertScanRow(Statement& st, int64_t when_s, int64_t job_row, int flags,
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
  st.Reset();
  st.BindInt(1, when_s);
  st.BindInt(2, job_row);
  st.BindInt(3, flags);
  st.BindText(4, job_id);
  st.BindBlob(5, blob);
  auto row = st.Step();
  return row.ok() ? Status::Ok() : row.status();
}

// As Load() reads them: a seen row without its part is left out. The jobs
// and their parts are read side by side, one job's parts at a time (a
// store of 10^6 jobs is migrated in the memory of one). SQLite only: a
// PostgreSQL store began at schema 2.
Status BackfillJobScan(Db& db) {
  auto jobs = db.Prepare("SELECT id, when_s, timed, status, job_id FROM jobs ORDER BY id");
  auto parts = db.Prepare(
      "SELECT s.job, p.key, s.part, s.host, s.gpu, s.rank, s.culprit, c.cause_class, c.cause, "
      "c.confidence FROM seen s JOIN parts p ON p.id = s.part LEFT JOIN culprits c ON c.job = "
      "s.job AND c.part = s.part ORDER BY s.job");
  auto ins = db.Prepare(kInsertScan);
  if (!jobs.ok() || !parts.ok() || !ins.ok()) {
    return !jobs.ok() ? jobs.status() : !parts.ok() ? parts.status() : ins.status();
  }
  Statement& js = **jobs;
  Statement& ps = **parts;
  auto part_row = ps.Step();
  std::vector<KeyedScanPart> scan;
  while (true) {
    auto job_row = js.Step();
    if (!job_row.ok()) return job_row.status();
    if (!*job_row) break;
    int64_t job = js.Int(0).value_or(0);
    scan.clear();
    while (part_row.ok() && *part_row) {
      const int64_t part_job = ps.Int(0).value_or(0);
      if (part_job > job) break;
      if (part_job == job) {
        KeyedScanPart& sp = scan.emplace_back();
        sp.key = ps.TextCopy(1).value_or("");
        ScanPart& p = sp.part;
        p.part = ps.Int(2).value_or(0);
        p.host = ps.Int(3);
        if (auto g = ps.Int(4)) p.gpu = static_cast<int32_t>(*g);
        if (auto r = ps.Int(5)) p.rank = static_cast<int32_t>(*r);
        p.culprit = ps.Int(6).value_or(0) != 0;
        if (p.culprit) {
          sp.cause_class = ps.TextCopy(7);
          sp.cause = ps.TextCopy(8);
          p.confidence = ps.Real(9);
        }
      }
      part_row = ps.Step();
    }
    if (!part_row.ok()) return part_row.status();
    int flags = (js.Int(2).value_or(0) != 0 ? kScanTimed : 0) |
                (DecidesParts(js.Text(3).value_or("")) ? kScanDecided : 0);
    if (Status s = InsertScanRow(**ins, js.Int(1).value_or(0), job, flags,
                                 js.TextCopy(4).value_or(""), scan);
        !s.ok()) {
      return Status::Error(fmt::format("job row {}: {}", job, s.message()));
    }
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
  Db& db = *db_;
  ReadTransaction read(db);
  if (!read.status().ok()) return read.status();

  IdMap part_index, host_index;
  auto n_parts = db.QueryInt("SELECT count(*) FROM parts");
  auto n_hosts = db.QueryInt("SELECT count(*) FROM hosts");
  if (n_parts.ok() && n_hosts.ok()) {
    sink.Expect(static_cast<size_t>(*n_parts), static_cast<size_t>(*n_hosts));
  }
  auto parts = db.Prepare(
      "SELECT id, key, kind, identity, uuid, serial, nic, switch_name FROM parts ORDER BY id");
  if (!parts.ok()) return parts.status();
  Statement& ps = **parts;
  auto failed = [&](const char* what, const Status& why) { return InContext(path_, what, why); };
  while (true) {
    auto row = ps.Step();
    if (!row.ok()) return failed("reading parts", row.status());
    if (!*row) break;
    PartRecord p;
    p.key = ps.TextCopy(1).value_or("");
    p.kind = ParsePartKind(ps.Text(2).value_or("")).value_or(PartKind::kRank);
    p.identity = ParseIdentity(ps.Text(3).value_or("")).value_or(Identity::kRank);
    p.uuid = ps.TextCopy(4);
    p.serial = ps.TextCopy(5);
    p.nic = ps.TextCopy(6);
    p.switch_name = ps.TextCopy(7);
    part_index.Add(ps.Int(0).value_or(-1), sink.AddPart(p));
  }
  auto hosts = db.Prepare("SELECT id, name FROM hosts ORDER BY id");
  if (!hosts.ok()) return hosts.status();
  Statement& hs = **hosts;
  while (true) {
    auto row = hs.Step();
    if (!row.ok()) return failed("reading hosts", row.status());
    if (!*row) break;
    host_index.Add(hs.Int(0).value_or(-1), sink.AddHost(hs.TextCopy(1).value_or("")));
  }

  auto rows = db.Prepare(
      "SELECT when_s, flags, job_id, parts, job FROM job_scan WHERE when_s >= ?1 ORDER BY when_s, "
      "job");
  if (!rows.ok()) return rows.status();
  Statement& rs = **rows;
  rs.BindInt(1, filter.since_s.value_or(INT64_MIN));
  std::vector<ScanPart> scanned;
  CompactJob job;
  while (true) {
    auto row = rs.Step();
    if (!row.ok()) return failed("reading jobs", row.status());
    if (!*row) break;
    job.when_s = rs.Int(0).value_or(0);
    int flags = static_cast<int>(rs.Int(1).value_or(0));
    job.timed = (flags & kScanTimed) != 0;
    job.decided = (flags & kScanDecided) != 0;
    job.job_id = rs.Text(2).value_or("");
    if (!DecodeScanParts(rs.Blob(3), scanned)) {
      return Status::Error(fmt::format("{}: the scan row of job row {} is damaged", Where(path_),
                                       rs.Int(4).value_or(0)));
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
  return Status::Ok();
}

}  // namespace laggard::history
