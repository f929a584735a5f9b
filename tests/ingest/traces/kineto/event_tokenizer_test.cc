// Tests of the Kineto reader's event tokenizer (ingest/traces/kineto/
// event_tokenizer.h): which events of a trace it yields in each pass, with
// which keys, and that the prefilter, the flat walker, its templates and
// simdjson On-Demand yield the same fields for the same event.

#include "ingest/traces/kineto/event_tokenizer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace laggard::kineto {
namespace {

// What an event's fields say, as text: one entry per member read.
using Fields = std::map<std::string, std::string>;

Fields Describe(const EventFields& e) {
  Fields f;
  auto put = [&](const char* key, std::string_view tok) {
    if (!tok.empty()) f[key] = std::string(tok);
  };
  put("ph", e.ph);
  put("cat", e.cat);
  put("name", e.name);
  put("ts", e.ts);
  put("dur", e.dur);
  put("pid", e.pid);
  put("tid", e.tid);
  put("device", e.device);
  put("stream", e.stream);
  put("correlation", e.correlation);
  put("Collective name", e.coll_name);
  put("In msg nelems", e.nelems);
  put("Group size", e.group_size);
  put("Process Group Name", e.pg_name);
  put("Process Group ID", e.pg_id);
  put("Seq", e.seq);
  put("External id", e.ext_id);
  if (e.grid) f["grid"] = fmt::format("{}", fmt::join(*e.grid, "x"));
  if (e.block) f["block"] = fmt::format("{}", fmt::join(*e.block, "x"));
  if (e.dims_product) f["Input Dims product"] = std::to_string(*e.dims_product);
  f["cat_kind"] = std::to_string(static_cast<int>(e.cat_kind));
  return f;
}

// One event through the tokenizer: the fields it yields, or "skipped" /
// "malformed".
struct Outcome {
  EventTokenizer::Result result;
  Fields fields;
};

Outcome Read(EventTokenizer& t, std::string_view event) {
  std::string padded = std::string(event) + std::string(kPadBytes, ' ');
  Outcome out;
  out.result =
      t.Read(padded.data(), event.size(), [&](const EventFields& e) { out.fields = Describe(e); });
  return out;
}

constexpr std::string_view kLaunch =
    R"J({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1200000, )J"
    R"J("tid": 1200000, "ts": 3600654368.005, "dur": 4.250, "args": {"External id": 11, )J"
    R"J("cbid": 211, "correlation": 12}})J";
constexpr std::string_view kKernel =
    R"J({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_cublas", )J"
    R"J("pid": 0, "tid": 7, "ts": 3600654372.255, "dur": 520.000, "args": {"External id": 11, )J"
    R"J("queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 12, )J"
    R"J("registers per thread": 168, "grid": [132, 1, 1], "block": [384, 1, 1]}})J";

TEST(EventTokenizerTest, DevicePassYieldsLaunchCallsAndDeviceOpsWithTheirKeys) {
  EventTokenizer t(Mode::kDevice, "", /*flat_events=*/true);
  Outcome launch = Read(t, kLaunch);
  ASSERT_EQ(launch.result, EventTokenizer::Result::kRead);
  EXPECT_EQ(launch.fields, (Fields{{"ph", "\"X\""},
                                   {"cat", "\"cuda_runtime\""},
                                   {"name", "\"cudaLaunchKernel\""},
                                   {"pid", "1200000"},
                                   {"tid", "1200000"},
                                   {"ts", "3600654368.005"},
                                   {"dur", "4.250"},
                                   {"External id", "11"},
                                   {"correlation", "12"},
                                   {"cat_kind", std::to_string(static_cast<int>(Cat::kRuntime))}}));
  Outcome kernel = Read(t, kKernel);
  ASSERT_EQ(kernel.result, EventTokenizer::Result::kRead);
  EXPECT_EQ(kernel.fields, (Fields{{"ph", "\"X\""},
                                   {"cat", "\"kernel\""},
                                   {"name", "\"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_cublas\""},
                                   {"pid", "0"},
                                   {"tid", "7"},
                                   {"ts", "3600654372.255"},
                                   {"dur", "520.000"},
                                   {"External id", "11"},
                                   {"device", "0"},
                                   {"stream", "7"},
                                   {"correlation", "12"},
                                   {"grid", "132x1x1"},
                                   {"block", "384x1x1"},
                                   {"cat_kind", std::to_string(static_cast<int>(Cat::kKernel))}}));
  EXPECT_TRUE(t.saw_runtime());
  EXPECT_FALSE(t.saw_cpu_events());
}

TEST(EventTokenizerTest, PrefilterDropsWhatNoPassNeeds) {
  EventTokenizer t(Mode::kDevice, "", true);
  for (
      std::string_view dropped : {
          R"J({"ph": "f", "id": 12, "pid": 0, "tid": 7, "ts": 1.0, "cat": "ac2g", "name": "ac2g"})J",
          R"J({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamIsCapturing", "ts": 1.0})J",
          R"J({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "ts": 1.0, "dur": 2})J",
          R"J({"ph": "X", "cat": "python_function", "name": "forward", "ts": 1.0, "dur": 2})J",
          R"J({"name": "thread_name", "ph": "M", "pid": 0, "tid": 7, "args": {"name": "s"}})J",
      }) {
    EXPECT_EQ(Read(t, dropped).result, EventTokenizer::Result::kSkipped) << dropped;
  }
  EXPECT_TRUE(t.saw_cpu_events());
  EXPECT_TRUE(t.saw_runtime());
  // The CPU events a GPU trace needs: its steps and the collectives' records.
  Outcome step = Read(t, R"J({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#12", )J"
                         R"J("ts": 10.0, "dur": 900.5, "args": {"External id": 3}})J");
  ASSERT_EQ(step.result, EventTokenizer::Result::kRead);
  EXPECT_EQ(step.fields["name"], "\"ProfilerStep#12\"");
  Outcome comms = Read(t, R"J({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", )J"
                          R"J("ts": 20.0, "dur": 30.0, "args": {"External id": 5, )J"
                          R"J("Collective name": "allreduce", "In msg nelems": 1048576, )J"
                          R"J("Group size": 8, "Process Group Name": "0", "Seq": 42}})J");
  ASSERT_EQ(comms.result, EventTokenizer::Result::kRead);
  EXPECT_EQ(comms.fields["Seq"], "42");
  EXPECT_EQ(comms.fields["Process Group Name"], "\"0\"");
  EXPECT_EQ(comms.fields["Collective name"], "\"allreduce\"");
  EXPECT_EQ(comms.fields["In msg nelems"], "1048576");
  EXPECT_EQ(comms.fields["External id"], "5");
}

TEST(EventTokenizerTest, CpuPassYieldsCpuOpsAndNotDeviceOps) {
  EventTokenizer t(Mode::kCpu, "", true);
  EXPECT_EQ(Read(t, kKernel).result, EventTokenizer::Result::kSkipped);
  EXPECT_EQ(Read(t, kLaunch).result, EventTokenizer::Result::kSkipped);
  Outcome op = Read(t, R"J({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, )J"
                       R"J("tid": 4, "ts": 1.0, "dur": 2.0})J");
  ASSERT_EQ(op.result, EventTokenizer::Result::kRead);
  EXPECT_EQ(op.fields["tid"], "4");
  // A CPU collective's "Input Dims" (nested arrays) goes to On-Demand.
  Outcome gloo = Read(t, R"J({"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", )J"
                         R"J("ts": 3.0, "dur": 4.0, "args": {"Input Dims": [[8, 1024], []]}})J");
  ASSERT_EQ(gloo.result, EventTokenizer::Result::kRead);
  EXPECT_EQ(gloo.fields["Input Dims product"], "8192");
}

TEST(EventTokenizerTest, StepMarkerRangesAreYielded) {
  EventTokenizer t(Mode::kDevice, "train_step", true);
  EXPECT_EQ(Read(t, R"J({"ph": "X", "cat": "user_annotation", "name": "train_step 3", )J"
                    R"J("ts": 1.0, "dur": 2.0})J")
                .result,
            EventTokenizer::Result::kRead);
  // Escaped in the file: only the decoded name can tell.
  EXPECT_EQ(Read(t, R"J({"ph": "X", "cat": "user_annotation", "name": "train\u005fstep", )J"
                    R"J("ts": 1.0, "dur": 2.0})J")
                .result,
            EventTokenizer::Result::kRead);
  EXPECT_EQ(Read(t, R"J({"ph": "X", "cat": "user_annotation", "name": "eval_step 3", )J"
                    R"J("ts": 1.0, "dur": 2.0})J")
                .result,
            EventTokenizer::Result::kSkipped);
}

// The same kernel with other values: after the first, a template reads it.
std::string KernelWith(int i) {
  return fmt::format(
      R"J({{"ph": "X", "cat": "kernel", "name": "void flash_fwd_kernel<{0}>(Flash_fwd_params)", )J"
      R"J("pid": 0, "tid": 7, "ts": {1}.{2:03}, "dur": {3}.500, "args": {{"External id": {4}, )J"
      R"J("device": 0, "stream": 7, "correlation": {5}, "grid": [{6}, 1, 1], )J"
      R"J("block": [128, 1, 1]}}}})J",
      i, 3600654000 + 17 * i, i % 1000, 40 + i, 100 + i, 200 + i, 1024 + i);
}

TEST(EventTokenizerTest, TemplatesWalkerAndOnDemandYieldTheSameFields) {
  EventTokenizer flat(Mode::kDevice, "", /*flat_events=*/true);
  EventTokenizer ondemand(Mode::kDevice, "", /*flat_events=*/false);
  std::vector<std::string> events;
  for (int i = 0; i < 6; ++i) events.push_back(KernelWith(i));
  // A layout the templates have not seen (members reordered), a name with
  // an escape, one with a non-ASCII byte, and args with a nested value:
  // the walker, then On-Demand, take these.
  events.push_back(
      R"J({"ph": "X", "cat": "kernel", "pid": 0, "name": "k2", "tid": 7, "ts": 5.0, "dur": 1.0})J");
  events.push_back(
      R"J({"ph": "X", "cat": "kernel", "name": "a\"b", "pid": 0, "tid": 7, "ts": 5.0, "dur": 1.0})J");
  events.push_back(R"J({"ph": "X", "cat": "kernel", "name": "caf)J"
                   "\xC3\xA9"
                   R"J(", "pid": 0, "tid": 7, "ts": 5.0, "dur": 1.0})J");
  events.push_back(R"J({"ph": "X", "cat": "kernel", "name": "k3", "ts": 6.0, "dur": 1.0, )J"
                   R"J("args": {"nested": {"a": [1, {"b": 2}]}, "device": 1, "stream": 9}})J");
  events.push_back(KernelWith(7));
  for (const std::string& e : events) {
    Outcome a = Read(flat, e);
    Outcome b = Read(ondemand, e);
    ASSERT_EQ(a.result, EventTokenizer::Result::kRead) << e;
    ASSERT_EQ(b.result, EventTokenizer::Result::kRead) << e;
    EXPECT_EQ(a.fields, b.fields) << e;
  }
  EXPECT_EQ(Read(flat, KernelWith(5)).fields["grid"], "1029x1x1");
  EXPECT_EQ(Read(flat, KernelWith(5)).fields["ts"], "3600654085.005");
}

TEST(EventTokenizerTest, InvalidJsonIsMalformedOnEveryPath) {
  for (bool flat : {true, false}) {
    EventTokenizer t(Mode::kDevice, "", flat);
    EXPECT_EQ(Read(t, R"J({"ph": "X", "cat": "kernel" "name": "k", "ts": 1, "dur": 1})J").result,
              EventTokenizer::Result::kMalformed)
        << flat;
    EXPECT_EQ(Read(t, R"J({"ph": "X", "cat": "kernel", "name": "k", "ts": 1 "dur": 1})J").result,
              EventTokenizer::Result::kMalformed)
        << flat;
  }
}

}  // namespace
}  // namespace laggard::kineto
