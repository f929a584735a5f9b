// Host-side launch gaps, per-shape kernel comparison and CPU-only (gloo)
// matching: the readers' new fields on real corpus traces (values checked
// independently with Python over the same files: the same definitions
// re-implemented on json.load / the sqlite3 CLI), synthetic variants, and
// the trace detector on injected faults and a healthy control.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/traces/host_gaps.h"
#include "analysis/traces/kernel_compare.h"
#include "analysis/traces/trace_detector.h"
#include "ingest/ingest.h"
#include "ingest/traces/kineto/kineto_reader.h"
#include "ingest/traces/nsys/nsys_reader.h"
#include "test_paths.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::TempDir;
using testing_util::WriteFile;

const std::string kCorpus = std::string(LAGGARD_CORPUS_DIR);

#define REQUIRE_FILE(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared corpus file not found: " << path

struct Loaded {
  Run run;
  const RankTrace& trace() const { return run.traces.at(0); }
  const TraceStep* Step(int64_t n) const {
    for (const TraceStep& s : trace().steps) {
      if (s.step == n) return &s;
    }
    return nullptr;
  }
  size_t Shaped() const {
    size_t n = 0;
    for (const TraceOp& op : trace().ops) n += op.shape != kNoShape;
    return n;
  }
};

Loaded Read(const TraceReader& reader, const std::string& path) {
  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = path;
  ctx.out = &builder;
  reader.Read(path, ctx);
  Loaded l;
  l.run.files.push_back(InputFileInfo{path, std::string(reader.name())});
  builder.Finalize(l.run);
  return l;
}

Loaded ReadKineto(const std::string& path) { return Read(*MakeKinetoTraceReader(), path); }

Loaded ReadKinetoText(const std::string& json) {
  TempDir dir;
  return ReadKineto(WriteFile(dir.File("trace.json"), json));
}

// Kineto's layout for a kernel and for its launch call.
std::string Kernel(
    const std::string& name, int64_t ts_us, int64_t dur_us, int64_t corr,
    const std::string& shape_args = R"J(, "grid": [132, 1, 1], "block": [128, 1, 1])J") {
  return fmt::format(
      R"J({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, )J"
      R"J("args": {{"External id": 1, "queued": 0, "device": 0, "context": 1, "stream": 7, )J"
      R"J("correlation": {}, "registers per thread": 32{}}}}})J",
      name, ts_us, dur_us, corr, shape_args);
}

std::string Launch(const std::string& cat, const std::string& name, const std::string& ts_us,
                   int64_t corr) {
  return fmt::format(
      R"J({{"ph": "X", "cat": "{}", "name": "{}", "pid": 10, "tid": 10, "ts": {}, "dur": 4, )J"
      R"J("args": {{"External id": 1, "cbid": 211, "correlation": {}}}}})J",
      cat, name, ts_us, corr);
}

std::string Wrap(const std::vector<std::string>& events) {
  std::string s = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i) s += (i ? ",\n" : "") + events[i];
  return s + "\n]}";
}

// -- Readers: real corpus traces.

TEST(TraceDepthReaderTest, KinetoCorpusLaunchGapsPerStep) {
  std::string path = kCorpus + "/kineto/hta__trace_filter__sampled_rank-0.json.gz";
  REQUIRE_FILE(path);
  Loaded l = ReadKineto(path);
  const RankTrace& t = l.trace();
  EXPECT_EQ(t.ops.size(), 1204u);
  EXPECT_EQ(t.launches_linked, 1204u);  // every kernel, memcpy and memset
  EXPECT_EQ(t.gpu_idle_ns, 675'191'000);
  EXPECT_EQ(t.idle_unlaunched_ns, 281'106'000);
  EXPECT_EQ(t.idle_queued_ns, 394'085'000);
  const TraceStep* s551 = l.Step(551);
  ASSERT_NE(s551, nullptr);
  EXPECT_EQ(s551->gpu_idle_ns, 325'696'000);
  EXPECT_EQ(s551->idle_unlaunched_ns, 120'204'000);
  EXPECT_EQ(s551->idle_queued_ns, 205'492'000);
  const TraceStep* s552 = l.Step(552);
  ASSERT_NE(s552, nullptr);
  EXPECT_EQ(s552->idle_unlaunched_ns, 160'853'000);
  // Kernels carry grid and block; memcpy / memset do not.
  EXPECT_EQ(l.Shaped(), 1154u);
  size_t first_kernel = 0;
  while (l.trace().ops[first_kernel].shape == kNoShape) ++first_kernel;
  EXPECT_EQ(l.run.names.Get(l.trace().ops[first_kernel].shape).substr(0, 5), "grid ");
}

// The reader remembers each kernel's last launch shape; a kernel launched
// with another grid or block must still get that shape, not the last one.
TEST(TraceDepthReaderTest, AKernelLaunchedWithSeveralShapesKeepsEachShape) {
  const std::vector<std::string> shapes = {
      R"J(, "grid": [132, 1, 1], "block": [128, 1, 1])J",
      R"J(, "grid": [264, 1, 1], "block": [128, 1, 1])J",
      R"J(, "grid": [132, 1, 1], "block": [256, 1, 1])J",
  };
  const std::vector<std::string> texts = {
      "grid 132x1x1 block 128x1x1", "grid 264x1x1 block 128x1x1", "grid 132x1x1 block 256x1x1"};
  std::vector<std::string> events;
  std::vector<std::string> expected;
  for (int i = 0; i < 60; ++i) {
    size_t k = static_cast<size_t>((i / 2 + i / 7) % 3);  // runs of one shape, then changes
    std::string name = i % 5 == 0 ? "other_kernel" : "gemm_kernel";
    events.push_back(Kernel(name, 100 + 10 * i, 5, i, shapes[k]));
    expected.push_back(texts[k]);
  }
  Loaded l = ReadKinetoText(Wrap(events));
  ASSERT_EQ(l.trace().ops.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NE(l.trace().ops[i].shape, kNoShape) << "op " << i;
    EXPECT_EQ(l.run.names.Get(l.trace().ops[i].shape), expected[i]) << "op " << i;
  }
}

TEST(TraceDepthReaderTest, KinetoCorpusFractionalTimesAndSteps) {
  std::string path =
      kCorpus + "/kineto/hta__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
  REQUIRE_FILE(path);
  Loaded l = ReadKineto(path);
  const RankTrace& t = l.trace();
  EXPECT_EQ(t.launches_linked, 6095u);
  EXPECT_EQ(t.gpu_idle_ns, 7'574'738);
  EXPECT_EQ(t.idle_unlaunched_ns, 963'007);
  EXPECT_EQ(t.idle_queued_ns, 6'611'731);
  ASSERT_NE(l.Step(101), nullptr);
  EXPECT_EQ(l.Step(101)->idle_unlaunched_ns, 963'007);
  ASSERT_NE(l.Step(103), nullptr);
  EXPECT_EQ(l.Step(103)->gpu_idle_ns, 1'144'281);
  EXPECT_EQ(l.Step(103)->idle_unlaunched_ns, 0);
  EXPECT_EQ(l.Shaped(), 4350u);
}

TEST(TraceDepthReaderTest, KinetoCorpusNcclJobIdlesWithAnEmptyQueue) {
  std::string path = kCorpus + "/kineto/hta__nccl_parser_config__nccl_data.json.gz";
  REQUIRE_FILE(path);
  Loaded l = ReadKineto(path);
  const RankTrace& t = l.trace();
  EXPECT_EQ(t.launches_linked, 3774u);
  EXPECT_EQ(t.gpu_idle_ns, 503'050'991);
  EXPECT_EQ(t.idle_unlaunched_ns, 471'913'020);
  EXPECT_EQ(t.idle_queued_ns, 31'137'971);
  ASSERT_NE(l.Step(5), nullptr);
  EXPECT_EQ(l.Step(5)->idle_unlaunched_ns, 159'560'290);
  EXPECT_EQ(l.Shaped(), 2700u);
}

TEST(TraceDepthReaderTest, KinetoCorpusHipAndLegacyRuntimeCategories) {
  std::string amd = kCorpus + "/kineto/hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz";
  std::string legacy = kCorpus + "/kineto/hta__trace_file_list__inference_rank_1.json.gz";
  REQUIRE_FILE(amd);
  REQUIRE_FILE(legacy);
  Loaded a = ReadKineto(amd);  // hipLaunchKernel / hipMemcpyWithStream, no grid args
  EXPECT_EQ(a.trace().launches_linked, 16u);
  EXPECT_EQ(a.trace().idle_unlaunched_ns, 2'019'296);
  EXPECT_EQ(a.trace().idle_queued_ns, 6'743'549);
  EXPECT_EQ(a.Shaped(), 0u);
  Loaded l = ReadKineto(legacy);  // cat "Runtime" / "Kernel"
  EXPECT_EQ(l.trace().launches_linked, 4u);
  EXPECT_EQ(l.trace().gpu_idle_ns, 1'599'000);
  EXPECT_EQ(l.trace().idle_unlaunched_ns, 1'562'000);
  EXPECT_EQ(l.trace().idle_queued_ns, 37'000);
  EXPECT_EQ(l.Shaped(), 4u);
}

TEST(TraceDepthReaderTest, KinetoCpuOnlyTraceHasNoLaunchSplit) {
  std::string path =
      kCorpus + "/kineto/hta__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz";
  REQUIRE_FILE(path);
  Loaded l = ReadKineto(path);
  EXPECT_TRUE(l.trace().cpu_only);
  EXPECT_EQ(l.trace().launches_linked, 0u);
  EXPECT_FALSE(l.trace().idle_unlaunched_ns);
  EXPECT_FALSE(l.trace().idle_queued_ns);
  EXPECT_EQ(l.trace().gpu_idle_ns, 0);
}

TEST(TraceDepthReaderTest, NsysCorpusLinksKernelsAndCopiesToRuntimeCalls) {
  std::string path = kCorpus + "/nsys_sqlite/cuckoo_hash_report1.sqlite";
  REQUIRE_FILE(path);
  Loaded l = Read(*MakeNsysTraceReader(), path);
  const RankTrace& t = l.trace();
  // 61 kernels + 188 memcpy + memset rows, each with its runtime call
  // (sqlite3: LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME ON correlationId and pid).
  EXPECT_EQ(t.launches_linked, t.ops.size());
  EXPECT_EQ(l.Shaped(), 61u);
  std::map<std::string, int> shapes;
  for (const TraceOp& op : t.ops) {
    if (op.shape != kNoShape) ++shapes[std::string(l.run.names.Get(op.shape))];
  }
  EXPECT_GT(shapes["grid 4194304x1x1 block 4x1x1"], 0) << shapes.begin()->first;
  ASSERT_TRUE(t.idle_unlaunched_ns);
  ASSERT_TRUE(t.idle_queued_ns);
  EXPECT_EQ(*t.idle_unlaunched_ns + *t.idle_queued_ns, t.gpu_idle_ns);
  EXPECT_GT(*t.idle_unlaunched_ns, 0);
}

// -- Readers: synthetic.

TEST(TraceDepthReaderTest, GapSplitsAtTheLaunchCall) {
  // Kernel 1 [1000, 1010) us; kernel 2 [1030, 1040) launched at 1025 us:
  // idle 20 us, 15 unlaunched, 5 queued. Kernel 3 [1050, 1060) launched at
  // 1002 us (queued early): 10 us queued.
  Loaded l = ReadKinetoText(Wrap({
      Launch("cuda_runtime", "cudaLaunchKernel", "999", 1),
      Kernel("gemm_a", 1000, 10, 1),
      Launch("cuda_runtime", "cudaLaunchKernel", "1025", 2),
      Kernel("gemm_a", 1030, 10, 2),
      Launch("cuda_driver", "cuLaunchKernel", "1002", 3),
      Kernel("gemm_a", 1050, 10, 3),
      Launch("cuda_runtime", "cudaStreamSynchronize", "1003", 4),  // no op: not a launch
      R"J({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 10, "tid": 10, "ts": 990, "dur": 50})J",
  }));
  const RankTrace& t = l.trace();
  EXPECT_EQ(t.launches_linked, 3u);
  EXPECT_EQ(t.gpu_idle_ns, 30'000);
  EXPECT_EQ(t.idle_unlaunched_ns, 15'000);
  EXPECT_EQ(t.idle_queued_ns, 15'000);
  ASSERT_NE(l.Step(7), nullptr);  // [990, 1040): the first gap only
  EXPECT_EQ(l.Step(7)->gpu_idle_ns, 20'000);
  EXPECT_EQ(l.Step(7)->idle_unlaunched_ns, 15'000);
  EXPECT_EQ(l.Step(7)->idle_queued_ns, 5'000);
  EXPECT_EQ(l.Shaped(), 3u);
  EXPECT_EQ(l.run.names.Get(t.ops[0].shape), "grid 132x1x1 block 128x1x1");
  EXPECT_EQ(l.run.diagnostics.count(DiagCode::kTraceBadEvent), 0u);
}

TEST(TraceDepthReaderTest, UnlinkedKernelsCountAsIdleButNotSplit) {
  // No launch events at all: the split is unknown, not zero.
  Loaded none = ReadKinetoText(Wrap({Kernel("k", 1000, 10, 1), Kernel("k", 1030, 10, 2)}));
  EXPECT_EQ(none.trace().gpu_idle_ns, 20'000);
  EXPECT_EQ(none.trace().launches_linked, 0u);
  EXPECT_FALSE(none.trace().idle_unlaunched_ns);
  // A launch whose correlation matches no kernel links nothing; the kernel
  // after the gap has no launch, so the gap is idle but in neither part.
  Loaded partial = ReadKinetoText(Wrap({
      Launch("cuda_runtime", "cudaLaunchKernel", "999", 1),
      Kernel("k", 1000, 10, 1),
      Launch("cuda_runtime", "cudaLaunchKernel", "1020", 99),
      Kernel("k", 1030, 10, 2),
  }));
  EXPECT_EQ(partial.trace().launches_linked, 1u);
  EXPECT_EQ(partial.trace().gpu_idle_ns, 20'000);
  EXPECT_EQ(partial.trace().idle_unlaunched_ns, 0);
  EXPECT_EQ(partial.trace().idle_queued_ns, 0);
}

TEST(TraceDepthReaderTest, BadLaunchCallIsCountedAndTheRestKept) {
  Loaded l = ReadKinetoText(Wrap({
      Launch("cuda_runtime", "cudaLaunchKernel", "\"abc\"", 1),
      Kernel("k", 1000, 10, 1),
      Launch("cuda_runtime", "cudaLaunchKernel", "1025", 2),
      Kernel("k", 1030, 10, 2),
  }));
  EXPECT_EQ(l.run.diagnostics.count(DiagCode::kTraceBadEvent), 1u);
  EXPECT_EQ(l.trace().ops.size(), 2u);
  EXPECT_EQ(l.trace().launches_linked, 1u);
  EXPECT_EQ(l.trace().idle_unlaunched_ns, 15'000);
}

TEST(TraceDepthReaderTest, MalformedGridFallsBackToNoShape) {
  Loaded l = ReadKinetoText(Wrap({
      Kernel("k", 1000, 10, 1, R"J(, "grid": [1, 2], "block": [128, 1, 1])J"),
      Kernel("k", 1020, 10, 2, R"J(, "grid": "132x1x1", "block": [128, 1, 1])J"),
      Kernel("k", 1040, 10, 3, R"J(, "grid": [-1, 1, 1], "block": [128, 1, 1])J"),
      Kernel("k", 1060, 10, 4, ""),
  }));
  EXPECT_EQ(l.trace().ops.size(), 4u);
  EXPECT_EQ(l.Shaped(), 0u);
  EXPECT_EQ(l.run.diagnostics.count(DiagCode::kTraceBadEvent), 0u);
}

// -- Detector, on traces built in the model.

struct Job {
  int ranks = 6;
  int steps = 4;
  int stall_rank = -1;  // host late before each step's first launch
  DurationNs stall_ns = 0;
  bool stall_queued = false;  // the stall is a queued wait, not a late launch
  int slow_rank = -1;         // shape B kernels run slow_factor as long
  double slow_factor = 1.0;
  bool with_launches = true;
};

// Each step: 100 launches of gemm at shape A (1 ms), 20 at shape B (4 ms),
// then an allreduce that ends for everyone at the last arrival + 2 ms.
// Launches are issued 50 us ahead of the GPU (a queue), except after a
// stall: the host issues the first kernel of the step stall_ns late.
Run SimulateJob(const Job& job) {
  Run run;
  uint32_t gemm = run.names.Intern("sm90_xmma_gemm_bf16bf16_bf16f32");
  uint32_t shape_a = run.names.Intern("grid 132x1x1 block 128x1x1");
  uint32_t shape_b = run.names.Intern("grid 528x1x1 block 256x1x1");
  uint32_t nccl = run.names.Intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  uint32_t allreduce = run.names.Intern("allreduce");
  uint32_t group = run.names.Intern("0");
  size_t R = static_cast<size_t>(job.ranks);
  std::vector<RankTrace> traces(R);
  std::vector<LaunchTimes> launches(R);
  std::vector<TimeNs> now(R, 1'000'000'000);
  for (int s = 0; s < job.steps; ++s) {
    std::vector<TimeNs> step_start = now, arrival(R);
    for (size_t r = 0; r < R; ++r) {
      RankTrace& t = traces[r];
      TimeNs& clock = now[r];
      bool stalled = static_cast<int>(r) == job.stall_rank;
      for (int k = 0; k < 120; ++k) {
        bool b = k % 6 == 5;
        DurationNs d = b ? 4'000'000 : 1'000'000;
        if (b && static_cast<int>(r) == job.slow_rank)
          d = static_cast<DurationNs>(static_cast<double>(d) * job.slow_factor);
        d += static_cast<DurationNs>((r * 7919 + static_cast<size_t>(k) * 104729) % 3'000);
        TimeNs launch = clock - 50'000;
        if (k == 0 && stalled) {
          clock += job.stall_ns;
          launch = job.stall_queued ? clock - job.stall_ns - 50'000 : clock - 5'000;
        }
        t.ops.push_back(TraceOp{clock, d, gemm, 7, OpClass::kGemm, 0, b ? shape_b : shape_a});
        launches[r].push_back(launch);
        clock += d + 2'000;
      }
      arrival[r] = clock;
    }
    TimeNs end = *std::max_element(arrival.begin(), arrival.end()) + 2'000'000;
    for (size_t r = 0; r < R; ++r) {
      RankTrace& t = traces[r];
      t.ops.push_back(TraceOp{arrival[r], end - arrival[r], nccl, 20, OpClass::kCommunication, 0});
      launches[r].push_back(arrival[r] - 50'000);
      CollectiveCall c;
      c.start_ns = arrival[r];
      c.dur_ns = end - arrival[r];
      c.kernel = nccl;
      c.collective = allreduce;
      c.group = group;
      c.seq = s;
      c.nelems = 1 << 20;
      t.collectives.push_back(c);
      now[r] = end + 20'000;
      t.steps.push_back(TraceStep{s, step_start[r], now[r]});
    }
  }
  for (size_t r = 0; r < R; ++r) {
    RankTrace& t = traces[r];
    t.rank = static_cast<int32_t>(r);
    t.file = static_cast<uint32_t>(r);
    t.device = 0;
    t.producer = "kineto";
    if (!job.with_launches) launches[r].clear();
    AttributeLaunchGaps(t, launches[r]);
    run.traces.push_back(std::move(t));
    run.files.push_back(InputFileInfo{fmt::format("rank{}.json", r), "kineto", 0, 0, true});
  }
  return run;
}

const Finding* Find(const TraceAnalysis& a, FindingCode code) {
  for (const Finding& f : a.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

TEST(TraceDepthDetectorTest, LateLaunchesMakeAHostStallWithStepNumbers) {
  Job job;
  job.stall_rank = 4;
  job.stall_ns = 30'000'000;
  laggard::Run run = SimulateJob(job);
  // Steps 1-3 (step 0 opens the trace: no gap before it): the 20 us pause
  // after the collective plus the 30 ms stall, less the 5 us launch latency.
  EXPECT_EQ(*run.traces[4].idle_unlaunched_ns, 3 * (30'000'000 + 20'000 - 5'000));
  EXPECT_EQ(*run.traces[4].idle_queued_ns, 3 * 5'000 + 4 * 2'000 * 120);
  TraceAnalysis a = AnalyzeTraces(run);
  ASSERT_EQ(a.culprit, 4);
  EXPECT_EQ(Find(a, FindingCode::kTraceComputeSlow), nullptr);
  const Finding* h = Find(a, FindingCode::kTraceHostStall);
  ASSERT_NE(h, nullptr);
  // 30 ms of ~212 ms steps (180 ms of kernels, the stall, the collective):
  // 14%; the peers' queues are never empty.
  EXPECT_NE(h->message.find("rank 4: GPU idle 14% of step "), std::string::npos) << h->message;
  EXPECT_NE(h->message.find(" with an empty launch queue, peers 0%"), std::string::npos)
      << h->message;
  Verdict v = DecideVerdict(run, StepAnalysis(), a);
  EXPECT_EQ(v.culprits.at(0).cause_class, CauseClass::kHostStall);
}

TEST(TraceDepthDetectorTest, AnalyzeRunPassesItsTraceOptionsToTheTraceDetector) {
  Job job;
  job.stall_rank = 4;
  job.stall_ns = 30'000'000;
  laggard::Run run = SimulateJob(job);
  EXPECT_EQ(AnalyzeRun(run, AnalysisOptions()).traces.culprit, 4);
  // Rank 4 is ~30 ms late at each step's first collective: a 1 s minimum
  // lateness leaves no late rank.
  AnalysisOptions strict;
  strict.traces.min_lateness_ns = 1'000'000'000;
  Analyses a = AnalyzeRun(run, strict);
  EXPECT_EQ(a.traces.culprit, std::nullopt);
  EXPECT_EQ(Find(a.traces, FindingCode::kTraceLateArrival), nullptr);
}

TEST(TraceDepthDetectorTest, IdleWithLaunchesQueuedIsNotAHostStall) {
  // The same idle time, but the launch was issued before the GPU went idle:
  // the GPU waited on something else, not on the host.
  Job job;
  job.stall_rank = 4;
  job.stall_ns = 30'000'000;
  job.stall_queued = true;
  laggard::Run run = SimulateJob(job);
  EXPECT_EQ(*run.traces[4].idle_unlaunched_ns, 0);
  TraceAnalysis a = AnalyzeTraces(run);
  ASSERT_EQ(a.culprit, 4);
  EXPECT_EQ(Find(a, FindingCode::kTraceHostStall), nullptr);
  EXPECT_EQ(Find(a, FindingCode::kTraceComputeSlow), nullptr);
  // Without launch data the detector can only see idle time: host stall.
  job.with_launches = false;
  TraceAnalysis blind = AnalyzeTraces(SimulateJob(job));
  EXPECT_NE(Find(blind, FindingCode::kTraceHostStall), nullptr);
}

TEST(TraceDepthDetectorTest, PerShapeRatioFindsASlowdownNameOnlyDilutes) {
  // Shape B (20 of 120 launches, 4 ms) runs 1.3x as long on rank 2; shape A
  // (100 launches, 1 ms) does not. By name alone the median is a shape-A
  // launch on both ranks: ratio 1.00.
  Job job;
  job.slow_rank = 2;
  job.slow_factor = 1.3;
  laggard::Run run = SimulateJob(job);
  std::vector<const RankTrace*> peers = {&run.traces[0], &run.traces[1], &run.traces[3]};
  KernelComparison by_shape = CompareKernels(run.traces[2], peers);
  EXPECT_EQ(by_shape.keys, 2u);
  EXPECT_EQ(by_shape.keys_with_shape, 2u);
  EXPECT_NEAR(by_shape.top_ratio, 1.3, 0.01);
  EXPECT_EQ(run.names.Get(by_shape.top_shape), "grid 528x1x1 block 256x1x1");
  EXPECT_GT(by_shape.ratio, 1.05);
  laggard::Run names_only = run;
  for (RankTrace& t : names_only.traces) {
    for (TraceOp& op : t.ops) op.shape = kNoShape;
  }
  std::vector<const RankTrace*> np = {&names_only.traces[0], &names_only.traces[1],
                                      &names_only.traces[3]};
  KernelComparison by_name = CompareKernels(names_only.traces[2], np);
  EXPECT_EQ(by_name.keys, 1u);
  EXPECT_LT(by_name.ratio, 1.05);

  TraceAnalysis a = AnalyzeTraces(run);
  ASSERT_EQ(a.culprit, 2);
  const Finding* k = Find(a, FindingCode::kTraceComputeSlow);
  ASSERT_NE(k, nullptr);
  EXPECT_NE(
      k->message.find(
          "[grid 528x1x1 block 256x1x1] 1.30x slower on rank 2 across 80 launches vs the median "
          "of 4 peers"),
      std::string::npos)
      << k->message;
  EXPECT_EQ(Find(a, FindingCode::kTraceHostStall), nullptr);
}

TEST(TraceDepthDetectorTest, HealthyJobHasNoFinding) {
  laggard::Run run = SimulateJob(Job());
  TraceAnalysis a = AnalyzeTraces(run);
  EXPECT_FALSE(a.culprit);
  EXPECT_TRUE(a.findings.empty()) << a.findings.front().message;
  std::vector<const RankTrace*> peers = {&run.traces[1], &run.traces[2]};
  HostGapComparison h = CompareHostGaps(run.traces[0], peers);
  ASSERT_TRUE(h.known);
  EXPECT_EQ(h.unlaunched_ns, 0);
}

// -- CPU-only (gloo): four ranks in the shape of the corpus's real gloo
// trace (hta__cpu_only__rank-34: distributedInfo backend gloo, no
// deviceProperties, gloo:all_reduce user_annotation ranges on two worker
// threads with "Input Dims", ProfilerStep#N, aten cpu_ops on the main thread).

std::string GlooRank(int rank, int late_rank, double late_us) {
  std::vector<std::string> ev;
  double t0 = 1212075529876.817;
  for (int step = 0; step < 5; ++step) {
    double step_start = t0 + step * 220000.0;
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1074, "tid": 1074, "ts": {:.3f}, "dur": 210109.162, "args": {{"External id": {}, "Record function id": 0, "Ev Idx": {}}}}})J",
        551 + step, step_start, step + 1, step));
    double compute_end =
        step_start + 15000.0 + (rank * 37 % 11) + (rank == late_rank ? late_us : 0.0);
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1074, "tid": 1074, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "Record function id": 0, "Input Dims": [[64, 128], [128, 64]], "Ev Idx": {}}}}})J",
        step_start + 10.0, compute_end - step_start - 10.0, 100 + step, 100 + step));
    // Both worker threads' all_reduce end together on every rank (the
    // slowest arrival + the transfer); each starts at its rank's arrival.
    double last_arrival = step_start + 15000.0 + 10 + late_us;
    struct Bucket {
      int tid;
      int64_t nelems;
      double transfer_us;
    };
    for (const Bucket& b : {Bucket{3553, 321271, 150000.0}, Bucket{3554, 2082411, 160000.0}}) {
      double arrival = compute_end + (b.tid - 3553) * 50.0;
      double end = last_arrival + (b.tid - 3553) * 50.0 + b.transfer_us;
      ev.push_back(fmt::format(
          R"J({{"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1074, "tid": {}, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Dims": [[{}]], "Ev Idx": {}}}}})J",
          b.tid, arrival, end - arrival, 1025 + step, b.nelems, 200 + step));
    }
  }
  std::string s = fmt::format(
      "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"distributedInfo\": "
      "{{\"backend\": \"gloo\", "
      "\"rank\": {}, \"world_size\": 4, \"pg_count\": 1}},\n  \"traceEvents\": [\n",
      rank);
  for (size_t i = 0; i < ev.size(); ++i) s += (i ? ",\n  " : "  ") + ev[i];
  return s +
         "\n  ],\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": "
         "1719853884000000000\n}\n";
}

TEST(TraceDepthGlooTest, CpuOnlyRankLateAtEveryCollectiveIsNamed) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 4; ++r) {
    paths.push_back(
        WriteFile(dir.File(fmt::format("rank-{}.pt.trace.json", r)), GlooRank(r, 2, 25000.0)));
  }
  auto kineto = MakeKinetoTraceReader();
  IngestOptions options;
  options.threads = 1;
  auto run = Ingest(paths, {}, options, {kineto.get()});
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->traces.size(), 4u);
  for (const RankTrace& t : run->traces) {
    EXPECT_TRUE(t.cpu_only);
    EXPECT_EQ(t.collectives.size(), 10u);  // 5 steps x 2 buckets
    EXPECT_EQ(t.steps.size(), 5u);
  }
  TraceAnalysis a = AnalyzeTraces(*run);
  EXPECT_EQ(a.instances, 10u);
  ASSERT_EQ(a.culprit, 2);
  const Finding* late = Find(a, FindingCode::kTraceLateArrival);
  ASSERT_NE(late, nullptr);
  EXPECT_NE(late->message.find("rank 2 arrives last at 10 of 10 collectives"), std::string::npos)
      << late->message;
}

TEST(TraceDepthGlooTest, CpuOnlyHealthyRanksHaveNoCulprit) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 4; ++r) {
    paths.push_back(
        WriteFile(dir.File(fmt::format("rank-{}.pt.trace.json", r)), GlooRank(r, -1, 0.0)));
  }
  auto kineto = MakeKinetoTraceReader();
  IngestOptions options;
  options.threads = 1;
  auto run = Ingest(paths, {}, options, {kineto.get()});
  ASSERT_TRUE(run.ok());
  TraceAnalysis a = AnalyzeTraces(*run);
  EXPECT_EQ(a.instances, 10u);
  EXPECT_FALSE(a.culprit);
  EXPECT_EQ(Find(a, FindingCode::kTraceLateArrival), nullptr);
}

}  // namespace
}  // namespace laggard
