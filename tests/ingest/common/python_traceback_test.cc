// Python tracebacks at the end of a rank's output
// (ingest/common/python_traceback.h): which ones ended their process, whose
// they are, and which are a communication error (a consequence).

#include "ingest/common/python_traceback.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace laggard {
namespace {

std::vector<UncaughtException> Read(const std::vector<std::string>& lines) {
  PythonTracebacks t;
  uint64_t n = 0;
  for (const std::string& l : lines) t.Offer(l, ++n);
  return t.Finish();
}

// The real stderr of tests/data/hangs/gloo_ddp_die/rank2.stderr.
const std::vector<std::string> kDied = {
    "Traceback (most recent call last):",
    "  File \"/work/main/bench/realjobs/ddp_job.py\", line 221, in <module>",
    "    main()",
    "  File \"/work/main/bench/realjobs/ddp_job.py\", line 189, in main",
    "    raise RuntimeError(\"injected fault: rank %d dies at step %d\" % (rank, step))",
    "RuntimeError: injected fault: rank 2 dies at step 40"};

TEST(PythonTracebackTest, LastExceptionOfTheOutput) {
  auto got = Read(kDied);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].exception, "RuntimeError: injected fault: rank 2 dies at step 40");
  EXPECT_EQ(got[0].line_number, 6u);
  EXPECT_FALSE(got[0].rank.has_value());
  EXPECT_FALSE(got[0].communication);
}

TEST(PythonTracebackTest, OutputThatGoesOnIsNoExit) {
  std::vector<std::string> lines = kDied;
  lines.push_back("");
  lines.push_back("epoch 3 step 41 loss 0.25");  // logging.exception, then training went on
  EXPECT_TRUE(Read(lines).empty());
}

TEST(PythonTracebackTest, LauncherLinesAndHangLinesMayFollow) {
  std::vector<std::string> lines = kDied;
  lines.push_back(
      "W1205 10:11:12.345000 155011 site-packages/torch/distributed/elastic/multiprocessing/"
      "api.py:897] Sending process 155026 closing signal SIGTERM");
  lines.push_back("[W ProcessGroupNCCL.cpp:1250] Warning: destroy_process_group() was not called");
  lines.push_back("");
  EXPECT_EQ(Read(lines).size(), 1u);
}

TEST(PythonTracebackTest, CommunicationErrorsAreConsequences) {
  for (std::string last : {
           "RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
           "[127.0.0.1]:23250",
           "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3763, remote "
           "process exited or there was a network error",
           "torch.distributed.elastic.multiprocessing.api.SignalException: Process 12 got signal: "
           "15",
           "KeyboardInterrupt",
           "RuntimeError: Socket Timeout",
       }) {
    std::vector<std::string> lines(kDied.begin(), kDied.end() - 1);
    lines.push_back(last);
    auto got = Read(lines);
    ASSERT_EQ(got.size(), 1u) << last;
    EXPECT_TRUE(got[0].communication) << last;
  }
}

// tests/data/hangs/pasted/tb_msswift4340_eoferror_in_broadcast_victim.log,
// with the traceback's head: an EOFError out of broadcast_object_list is
// the broken broadcast's, not the rank's own.
TEST(PythonTracebackTest, ExceptionFromTorchDistributedIsAConsequence) {
  auto got = Read({
      "[rank6]: Traceback (most recent call last):",
      "[rank6]:   File \"/usr/local/lib/python3.12/dist-packages/torch/distributed/"
      "distributed_c10d.py\", line 2961, in _tensor_to_object",
      "[rank6]:     return _unpickler(io.BytesIO(buf)).load()",
      "[rank6]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      "[rank6]: EOFError: Ran out of input",
  });
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 6);
  EXPECT_TRUE(got[0].communication);
}

// torch 2.x's "[rankN]: " prefix: two ranks' tracebacks interleaved; rank
// 3 ran out of memory, rank 0 lost its peer.
TEST(PythonTracebackTest, RankPrefixesKeepProcessesApart) {
  auto got = Read({
      "[rank3]: Traceback (most recent call last):", "[rank0]: Traceback (most recent call last):",
      "[rank3]:   File \"train.py\", line 10, in <module>",
      "[rank0]:   File \"train.py\", line 12, in <module>", "[rank3]:     loss = model(x)",
      "[rank0]:     loss.backward()",
      "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB.",
      "[rank0]: torch.distributed.DistBackendError: [Rank 0] Watchdog caught collective "
      "operation timeout",
      "[rank1]: step 41",  // a rank without a traceback changes nothing
  });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].rank, 3);
  EXPECT_FALSE(got[0].communication);
  EXPECT_EQ(got[1].rank, 0);
  EXPECT_TRUE(got[1].communication);
}

TEST(PythonTracebackTest, ChainTakesItsLastExceptionAndAnyCommunication) {
  auto got = Read({
      "Traceback (most recent call last):",
      "  File \"a.py\", line 1, in <module>",
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
      "peer",
      "",
      "During handling of the above exception, another exception occurred:",
      "",
      "Traceback (most recent call last):",
      "  File \"a.py\", line 3, in <module>",
      "ValueError: could not save the checkpoint",
  });
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].exception, "ValueError: could not save the checkpoint");
  EXPECT_TRUE(got[0].communication);
}

TEST(PythonTracebackTest, CutTracebacksAreNoEvidence) {
  // Cut in its frames; a chain cut before its next traceback.
  EXPECT_TRUE(Read({"Traceback (most recent call last):", "  File \"a.py\", line 1"}).empty());
  EXPECT_TRUE(
      Read({"Traceback (most recent call last):", "  File \"a.py\", line 1", "ValueError: x", "",
            "During handling of the above exception, another "
            "exception occurred:"})
          .empty());
  // No exception line where one belongs.
  EXPECT_TRUE(
      Read({"Traceback (most recent call last):", "  File \"a.py\", line 1", "100%|####| 10/10"})
          .empty());
}

// torchrun's own traceback after its worker's, in one combined output: the
// worker's exception stands.
TEST(PythonTracebackTest, LauncherTracebackDoesNotHideTheWorkers) {
  std::vector<std::string> lines = kDied;
  lines.push_back("Traceback (most recent call last):");
  lines.push_back("  File \"/usr/bin/torchrun\", line 33, in <module>");
  lines.push_back("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ");
  lines.push_back("============================================================");
  auto got = Read(lines);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].line_number, 6u);
}

TEST(PythonTracebackTest, MessageLinesAndCppFramesBelongToTheException) {
  std::vector<std::string> lines(kDied.begin(), kDied.end() - 1);
  lines.push_back("RuntimeError: CUDA error: an illegal memory access was encountered");
  lines.push_back(
      "CUDA kernel errors might be asynchronously reported at some other API call, so the "
      "stacktrace below might be incorrect.");
  lines.push_back(
      "Exception raised from c10_cuda_check_implementation at c10/cuda/CUDAException.cpp:43");
  lines.push_back("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57");
  auto got = Read(lines);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].communication);
}

TEST(PythonTracebackTest, StepLinesTakenByAReaderCancel) {
  PythonTracebacks t;
  uint64_t n = 0;
  for (const std::string& l : kDied) t.Offer(l, ++n);
  ASSERT_TRUE(t.watching());
  t.WentOn("rank 2, step 41, time 0.08s");
  EXPECT_TRUE(t.Finish().empty());
}

TEST(PythonTracebackTest, AnythingGoesWithoutACrash) {
  std::string junk;
  for (int i = 0; i < 256; ++i) junk += static_cast<char>(i);
  auto got = Read({"Traceback (most recent call last):", junk, "[rank",
                   "[rank99999999999]:", "Traceback (most recent call last):", "", "  ", ">",
                   "> Traceback (most recent "
                   "call last):"});
  EXPECT_TRUE(got.empty());
}

}  // namespace
}  // namespace laggard
