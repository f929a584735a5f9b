// Tests of the trace builder the Kineto and nsys readers share
// (ingest/traces/common/trace_builder.h): shape interning and its cap,
// launch times by correlation or given, the sort of ops run by run,
// collectives completed from their CPU-side records, and step ranges.

#include "ingest/traces/common/trace_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace laggard {
namespace {

TraceOp Op(TimeNs start_ns, DurationNs dur_ns, uint32_t name = 0, int16_t device = 0) {
  TraceOp op;
  op.start_ns = start_ns;
  op.dur_ns = dur_ns;
  op.name = name;
  op.device = device;
  return op;
}

TEST(TraceBuilderTest, ShapesAreInternedOnceUpToTheCap) {
  NameTable names;
  ShapeTable shapes;
  uint32_t id = shapes.Intern({132, 1, 1, 128, 1, 1}, names);
  EXPECT_EQ(names.Get(id), "grid 132x1x1 block 128x1x1");
  EXPECT_EQ(shapes.Intern({132, 1, 1, 128, 1, 1}, names), id);
  for (int64_t i = 1; i < static_cast<int64_t>(ShapeTable::kMaxShapes); ++i) {
    EXPECT_NE(shapes.Intern({i, 2, 1, 1, 1, 1}, names), kNoShape);
  }
  EXPECT_EQ(shapes.Intern({7, 7, 7, 7, 7, 7}, names), kNoShape);  // full: a new shape has none
  EXPECT_EQ(shapes.Intern({132, 1, 1, 128, 1, 1}, names), id);    // a known one keeps its id
}

// The example of AttributeLaunchGaps (model/trace.h): ops [0, 10) and
// [30, 40) us, the second launched at 25 us: 20 us idle, 15 unlaunched, 5
// queued.
void ExpectDocumentedGaps(const RankTrace& t) {
  EXPECT_EQ(t.launches_linked, 1u);
  EXPECT_EQ(t.gpu_idle_ns, 20'000);
  EXPECT_EQ(t.idle_unlaunched_ns, 15'000);
  EXPECT_EQ(t.idle_queued_ns, 5'000);
}

TEST(TraceBuilderTest, LaunchCallsFindTheirOpsByCorrelation) {
  for (uint32_t base : {1u, 3'000'000'000u}) {  // dense ids (a table), sparse (a search)
    NameTable names;
    TraceBuilder b(names);
    // Read in file order: the second op first; launch calls after the ops.
    b.AddCorrelatedOp(Op(30'000 - 100, 10'000), base + 1);
    b.AddCorrelatedOp(Op(0 - 100, 10'000), kNoCorrelation);
    b.AddLaunchCall(base + 1, 25'000 - 100);
    b.AddLaunchCall(base + 7, 1'000);  // launches nothing this trace holds
    RankTrace t = b.Finish(/*shift_ns=*/100, RepeatedSteps::kSpan);
    ASSERT_EQ(t.ops.size(), 2u);
    EXPECT_EQ(t.ops[0].start_ns, 0);  // shifted and sorted
    EXPECT_EQ(t.ops[1].start_ns, 30'000);
    t.device = 0;
    b.AttributeLaunchGaps(t);
    ExpectDocumentedGaps(t);
  }
}

TEST(TraceBuilderTest, GivenLaunchTimesTravelWithTheirOps) {
  NameTable names;
  TraceBuilder b(names);
  b.AddOpLaunchedAt(Op(30'000, 10'000), 25'000);
  b.AddOpLaunchedAt(Op(0, 10'000), std::nullopt);
  b.EndOpRun();
  RankTrace t = b.Finish(0, RepeatedSteps::kEarliest);
  EXPECT_EQ(t.ops[0].start_ns, 0);
  t.device = 0;
  b.AttributeLaunchGaps(t);
  ExpectDocumentedGaps(t);
}

TEST(TraceBuilderTest, RunsAreSortedApartThenMergedStably) {
  NameTable names;
  TraceBuilder b(names);
  // Two tables (runs): the first in order, the second not; ops of equal
  // start keep the order they were added in.
  b.AddOpLaunchedAt(Op(10, 1, /*name=*/1), std::nullopt);
  b.AddOpLaunchedAt(Op(20, 1, 2), std::nullopt);
  b.AddOpLaunchedAt(Op(30, 1, 3), std::nullopt);
  b.EndOpRun();
  b.AddOpLaunchedAt(Op(20, 1, 4), std::nullopt);
  b.AddOpLaunchedAt(Op(5, 1, 5), std::nullopt);
  b.AddOpLaunchedAt(Op(20, 1, 6), std::nullopt);
  b.EndOpRun();
  RankTrace t = b.Finish(0, RepeatedSteps::kEarliest);
  std::vector<uint32_t> order;
  for (const TraceOp& op : t.ops) order.push_back(op.name);
  EXPECT_EQ(order, (std::vector<uint32_t>{5, 1, 2, 4, 6, 3}));
  t.device = 0;
  b.AttributeLaunchGaps(t);
  EXPECT_EQ(t.launches_linked, 0u);
  EXPECT_EQ(t.idle_unlaunched_ns, std::nullopt);  // nothing linked: no split
}

TEST(TraceBuilderTest, CollectivesTakeWhatTheyLackFromTheirRecord) {
  NameTable names;
  TraceBuilder b(names);
  CollectiveCall unknown;  // a kernel whose name says no collective
  unknown.start_ns = 50;
  unknown.collective = names.Intern("");
  CollectiveCall known;
  known.start_ns = 10;
  known.collective = names.Intern("allgather");
  known.seq = 7;
  b.AddCollective(unknown, /*meta_id=*/5);
  b.AddCollective(known, 5);
  b.AddCollective(known);  // no record
  CommMeta meta;
  meta.seq = 42;
  meta.collective = "allreduce";
  meta.group = names.Intern("0");
  meta.nelems = 1024;
  meta.group_size = 8;
  b.AddCommMeta(5, meta);
  b.AddCommMeta(6, CommMeta{});  // says nothing: not kept
  RankTrace t = b.Finish(1000, RepeatedSteps::kSpan);
  ASSERT_EQ(t.collectives.size(), 3u);  // sorted by start
  EXPECT_EQ(t.collectives[0].start_ns, 1010);
  EXPECT_EQ(t.collectives[0].seq, 7);  // its own
  EXPECT_EQ(names.Get(t.collectives[0].collective), "allgather");
  EXPECT_EQ(t.collectives[0].nelems, 1024);
  EXPECT_EQ(t.collectives[1].seq, 7);
  EXPECT_EQ(t.collectives[1].nelems, std::nullopt);
  EXPECT_EQ(t.collectives[2].start_ns, 1050);
  EXPECT_EQ(t.collectives[2].seq, 42);
  EXPECT_EQ(names.Get(t.collectives[2].collective), "allreduce");
  EXPECT_EQ(t.collectives[2].group_size, 8);
}

TEST(TraceBuilderTest, StepRangesByMarkerElseBuiltinMergedAsTheReaderSays) {
  auto steps = [](RepeatedSteps repeats, bool marked) {
    StepRanges r;
    r.AddBuiltin(1, 0, 10);
    r.AddBuiltin(0, 20, 30);
    r.AddBuiltin(1, 2, 12);  // step 1 again, on another thread
    if (marked) r.AddMarked(MarkerRange{std::nullopt, 40, 50});
    std::vector<std::string> out;
    for (const TraceStep& s : r.Take(repeats)) {
      out.push_back(std::to_string(s.step) + ":" + std::to_string(s.start_ns) + "-" +
                    std::to_string(s.end_ns));
    }
    return out;
  };
  EXPECT_EQ(steps(RepeatedSteps::kSpan, false), (std::vector<std::string>{"1:0-12", "0:20-30"}));
  EXPECT_EQ(steps(RepeatedSteps::kEarliest, false),
            (std::vector<std::string>{"0:20-30", "1:0-10"}));
  EXPECT_EQ(steps(RepeatedSteps::kSpan, true), (std::vector<std::string>{"0:40-50"}));
  StepRanges r;
  r.AddBuiltin(3, 0, 1);
  EXPECT_FALSE(r.marked());
  EXPECT_EQ(r.builtin_ranges(), 1u);
}

}  // namespace
}  // namespace laggard
