#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

#include "ingest/common/input_file.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzip;

std::vector<std::string> AllLines(const std::string& path,
                                  std::optional<StreamDamage>* damage = nullptr) {
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
  std::string both =
      testing_util::ReadFile(dir.File("a.gz")) + testing_util::ReadFile(dir.File("b.gz"));
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

// One gzip member of `parts` as the gzip tool writes it: with the original
// file name in the header (FNAME), which the decoder must skip. Each part
// after the first starts a deflate block on a byte boundary, at the offset
// stored in `offsets` (when given).
std::string GzipMemberWithName(const std::vector<std::string>& parts, const char* name,
                               std::vector<size_t>* offsets = nullptr) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  gz_header header;
  std::memset(&header, 0, sizeof header);
  header.name = reinterpret_cast<Bytef*>(const_cast<char*>(name));
  header.os = 3;
  EXPECT_EQ(deflateSetHeader(&zs, &header), Z_OK);
  size_t total = 0;
  for (const std::string& part : parts) total += part.size();
  std::string out(deflateBound(&zs, static_cast<uLong>(total)) + 64 * parts.size(), '\0');
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (offsets != nullptr) offsets->push_back(zs.total_out);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(parts[i].data()));
    zs.avail_in = static_cast<uInt>(parts[i].size());
    bool last = i + 1 == parts.size();
    EXPECT_EQ(deflate(&zs, last ? Z_FINISH : Z_FULL_FLUSH), last ? Z_STREAM_END : Z_OK);
  }
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string GzipMemberWithName(const std::string& text, const char* name) {
  return GzipMemberWithName(std::vector<std::string>{text}, name);
}

// Numbered lines [first, last): a line's number says where it came from;
// an id drawn from the number keeps the text from compressing to nothing.
std::string NumberedLines(int first, int last) {
  std::string text;
  for (int i = first; i < last; ++i) {
    uint64_t id = (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ULL;
    text +=
        "rank 0, step " + std::to_string(i) + ", time 0.8s, id " + std::to_string(id >> 40) + "\n";
  }
  return text;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t nl; (nl = text.find('\n', begin)) != std::string::npos; begin = nl + 1) {
    lines.push_back(text.substr(begin, nl - begin));
  }
  return lines;
}

TEST(InputFileTest, ManyGzipMembersOfEverySizeAreReadInOrder) {
  // As `cat a.gz b.gz` and pigz write them: members larger than the
  // decoder's 256 KiB input chunk, tiny ones, an empty one, with names, so
  // member boundaries fall anywhere in a read.
  TempDir dir;
  std::string text, gz;
  const int sizes[] = {20000, 1, 0, 3, 45000, 7, 12000};
  int line = 0;
  for (int n : sizes) {
    std::string part = NumberedLines(line, line + n);
    line += n;
    text += part;
    gz += GzipMemberWithName(part, "rank0.log");
  }
  ASSERT_GT(gz.size(), 2u * 256 * 1024) << "the test needs members across input chunks";
  std::optional<StreamDamage> damage;
  auto lines = AllLines(WriteFile(dir.File("many.log.gz"), gz), &damage);
  EXPECT_FALSE(damage) << damage->message;
  ASSERT_EQ(lines.size(), static_cast<size_t>(line));
  EXPECT_EQ(lines, SplitLines(text));
}

TEST(InputFileTest, GzipCutMidStreamKeepsTheDecodedPrefixAndSaysWhere) {
  TempDir dir;
  const std::string text = NumberedLines(0, 30000);
  const std::string first = GzipMemberWithName(text, "a.log");
  const std::string gz = first + GzipMemberWithName(NumberedLines(30000, 30010), "b.log");
  // Cuts inside the first member's data, inside its trailer, and inside
  // the second member's header.
  const size_t cuts[] = {first.size() / 3, first.size() / 2 + 17, first.size() - 3,
                         first.size() + 5};
  for (size_t cut : cuts) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut) + " of " + std::to_string(gz.size()));
    std::optional<StreamDamage> damage;
    auto lines = AllLines(WriteFile(dir.File("cut.gz"), gz.substr(0, cut)), &damage);
    ASSERT_TRUE(damage);
    EXPECT_EQ(damage->kind, StreamDamage::kTruncated);
    EXPECT_EQ(damage->compressed_offset, cut);
    EXPECT_NE(damage->message.find("byte " + std::to_string(cut)), std::string::npos)
        << damage->message;
    // What was decoded is kept, line for line, short of at most the cut line
    // and the decoder's last few bytes.
    ASSERT_GT(lines.size(), 1000u);
    const auto want = SplitLines(text);
    for (size_t i = 0; i < lines.size(); ++i) {
      ASSERT_EQ(lines[i], want.at(i)) << "line " << i;
    }
    if (cut >= first.size() - 8) {
      EXPECT_EQ(lines.size(), want.size()) << "the data of a member cut in its trailer is whole";
    } else {
      EXPECT_LT(lines.size(), want.size());
      // A 1/3 or 1/2 cut of the compressed data decodes to about as much text.
      EXPECT_GT(lines.size() * gz.size(), want.size() * cut / 2);
    }
  }
}

TEST(InputFileTest, GzipWithBadChecksumIsCorruptAtItsTrailer) {
  TempDir dir;
  const std::string text = NumberedLines(0, 2000);
  std::string gz = GzipMemberWithName(text, "a.log");
  gz[gz.size() - 6] ^= 0x55;  // the CRC-32
  std::optional<StreamDamage> damage;
  auto lines = AllLines(WriteFile(dir.File("crc.gz"), gz), &damage);
  ASSERT_TRUE(damage);
  EXPECT_EQ(damage->kind, StreamDamage::kCorrupt);
  EXPECT_NE(damage->message.find("CRC-32"), std::string::npos) << damage->message;
  EXPECT_GE(damage->compressed_offset, gz.size() - 8);
  EXPECT_EQ(lines, SplitLines(text));
}

TEST(InputFileTest, GzipWithBadDeflateDataKeepsTheLinesBefore) {
  TempDir dir;
  const std::string before = NumberedLines(0, 20000);
  std::vector<size_t> offsets;
  std::string gz = GzipMemberWithName({before, NumberedLines(20000, 40000)}, "a.log", &offsets);
  // The second part's first deflate block gets the reserved block type 3.
  gz[offsets[1]] = '\x07';
  std::optional<StreamDamage> damage;
  auto lines = AllLines(WriteFile(dir.File("bad.gz"), gz), &damage);
  ASSERT_TRUE(damage);
  EXPECT_EQ(damage->kind, StreamDamage::kCorrupt);
  EXPECT_NE(damage->message.find("corrupt near byte"), std::string::npos) << damage->message;
  EXPECT_NE(damage->message.find("invalid deflate block"), std::string::npos) << damage->message;
  EXPECT_GE(damage->compressed_offset, offsets[1]);
  EXPECT_LE(damage->compressed_offset, gz.size());
  EXPECT_EQ(lines, SplitLines(before));
}

TEST(InputFileTest, GzipDecodedAheadGivesTheSameLinesAndDamage) {
  TempDir dir;
  const std::string text = NumberedLines(0, 60000);  // several decoder blocks
  const std::string gz = GzipMemberWithName(text, "a.log");
  const std::string whole = WriteFile(dir.File("whole.gz"), gz);
  const std::string cut = WriteFile(dir.File("cut.gz"), gz.substr(0, gz.size() * 2 / 3));
  for (const std::string& path : {whole, cut}) {
    SCOPED_TRACE(path);
    auto inline_source = OpenByteSource(path, Decode::kInline);
    auto ahead_source = OpenByteSource(path, Decode::kAhead);
    ASSERT_TRUE(inline_source.ok() && ahead_source.ok());
    LineReader inline_lines(**inline_source), ahead_lines(**ahead_source);
    std::string_view a, b;
    uint64_t n = 0;
    while (inline_lines.Next(a)) {
      ASSERT_TRUE(ahead_lines.Next(b)) << "line " << n + 1;
      ASSERT_EQ(a, b);
      ++n;
    }
    EXPECT_FALSE(ahead_lines.Next(b));
    EXPECT_EQ(ahead_lines.bytes(), inline_lines.bytes());
    const auto& d1 = (*inline_source)->damage();
    const auto& d2 = (*ahead_source)->damage();
    ASSERT_EQ(d1.has_value(), d2.has_value());
    if (path == whole) {
      EXPECT_EQ(n, 60000u);
      EXPECT_FALSE(d2);
    } else {
      EXPECT_GT(n, 1000u);
      ASSERT_TRUE(d2);
      EXPECT_EQ(d2->kind, StreamDamage::kTruncated);
      EXPECT_EQ(d2->compressed_offset, d1->compressed_offset);
    }
  }
  // A reader that stops early ends the worker without reading the rest.
  auto abandoned = OpenByteSource(whole, Decode::kAhead);
  ASSERT_TRUE(abandoned.ok());
  char buf[100];
  EXPECT_EQ((*abandoned)->Read(buf, sizeof buf), sizeof buf);
  EXPECT_EQ(std::string(buf, 13), "rank 0, step ");
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
