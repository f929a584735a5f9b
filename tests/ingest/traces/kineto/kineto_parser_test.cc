// Tests of the Kineto reader's parser (ingest/traces/kineto/
// kineto_parser.h): from events as the tokenizer yields them (EventFields
// of raw tokens, written here by hand) to the RankTrace: ops and their
// classes, shapes and launch links, collectives completed from their
// record_param_comms, steps, the base time and the bad events.

#include "ingest/traces/kineto/kineto_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "model/run.h"

namespace laggard::kineto {
namespace {

EventFields Complete(Cat cat, std::string_view cat_tok, std::string_view name, std::string_view ts,
                     std::string_view dur) {
  EventFields e;
  e.ph = "\"X\"";
  e.cat = cat_tok;
  e.cat_kind = cat;
  e.name = name;
  e.ts = ts;
  e.dur = dur;
  return e;
}

EventFields Launch(std::string_view ts, std::string_view correlation) {
  EventFields e = Complete(Cat::kRuntime, "\"cuda_runtime\"", "\"cudaLaunchKernel\"", ts, "4.0");
  e.correlation = correlation;
  return e;
}

EventFields Kernel(std::string_view name, std::string_view ts, std::string_view dur,
                   std::string_view correlation) {
  EventFields e = Complete(Cat::kKernel, "\"kernel\"", name, ts, dur);
  e.pid = "0";
  e.tid = "7";
  e.device = "0";
  e.stream = "7";
  e.correlation = correlation;
  e.grid = std::array<int64_t, 3>{132, 1, 1};
  e.block = std::array<int64_t, 3>{384, 1, 1};
  return e;
}

struct Parsed {
  RunBuilder run;
  ReaderContext ctx;
  std::unique_ptr<EventDiagnostics> diag;
  std::unique_ptr<KinetoParser> parser;

  explicit Parsed(Mode mode, std::string_view marker = "") {
    ctx.path = "rank-1.pt.trace.json";
    ctx.out = &run;
    ctx.step_marker = marker;
    ctx.rank_from_path = 1;
    diag = std::make_unique<EventDiagnostics>(ctx.path);
    parser = std::make_unique<KinetoParser>(mode, ctx, *diag);
  }
  std::string Name(uint32_t id) { return std::string(run.names().Get(id)); }
};

TEST(KinetoParserTest, BuildsOpsCollectivesAndStepsFromEvents) {
  Parsed p(Mode::kDevice);
  uint64_t offset = 100;
  auto take = [&](const EventFields& e) { p.parser->OnEvent(e, offset += 100); };
  take(Complete(Cat::kAnnotation, "\"user_annotation\"", "\"ProfilerStep#7\"", "0.000", "100.000"));
  take(Launch("10.000", "21"));
  take(Kernel("\"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_cublas\"", "16.000", "30.000", "21"));
  EventFields nccl = Kernel("\"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgs)\"",
                            "50.000", "8.500", "22");
  nccl.ext_id = "5";
  nccl.nelems = "1048576";
  take(nccl);
  // The collective's CPU side comes later in the file: linking is order-free.
  EventFields rpc = Complete(Cat::kCpuOp, "\"cpu_op\"", "\"record_param_comms\"", "45.0", "2.0");
  rpc.ext_id = "5";
  rpc.seq = "42";
  rpc.pg_name = "\"0\"";
  rpc.group_size = "8";
  take(rpc);
  take(Complete(Cat::kMemcpy, "\"gpu_memcpy\"", "\"Memcpy HtoD (Pinned -> Device)\"", "2.000",
                "3.000"));
  take(Kernel("\"k\"", "\"abc\"", "1.0", "23"));  // a bad event
  EXPECT_TRUE(p.parser->has_ops());

  TraceHeader header;
  header.base_ns = 1'000'000'000;
  header.rank = 3;
  header.world_size = 8;
  RankTrace t = p.parser->Finish(header, /*events_total=*/9, /*events_lost=*/0, false);

  EXPECT_EQ(t.producer, "kineto");
  EXPECT_EQ(t.rank, 3);  // distributedInfo before the file name
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.device, 0);
  EXPECT_EQ(t.events_total, 9u);
  EXPECT_FALSE(t.cpu_only);
  ASSERT_EQ(t.ops.size(), 3u);  // sorted by start, base added
  EXPECT_EQ(t.ops[0].cls, OpClass::kMemcpy);
  EXPECT_EQ(t.ops[0].start_ns, 1'000'002'000);
  EXPECT_EQ(t.ops[0].shape, kNoShape);  // no grid / block
  EXPECT_EQ(t.ops[1].cls, OpClass::kGemm);
  EXPECT_EQ(t.ops[1].dur_ns, 30'000);
  EXPECT_EQ(t.ops[1].stream, 7);
  EXPECT_EQ(p.Name(t.ops[1].shape), "grid 132x1x1 block 384x1x1");
  EXPECT_EQ(t.ops[2].cls, OpClass::kCommunication);
  EXPECT_EQ(t.ops[2].shape, t.ops[1].shape);  // interned once
  EXPECT_EQ(t.launches_linked, 1u);           // the GEMM, by correlation 21

  ASSERT_EQ(t.collectives.size(), 1u);
  const CollectiveCall& c = t.collectives[0];
  EXPECT_EQ(p.Name(c.collective), "allreduce");  // from the kernel's name
  EXPECT_EQ(c.seq, 42);                          // from record_param_comms
  ASSERT_TRUE(c.group);
  EXPECT_EQ(p.Name(*c.group), "0");
  EXPECT_EQ(c.group_size, 8);
  EXPECT_EQ(c.nelems, 1048576);  // the kernel's own
  EXPECT_EQ(c.offset, 500u);
  EXPECT_EQ(c.start_ns, 1'000'050'000);

  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].step, 7);
  EXPECT_EQ(t.steps[0].start_ns, 1'000'000'000);
  EXPECT_EQ(t.steps[0].end_ns, 1'000'100'000);

  Diagnostics& d = p.diag->diag();
  EXPECT_EQ(d.count(DiagCode::kTraceBadEvent), 1u);
  ASSERT_EQ(d.examples(DiagCode::kTraceBadEvent).size(), 1u);
  EXPECT_EQ(d.examples(DiagCode::kTraceBadEvent)[0].offset, 800u);
  EXPECT_EQ(d.count(DiagCode::kTraceNoRank), 0u);
}

TEST(KinetoParserTest, StepMarkerRangesReplaceProfilerSteps) {
  Parsed p(Mode::kDevice, "train_step");
  p.parser->OnEvent(
      Complete(Cat::kAnnotation, "\"user_annotation\"", "\"ProfilerStep#1\"", "0.0", "10.0"), 1);
  p.parser->OnEvent(
      Complete(Cat::kAnnotation, "\"user_annotation\"", "\"train_step 5\"", "1.0", "8.0"), 2);
  p.parser->OnEvent(
      Complete(Cat::kAnnotation, "\"user_annotation\"", "\"train\\u005fstep 6\"", "11.0", "8.0"),
      3);
  RankTrace t = p.parser->Finish(TraceHeader{}, 3, 0, false);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].step, 5);
  EXPECT_EQ(t.steps[1].step, 6);  // its name decoded first
  EXPECT_EQ(t.rank, 1);           // from the file name
  EXPECT_EQ(p.diag->diag().count(DiagCode::kTraceNoStepMarker), 0u);
}

TEST(KinetoParserTest, CpuPassCountsOneLevelOfCpuCollectives) {
  Parsed p(Mode::kCpu);
  EventFields op = Complete(Cat::kCpuOp, "\"cpu_op\"", "\"aten::mm\"", "1.0", "2.0");
  op.tid = "4";
  p.parser->OnEvent(op, 1);
  // One all-reduce at three levels: the backend range wins.
  EventFields c10d = Complete(Cat::kCpuOp, "\"cpu_op\"", "\"c10d::allreduce_\"", "3.0", "9.0");
  p.parser->OnEvent(c10d, 2);
  EventFields rpc = Complete(Cat::kCpuOp, "\"cpu_op\"", "\"record_param_comms\"", "3.5", "8.0");
  rpc.coll_name = "\"allreduce\"";
  p.parser->OnEvent(rpc, 3);
  EventFields gloo =
      Complete(Cat::kAnnotation, "\"user_annotation\"", "\"gloo:all_reduce\"", "4.0", "6.0");
  p.parser->OnEvent(gloo, 4);
  RankTrace t = p.parser->Finish(TraceHeader{}, 4, 0, false);
  EXPECT_TRUE(t.cpu_only);
  EXPECT_EQ(t.ops.size(), 4u);
  for (const TraceOp& o : t.ops) EXPECT_EQ(o.device, -1);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(p.Name(t.collectives[0].kernel), "gloo:all_reduce");
  EXPECT_EQ(p.Name(t.collectives[0].collective), "allreduce");
  EXPECT_EQ(t.launches_linked, 0u);
}

TEST(KinetoParserTest, NoEventsIsSaidOnce) {
  Parsed p(Mode::kDevice);
  RankTrace t = p.parser->Finish(TraceHeader{}, 12, 0, false);
  EXPECT_TRUE(t.ops.empty());
  EXPECT_EQ(p.diag->diag().count(DiagCode::kTraceNoEvents), 1u);
  EXPECT_EQ(p.diag->diag().count(DiagCode::kTraceNoRank), 0u);  // rank 1 from the path
}

}  // namespace
}  // namespace laggard::kineto
