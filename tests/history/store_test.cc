// The history store: what is recorded is read back, a job is kept once,
// and several processes recording at once lose nothing, on SQLite and on
// PostgreSQL (store_backends.h); foreign and corrupt SQLite files are
// refused and left untouched (postgres_store_test.cc: the same of a
// PostgreSQL database).

#include "history/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "history/store_backends.h"
#include "test_util.h"

namespace laggard::history {
namespace {

using testing_util::ReadFile;
using testing_util::TempDir;
using testing_util::WriteFile;

JobRecord Job(const std::string& id, int64_t when_s, bool gpu3_culprit) {
  JobRecord j;
  j.job_id = id;
  j.recorded_at_s = when_s + 3600;
  j.first_ns = when_s * 1'000'000'000;
  j.last_ns = (when_s + 600) * 1'000'000'000;
  j.status = gpu3_culprit ? "straggler" : "no_straggler";
  j.summary = gpu3_culprit ? "verdict: rank 3 is the straggler" : "verdict: no straggler";
  for (int g = 0; g < 4; ++g) {
    PartRecord p;
    p.key = "gpu:GPU-" + std::to_string(g);
    p.kind = PartKind::kGpu;
    p.identity = Identity::kHardware;
    p.host = "node-01";
    p.gpu = g;
    p.rank = g;
    p.uuid = "GPU-" + std::to_string(g);
    if (g == 3 && gpu3_culprit) {
      p.culprit = true;
      p.cause_class = "compute_slow";
      p.cause = "thermal";
      p.confidence = 0.85;
      p.slowdown = 0.21;
      p.evidence_codes = {"gpu.thermal", "step.straggler"};
    }
    j.parts.push_back(p);
  }
  PartRecord h;
  h.key = "host:node-01";
  h.kind = PartKind::kHost;
  h.identity = Identity::kHardware;
  h.host = "node-01";
  j.parts.push_back(h);
  return j;
}

// The same cases on each backend (store_backends.h).
class HistoryStoreBackendTest : public HistoryBackendTest {};

TEST_P(HistoryStoreBackendTest, WhatIsRecordedIsReadBack) {
  std::string path = Path();
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto added = store->Record(Job("job-1", 1764000000, true));
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_TRUE(*added);
  ASSERT_TRUE(store->Record(Job("job-2", 1764090000, false)).ok());

  auto reader = HistoryStore::Open(path, HistoryStore::Mode::kReadOnly);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto jobs = reader->Load({});
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  const JobRecord& a = (*jobs)[0];
  EXPECT_EQ(a.job_id, "job-1");
  EXPECT_EQ(a.status, "straggler");
  EXPECT_EQ(a.when_s(), 1764000000);
  ASSERT_EQ(a.parts.size(), 5u);
  const PartRecord& g3 = a.parts[3];
  EXPECT_EQ(g3.key, "gpu:GPU-3");
  EXPECT_TRUE(g3.culprit);
  EXPECT_EQ(g3.cause.value_or(""), "thermal");
  EXPECT_EQ(g3.rank.value_or(-1), 3);
  EXPECT_DOUBLE_EQ(g3.confidence.value_or(0), 0.85);
  EXPECT_EQ(g3.evidence_codes, (std::vector<std::string>{"gpu.thermal", "step.straggler"}));
  EXPECT_FALSE((*jobs)[1].parts[3].culprit);

  LoadFilter since;
  since.since_s = 1764050000;
  EXPECT_EQ(reader->Load(since)->size(), 1u);
}

TEST_P(HistoryStoreBackendTest, ACardKeepsItsPlaceInEachJob) {
  // GPU-3 runs in node-01 in the first job and in node-05 in the second:
  // the first job still says node-01.
  auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->Record(Job("job-1", 1764000000, true)).ok());
  JobRecord moved = Job("job-2", 1764090000, true);
  for (PartRecord& p : moved.parts) {
    p.host = "node-05";
    if (p.kind == PartKind::kGpu) p.gpu = 7 - *p.gpu;
  }
  ASSERT_TRUE(store->Record(moved).ok());
  auto jobs = store->Load({});
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].parts[3].host.value_or(""), "node-01");
  EXPECT_EQ((*jobs)[0].parts[3].gpu.value_or(-1), 3);
  EXPECT_EQ((*jobs)[1].parts[3].host.value_or(""), "node-05");
  EXPECT_EQ((*jobs)[1].parts[3].gpu.value_or(-1), 4);
}

TEST_P(HistoryStoreBackendTest, TheSameInputsUnderAnotherIdAreKeptOnce) {
  auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok());
  JobRecord a = Job("/runs/job-1", 1764000000, true);
  a.fingerprint = "0123456789abcdef";
  JobRecord copy = Job("/archive/job-1", 1764000000, true);
  copy.fingerprint = a.fingerprint;
  EXPECT_TRUE(*store->Record(a));
  EXPECT_FALSE(*store->Record(copy));
  EXPECT_EQ(store->Load({})->size(), 1u);
}

TEST_P(HistoryStoreBackendTest, TwoRecordsOfTheSameJobAreKeptOnce) {
  auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(*store->Record(Job("job-1", 1764000000, true)));
  auto again = store->Record(Job("job-1", 1764000000, false));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  auto jobs = store->Load({});
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].status, "straggler");  // the first record stays
}

TEST(HistoryStoreTest, AFileThatIsNotSqliteIsRefusedAndLeftUntouched) {
  TempDir dir;
  std::string path = WriteFile(dir.File("notes.db"), "my notes, not a database\n");
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("not an SQLite database"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(ReadFile(path), "my notes, not a database\n");
}

TEST(HistoryStoreTest, AnotherProgramsDatabaseIsRefusedAndLeftUntouched) {
  TempDir dir;
  std::string path = dir.File("other.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1)", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  std::string before = ReadFile(path);
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("another program"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(ReadFile(path), before);
}

TEST(HistoryStoreTest, AnotherProgramsEmptyDatabaseIsRefusedToo) {
  // No tables yet, but its own application_id, or its own user_version.
  for (const char* pragma : {"PRAGMA application_id = 42", "PRAGMA user_version = 7"}) {
    TempDir dir;
    std::string path = dir.File("other.db");
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, pragma, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    std::string before = ReadFile(path);
    auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
    ASSERT_FALSE(store.ok()) << pragma;
    EXPECT_NE(store.status().message().find("another program"), std::string::npos)
        << store.status().message();
    EXPECT_EQ(ReadFile(path), before);
  }
}

TEST(HistoryStoreTest, WritingToAnExistingStoreOnlyNeverCreatesOne) {
  TempDir dir;
  auto store = HistoryStore::Open(dir.File("typo/h.db"), HistoryStore::Mode::kWriteExisting);
  ASSERT_FALSE(store.ok());
  EXPECT_FALSE(std::filesystem::exists(dir.File("typo")));
}

TEST(HistoryStoreTest, ACorruptStoreIsRefusedAndLeftUntouched) {
  TempDir dir;
  std::string path = dir.File("h.db");
  {
    auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(store->Record(Job("job-1", 1764000000, true)).ok());
  }
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  std::string bytes = ReadFile(path);
  ASSERT_GT(bytes.size(), 200u);
  for (size_t i = 100; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  WriteFile(path, bytes);
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  if (store.ok()) {
    // SQLite may open a damaged file; then reading or writing it fails.
    auto jobs = store->Load({});
    auto added = store->Record(Job("job-2", 1764000000, false));
    EXPECT_FALSE(jobs.ok() && added.ok());
  }
  EXPECT_EQ(ReadFile(path).size(), bytes.size());
}

TEST(HistoryStoreTest, ANewerSchemaIsRefused) {
  TempDir dir;
  std::string path = dir.File("h.db");
  { ASSERT_TRUE(HistoryStore::Open(path, HistoryStore::Mode::kReadWrite).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("newer laggard"), std::string::npos);
}

TEST(HistoryStoreTest, ReadingAMissingStoreSaysHowToFillIt) {
  TempDir dir;
  auto store = HistoryStore::Open(dir.File("none.db"), HistoryStore::Mode::kReadOnly);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("--record"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.File("none.db")));
}

TEST_P(HistoryStoreBackendTest, EightProcessesRecordingAtOnceLoseNothing) {
  std::string path = Path();
  constexpr int kProcesses = 8;
  constexpr int kJobsEach = 1000;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Each process opens its own store, as diagnose --record does.
      auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
      if (!store.ok()) _exit(10);
      for (int i = 0; i < kJobsEach; ++i) {
        auto added = store->Record(
            Job(std::to_string(p) + "-" + std::to_string(i), 1764000000 + i, i % 5 == 0));
        if (!added.ok() || !*added) _exit(11);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit " << status;
  }
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadOnly);
  ASSERT_TRUE(store.ok());
  auto jobs = store->Load({});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), static_cast<size_t>(kProcesses * kJobsEach));
  size_t parts = 0;
  for (const JobRecord& j : *jobs) parts += j.parts.size();
  EXPECT_EQ(parts, static_cast<size_t>(kProcesses * kJobsEach * 5));
}

INSTANTIATE_TEST_SUITE_P(Backends, HistoryStoreBackendTest, testing::Values("sqlite", "postgresql"),
                         BackendName);

}  // namespace
}  // namespace laggard::history
