// The history store on PostgreSQL, what only a database server has: the
// store keeps to its own schema (another program's tables of the same
// names, elsewhere, are untouched; its schema holding anything else is
// refused and left as it was), a newer schema is refused, a missing store
// is never created by a reader nor a read store written, a part learnt
// again keeps its id; on the server `history_postgres` starts
// (store_backends.h), skipped without it. A server that cannot be reached
// is a clear error that does not print the password: in every build.

#include <gtest/gtest.h>

#include "history/sql_postgres.h"
#include "history/store.h"
#include "history/store_backends.h"

namespace laggard::history {
namespace {

class PostgresStoreTest : public HistoryBackendTest {
 protected:
  // One statement's first value as text ("" for none).
  std::string Query(const std::string& sql) {
    auto db = PostgresDb::Connect(Path(), "test");
    EXPECT_TRUE(db.ok());
    if (!db.ok()) return "";
    auto st = (*db)->Prepare(sql);
    EXPECT_TRUE(st.ok());
    auto row = (*st)->Step();
    EXPECT_TRUE(row.ok()) << row.status().message();
    return row.ok() && *row ? (*st)->TextCopy(0).value_or("") : "";
  }
  Status Exec(const std::string& sql) {
    auto db = PostgresDb::Connect(Path(), "test");
    return db.ok() ? (*db)->Exec(sql) : db.status();
  }
};
INSTANTIATE_TEST_SUITE_P(Backends, PostgresStoreTest, testing::Values("postgresql"), BackendName);

JobRecord OneJob(const std::string& id) {
  JobRecord j;
  j.job_id = id;
  j.recorded_at_s = 1'764'000'000;
  j.status = "straggler";
  PartRecord p;
  p.key = "host:node-01";
  p.kind = PartKind::kHost;
  p.identity = Identity::kHardware;
  p.host = "node-01";
  p.culprit = true;
  p.cause_class = "communication";
  p.confidence = 0.75;
  j.parts.push_back(p);
  return j;
}

TEST_P(PostgresStoreTest, ItKeepsToItsSchemaAndLeavesOtherTablesAlone) {
  ASSERT_TRUE(Exec("DROP TABLE IF EXISTS public.jobs; CREATE TABLE public.jobs (x TEXT); "
                   "INSERT INTO public.jobs VALUES ('theirs')")
                  .ok());
  {
    auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE(*store->Record(OneJob("job-1")));
  }
  EXPECT_EQ(Query("SELECT x FROM public.jobs"), "theirs");
  EXPECT_EQ(Query("SELECT job_id FROM laggard.jobs"), "job-1");
  EXPECT_EQ(Query("SELECT value FROM laggard.meta WHERE key = 'schema'"),
            std::to_string(kSchemaVersion));
  ASSERT_TRUE(Exec("DROP TABLE public.jobs").ok());
}

TEST_P(PostgresStoreTest, AnotherProgramsSchemaOfTheNameIsRefusedAndLeftUntouched) {
  ASSERT_TRUE(
      Exec(
          "CREATE SCHEMA laggard; CREATE TABLE laggard.t (x INT); INSERT INTO laggard.t VALUES (7)")
          .ok());
  auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("another program"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(Query("SELECT x FROM laggard.t"), "7");
  EXPECT_EQ(Query("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'laggard'"),
            "1");
}

TEST_P(PostgresStoreTest, ANewerSchemaIsRefused) {
  { ASSERT_TRUE(HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite).ok()); }
  ASSERT_TRUE(Exec("UPDATE laggard.meta SET value = '99' WHERE key = 'schema'").ok());
  auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("newer laggard (schema 99"), std::string::npos)
      << store.status().message();
}

TEST_P(PostgresStoreTest, ReadingAMissingStoreSaysHowToFillItAndCreatesNothing) {
  for (auto mode : {HistoryStore::Mode::kReadOnly, HistoryStore::Mode::kWriteExisting}) {
    auto store = HistoryStore::Open(Path(), mode);
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find("--record"), std::string::npos)
        << store.status().message();
  }
  EXPECT_EQ(Query("SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'laggard'"),
            "0");
}

// No server needed: these run in every build.
TEST(PostgresUriTest, AServerThatCannotBeReachedIsAClearErrorWithoutThePassword) {
  for (const char* uri :
       {"postgresql://fleet:s3cret@/history?host=/nonexistent",
        "postgresql:///history?host=/nonexistent&password=s3cret&user=fleet",
        "postgres://fleet:s3cret@/history?sslpassword=s3cret&host=/nonexistent"}) {
    auto store = HistoryStore::Open(uri, HistoryStore::Mode::kReadOnly);
    ASSERT_FALSE(store.ok()) << uri;
    std::string m = store.status().message();
    EXPECT_NE(m.find("cannot connect"), std::string::npos) << m;
    EXPECT_EQ(m.find("s3cret"), std::string::npos) << m;
    EXPECT_NE(m.find("***"), std::string::npos) << m;
  }
}

TEST(PostgresUriTest, ThePasswordIsLeftOutOfWhatIsShown) {
  EXPECT_EQ(PostgresDisplay("postgresql://u:pw@db.example.com:5432/fleet"),
            "postgresql://u:***@db.example.com:5432/fleet");
  EXPECT_EQ(PostgresDisplay("postgresql://db/fleet?user=u&password=pw&sslmode=require"),
            "postgresql://db/fleet?user=u&password=***&sslmode=require");
  EXPECT_EQ(PostgresDisplay("postgresql:///fleet?host=/run/postgresql"),
            "postgresql:///fleet?host=/run/postgresql");
  EXPECT_EQ(PostgresDisplay("postgres://u@db/fleet?sslpassword=x"),
            "postgres://u@db/fleet?sslpassword=***");
  // An '@' in the query is no user's.
  EXPECT_EQ(PostgresDisplay("postgresql:///fleet?host=/tmp&application_name=a:b@c"),
            "postgresql:///fleet?host=/tmp&application_name=a:b@c");
}

TEST_P(PostgresStoreTest, AStoreOpenedToReadIsNeverWritten) {
  { ASSERT_TRUE(HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite).ok()); }
  auto reader = HistoryStore::Open(Path(), HistoryStore::Mode::kReadOnly);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_FALSE(reader->Record(OneJob("job-1")).ok());
  EXPECT_FALSE(reader->RecordAction({}).ok());
  EXPECT_EQ(Query("SELECT count(*) FROM laggard.jobs"), "0");
}

TEST_P(PostgresStoreTest, ValuesKeepTheirTypesAndBlobsTheirBytes) {
  auto store = HistoryStore::Open(Path(), HistoryStore::Mode::kReadWrite);
  ASSERT_TRUE(store.ok());
  JobRecord j = OneJob("job-'quoted' ?1 $1");
  j.first_ns = INT64_MAX - 5;
  j.parts[0].confidence = 0.1 + 0.2;  // not a short decimal
  j.parts[0].cause = "it's \"odd\"\ttext";
  j.throughput_lost = 1e-300;
  ASSERT_TRUE(*store->Record(j));
  auto jobs = store->Load({});
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job_id, j.job_id);
  EXPECT_EQ((*jobs)[0].first_ns, j.first_ns);
  EXPECT_EQ((*jobs)[0].throughput_lost, j.throughput_lost);
  EXPECT_EQ((*jobs)[0].parts[0].confidence, j.parts[0].confidence);
  EXPECT_EQ((*jobs)[0].parts[0].cause, j.parts[0].cause);
  // A second record with the card's serial learnt updates the part, and
  // uses no id up: the part's id stays the first.
  std::string id = Query("SELECT id FROM laggard.parts WHERE key = 'host:node-01'");
  JobRecord later = OneJob("job-2");
  later.parts[0].serial = "1652922031227";
  ASSERT_TRUE(*store->Record(later));
  EXPECT_EQ(Query("SELECT id FROM laggard.parts WHERE key = 'host:node-01'"), id);
  EXPECT_EQ(Query("SELECT serial FROM laggard.parts WHERE key = 'host:node-01'"), "1652922031227");
  ASSERT_TRUE(*store->Record(OneJob("job-3")));  // no serial: the one learnt stays
  EXPECT_EQ(Query("SELECT serial FROM laggard.parts WHERE key = 'host:node-01'"), "1652922031227");
  EXPECT_EQ(Query("SELECT max(id) FROM laggard.hosts"), "1");
}

}  // namespace
}  // namespace laggard::history
