#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
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
  WriteFile(dir.File("model.bin"), std::string("\x7f"
                                               "ELF\0\0\0",
                                               7));
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

TEST(IngestTest, ASymlinkLoopIsNamedAsOne) {
  TempDir dir;
  std::filesystem::create_symlink(dir.File("b"), dir.File("a"));
  std::filesystem::create_symlink(dir.File("a"), dir.File("b"));
  auto readers = MakeDefaultTextReaders(std::nullopt);
  auto run = Ingest({dir.File("a")}, readers->readers, IngestOptions());
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(), dir.File("a") + ": symlink loop");
  // Inside a folder it is one file that cannot be read, and the rest is.
  WriteFile(dir.File("rank0.log"), "rank 0, step 1, time 0.8s\n");
  laggard::Run walked = IngestPaths({dir.path()});
  ASSERT_EQ(walked.diagnostics.count(DiagCode::kFileUnreadable), 2u);
  EXPECT_NE(walked.diagnostics.examples(DiagCode::kFileUnreadable)[0].message.find("symlink loop"),
            std::string::npos);
  EXPECT_EQ(walked.ranks.size(), 1u);
}

// A FIFO, given or found in a folder, is refused at once with a message:
// reading it would wait for a writer that may never come. (Before, the
// given one blocked for ever; the test then writes to it after 5 s, which
// ends the read, so that it fails instead of hanging.)
TEST(IngestTest, FifosAreRefusedWithoutBlocking) {
  TempDir dir;
  WriteFile(dir.File("run/rank0.log"), "rank 0, step 1, time 0.8s\n");
  std::string fifo = dir.File("run/pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::vector<std::string>& paths :
       {std::vector<std::string>{fifo, dir.File("run/rank0.log")}, {dir.File("run")}}) {
    auto started = std::chrono::steady_clock::now();
    auto ingest = std::async(std::launch::async, [&] { return IngestPaths(paths); });
    if (ingest.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (w >= 0) ::close(w);
    }
    laggard::Run run = ingest.get();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
    EXPECT_EQ(run.ranks.size(), 1u);
    ASSERT_EQ(run.diagnostics.count(DiagCode::kFileUnreadable), 1u);
    EXPECT_NE(run.diagnostics.examples(DiagCode::kFileUnreadable)[0].message.find(
                  "a named pipe (FIFO), not a regular file"),
              std::string::npos);
  }
}

// The same input reached twice is read once, and noted: no false
// step.duplicate, and --strict stays clean.
TEST(IngestTest, TheSameFileReachedTwiceIsReadOnce) {
  TempDir dir;
  WriteFile(dir.File("run/node-01/rank0.log"),
            "rank 0, step 1, time 0.8s\nrank 0, step 2, time 0.8s\n");
  WriteFile(dir.File("run/node-02/rank1.log"),
            "rank 1, step 1, time 0.8s\nrank 1, step 2, time 0.9s\n");
  std::filesystem::create_hard_link(dir.File("run/node-01/rank0.log"), dir.File("rank0-link.log"));
  laggard::Run run =
      IngestPaths({dir.File("run"), dir.File("run"), dir.File("run/node-02"),
                   dir.File("run/../run/node-01/rank0.log"), dir.File("rank0-link.log")});
  EXPECT_EQ(run.files.size(), 2u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepDuplicate), 0u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  ASSERT_EQ(run.diagnostics.count(DiagCode::kFileDuplicate), 5u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kFileDuplicate)[0].message,
            "same file as " + dir.File("run") + "/node-01/rank0.log (device and inode): read once");
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps.size(), 2u);
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
                              "./host-a/train.out,3\n"  // longer: wins for host-a
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
  auto bad = IngestWithFileRanks(dir.path(),
                                 WriteFile(dir.File("m1"), "host-a/train.out 3\nx.out seven\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m1:2:"), std::string::npos) << bad.status().message();
  auto no_rank = IngestWithFileRanks(dir.path(), WriteFile(dir.File("m2"), "justapath\n"));
  ASSERT_FALSE(no_rank.ok());
  EXPECT_NE(no_rank.status().message().find("m2:1:"), std::string::npos)
      << no_rank.status().message();
  auto twice =
      IngestWithFileRanks(dir.path(), WriteFile(dir.File("m3"), "train.out 1\ntrain.out 2\n"));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("lines 1 and 2"), std::string::npos)
      << twice.status().message();
  auto missing = IngestWithFileRanks(dir.path(), dir.File("no-such-map"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
}

TEST(IngestTest, ResultDoesNotDependOnThreadCount) {
  TempDir dir;
  for (int r = 0; r < 6; ++r) {
    std::string text;
    for (int s = 0; s < 50; ++s)
      text += "rank " + std::to_string(r) + ", step " + std::to_string(s) + ", time 0.8s\n";
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
  for (size_t i = 0; i < a->ranks.size(); ++i)
    EXPECT_EQ(a->ranks[i].steps.size(), b->ranks[i].steps.size());
  const auto& ea = a->diagnostics.examples(DiagCode::kStepGarbled);
  const auto& eb = b->diagnostics.examples(DiagCode::kStepGarbled);
  ASSERT_EQ(ea.size(), eb.size());
  for (size_t i = 0; i < ea.size(); ++i) EXPECT_EQ(ea[i].file, eb[i].file);
}

}  // namespace
}  // namespace laggard
