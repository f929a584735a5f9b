// Corruption suite for the step-log parsers, the legacy torch trace reader
// and the Megatron op timeline reader: damaged, truncated, binary, empty and malformed inputs go
// through the whole of Ingest() with the standard readers, and each test checks what a user would
// see: which records were kept (with their values) and which diagnostic was counted, with its file
// and line (or byte offset).

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "ingest/common/input_file.h"
#include "ingest/readers.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

// Duration written for step `i` in the generated logs: distinct values, so a
// misread (say a cut "812.0ms" read as "812") cannot go unnoticed.
int64_t DurationMsOf(int i) { return 800 + (i * 7) % 97; }

std::string ArticleLines(int begin, int end, int rank = 0) {
  std::string text;
  for (int i = begin; i < end; ++i) {
    text += "rank " + std::to_string(rank) + ", step " + std::to_string(i) + ", time " +
            std::to_string(DurationMsOf(i)) + ".0ms\n";
  }
  return text;
}

// gzip of `parts`, with a full flush after each part but the last, so each
// part starts on a byte boundary a test can damage. `offsets` receives where
// each part's compressed data starts.
std::string GzipParts(const std::vector<std::string>& parts, std::vector<size_t>* offsets) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out;
  char buf[16384];
  for (size_t i = 0; i < parts.size(); ++i) {
    if (offsets) offsets->push_back(out.size());
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(parts[i].data()));
    zs.avail_in = static_cast<uInt>(parts[i].size());
    int flush = i + 1 == parts.size() ? Z_FINISH : Z_FULL_FLUSH;
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      deflate(&zs, flush);
      out.append(buf, sizeof buf - zs.avail_out);
    } while (zs.avail_out == 0);
  }
  deflateEnd(&zs);
  return out;
}

// The bytes zlib itself can decode from a (possibly cut) gzip stream.
std::string InflatePrefix(const std::string& gz) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[16384];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc == Z_OK && zs.avail_out == 0);
  inflateEnd(&zs);
  return out;
}

// Steps of `rank` in order, with their durations in ms.
std::vector<std::pair<int64_t, int64_t>> StepsOf(const Run& run, int32_t rank) {
  std::vector<std::pair<int64_t, int64_t>> steps;
  if (const StepSeries* s = run.FindRank(rank)) {
    for (const StepRecord& r : s->steps) steps.emplace_back(r.step, r.duration_ns / 1'000'000);
  }
  return steps;
}

std::vector<std::pair<int64_t, int64_t>> ExpectedSteps(int begin, int end) {
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (int i = begin; i < end; ++i) steps.emplace_back(i, DurationMsOf(i));
  return steps;
}

std::vector<uint64_t> ExampleLines(const Run& run, DiagCode code) {
  std::vector<uint64_t> lines;
  for (const DiagExample& e : run.diagnostics.examples(code)) lines.push_back(e.line);
  return lines;
}

uint64_t Count(const Run& run, DiagCode code) { return run.diagnostics.count(code); }

TEST(CorruptionTest, TruncatedGzipKeepsEveryCompleteLineBeforeTheCut) {
  TempDir dir;
  const std::string text = ArticleLines(0, 300);
  const std::string gz = GzipParts({text}, nullptr);
  int checked = 0;
  for (size_t cut = 12; cut < gz.size(); cut += 5) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut) + " of " + std::to_string(gz.size()));
    std::string decodable = InflatePrefix(gz.substr(0, cut));
    if (decodable.empty()) continue;  // nothing decoded yet: see the header-only case
    int complete = 0;
    for (char c : decodable) complete += c == '\n';
    laggard::Run run = IngestPaths(
        {WriteFile(dir.File("rank0-" + std::to_string(cut) + ".log.gz"), gz.substr(0, cut))});
    EXPECT_EQ(StepsOf(run, 0), ExpectedSteps(0, complete));
    EXPECT_EQ(Count(run, DiagCode::kGzipTruncated), 1u);
    EXPECT_EQ(Count(run, DiagCode::kGzipCorrupt), 0u);
    EXPECT_EQ(Count(run, DiagCode::kStepGarbled), 0u) << "the cut line must not be parsed";
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST(CorruptionTest, GzipCutInsideTheLastLineDoesNotMisreadIt) {
  TempDir dir;
  const std::string text = ArticleLines(0, 3);  // ... "time 814.0ms\n"
  const std::string gz = GzipParts({text}, nullptr);
  // Find the cut that leaves "...time 814" of the last line: read as seconds
  // it would be a 814 s step.
  for (size_t cut = 12; cut < gz.size(); ++cut) {
    std::string decodable = InflatePrefix(gz.substr(0, cut));
    if (decodable.size() < 4 || decodable.compare(decodable.size() - 4, 4, " 814") != 0) continue;
    laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log.gz"), gz.substr(0, cut))});
    EXPECT_EQ(StepsOf(run, 0), ExpectedSteps(0, 2));
    EXPECT_EQ(Count(run, DiagCode::kGzipTruncated), 1u);
    return;
  }
  GTEST_SKIP() << "zlib produced no cut ending in ' 814'";
}

// Known gap: a gzip file cut inside its header decodes to nothing, and
// Ingest reports it as file.empty (the sniffed head is empty) instead of
// gzip.truncated. Enable once ReadOneFile reports damage found while sniffing.
TEST(CorruptionTest, GzipCutInsideItsHeaderIsCountedAsTruncated) {
  TempDir dir;
  const std::string gz = GzipParts({ArticleLines(0, 10)}, nullptr);
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log.gz"), gz.substr(0, 6))});
  EXPECT_EQ(Count(run, DiagCode::kGzipTruncated), 1u);
  EXPECT_EQ(Count(run, DiagCode::kFileEmpty), 0u);
}

TEST(CorruptionTest, CorruptGzipIsCountedAndEarlierLinesKept) {
  TempDir dir;
  std::vector<size_t> offsets;
  std::string gz = GzipParts({ArticleLines(0, 1000), ArticleLines(1000, 2000)}, &offsets);
  // The second part starts a new deflate block on a byte boundary; make its
  // block type the reserved value 3 ("invalid block type").
  gz[offsets[1]] = '\x07';
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log.gz"), gz)});
  EXPECT_EQ(StepsOf(run, 0), ExpectedSteps(0, 1000));
  EXPECT_EQ(Count(run, DiagCode::kGzipCorrupt), 1u);
  EXPECT_EQ(Count(run, DiagCode::kGzipTruncated), 0u);
  ASSERT_EQ(run.diagnostics.examples(DiagCode::kGzipCorrupt).size(), 1u);
  const DiagExample& e = run.diagnostics.examples(DiagCode::kGzipCorrupt)[0];
  EXPECT_EQ(e.file, dir.File("rank0.log.gz"));
  EXPECT_GE(e.offset, offsets[1]);
}

TEST(CorruptionTest, GarbageAfterGzipDataKeepsEveryLine) {
  TempDir dir;
  // No final newline: the last line is complete, the garbage comes after
  // the gzip member ended.
  std::string text = ArticleLines(0, 10);
  text.pop_back();
  std::string gz = GzipParts({text}, nullptr) + "garbage";
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log.gz"), gz)});
  EXPECT_EQ(StepsOf(run, 0), ExpectedSteps(0, 10));
  EXPECT_EQ(Count(run, DiagCode::kGzipCorrupt), 1u);
}

TEST(CorruptionTest, ConcatenatedGzipMembersAreAllRead) {
  TempDir dir;
  std::string gz =
      GzipParts({ArticleLines(0, 5)}, nullptr) + GzipParts({ArticleLines(5, 9)}, nullptr);
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log.gz"), gz)});
  EXPECT_EQ(StepsOf(run, 0), ExpectedSteps(0, 9));
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(CorruptionTest, OneLineOfNulBytesLeavesALogText) {
  // A block a crash left unwritten damages one line, not the file.
  TempDir dir;
  std::string log = ArticleLines(0, 3) + std::string("\0\x01\x02\xff\xfe", 5) + ArticleLines(3, 6);
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log"), log)});
  EXPECT_EQ(Count(run, DiagCode::kFileBinary), 0u);
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_TRUE(run.files[0].used);
  // The step line behind the NUL bytes is intact and found by the line
  // matcher; a CSV row so damaged is a csv.bad_row at its line (cli_test).
  EXPECT_EQ(StepsOf(run, 0), ExpectedSteps(0, 6));
}

TEST(CorruptionTest, BinaryFileIsSkippedAsBinary) {
  TempDir dir;
  std::string blob;
  for (int i = 0; i < 8; ++i) blob += std::string("\0\x01\x02\xff\xfe", 5) + ArticleLines(i, i + 1);
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log"), blob)});
  EXPECT_EQ(Count(run, DiagCode::kFileBinary), 1u);
  EXPECT_EQ(run.total_steps(), 0u);
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_FALSE(run.files[0].used);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kFileBinary)[0].file, dir.File("rank0.log"));
}

TEST(CorruptionTest, GzippedBinaryFileIsSkippedAsBinary) {
  TempDir dir;
  std::string blob(4096, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 31);
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.bin.gz"), GzipParts({blob}, nullptr))});
  EXPECT_EQ(Count(run, DiagCode::kFileBinary), 1u);
  EXPECT_EQ(run.total_steps(), 0u);
}

TEST(CorruptionTest, EmptyFileIsCountedAsEmpty) {
  TempDir dir;
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log"), "")});
  EXPECT_EQ(Count(run, DiagCode::kFileEmpty), 1u);
  EXPECT_EQ(run.total_steps(), 0u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kFileEmpty)[0].file, dir.File("rank0.log"));
}

TEST(CorruptionTest, EmptyGzipFileIsCountedAsEmpty) {
  TempDir dir;
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log.gz"), GzipParts({""}, nullptr))});
  EXPECT_EQ(Count(run, DiagCode::kFileEmpty), 1u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(CorruptionTest, GarbledArticleLinesAreCountedWithFileAndLine) {
  TempDir dir;
  std::string log =
      "starting\n"                             // 1
      "rank 0, step 1, time 0.8s\n"            // 2
      "rank 0, step 2, time\n"                 // 3: no value
      "rank 0, step two, time 0.8s\n"          // 4: no step number
      "rank 0, step 4, time 0.8 fortnights\n"  // 5: unknown unit
      "rank 0, step 5 time 0.8s\n"             // 6: kept (no comma needed)
      "ranking of steps: 3\n"                  // 7: not a record
      "rank 0, step 7, time 0.8s\n";           // 8
  std::string path = WriteFile(dir.File("rank0.log"), log);
  laggard::Run run = IngestPaths({path});
  EXPECT_EQ(Count(run, DiagCode::kStepGarbled), 3u);
  EXPECT_EQ(ExampleLines(run, DiagCode::kStepGarbled), (std::vector<uint64_t>{3, 4, 5}));
  for (const DiagExample& e : run.diagnostics.examples(DiagCode::kStepGarbled)) {
    EXPECT_EQ(e.file, path);
    EXPECT_FALSE(e.message.empty());
  }
  std::vector<int64_t> steps;
  for (auto [step, ms] : StepsOf(run, 0)) steps.push_back(step);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 5, 7}));
}

TEST(CorruptionTest, ZeroAndNegativeDurationsAreNotUsed) {
  TempDir dir;
  std::string log =
      "rank 0, step 1, time 0.8s\n"
      "rank 0, step 2, time 0s\n"
      "rank 0, step 3, time -0.5s\n"
      "rank 0, step 4, time 0.8s\n";
  std::string csv =
      "rank,step,duration_ms\n"
      "1,1,800\n"
      "1,2,-3\n"
      "1,3,0\n";
  std::string jsonl =
      "{\"rank\": 2, \"step\": 1, \"duration\": 0.8}\n"
      "{\"rank\": 2, \"step\": 2, \"duration\": -1e-3}\n";
  laggard::Run run =
      IngestPaths({WriteFile(dir.File("a.log"), log), WriteFile(dir.File("b.csv"), csv),
                   WriteFile(dir.File("c.jsonl"), jsonl)});
  EXPECT_EQ(Count(run, DiagCode::kStepNonPositiveDuration), 5u);
  EXPECT_EQ(ExampleLines(run, DiagCode::kStepNonPositiveDuration),
            (std::vector<uint64_t>{2, 3, 3, 4, 2}));
  EXPECT_EQ(run.total_steps(), 4u);
  for (const StepSeries& s : run.ranks) {
    for (const StepRecord& r : s.steps) EXPECT_GT(r.duration_ns, 0);
  }
}

TEST(CorruptionTest, DuplicateStepsKeepTheFirstAndAreCounted) {
  TempDir dir;
  std::string log =
      "rank 0, step 1, time 0.5s\n"
      "rank 0, step 2, time 0.6s\n"
      "rank 0, step 1, time 0.9s\n";  // line 3 repeats step 1
  std::string path = WriteFile(dir.File("train.log"), log);
  laggard::Run run = IngestPaths({path});
  EXPECT_EQ(Count(run, DiagCode::kStepDuplicate), 1u);
  EXPECT_EQ((StepsOf(run, 0)), (std::vector<std::pair<int64_t, int64_t>>{{1, 500}, {2, 600}}));
  ASSERT_EQ(run.diagnostics.examples(DiagCode::kStepDuplicate).size(), 1u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kStepDuplicate)[0].file, path);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kStepDuplicate)[0].line, 3u);
}

TEST(CorruptionTest, DuplicateStepsAcrossFilesKeepTheFirstFile) {
  TempDir dir;
  WriteFile(dir.File("a.log"), "rank 0, step 1, time 0.5s\n");
  WriteFile(dir.File("b.log"), "rank 0, step 1, time 0.9s\nrank 0, step 2, time 0.6s\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(Count(run, DiagCode::kStepDuplicate), 1u);
  EXPECT_EQ((StepsOf(run, 0)), (std::vector<std::pair<int64_t, int64_t>>{{1, 500}, {2, 600}}));
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kStepDuplicate)[0].file, dir.File("b.log"));
}

TEST(CorruptionTest, StepsGivenByTwoFilesOfOneLoopAreOneNoteNotBadRecords) {
  TempDir dir;
  // The article's lines and a step CSV written by the same loop: same steps,
  // durations equal to printing precision.
  WriteFile(dir.File("rank0.log"),
            "rank 0, step 0, time 0.0812s\nrank 0, step 1, time 0.0799s\n"
            "rank 0, step 2, time 0.0805s\n");
  WriteFile(dir.File("steps_rank0.csv"),
            "rank,step,step_time_ms\n0,0,81.214\n0,1,79.930\n0,2,80.471\n0,3,80.002\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(Count(run, DiagCode::kStepDuplicate), 0u);
  EXPECT_EQ(Count(run, DiagCode::kStepRepeatedByAnotherFile), 1u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(laggard::DiagKind::kBadRecord), 0u);
  EXPECT_EQ((StepsOf(run, 0)),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 81}, {1, 79}, {2, 80}, {3, 80}}));
  const auto& ex = run.diagnostics.examples(DiagCode::kStepRepeatedByAnotherFile);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_NE(ex[0].message.find("3 steps also given by"), std::string::npos) << ex[0].message;
}

TEST(CorruptionTest, CsvRowsWithMissingFieldsAreBadRows) {
  TempDir dir;
  std::string csv =
      "rank,step,duration_ms\n"  // 1
      "0,1,800\n"                // 2
      "0,2,\n"                   // 3: no duration
      "0,,800\n"                 // 4: no step
      ",4,800\n"                 // 5: no rank
      "0\n"                      // 6: one field
      "0,6,800\n"                // 7
      "0,7,fast\n";              // 8: not a time
  std::string path = WriteFile(dir.File("steps.csv"), csv);
  laggard::Run run = IngestPaths({path});
  EXPECT_EQ(Count(run, DiagCode::kCsvBadRow), 5u);
  EXPECT_EQ(ExampleLines(run, DiagCode::kCsvBadRow), (std::vector<uint64_t>{3, 4, 5, 6, 8}));
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kCsvBadRow)[0].file, path);
  EXPECT_EQ((StepsOf(run, 0)), (std::vector<std::pair<int64_t, int64_t>>{{1, 800}, {6, 800}}));
}

TEST(CorruptionTest, BrokenJsonLinesAreCountedAndTheRestRead) {
  TempDir dir;
  std::string jsonl =
      "{\"rank\": 0, \"step\": 1, \"duration\": 0.8}\n"       // 1
      "{\"rank\": 0, \"step\": 2, \"duration\": \n"           // 2: cut object
      "not json at all\n"                                     // 3
      "{\"rank\": 0, \"duration\": 0.8}\n"                    // 4: no step
      "[1, 2, 3]\n"                                           // 5: not an object
      "{\"rank\": 0, \"step\": 6, \"duration\": \"slow\"}\n"  // 6: not a time
      "{\"rank\": 0, \"step\": 7, \"duration\": 0.8}\n";      // 7
  std::string path = WriteFile(dir.File("steps.jsonl"), jsonl);
  laggard::Run run = IngestPaths({path});
  EXPECT_EQ(Count(run, DiagCode::kJsonlBadLine), 5u);
  EXPECT_EQ(ExampleLines(run, DiagCode::kJsonlBadLine), (std::vector<uint64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kJsonlBadLine)[0].file, path);
  EXPECT_EQ((StepsOf(run, 0)), (std::vector<std::pair<int64_t, int64_t>>{{1, 800}, {7, 800}}));
}

TEST(CorruptionTest, OverLongLineIsCountedAndFollowingLinesRead) {
  TempDir dir;
  for (size_t long_length : {LineReader::kMaxLine + 10, LineReader::kMaxLine * 3}) {
    SCOPED_TRACE("line of " + std::to_string(long_length) + " bytes");
    std::string log =
        ArticleLines(0, 2) + std::string(long_length, 'x') + "\n" + ArticleLines(2, 6);
    std::string path = WriteFile(dir.File("rank0-" + std::to_string(long_length) + ".log"), log);
    laggard::Run run = IngestPaths({path});
    EXPECT_EQ(Count(run, DiagCode::kLineTooLong), 1u);
    EXPECT_EQ(ExampleLines(run, DiagCode::kLineTooLong), std::vector<uint64_t>{3});
    EXPECT_EQ(StepsOf(run, 0), ExpectedSteps(0, 6));
    ASSERT_EQ(run.ranks.size(), 1u);
    EXPECT_EQ(run.ranks[0].steps.back().src.line, 7u) << "line numbers count the long line";
  }
}

TEST(CorruptionTest, CrlfLineEndingsAreRead) {
  TempDir dir;
  std::string crlf;
  for (char c : ArticleLines(0, 4)) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  std::string csv = "rank,step,duration_ms\r\n0,10,800\r\n0,11,801\r\n";
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log"), crlf)});
  EXPECT_EQ(StepsOf(run, 0), ExpectedSteps(0, 4));
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  laggard::Run csv_run = IngestPaths({WriteFile(dir.File("steps.csv"), csv)});
  EXPECT_EQ((StepsOf(csv_run, 0)),
            (std::vector<std::pair<int64_t, int64_t>>{{10, 800}, {11, 801}}));
  EXPECT_EQ(csv_run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(CorruptionTest, LastLineWithoutNewlineIsRead) {
  TempDir dir;
  std::string text = ArticleLines(0, 3);
  text.pop_back();
  std::string csv = "rank,step,duration_ms\n0,1,800";
  std::string jsonl = "{\"rank\": 0, \"step\": 1, \"duration\": 0.8}";
  EXPECT_EQ(StepsOf(IngestPaths({WriteFile(dir.File("rank0.log"), text)}), 0), ExpectedSteps(0, 3));
  EXPECT_EQ(IngestPaths({WriteFile(dir.File("steps.csv"), csv)}).total_steps(), 1u);
  EXPECT_EQ(IngestPaths({WriteFile(dir.File("steps.jsonl"), jsonl)}).total_steps(), 1u);
  std::string gz = GzipParts({text}, nullptr);
  laggard::Run gz_run = IngestPaths({WriteFile(dir.File("rank0.log.gz"), gz)});
  EXPECT_EQ(StepsOf(gz_run, 0), ExpectedSteps(0, 3));
  EXPECT_EQ(gz_run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(CorruptionTest, NulByteAfterTheSniffedHeadDoesNotStopTheRead) {
  TempDir dir;
  // Sniffing sees only text; a NUL far down costs that one line, no more.
  std::string log = ArticleLines(0, 3000);
  size_t third = log.find("step 2500,");
  log[third - 2] = '\0';  // inside "rank 0" of step 2500's line
  laggard::Run run = IngestPaths({WriteFile(dir.File("rank0.log"), log)});
  EXPECT_EQ(run.total_steps(), 2999u);
  EXPECT_EQ(StepsOf(run, 0).back(), (std::pair<int64_t, int64_t>{2999, DurationMsOf(2999)}));
}

// The legacy autograd profiler's trace (torch without Kineto), through
// Ingest() with the standard trace readers too.

laggard::Run IngestWithTraces(const std::vector<std::string>& paths) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  EXPECT_TRUE(readers.ok());
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 2;
  auto run = Ingest(paths, readers->readers, options, traces.readers);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? std::move(run.value()) : laggard::Run();
}

// The exporter's template, one event.
std::string LegacyEvent(const std::string& name, int ts, int dur) {
  return "{\"name\": \"" + name + "\", \"ph\": \"X\", \"ts\": " + std::to_string(ts) +
         ", \"dur\": " + std::to_string(dur) +
         ", \"tid\": 1, \"pid\": \"CPU functions\", "
         "\"args\": {}}";
}

std::string LegacyTrace(int events) {
  std::string s = "[";
  for (int i = 0; i < events; ++i) {
    s += (i ? ", " : "") + LegacyEvent("aten::op" + std::to_string(i), i * 100, 50 + i);
  }
  return s + "]";
}

TEST(CorruptionTest, LegacyTraceCutByAKilledJobKeepsItsCompleteEvents) {
  TempDir dir;
  std::string whole = LegacyTrace(40);
  // Cut inside event 30's name.
  size_t cut = whole.find("aten::op30") + 4;
  std::string path = WriteFile(dir.File("trace_rank2.json"), whole.substr(0, cut));
  laggard::Run run = IngestWithTraces({path});
  ASSERT_EQ(run.traces.size(), 1u);
  EXPECT_EQ(run.files[0].format, "torch-legacy");
  EXPECT_EQ(run.traces[0].rank, 2);
  EXPECT_EQ(run.traces[0].ops.size(), 30u);
  EXPECT_EQ(run.traces[0].ops.back().dur_ns, (50 + 29) * 1000);
  EXPECT_TRUE(run.traces[0].truncated);
  ASSERT_EQ(Count(run, DiagCode::kTraceTruncated), 1u);
  const DiagExample& e = run.diagnostics.examples(DiagCode::kTraceTruncated)[0];
  EXPECT_EQ(e.file, path);
  EXPECT_EQ(e.offset, cut);
  EXPECT_NE(e.message.find("30 complete events kept"), std::string::npos) << e.message;
}

TEST(CorruptionTest, LegacyTraceGzipCutKeepsWhatDecodes) {
  TempDir dir;
  std::string text = LegacyTrace(300);
  std::vector<size_t> offsets;
  std::string gz = GzipParts({text.substr(0, 9000), text.substr(9000)}, &offsets);
  std::string path = WriteFile(dir.File("rank0.json.gz"), gz.substr(0, offsets[1] + 10));
  laggard::Run run = IngestWithTraces({path});
  ASSERT_EQ(run.traces.size(), 1u);
  std::string decoded = InflatePrefix(gz.substr(0, offsets[1] + 10));
  uint64_t complete = 0;
  for (size_t p = decoded.find("}}"); p != std::string::npos; p = decoded.find("}}", p + 2)) {
    ++complete;
  }
  EXPECT_EQ(run.traces[0].ops.size(), complete);
  EXPECT_TRUE(run.traces[0].truncated);
  EXPECT_EQ(Count(run, DiagCode::kGzipTruncated), 1u);
  EXPECT_EQ(Count(run, DiagCode::kTraceTruncated), 1u);
}

TEST(CorruptionTest, LegacyTraceMutationsAreBadEventsAtTheirOffsets) {
  TempDir dir;
  std::string text = LegacyTrace(10);
  // Event 3 loses its ':' after "ts"; event 6 gets "dur": -5; a stray byte
  // sits between events 8 and 9.
  auto replace = [&](const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
  };
  replace("\"ts\": 300", "\"ts\" 300");
  replace("\"dur\": 56", "\"dur\": -5");
  text.insert(text.find(LegacyEvent("aten::op9", 900, 59)), "x, ");
  size_t e3 = text.find("{\"name\": \"aten::op3\"");
  size_t e6 = text.find("{\"name\": \"aten::op6\"");
  size_t stray = text.find("x, ");
  laggard::Run run = IngestWithTraces({WriteFile(dir.File("rank0.json"), text)});
  ASSERT_EQ(run.traces.size(), 1u);
  EXPECT_EQ(run.traces[0].ops.size(), 8u);
  ASSERT_EQ(Count(run, DiagCode::kTraceBadEvent), 3u);
  const auto& ex = run.diagnostics.examples(DiagCode::kTraceBadEvent);
  EXPECT_EQ(ex[0].offset, e3);
  EXPECT_EQ(ex[1].offset, e6);
  EXPECT_EQ(ex[2].offset, stray);
  EXPECT_EQ(run.traces[0].ops.back().start_ns, 900'000) << "event 9, after the stray byte, is read";
  EXPECT_FALSE(run.traces[0].truncated);
}

TEST(CorruptionTest, LegacyTraceOfGarbageAfterItsBracketIsReadInFull) {
  TempDir dir;
  laggard::Run run =
      IngestWithTraces({WriteFile(dir.File("rank0.json"), LegacyTrace(5) + "\n\x01garbage")});
  ASSERT_EQ(run.traces.size(), 1u);
  EXPECT_EQ(run.traces[0].ops.size(), 5u);
  EXPECT_EQ(Count(run, DiagCode::kTraceBadEvent), 1u);
}

// Megatron-style op timelines (StragglerAnalysis' export): ops first, the
// thread_name metadata after them, as the exporter writes them.

std::string TimelineOp(int i) {
  return "{\"name\":\"forward-compute\",\"cat\":\"forward-compute\",\"pid\":" +
         std::to_string(i % 2) + ",\"tid\":" + std::to_string((i % 2) * 5) +
         ",\"ts\":" + std::to_string(i * 100) + ".5,\"dur\":" + std::to_string(50 + i) +
         ",\"ph\":\"X\",\"args\":{\"step\":" + std::to_string(i / 2) +
         ",\"model_chunk\":0,\"mb_id\":0,\"seq_id\":0}}";
}

std::string Timeline(int ops) {
  std::string s = "[";
  for (int i = 0; i < ops; ++i) s += (i ? "," : "") + TimelineOp(i);
  for (int dp = 0; dp < 2; ++dp) {
    s += ",{\"name\":\"thread_name\",\"pid\":" + std::to_string(dp) +
         ",\"tid\":" + std::to_string(dp * 5) +
         ",\"ph\":\"M\",\"args\":{\"name\":\"PP rank 0, TP rank 0, compute\"}}";
  }
  return s + "]";
}

TEST(CorruptionTest, TimelineCutByAKilledJobKeepsItsCompleteOpsWithoutTheirPlaces) {
  TempDir dir;
  std::string whole = Timeline(40);
  size_t cut = whole.find(TimelineOp(30)) + 20;
  std::string path = WriteFile(dir.File("timeline.json"), whole.substr(0, cut));
  laggard::Run run = IngestWithTraces({path});
  EXPECT_EQ(run.files[0].format, "megatron-timeline");
  ASSERT_EQ(run.op_timelines.size(), 1u);
  const OpTimeline& t = run.op_timelines[0];
  EXPECT_EQ(t.ops.size(), 30u);
  EXPECT_EQ(t.ops.back().dur_ns, (50 + 29) * 1000);
  // The metadata came after the cut: the workers are there, not placed.
  ASSERT_EQ(t.workers.size(), 2u);
  EXPECT_FALSE(t.workers[0].coord_known);
  EXPECT_FALSE(t.layout.has_value());
  ASSERT_EQ(Count(run, DiagCode::kTraceTruncated), 1u);
  const DiagExample& e = run.diagnostics.examples(DiagCode::kTraceTruncated)[0];
  EXPECT_EQ(e.file, path);
  EXPECT_EQ(e.offset, cut);
  EXPECT_NE(e.message.find("30 complete events kept"), std::string::npos) << e.message;
  EXPECT_EQ(Count(run, DiagCode::kTimelineLayoutUnknown), 1u);
  // Whole, the same file places both workers.
  laggard::Run full = IngestWithTraces({WriteFile(dir.File("whole.json"), whole)});
  ASSERT_EQ(full.op_timelines.size(), 1u);
  EXPECT_EQ(full.op_timelines[0].layout, (ParallelLayout{2, 1, 1, 1}));
  EXPECT_EQ(full.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(CorruptionTest, TimelineGzipCutKeepsWhatDecodes) {
  TempDir dir;
  std::string text = Timeline(300);
  std::vector<size_t> offsets;
  std::string gz = GzipParts({text.substr(0, 9000), text.substr(9000)}, &offsets);
  std::string path = WriteFile(dir.File("timeline.json.gz"), gz.substr(0, offsets[1] + 10));
  laggard::Run run = IngestWithTraces({path});
  ASSERT_EQ(run.op_timelines.size(), 1u);
  std::string decoded = InflatePrefix(gz.substr(0, offsets[1] + 10));
  uint64_t complete = 0;
  for (size_t p = decoded.find("}}"); p != std::string::npos; p = decoded.find("}}", p + 2)) {
    ++complete;
  }
  EXPECT_EQ(run.op_timelines[0].ops.size(), complete);
  EXPECT_EQ(Count(run, DiagCode::kGzipTruncated), 1u);
  EXPECT_EQ(Count(run, DiagCode::kTraceTruncated), 1u);
}

TEST(CorruptionTest, TimelineMutationsAreBadEventsAtTheirOffsets) {
  TempDir dir;
  std::string text = Timeline(10);
  // Op 3 loses its ':' after "ts"; op 6 gets "dur": -5; a stray byte sits
  // between ops 7 and 8.
  auto replace = [&](const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
  };
  replace("\"ts\":300.5", "\"ts\"300.5");
  replace("\"dur\":56", "\"dur\":-5");
  replace(
      "\"step\":3,\"model_chunk\":0,\"mb_id\":0,\"seq_id\":0}},{\"name\":\"forward-compute\","
      "\"cat\":"
      "\"forward-compute\",\"pid\":0,\"tid\":0,\"ts\":800.5",
      "\"step\":3,\"model_chunk\":0,\"mb_id\":0,\"seq_id\":0}},x,{\"name\":\"forward-compute\","
      "\"cat\":\"forward-compute\",\"pid\":0,\"tid\":0,\"ts\":800.5");
  size_t e3 = text.find(
      "{\"name\":\"forward-compute\",\"cat\":\"forward-compute\",\"pid\":1,\"tid\":5,"
      "\"ts\"300.5");
  size_t e6 = text.find("\"dur\":-5");
  e6 = text.rfind("{\"name\"", e6);
  size_t stray = text.find(",x,") + 1;
  laggard::Run run = IngestWithTraces({WriteFile(dir.File("timeline.json"), text)});
  ASSERT_EQ(run.op_timelines.size(), 1u);
  EXPECT_EQ(run.op_timelines[0].ops.size(), 8u);
  ASSERT_EQ(Count(run, DiagCode::kTraceBadEvent), 3u);
  const auto& ex = run.diagnostics.examples(DiagCode::kTraceBadEvent);
  EXPECT_EQ(ex[0].offset, e3);
  EXPECT_EQ(ex[1].offset, e6);
  EXPECT_EQ(ex[2].offset, stray);
  EXPECT_EQ(run.op_timelines[0].ops.back().start_ns, 900'500) << "op 9, after the stray byte";
  EXPECT_EQ(run.op_timelines[0].layout, (ParallelLayout{2, 1, 1, 1}));
  EXPECT_EQ(Count(run, DiagCode::kTraceTruncated), 0u);
}

}  // namespace
}  // namespace laggard
