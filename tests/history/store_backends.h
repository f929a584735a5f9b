// The history store's tests run on each backend: SQLite (a file in a fresh
// folder) and PostgreSQL (the server `history_postgres` starts, named by
// LAGGARD_TEST_POSTGRES; its schema `laggard` dropped before each test).
// Without that variable the PostgreSQL cases skip and say how to run them.

#ifndef LAGGARD_TESTS_HISTORY_STORE_BACKENDS_H_
#define LAGGARD_TESTS_HISTORY_STORE_BACKENDS_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "history/sql_postgres.h"
#include "test_util.h"

namespace laggard::history {

class HistoryBackendTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() != "postgresql") {
      path_ = dir_.File("h.db");
      return;
    }
    const char* uri = std::getenv("LAGGARD_TEST_POSTGRES");
    if (uri == nullptr || *uri == '\0') {
      GTEST_SKIP() << "no PostgreSQL server: ctest -R history_postgres starts one "
                      "(tests/history/postgres_test.sh; Debian's postgresql)";
    }
    path_ = uri;
    auto db = PostgresDb::Connect(path_, "test");
    ASSERT_TRUE(db.ok()) << db.status().message();
    ASSERT_TRUE((*db)->Exec("DROP SCHEMA IF EXISTS laggard CASCADE").ok());
  }
  const std::string& Path() const { return path_; }
  // An empty store again: a new file, or the schema dropped.
  std::string Fresh() {
    if (GetParam() != "postgresql") return dir_.File("h" + std::to_string(++fresh_) + ".db");
    auto db = PostgresDb::Connect(path_, "test");
    EXPECT_TRUE(db.ok() && (*db)->Exec("DROP SCHEMA IF EXISTS laggard CASCADE").ok());
    return path_;
  }
  bool Postgres() const { return GetParam() == "postgresql"; }

 private:
  testing_util::TempDir dir_;
  std::string path_;
  int fresh_ = 0;
};

inline std::string BackendName(const testing::TestParamInfo<std::string>& info) {
  return info.param;
}

}  // namespace laggard::history

#endif  // LAGGARD_TESTS_HISTORY_STORE_BACKENDS_H_
