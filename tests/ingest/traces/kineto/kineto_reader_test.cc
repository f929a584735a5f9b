// Tests of the Kineto / Chrome-trace reader: every real trace of the shared
// corpus (facts checked independently with Python over the same files),
// truncation at many offsets against a reference scan, damage, formats and
// sniffing.

#include "ingest/traces/kineto/kineto_reader.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ingest/common/sniff.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadGzip;
using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzip;

const std::string kCorpus = std::string(LAGGARD_CORPUS_DIR) + "/kineto/";

bool HaveCorpus() { return std::filesystem::exists(kCorpus); }

#define REQUIRE_CORPUS() \
  if (!HaveCorpus()) GTEST_SKIP() << "shared corpus not found at " << kCorpus

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
  std::map<std::string, int> Collectives() const {
    std::map<std::string, int> m;
    for (const CollectiveCall& c : trace()->collectives) ++m[Name(c.collective)];
    return m;
  }
};

Loaded Load(const std::string& path, std::optional<int32_t> rank_from_path = std::nullopt,
            std::string_view step_marker = "") {
  auto reader = MakeKinetoTraceReader();
  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = path;
  ctx.rank_from_path = rank_from_path;
  ctx.step_marker = step_marker;
  ctx.out = &builder;
  Loaded l;
  l.taken = reader->Read(path, ctx);
  l.run.files.push_back(InputFileInfo{path, "kineto"});
  builder.Finalize(l.run);
  return l;
}

Loaded LoadText(const std::string& json, const std::string& name = "trace.json") {
  TempDir dir;
  return Load(WriteFile(dir.File(name), json));
}

// A kernel event in Kineto's layout.
std::string Kernel(const std::string& name, const std::string& ts, const std::string& dur,
                   const std::string& extra_args = "") {
  return R"J({"ph": "X", "cat": "kernel", "name": ")J" + name +
         R"J(", "pid": 0, "tid": 7, "ts": )J" + ts + R"J(, "dur": )J" + dur +
         R"J(, "args": {"External id": 1, "device": 0, "stream": 7)J" + extra_args + "}}";
}

std::string Wrap(const std::vector<std::string>& events, const std::string& tail = "") {
  std::string s = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i) s += (i ? ",\n" : "") + events[i];
  return s + "\n]" + tail + "}";
}

// ---------------------------------------------------------------------------
// The corpus. Expected facts come from python3 over the same files, e.g.
//   python3 -c "import gzip,json; d=json.load(gzip.open(F));
//     print(sum(e.get('cat') in ('kernel','Kernel') for e in d['traceEvents']))"
// and the classification rules of the reader's header applied in Python.

struct CorpusCase {
  std::string file;
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
  bool cpu_only;
  std::map<std::string, int> classes;
  std::vector<int64_t> steps;
  std::map<std::string, int> collectives;
  std::optional<int32_t> device;
  std::optional<std::string> host;
};

const std::vector<CorpusCase>& CorpusCases() {
  static const std::vector<CorpusCase> cases = {
      // ROCm 6.2, MI250: Tensile GEMMs (Cijk_...), device id 2, no distributedInfo.
      {"hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
       std::nullopt,
       std::nullopt,
       false,
       {{"gemm", 2}, {"memcpy", 2}, {"other_compute", 12}},
       {1, 2},
       {},
       2,
       std::nullopt},
      // gloo, CPU only: 4 aten ops + 10 gloo:all_reduce ranges (the collectives).
      {"hta__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
       34,
       300,
       true,
       {{"communication", 10}, {"other_compute", 4}},
       {551},
       {{"allreduce", 10}},
       std::nullopt,
       std::nullopt},
      // CPU ops only (GPU tracing off): 2424 cpu_op (12 record_param_comms) + 6 nccl:all_to_all.
      {"hta__distributed_info_unavailable__distributed_info_not_found.json.gz",
       std::nullopt,
       std::nullopt,
       true,
       {{"communication", 18}, {"other_compute", 2412}},
       {1009},
       {{"alltoall", 6}},
       std::nullopt,
       std::nullopt},
      // NCCL 2.17, kernels carry the collective args.
      {"hta__nccl_parser_config__nccl_data.json.gz",
       0,
       2,
       false,
       {{"communication", 21},
        {"gemm", 543},
        {"memcpy", 960},
        {"memset", 114},
        {"other_compute", 2136}},
       {4, 5, 6},
       {{"allreduce", 15}, {"broadcast", 6}},
       0,
       std::nullopt},
      // displayTimeUnit "ns", fractional us, host_name at the top level, no NCCL kernel.
      {"hta__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
       0,
       1,
       false,
       {{"gemm", 430}, {"memcpy", 1600}, {"memset", 145}, {"other_compute", 3920}},
       {101, 102, 103, 104, 105},
       {},
       0,
       std::string("twshared39868.02.pnb3.facebook.com")},
      // distributedInfo without a rank.
      {"hta__rank_unavailable__rank_not_found.json.gz",
       std::nullopt,
       std::nullopt,
       true,
       {{"communication", 18}, {"other_compute", 2412}},
       {1009},
       {{"alltoall", 6}},
       std::nullopt,
       std::nullopt},
      // Legacy categories "Kernel" / "Runtime", distributedInfo after traceEvents.
      {"hta__trace_file_list__inference_rank_1.json.gz",
       1,
       std::nullopt,
       false,
       {{"gemm", 2}, {"other_compute", 2}},
       {},
       {},
       0,
       std::nullopt},
      // 128-rank job, integer ts, SendRecv kernels without collective args.
      {"hta__trace_filter__sampled_rank-0.json.gz",
       0,
       128,
       false,
       {{"communication", 10},
        {"gemm", 432},
        {"memcpy", 40},
        {"memset", 10},
        {"other_compute", 712}},
       {551, 552},
       {{"sendrecv", 10}},
       0,
       std::nullopt},
      {"hta__trace_filter__sampled_rank-1.json.gz",
       1,
       128,
       false,
       {{"communication", 10},
        {"gemm", 422},
        {"memcpy", 40},
        {"memset", 10},
        {"other_compute", 672}},
       {551, 552},
       {{"sendrecv", 10}},
       1,
       std::nullopt},
      // One Triton kernel.
      {"hta__triton_example__triton_example.json.gz",
       std::nullopt,
       std::nullopt,
       false,
       {{"other_compute", 1}},
       {1},
       {},
       0,
       std::nullopt},
  };
  return cases;
}

TEST(KinetoReaderTest, EveryCorpusTraceLoadsWithItsFacts) {
  REQUIRE_CORPUS();
  for (const CorpusCase& c : CorpusCases()) {
    SCOPED_TRACE(c.file);
    Loaded l = Load(kCorpus + c.file);
    ASSERT_NE(l.trace(), nullptr);
    const RankTrace& t = *l.trace();
    EXPECT_EQ(t.producer, "kineto");
    EXPECT_EQ(t.rank, c.rank);
    EXPECT_EQ(t.world_size, c.world_size);
    EXPECT_EQ(t.cpu_only, c.cpu_only);
    EXPECT_EQ(l.Classes(), c.classes);
    std::vector<int64_t> steps;
    for (const TraceStep& s : t.steps) steps.push_back(s.step);
    EXPECT_EQ(steps, c.steps);
    EXPECT_EQ(l.Collectives(), c.collectives);
    EXPECT_EQ(t.device, c.device);
    EXPECT_EQ(t.host, c.host);
    EXPECT_FALSE(t.truncated);
    EXPECT_EQ(t.events_lost, 0u);
    EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
    EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), 0u);
    EXPECT_EQ(l.diag(DiagCode::kTraceNoRank), c.rank ? 0u : 1u);
    EXPECT_EQ(l.taken, t.ops.size() + t.steps.size());
    EXPECT_TRUE(std::is_sorted(t.ops.begin(), t.ops.end(), [](const TraceOp& a, const TraceOp& b) {
      return a.start_ns < b.start_ns;
    }));
    for (const TraceStep& s : t.steps) EXPECT_LT(s.start_ns, s.end_ns);
  }
}

TEST(KinetoReaderTest, EventCountsMatchTheFile) {
  REQUIRE_CORPUS();
  // len(d['traceEvents']) in Python.
  EXPECT_EQ(Load(kCorpus + "hta__nccl_parser_config__nccl_data.json.gz").trace()->events_total,
            40573u);
  EXPECT_EQ(Load(kCorpus + "hta__trace_file_list__inference_rank_1.json.gz").trace()->events_total,
            54u);
}

TEST(KinetoReaderTest, NcclKernelsCarryTheirCollectiveArgs) {
  REQUIRE_CORPUS();
  Loaded l = Load(kCorpus + "hta__nccl_parser_config__nccl_data.json.gz");
  const RankTrace& t = *l.trace();
  ASSERT_EQ(t.collectives.size(), 21u);
  // The first in time: ncclKernel_Broadcast_RING_LL_Sum_int8_t, "In msg nelems": 53120.
  const CollectiveCall& c = t.collectives[0];
  EXPECT_EQ(l.Name(c.collective), "broadcast");
  EXPECT_EQ(l.Name(c.kernel).rfind("ncclKernel_Broadcast_RING_LL_Sum_int8_t(", 0), 0u);
  ASSERT_TRUE(c.group.has_value());
  EXPECT_EQ(l.Name(*c.group), "0");
  EXPECT_EQ(c.nelems, 53120);
  EXPECT_EQ(c.group_size, 2);
  EXPECT_FALSE(c.seq.has_value());  // neither the kernel nor record_param_comms has "Seq"
  EXPECT_GT(c.offset, 0u);
  // The event really starts at that offset of the decompressed file.
  std::string text = ReadGzip(kCorpus + "hta__nccl_parser_config__nccl_data.json.gz");
  EXPECT_EQ(text[c.offset], '{');
  EXPECT_NE(text.substr(c.offset, 200).find("ncclKernel_Broadcast"), std::string::npos);
}

TEST(KinetoReaderTest, FractionalMicrosecondsAreKeptToTheNanosecond) {
  REQUIRE_CORPUS();
  // The earliest device op of the file is a kernel at "ts": 1712195495505582.988,
  // "dur": 4.928 (no baseTimeNanoseconds): a double would give ...583.0.
  Loaded l =
      Load(kCorpus + "hta__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
  ASSERT_FALSE(l.trace()->ops.empty());
  EXPECT_EQ(l.trace()->ops[0].start_ns, 1712195495505582988);
  EXPECT_EQ(l.trace()->ops[0].dur_ns, 4928);

  Loaded s =
      LoadText(Wrap({Kernel("k", "1712195495505583.1235", "0.0004"), Kernel("k", "1.5e3", "2")}));
  ASSERT_EQ(s.trace()->ops.size(), 2u);
  EXPECT_EQ(s.trace()->ops[0].start_ns, 1500000);              // exponent form
  EXPECT_EQ(s.trace()->ops[1].start_ns, 1712195495505583124);  // rounded half up
  EXPECT_EQ(s.trace()->ops[1].dur_ns, 0);
}

TEST(KinetoReaderTest, DisplayTimeUnitNsDoesNotChangeTheUnitOfTs) {
  Loaded l = LoadText(Wrap({Kernel("k", "10.5", "2")}, ", \"displayTimeUnit\": \"ns\""));
  ASSERT_EQ(l.trace()->ops.size(), 1u);
  EXPECT_EQ(l.trace()->ops[0].start_ns, 10500);
  EXPECT_EQ(l.trace()->ops[0].dur_ns, 2000);
}

TEST(KinetoReaderTest, BaseTimeAfterTraceEventsIsAddedToEveryTime) {
  std::string step =
      R"J({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 1, "dur": 100})J";
  Loaded l = LoadText(
      Wrap({Kernel("k", "2.25", "1"), step}, ", \"baseTimeNanoseconds\": 1700000000000000000"));
  ASSERT_EQ(l.trace()->ops.size(), 1u);
  EXPECT_EQ(l.trace()->ops[0].start_ns, 1700000000000002250);
  ASSERT_EQ(l.trace()->steps.size(), 1u);
  EXPECT_EQ(l.trace()->steps[0].step, 7);
  EXPECT_EQ(l.trace()->steps[0].start_ns, 1700000000000001000);
  EXPECT_EQ(l.trace()->steps[0].end_ns, 1700000000000101000);
}

// A range the training loop names itself (record_function), in Kineto's
// layout or with its members in another order.
std::string Range(const std::string& name, const std::string& ts, const std::string& dur,
                  const std::string& cat = "user_annotation", bool kineto_layout = true) {
  if (!kineto_layout) {
    return R"J({"name": ")J" + name + R"J(", "ts": )J" + ts + R"J(, "ph": "X", "cat": ")J" + cat +
           R"J(", "dur": )J" + dur + R"J(, "pid": 1, "tid": 1})J";
  }
  return R"J({"ph": "X", "cat": ")J" + cat + R"J(", "name": ")J" + name +
         R"J(", "pid": 1, "tid": 1, "ts": )J" + ts + R"J(, "dur": )J" + dur + "}";
}

std::vector<int64_t> StepNumbers(const Loaded& l) {
  std::vector<int64_t> v;
  for (const TraceStep& s : l.trace()->steps) v.push_back(s.step);
  return v;
}

TEST(KinetoReaderTest, UserNamedStepMarkersReplaceProfilerSteps) {
  TempDir dir;
  std::string path = WriteFile(
      dir.File("trace.json"),
      Wrap({
          Kernel("ampere_sgemm_128x64_tn", "15", "2"), Range("ProfilerStep#40", "0", "90"),
          Range("train_step", "50", "40"),                   // Kineto's layout
          Range("train_step", "10", "30", "cpu_op", false),  // members in another order
          Range("train_step_fwd", "12", "5"),                // nested: not a step
          Range(R"(train\u005fstep)", "95", "5"),            // escaped "_": still the marker
          Range("train_stepper", "99", "1"),
          Range("train_step", "60", "2", "gpu_user_annotation"),  // the GPU-side copy
      }));
  Loaded plain = Load(path);
  EXPECT_EQ(StepNumbers(plain), (std::vector<int64_t>{40}));

  Loaded marked = Load(path, std::nullopt, "train_step");
  ASSERT_NE(marked.trace(), nullptr);
  // Numbered by start: 10, 50, 95 us.
  EXPECT_EQ(StepNumbers(marked), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(marked.trace()->steps[0].start_ns, 10'000);
  EXPECT_EQ(marked.trace()->steps[0].end_ns, 40'000);
  EXPECT_EQ(marked.trace()->steps[2].start_ns, 95'000);
  EXPECT_EQ(marked.trace()->ops.size(), 1u);  // the markers are not ops
  EXPECT_EQ(marked.diag(DiagCode::kTraceNoStepMarker), 0u);
}

TEST(KinetoReaderTest, StepMarkersCarryTheirNumbersOnEveryThread) {
  TempDir dir;
  std::string path = WriteFile(dir.File("t.json"),
                               Wrap({
                                   Range("iter#7", "100", "50"), Range("iter#6", "0", "90"),
                                   Range("iter#7", "95", "60"),  // the same step on a second thread
                               }));
  EXPECT_TRUE(Load(path).trace()->steps.empty());  // not ProfilerStep#N
  Loaded m = Load(path, std::nullopt, "iter");
  ASSERT_EQ(m.trace()->steps.size(), 2u);
  std::map<int64_t, std::pair<TimeNs, TimeNs>> by_step;
  for (const TraceStep& s : m.trace()->steps) by_step[s.step] = {s.start_ns, s.end_ns};
  EXPECT_EQ(by_step[6], std::make_pair(TimeNs{0}, TimeNs{90'000}));
  EXPECT_EQ(by_step[7], std::make_pair(TimeNs{95'000}, TimeNs{155'000}));
}

// Real traces: "ProfilerStep" as the marker reads their ProfilerStep#N ranges
// as marker ranges, so the steps must come out the same as without it;
// a loop's own name that none of them has leaves each with its steps and a note.
TEST(KinetoReaderTest, StepMarkersOnTheCorpusTraces) {
  REQUIRE_CORPUS();
  for (const CorpusCase& c : CorpusCases()) {
    SCOPED_TRACE(c.file);
    Loaded marked = Load(kCorpus + c.file, std::nullopt, "ProfilerStep");
    ASSERT_NE(marked.trace(), nullptr);
    EXPECT_EQ(StepNumbers(marked), c.steps);
    EXPECT_EQ(marked.diag(DiagCode::kTraceNoStepMarker), c.steps.empty() ? 1u : 0u);
    EXPECT_EQ(marked.Classes(), c.classes);
    Loaded absent = Load(kCorpus + c.file, std::nullopt, "train_step");
    EXPECT_EQ(StepNumbers(absent), c.steps);
    EXPECT_EQ(absent.diag(DiagCode::kTraceNoStepMarker), 1u);
  }
}

// A rank list for the corpus traces that carry no rank: through Ingest, as
// the CLI reads them.
TEST(KinetoReaderTest, FileRanksNameTheCorpusTracesWithoutARank) {
  REQUIRE_CORPUS();
  TempDir dir;
  std::string list = WriteFile(dir.File("ranks.txt"),
                               "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz 4\n"
                               "kineto/hta__rank_unavailable__rank_not_found.json.gz,5\n"
                               "hta__trace_filter__sampled_rank-0.json.gz 9\n");  // has its own
  auto reader = MakeKinetoTraceReader();
  IngestOptions options;
  options.file_ranks = list;
  options.threads = 1;
  auto run = Ingest({kCorpus}, {}, options, {reader.get()});
  ASSERT_TRUE(run.ok()) << run.status().message();
  std::map<std::string, std::optional<int32_t>> rank_of;
  for (const RankTrace& t : run->traces) {
    rank_of[std::filesystem::path(run->files[t.file].path).filename().string()] = t.rank;
  }
  EXPECT_EQ(rank_of["hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"], 4);
  EXPECT_EQ(rank_of["hta__rank_unavailable__rank_not_found.json.gz"], 5);
  EXPECT_EQ(rank_of["hta__trace_filter__sampled_rank-0.json.gz"], 0);  // distributedInfo wins
  EXPECT_EQ(rank_of["hta__triton_example__triton_example.json.gz"], std::nullopt);
  EXPECT_EQ(run->diagnostics.count(DiagCode::kTraceNoRank), 2u);
  EXPECT_EQ(run->diagnostics.count(DiagCode::kFileRanksUnmatched), 0u);
}

TEST(KinetoReaderTest, AStepMarkerTheTraceLacksFallsBackToProfilerStepsAndSaysSo) {
  TempDir dir;
  std::string path = WriteFile(dir.File("t.json"), Wrap({Range("ProfilerStep#3", "0", "90")}));
  Loaded l = Load(path, std::nullopt, "train_step");
  EXPECT_EQ(StepNumbers(l), (std::vector<int64_t>{3}));
  EXPECT_EQ(l.diag(DiagCode::kTraceNoStepMarker), 1u);
}

TEST(KinetoReaderTest, ArrayFormatLoadsWithOrWithoutItsClosingBracket) {
  std::string events = "[" + Kernel("ampere_sgemm_128x64_tn", "1", "2") + ",\n" +
                       Kernel("flash_fwd_kernel", "5", "2") + ",\n";
  Loaded open = LoadText(events);  // the Array Format allows a missing ']'
  ASSERT_NE(open.trace(), nullptr);
  EXPECT_EQ(open.Classes(), (std::map<std::string, int>{{"attention", 1}, {"gemm", 1}}));
  EXPECT_FALSE(open.trace()->truncated);
  EXPECT_EQ(open.diag(DiagCode::kTraceTruncated), 0u);

  Loaded closed = LoadText(events.substr(0, events.size() - 2) + "]");
  EXPECT_EQ(closed.trace()->ops.size(), 2u);

  Loaded cut = LoadText(events + Kernel("k", "9", "1").substr(0, 30));
  EXPECT_EQ(cut.trace()->ops.size(), 2u);
  EXPECT_TRUE(cut.trace()->truncated);
  EXPECT_EQ(cut.trace()->events_lost, 1u);
  EXPECT_EQ(cut.diag(DiagCode::kTraceTruncated), 1u);
}

TEST(KinetoReaderTest, BadEventsAreCountedAndSkipped) {
  Loaded l = LoadText(Wrap({
      Kernel("good", "1", "1"),
      Kernel("ts_text", "\"abc\"", "1"),
      R"J({"ph": "X", "cat": "kernel", "name": "no_dur", "ts": 3, "args": {"device": 0}})J",
      R"J({"ph": "X", "cat": "kernel", "name": "no_ts", "dur": 3})J",
      Kernel("negative", "4", "-2"),
      R"J({"ph": "X", "cat": "kernel", "name": 12, "ts": 3, "dur": 1})J",
      R"J({"ph": "X", "cat": "kernel" "name": "missing colon", "ts": 3, "dur": 1})J",
      "[1, 2]",
      Kernel("good too", "\"7\"", "1"),  // a numeric string is a number
      R"J({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": "abc"})J",
  }));
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_EQ(l.trace()->ops.size(), 2u);
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 7u);  // the runtime event is not ours to judge
  EXPECT_EQ(l.trace()->events_total, 10u);
  const auto& examples = l.run.diagnostics.examples(DiagCode::kTraceBadEvent);
  ASSERT_FALSE(examples.empty());
  EXPECT_GT(examples[0].offset, 0u);
  EXPECT_NE(examples[0].message.find("abc"), std::string::npos);
}

TEST(KinetoReaderTest, KernelTakesSeqAndGroupFromItsRecordParamComms) {
  // The CPU op comes after the kernel in the file: linking is order-free.
  std::string rpc =
      R"J({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1, "dur": 5, "args": {"External id": 77, "Seq": 42, "Collective name": "_allgather_base", "Process Group Name": "3", "Group size": 8, "In msg nelems": 1024}})J";
  std::string kernel =
      R"J({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20, "ts": 2, "dur": 9, "args": {"External id": 77, "device": 3, "stream": 20}})J";
  Loaded l = LoadText(Wrap({kernel, rpc}));
  ASSERT_EQ(l.trace()->collectives.size(), 1u);
  const CollectiveCall& c = l.trace()->collectives[0];
  EXPECT_EQ(c.seq, 42);
  EXPECT_EQ(l.Name(c.collective), "allgather");
  ASSERT_TRUE(c.group.has_value());
  EXPECT_EQ(l.Name(*c.group), "3");
  EXPECT_EQ(c.group_size, 8);
  EXPECT_EQ(c.nelems, 1024);
  EXPECT_EQ(l.trace()->ops[0].cls, OpClass::kCommunication);
  EXPECT_EQ(l.trace()->device, 3);
  EXPECT_FALSE(l.trace()->cpu_only);
}

TEST(KinetoReaderTest, CollectiveNamesComeFromKernelNamesWhenArgsAreSilent) {
  const std::vector<std::pair<std::string, std::string>> kernels = {
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "allreduce"},
      {"ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
       "allgather"},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "reducescatter"},
      {"ncclKernel_Broadcast_RING_LL_Sum_int8_t", "broadcast"},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "sendrecv"},
      {"ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", ""},
      {"rcclGenericKernel_1(ncclDevComm*)", ""},
  };
  std::vector<std::string> events;
  for (size_t i = 0; i < kernels.size(); ++i) {
    events.push_back(Kernel(kernels[i].first, std::to_string(i * 10), "1"));
  }
  // "Collective name" wins, and makes a kernel communication whatever its name.
  events.push_back(
      Kernel("my_custom_allreduce", "100", "1", R"J(, "Collective name": "all_to_all")J"));
  Loaded l = LoadText(Wrap(events));
  ASSERT_EQ(l.trace()->collectives.size(), kernels.size() + 1);
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(l.Name(l.trace()->collectives[i].collective), kernels[i].second) << kernels[i].first;
  }
  EXPECT_EQ(l.Name(l.trace()->collectives.back().collective), "alltoall");
  EXPECT_EQ(l.Classes(), (std::map<std::string, int>{{"communication", 8}}));
}

TEST(KinetoReaderTest, KernelClassesFollowTheirNames) {
  const std::vector<std::pair<std::string, OpClass>> kernels = {
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cublas", OpClass::kGemm},
      {"nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT", OpClass::kGemm},
      {"Cijk_Alik_Bljk_SB_MT64x16x32_MI16x16x1", OpClass::kGemm},
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(Params)",
       OpClass::kGemm},
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)",
       OpClass::kAttention},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Flash_fwd_params)",
       OpClass::kAttention},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
       OpClass::kOtherCompute},
      {"triton_poi_fused_add_cos_sin_0", OpClass::kOtherCompute},
      // RCCL's MSCCL kernels as ROCm profiles print them, without the
      // (ncclDevComm*, ...) argument list.
      {"mscclKernel_Sum_hip_bfloat16_Simple_false", OpClass::kCommunication},
  };
  std::vector<std::string> events;
  for (size_t i = 0; i < kernels.size(); ++i) {
    events.push_back(Kernel(kernels[i].first, std::to_string(i), "1"));
  }
  events.push_back(
      R"J({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"device": 0, "stream": 7}})J");
  events.push_back(
      R"J({"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 51, "dur": 1})J");
  Loaded l = LoadText(Wrap(events));
  ASSERT_EQ(l.trace()->ops.size(), kernels.size() + 2);
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(l.trace()->ops[i].cls, kernels[i].second) << kernels[i].first;
  }
  EXPECT_EQ(l.trace()->ops[kernels.size()].cls, OpClass::kMemcpy);
  EXPECT_EQ(l.trace()->ops[kernels.size() + 1].cls, OpClass::kMemset);
}

// cuBLAS names of one length that differ only in the middle (the tile
// sizes) share a slot of the reader's name cache: each op must still get
// its own name, however the lookups alternate.
TEST(KinetoReaderTest, KernelNamesThatDifferOnlyInTheMiddleKeepTheirNames) {
  const std::vector<std::string> names = {
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_cublas",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_cublas",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize064x256x64_warpgroupsize1x1x1_cublas",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x064x64_warpgroupsize1x1x1_cublas",
  };
  std::vector<std::string> events;
  std::vector<std::string> expected;
  for (int i = 0; i < 200; ++i) {
    const std::string& name = names[static_cast<size_t>((i * 7 + i / 3) % 4)];
    events.push_back(Kernel(name, std::to_string(100 + 10 * i), "5"));
    expected.push_back(name);
  }
  Loaded l = LoadText(Wrap(events));
  ASSERT_NE(l.trace(), nullptr);
  ASSERT_EQ(l.trace()->ops.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(l.Name(l.trace()->ops[i].name), expected[i]) << "op " << i;
  }
}

TEST(KinetoReaderTest, RankComesFromThePathWhenTheTraceHasNone) {
  REQUIRE_CORPUS();
  Loaded l = Load(kCorpus + "hta__rank_unavailable__rank_not_found.json.gz", 7);
  EXPECT_EQ(l.trace()->rank, 7);
  EXPECT_EQ(l.diag(DiagCode::kTraceNoRank), 0u);
  // distributedInfo.rank wins over the path.
  Loaded m = Load(kCorpus + "hta__trace_filter__sampled_rank-1.json.gz", 5);
  EXPECT_EQ(m.trace()->rank, 1);
}

// Kineto writes every kernel (every launch call) with the same keys in the
// same order, and the reader reads the bytes between the values only once
// (an event template), then only the values. Each event must still get its
// own values, whatever their lengths.
TEST(KinetoReaderTest, EventsOfOneLayoutKeepTheirOwnValues) {
  auto kernel = [](int i) {
    return R"J({"ph": "X", "cat": "kernel", "name": "kernel_)J" +
           std::string(static_cast<size_t>(i % 37), 'x') + std::to_string(i) +
           R"J(", "pid": 0, "tid": 7, "ts": )J" + std::to_string(1000 + 10 * i) +
           (i % 2 ? ".125" : "") + R"J(, "dur": )J" + std::to_string(1 + i % 7) +
           R"J(.5, "args": {"External id": )J" + std::to_string(i) + R"J(, "device": )J" +
           std::to_string(i % 2) + R"J(, "stream": )J" + std::to_string(7 + i % 3) +
           R"J(, "correlation": )J" + std::to_string(5000 + i) + R"J(, "grid": [)J" +
           std::to_string(1 + i % 300) + ", 1, " + std::to_string(1 + i % 3) +
           R"J(], "block": [128, 1, 1]}})J";
  };
  std::vector<std::string> events;
  for (int i = 0; i < 300; ++i) events.push_back(kernel(i));
  Loaded l = LoadText(Wrap(events));
  ASSERT_NE(l.trace(), nullptr);
  ASSERT_EQ(l.trace()->ops.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    const TraceOp& op = l.trace()->ops[static_cast<size_t>(i)];
    EXPECT_EQ(op.start_ns, (1000 + 10 * i) * 1000 + (i % 2 ? 125 : 0)) << "op " << i;
    EXPECT_EQ(op.dur_ns, (1 + i % 7) * 1000 + 500) << "op " << i;
    EXPECT_EQ(l.Name(op.name),
              "kernel_" + std::string(static_cast<size_t>(i % 37), 'x') + std::to_string(i));
    EXPECT_EQ(op.device, i % 2) << "op " << i;
    EXPECT_EQ(op.stream, 7 + i % 3) << "op " << i;
    ASSERT_NE(op.shape, kNoShape) << "op " << i;
    EXPECT_EQ(l.Name(op.shape), "grid " + std::to_string(1 + i % 300) + "x1x" +
                                    std::to_string(1 + i % 3) + " block 128x1x1");
  }
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
}

// An event that differs from the learned layout anywhere between its
// values is read in full, as if no layout had been learned; the layout of
// the events around it is still used (each breaker is followed by a plain
// event, which must find it again).
TEST(KinetoReaderTest, EventsThatBreakALearnedLayoutAreReadInFull) {
  const std::string lead = R"J({"ph": "X", "cat": "kernel", "name": )J";
  const std::string args =
      R"J(, "args": {"External id": 1, "device": 0, "stream": 7, "grid": [2, 1, 1], "block": [64, 1, 1]}})J";
  int ts = 0;
  auto kernel = [&](const std::string& name, const std::string& rest) {
    return lead + "\"" + name + R"J(", "pid": 0, "tid": 7, "ts": )J" + std::to_string(++ts) + rest;
  };
  auto with_args = [](const std::string& a) {
    return R"J(, "dur": 1, "args": {"External id": 1, "device": 0, )J" + a + "}}";
  };
  struct Case {
    std::string name;        // as read
    std::string event_rest;  // after "ts": N
    int64_t dur_ns = 1000;
    std::string shape = "grid 2x1x1 block 64x1x1";
    int32_t stream = 7;
    std::string event_name;  // when not `name`
  };
  const std::vector<Case> breakers = {
      // No "stream": the tid.
      {"renamed_key", with_args(R"J("strean": 9, "grid": [2, 1, 1], "block": [64, 1, 1])J")},
      {"two_blanks", ",  \"dur\": 1" + args},
      {"blank_after_number", ", \"dur\": 1 " + args},
      {"exponent", ", \"dur\": 2e0" + args, 2000},
      {"esc\"aped", ", \"dur\": 1" + args, 1000, "grid 2x1x1 block 64x1x1", 7, R"J(esc\"aped)J"},
      {"tight_grid", with_args(R"J("stream": 7, "grid": [3,1,1], "block": [64, 1, 1])J"), 1000,
       "grid 3x1x1 block 64x1x1"},
      {"long_grid", with_args(R"J("stream": 7, "grid": [123456789, 1, 1], "block": [64, 1, 1])J"),
       1000, "grid 123456789x1x1 block 64x1x1"},
      {"dur_after_args",
       R"J(, "args": {"External id": 1, "device": 0, "stream": 7, "grid": [2, 1, 1], "block": [64, 1, 1]}, "dur": 3})J",
       3000},
      {"stream_as_string", with_args(R"J("stream": "9", "grid": [2, 1, 1], "block": [64, 1, 1])J"),
       1000, "grid 2x1x1 block 64x1x1", 9},
      {"extra_member",
       with_args(R"J("stream": 8, "grid": [2, 1, 1], "block": [64, 1, 1], "x": 1)J"), 1000,
       "grid 2x1x1 block 64x1x1", 8},
  };
  std::vector<std::string> events;
  std::vector<Case> want;
  const Case plain{"plain", ", \"dur\": 1" + args};
  for (int i = 0; i < 3; ++i) {
    events.push_back(kernel(plain.name, plain.event_rest));
    want.push_back(plain);
  }
  for (const Case& b : breakers) {
    events.push_back(kernel(b.event_name.empty() ? b.name : b.event_name, b.event_rest));
    want.push_back(b);
    events.push_back(kernel(plain.name, plain.event_rest));
    want.push_back(plain);
  }
  events.push_back(kernel("dur_null", ", \"dur\": null" + args));  // a bad event
  Loaded l = LoadText(Wrap(events));
  ASSERT_NE(l.trace(), nullptr);
  ASSERT_EQ(l.trace()->ops.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TraceOp& op = l.trace()->ops[i];
    EXPECT_EQ(l.Name(op.name), want[i].name) << "op " << i;
    EXPECT_EQ(op.dur_ns, want[i].dur_ns) << "op " << i << " " << want[i].name;
    ASSERT_NE(op.shape, kNoShape) << "op " << i << " " << want[i].name;
    EXPECT_EQ(l.Name(op.shape), want[i].shape) << "op " << i << " " << want[i].name;
    EXPECT_EQ(op.stream, want[i].stream) << "op " << i << " " << want[i].name;
  }
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 1u);  // "dur": null
}

// A big trace's op lists reserve millions of entries at once (address
// space only). Where address space is short (ulimit -v, or committed up
// front with vm.overcommit_memory=2) the reservation fails, and the lists
// must grow as before instead of the reader dying of std::bad_alloc.
TEST(KinetoReaderTest, ABigTraceIsReadWhereAddressSpaceIsShort) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ASan and TSan reserve terabytes of shadow memory: no address-space limit fits";
#else
  constexpr int kKernels = 100000;  // past the 64 k entries where the lists reserve
  std::vector<std::string> events;
  events.reserve(kKernels);
  for (int i = 0; i < kKernels; ++i) events.push_back(Kernel("k", std::to_string(i), "1"));
  TempDir dir;
  const std::string path = WriteFile(dir.File("trace.json"), Wrap(events));
  EXPECT_EXIT(
      {
        // What the process maps now, plus 96 MiB: far below the 200 MiB
        // the reservations take, well above what the reader needs.
        std::ifstream statm("/proc/self/statm");
        size_t pages = 0;
        statm >> pages;
        rlimit limit{};
        limit.rlim_cur = limit.rlim_max =
            pages * static_cast<size_t>(sysconf(_SC_PAGESIZE)) + (size_t{96} << 20);
        if (pages == 0 || setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(2);
        Loaded l = Load(path);
        std::_Exit(l.trace() != nullptr && l.trace()->ops.size() == kKernels ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
#endif
}

TEST(KinetoReaderTest, EscapedStringsAndBracketsInsideStrings) {
  // Quotes, backslash runs and brackets inside names must not end an event.
  Loaded l = LoadText(Wrap({
      Kernel(R"J(k\"}]{[\\)J", "1", "1"),
      Kernel(R"J(caf\u00e9 \\\"x\\\\)J", "2", "1"),
      Kernel(R"J(\\)J", "3", "1"),
  }));
  ASSERT_EQ(l.trace()->ops.size(), 3u);
  EXPECT_EQ(l.Name(l.trace()->ops[0].name), "k\"}]{[\\");
  EXPECT_EQ(l.Name(l.trace()->ops[1].name), "caf\xC3\xA9 \\\"x\\\\");
  EXPECT_EQ(l.Name(l.trace()->ops[2].name), "\\");
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
}

TEST(KinetoReaderTest, LargeTraceWithTrickyStringsCrossesChunkBoundaries) {
  // ~6 MB: events straddle the reader's 512 KiB chunks and its 64-byte
  // blocks at every phase; names hold backslash runs before quotes.
  std::mt19937 rng(7);
  std::vector<std::string> events;
  int expected = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string name = "k" + std::to_string(i);
    int runs = static_cast<int>(rng() % 4);
    for (int r = 0; r < runs; ++r) name += std::string(2 * (rng() % 3), '\\') + "\\\"{[";
    name += std::string(rng() % 90, 'x');
    if (i % 3 == 0) {
      events.push_back(
          R"J({"ph": "X", "cat": "cpu_op", "name": ")J" + name +
          R"J(", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"Input Dims": [[1, 2], []]}})J");
    } else {
      events.push_back(Kernel(name, std::to_string(i), "1", R"J(, "grid": [1, 1, 1])J"));
      ++expected;
    }
  }
  Loaded l = LoadText(Wrap(events));
  EXPECT_EQ(l.trace()->ops.size(), static_cast<size_t>(expected));
  EXPECT_EQ(l.trace()->events_total, 30000u);
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
  EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), 0u);
}

TEST(KinetoReaderTest, OversizedEventIsSkippedAndTheRestKept) {
  std::string huge =
      Kernel("huge", "2", "1", R"J(, "blob": ")J" + std::string(9 << 20, 'a') + "\"");
  Loaded l = LoadText(Wrap({Kernel("a", "1", "1"), huge, Kernel("b", "3", "1")}));
  EXPECT_EQ(l.trace()->ops.size(), 2u);
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 1u);
}

TEST(KinetoReaderTest, NotATraceIsUnsupported) {
  Loaded obj = LoadText(R"J({"hello": [1, 2, {"x": "y"}], "n": 3})J");
  EXPECT_EQ(obj.trace(), nullptr);
  EXPECT_EQ(obj.diag(DiagCode::kTraceUnsupported), 1u);
  Loaded garbage = LoadText("\x01\x02 not json at all");
  EXPECT_EQ(garbage.trace(), nullptr);
  EXPECT_EQ(garbage.diag(DiagCode::kTraceUnsupported), 1u);
  Loaded empty = LoadText("");
  EXPECT_EQ(empty.trace(), nullptr);
  Loaded no_events = LoadText(R"J({"traceEvents": []})J");
  ASSERT_NE(no_events.trace(), nullptr);
  EXPECT_EQ(no_events.diag(DiagCode::kTraceNoEvents), 1u);
}

// ---------------------------------------------------------------------------
// Truncation: cut a real (decompressed) trace at many offsets; every
// complete event before the cut must be kept.

struct RefEvent {
  size_t start = 0, end = 0;
  bool device = false;
  bool runtime = false;  // a CUDA / HIP runtime or driver call
  bool cpu_op = false;   // an op of a CPU-only trace: cpu_op, nccl:* / gloo:* ranges
};

// Reference scan, independent of the reader: a byte-at-a-time string-aware
// walk to traceEvents' elements, each judged by nlohmann::json.
std::vector<RefEvent> ReferenceEvents(const std::string& text) {
  std::vector<RefEvent> events;
  size_t at = text.find("\"traceEvents\"");
  at = text.find('[', at);
  int depth = 0;
  bool in_string = false, escaped = false;
  size_t start = 0;
  for (size_t i = at + 1; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (depth++ == 0) start = i;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;
      if (--depth == 0) {
        RefEvent e{start, i + 1};
        auto j = nlohmann::json::parse(text.substr(start, i + 1 - start));
        std::string cat = j.value("cat", ""), name = j.value("name", "");
        bool complete = j.value("ph", "") == "X";
        e.device = complete && (cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" ||
                                cat == "Memcpy" || cat == "gpu_memset" || cat == "Memset");
        e.runtime = complete && (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime");
        e.cpu_op = complete &&
                   (cat == "cpu_op" || (cat == "user_annotation" && (name.rfind("nccl:", 0) == 0 ||
                                                                     name.rfind("gloo:", 0) == 0)));
        events.push_back(e);
      }
    }
  }
  return events;
}

void CheckCuts(const std::string& text, int cuts, uint32_t seed) {
  std::vector<RefEvent> ref = ReferenceEvents(text);
  ASSERT_FALSE(ref.empty());
  size_t root_end = text.rfind('}');
  std::mt19937 rng(seed);
  TempDir dir;
  std::string path = dir.File("cut.json");
  for (int k = 0; k < cuts; ++k) {
    // Evenly spread, jittered, plus the edges of a few events.
    size_t cut = text.size() * static_cast<size_t>(k) / static_cast<size_t>(cuts) +
                 rng() % std::max<size_t>(1, text.size() / static_cast<size_t>(cuts));
    if (k % 10 == 1) cut = ref[rng() % ref.size()].end;
    if (k % 10 == 2) cut = ref[rng() % ref.size()].start;
    cut = std::min(cut, text.size() - 1);
    SCOPED_TRACE("cut at " + std::to_string(cut));
    WriteFile(path, text.substr(0, cut));
    Loaded l = Load(path);
    size_t complete = 0, device = 0, runtime = 0, cpu = 0;
    for (const RefEvent& e : ref) {
      if (e.end <= cut) ++complete, device += e.device, runtime += e.runtime, cpu += e.cpu_op;
    }
    if (cut == 0) {
      EXPECT_EQ(l.trace(), nullptr);
      continue;
    }
    ASSERT_NE(l.trace(), nullptr);
    // Cut before its first GPU event, a GPU trace reads as CPU-only and
    // keeps its CPU ops (Kineto writes them first).
    bool cpu_only = device == 0 && runtime == 0 && cpu > 0;
    EXPECT_EQ(l.trace()->cpu_only, cpu_only);
    EXPECT_EQ(l.trace()->ops.size(), cpu_only ? cpu : device);
    EXPECT_EQ(l.trace()->events_total, complete);
    EXPECT_EQ(l.trace()->truncated, cut <= root_end);
    EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), cut <= root_end ? 1u : 0u);
    EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
    bool inside_event = false;
    for (const RefEvent& e : ref) inside_event |= e.start < cut && cut < e.end;
    EXPECT_EQ(l.trace()->events_lost, inside_event ? 1u : 0u);
  }
}

TEST(KinetoReaderTest, TruncatedTraceKeepsEveryCompleteEventBeforeTheCut) {
  REQUIRE_CORPUS();
  // One-line JSON with integer ts (rank 0 of the 128-rank job) ...
  CheckCuts(ReadGzip(kCorpus + "hta__trace_filter__sampled_rank-0.json.gz"), 200, 1);
  // ... and Kineto's own pretty-printed layout (ROCm trace).
  CheckCuts(ReadGzip(kCorpus + "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"), 200,
            2);
}

// A CPU-only trace (GPU tracing off; its header lists GPUs all the same)
// cut anywhere keeps every complete CPU op before the cut and stays
// CPU-only, as it reads whole (the reference scan's cpu_op events).
void CheckCpuOnlyCuts(const std::string& text, int cuts) {
  std::vector<RefEvent> ref = ReferenceEvents(text);
  TempDir dir;
  std::string path = dir.File("cut.json");
  for (int k = 1; k <= cuts; ++k) {
    size_t cut = text.size() * static_cast<size_t>(k) / static_cast<size_t>(cuts + 1);
    SCOPED_TRACE("cut at " + std::to_string(cut));
    WriteFile(path, text.substr(0, cut));
    Loaded l = Load(path);
    size_t kept = 0;
    for (const RefEvent& e : ref) kept += e.cpu_op && e.end <= cut;
    ASSERT_NE(l.trace(), nullptr);
    ASSERT_GT(kept, 0u);
    EXPECT_EQ(l.trace()->ops.size(), kept);
    EXPECT_TRUE(l.trace()->cpu_only);
    EXPECT_TRUE(l.trace()->truncated);
    EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), 1u);
    ASSERT_EQ(l.run.diagnostics.examples(DiagCode::kTraceTruncated).size(), 1u);
    EXPECT_NE(
        l.run.diagnostics.examples(DiagCode::kTraceTruncated)[0].message.find("read as CPU-only"),
        std::string::npos);
    EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
  }
}

TEST(KinetoReaderTest, TruncatedCpuOnlyTraceKeepsEveryCpuOpBeforeTheCut) {
  REQUIRE_CORPUS();
  // deviceProperties lists 8 GPUs; no GPU event.
  CheckCpuOnlyCuts(
      ReadGzip(kCorpus + "hta__distributed_info_unavailable__distributed_info_not_found.json.gz"),
      30);
  // distributedInfo says backend nccl; no GPU event.
  CheckCpuOnlyCuts(ReadGzip(kCorpus + "hta__rank_unavailable__rank_not_found.json.gz"), 30);
}

// A preallocated trace file the profiler never finished: a valid head,
// then a sparse hole of NUL bytes to 1 GiB. Reading stops where the NUL
// bytes start, not at the end of the gigabyte, and says so.
TEST(KinetoReaderTest, ReadingStopsAtALongStretchOfNulBytes) {
  TempDir dir;
  std::vector<std::string> events;
  for (int i = 0; i < 5; ++i) events.push_back(Kernel("gemm_" + std::to_string(i), "100", "5"));
  std::string head = Wrap(events);
  head.resize(head.rfind(']'));  // cut after the last event, as a writer killed there
  // In the gap between events, and inside an event.
  for (size_t keep : {head.size(), head.size() - 10}) {
    SCOPED_TRACE(keep);
    std::string path = WriteFile(dir.File("sparse.json"), head.substr(0, keep));
    ASSERT_EQ(::truncate(path.c_str(), off_t{1} << 30), 0);
    Loaded l = Load(path);
    ASSERT_NE(l.trace(), nullptr);
    EXPECT_EQ(l.trace()->ops.size(), keep == head.size() ? 5u : 4u);
    EXPECT_TRUE(l.trace()->truncated);
    ASSERT_EQ(l.diag(DiagCode::kTraceTruncated), 1u);
    const DiagExample& note = l.run.diagnostics.examples(DiagCode::kTraceTruncated)[0];
    EXPECT_EQ(note.offset, keep);
    EXPECT_NE(note.message.find("only NUL bytes from byte " + std::to_string(keep)),
              std::string::npos)
        << note.message;
    EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 0u);
  }
  // A short run of NUL bytes is damage inside the data, not its end.
  std::string path =
      WriteFile(dir.File("nul.json"), head + std::string(100, '\0') + ",\n" + events[0] + "\n]}");
  Loaded l = Load(path);
  ASSERT_NE(l.trace(), nullptr);
  EXPECT_EQ(l.trace()->ops.size(), 6u);
  EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), 0u);
  EXPECT_EQ(l.diag(DiagCode::kTraceBadEvent), 1u);
}

TEST(KinetoReaderTest, CutGzipKeepsWhatItCanAndSaysSo) {
  REQUIRE_CORPUS();
  std::string gz = testing_util::ReadFile(kCorpus + "hta__nccl_parser_config__nccl_data.json.gz");
  Loaded whole = Load(kCorpus + "hta__nccl_parser_config__nccl_data.json.gz");
  TempDir dir;
  for (size_t cut : {gz.size() / 10, gz.size() / 2, gz.size() - 100}) {
    SCOPED_TRACE(cut);
    Loaded l = Load(WriteFile(dir.File("cut.json.gz"), gz.substr(0, cut)));
    ASSERT_NE(l.trace(), nullptr);
    EXPECT_TRUE(l.trace()->truncated);
    // Runtime calls and kernels start at 38% of the decompressed file: cut
    // before them, the trace keeps its CPU ops and reads as CPU-only, as a
    // CPU-only trace would (its truncation note says the header lists
    // GPUs); cut after them, it keeps its device ops.
    if (cut == gz.size() / 10) {
      EXPECT_TRUE(l.trace()->cpu_only);
      EXPECT_GT(l.trace()->ops.size(), 1000u);
    } else {
      EXPECT_FALSE(l.trace()->cpu_only);
      EXPECT_GT(l.trace()->ops.size(), 0u);
      EXPECT_LE(l.trace()->ops.size(), whole.trace()->ops.size());
    }
    EXPECT_EQ(l.diag(DiagCode::kGzipTruncated), 1u);
    EXPECT_EQ(l.diag(DiagCode::kTraceTruncated), 1u);
    EXPECT_EQ(l.trace()->rank, 0);  // distributedInfo comes first in this file
  }
}

TEST(KinetoReaderTest, DamagedBytesNeverCrash) {
  REQUIRE_CORPUS();
  std::string text =
      ReadGzip(kCorpus + "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  std::mt19937 rng(3);
  TempDir dir;
  const std::string specials = "{}[]\"\\:,\x00\xff";
  for (int k = 0; k < 150; ++k) {
    std::string damaged = text;
    int edits = 1 + static_cast<int>(rng() % 20);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % damaged.size();
      switch (rng() % 3) {
        case 0: damaged[at] = specials[rng() % specials.size()]; break;
        case 1: damaged.insert(at, 1, specials[rng() % specials.size()]); break;
        default: damaged.erase(at, rng() % 64); break;
      }
    }
    Loaded l = Load(WriteFile(dir.File("damaged.json"), damaged));
    if (l.trace() != nullptr) {
      // At most its 16 device ops, or its 70 CPU ops and 10 comm ranges when
      // the damage hid every GPU event.
      EXPECT_LE(l.trace()->ops.size(), l.trace()->cpu_only ? 80u : 16u);
    }
  }
}

// ---------------------------------------------------------------------------
// Sniffing and ingest.

TEST(KinetoReaderTest, SniffClaimsTracesByContent) {
  auto reader = MakeKinetoTraceReader();
  // Above the other JSON readers (a JSONL step log, dcgmi diag JSON).
  EXPECT_GT(reader->Sniff("{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n"), kSniffSure);
  EXPECT_GT(reader->Sniff("{\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100\""),
            kSniffSure);
  EXPECT_GT(reader->Sniff("[{\"name\": \"k\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2}"), kSniffSure);
  EXPECT_EQ(
      reader->Sniff(
          "{\"step\": 1, \"duration\": 0.8, \"rank\": 3}\n{\"step\": 2, \"duration\": 0.9}\n"),
      0);
  EXPECT_EQ(reader->Sniff("{\"hello\": \"world\"}"), 0);
  EXPECT_EQ(reader->Sniff("rank 0, step 1, time 0.81s\n"), 0);
  EXPECT_EQ(reader->Sniff(std::string("\x1f\x8b\x08\x00", 4)), 0);
  EXPECT_EQ(reader->Sniff(""), 0);
  EXPECT_EQ(reader->Sniff("[1, 2, 3]"), 0);
  if (HaveCorpus()) {
    for (const CorpusCase& c : CorpusCases()) {
      EXPECT_GE(reader->Sniff(ReadGzip(kCorpus + c.file).substr(0, kSniffBytes)), 96) << c.file;
    }
  }
}

TEST(KinetoReaderTest, IngestTakesTracesAndLeavesStepLogsToTheirReader) {
  TempDir dir;
  WriteFile(dir.File("steps.jsonl"),
            "{\"rank\": 0, \"step\": 1, \"duration\": 0.8}\n{\"rank\": 0, \"step\": 2, "
            "\"duration\": 0.9}\n");
  WriteGzip(dir.File("rank-3.trace.json.gz"), Wrap({Kernel("k", "1", "1")}));
  auto steps = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(steps.ok());
  auto kineto = MakeKinetoTraceReader();
  IngestOptions options;
  options.threads = 2;
  auto run = Ingest({dir.path()}, steps->readers, options, {kineto.get()});
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->files.size(), 2u);
  EXPECT_EQ(run->files[0].format, "kineto");
  EXPECT_EQ(run->files[1].format, "jsonl");
  ASSERT_EQ(run->traces.size(), 1u);
  EXPECT_EQ(run->traces[0].rank, 3);  // from the file name
  EXPECT_EQ(run->traces[0].file, 0u);
  EXPECT_EQ(run->total_steps(), 2u);
}

TEST(KinetoReaderTest, ReportsItsJsonImplementation) {
  std::string impl = KinetoJsonImplementation();
  EXPECT_NE(impl.find("stage 1"), std::string::npos);
  std::printf("kineto reader: %s\n", impl.c_str());
}

}  // namespace
}  // namespace laggard
