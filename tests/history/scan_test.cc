// The compact job rows of the history store (scan_codec.h, HistoryStore::
// Scan): a part packs and unpacks to itself, a damaged row is an error, and
// the report built from Scan() is the report built from Load() on varied
// fleets, for any thresholds and window, and after a schema-1 store is
// migrated.

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <limits>
#include <random>

#include "history/fleet_report.h"
#include "history/scan_codec.h"
#include "history/store.h"
#include "history/store_backends.h"
#include "test_util.h"

namespace laggard::history {
namespace {

using testing_util::TempDir;

TEST(ScanCodecTest, PartsPackAndUnpackToThemselves) {
  std::vector<ScanPart> parts;
  parts.push_back({7, 3, 0, 0, false, {}, {}, {}});
  parts.push_back({2, 3, -1, INT32_MAX, true, "compute_slow", "thermal", 0.85});  // same host
  parts.push_back({1LL << 40, std::nullopt, INT32_MIN, std::nullopt, true, "unknown", {}, 1.0});
  parts.push_back({6, -4, {}, {}, false, {}, {}, {}});  // a host id SQLite allows, if odd
  parts.push_back({5, 9, std::nullopt, 12, true, "", "", std::nullopt});
  std::string blob = EncodeScanParts(parts);
  std::vector<ScanPart> back;
  ASSERT_TRUE(DecodeScanParts(blob, back));
  ASSERT_EQ(back.size(), parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(back[i].part, parts[i].part) << i;
    EXPECT_EQ(back[i].host, parts[i].host) << i;
    EXPECT_EQ(back[i].gpu, parts[i].gpu) << i;
    EXPECT_EQ(back[i].rank, parts[i].rank) << i;
    EXPECT_EQ(back[i].culprit, parts[i].culprit) << i;
    EXPECT_EQ(back[i].cause_class, parts[i].cause_class) << i;
    EXPECT_EQ(back[i].cause, parts[i].cause) << i;
    EXPECT_EQ(back[i].confidence, parts[i].confidence) << i;
  }
  EXPECT_EQ(back[3].host, -4);
  // A part's host given again after a part without one.
  EXPECT_EQ(back[4].host, 9);
}

TEST(ScanCodecTest, ANaNConfidenceIsLeftOutAsSqliteLeavesIt) {
  std::vector<ScanPart> parts{
      {1, {}, {}, {}, true, "compute_slow", {}, std::numeric_limits<double>::quiet_NaN()}};
  std::vector<ScanPart> back;
  ASSERT_TRUE(DecodeScanParts(EncodeScanParts(parts), back));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_FALSE(back[0].confidence.has_value());
}

TEST(ScanCodecTest, EveryCutOfARowIsDamageNotACrash) {
  std::vector<ScanPart> parts{{4, 1, 2, 3, true, "network", "port_down", 0.7},
                              {5, 1, 3, 4, false, {}, {}, {}}};
  std::string blob = EncodeScanParts(parts);
  std::vector<ScanPart> back;
  for (size_t n = 0; n < blob.size(); ++n) {
    EXPECT_FALSE(DecodeScanParts(std::string_view(blob).substr(0, n), back)) << n;
  }
  // A count far past what the bytes can hold.
  EXPECT_FALSE(DecodeScanParts(std::string("\xff\xff\x03", 3), back));
  // A same-host flag on the first part.
  EXPECT_FALSE(DecodeScanParts(std::string("\x01\x04\x02", 3), back));
  // A count damaged downwards leaves bytes over.
  std::string fewer = blob;
  fewer[0] = 1;
  EXPECT_FALSE(DecodeScanParts(fewer, back));
  // A varint past 64 bits.
  EXPECT_FALSE(
      DecodeScanParts(std::string("\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 12), back));
}

TEST(ScanCodecTest, PartIdsAnyDistanceApartPackToThemselves) {
  std::vector<ScanPart> parts{{INT64_MAX, {}, {}, {}, false, {}, {}, {}},
                              {INT64_MIN, {}, {}, {}, false, {}, {}, {}},
                              {0, {}, {}, {}, false, {}, {}, {}}};
  std::vector<ScanPart> back;
  ASSERT_TRUE(DecodeScanParts(EncodeScanParts(parts), back));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].part, INT64_MAX);
  EXPECT_EQ(back[1].part, INT64_MIN);
  EXPECT_EQ(back[2].part, 0);
}

// A job of a varied fleet: 6 hosts of 4 GPUs, cards that move, parts known
// by place and by rank only, every verdict status, culprits of every class
// with and without cause and confidence, timed and untimed.
JobRecord RandomJob(int i, std::mt19937& rng) {
  static const char* kStatus[] = {"straggler", "no_straggler", "hang", "inconclusive", "job_wide"};
  static const char* kClass[] = {"compute_slow", "imbalance", "external", "network", "host"};
  JobRecord j;
  j.job_id = "job-" + std::to_string(i);
  j.recorded_at_s = 1'700'000'000 + (rng() % 40) * 3'600;  // out of order, ties
  if (rng() % 4 != 0) j.first_ns = (j.recorded_at_s - 600) * 1'000'000'000LL;
  j.status = kStatus[rng() % 5];
  int hosts = 1 + static_cast<int>(rng() % 3);
  int first = static_cast<int>(rng() % 6);
  for (int k = 0; k < hosts; ++k) {
    std::string host = "node-" + std::to_string((first + k) % 6);
    PartRecord h;
    h.key = "host:" + host;
    h.kind = PartKind::kHost;
    h.identity = Identity::kHardware;
    h.host = host;
    j.parts.push_back(h);
    for (int g = 0; g < 4; ++g) {
      PartRecord p;
      p.kind = PartKind::kGpu;
      p.host = host;
      p.gpu = g;
      p.rank = k * 4 + g;
      if (rng() % 5 == 0) {  // known by place
        p.key = "gpu@" + host + "/" + std::to_string(g);
        p.identity = Identity::kLocation;
      } else {  // a card of 30, wherever it is now
        p.uuid = "GPU-" + std::to_string(rng() % 30);
        p.key = "gpu:" + *p.uuid;
        p.identity = Identity::kHardware;
      }
      if (std::any_of(j.parts.begin(), j.parts.end(),
                      [&](const PartRecord& q) { return q.key == p.key; })) {
        continue;
      }
      j.parts.push_back(p);
    }
  }
  if (rng() % 6 == 0) {
    PartRecord r;
    r.key = "rank:" + std::to_string(rng() % 4);
    r.kind = PartKind::kRank;
    r.identity = Identity::kRank;
    r.rank = static_cast<int32_t>(rng() % 4);
    j.parts.push_back(r);
  }
  int culprits = static_cast<int>(rng() % 3);
  for (int c = 0; c < culprits; ++c) {
    PartRecord& p = j.parts[rng() % j.parts.size()];
    p.culprit = true;
    if (rng() % 6 != 0) p.cause_class = kClass[rng() % 5];
    if (rng() % 3 != 0) p.cause = rng() % 2 ? "thermal" : "";
    switch (rng() % 4) {
      case 0: break;
      case 1: p.confidence = 0.3; break;
      case 2: p.confidence = std::nan(""); break;
      default: p.confidence = 0.5 + 0.1 * (rng() % 5); break;
    }
  }
  std::sort(j.parts.begin(), j.parts.end(),
            [](const PartRecord& a, const PartRecord& b) { return a.key < b.key; });
  return j;
}

FleetReport Scanned(const HistoryStore& store, const LoadFilter& f, const ReportOptions& o) {
  FleetTally tally(o);
  Status s = store.Scan(f, tally);
  EXPECT_TRUE(s.ok()) << s.message();
  return tally.Finish();
}

FleetReport Loaded(const HistoryStore& store, const LoadFilter& f, const ReportOptions& o) {
  auto jobs = store.Load(f);
  EXPECT_TRUE(jobs.ok());
  return BuildFleetReport(jobs.ok() ? *jobs : std::vector<JobRecord>{}, o);
}

void ExpectSameReports(const HistoryStore& store, int seed) {
  for (int last_jobs : {1, 3, 10, 100000}) {
    for (double min_confidence : {0.0, 0.5, 1.0}) {
      for (double share : {0.0, 0.5, 1.0}) {
        ReportOptions o;
        o.last_jobs = last_jobs;
        o.min_confidence = min_confidence;
        o.chronic_share = share;
        o.chronic_min_jobs = last_jobs == 1 ? 1 : 3;
        for (std::optional<int64_t> since :
             {std::optional<int64_t>(), std::optional<int64_t>(1'700'000'000 + 20 * 3'600)}) {
          LoadFilter f;
          f.since_s = since;
          FleetReport scanned = Scanned(store, f, o);
          FleetReport loaded = Loaded(store, f, o);
          EXPECT_EQ(scanned.offenders.size(), loaded.offenders.size());
          ASSERT_TRUE(scanned == loaded)
              << "seed " << seed << ", last " << last_jobs << ", min confidence " << min_confidence
              << ", share " << share << ", since " << since.value_or(0);
        }
      }
    }
  }
}

// The same cases on each backend (store_backends.h).
class HistoryScanBackendTest : public HistoryBackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, HistoryScanBackendTest, testing::Values("sqlite", "postgresql"),
                         BackendName);

TEST_P(HistoryScanBackendTest, TheReportFromScanIsTheReportFromLoad) {
  for (int seed = 1; seed <= 4; ++seed) {
    auto store = HistoryStore::Open(Fresh(), HistoryStore::Mode::kReadWrite);
    ASSERT_TRUE(store.ok()) << store.status().message();
    std::mt19937 rng(seed);
    for (int i = 0; i < 120; ++i) ASSERT_TRUE(store->Record(RandomJob(i, rng)).ok());
    // A second record of a job is kept once, by Scan too.
    std::mt19937 again(seed);
    ASSERT_FALSE(*store->Record(RandomJob(0, again)));
    FleetReport all = Scanned(*store, {}, {});
    EXPECT_EQ(all.jobs, 120);
    EXPECT_FALSE(all.offenders.empty());
    ExpectSameReports(*store, seed);
  }
}

Status Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  char* msg = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  std::string text = msg != nullptr ? msg : "";
  sqlite3_free(msg);
  sqlite3_close(db);
  return rc == SQLITE_OK ? Status::Ok() : Status::Error(text);
}

TEST(HistoryScanTest, ASchemaOneStoreGetsItsScanRowsWhenMigrated) {
  TempDir dir;
  std::string path = dir.path() + "/h.db";
  {
    auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
    ASSERT_TRUE(store.ok());
    std::mt19937 rng(7);
    for (int i = 0; i < 80; ++i) ASSERT_TRUE(store->Record(RandomJob(i, rng)).ok());
  }
  // As a laggard of schema 1 left it.
  ASSERT_TRUE(Sql(path, "DROP TABLE job_scan; PRAGMA user_version = 1").ok());
  {
    // Read before anything records to it: the same report, loaded.
    auto old = HistoryStore::Open(path, HistoryStore::Mode::kReadOnly);
    ASSERT_TRUE(old.ok()) << old.status().message();
    EXPECT_EQ(Scanned(*old, {}, {}), Loaded(*old, {}, {}));
    EXPECT_EQ(Scanned(*old, {}, {}).jobs, 80);
  }

  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok()) << store.status().message();
  FleetReport all = Scanned(*store, {}, {});
  EXPECT_EQ(all.jobs, 80);
  ExpectSameReports(*store, 7);
}

// A card slow at 14:00 on five days, healthy at other hours: periodic (the
// first 2-hour window that holds 14:00),
// which only timed jobs can show.
TEST_P(HistoryScanBackendTest, ATimedPeriodicCulpritIsFoundByScan) {
  auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok());
  for (int day = 0; day < 5; ++day) {
    for (int hour : {2, 8, 14, 20}) {
      JobRecord j;
      j.job_id = "job-" + std::to_string(day) + "-" + std::to_string(hour);
      int64_t when = 1'700'006'400 + day * 86'400 + hour * 3'600;  // 00:00 UTC + hour
      j.recorded_at_s = when + 86'400 * 30;                        // recorded much later
      j.first_ns = when * 1'000'000'000LL;
      j.status = hour == 14 ? "straggler" : "no_straggler";
      PartRecord p;
      p.key = "gpu:GPU-7";
      p.kind = PartKind::kGpu;
      p.identity = Identity::kHardware;
      p.uuid = "GPU-7";
      p.host = "node-01";
      p.gpu = 7;
      p.rank = 7;
      if (hour == 14) {
        p.culprit = true;
        p.cause_class = "compute_slow";
        p.confidence = 0.9;
      }
      j.parts.push_back(p);
      ASSERT_TRUE(store->Record(j).ok());
    }
  }
  FleetReport r = Scanned(*store, {}, {});
  ASSERT_FALSE(r.offenders.empty());
  EXPECT_EQ(r.offenders[0].part.key, "gpu:GPU-7");
  EXPECT_EQ(r.offenders[0].periodic.value_or(""), "13:00-15:00 UTC in 5 of 5");
  EXPECT_EQ(r, Loaded(*store, {}, {}));
}

TEST(HistoryScanTest, AFailedMigrationLeavesSchemaOne) {
  TempDir dir;
  std::string path = dir.path() + "/h.db";
  {
    auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
    ASSERT_TRUE(store.ok());
    std::mt19937 rng(3);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->Record(RandomJob(i, rng)).ok());
  }
  // A table in the way of the migration's.
  ASSERT_TRUE(
      Sql(path, "DROP TABLE job_scan; CREATE TABLE job_scan (x); PRAGMA user_version = 1").ok());
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("migrating to schema 2"), std::string::npos);
  ASSERT_TRUE(Sql(path, "DROP TABLE job_scan").ok());
  // Nothing else changed: the jobs are all there, at schema 1.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 5);
  sqlite3_finalize(st);
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(HistoryScanTest, ADamagedScanRowIsAnErrorThatNamesIt) {
  TempDir dir;
  std::string path = dir.path() + "/h.db";
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok());
  std::mt19937 rng(5);
  ASSERT_TRUE(store->Record(RandomJob(0, rng)).ok());
  ASSERT_TRUE(Sql(path, "UPDATE job_scan SET parts = x'05'").ok());
  FleetTally tally({});
  Status s = store->Scan({}, tally);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the scan row of job row 1 is damaged"), std::string::npos)
      << s.message();
}

TEST_P(HistoryScanBackendTest, LoadCanReturnTheLastJobsOnly) {
  auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok());
  std::mt19937 rng(9);
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(store->Record(RandomJob(i, rng)).ok());
  auto all = store->Load({});
  LoadFilter f;
  f.last = 7;
  auto last = store->Load(f);
  ASSERT_TRUE(all.ok() && last.ok());
  ASSERT_EQ(last->size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ((*last)[i].job_id, (*all)[all->size() - 7 + i].job_id) << i;
    EXPECT_EQ((*last)[i].parts.size(), (*all)[all->size() - 7 + i].parts.size()) << i;
  }
}

}  // namespace
}  // namespace laggard::history
