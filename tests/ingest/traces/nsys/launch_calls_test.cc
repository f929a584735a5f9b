// LaunchCalls: the runtime calls of an nsys export by (process,
// correlationId), on small in-memory tables in the real column layout.

#include "ingest/traces/nsys/launch_calls.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include <fmt/format.h>

namespace laggard::nsys_sqlite {
namespace {

constexpr int64_t kPidA = 283534665187328;  // globalPid of the corpus export
constexpr int64_t kPidB = kPidA + (int64_t{7} << 24);

class LaunchCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    Exec(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER "
        "NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER)");
  }
  void TearDown() override { sqlite3_close(db_); }

  void Exec(const std::string& sql) {
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
  }
  // A call at `start` in process `pid` (its thread 95), or with no globalTid.
  void Call(std::optional<int64_t> pid, std::optional<int64_t> corr, int64_t start) {
    Exec(
        fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({}, {}, 1, {}, {}, 7, 0, "
                    "NULL)",
                    start, start + 10, pid ? std::to_string(*pid + 95) : "NULL",
                    corr ? std::to_string(*corr) : "NULL"));
  }
  LaunchCalls Read(bool by_pid, uint64_t hint = 16) {
    LaunchCalls calls;
    QueryResult r = calls.Read(db_, "CUPTI_ACTIVITY_KIND_RUNTIME", by_pid, hint);
    EXPECT_FALSE(r.error) << *r.error;
    return calls;
  }

  sqlite3* db_ = nullptr;
};

TEST_F(LaunchCallsTest, FindsTheEarliestCallOfEachCorrelationInItsProcess) {
  Call(kPidA, 1, 100);
  Call(kPidA, 2, 200);
  Call(kPidA, 2, 150);  // a second call with id 2: the earliest counts
  Call(kPidB, 1, 900);  // the same id in another process
  LaunchCalls calls = Read(true);
  EXPECT_EQ(calls.calls(), 4u);
  EXPECT_EQ(calls.Find(kPidA >> 24, 1), 100);
  EXPECT_EQ(calls.Find(kPidA >> 24, 2), 150);
  EXPECT_EQ(calls.Find(kPidB >> 24, 1), 900);
  EXPECT_EQ(calls.Find(kPidB >> 24, 2), std::nullopt);
  EXPECT_EQ(calls.Find(std::nullopt, 1), std::nullopt);  // an op of no process
  EXPECT_EQ(calls.Find(12345, 1), std::nullopt);         // a process with no calls
  EXPECT_EQ(calls.FindAnyProcess(1), 100);
  EXPECT_EQ(calls.FindAnyProcess(3), std::nullopt);
}

TEST_F(LaunchCallsTest, IdsPastTheDenseRangeAndNegativeIdsAreFound) {
  // A hint of 1 row gives a dense budget of 65,538 entries: these go sparse.
  Call(kPidA, 5, 50);
  Call(kPidA, int64_t{1} << 40, 70);
  Call(kPidA, int64_t{1} << 40, 60);
  Call(kPidA, -3, 30);
  Call(kPidB, int64_t{1} << 40, 80);
  LaunchCalls calls = Read(true, 1);
  EXPECT_EQ(calls.Find(kPidA >> 24, 5), 50);
  EXPECT_EQ(calls.Find(kPidA >> 24, int64_t{1} << 40), 60);
  EXPECT_EQ(calls.Find(kPidB >> 24, int64_t{1} << 40), 80);
  EXPECT_EQ(calls.Find(kPidA >> 24, -3), 30);
  EXPECT_EQ(calls.Find(kPidA >> 24, (int64_t{1} << 40) + 1), std::nullopt);
  EXPECT_EQ(calls.FindAnyProcess(int64_t{1} << 40), 60);
}

TEST_F(LaunchCallsTest, RowsWithoutCorrelationOrProcessMatchNothing) {
  Call(kPidA, std::nullopt, 10);
  Call(std::nullopt, 4, 20);  // no globalTid: no process to match
  Call(kPidA, 4, 40);
  LaunchCalls calls = Read(true);
  EXPECT_EQ(calls.calls(), 1u);
  EXPECT_EQ(calls.Find(kPidA >> 24, 4), 40);
}

TEST_F(LaunchCallsTest, WithoutProcessesCorrelationAloneMatches) {
  Call(kPidA, 4, 40);
  Call(kPidB, 4, 30);
  Call(std::nullopt, 5, 50);
  LaunchCalls calls = Read(false);
  EXPECT_FALSE(calls.by_pid());
  EXPECT_EQ(calls.Find(std::nullopt, 4), 30);
  EXPECT_EQ(calls.Find(kPidA >> 24, 5), 50);
}

TEST_F(LaunchCallsTest, AnEmptyTableFindsNothing) {
  LaunchCalls calls = Read(true);
  EXPECT_EQ(calls.calls(), 0u);
  EXPECT_EQ(calls.Find(kPidA >> 24, 1), std::nullopt);
  EXPECT_EQ(calls.FindAnyProcess(1), std::nullopt);
}

TEST_F(LaunchCallsTest, AFailedQueryIsReported) {
  Exec("DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME");
  LaunchCalls calls;
  QueryResult r = calls.Read(db_, "CUPTI_ACTIVITY_KIND_RUNTIME", true, 0);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(calls.Find(kPidA >> 24, 1), std::nullopt);
}

}  // namespace
}  // namespace laggard::nsys_sqlite
