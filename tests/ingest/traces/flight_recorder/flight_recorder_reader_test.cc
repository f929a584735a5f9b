// Tests of the Flight Recorder dump reader and its unpickler: the dumps of
// tests/data/hangs/ (made by make_fr_dumps.py to torch's layouts of
// versions 2.3, 2.7, 2.10 and its JSON), sniffing against the Kineto
// reader, cut and damaged pickles, refused opcodes and the unpickler's
// bounds.

#include "ingest/traces/flight_recorder/flight_recorder_reader.h"

#include <gtest/gtest.h>

#include <string>

#include "ingest/common/sniff.h"
#include "ingest/ingest.h"
#include "ingest/traces/flight_recorder/pickle_reader.h"
#include "ingest/traces/kineto/kineto_reader.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::TempDir;
using testing_util::WriteFile;

const std::string kData = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/hangs/";

struct Loaded {
  Run run;
  uint64_t taken = 0;
  const FlightRecorderDump* dump() const {
    return run.hang.dumps.empty() ? nullptr : &run.hang.dumps[0];
  }
  uint64_t diag(DiagCode code) const { return run.diagnostics.count(code); }
};

Loaded Load(const std::string& path, std::optional<int32_t> rank_from_path = std::nullopt) {
  auto reader = MakeFlightRecorderReader();
  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = path;
  ctx.rank_from_path = rank_from_path;
  ctx.out = &builder;
  Loaded l;
  l.taken = reader->Read(path, ctx);
  l.run.files.push_back(InputFileInfo{path, "flight-recorder"});
  builder.Finalize(l.run);
  return l;
}

std::string ReadAll(const std::string& path) {
  auto head = ReadHead(path, 1 << 20);
  return head.ok() ? *head : std::string();
}

TEST(FlightRecorderReader, ReadsVersion210PickleAsTorchWritesIt) {
  Loaded l = Load(kData + "fr_v2.10/nccl_trace_rank_0", 0);
  ASSERT_NE(l.dump(), nullptr);
  const FlightRecorderDump& d = *l.dump();
  EXPECT_EQ(d.version, "2.10");
  EXPECT_EQ(d.format, "pickle");
  EXPECT_EQ(d.comm_lib_version, "2.27.3");
  EXPECT_EQ(d.rank, 0);
  EXPECT_FALSE(d.truncated);
  ASSERT_EQ(d.entries.size(), 8u);
  const CollectiveRecord& last = d.entries.back();
  EXPECT_EQ(last.record_id, 7);
  EXPECT_EQ(last.pg_id, "0");
  EXPECT_EQ(last.pg_name, "0");
  EXPECT_EQ(last.pg_desc, "default_pg");
  EXPECT_EQ(last.collective_seq, 6);
  EXPECT_EQ(last.op, "nccl:all_reduce");
  EXPECT_EQ(last.state, CollectiveState::kStarted);
  EXPECT_EQ(last.created_ns, 1718000001750000000);
  EXPECT_TRUE(last.started_ns.has_value());
  EXPECT_FALSE(last.completed_ns.has_value());
  EXPECT_FALSE(last.duration_ms.has_value());
  EXPECT_EQ(last.retired, false);
  EXPECT_EQ(last.is_p2p, false);
  EXPECT_EQ(last.timeout_ms, 600000);
  ASSERT_EQ(last.input_sizes.size(), 1u);
  EXPECT_EQ(last.input_sizes[0], std::vector<int64_t>{1048576});
  EXPECT_EQ(last.input_dtypes, std::vector<std::string>{"Float"});
  ASSERT_EQ(last.frames.size(), 5u);
  EXPECT_EQ(last.frames[0].name, "all_reduce");
  EXPECT_EQ(last.frames[0].line, 2501);
  EXPECT_EQ(d.entries[0].state, CollectiveState::kCompleted);
  EXPECT_FLOAT_EQ(static_cast<float>(*d.entries[0].duration_ms), 3.25f);
  ASSERT_EQ(d.status.size(), 2u);
  EXPECT_EQ(d.status[0].pg_id, "0");
  EXPECT_EQ(d.status[0].last_enqueued, 6);
  EXPECT_EQ(d.status[0].last_completed, 5);
  ASSERT_EQ(l.run.hang.groups.size(), 2u);
  EXPECT_EQ(l.run.hang.groups[0].desc, "default_pg");
  EXPECT_EQ(l.run.hang.groups[0].ranks, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(l.run.hang.groups[1].ranks, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(l.taken, 2u + 2u + 8u);
  EXPECT_EQ(l.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(FlightRecorderReader, ReadsVersions23And27) {
  Loaded v23 = Load(kData + "fr_v2.3/nccl_trace_rank_1", 1);
  ASSERT_NE(v23.dump(), nullptr);
  EXPECT_EQ(v23.dump()->version, "2.3");
  EXPECT_EQ(v23.dump()->comm_lib_version, "");
  EXPECT_EQ(v23.dump()->entries.size(), 6u);
  EXPECT_EQ(v23.diag(DiagCode::kHangDumpVersionUnknown), 0u);
  Loaded v27 = Load(kData + "fr_v2.7/nccl_trace_rank_0", 0);
  ASSERT_NE(v27.dump(), nullptr);
  EXPECT_EQ(v27.dump()->version, "2.7");
  EXPECT_EQ(v27.dump()->comm_lib_version, "2.21.5");
  EXPECT_EQ(v27.dump()->entries.size(), 8u);
}

TEST(FlightRecorderReader, JsonDumpGivesWhatThePickleGives) {
  Loaded json = Load(kData + "fr_json/nccl_trace_rank_1.json", 1);
  Loaded pkl = Load(kData + "fr_v2.10/nccl_trace_rank_1", 1);
  ASSERT_NE(json.dump(), nullptr);
  ASSERT_NE(pkl.dump(), nullptr);
  EXPECT_EQ(json.dump()->format, "json");
  ASSERT_EQ(json.dump()->entries.size(), pkl.dump()->entries.size());
  for (size_t i = 0; i < json.dump()->entries.size(); ++i) {
    const CollectiveRecord& a = json.dump()->entries[i];
    const CollectiveRecord& b = pkl.dump()->entries[i];
    EXPECT_EQ(a.record_id, b.record_id);
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.collective_seq, b.collective_seq);
    EXPECT_EQ(a.completed_ns, b.completed_ns);  // JSON's 0 is None
    EXPECT_EQ(a.pg_desc, b.pg_desc);
    EXPECT_TRUE(a.frames.empty());  // dump_json writes none
  }
  ASSERT_EQ(json.dump()->status.size(), 1u);
  EXPECT_EQ(json.dump()->status[0].last_enqueued, 6);  // "6" in JSON
}

TEST(FlightRecorderReader, EntryKeepsItsProcessesIdAndItsGroupsName) {
  // Rank 9 of the multi-group job: its process's "2" is its tensor-parallel
  // group, which pg_config (and every rank) names "17".
  Loaded l = Load(kData + "fr_multigroup_host_stop/nccl_trace_rank_9", 9);
  ASSERT_NE(l.dump(), nullptr);
  const CollectiveRecord* tp = nullptr;
  for (const CollectiveRecord& e : l.dump()->entries) {
    if (e.pg_desc == "TENSOR_MODEL_PARALLEL_GROUP") tp = &e;
  }
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->pg_id, "2");
  EXPECT_EQ(tp->pg_name, "17");
  bool status_of_2 = false;
  for (const GroupProgress& p : l.dump()->status) status_of_2 = status_of_2 || p.pg_id == "2";
  EXPECT_TRUE(status_of_2);
  const ProcessGroupInfo* named = nullptr;
  for (const ProcessGroupInfo& g : l.run.hang.groups) {
    if (g.id == "17") named = &g;
  }
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->desc, "TENSOR_MODEL_PARALLEL_GROUP");
  EXPECT_EQ(named->ranks, (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(named->src.file, l.dump()->file);  // how the detector finds a dump's pg_config
  EXPECT_EQ(l.diag(DiagCode::kHangDumpNoPgConfig), 0u);
}

TEST(FlightRecorderReader, DumpWithoutPgConfigIsNoted) {
  TempDir dir;
  std::string json =
      R"({"entries":[{"collective_seq_id":3,"pg_id":1,"process_group":["1","dp"],)"
      R"("profiling_name":"nccl:all_reduce","record_id":0,"state":"started"}],)"
      R"("pg_status":{"1":{"last_completed_collective":"2","last_enqueued_collective":"3",)"
      R"("last_started_collective":"3"}},"version":"2.10"})";
  Loaded l = Load(WriteFile(dir.File("nccl_trace_rank_0.json"), json));
  ASSERT_NE(l.dump(), nullptr);
  EXPECT_EQ(l.dump()->status.size(), 1u);
  EXPECT_EQ(l.dump()->entries.size(), 1u);
  EXPECT_TRUE(l.run.hang.groups.empty());
  EXPECT_EQ(l.diag(DiagCode::kHangDumpNoPgConfig), 1u);
  EXPECT_EQ(l.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(FlightRecorderReader, PythonPickleProtocol5IsReadToo) {
  Loaded l = Load(kData + "python_p5/nccl_trace_rank_2");
  ASSERT_NE(l.dump(), nullptr);
  EXPECT_EQ(l.dump()->rank, 2);  // from the file name
  EXPECT_EQ(l.dump()->entries.size(), 7u);
  EXPECT_EQ(l.dump()->status[0].last_enqueued, 5);
}

TEST(FlightRecorderReader, TruncatedDumpKeepsCompleteEntries) {
  Loaded l = Load(kData + "damaged/nccl_trace_rank_3_cut", 3);
  ASSERT_NE(l.dump(), nullptr);
  EXPECT_TRUE(l.dump()->truncated);
  EXPECT_EQ(l.dump()->entries.size(), 5u);  // record 5 was cut
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(l.dump()->entries[i].record_id, int64_t(i));
  EXPECT_EQ(l.dump()->status.size(), 1u);
  EXPECT_EQ(l.diag(DiagCode::kHangDumpTruncated), 1u);
  const auto& ex = l.run.diagnostics.examples(DiagCode::kHangDumpTruncated);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].offset, 1917u);
  EXPECT_NE(ex[0].message.find("kept 5 complete entries"), std::string::npos) << ex[0].message;
}

TEST(FlightRecorderReader, EveryCutOfADumpIsReadWithoutInventingEntries) {
  std::string whole = ReadAll(kData + "fr_v2.10/nccl_trace_rank_0");
  ASSERT_GT(whole.size(), 100u);
  TempDir dir;
  size_t previous = 0;
  for (size_t at = 0; at < whole.size(); at += 7) {
    Loaded l = Load(WriteFile(dir.File("nccl_trace_rank_0"), whole.substr(0, at)));
    if (l.dump() == nullptr) continue;
    EXPECT_TRUE(l.dump()->truncated);
    EXPECT_LE(l.dump()->entries.size(), 8u);
    EXPECT_GE(l.dump()->entries.size(), previous) << "cut at " << at;
    previous = l.dump()->entries.size();
    EXPECT_EQ(l.diag(DiagCode::kHangDumpTruncated), 1u);
  }
  EXPECT_GE(previous, 7u);  // the 8th entry is whole only in the last few bytes
}

TEST(FlightRecorderReader, RejectsGlobalOpcode) {
  Loaded l = Load(kData + "damaged/nccl_trace_rank_5_global", 5);
  EXPECT_EQ(l.dump(), nullptr);
  EXPECT_EQ(l.taken, 0u);
  ASSERT_EQ(l.diag(DiagCode::kHangDumpRefused), 1u);
  const auto& ex = l.run.diagnostics.examples(DiagCode::kHangDumpRefused);
  EXPECT_NE(ex[0].message.find("GLOBAL (0x63) at offset 308"), std::string::npos) << ex[0].message;
  EXPECT_EQ(ex[0].offset, 308u);
}

TEST(FlightRecorderReader, RankFromTrailingNumberElseNoted) {
  TempDir dir;
  std::string bytes = ReadAll(kData + "fr_v2.10/nccl_trace_rank_2");
  Loaded numbered = Load(WriteFile(dir.File("fr_dump_7.pkl"), bytes));
  ASSERT_NE(numbered.dump(), nullptr);
  EXPECT_EQ(numbered.dump()->rank, 7);
  Loaded none = Load(WriteFile(dir.File("dump.pkl"), bytes));
  ASSERT_NE(none.dump(), nullptr);
  EXPECT_FALSE(none.dump()->rank.has_value());
  EXPECT_EQ(none.diag(DiagCode::kHangDumpNoRank), 1u);
}

TEST(FlightRecorderReader, BadEntryIsSkippedAndCounted) {
  TempDir dir;
  std::string json =
      R"({"entries":[{"collective_seq_id":1,"profiling_name":"nccl:all_reduce","record_id":0,)"
      R"("state":"completed"},{"collective_seq_id":"x","profiling_name":"nccl:all_reduce",)"
      R"("record_id":1,"state":"started"},{"collective_seq_id":3,"profiling_name":"nccl:bcast",)"
      R"("record_id":2,"state":"lost"}],"pg_config":{},"pg_status":{},"version":"2.10"})";
  Loaded l = Load(WriteFile(dir.File("nccl_trace_rank_0.json"), json));
  ASSERT_NE(l.dump(), nullptr);
  EXPECT_EQ(l.dump()->entries.size(), 1u);
  EXPECT_EQ(l.diag(DiagCode::kHangDumpBadEntry), 2u);
}

TEST(FlightRecorderReader, TruncatedJsonKeepsCompleteEntries) {
  std::string json = ReadAll(kData + "fr_json/nccl_trace_rank_1.json");
  size_t third = json.find("{\"collective_seq_id\"", 0);
  for (int k = 0; k < 2; ++k) third = json.find("{\"collective_seq_id\"", third + 1);
  TempDir dir;
  Loaded l = Load(WriteFile(dir.File("nccl_trace_rank_1.json"), json.substr(0, third + 40)));
  ASSERT_NE(l.dump(), nullptr);
  EXPECT_TRUE(l.dump()->truncated);
  EXPECT_EQ(l.dump()->entries.size(), 2u);
  EXPECT_EQ(l.diag(DiagCode::kHangDumpTruncated), 1u);
}

TEST(FlightRecorderReader, SniffsDumpsAndLeavesKinetoTracesAlone) {
  auto fr = MakeFlightRecorderReader();
  auto kineto = MakeKinetoTraceReader();
  for (std::string name : {"fr_v2.10/nccl_trace_rank_0", "fr_v2.3/nccl_trace_rank_0",
                           "python_p5/nccl_trace_rank_2", "fr_json/nccl_trace_rank_1.json"}) {
    std::string head = ReadAll(kData + name);
    EXPECT_EQ(fr->Sniff(head), kSniffCertain) << name;
    EXPECT_EQ(kineto->Sniff(head), kSniffNo) << name;
  }
  std::string trace =
      R"({"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"pg_config":[]},)"
      R"("traceEvents":[{"ph":"X","name":"ncclKernel","ts":1,"dur":2}]})";
  EXPECT_EQ(fr->Sniff(trace), kSniffNo);
  EXPECT_EQ(fr->Sniff(std::string("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94.", 14)),
            kSniffNo);  // a pickle that is no dump
  EXPECT_EQ(fr->Sniff(R"({"rank": 0, "step": 1, "time_s": 0.8})"), kSniffNo);
}

TEST(Pickle, RejectsReduceAndNamesTheOpcode) {
  std::string data =
      "\x80\x02(Nt"
      "R.";  // a tuple, then REDUCE
  pickle::UnpickleResult r = pickle::Unpickle(data);
  EXPECT_EQ(r.stop, pickle::UnpickleResult::Stop::kForbidden);
  EXPECT_EQ(r.error_offset, 5u);
  EXPECT_NE(r.error.find("REDUCE (0x52)"), std::string::npos) << r.error;
  EXPECT_EQ(r.value, nullptr);
}

TEST(Pickle, RefusesSelfReference) {
  // l = []; l.append(l): EMPTY_LIST BINPUT 0 BINGET 0 APPEND STOP.
  std::string data = std::string("\x80\x02]q\x00h\x00a.", 9);
  pickle::UnpickleResult r = pickle::Unpickle(data);
  EXPECT_EQ(r.stop, pickle::UnpickleResult::Stop::kMalformed);
}

TEST(Pickle, BoundsExpansionThroughTheMemo) {
  // Each level is a list of 16 references to the level below: 16^8 nodes.
  std::string data = "\x80\x02N";
  for (int level = 0; level < 8; ++level) {
    data += std::string("q") + static_cast<char>(level) + "](";
    for (int k = 0; k < 16; ++k) data += std::string("h") + static_cast<char>(level);
    data += "e";
  }
  data += ".";
  pickle::UnpickleResult r = pickle::Unpickle(data);
  EXPECT_FALSE(r.complete);
  EXPECT_NE(r.error.find("expand"), std::string::npos) << r.error;
}

TEST(Pickle, BoundsDepth) {
  std::string data = "\x80\x02";
  for (int k = 0; k < 100; ++k) data += "]";
  for (int k = 0; k < 99; ++k) data += "a";
  data += ".";
  pickle::UnpickleResult r = pickle::Unpickle(data);
  EXPECT_FALSE(r.complete);
  EXPECT_NE(r.error.find("nest"), std::string::npos) << r.error;
}

TEST(Pickle, ReadsTorchIntegerAndFloatEncodings) {
  // {"a": -1 (BININT), "b": 70000 (BININT), "c": 2^40 (LONG1 8), "d": 1.5}
  std::string data = std::string(
                         "\x80\x02}(X\x01\x00\x00\x00"
                         "aJ\xff\xff\xff\xff",
                         15) +
                     std::string(
                         "X\x01\x00\x00\x00"
                         "bJ\x70\x11\x01\x00",
                         11) +
                     std::string(
                         "X\x01\x00\x00\x00"
                         "c\x8a\x08\x00\x00\x00\x00\x00\x01\x00\x00",
                         16) +
                     std::string(
                         "X\x01\x00\x00\x00"
                         "dG\x3f\xf8\x00\x00\x00\x00\x00\x00u.",
                         17);
  pickle::UnpickleResult r = pickle::Unpickle(data);
  ASSERT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.value->Get("a")->i, -1);
  EXPECT_EQ(r.value->Get("b")->i, 70000);
  EXPECT_EQ(r.value->Get("c")->i, int64_t{1} << 40);
  EXPECT_DOUBLE_EQ(r.value->Get("d")->f, 1.5);
}

}  // namespace
}  // namespace laggard
