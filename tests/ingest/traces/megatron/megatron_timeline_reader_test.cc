// Tests of the reader of Megatron-style op timelines: the real export of
// the corpus (facts checked with Python's json over the same file),
// sniffing against the Kineto and torch legacy readers, the placing of
// workers with and without metadata, and what is counted instead of read.

#include "ingest/traces/megatron/megatron_timeline_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ingest/common/sniff.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "ingest/traces/kineto/kineto_reader.h"
#include "ingest/traces/torch_legacy/torch_legacy_reader.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadGzip;
using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzip;

const std::string kCorpus = std::string(LAGGARD_CORPUS_DIR);
const std::string kTimeline =
    kCorpus + "/megatron_timeline/bytedance_StragglerAnalysis_timeline-ST.json.gz";

// One file through the reader alone (no sniffing), as ingest would call it.
struct Loaded {
  Run run;
  uint64_t taken = 0;
  const OpTimeline* timeline() const {
    return run.op_timelines.empty() ? nullptr : &run.op_timelines[0];
  }
  uint64_t diag(DiagCode code) const { return run.diagnostics.count(code); }
  const std::vector<DiagExample>& examples(DiagCode code) const {
    return run.diagnostics.examples(code);
  }
};

Loaded Load(const std::string& path) {
  auto reader = MakeMegatronTimelineReader();
  RunBuilder builder;
  ReaderContext ctx;
  ctx.file_index = 0;
  ctx.path = path;
  ctx.out = &builder;
  Loaded l;
  l.taken = reader->Read(path, ctx);
  l.run.files.push_back(InputFileInfo{path, "megatron-timeline"});
  builder.Finalize(l.run);
  return l;
}

Loaded LoadText(const std::string& text) {
  TempDir dir;
  return Load(WriteFile(dir.File("timeline.json"), text));
}

// Events as the exporter writes them (ujson: no blanks).
std::string Op(std::string_view name, int pid, int tid, std::string_view ts, std::string_view dur,
               int step, int chunk = 0, int mb = 0, int seq = 0) {
  return fmt::format(
      R"({{"name":"{0}","cat":"{0}","pid":{1},"tid":{2},"ts":{3},"dur":{4},"ph":"X",)"
      R"("args":{{"step":{5},"model_chunk":{6},"mb_id":{7},"seq_id":{8}}}}})",
      name, pid, tid, ts, dur, step, chunk, mb, seq);
}

std::string ThreadName(int pid, int tid, int pp, int tp, std::string_view category) {
  return fmt::format(
      R"({{"name":"thread_name","pid":{},"tid":{},"ph":"M","args":{{"name":"PP rank {}, TP rank {}, {}"}}}})",
      pid, tid, pp, tp, category);
}

std::string SortIndex(int pid, int tid) {
  return fmt::format(
      R"({{"name":"thread_sort_index","pid":{},"tid":{},"ph":"M","args":{{"sort_index":{}}}}})",
      pid, tid, tid);
}

std::string ProcessName(int pid) {
  return fmt::format(
      R"({{"name":"process_name","pid":{},"ph":"M","args":{{"name":"DP rank [{}]"}}}})", pid, pid);
}

std::string Array(const std::vector<std::string>& events, std::string_view sep = ",") {
  std::string s = "[";
  for (size_t i = 0; i < events.size(); ++i) s += (i ? std::string(sep) : "") + events[i];
  return s + "]";
}

// A dp 2 x pp 2 job (rank = dp + 2 * pp, tid = rank * 5 + category), two
// steps: per rank and step a forward and a backward compute, and a
// forward-send (stage 0) or forward-recv (stage 1) on the pp-comm thread.
std::vector<std::string> SmallJobOps() {
  std::vector<std::string> ops;
  for (int step : {7, 8}) {
    for (int rank = 0; rank < 4; ++rank) {
      int dp = rank % 2, pp = rank / 2;
      int t0 = (step - 7) * 1000 + rank * 10;
      ops.push_back(Op("forward-compute", dp, rank * 5, std::to_string(t0) + ".25", "100.5", step));
      ops.push_back(Op(pp == 0 ? "forward-send" : "forward-recv", dp, rank * 5 + 1,
                       std::to_string(t0 + 101), "2", step, -1, -1, 0));
      ops.push_back(Op("backward-compute", dp, rank * 5, std::to_string(t0 + 200), "200", step));
    }
  }
  return ops;
}

std::vector<std::string> SmallJobMetadata() {
  std::vector<std::string> meta;
  for (int rank = 0; rank < 4; ++rank) {
    for (int c = 0; c < 5; ++c) {
      static const char* kCats[] = {"compute", "pp-comm", "tp-comm", "dp-comm", "misc"};
      meta.push_back(ThreadName(rank % 2, rank * 5 + c, rank / 2, 0, kCats[c]));
      meta.push_back(SortIndex(rank % 2, rank * 5 + c));
    }
  }
  meta.push_back(ProcessName(0));
  meta.push_back(ProcessName(1));
  return meta;
}

std::string SmallJob(bool metadata_first = false) {
  std::vector<std::string> ops = SmallJobOps(), meta = SmallJobMetadata();
  std::vector<std::string> all = metadata_first ? meta : ops;
  for (const std::string& e : metadata_first ? ops : meta) all.push_back(e);
  return Array(all);
}

// Per worker (dp, pp, tp, rank), its ops as "kind step start dur".
std::map<std::string, std::vector<std::string>> OpsByWorker(const OpTimeline& t) {
  std::map<std::string, std::vector<std::string>> m;
  for (const TimelineOp& op : t.ops) {
    const TimelineWorker& w = t.workers[op.worker];
    std::string who = fmt::format("{} {} {} r{} {}", w.coord.dp, w.coord.pp, w.coord.tp,
                                  w.rank.value_or(-1), w.coord_known);
    m[who].push_back(fmt::format("{} {} {} {} mb{} c{} s{}", TimelineOpName(op.kind), op.step,
                                 op.start_ns, op.dur_ns, op.microbatch, op.chunk, op.seq));
  }
  return m;
}

// The real export.

TEST(MegatronTimelineReaderTest, CorpusExportGivesTheDp2Pp4JobOfEightWorkers) {
  if (!std::filesystem::exists(kTimeline)) {
    GTEST_SKIP() << "shared corpus not found at " << kTimeline;
  }
  Loaded l = Load(kTimeline);
  ASSERT_EQ(l.run.op_timelines.size(), 1u);
  const OpTimeline& t = *l.timeline();
  EXPECT_EQ(t.file, 0u);
  ASSERT_TRUE(t.layout.has_value());
  EXPECT_EQ(*t.layout, (ParallelLayout{2, 4, 1, 1}));
  // 6784 ops and 82 metadata events (40 threads x 2, 2 processes).
  EXPECT_EQ(t.ops.size(), 6784u);
  EXPECT_EQ(l.taken, 6866u);
  ASSERT_EQ(t.workers.size(), 8u);
  for (size_t i = 0; i < t.workers.size(); ++i) {
    const TimelineWorker& w = t.workers[i];
    EXPECT_TRUE(w.coord_known);
    ASSERT_TRUE(w.rank.has_value());
    EXPECT_EQ(*w.rank, static_cast<int32_t>(i)) << "workers in Megatron's rank order";
    EXPECT_EQ(*w.rank, w.coord.dp + 2 * w.coord.pp);
    EXPECT_EQ(MegatronRank(*t.layout, w.coord), *w.rank);
    EXPECT_EQ(w.coord.tp, 0);
  }
  std::set<int64_t> steps;
  std::map<std::string, int> by_kind;
  // Stage 3 (workers 6, 7): 4 forward computes (microbatches 0-3) per step.
  std::map<std::pair<int32_t, int64_t>, std::multiset<int32_t>> stage3_forward;
  for (const TimelineOp& op : t.ops) {
    steps.insert(op.step);
    ++by_kind[std::string(TimelineOpName(op.kind))];
    EXPECT_EQ(op.src.file, 0u);
    EXPECT_GE(op.dur_ns, 0);
    if (op.kind == TimelineOpKind::kForwardCompute && t.workers[op.worker].coord.pp == 3) {
      stage3_forward[{op.worker, op.step}].insert(op.microbatch);
    }
  }
  EXPECT_EQ(steps.size(), 32u);
  EXPECT_EQ(*steps.begin(), 23);
  EXPECT_EQ(*steps.rbegin(), 1048);
  EXPECT_EQ(stage3_forward.size(), 2u * 32u);
  for (const auto& [key, mbs] : stage3_forward) {
    EXPECT_EQ(mbs, (std::multiset<int32_t>{0, 1, 2, 3}))
        << "worker " << key.first << " step " << key.second;
  }
  EXPECT_EQ(by_kind, (std::map<std::string, int>{{"backward-compute", 1024},
                                                 {"backward-recv", 768},
                                                 {"backward-send", 768},
                                                 {"embedding-grads-all-reduce", 128},
                                                 {"forward-compute", 1024},
                                                 {"forward-recv", 768},
                                                 {"forward-send", 768},
                                                 {"gc", 256},
                                                 {"grads-reduce-scatter", 256},
                                                 {"layernorm-grads-all-reduce", 256},
                                                 {"optimizer", 256},
                                                 {"optimizer-clip-main-grad", 256},
                                                 {"params-all-gather", 256}}));
  // The first two events, to the ns: "ts":848671.6747283936,
  // "dur":138679.68320846558; then a p2p op without chunk or microbatch.
  const TimelineOp& first = t.ops[0];
  EXPECT_EQ(first.kind, TimelineOpKind::kBackwardCompute);
  EXPECT_EQ(t.workers[first.worker].rank, 0);
  EXPECT_EQ(first.start_ns, 848'671'675);
  EXPECT_EQ(first.dur_ns, 138'679'683);
  EXPECT_EQ(first.step, 23);
  EXPECT_EQ(first.chunk, 0);
  EXPECT_EQ(first.microbatch, 0);
  EXPECT_EQ(first.seq, 0);
  EXPECT_EQ(t.ops[4].kind, TimelineOpKind::kBackwardRecv);
  EXPECT_EQ(t.ops[4].chunk, -1);
  EXPECT_EQ(t.ops[4].microbatch, -1);
  for (DiagCode c :
       {DiagCode::kTraceBadEvent, DiagCode::kTraceTruncated, DiagCode::kTimelineOpUnknown,
        DiagCode::kTimelineLayoutUnknown, DiagCode::kTraceEventsUnused, DiagCode::kGzipTruncated}) {
    EXPECT_EQ(l.diag(c), 0u) << Describe(c).name;
  }
}

TEST(MegatronTimelineReaderTest, IngestGivesTheCorpusExportToThisReaderNotKineto) {
  if (!std::filesystem::exists(kTimeline)) {
    GTEST_SKIP() << "shared corpus not found at " << kTimeline;
  }
  auto readers = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(readers.ok());
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 1;
  auto run = Ingest({kTimeline}, readers->readers, options, traces.readers);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->files[0].format, "megatron-timeline");
  EXPECT_EQ(run->files[0].records, 6866u);
  EXPECT_TRUE(run->traces.empty());
  ASSERT_EQ(run->op_timelines.size(), 1u);
  EXPECT_EQ(run->op_timelines[0].ops.size(), 6784u);
  EXPECT_EQ(run->diagnostics.count(DiagCode::kTraceNoEvents), 0u)
      << "no more \"none of them a kernel\"";
}

// Sniffing.

TEST(MegatronTimelineReaderTest, SniffBeatsTheKinetoArrayLevelOnMegatronHeads) {
  auto megatron = MakeMegatronTimelineReader();
  auto kineto = MakeKinetoTraceReader();
  std::string job = SmallJob();
  EXPECT_EQ(megatron->Sniff(job), kSniffCertain - 1);
  EXPECT_LT(kineto->Sniff(job), megatron->Sniff(job));
  // Metadata first, Python's json blanks, a BOM and a cut head: still ours.
  EXPECT_EQ(megatron->Sniff(SmallJob(/*metadata_first=*/true)), kSniffCertain - 1);
  EXPECT_EQ(
      megatron->Sniff("\xEF\xBB\xBF [ {\"name\": \"gc\", \"cat\": \"gc\", \"pid\": 0, "
                      "\"tid\": 4, \"ts\": 1.5, \"dur\": 2.0, \"ph\": \"X\", \"args\": "
                      "{\"step\": 3, \"model_chunk\": null, \"mb_id\": null, \"seq_id\": 0}}, "
                      "{\"name\": \"gc\""),
      kSniffCertain - 1);
  if (std::filesystem::exists(kTimeline)) {
    std::string head = ReadGzip(kTimeline).substr(0, kSniffBytes);
    EXPECT_EQ(megatron->Sniff(head), kSniffCertain - 1);
    EXPECT_EQ(kineto->Sniff(head), kSniffCertain - 2);
  }
}

TEST(MegatronTimelineReaderTest, SniffLeavesOtherChromeTracesAlone) {
  auto megatron = MakeMegatronTimelineReader();
  // A Kineto object, a Kineto array, a legacy torch head.
  EXPECT_EQ(megatron->Sniff(R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel",)"
                            R"( "name": "gemm", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})"),
            kSniffNo);
  EXPECT_EQ(megatron->Sniff(R"([{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9,)"
                            R"( "tid": 9, "ts": 1, "dur": 2, "args": {"step": 1}}])"),
            kSniffNo);
  EXPECT_EQ(megatron->Sniff(R"([{"name": "aten::zeros", "ph": "X", "ts": 204, "dur": 85, "tid": 1,)"
                            R"( "pid": "CPU functions", "args": {}}])"),
            kSniffNo);
  // An op name of the vocabulary without the exporter's args, an unknown
  // op with them, a thread_name that names no stage, a cut first event.
  EXPECT_EQ(megatron->Sniff(R"([{"name":"optimizer","ph":"X","pid":0,"tid":0,"ts":1,"dur":2}])"),
            kSniffNo);
  EXPECT_EQ(megatron->Sniff(Array({Op("tp-allreduce", 0, 2, "1", "2", 3)})), kSniffNo);
  EXPECT_EQ(megatron->Sniff(
                R"([{"name":"thread_name","pid":0,"tid":0,"ph":"M","args":{"name":"python"}}])"),
            kSniffNo);
  EXPECT_EQ(megatron->Sniff(SmallJob().substr(0, 60)), kSniffNo);
  EXPECT_EQ(megatron->Sniff("[]"), kSniffNo);
  EXPECT_EQ(megatron->Sniff("rank 0, step 1, time 1s"), kSniffNo);
}

TEST(MegatronTimelineReaderTest, RealKinetoAndLegacyTracesKeepTheirReaders) {
  auto megatron = MakeMegatronTimelineReader();
  const std::string legacy_dir = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/torch_legacy/";
  std::vector<std::string> legacy = {legacy_dir + "sched_rank0.json.gz",
                                     legacy_dir + "autograd_rank0.json.gz"};
  for (const std::string& f : legacy) {
    EXPECT_EQ(megatron->Sniff(ReadGzip(f).substr(0, kSniffBytes)), kSniffNo) << f;
  }
  std::vector<std::string> kineto;
  if (std::filesystem::exists(kCorpus + "/kineto")) {
    for (const auto& e : std::filesystem::directory_iterator(kCorpus + "/kineto")) {
      kineto.push_back(e.path().string());
      EXPECT_EQ(megatron->Sniff(ReadGzip(e.path().string()).substr(0, kSniffBytes)), kSniffNo)
          << e.path();
    }
  }
  // And through Ingest, with every reader.
  std::vector<std::string> paths = legacy;
  paths.insert(paths.end(), kineto.begin(), kineto.end());
  auto readers = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(readers.ok());
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 1;
  auto run = Ingest(paths, readers->readers, options, traces.readers);
  ASSERT_TRUE(run.ok()) << run.status().message();
  for (const InputFileInfo& f : run->files) {
    bool is_legacy = f.path.find("/torch_legacy/") != std::string::npos;
    EXPECT_EQ(f.format, is_legacy ? "torch-legacy" : "kineto") << f.path;
  }
  EXPECT_TRUE(run->op_timelines.empty());
  if (kineto.empty()) GTEST_SKIP() << "shared corpus not found at " << kCorpus << "/kineto";
}

// Workers and layout.

TEST(MegatronTimelineReaderTest, MetadataBeforeOrAfterTheOpsPlacesTheSameWorkers) {
  Loaded after = LoadText(SmallJob());
  Loaded before = LoadText(SmallJob(/*metadata_first=*/true));
  ASSERT_NE(after.timeline(), nullptr);
  ASSERT_NE(before.timeline(), nullptr);
  const OpTimeline& t = *after.timeline();
  EXPECT_EQ(t.layout, (ParallelLayout{2, 2, 1, 1}));
  ASSERT_EQ(t.workers.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t.workers[i].rank, static_cast<int32_t>(i));
    EXPECT_EQ(t.workers[i].coord,
              (ParallelCoord{static_cast<int32_t>(i % 2), static_cast<int32_t>(i / 2), 0}));
  }
  EXPECT_EQ(t.ops.size(), 24u);
  EXPECT_EQ(after.taken, 24u + 42u);
  EXPECT_EQ(OpsByWorker(t), OpsByWorker(*before.timeline()));
  EXPECT_EQ(before.timeline()->layout, t.layout);
  // Rank 3's first forward: "ts":30.25,"dur":100.5 in step 7.
  EXPECT_EQ(OpsByWorker(t)["1 1 0 r3 true"][0], "forward-compute 7 30250 100500 mb0 c0 s0");
  EXPECT_EQ(after.diag(DiagCode::kTimelineLayoutUnknown), 0u);
}

TEST(MegatronTimelineReaderTest, ThreadsWithoutThreadNameAreWorkersOfUnknownPlace) {
  Loaded l = LoadText(Array(SmallJobOps()));
  ASSERT_NE(l.timeline(), nullptr);
  const OpTimeline& t = *l.timeline();
  EXPECT_FALSE(t.layout.has_value());
  ASSERT_EQ(t.workers.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(t.workers[i].coord_known);
    EXPECT_EQ(t.workers[i].rank, static_cast<int32_t>(i)) << "rank = tid / 5, in rank order";
  }
  EXPECT_EQ(t.ops.size(), 24u);
  ASSERT_EQ(l.diag(DiagCode::kTimelineLayoutUnknown), 1u);
  EXPECT_NE(l.examples(DiagCode::kTimelineLayoutUnknown)[0].message.find("4 of 4 workers"),
            std::string::npos)
      << l.examples(DiagCode::kTimelineLayoutUnknown)[0].message;
}

TEST(MegatronTimelineReaderTest, AThreadWithoutANameJoinsItsRanksNamedThreads) {
  // Only the compute threads are named (a file cut inside its metadata):
  // the pp-comm threads (tid 5r + 1) join their rank's worker.
  std::vector<std::string> events = SmallJobOps();
  for (int rank = 0; rank < 4; ++rank)
    events.push_back(ThreadName(rank % 2, rank * 5, rank / 2, 0, "compute"));
  Loaded l = LoadText(Array(events));
  ASSERT_NE(l.timeline(), nullptr);
  EXPECT_EQ(l.timeline()->workers.size(), 4u);
  EXPECT_EQ(l.timeline()->layout, (ParallelLayout{2, 2, 1, 1}));
  EXPECT_EQ(l.diag(DiagCode::kTimelineLayoutUnknown), 0u);
}

TEST(MegatronTimelineReaderTest, DpRanksThatAreNotZeroToNLeaveTheLayoutUnknown) {
  Loaded l =
      LoadText(Array({Op("optimizer", 3, 4, "1", "2", 5), ThreadName(3, 4, 0, 0, "compute")}));
  ASSERT_NE(l.timeline(), nullptr);
  EXPECT_TRUE(l.timeline()->workers[0].coord_known);
  EXPECT_EQ(l.timeline()->workers[0].coord.dp, 3);
  EXPECT_FALSE(l.timeline()->layout.has_value());
  EXPECT_EQ(l.diag(DiagCode::kTimelineLayoutUnknown), 1u);
}

TEST(MegatronTimelineReaderTest, VirtualChunksGiveVppAndNullArgsAreNotGiven) {
  // Python's json blanks; null where the job's timers have no value; seq_id
  // missing: numbered by start among the worker's ops of a kind in a step.
  std::string text = Array(
      {R"({"name": "forward-compute", "cat": "forward-compute", "pid": 0, "tid": 0, "ts": 50, )"
       R"("dur": 10, "ph": "X", "args": {"step": 1, "model_chunk": 1, "mb_id": null}})",
       R"({"name": "forward-compute", "cat": "forward-compute", "pid": 0, "tid": 0, "ts": 10, )"
       R"("dur": 10, "ph": "X", "args": {"step": 1, "model_chunk": 0, "mb_id": null}})",
       ThreadName(0, 0, 0, 0, "compute")},
      ", ");
  Loaded l = LoadText(text);
  ASSERT_NE(l.timeline(), nullptr);
  const OpTimeline& t = *l.timeline();
  EXPECT_EQ(t.layout, (ParallelLayout{1, 1, 1, 2}));
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[0].microbatch, -1);
  EXPECT_EQ(t.ops[0].chunk, 1);
  EXPECT_EQ(t.ops[0].seq, 1);
  EXPECT_EQ(t.ops[1].seq, 0);
}

// What is counted instead of read.

TEST(MegatronTimelineReaderTest, UnknownOpTypesAreCountedOncePerNameAtTheFirst) {
  std::vector<std::string> events = {
      Op("forward-compute", 0, 0, "1", "2", 1), Op("tp-allreduce", 0, 2, "3", "1", 1),
      Op("data-load", 0, 0, "0", "1", 1),       Op("tp-allreduce", 0, 2, "5", "1", 1),
      Op("tp-allreduce", 0, 2, "7", "1", 1),    Op("data-load", 0, 0, "9", "1", 2),
      ThreadName(0, 0, 0, 0, "compute")};
  std::string text = Array(events);
  Loaded l = LoadText(text);
  ASSERT_NE(l.timeline(), nullptr);
  EXPECT_EQ(l.timeline()->ops.size(), 1u);
  EXPECT_EQ(l.taken, 2u);
  EXPECT_EQ(l.diag(DiagCode::kTimelineOpUnknown), 5u);
  const auto& ex = l.examples(DiagCode::kTimelineOpUnknown);
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].offset, text.find(events[1]));
  EXPECT_NE(ex[0].message.find("3 events \"tp-allreduce\""), std::string::npos) << ex[0].message;
  EXPECT_EQ(ex[1].offset, text.find(events[2]));
  EXPECT_NE(ex[1].message.find("2 events \"data-load\""), std::string::npos) << ex[1].message;
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
}

TEST(MegatronTimelineReaderTest, BadEventsAreCountedAtTheirOffsetsAndTheRestKept) {
  std::vector<std::string> events = SmallJobOps();
  auto replace = [](std::string& e, const std::string& from, const std::string& to) {
    size_t at = e.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    e.replace(at, from.size(), to);
  };
  // Ops 0-11 are step 7's, 12-23 step 8's: ranks 0-3, three ops each.
  replace(events[1], "\"ts\":", "\"tz\":");                    // no ts
  replace(events[4], "\"dur\":2", "\"dur\":-2");               // negative dur
  replace(events[7], "\"step\":7", "\"step\":\"x\"");          // not a step number
  replace(events[9], "\"mb_id\":0", "\"mb_id\":0.5");          // not an index
  replace(events[16], "\"pid\":1", "\"pid\":NaN");             // Python's json writes NaN
  replace(events[19], "\"args\":{\"step\":8,", "\"args\":{");  // no step
  std::string text = Array(events);
  Loaded l = LoadText(text);
  ASSERT_NE(l.timeline(), nullptr);
  EXPECT_EQ(l.timeline()->ops.size(), 24u - 6u);
  ASSERT_EQ(l.diag(DiagCode::kTraceBadEvent), 6u);
  const auto& ex = l.examples(DiagCode::kTraceBadEvent);
  ASSERT_EQ(ex.size(), 5u) << "examples are capped";
  EXPECT_EQ(ex[0].offset, text.find(events[1]));
  EXPECT_NE(ex[0].message.find("without \"ts\""), std::string::npos) << ex[0].message;
  EXPECT_EQ(ex[1].offset, text.find(events[4]));
  EXPECT_NE(ex[1].message.find("negative \"dur\""), std::string::npos) << ex[1].message;
  EXPECT_EQ(ex[2].offset, text.find(events[7]));
  EXPECT_NE(ex[2].message.find("\"step\": \"x\""), std::string::npos) << ex[2].message;
  EXPECT_EQ(ex[3].offset, text.find(events[9]));
  EXPECT_EQ(ex[4].offset, text.find(events[16]));
  EXPECT_NE(ex[4].message.find("\"pid\": NaN"), std::string::npos) << ex[4].message;
  EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), 0u);
}

TEST(MegatronTimelineReaderTest, UnbalancedBracketsSkipToTheNextEvent) {
  std::vector<std::string> events = {Op("gc", 0, 4, "1", "1", 1), Op("gc", 0, 4, "3", "1", 1),
                                     Op("gc", 0, 4, "5", "1", 1)};
  std::string text = Array(events);
  text.replace(text.find("\"mb_id\":0", text.find(events[1])), 9, "\"mb_id\":[0");
  Loaded l = LoadText(text);
  ASSERT_NE(l.timeline(), nullptr);
  EXPECT_EQ(l.timeline()->ops.size(), 2u);
  EXPECT_EQ(l.timeline()->ops[1].start_ns, 5000);
  ASSERT_EQ(l.diag(DiagCode::kTraceBadEvent), 1u);
  EXPECT_EQ(l.examples(DiagCode::kTraceBadEvent)[0].offset, 1 + events[0].size() + 1);
}

TEST(MegatronTimelineReaderTest, AnEventOverOneMiBIsABadEventWhereverTheChunksEnd) {
  std::string big = Op("gc", 0, 4, "3", "1", 1);
  big.insert(big.find("\"args\""), "\"note\":\"" + std::string((1 << 20) + 10, 'x') + "\",");
  for (size_t pad : {size_t{0}, size_t{1} << 19}) {
    std::string text = std::string(pad, ' ') +
                       Array({Op("gc", 0, 4, "1", "1", 1), big, Op("gc", 0, 4, "5", "1", 1)});
    Loaded l = LoadText(text);
    ASSERT_NE(l.timeline(), nullptr);
    EXPECT_EQ(l.timeline()->ops.size(), 2u) << pad;
    ASSERT_EQ(l.diag(DiagCode::kTraceBadEvent), 1u) << pad;
    EXPECT_EQ(l.examples(DiagCode::kTraceBadEvent)[0].offset, text.find(big)) << pad;
    EXPECT_NE(l.examples(DiagCode::kTraceBadEvent)[0].message.find("over 1 MiB"),
              std::string::npos);
  }
}

TEST(MegatronTimelineReaderTest, ACutFileKeepsItsCompleteEventsAndLosesItsMetadata) {
  std::string whole = SmallJob();
  std::vector<std::string> ops = SmallJobOps();
  // Cut inside op 10: ops 0-9 are whole, the metadata is gone.
  size_t cut = whole.find(ops[10]) + 30;
  Loaded l = LoadText(whole.substr(0, cut));
  ASSERT_NE(l.timeline(), nullptr);
  EXPECT_EQ(l.timeline()->ops.size(), 10u);
  EXPECT_FALSE(l.timeline()->layout.has_value());
  ASSERT_EQ(l.diag(DiagCode::kTraceTruncated), 1u);
  const DiagExample& e = l.examples(DiagCode::kTraceTruncated)[0];
  EXPECT_EQ(e.offset, cut);
  EXPECT_NE(e.message.find("10 complete events kept"), std::string::npos) << e.message;
  EXPECT_EQ(l.diag(DiagCode::kTimelineLayoutUnknown), 1u);
  // Cut between events, after a ',': the same ops, no event lost.
  Loaded between = LoadText(whole.substr(0, whole.find(ops[10])));
  ASSERT_NE(between.timeline(), nullptr);
  EXPECT_EQ(between.timeline()->ops.size(), 10u);
  EXPECT_EQ(between.diag(DiagCode::kTraceTruncated), 1u);
}

TEST(MegatronTimelineReaderTest, AFileWithoutAnyOpGivesNoTimeline) {
  Loaded l =
      LoadText(Array({Op("tp-allgather", 0, 2, "1", "1", 1), ThreadName(0, 2, 0, 0, "tp-comm")}));
  EXPECT_EQ(l.timeline(), nullptr);
  EXPECT_EQ(l.taken, 0u);
  EXPECT_EQ(l.diag(DiagCode::kTraceNoEvents), 1u);
  EXPECT_EQ(l.diag(DiagCode::kTimelineOpUnknown), 1u);
  Loaded object = LoadText(R"({"traceEvents": []})");
  EXPECT_EQ(object.timeline(), nullptr);
  EXPECT_EQ(object.diag(DiagCode::kTraceUnsupported), 1u);
}

TEST(MegatronTimelineReaderTest, OtherPhasesAndMetadataAreCountedAsUnused) {
  Loaded l = LoadText(
      Array({Op("gc", 0, 4, "1", "1", 1), R"({"name":"mark","ph":"i","pid":0,"tid":4,"ts":1})",
             R"({"name":"process_labels","ph":"M","pid":0,"args":{"labels":"x"}})"}));
  ASSERT_NE(l.timeline(), nullptr);
  EXPECT_EQ(l.diag(DiagCode::kTraceEventsUnused), 2u);
  EXPECT_EQ(l.examples(DiagCode::kTraceEventsUnused).size(), 2u);
}

TEST(MegatronTimelineReaderTest, GzipAndChunkBoundariesReadAlike) {
  // Over 1 MiB, so that events cross the reader's chunk boundary.
  std::vector<std::string> events;
  for (int i = 0; i < 8000; ++i) {
    events.push_back(Op("forward-compute", i % 2, (i % 2) * 5, std::to_string(i * 10) + ".5", "3",
                        i / 2, 0, i % 4, i));
  }
  events.push_back(ThreadName(0, 0, 0, 0, "compute"));
  events.push_back(ThreadName(1, 5, 0, 0, "compute"));
  std::string text = Array(events);
  ASSERT_GT(text.size(), size_t{1} << 20);
  TempDir dir;
  Loaded plain = Load(WriteFile(dir.File("t.json"), text));
  Loaded gz = Load(WriteGzip(dir.File("t.json.gz"), text));
  ASSERT_NE(plain.timeline(), nullptr);
  ASSERT_NE(gz.timeline(), nullptr);
  EXPECT_EQ(plain.timeline()->ops.size(), 8000u);
  EXPECT_EQ(OpsByWorker(*plain.timeline()), OpsByWorker(*gz.timeline()));
  EXPECT_EQ(plain.timeline()->layout, (ParallelLayout{2, 1, 1, 1}));
  EXPECT_EQ(plain.diag(DiagCode::kTraceBadEvent), 0u);
}

}  // namespace
}  // namespace laggard
