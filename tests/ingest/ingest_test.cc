#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzip;

TEST(IngestTest, BuiltinRankPatternsInNamesAndDirectories) {
  EXPECT_EQ(BuiltinRankFromPath("logs/rank-12.log"), 12);
  EXPECT_EQ(BuiltinRankFromPath("logs/rank3.txt"), 3);
  EXPECT_EQ(BuiltinRankFromPath("logs/train_rank_5.out"), 5);
  EXPECT_EQ(BuiltinRankFromPath("job/worker7/stdout.log"), 7);
  EXPECT_EQ(BuiltinRankFromPath("logs/cranky.log"), std::nullopt);
  EXPECT_EQ(BuiltinRankFromPath("logs/train.log"), std::nullopt);
}

TEST(IngestTest, WalksDirectoriesAndListsUnknownFilesAsSkipped) {
  TempDir dir;
  WriteFile(dir.File("a/rank0.log"), "rank 0, step 1, time 0.8s\n");
  WriteGzip(dir.File("a/b/rank1.log.gz"), "rank 1, step 1, time 0.9s\n");
  WriteFile(dir.File("README.md"), "# notes\nnothing to see\n");
  WriteFile(dir.File("empty.log"), "");
  WriteFile(dir.File("model.bin"), std::string("\x7f" "ELF\0\0\0", 7));
  WriteFile(dir.File(".hidden/rank9.log"), "rank 9, step 1, time 0.8s\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[1].steps[0].duration_ns, 900'000'000);
  EXPECT_EQ(run.files.size(), 5u);  // hidden directory skipped
  EXPECT_EQ(run.diagnostics.count(DiagCode::kFileUnrecognised), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kFileEmpty), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kFileBinary), 1u);
}

TEST(IngestTest, MissingPathIsAnErrorNamingIt) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  auto run = Ingest({"/no/such/laggard/dir"}, readers->readers, IngestOptions());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("/no/such/laggard/dir"), std::string::npos);
}

TEST(IngestTest, DuplicateStepsKeepTheFirstAndAreCounted) {
  TempDir dir;
  WriteFile(dir.File("r.log"),
            "rank 0, step 1, time 0.8s\nrank 0, step 2, time 0.8s\nrank 0, step 1, time 5s\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps[0].duration_ns, 800'000'000);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepDuplicate), 1u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kStepDuplicate)[0].line, 3u);
}

TEST(IngestTest, NonPositiveDurationsAndNegativeRanksAreNotUsed) {
  TempDir dir;
  WriteFile(dir.File("r.log"),
            "rank 0, step 1, time 0s\nrank 0, step 2, time -0.5s\nrank -1, step 3, time 0.8s\n"
            "rank 0, step 4, time 0.8s\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(run.ranks[0].steps.size(), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepNonPositiveDuration), 2u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepBadRankOrStep), 1u);
}

TEST(IngestTest, GapsInRanksAndUnevenStepCountsAreNoted) {
  TempDir dir;
  WriteFile(dir.File("r.log"),
            "rank 0, step 1, time 0.8s\nrank 0, step 2, time 0.8s\nrank 2, step 1, time 0.8s\n"
            "rank 2, step 2, time 0.8s\nrank 3, step 1, time 0.8s\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(run.diagnostics.count(DiagCode::kRankMissing), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kRankStepCountMismatch), 1u);
}

TEST(IngestTest, RankFromOptionOverridesBuiltinPatterns) {
  TempDir dir;
  WriteFile(dir.File("host-a/gpu3/train.out"),
            " iteration        1/    10 | elapsed time per iteration (ms): 900.0 |\n");
  laggard::Run run = IngestPaths({dir.path()}, std::nullopt, std::string(R"(gpu(?<rank>\d+))"));
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_EQ(run.ranks[0].info.rank, 3);
}

StatusOr<laggard::Run> IngestWithFileRanks(const std::string& dir, const std::string& map) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  IngestOptions options;
  options.file_ranks = map;
  options.threads = 1;
  return Ingest({dir}, readers->readers, options);
}

constexpr std::string_view kMegatronLine =
    " iteration        1/    10 | elapsed time per iteration (ms): 900.0 |\n";

TEST(IngestTest, AFileRanksListNamesTheRanksOfFilesThatDoNot) {
  TempDir dir;
  WriteFile(dir.File("host-a/train.out"), std::string(kMegatronLine));
  WriteFile(dir.File("host-b/train.out"), std::string(kMegatronLine));
  WriteFile(dir.File("host-c/rank1.log"), "rank 1, step 1, time 0.8s\n");  // content wins
  std::string map = WriteFile(dir.File("ranks.txt"),
                              "# file rank\n"
                              "train.out 9\n"
                              "./host-a/train.out,3\n"   // longer: wins for host-a
                              "host-c/rank1.log 7\n"
                              "\n"
                              "gone/train.out 4\n");
  auto run = IngestWithFileRanks(dir.path(), map);
  ASSERT_TRUE(run.ok()) << run.status().message();
  std::map<std::string, int32_t> rank_of;
  for (const StepSeries& r : run->ranks) {
    ASSERT_EQ(r.steps.size(), 1u);
    const std::string& path = run->files[r.steps[0].src.file].path;
    rank_of[std::filesystem::path(path).parent_path().filename().string()] = r.info.rank;
  }
  EXPECT_EQ(rank_of, (std::map<std::string, int32_t>{{"host-a", 3}, {"host-b", 9}, {"host-c", 1}}));
  EXPECT_EQ(run->files.size(), 3u);  // the map itself is not an input
  EXPECT_EQ(run->diagnostics.count(DiagCode::kFileRanksUnmatched), 1u);
  ASSERT_EQ(run->diagnostics.examples(DiagCode::kFileRanksUnmatched).size(), 1u);
  EXPECT_EQ(run->diagnostics.examples(DiagCode::kFileRanksUnmatched)[0].line, 6u);
}

TEST(IngestTest, AMalformedOrAmbiguousFileRanksListFailsWithItsLine) {
  TempDir dir;
  WriteFile(dir.File("host-a/train.out"), std::string(kMegatronLine));
  auto bad = IngestWithFileRanks(dir.path(), WriteFile(dir.File("m1"), "host-a/train.out 3\nx.out seven\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m1:2:"), std::string::npos) << bad.status().message();
  auto no_rank = IngestWithFileRanks(dir.path(), WriteFile(dir.File("m2"), "justapath\n"));
  ASSERT_FALSE(no_rank.ok());
  EXPECT_NE(no_rank.status().message().find("m2:1:"), std::string::npos) << no_rank.status().message();
  auto twice = IngestWithFileRanks(dir.path(), WriteFile(dir.File("m3"), "train.out 1\ntrain.out 2\n"));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("lines 1 and 2"), std::string::npos) << twice.status().message();
  auto missing = IngestWithFileRanks(dir.path(), dir.File("no-such-map"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
}

TEST(IngestTest, ResultDoesNotDependOnThreadCount) {
  TempDir dir;
  for (int r = 0; r < 6; ++r) {
    std::string text;
    for (int s = 0; s < 50; ++s) text += "rank " + std::to_string(r) + ", step " + std::to_string(s) + ", time 0.8s\n";
    text += "rank " + std::to_string(r) + ", step x, time 0.8s\n";
    WriteFile(dir.File("rank" + std::to_string(r) + ".log"), text);
  }
  auto readers = MakeDefaultTextReaders(std::nullopt);
  IngestOptions one;
  one.threads = 1;
  IngestOptions two;
  two.threads = 2;
  auto a = Ingest({dir.path()}, readers->readers, one);
  auto b = Ingest({dir.path()}, readers->readers, two);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->ranks.size(), b->ranks.size());
  for (size_t i = 0; i < a->ranks.size(); ++i) EXPECT_EQ(a->ranks[i].steps.size(), b->ranks[i].steps.size());
  const auto& ea = a->diagnostics.examples(DiagCode::kStepGarbled);
  const auto& eb = b->diagnostics.examples(DiagCode::kStepGarbled);
  ASSERT_EQ(ea.size(), eb.size());
  for (size_t i = 0; i < ea.size(); ++i) EXPECT_EQ(ea[i].file, eb[i].file);
}

}  // namespace
}  // namespace laggard
