// Tests of the reader of torch's legacy autograd-profiler trace: the real
// captures of tests/data/torch_legacy/ (facts checked with Python's json
// over the same files, see its README), sniffing against the Kineto
// reader, the exporter's unescaped names, damage, and chunk boundaries.

#include "ingest/traces/torch_legacy/torch_legacy_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ingest/common/sniff.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "ingest/traces/kineto/kineto_reader.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadGzip;
using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzip;

const std::string kData = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/torch_legacy/";
const std::string kCorpus = std::string(LAGGARD_CORPUS_DIR) + "/kineto/";

// One file through the reader alone (no sniffing), as ingest would call it.
struct Loaded {
  Run run;
  uint64_t taken = 0;
  const RankTrace* trace() const { return run.traces.empty() ? nullptr : &run.traces[0]; }
  uint64_t diag(DiagCode code) const { return run.diagnostics.count(code); }
  std::string Name(uint32_t id) const { return std::string(run.names.Get(id)); }
  std::map<std::string, int> Classes() const {
    std::map<std::string, int> m;
    for (const TraceOp& op : trace()->ops) ++m[std::string(OpClassName(op.cls))];
    return m;
  }
  std::vector<std::string> OpNames() const {
    std::vector<std::string> v;
    for (const TraceOp& op : trace()->ops) v.push_back(Name(op.name));
    return v;
  }
};

Loaded Load(const std::string& path, std::optional<int32_t> rank_from_path = 0,
            std::string_view step_marker = "") {
  auto reader = MakeTorchLegacyTraceReader();
  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = path;
  ctx.rank_from_path = rank_from_path;
  ctx.step_marker = step_marker;
  ctx.out = &builder;
  Loaded l;
  l.taken = reader->Read(path, ctx);
  l.run.files.push_back(InputFileInfo{path, "torch-legacy"});
  builder.Finalize(l.run);
  return l;
}

Loaded LoadText(const std::string& text, std::optional<int32_t> rank_from_path = 0,
                std::string_view step_marker = "") {
  TempDir dir;
  return Load(WriteFile(dir.File("trace_rank0.json"), text), rank_from_path, step_marker);
}

// One event as the exporter's template writes it.
std::string Event(const std::string& name, int64_t ts, int64_t dur, const std::string& tid = "1") {
  return "{\"name\": \"" + name + "\", \"ph\": \"X\", \"ts\": " + std::to_string(ts) +
         ", \"dur\": " + std::to_string(dur) + ", \"tid\": " + tid +
         ", \"pid\": \"CPU functions\", \"args\": {}}";
}

std::string Array(const std::vector<std::string>& events) {
  std::string s = "[";
  for (size_t i = 0; i < events.size(); ++i) s += (i ? ", " : "") + events[i];
  return s + "]";
}

// The real captures.

TEST(TorchLegacyReaderTest, ScheduledCaptureGivesStepsCpuOpsAndGlooCollectives) {
  Loaded l = Load(kData + "sched_rank1.json.gz", 1);
  const RankTrace* t = l.trace();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->producer, "torch-legacy");
  EXPECT_TRUE(t->cpu_only);
  EXPECT_EQ(t->origin, TraceOrigin::kFileStart);
  EXPECT_EQ(t->rank, 1);
  EXPECT_FALSE(t->world_size.has_value());
  EXPECT_EQ(t->events_total, 1500u);
  EXPECT_FALSE(t->truncated);
  // ProfilerStep#1..#6 (loop steps 2..7), numbered as written.
  ASSERT_EQ(t->steps.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(t->steps[i].step, static_cast<int64_t>(i + 1));
  EXPECT_EQ(t->steps[0].start_ns, 303'000);
  EXPECT_EQ(t->steps[0].end_ns, 303'000 + 2'243'570'000);
  // 1452 operators, 12 gloo:all_reduce and 12 c10d::allreduce_; 18 labels
  // (DistributedDataParallel.forward, Optimizer.*) are not ops.
  EXPECT_EQ(t->ops.size(), 1476u);
  EXPECT_EQ(l.Classes(),
            (std::map<std::string, int>{{"communication", 24}, {"other_compute", 1452}}));
  EXPECT_EQ(l.diag(DiagCode::kTraceEventsUnused), 18u);
  EXPECT_EQ(l.taken, 1476u + 6u);
  for (const TraceOp& op : t->ops) EXPECT_EQ(op.device, -1);
  // The collectives are the gloo worker threads' ranges.
  ASSERT_EQ(t->collectives.size(), 12u);
  for (const CollectiveCall& c : t->collectives) {
    EXPECT_EQ(l.Name(c.kernel), "gloo:all_reduce");
    EXPECT_EQ(l.Name(c.collective), "allreduce");
  }
  EXPECT_EQ(t->collectives[0].start_ns, 2'032'727'000);
  EXPECT_EQ(t->collectives[0].dur_ns, 25'028'000);
  EXPECT_EQ(t->collectives.back().start_ns, 20'431'770'000);
  std::map<int32_t, int> threads;
  for (const TraceOp& op : t->ops) {
    if (l.Name(op.name) == "gloo:all_reduce") ++threads[op.stream];
  }
  EXPECT_EQ(threads, (std::map<int32_t, int>{{2, 6}, {3, 6}}));
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
  EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), 0u);
}

TEST(TorchLegacyReaderTest, AutogradProfilerCaptureHasNoStepsAndItsBroadcasts) {
  Loaded l = Load(kData + "autograd_rank0.json.gz", 0);
  const RankTrace* t = l.trace();
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->steps.empty());
  EXPECT_EQ(t->events_total, 996u);
  EXPECT_EQ(t->ops.size(), 978u);
  std::vector<std::string> kinds;
  for (const CollectiveCall& c : t->collectives) kinds.push_back(l.Name(c.collective));
  EXPECT_EQ(kinds, (std::vector<std::string>{"allreduce", "broadcast", "broadcast", "allreduce",
                                             "allreduce", "allreduce", "allreduce", "allreduce",
                                             "allreduce"}));
  EXPECT_EQ(t->collectives[0].start_ns, 2'397'730'000);
}

TEST(TorchLegacyReaderTest, PlainAndGzippedFilesGiveTheSameTrace) {
  TempDir dir;
  Loaded gz = Load(kData + "sched_rank0.json.gz");
  Loaded plain =
      Load(WriteFile(dir.File("sched_rank0.json"), ReadGzip(kData + "sched_rank0.json.gz")));
  ASSERT_NE(plain.trace(), nullptr);
  EXPECT_EQ(plain.trace()->ops.size(), gz.trace()->ops.size());
  EXPECT_EQ(plain.OpNames(), gz.OpNames());
  EXPECT_EQ(plain.trace()->steps.size(), gz.trace()->steps.size());
  EXPECT_EQ(plain.trace()->collectives.size(), gz.trace()->collectives.size());
}

TEST(TorchLegacyReaderTest, IngestPicksThisReaderAndTheRankFromTheFileName) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(readers.ok());
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 1;
  auto run = Ingest({kData + "sched_rank0.json.gz", kData + "sched_rank1.json.gz"},
                    readers->readers, options, traces.readers);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->traces.size(), 2u);
  EXPECT_EQ(run->files[0].format, "torch-legacy");
  EXPECT_EQ(run->traces[0].rank, 0);
  EXPECT_EQ(run->traces[1].rank, 1);
}

// Sniffing.

TEST(TorchLegacyReaderTest, SniffBeatsTheKinetoArrayLevelAndYieldsToKinetoObjects) {
  auto legacy = MakeTorchLegacyTraceReader();
  auto kineto = MakeKinetoTraceReader();
  std::string head = ReadGzip(kData + "sched_rank0.json.gz").substr(0, kSniffBytes);
  EXPECT_EQ(legacy->Sniff(head), kSniffCertain - 1);
  EXPECT_LT(kineto->Sniff(head), legacy->Sniff(head));
  // Kineto's own layouts are not this format.
  EXPECT_EQ(legacy->Sniff(R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op",)"
                          R"( "name": "aten::mm", "pid": 9, "tid": 9, "ts": 1, "dur": 2}]})"),
            kSniffNo);
  EXPECT_EQ(legacy->Sniff(R"([{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9,)"
                          R"( "tid": 9, "ts": 1, "dur": 2}])"),
            kSniffNo);
  // Blanks, a BOM and json.dump(indent=1) of the same events still are.
  EXPECT_EQ(legacy->Sniff("\xEF\xBB\xBF [\n {\n  \"name\": \"aten::mm\",\n  \"ph\": \"X\",\n  "
                          "\"ts\": 1,\n  \"dur\": 2,\n  \"tid\": 1,\n  \"pid\": \"CPU functions\","
                          "\n  \"args\": {}\n }\n]"),
            kSniffCertain - 1);
  EXPECT_EQ(legacy->Sniff("[]"), kSniffNo);
  EXPECT_EQ(legacy->Sniff("rank 0, step 1, time 1s"), kSniffNo);
}

TEST(TorchLegacyReaderTest, CorpusKinetoTracesStayWithTheKinetoReader) {
  if (!std::filesystem::exists(kCorpus)) GTEST_SKIP() << "shared corpus not found at " << kCorpus;
  auto legacy = MakeTorchLegacyTraceReader();
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(kCorpus)) {
    std::string head = ReadGzip(e.path().string()).substr(0, kSniffBytes);
    EXPECT_EQ(legacy->Sniff(head), kSniffNo) << e.path();
    ++files;
  }
  EXPECT_GT(files, 0);
}

// What each event becomes.

TEST(TorchLegacyReaderTest, OperatorsLabelsStepsAndCollectivesByName) {
  const std::string label = Event("DistributedDataParallel.forward", 5, 400);
  const std::string text = Array({
      Event("ProfilerStep#4", 0, 1000),
      Event("aten::mm", 10, 100),
      Event("AddmmBackward0", 120, 50),
      label,
      Event("c10d::allreduce_", 200, 5),
      Event("gloo:all_reduce", 210, 300, "2"),
      Event("nccl:broadcast", 600, 30, "3"),
  });
  Loaded l = LoadText(text);
  const RankTrace* t = l.trace();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(l.OpNames(), (std::vector<std::string>{"aten::mm", "AddmmBackward0", "c10d::allreduce_",
                                                   "gloo:all_reduce", "nccl:broadcast"}));
  ASSERT_EQ(t->steps.size(), 1u);
  EXPECT_EQ(t->steps[0].step, 4);
  EXPECT_EQ(t->steps[0].end_ns, 1'000'000);
  // Backend ranges are the collectives; c10d:: only when there are none.
  ASSERT_EQ(t->collectives.size(), 2u);
  EXPECT_EQ(l.Name(t->collectives[0].collective), "allreduce");
  EXPECT_EQ(l.Name(t->collectives[1].collective), "broadcast");
  EXPECT_EQ(t->ops[3].stream, 2);
  EXPECT_EQ(l.diag(DiagCode::kTraceEventsUnused), 1u);
  ASSERT_EQ(l.run.diagnostics.examples(DiagCode::kTraceEventsUnused).size(), 1u);
  const DiagExample& e = l.run.diagnostics.examples(DiagCode::kTraceEventsUnused)[0];
  EXPECT_NE(e.message.find("DistributedDataParallel.forward"), std::string::npos) << e.message;
  EXPECT_EQ(e.offset, text.find(label));
}

TEST(TorchLegacyReaderTest, C10dOpsAreTheCollectivesWithoutBackendRanges) {
  Loaded l = LoadText(Array({Event("c10d::allreduce_", 10, 5), Event("c10d::broadcast_", 30, 5)}));
  ASSERT_NE(l.trace(), nullptr);
  ASSERT_EQ(l.trace()->collectives.size(), 2u);
  EXPECT_EQ(l.Name(l.trace()->collectives[1].collective), "broadcast");
}

TEST(TorchLegacyReaderTest, UnescapedNamesAreReadAsTheExporterWroteThem) {
  // The template writes names raw: '"' and '\' are not escaped.
  Loaded l = LoadText(Array({
      Event(R"(my::say "hi", there)", 10, 5),
      Event(R"(my::C:\data\x::op)", 20, 5),
      Event(R"(my::tab\tescaped)", 30, 5),
  }));
  ASSERT_NE(l.trace(), nullptr);
  // A '\' that starts no JSON escape is kept; one that does is decoded.
  EXPECT_EQ(l.OpNames(), (std::vector<std::string>{R"(my::say "hi", there)", R"(my::C:\data\x::op)",
                                                   "my::tab\tescaped"}));
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
}

TEST(TorchLegacyReaderTest, FractionalMicrosecondsAreKeptToTheNanosecond) {
  Loaded l = LoadText(R"([{"name": "aten::mm", "ph": "X", "ts": 1.2345, "dur": 2.5, "tid": 1,)"
                      R"( "pid": "CPU functions", "args": {}}])");
  ASSERT_NE(l.trace(), nullptr);
  ASSERT_EQ(l.trace()->ops.size(), 1u);
  EXPECT_EQ(l.trace()->ops[0].start_ns, 1235);
  EXPECT_EQ(l.trace()->ops[0].dur_ns, 2500);
}

TEST(TorchLegacyReaderTest, RemoteEventsAndCudaArrowsAreCountedNotTaken) {
  Loaded l = LoadText(
      "[" + Event("aten::mm", 10, 5) + ", " +
      Event("aten::add", 20, 5, "\" node_id:1, thread_id:7 \"") +
      R"(, {"name": "aten::mm", "ph": "s", "ts": 10, "tid": 1, "pid": "CPU functions", "id": 0,)"
      R"( "cat": "cpu_to_cuda", "args": {}}, {"name": "x", "ph": "i", "ts": 1}])");
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_EQ(l.trace()->ops.size(), 1u);
  EXPECT_EQ(l.diag(DiagCode::kTraceEventsUnused), 3u);
  std::string all;
  for (const DiagExample& e : l.run.diagnostics.examples(DiagCode::kTraceEventsUnused)) {
    all += e.message + "\n";
  }
  EXPECT_NE(all.find("1 event of remote RPC workers"), std::string::npos) << all;
  EXPECT_NE(all.find("1 CUDA launch arrow ("), std::string::npos) << all;
  EXPECT_NE(all.find("phase other than"), std::string::npos) << all;
}

TEST(TorchLegacyReaderTest, StepMarkerRangesReplaceProfilerSteps) {
  Loaded l = LoadText(Array({Event("ProfilerStep#0", 0, 100), Event("train_step 7", 0, 90),
                             Event("aten::mm", 10, 5)}),
                      0, "train_step");
  ASSERT_NE(l.trace(), nullptr);
  ASSERT_EQ(l.trace()->steps.size(), 1u);
  EXPECT_EQ(l.trace()->steps[0].step, 7);
  EXPECT_EQ(l.diag(DiagCode::kTraceNoStepMarker), 0u);
}

TEST(TorchLegacyReaderTest, NoRankInThePathIsANoteThatSaysHowToName) {
  Loaded l = LoadText(Array({Event("aten::mm", 10, 5)}), std::nullopt);
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_FALSE(l.trace()->rank.has_value());
  ASSERT_EQ(l.diag(DiagCode::kTraceNoRank), 1u);
  EXPECT_NE(l.run.diagnostics.examples(DiagCode::kTraceNoRank)[0].message.find("worker_name"),
            std::string::npos);
}

TEST(TorchLegacyReaderTest, EmptyArrayIsATraceWithoutEvents) {
  Loaded l = LoadText("[]");
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_EQ(l.diag(DiagCode::kTraceNoEvents), 1u);
  EXPECT_EQ(l.taken, 0u);
}

TEST(TorchLegacyReaderTest, NotAnArrayIsUnsupported) {
  Loaded l = LoadText(R"({"name": "aten::mm"})");
  EXPECT_EQ(l.trace(), nullptr);
  EXPECT_EQ(l.diag(DiagCode::kTraceUnsupported), 1u);
}

// Damage.

TEST(TorchLegacyReaderTest, BadEventsAreCountedAtTheirOffsetAndTheRestRead) {
  std::vector<std::string> events = {
      Event("aten::a", 10, 5),
      R"({"name": "aten::b", "ph": "X", "ts": "abc", "dur": 1, "tid": 1, "pid": "CPU functions",)"
      R"( "args": {}})",
      Event("aten::c", 30, -2),
      R"({"name": "aten::d" "ph": "X", "ts": 1, "dur": 1, "tid": 1, "pid": "CPU functions",)"
      R"( "args": {}})",
      R"({"ph": "X", "ts": 1, "dur": 1, "tid": 1, "pid": "CPU functions", "args": {}})",
      R"({"name": "aten::e", "ph": "X", "ts": 1, "tid": 1, "pid": "CPU functions", "args": {}})",
      Event("aten::f", 60, 5),
  };
  std::string text = Array(events);
  Loaded l = LoadText(text);
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_EQ(l.OpNames(), (std::vector<std::string>{"aten::a", "aten::f"}));
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 5u);
  EXPECT_EQ(l.trace()->events_total, 7u);
  std::vector<uint64_t> offsets;
  for (const DiagExample& e : l.run.diagnostics.examples(DiagCode::kTraceBadEvent)) {
    offsets.push_back(e.offset);
  }
  ASSERT_EQ(offsets.size(), 5u);
  EXPECT_EQ(offsets[0], text.find(events[1]));
  EXPECT_EQ(offsets[2], text.find(events[3]));
  EXPECT_EQ(offsets[4], text.find(events[5]));
}

TEST(TorchLegacyReaderTest, DataAfterTheClosingBracketIsCounted) {
  Loaded l = LoadText(Array({Event("aten::a", 10, 5)}) + " trailing");
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_EQ(l.trace()->ops.size(), 1u);
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 1u);
  EXPECT_FALSE(l.trace()->truncated);
}

// A cut at every offset of a small real prefix, and at a spread of offsets
// of a whole real file: every event whose closing "}}" (args {} and the
// event) lies before the cut is kept, the cut is counted where it is.
TEST(TorchLegacyReaderTest, TruncatedFileKeepsEveryCompleteEventAndSaysWhereItStopped) {
  const std::string whole = ReadGzip(kData + "sched_rank0.json.gz");
  Loaded full = LoadText(whole);
  ASSERT_NE(full.trace(), nullptr);
  std::vector<size_t> cuts;
  for (size_t at = 1; at < 1200; ++at) cuts.push_back(at);
  for (size_t at = 1200; at < whole.size() - 1; at += 997) cuts.push_back(at);
  for (size_t at : cuts) {
    std::string prefix = whole.substr(0, at);
    uint64_t complete = 0;
    for (size_t p = prefix.find("}}"); p != std::string::npos; p = prefix.find("}}", p + 2)) {
      ++complete;
    }
    Loaded cut = LoadText(prefix);
    ASSERT_NE(cut.trace(), nullptr) << at;
    const RankTrace& t = *cut.trace();
    EXPECT_TRUE(t.truncated) << at;
    EXPECT_EQ(t.events_total, complete) << at;
    // Inside an event unless the cut follows one's "}}" (and blanks or a
    // comma) or the '['.
    std::string_view kept = prefix;
    while (kept.back() == ' ' || kept.back() == ',') kept.remove_suffix(1);
    bool inside = kept != "[" && !EndsWith(kept, "}}");
    EXPECT_EQ(t.events_lost, inside ? 1u : 0u) << at;
    ASSERT_EQ(cut.diag(DiagCode::kTraceTruncated), 1u) << at;
    EXPECT_EQ(cut.run.diagnostics.examples(DiagCode::kTraceTruncated)[0].offset, at) << at;
    EXPECT_EQ(cut.diag(DiagCode::kTraceBadEvent), 0u) << at;
    EXPECT_LE(t.ops.size(), full.trace()->ops.size()) << at;
    EXPECT_LE(t.steps.size(), full.trace()->steps.size()) << at;
  }
}

TEST(TorchLegacyReaderTest, GzipCutInsideTheDataIsCountedBesideTheTruncation) {
  TempDir dir;
  std::string gz;
  {
    std::string path =
        WriteGzip(dir.File("whole.json.gz"), ReadGzip(kData + "sched_rank0.json.gz"));
    gz = testing_util::ReadFile(path);
  }
  Loaded l = Load(WriteFile(dir.File("cut_rank0.json.gz"), gz.substr(0, gz.size() / 2)));
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_TRUE(l.trace()->truncated);
  EXPECT_GT(l.trace()->ops.size(), 0u);
  EXPECT_EQ(l.diag(DiagCode::kGzipTruncated), 1u);
  EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), 1u);
}

// Events that straddle the reader's 1 MiB chunks are read whole.
TEST(TorchLegacyReaderTest, EventsAcrossChunkBoundariesAreReadWhole) {
  std::vector<std::string> events;
  for (int i = 0; i < 30000; ++i) {
    events.push_back(Event("aten::op" + std::to_string(i % 7), i * 10, 5));
  }
  Loaded l = LoadText(Array(events));
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_EQ(l.trace()->ops.size(), 30000u);
  EXPECT_EQ(l.trace()->ops.back().start_ns, 299'990'000);
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
  EXPECT_FALSE(l.trace()->truncated);
}

}  // namespace
}  // namespace laggard
