// Tests of the alignment of traces timed from their own start: the
// header's example, which traces move and which never do, calls lost at a
// trace's edge, too few pairs, and the real 2-rank capture (rank 1
// computes twice as much), as read, and with its profiler started 5 s
// earlier than rank 0's.

#include "ingest/traces/common/clock_alignment.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadGzip;
using testing_util::TempDir;
using testing_util::WriteFile;

const std::string kData = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/torch_legacy/";

constexpr int64_t kUs = 1000;

// A trace of `rank` whose all-reduces end at `ends_us` (each 10 us long),
// with one op and one step [0, 1000) us.
RankTrace TraceEndingAt(Run& run, int32_t rank, TraceOrigin origin,
                        const std::vector<int64_t>& ends_us) {
  RankTrace t;
  t.file = static_cast<uint32_t>(run.files.size());
  run.files.push_back(InputFileInfo{"rank" + std::to_string(rank) + ".json", "torch-legacy"});
  t.rank = rank;
  t.origin = origin;
  uint32_t allreduce = run.names.Intern("allreduce");
  for (int64_t end : ends_us) {
    CollectiveCall c;
    c.start_ns = (end - 10) * kUs;
    c.dur_ns = 10 * kUs;
    c.collective = allreduce;
    t.collectives.push_back(c);
  }
  TraceOp op;
  op.start_ns = 5 * kUs;
  op.dur_ns = kUs;
  t.ops.push_back(op);
  t.steps.push_back(TraceStep{0, 0, 1000 * kUs});
  return t;
}

std::string FirstMessage(const Run& run, DiagCode code) {
  const auto& e = run.diagnostics.examples(code);
  return e.empty() ? std::string() : e[0].message;
}

TEST(ClockAlignmentTest, TheHeadersExample) {
  laggard::Run run;
  run.traces.push_back(TraceEndingAt(run, 0, TraceOrigin::kFileStart, {100, 200, 300}));
  run.traces.push_back(TraceEndingAt(run, 1, TraceOrigin::kFileStart, {40, 141, 239}));
  AlignTraceClocks(run);
  const RankTrace& r1 = run.traces[1];
  ASSERT_TRUE(r1.alignment.has_value());
  EXPECT_EQ(r1.alignment->reference_rank, 0);
  EXPECT_EQ(r1.alignment->shift_ns, 60 * kUs);
  EXPECT_EQ(r1.alignment->spread_ns, 1 * kUs);
  EXPECT_EQ(r1.alignment->matched, 3u);
  EXPECT_EQ(r1.collectives[0].start_ns, (40 - 10 + 60) * kUs);
  EXPECT_EQ(r1.ops[0].start_ns, 65 * kUs);
  EXPECT_EQ(r1.steps[0].start_ns, 60 * kUs);
  EXPECT_EQ(r1.steps[0].end_ns, 1060 * kUs);
  // The reference is on its own clock.
  ASSERT_TRUE(run.traces[0].alignment.has_value());
  EXPECT_EQ(run.traces[0].alignment->reference_rank, 0);
  EXPECT_EQ(run.traces[0].alignment->shift_ns, 0);
  EXPECT_EQ(run.traces[0].collectives[0].start_ns, 90 * kUs);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kTraceClockAligned), 1u);
  EXPECT_EQ(FirstMessage(run, DiagCode::kTraceClockAligned),
            "rank 1: timed from its own profiler start; moved by +0.060 ms onto rank 0's clock "
            "(median offset of 3 matched collective ends, spread 0.001 ms)");
}

TEST(ClockAlignmentTest, HostClockTracesNeverMoveAndAreTheReference) {
  laggard::Run run;
  run.traces.push_back(TraceEndingAt(run, 0, TraceOrigin::kFileStart, {10, 20, 30}));
  run.traces.push_back(TraceEndingAt(run, 3, TraceOrigin::kHostClock, {5010, 5020, 5030}));
  run.traces.push_back(TraceEndingAt(run, 4, TraceOrigin::kHostClock, {7010, 7020, 7030}));
  AlignTraceClocks(run);
  ASSERT_TRUE(run.traces[0].alignment.has_value());
  EXPECT_EQ(run.traces[0].alignment->reference_rank, 3);
  EXPECT_EQ(run.traces[0].alignment->shift_ns, 5000 * kUs);
  EXPECT_FALSE(run.traces[1].alignment.has_value());
  EXPECT_FALSE(run.traces[2].alignment.has_value());
  EXPECT_EQ(run.traces[2].collectives[0].start_ns, 7000 * kUs);
}

TEST(ClockAlignmentTest, RunsWithoutFileStartTracesAreLeftAlone) {
  laggard::Run run;
  run.traces.push_back(TraceEndingAt(run, 0, TraceOrigin::kHostClock, {10, 20, 30}));
  run.traces.push_back(TraceEndingAt(run, 1, TraceOrigin::kHostClock, {910, 920, 930}));
  AlignTraceClocks(run);
  EXPECT_FALSE(run.traces[1].alignment.has_value());
  EXPECT_EQ(run.traces[1].collectives[0].start_ns, 900 * kUs);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kTraceClockAligned), 0u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kTraceClockUnaligned), 0u);
}

// Rank 1 (its clock 500 us ahead) lost the first call of step 1, a range
// still open when its profiler started: matched by step, only that step's
// pair is wrong (-600 us) and the median ignores it; by order alone every
// pair would be off (-600, -1400, -600, ...).
TEST(ClockAlignmentTest, ACallLostAtOneTracesEdgeShiftsNoLaterPair) {
  laggard::Run run;
  RankTrace r0 = TraceEndingAt(run, 0, TraceOrigin::kFileStart, {100, 200, 1100, 1200, 2100, 2200});
  RankTrace r1 = TraceEndingAt(run, 1, TraceOrigin::kFileStart, {700, 1600, 1700, 2600, 2700});
  r0.steps = {TraceStep{1, 0, 1000 * kUs}, TraceStep{2, 1000 * kUs, 2000 * kUs},
              TraceStep{3, 2000 * kUs, 3000 * kUs}};
  r1.steps = {TraceStep{1, 500 * kUs, 1500 * kUs}, TraceStep{2, 1500 * kUs, 2500 * kUs},
              TraceStep{3, 2500 * kUs, 3500 * kUs}};
  run.traces = {r0, r1};
  EXPECT_EQ(CollectiveEndOffsets(run.traces[0], run.traces[1]),
            (std::vector<DurationNs>{-600 * kUs, -500 * kUs, -500 * kUs, -500 * kUs, -500 * kUs}));
  AlignTraceClocks(run);
  ASSERT_TRUE(run.traces[1].alignment.has_value());
  EXPECT_EQ(run.traces[1].alignment->shift_ns, -500 * kUs);
  EXPECT_EQ(run.traces[1].alignment->spread_ns, 0);
}

TEST(ClockAlignmentTest, TooFewPairsOrNoRankLeaveATraceWhereItWas) {
  laggard::Run run;
  run.traces.push_back(TraceEndingAt(run, 0, TraceOrigin::kFileStart, {100, 200, 300}));
  run.traces.push_back(TraceEndingAt(run, 1, TraceOrigin::kFileStart, {40, 141}));
  run.traces.push_back(TraceEndingAt(run, 2, TraceOrigin::kFileStart, {40, 141, 239}));
  run.traces[2].rank.reset();
  AlignTraceClocks(run);
  EXPECT_FALSE(run.traces[1].alignment.has_value());
  EXPECT_EQ(run.traces[1].collectives[0].start_ns, 30 * kUs);
  EXPECT_FALSE(run.traces[2].alignment.has_value());
  EXPECT_EQ(run.diagnostics.count(DiagCode::kTraceClockUnaligned), 2u);
  EXPECT_EQ(FirstMessage(run, DiagCode::kTraceClockUnaligned),
            "rank 1: timed from its own profiler start, and 2 of its 2 collectives match rank "
            "0's (3 needed): its times are not comparable with other ranks'");
}

TEST(ClockAlignmentTest, ASingleTraceNeedsNoAlignmentAndNoNote) {
  laggard::Run run;
  run.traces.push_back(TraceEndingAt(run, 0, TraceOrigin::kFileStart, {100}));
  run.traces[0].rank.reset();
  AlignTraceClocks(run);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kTraceClockUnaligned), 0u);
}

// The real capture.

Run IngestTraces(const std::vector<std::string>& paths) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  EXPECT_TRUE(readers.ok());
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 1;
  auto run = Ingest(paths, readers->readers, options, traces.readers);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? std::move(run.value()) : Run();
}

// `text` with `by_us` added to every "ts": the same trace, its profiler
// started that much earlier.
std::string ShiftTs(const std::string& text, int64_t by_us) {
  std::string out;
  const std::string key = "\"ts\": ";
  size_t pos = 0;
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, pos)) {
    size_t num = at + key.size();
    size_t end = text.find_first_not_of("0123456789", num);
    out += text.substr(pos, num - pos);
    out += std::to_string(std::stoll(text.substr(num, end - num)) + by_us);
    pos = end;
  }
  return out + text.substr(pos);
}

// Per matched instance (n-th call of rank 0 with n-th of rank 1), whether
// rank 1 arrived after rank 0, on the aligned clocks.
int Rank1LastAt(const Run& run) {
  const RankTrace& r0 = run.traces[0].rank == 0 ? run.traces[0] : run.traces[1];
  const RankTrace& r1 = run.traces[0].rank == 0 ? run.traces[1] : run.traces[0];
  int last = 0;
  for (size_t i = 0; i < r0.collectives.size() && i < r1.collectives.size(); ++i) {
    last += r1.collectives[i].start_ns > r0.collectives[i].start_ns;
  }
  return last;
}

TEST(ClockAlignmentTest, RealCaptureTheSlowedRankArrivesLastOnceAligned) {
  laggard::Run run = IngestTraces({kData + "sched_rank0.json.gz", kData + "sched_rank1.json.gz"});
  ASSERT_EQ(run.traces.size(), 2u);
  const RankTrace& r1 = run.traces[1];
  ASSERT_TRUE(r1.alignment.has_value());
  EXPECT_EQ(r1.alignment->reference_rank, 0);
  EXPECT_EQ(r1.alignment->matched, 12u);
  // The two profilers started within milliseconds of each other; the ends
  // agree to a fraction of a millisecond.
  EXPECT_LT(std::abs(r1.alignment->shift_ns), 10'000'000);
  EXPECT_LT(r1.alignment->spread_ns, 1'000'000);
  EXPECT_GE(Rank1LastAt(run), 10);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kTraceClockAligned), 1u);
}

TEST(ClockAlignmentTest, RealCaptureWithRank1sProfilerStartedFiveSecondsEarlier) {
  laggard::Run as_read =
      IngestTraces({kData + "sched_rank0.json.gz", kData + "sched_rank1.json.gz"});
  ASSERT_EQ(as_read.traces.size(), 2u);
  ASSERT_TRUE(as_read.traces[1].alignment.has_value());
  TempDir dir;
  std::string r1 = WriteFile(dir.File("sched_rank1.json"),
                             ShiftTs(ReadGzip(kData + "sched_rank1.json.gz"), 5'000'000));
  laggard::Run run = IngestTraces({kData + "sched_rank0.json.gz", r1});
  ASSERT_EQ(run.traces.size(), 2u);
  ASSERT_TRUE(run.traces[1].alignment.has_value());
  EXPECT_EQ(run.traces[1].alignment->shift_ns,
            as_read.traces[1].alignment->shift_ns - 5'000'000'000);
  EXPECT_EQ(run.traces[1].alignment->spread_ns, as_read.traces[1].alignment->spread_ns);
  EXPECT_EQ(run.traces[1].collectives[0].start_ns, as_read.traces[1].collectives[0].start_ns);
  EXPECT_EQ(Rank1LastAt(run), Rank1LastAt(as_read));
}

TEST(ClockAlignmentTest, RealAutogradCaptureWithoutStepsAlignsByOrder) {
  laggard::Run run =
      IngestTraces({kData + "autograd_rank0.json.gz", kData + "autograd_rank1.json.gz"});
  ASSERT_EQ(run.traces.size(), 2u);
  ASSERT_TRUE(run.traces[1].alignment.has_value());
  EXPECT_EQ(run.traces[1].alignment->matched, 9u);
  // Here the gloo workers' ends scatter by milliseconds (the capture's
  // 2 cores were shared with builds): the spread says so.
  EXPECT_GT(run.traces[1].alignment->spread_ns, 1'000'000);
  EXPECT_LT(run.traces[1].alignment->spread_ns, 5'000'000);
  EXPECT_GE(Rank1LastAt(run), 7);
}

}  // namespace
}  // namespace laggard
