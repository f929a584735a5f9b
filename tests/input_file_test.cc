#include <gtest/gtest.h>

#include "ingest/input_file.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzip;

std::vector<std::string> AllLines(const std::string& path, std::optional<StreamDamage>* damage = nullptr) {
  auto src = OpenByteSource(path);
  EXPECT_TRUE(src.ok());
  LineReader reader(**src);
  std::vector<std::string> lines;
  std::string_view line;
  while (reader.Next(line)) lines.emplace_back(line);
  if (damage) *damage = (*src)->damage();
  return lines;
}

TEST(InputFileTest, PlainAndGzipGiveTheSameLines) {
  TempDir dir;
  std::string text = "a\r\nbb\n\nccc";
  auto plain = AllLines(WriteFile(dir.File("x.log"), text));
  auto gz = AllLines(WriteGzip(dir.File("x.log.gz"), text));
  std::vector<std::string> want = {"a", "bb", "", "ccc"};
  EXPECT_EQ(plain, want);
  EXPECT_EQ(gz, want);
}

TEST(InputFileTest, ConcatenatedGzipMembersAreAllRead) {
  TempDir dir;
  WriteGzip(dir.File("a.gz"), "one\n");
  WriteGzip(dir.File("b.gz"), "two\n");
  std::string both = testing_util::ReadFile(dir.File("a.gz")) + testing_util::ReadFile(dir.File("b.gz"));
  std::optional<StreamDamage> damage;
  auto lines = AllLines(WriteFile(dir.File("ab.gz"), both), &damage);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two"}));
  EXPECT_FALSE(damage);
}

TEST(InputFileTest, TruncatedGzipReportsDamageAndKeepsWhatCame) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "rank 0, step " + std::to_string(i) + ", time 0.8s\n";
  WriteGzip(dir.File("full.gz"), text);
  std::string gz = testing_util::ReadFile(dir.File("full.gz"));
  std::optional<StreamDamage> damage;
  auto lines = AllLines(WriteFile(dir.File("cut.gz"), gz.substr(0, gz.size() / 2)), &damage);
  ASSERT_TRUE(damage);
  EXPECT_EQ(damage->kind, StreamDamage::kTruncated);
  ASSERT_GT(lines.size(), 100u);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i], "rank 0, step " + std::to_string(i) + ", time 0.8s");
  }
}

TEST(InputFileTest, OverLongLineIsSkippedAndCounted) {
  TempDir dir;
  std::string text = "first\n" + std::string(LineReader::kMaxLine + 10, 'x') + "\nlast\n";
  auto src = OpenByteSource(WriteFile(dir.File("long.txt"), text));
  ASSERT_TRUE(src.ok());
  LineReader reader(**src);
  std::vector<std::string> lines;
  std::string_view line;
  while (reader.Next(line)) lines.emplace_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{"first", "last"}));
  EXPECT_EQ(reader.long_lines(), 1u);
  EXPECT_EQ(reader.long_line_numbers(), std::vector<uint64_t>{2});
  EXPECT_EQ(reader.line_number(), 3u);
}

TEST(InputFileTest, MissingFileIsAnError) {
  auto src = OpenByteSource("/nonexistent/laggard/file");
  EXPECT_FALSE(src.ok());
  EXPECT_NE(src.status().message().find("cannot open"), std::string::npos);
}

TEST(InputFileTest, BinarySniffing) {
  EXPECT_TRUE(LooksBinary(std::string("abc\0def", 7)));
  EXPECT_FALSE(LooksBinary("rank 0, step 1, time 0.8s\n"));
}

}  // namespace
}  // namespace laggard
