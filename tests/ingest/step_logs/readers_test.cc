// Reader behaviour on small, hand-written inputs of every step-log format.

#include <gtest/gtest.h>

#include "ingest/step_logs/line_matcher.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

MatchResult MatchArticle(std::string_view line, ParsedStep& out) {
  static auto m = MakeArticleLineMatcher();
  std::string why;
  out = ParsedStep();
  return m->Match(line, out, why);
}

TEST(ArticleLineTest, ReadsTheArticlesOwnLine) {
  ParsedStep p;
  ASSERT_EQ(MatchArticle("rank 13, step 1200, time 0.9812s", p), MatchResult::kMatched);
  EXPECT_EQ(p.rank, 13);
  EXPECT_EQ(p.step, 1200);
  EXPECT_EQ(p.duration, 981'200'000);
}

TEST(ArticleLineTest, ToleratesLauncherPrefixesAndTimestamps) {
  ParsedStep p;
  ASSERT_EQ(MatchArticle("[rank3]: 2024-05-01 12:00:01,123 INFO rank 3, step 7, time 0.8s", p),
            MatchResult::kMatched);
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.step, 7);
}

TEST(ArticleLineTest, AcceptsOtherUnitsAndSeparators) {
  ParsedStep p;
  ASSERT_EQ(MatchArticle("Rank=2; Step=5; Time=812ms", p), MatchResult::kMatched);
  EXPECT_EQ(p.duration, 812'000'000);
  ASSERT_EQ(MatchArticle("rank 2, step 5, time 0.5", p), MatchResult::kMatched);
  EXPECT_EQ(p.duration, 500'000'000);  // no unit: seconds
}

TEST(ArticleLineTest, OrdinaryLogLinesDoNotMatch) {
  ParsedStep p;
  EXPECT_EQ(MatchArticle("Initializing process group, world size 8", p), MatchResult::kNoMatch);
  EXPECT_EQ(MatchArticle("ranking the results of step one", p), MatchResult::kNoMatch);
  EXPECT_EQ(MatchArticle("[rank3]: loading checkpoint", p), MatchResult::kNoMatch);
}

// The article's exact line takes a fast path; behind a leading blank the
// same line takes the general scan. Both must read the same values, at the
// fast path's limits (6 integer, 9 fraction digits) and just past them.
TEST(ArticleLineTest, ExactLineFastPathReadsWhatTheGeneralScanReads) {
  const std::string lines[] = {
      "rank 0, step 0, time 0",
      "rank 4095, step 2499, time 0.8123s",
      "rank 7, step 9, time 999999.999999999s",
      "rank 7, step 9, time 0.000000001s",
      "rank 7, step 9, time 1234567.5s",
      "rank 7, step 9, time 0.1234567891s",
      "rank 7, step 9, time 3.s",
      "rank 7, step 9, time 0.0s",
      "rank 7, step 9, time 812ms",
      "rank 7, step 9, time 0.8s extra",
      "rank 123456789012345678, step 1, time 1s",
      "rank 1234567890123456789, step 1, time 1s",
      "rank 7, step 9, time 0.8e1s",
  };
  for (const std::string& line : lines) {
    ParsedStep fast, general;
    MatchResult rf = MatchArticle(line, fast);
    MatchResult rg = MatchArticle(" " + line, general);
    EXPECT_EQ(rf, rg) << line;
    EXPECT_EQ(fast.rank, general.rank) << line;
    EXPECT_EQ(fast.step, general.step) << line;
    EXPECT_EQ(fast.duration, general.duration) << line;
    EXPECT_EQ(fast.unit, general.unit) << line;
  }
  ParsedStep p;
  ASSERT_EQ(MatchArticle("rank 7, step 9, time 999999.999999999s", p), MatchResult::kMatched);
  EXPECT_EQ(p.duration, 999'999'999'999'999);
  ASSERT_EQ(MatchArticle("rank 7, step 9, time 0.000000001s", p), MatchResult::kMatched);
  EXPECT_EQ(p.duration, 1);
}

TEST(ArticleLineTest, StepRecordsWithBadValuesAreGarbled) {
  ParsedStep p;
  EXPECT_EQ(MatchArticle("rank 3, step 7, time abc", p), MatchResult::kGarbled);
  EXPECT_EQ(MatchArticle("rank 3, step 7, tim", p), MatchResult::kGarbled);
  EXPECT_EQ(MatchArticle("rank 3, step , time 0.8s", p), MatchResult::kGarbled);
  EXPECT_EQ(MatchArticle("rank 3, step 7, time 0.8parsecs", p), MatchResult::kGarbled);
}

MatchResult MatchKeyValue(std::string_view line, ParsedStep& out, std::string* why = nullptr) {
  static auto m = MakeKeyValueLineMatcher();
  std::string w;
  out = ParsedStep();
  MatchResult r = m->Match(line, out, w);
  if (why) *why = w;
  return r;
}

TEST(KeyValueLineTest, ReadsTheStepReportersLine) {
  ParsedStep p;
  ASSERT_EQ(MatchKeyValue("2024-05-01 12:00:01 INFO laggard-step rank=3 step=120 time_s=0.810000 "
                          "compute_s=0.620000 data_s=0.01 host=node-1 gpu=3 ts=1714564801.5",
                          p),
            MatchResult::kMatched);
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.step, 120);
  EXPECT_EQ(p.duration, 810'000'000);
  EXPECT_EQ(p.compute, 620'000'000);
  EXPECT_FALSE(p.compute_bad);
  EXPECT_EQ(p.host, "node-1");
  EXPECT_EQ(p.gpu, 3);
  EXPECT_EQ(p.start, 1714564801'500'000'000 - 810'000'000);
  ASSERT_EQ(MatchKeyValue("laggard-step rank=0 step=1 time_ms=812 compute_ms=x", p),
            MatchResult::kMatched);
  EXPECT_EQ(p.duration, 812'000'000);
  EXPECT_TRUE(p.compute_bad);
}

TEST(KeyValueLineTest, MissingRequiredValuesAreGarbledOtherLinesNoMatch) {
  ParsedStep p;
  std::string why;
  EXPECT_EQ(MatchKeyValue("laggard-step rank=3 step=120 compute_s=0.6", p, &why),
            MatchResult::kGarbled);
  EXPECT_NE(why.find("time_s="), std::string::npos) << why;
  EXPECT_EQ(MatchKeyValue("laggard-step rank=x step=1 time_s=1", p), MatchResult::kGarbled);
  EXPECT_EQ(MatchKeyValue("laggard-step rank=1 step=1 time_s=nan", p), MatchResult::kGarbled);
  EXPECT_EQ(MatchKeyValue("laggard-step rank=1 step=1 time_s=1e400", p), MatchResult::kGarbled);
  EXPECT_EQ(MatchKeyValue("rank=3 step=120 time_s=0.81", p), MatchResult::kNoMatch);
}

TEST(TextLogReaderTest, KeyValueLinesGiveComputeTimesAndCountABadOne) {
  TempDir dir;
  WriteFile(dir.File("train.log"),
            "starting\n"
            "laggard-step rank=0 step=1 time_s=1.0 compute_s=0.6\n"
            "laggard-step rank=0 step=2 time_s=1.0 compute_s=-1 host=node-1\n"
            "laggard-step rank=1 step=1 time_s=1.0\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 2u);
  ASSERT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps[0].compute_ns, 600'000'000);
  EXPECT_EQ(run.ranks[0].steps[1].compute_ns, 0);
  EXPECT_EQ(run.ranks[0].info.host, "node-1");
  EXPECT_EQ(run.ranks[1].steps[0].compute_ns, 0);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepBadComputeTime), 1u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kStepBadComputeTime)[0].line, 3u);
}

TEST(MegatronLineTest, ReadsIterationAndElapsedTime) {
  auto m = MakeMegatronLineMatcher();
  ParsedStep p;
  std::string why;
  ASSERT_EQ(m->Match(" iteration       53/    1000 | consumed samples:        54272 | elapsed time "
                     "per iteration (ms): 127742.1 | learning rate: 1.489E-04 |",
                     p, why),
            MatchResult::kMatched);
  EXPECT_EQ(p.step, 53);
  EXPECT_EQ(p.duration, 127'742'100'000);
  EXPECT_FALSE(p.start);
}

TEST(MegatronLineTest, CurrentTimeGivesTheStart) {
  auto m = MakeMegatronLineMatcher();
  ParsedStep p;
  std::string why;
  ASSERT_EQ(
      m->Match("iteration        2/   30000 | current time: 1706860208.78 | consumed samples: "
               "32 | elapsed time per iteration (ms): 429.4 |",
               p, why),
      MatchResult::kMatched);
  ASSERT_TRUE(p.start);
  EXPECT_EQ(*p.start, 1706860208'780'000'000 - 429'400'000);
}

// tests/data/nvrx/nemo_demo_8rank.txt's first line, a real NeMo 2 run's.
TEST(MegatronLineTest, ReadsNemoProgressLines) {
  auto m = MakeMegatronLineMatcher();
  ParsedStep p;
  std::string why;
  ASSERT_EQ(m->Match("ining-demo/0 [default0]:Training epoch 0, iteration 15/19 | lr: 2.399e-06 | "
                     "global_batch_size: 512 | global_step: 15 | reduced_train_loss: 11.03 | "
                     "train_step_timing in s: 5.603 | consumed_samples: 8192",
                     p, why),
            MatchResult::kMatched);
  EXPECT_EQ(p.step, 15);
  EXPECT_EQ(p.duration, 5'603'000'000);
  ASSERT_EQ(m->Match("Training epoch 1, iteration 2/19 | global_step: 21 | "
                     "train_step_timing in s: 5.1",
                     p, why),
            MatchResult::kMatched);
  EXPECT_EQ(p.step, 21);  // the global step: the iteration restarts each epoch
  EXPECT_EQ(m->Match("Training epoch 0, iteration 15/19 | lr: 1e-5", p, why),
            MatchResult::kGarbled);
}

TEST(TextLogReaderTest, ALauncherPrefixBehindATaskLabelGivesTheRank) {
  TempDir dir;
  WriteFile(dir.File("run.log"),
            "ining-demo/0 [default1]:Training epoch 0, iteration 15/19 | global_step: 15 | "
            "train_step_timing in s: 5.603\n"
            "ining-demo/0 [default0]:Training epoch 0, iteration 15/19 | global_step: 15 | "
            "train_step_timing in s: 5.1\n"
            "note [x] [default7] no colon: iteration 16/19 | train_step_timing in s: 5.2\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].info.rank, 0);
  EXPECT_EQ(run.ranks[1].info.rank, 1);
  EXPECT_EQ(run.unattributed.size(), 1u);
}

TEST(MegatronLineTest, OtherIterationMentionsAreIgnored) {
  auto m = MakeMegatronLineMatcher();
  ParsedStep p;
  std::string why;
  EXPECT_EQ(m->Match("validation loss at iteration 1 | lm loss value: 4.28E-01 |", p, why),
            MatchResult::kNoMatch);
  EXPECT_EQ(m->Match("[Rank 43] (after 1 iterations) memory (MB)", p, why), MatchResult::kNoMatch);
  EXPECT_EQ(m->Match(" iteration       53/    1000 | consumed samples: 54272 |", p, why),
            MatchResult::kGarbled);
}

TEST(RegexLineTest, NamedGroupsGiveFieldsAndUnits) {
  auto m = MakeRegexLineMatcher(R"(r=(?<rank>\d+) it=(?<step>\d+) took (?<time_ms>[\d.]+))");
  ASSERT_TRUE(m.ok());
  ParsedStep p;
  std::string why;
  ASSERT_EQ((*m)->Match("x r=4 it=9 took 812.5 y", p, why), MatchResult::kMatched);
  EXPECT_EQ(p.rank, 4);
  EXPECT_EQ(p.step, 9);
  EXPECT_EQ(p.duration, 812'500'000);
  EXPECT_EQ((*m)->Match("nothing here", p, why), MatchResult::kNoMatch);
}

TEST(RegexLineTest, PatternWithoutRequiredGroupsIsRejected) {
  auto m = MakeRegexLineMatcher(R"((?<rank>\d+))");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("step"), std::string::npos);
  EXPECT_FALSE(MakeRegexLineMatcher("(unclosed").ok());
}

TEST(CsvReaderTest, HeaderNamesColumnsAndUnits) {
  TempDir dir;
  WriteFile(dir.File("steps.csv"),
            "host,rank,local_rank,step,step_time_ms,timestamp\n"
            "node-a,0,0,1,812.5,2024-05-01T12:00:00Z\n"
            "node-a,1,1,1,\"900\",2024-05-01T12:00:00Z\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.files[0].format, "csv");
  const StepSeries& r1 = run.ranks[1];
  EXPECT_EQ(r1.info.host, "node-a");
  EXPECT_EQ(r1.info.local_gpu, 1);
  EXPECT_EQ(r1.steps[0].duration_ns, 900'000'000);
  EXPECT_EQ(r1.steps[0].start_ns, 1714564800'000'000'000);
  EXPECT_EQ(r1.steps[0].src.line, 3u);
}

TEST(CsvReaderTest, TabSeparatedWithUnitInValues) {
  TempDir dir;
  WriteFile(dir.File("steps.tsv"), "rank\tstep\tduration\n0\t1\t0.8s\n0\t2\t810ms\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps[1].duration_ns, 810'000'000);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kMixedUnits), 1u);
}

TEST(CsvReaderTest, BadRowsAreCountedWithTheirLine) {
  TempDir dir;
  WriteFile(dir.File("steps.csv"), "rank,step,time_s\n0,1,0.8\n0,x,0.8\n0,3\n0,4,0.8\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kCsvBadRow), 2u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kCsvBadRow)[0].line, 3u);
}

TEST(CsvReaderTest, HeaderWithoutDurationIsSkipped) {
  TempDir dir;
  WriteFile(dir.File("other.csv"), "rank,step,loss\n0,1,2.5\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_TRUE(run.ranks.empty());
  EXPECT_EQ(run.diagnostics.count(DiagCode::kFileUnrecognised), 1u);
}

TEST(JsonlReaderTest, ReadsObjectsWithAnyKeyOrder) {
  TempDir dir;
  WriteFile(dir.File("steps.jsonl"),
            "{\"step\": 1, \"duration_ms\": 800, \"rank\": 2, \"host\": \"n1\", \"gpu\": 2}\n"
            "{\"rank\": \"2\", \"step\": 2, \"time\": \"0.9s\", \"ts\": 1714564800.5}\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_EQ(run.files[0].format, "jsonl");
  EXPECT_EQ(run.ranks[0].info.rank, 2);
  EXPECT_EQ(run.ranks[0].info.host, "n1");
  ASSERT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps[0].duration_ns, 800'000'000);
  EXPECT_EQ(run.ranks[0].steps[1].duration_ns, 900'000'000);
  EXPECT_EQ(run.ranks[0].steps[1].start_ns, 1714564800'500'000'000);
}

TEST(CsvReaderTest, ComputeColumnGivesEachStepsComputeTime) {
  TempDir dir;
  WriteFile(dir.File("steps.csv"),
            "rank,step,step_time_s,compute_ms\n"
            "0,1,1.0,612.5\n"
            "0,2,1.0,\n"      // not measured: the step without one
            "0,3,1.0,oops\n"  // not a time: counted, the step kept
            "0,4,1.0,-3\n");  // not positive: counted, the step kept
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 1u);
  const std::vector<StepRecord>& steps = run.ranks[0].steps;
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].compute_ns, 612'500'000);
  EXPECT_EQ(steps[1].compute_ns, 0);
  EXPECT_EQ(steps[2].compute_ns, 0);
  EXPECT_EQ(steps[3].duration_ns, 1'000'000'000);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepBadComputeTime), 2u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kStepBadComputeTime)[0].line, 4u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kCsvBadRow), 0u);
}

TEST(JsonlReaderTest, AgentStepLogPhaseComputeIsTheComputeTime) {
  TempDir dir;
  // As `laggard agent` writes steps.jsonl (agent/agent.cc).
  WriteFile(dir.File("steps.jsonl"),
            "{\"rank\":3,\"step\":120,\"step_time_s\":0.81,\"timestamp\":"
            "\"2024-05-01T12:00:00.000Z\",\"host\":\"node-1\",\"gpu\":3,"
            "\"phase_data_s\":0.01,\"phase_compute_s\":0.62}\n"
            "{\"rank\":3,\"step\":121,\"step_time_s\":0.81,\"phase_compute_s\":null}\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps[0].compute_ns, 620'000'000);
  EXPECT_EQ(run.ranks[0].steps[1].compute_ns, 0);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepBadComputeTime), 0u);
}

TEST(CsvReaderTest, ARepeatOfTheSameStepByAnotherFileFillsItsComputeTime) {
  TempDir dir;
  // The article's line (no compute time) and a CSV of the same loop.
  WriteFile(dir.File("a_train.log"),
            "rank 0, step 1, time 1.0000s\nrank 0, step 2, time 1.0000s\n");
  WriteFile(dir.File("b_steps.csv"), "rank,step,step_time_s,compute_s\n0,1,1.0,0.6\n0,2,1.0,0.7\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps[0].compute_ns, 600'000'000);
  EXPECT_EQ(run.ranks[0].steps[1].compute_ns, 700'000'000);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kStepDuplicate), 0u);
}

TEST(JsonlReaderTest, BrokenLinesAreCounted) {
  TempDir dir;
  WriteFile(dir.File("steps.jsonl"),
            "{\"rank\": 0, \"step\": 1, \"duration\": 0.8}\n"
            "{\"rank\": 0, \"step\": 2, \"duration\": \n"
            "[1,2]\n"
            "{\"rank\": 0, \"step\": 3}\n"
            "{\"rank\": 0, \"step\": 4, \"duration\": 0.8}\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kJsonlBadLine), 3u);
}

TEST(TextLogReaderTest, ManyRanksInOneFileWithNoiseBetween) {
  TempDir dir;
  WriteFile(dir.File("train.log"),
            "starting\n[rank0]: rank 0, step 0, time 0.81s\n[rank1]: rank 1, step 0, time 0.80s\n"
            "some warning\n[rank0]: rank 0, step 1, time 0.82s\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps.size(), 2u);
  EXPECT_EQ(run.ranks[0].steps[1].src.line, 5u);
}

TEST(TextLogReaderTest, MegatronLogTakesItsRankFromTheFileName) {
  TempDir dir;
  WriteFile(dir.File("logs/rank-7.out"),
            " iteration        1/    10 | elapsed time per iteration (ms): 900.0 |\n"
            " iteration        2/    10 | elapsed time per iteration (ms): 910.0 |\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_EQ(run.ranks[0].info.rank, 7);
}

TEST(TextLogReaderTest, MegatronLogWithoutRankIsAJobLevelSeries) {
  TempDir dir;
  WriteFile(dir.File("train.out"),
            " iteration        1/    10 | elapsed time per iteration (ms): 900.0 |\n");
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_TRUE(run.ranks.empty());
  ASSERT_EQ(run.unattributed.size(), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kRankUnknown), 1u);
}

TEST(TextLogReaderTest, UserPatternComesFirst) {
  TempDir dir;
  WriteFile(dir.File("custom.log"), "R4 S10 D0.75\nR4 S11 D0.76\n");
  laggard::Run run =
      IngestPaths({dir.path()}, std::string(R"(R(?<rank>\d+) S(?<step>\d+) D(?<time>[\d.]+))"));
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_EQ(run.ranks[0].steps[0].duration_ns, 750'000'000);
}

TEST(CsvReaderTest, RankMapPlacesRanksOnHostsAndGpus) {
  TempDir dir;
  WriteFile(dir.File("ranks.csv"), "rank,host,gpu\n0,node-a,0\n1,node-a,1\n2,node-b,x\n");
  WriteFile(dir.File("logs/train.log"),
            "rank 0, step 0, time 0.8s\nrank 1, step 0, time 0.8s\nrank 2, step 0, time 0.8s\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.ranks.size(), 3u);
  EXPECT_EQ(run.ranks[1].info.host, "node-a");
  EXPECT_EQ(run.ranks[1].info.local_gpu, 1);
  EXPECT_FALSE(run.ranks[2].info.host.has_value()) << "a bad row places nothing";
  EXPECT_EQ(run.diagnostics.count(DiagCode::kCsvBadRow), 1u);
  ASSERT_EQ(run.diagnostics.examples(DiagCode::kCsvBadRow).size(), 1u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kCsvBadRow)[0].line, 4u);
}

}  // namespace
}  // namespace laggard
