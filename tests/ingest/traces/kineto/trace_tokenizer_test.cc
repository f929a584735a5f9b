// Tests of the Kineto reader's trace tokenizer (ingest/traces/kineto/
// trace_tokenizer.h): what a trace's top-level members say, which events it
// hands on and at which offsets, whatever the chunking of the stream, and
// how a cut or damaged file is counted.

#include "ingest/traces/kineto/trace_tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "string_source.h"

namespace laggard::kineto {
namespace {

using testing_util::StringSource;

// A ByteSource over a string, `piece` bytes per Read() at most.

struct Taken {
  uint64_t offset;
  std::string name;
};

class RecordingSink : public EventSink {
 public:
  void OnEvent(const EventFields& e, uint64_t offset) override {
    taken.push_back({offset, std::string(e.name)});
  }
  std::vector<Taken> taken;
};

struct Tokenized {
  std::unique_ptr<EventDiagnostics> diag;
  std::unique_ptr<TraceTokenizer> tokenizer;
  std::vector<Taken> taken;
};

Tokenized Tokenize(const std::string& text, size_t piece = 1 << 20, Mode mode = Mode::kDevice) {
  static const std::string kPath = "trace.json";
  Tokenized out;
  out.diag = std::make_unique<EventDiagnostics>(kPath);
  out.tokenizer = std::make_unique<TraceTokenizer>(std::make_unique<StringSource>(text, piece),
                                                   mode, "", *out.diag);
  RecordingSink sink;
  out.tokenizer->Run(sink);
  out.taken = sink.taken;
  return out;
}

const std::string kKernel =
    R"J({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5.000, )J"
    R"J("dur": 2.000, "args": {"device": 0, "stream": 7, "correlation": 3}})J";
const std::string kFlow = R"J({"ph": "f", "id": 3, "pid": 0, "tid": 7, "ts": 5.000})J";
const std::string kCpuOp =
    R"J({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1.0, "dur": 1})J";
const std::string kStep =
    R"J({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "ts": 0.5, "dur": 9})J";

// An Object Format trace the way PyTorch writes it: header members, one
// event per line, the base time last.
std::string ObjectTrace() {
  return "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": "
         "\"NVIDIA H100\"}\n  ],\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, "
         "\"world_size\": 8, \"hostname\": \"node-7\"},\n  \"traceEvents\": [\n  " +
         kStep + ",\n  " + kCpuOp + ",\n  " + kKernel + ",\n  " + kFlow +
         "\n  ],\n  \"traceName\": \"rank-3.json\",\n  \"host_name\": \"ignored-when-dist\",\n"
         "  \"baseTimeNanoseconds\": 1700000000000000000\n}\n";
}

TEST(TraceTokenizerTest, ObjectFormatHeaderAndTheEventsAPassNeeds) {
  const std::string text = ObjectTrace();
  for (size_t piece : {size_t{1} << 20, size_t{7}, size_t{1}}) {
    Tokenized t = Tokenize(text, piece);
    ASSERT_TRUE(t.tokenizer->has_trace()) << piece;
    const TraceHeader& h = t.tokenizer->header();
    EXPECT_EQ(h.rank, 3);
    EXPECT_EQ(h.world_size, 8);
    EXPECT_EQ(h.dist_host, "node-7");
    EXPECT_EQ(h.top_host, "ignored-when-dist");
    EXPECT_EQ(h.base_ns, 1700000000000000000);
    EXPECT_TRUE(h.gpu_job);
    EXPECT_EQ(t.tokenizer->events_total(), 4u);
    EXPECT_FALSE(t.tokenizer->truncated());
    // The step and the kernel, at the offsets of their '{'.
    ASSERT_EQ(t.taken.size(), 2u) << piece;
    EXPECT_EQ(t.taken[0].name, "\"ProfilerStep#4\"");
    EXPECT_EQ(t.taken[0].offset, text.find(kStep));
    EXPECT_EQ(t.taken[1].name, "\"gemm\"");
    EXPECT_EQ(t.taken[1].offset, text.find(kKernel));
    EXPECT_TRUE(t.tokenizer->saw_cpu_events());
    EXPECT_EQ(t.diag->diag().count(DiagCode::kTraceTruncated), 0u);
  }
}

TEST(TraceTokenizerTest, CpuPassHandsOnCpuOps) {
  Tokenized t = Tokenize(ObjectTrace(), 1 << 20, Mode::kCpu);
  ASSERT_EQ(t.taken.size(), 2u);
  EXPECT_EQ(t.taken[0].name, "\"ProfilerStep#4\"");
  EXPECT_EQ(t.taken[1].name, "\"aten::mm\"");
}

TEST(TraceTokenizerTest, ArrayFormatMayEndWithoutItsBracket) {
  Tokenized t = Tokenize("[" + kKernel + ",\n" + kFlow + ",\n" + kKernel + "\n");
  ASSERT_TRUE(t.tokenizer->has_trace());
  EXPECT_FALSE(t.tokenizer->truncated());
  EXPECT_EQ(t.tokenizer->events_total(), 3u);
  EXPECT_EQ(t.taken.size(), 2u);
  EXPECT_FALSE(t.tokenizer->header().rank);
}

TEST(TraceTokenizerTest, CutInsideAnEventKeepsTheEventsBefore) {
  const std::string text = ObjectTrace();
  const size_t cut = text.find(kKernel) + 20;
  Tokenized t = Tokenize(text.substr(0, cut), 5);
  ASSERT_TRUE(t.tokenizer->has_trace());
  EXPECT_TRUE(t.tokenizer->truncated());
  EXPECT_EQ(t.tokenizer->events_lost(), 1u);
  EXPECT_EQ(t.diag->diag().count(DiagCode::kTraceTruncated), 1u);
  const auto& examples = t.diag->diag().examples(DiagCode::kTraceTruncated);
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_EQ(examples[0].offset, cut);
  ASSERT_EQ(t.taken.size(), 1u);             // the step
  EXPECT_EQ(t.tokenizer->header().rank, 3);  // the header came before the cut
}

TEST(TraceTokenizerTest, GarbageBetweenEventsIsOneBadEvent) {
  Tokenized t = Tokenize("[" + kKernel + ", 17, " + kKernel + "]");
  EXPECT_EQ(t.diag->diag().count(DiagCode::kTraceBadEvent), 1u);
  EXPECT_EQ(t.taken.size(), 2u);
  EXPECT_EQ(t.tokenizer->events_total(), 3u);
}

TEST(TraceTokenizerTest, WhatIsNoTraceIsUnsupported) {
  for (const std::string& text : {std::string("   \n"), std::string("\"just a string\""),
                                  std::string("{\"schemaVersion\": 1}")}) {
    Tokenized t = Tokenize(text);
    EXPECT_FALSE(t.tokenizer->has_trace()) << text;
    EXPECT_EQ(t.diag->diag().count(DiagCode::kTraceUnsupported), 1u) << text;
  }
}

}  // namespace
}  // namespace laggard::kineto
