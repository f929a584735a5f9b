// Hang lines in rank logs (ingest/common/hang_lines.h): each line form on
// the real lines of tests/data/hangs/ (sources in its README and each
// file's comments), the global / group rank split, and how the step-log,
// NCCL_DEBUG and hang-log readers share a log.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "base/text.h"
#include "ingest/common/hang_lines.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

std::string DataFile(const std::string& name) {
  return std::string(LAGGARD_SOURCE_DIR) + "/tests/data/hangs/" + name;
}

std::vector<HangEvent> EventsOf(const Run& run, HangEventKind kind) {
  std::vector<HangEvent> out;
  for (const HangEvent& e : run.hang.events) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

HangEvent Parse(std::string_view line) {
  EXPECT_TRUE(MaybeHangLine(line)) << line;
  auto e = ParseHangLine(line);
  EXPECT_TRUE(e.has_value()) << line;
  return e.value_or(HangEvent{});
}

TEST(WatchdogLines, Torch2ExceptionLineKeepsGlobalAndGroupRankApart) {
  HangEvent e = Parse(
      "[rank3]:[E321 02:07:08.465224069 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception "
      "(either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL "
      "work: 1582, last completed NCCL work: 1579.");
  EXPECT_EQ(e.kind, HangEventKind::kWatchdogException);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.group_rank, 3);
  EXPECT_EQ(e.pg_id, "1");
  EXPECT_EQ(e.seq, 1580);
  EXPECT_EQ(e.last_enqueued, 1582);
  EXPECT_EQ(e.last_completed, 1579);
}

TEST(WatchdogLines, GroupRankIsNotTakenForGlobalRankOutsideTheDefaultGroup) {
  // nccl#1610: global rank 13 is rank 1 of group 11.
  HangEvent e = Parse(
      " 2025-02-18 12:54 [rank13]:[E218 04:54:22.864535778 ProcessGroupNCCL.cpp:1795] [PG ID 11 "
      "PG GUID 119 Rank 1] Exception (either an error or timeout) detected by watchdog at work: "
      "216, last enqueued NCCL work: 220, last completed NCCL work: 215.");
  EXPECT_EQ(e.rank, 13);
  EXPECT_EQ(e.group_rank, 1);
  EXPECT_EQ(e.pg_id, "11");
  EXPECT_EQ(e.pg_guid, "119");
  // A subgroup rank without a [rankN]: prefix names no global rank.
  HangEvent sub = Parse(
      "[E ProcessGroupNCCL.cpp:1709] [PG 2 Rank 1] Timeout at NCCL work: 8, "
      "last enqueued NCCL work: 10, last completed NCCL work: 7.");
  EXPECT_EQ(sub.group_rank, 1);
  EXPECT_FALSE(sub.rank.has_value());
}

TEST(WatchdogLines, DefaultGroupRankIsTheGlobalRank) {
  HangEvent e = Parse(
      "[E909 09:55:46.996672294 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 3] Timeout "
      "at NCCL work: 2070, last enqueued NCCL work: 2082, last completed NCCL work: 2069.");
  EXPECT_EQ(e.pg_id, "0");
  EXPECT_EQ(e.pg_desc, "default_pg");
  EXPECT_EQ(e.group_rank, 3);
  EXPECT_EQ(e.rank, 3);
  HangEvent guid = Parse(
      "[rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID "
      "0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at "
      "work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.");
  EXPECT_EQ(guid.pg_id, "0");
  EXPECT_EQ(guid.pg_guid, "0");
  EXPECT_EQ(guid.pg_desc, "default_pg");
}

TEST(WatchdogLines, WorkNcclFieldsAreRead) {
  HangEvent e = Parse(
      "[rank4]:[E1206 18:44:12.755262105 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, "
      "NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600099 milliseconds "
      "before timing out.");
  EXPECT_EQ(e.kind, HangEventKind::kWatchdogTimeout);
  EXPECT_EQ(e.seq, 7753);
  EXPECT_EQ(e.op, "_REDUCE_SCATTER_BASE");
  EXPECT_EQ(e.numel_in, 544997376);
  EXPECT_EQ(e.numel_out, 68124672);
  EXPECT_EQ(e.timeout_ms, 600000.0);
  EXPECT_EQ(e.ran_for_ms, 600099.0);
  EXPECT_EQ(e.rank, 4);
  EXPECT_EQ(e.group_rank, 4);  // "[Rank 4]" of a group the line does not name
  EXPECT_TRUE(e.pg_id.empty());
}

TEST(WatchdogLines, GlogTimeHasNoYearAndIsKeptApartFromTimeNs) {
  HangEvent e = Parse(
      "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, "
      "Timeout(ms)=600000) ran for 600060 milliseconds before timing out.");
  // March 21 (unpadded month "3"), days counted as in a leap year: 31 + 29 + 20.
  int64_t want = ((80LL * 24 + 2) * 60 + 7) * 60 + 8;
  ASSERT_TRUE(e.yearless_time_ns.has_value());
  EXPECT_EQ(*e.yearless_time_ns, want * 1'000'000'000 + 408271257);
  EXPECT_FALSE(e.time_ns.has_value());
  HangEvent dated = Parse(
      "[2024-02-09 09:09:15,164] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
      "(exitcode: 1) local_rank: 0 (pid: 170581) of binary: /usr/bin/python3.10");
  ASSERT_TRUE(dated.time_ns.has_value());
  EXPECT_EQ(FormatTimestamp(*dated.time_ns), "2024-02-09T09:09:15.164Z");
}

TEST(WatchdogLines, LongLineTextIsCutTo512Bytes) {
  std::string line =
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
      "collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE), but Rank 0 is "
      "running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=BROADCAST). ";
  line += std::string(1000, 'x');
  HangEvent e = Parse(line);
  EXPECT_EQ(e.text.size(), kHangTextBytes);
  EXPECT_EQ(e.kind, HangEventKind::kCollectiveMismatch);
  EXPECT_EQ(e.ranks_named, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(e.seq, 3104);
}

TEST(WatchdogLines, OrdinaryLogLinesAreNotHangLines) {
  for (std::string_view line : {
           "rank 0, step 12, time 0.81s",
           "node-a:919:1150 [0] NCCL INFO Channel 00/0 : 8[0] -> 15[7] via P2P/IPC/read",
           "  File \"/usr/lib/python3.10/site-packages/torch/distributed/run.py\", line 785, in "
           "run",
           "    raise ChildFailedError(",
           "  traceback : Signal 6 (SIGABRT) received by PID 2385923",
           "Epoch 0:   6%|██        | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6]",
           "",
       }) {
    EXPECT_FALSE(ParseHangLine(line).has_value()) << line;
  }
}

TEST(WatchdogLines, CutLineIsFlagged) {
  bool cut = false;
  auto e = ParseHangLine(
      "[rank0]:[E321 02:07:12.449 ProcessGroupNCCL.cpp:1709] [PG 1 Rank 0] Timeout at NCCL work: "
      "1580, last enqueued NCCL work: 15",
      &cut);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(cut);
  EXPECT_EQ(e->seq, 1580);
  EXPECT_FALSE(e->last_completed.has_value());
}

TEST(HangLogFiles, Torch2WatchdogLinesGiveEventsAndGroups) {
  laggard::Run run = IngestPaths({DataFile("torch2_watchdog_pg.log")});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "hang-log");
  EXPECT_EQ(run.hang.events.size(), 10u);
  EXPECT_EQ(EventsOf(run, HangEventKind::kWatchdogTimeout).size(), 2u);
  EXPECT_EQ(EventsOf(run, HangEventKind::kWatchdogException).size(), 6u);
  EXPECT_EQ(EventsOf(run, HangEventKind::kWatchdogTerminated).size(), 2u);
  EXPECT_EQ(EventsOf(run, HangEventKind::kBlockingWaitTimeout).size(), 0u);
  // "(WorkerDict pid=63294) [rank3]:..." : the launcher tag before [rankN]: is skipped.
  const HangEvent& last = run.hang.events.back();
  EXPECT_EQ(last.rank, 3);
  EXPECT_EQ(last.pg_id, "5");
  EXPECT_EQ(last.src.line, 15u);
  std::vector<std::string> ids;
  for (const ProcessGroupInfo& g : run.hang.groups) ids.push_back(g.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "3", "5"}));
  ASSERT_EQ(run.hang.logs.size(), 1u);
  EXPECT_FALSE(run.hang.logs[0].truncated);
}

TEST(HangLogFiles, EachFormGivesItsKind) {
  struct Case {
    const char* file;
    HangEventKind kind;
    size_t count;
  };
  for (const Case& c : {
           Case{"torch2_pg_guid.log", HangEventKind::kWatchdogException, 5},
           Case{"torch1_watchdog.log", HangEventKind::kWatchdogTimeout, 4},
           Case{"torch1_watchdog.log", HangEventKind::kWatchdogTerminated, 1},
           Case{"blocking_wait.log", HangEventKind::kBlockingWaitTimeout, 2},
           Case{"desync_report.log", HangEventKind::kDesyncReport, 2},
           Case{"collective_mismatch.log", HangEventKind::kCollectiveMismatch, 3},
           Case{"gloo.log", HangEventKind::kGlooTimeout, 5},
           Case{"nccl_transport.log", HangEventKind::kTransportError, 4},
           Case{"nccl_transport.log", HangEventKind::kRemoteError, 3},
           Case{"torchrun_failure.log", HangEventKind::kProcessExited, 5},
       }) {
    laggard::Run run = IngestPaths({DataFile(c.file)});
    EXPECT_EQ(EventsOf(run, c.kind).size(), c.count) << c.file << " " << HangEventKindName(c.kind);
  }
}

TEST(HangLogFiles, DesyncReportNamesTheLaggingRank) {
  laggard::Run run = IngestPaths({DataFile("desync_report.log")});
  auto desync = EventsOf(run, HangEventKind::kDesyncReport);
  ASSERT_EQ(desync.size(), 2u);
  EXPECT_EQ(desync[0].op, "ALLREDUCE");
  EXPECT_EQ(desync[0].seq, 315);
  // "- [0] Timeout at collective: ALLREDUCE, #315" is the reporting rank's
  // own timeout: rank 0 reports, the report blames only rank 7.
  EXPECT_EQ(desync[0].rank, 0);
  EXPECT_TRUE(desync[0].ranks_named.empty());
  EXPECT_EQ(desync[1].seq, 183);
  EXPECT_EQ(desync[1].ranks_named, (std::vector<int32_t>{7}));
}

TEST(HangLogFiles, TransportErrorsNamePeerHostAndStatus) {
  laggard::Run run = IngestPaths({DataFile("nccl_transport.log")});
  auto transport = EventsOf(run, HangEventKind::kTransportError);
  ASSERT_EQ(transport.size(), 4u);
  EXPECT_EQ(transport[0].host, "kp-ddp-worker-0");
  EXPECT_EQ(transport[0].peer, "10.216.210.236<54862>");
  EXPECT_EQ(transport[0].error_code, 12);
  EXPECT_EQ(transport[1].error_code, 4);
  EXPECT_EQ(transport[2].peer, "");
  EXPECT_EQ(transport[2].error_code, 12);
  EXPECT_EQ(transport[3].peer, "10.200.84.247<58355>");
  auto remote = EventsOf(run, HangEventKind::kRemoteError);
  ASSERT_EQ(remote.size(), 3u);
  EXPECT_EQ(remote[1].peer, "11.214.147.122<39138>");
  EXPECT_EQ(remote[1].error_code, 12);
}

TEST(HangLogFiles, GlooLinesNameThePeer) {
  laggard::Run run = IngestPaths({DataFile("gloo.log")});
  ASSERT_EQ(run.hang.events.size(), 5u);
  EXPECT_EQ(run.hang.events[0].peer, "18.25.6.30:28048");
  EXPECT_EQ(run.hang.events[2].peer, "192.168.70.92:25266");
  EXPECT_EQ(run.hang.events[4].timeout_ms, 1800000.0);
}

TEST(HangLogFiles, TorchrunFailureTableGivesOneEventPerFailedProcess) {
  laggard::Run run = IngestPaths({DataFile("torchrun_failure.log")});
  auto exited = EventsOf(run, HangEventKind::kProcessExited);
  ASSERT_EQ(exited.size(), 5u);
  EXPECT_EQ(exited[0].exit_code, -6);
  EXPECT_EQ(exited[0].local_rank, 0);
  EXPECT_FALSE(exited[0].rank.has_value());  // local rank only
  EXPECT_EQ(exited[1].exit_code, 1);
  EXPECT_TRUE(exited[2].text.find("ChildFailedError") != std::string::npos);
  EXPECT_EQ(exited[3].rank, 1);
  EXPECT_EQ(exited[3].local_rank, 1);
  EXPECT_EQ(exited[3].host, "neptun.informatik.uni-kl.de");
  EXPECT_EQ(exited[3].exit_code, -6);
  EXPECT_EQ(exited[4].rank, 0);
  EXPECT_EQ(exited[4].host, "gpt-dev-ppt");
}

TEST(HangLogFiles, StepLogKeepsItsStepsAndItsHangLines) {
  laggard::Run run = IngestPaths({DataFile("mixed_steps.log")});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "text-log");
  EXPECT_EQ(run.total_steps(), 3u);
  EXPECT_EQ(run.hang.events.size(), 2u);
  EXPECT_EQ(run.files[0].records, 5u);
}

TEST(HangLogFiles, NcclDebugLogKeepsNcclFactsStepsAndHangLinesOnce) {
  laggard::Run run = IngestPaths({DataFile("mixed_nccl_debug.log")});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "nccl-debug");
  EXPECT_EQ(run.network.nccl_ranks.size(), 1u);
  EXPECT_EQ(run.total_steps(), 2u);
  ASSERT_EQ(run.hang.events.size(), 2u);  // read in the NCCL pass, not again with the steps
  EXPECT_EQ(run.hang.events[0].kind, HangEventKind::kTransportError);
  EXPECT_EQ(run.hang.events[1].kind, HangEventKind::kWatchdogTimeout);
  EXPECT_EQ(run.hang.events[1].rank, 4);
}

TEST(HangLogFiles, PagerPromptAtTheEndMarksTheLogTruncated) {
  laggard::Run run = IngestPaths({DataFile("pager_cut.log")});
  ASSERT_EQ(run.hang.logs.size(), 1u);
  EXPECT_TRUE(run.hang.logs[0].truncated);
  EXPECT_EQ(run.hang.events.size(), 2u);
}

TEST(HangLogFiles, LogEndingInsideAHangLineIsTruncated) {
  TempDir dir;
  std::string path = WriteFile(
      dir.File("rank-2.log"),
      "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 "
      "milliseconds before timing out.\n"
      "[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=469508, OpTy");
  laggard::Run run = IngestPaths({path});
  ASSERT_EQ(run.hang.logs.size(), 1u);
  EXPECT_TRUE(run.hang.logs[0].truncated);
  ASSERT_EQ(run.hang.events.size(), 2u);
  // No global rank in the line: the path's.
  EXPECT_EQ(run.hang.events[0].rank, 2);
  EXPECT_EQ(run.hang.events[0].group_rank, 1);
}

// nccl#1710's paste, cut inside its NET/IB line before the status: the cut
// is counted, the half line is no evidence.
TEST(HangLogFiles, NcclLineCutBeforeItsStatusIsNoEvent) {
  TempDir dir;
  std::string path = WriteFile(
      dir.File("node.log"),
      "node201:127799:127863 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async "
      "event : local access violation work queue error\n"
      "node023:10214:10303 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from "
      "peer 10.1.3.201<33057> wi");
  laggard::Run run = IngestPaths({path});
  ASSERT_EQ(run.hang.logs.size(), 1u);
  EXPECT_TRUE(run.hang.logs[0].truncated);
  ASSERT_EQ(run.hang.events.size(), 1u);
  EXPECT_EQ(run.hang.events[0].kind, HangEventKind::kNicEvent);
}

// Real lines pasted in public issues (tests/data/hangs/pasted/ on main
// names each source): the forms torch's fr_trace, the dump-signal path
// and NCCL's WARN lines print, and the wrappers a paste adds.

Run IngestLines(const std::string& name, const std::string& text) {
  TempDir dir;
  return IngestPaths({WriteFile(dir.File(name), text)});
}

// pytorch#140563: fr_trace's output, cut mid-sentence by the paste.
constexpr const char* kFrTraceCut =
    "Collective 39 at entry 38 errors\n"
    "group info: 0:default_pg\n"
    "collective: nccl:all_reduce\n"
    "input sizes: [[1025]]\n"
    "output sizes: [[1025]]\n"
    "world size: 4\n"
    "expected ranks: {0, 1, 2, 3}\n"
    "collective state: scheduled\n"
    "error msg: Culprit rank 22; Error type: SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: "
    "'[[1025]]' does not match found input sizes: '[[262144]]', Culprit rank 110; Error type: "
    "SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: '[[1025]]' does not match found";

TEST(FrTraceBlocks, CutMismatchBlockKeepsWhatIsCompleteAndMarksTheLogTruncated) {
  laggard::Run run = IngestLines("fr_trace.log", kFrTraceCut);
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "hang-log");
  ASSERT_EQ(run.hang.events.size(), 1u);
  const HangEvent& e = run.hang.events[0];
  EXPECT_EQ(e.kind, HangEventKind::kFrTraceMismatch);
  EXPECT_EQ(e.seq, 39);
  EXPECT_EQ(e.pg_id, "0");
  EXPECT_EQ(e.pg_desc, "default_pg");
  EXPECT_EQ(e.op, "nccl:all_reduce");
  EXPECT_EQ(e.ranks_named, (std::vector<int32_t>{22, 110}));
  EXPECT_EQ(e.detail,
            "SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: '[[1025]]' does not match found "
            "input sizes: '[[262144]]' (and 1 more)");
  EXPECT_FALSE(e.rank.has_value());  // about the job, not one rank
  EXPECT_EQ(e.src.line, 1u);
  ASSERT_EQ(run.hang.groups.size(), 1u);
  EXPECT_EQ(run.hang.groups[0].id, "0");
  EXPECT_TRUE(run.hang.groups[0].whole_world);
  EXPECT_EQ(run.hang.groups[0].ranks, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(run.hang.groups[0].size, 4);
  ASSERT_EQ(run.hang.logs.size(), 1u);
  EXPECT_TRUE(run.hang.logs[0].truncated);
}

TEST(FrTraceBlocks, WholeMismatchBlockIsNotTruncated) {
  laggard::Run run = IngestLines(
      "fr_trace.log",
      "Collective 39 at entry 38 errors\n"
      "group info: 0:default_pg\n"
      "collective: nccl:all_reduce\n"
      "error msg: Culprit rank 22; Error type: SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: "
      "'[[1025]]' does not match found input sizes: '[[262144]]'\n");
  ASSERT_EQ(run.hang.events.size(), 1u);
  EXPECT_EQ(run.hang.events[0].ranks_named, (std::vector<int32_t>{22}));
  ASSERT_EQ(run.hang.logs.size(), 1u);
  EXPECT_FALSE(run.hang.logs[0].truncated);
}

TEST(FrTraceBlocks, NotJoinedBlocksNameTheMissingRanks) {
  // torch's fr_trace docs (2.6+) and its newest wording, one after the other.
  laggard::Run run = IngestLines(
      "fr_trace.log",
      "Not all ranks joining collective 5 at entry 4\n"
      "group info: 0:default_pg\n"
      "collective: nccl:all_reduce\n"
      "missing ranks: {1}\n"
      "input sizes: [[3, 4]]\n"
      "output sizes: [[3, 4]]\n"
      "expected ranks: 2\n"
      "collective state: scheduled\n"
      "collective stack trace:\n"
      "    all_reduce at /home/cpio/local/pytorch/torch/distributed/distributed_c10d.py:2696\n"
      "Not all ranks joining collective, sequence number: 4\n"
      "collective: nccl:all_reduce\n"
      "missing ranks: {1, 3}\n"
      "collective state: scheduled\n");
  auto joined = EventsOf(run, HangEventKind::kFrTraceNotJoined);
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_EQ(joined[0].seq, 5);
  EXPECT_EQ(joined[0].ranks_named, (std::vector<int32_t>{1}));
  EXPECT_EQ(joined[0].pg_desc, "default_pg");
  EXPECT_EQ(joined[1].seq, 4);
  EXPECT_EQ(joined[1].ranks_named, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(joined[1].src.line, 11u);
  ASSERT_EQ(run.hang.groups.size(), 1u);
  EXPECT_EQ(run.hang.groups[0].size, 2);
  EXPECT_FALSE(run.hang.logs.at(0).truncated);
}

TEST(FrTraceBlocks, Torch25OneLineForm) {
  HangEvent e = Parse(
      "Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  "
      "Missing ranks are {1, 2}");
  EXPECT_EQ(e.kind, HangEventKind::kFrTraceNotJoined);
  EXPECT_EQ(e.pg_id, "0");
  EXPECT_EQ(e.pg_desc, "default_pg");
  EXPECT_EQ(e.op, "nccl:all_reduce");
  EXPECT_EQ(e.ranks_named, (std::vector<int32_t>{1, 2}));
}

TEST(DumpSignalLines, ReceivedSignalGivesOwnProgressAndTheFirstTimedOutRank) {
  // OpenRLHF#1126.
  HangEvent e = Parse(
      "[rank2]:[E901 05:20:03.118859045 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID "
      "0(default_pg) Rank 2] Received a dump signal due to a collective timeout from  rank 6 "
      "and we will try our best to dump the debug info. Last enqueued NCCL work: 460631, last "
      "completed NCCL work: 460630.This is most likely caused by incorrect usages of "
      "collectives, e.g., wrong sizes used across ranks");
  EXPECT_EQ(e.kind, HangEventKind::kDumpSignal);
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.group_rank, 2);
  EXPECT_EQ(e.pg_id, "0");
  EXPECT_EQ(e.pg_guid, "0");
  EXPECT_EQ(e.pg_desc, "default_pg");
  EXPECT_EQ(e.last_enqueued, 460631);
  EXPECT_EQ(e.last_completed, 460630);
  EXPECT_EQ(e.ranks_named, (std::vector<int32_t>{6}));
}

TEST(DumpSignalLines, ObservedSignalNamesOnlyThePrintingRank) {
  // prime-rl#3186.
  HangEvent e = Parse(
      "[rank0]:[E804 23:05:54.816499929 ProcessGroupNCCL.cpp:1849] [PG ID 0 PG GUID "
      "0(default_pg) Rank 0] Observed flight recorder dump signal from another rank via "
      "TCPStore.");
  EXPECT_EQ(e.kind, HangEventKind::kDumpSignal);
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.pg_desc, "default_pg");
  EXPECT_TRUE(e.ranks_named.empty());
  EXPECT_FALSE(e.last_enqueued.has_value());
}

TEST(NcclWarnLines, AsyncEventIsTheReportingHostsNic) {
  // nccl#1710, as pasted: a Markdown quote with autolinks.
  HangEvent e = Parse(
      "> node201:127799:127863 [0] transport/[net_ib.cc:101](http://net_ib.cc:101/) NCCL WARN "
      "NET/IB : mlx5_0:1 Got async event : local access violation work queue error");
  EXPECT_EQ(e.kind, HangEventKind::kNicEvent);
  EXPECT_EQ(e.host, "node201");
  EXPECT_EQ(e.pid, 127799);
  EXPECT_EQ(e.peer, "mlx5_0:1");
  EXPECT_EQ(e.detail, "local access violation work queue error");
  EXPECT_TRUE(StartsWith(e.text, "> node201"));  // the line as written
}

TEST(NcclWarnLines, MarkdownAutolinksAroundThePeerAreUnwrapped) {
  HangEvent e = Parse(
      "> node023:10214:10303 [0] transport/[net_ib.cc:1909](http://net_ib.cc:1909/) NCCL WARN "
      "NET/IB : Got completion from peer [10.1.3.201](http://10.1.3.201/)<33057> with status=9 "
      "opcode=0 len=0 vendor err 138 (Send) localGid ::ffff:[10.206.1.23](http://10.206.1.23/)");
  EXPECT_EQ(e.kind, HangEventKind::kTransportError);
  EXPECT_EQ(e.host, "node023");
  EXPECT_EQ(e.peer, "10.1.3.201<33057>");
  EXPECT_EQ(e.error_code, 9);
}

TEST(NcclWarnLines, NetSizeMismatchNamesBothSizes) {
  // nccl#969, behind pdsh's address prefix.
  HangEvent e = Parse(
      "10.10.23.10: so-ucloud-10-10-23-10:1307367:1307586 [0] transport/net_ib.cc:1038 NCCL "
      "WARN NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size "
      "496640 remote size 65536");
  EXPECT_EQ(e.kind, HangEventKind::kNetSizeMismatch);
  EXPECT_EQ(e.host, "so-ucloud-10-10-23-10");
  EXPECT_EQ(e.peer, "10.10.23.6<58683>");
  EXPECT_EQ(e.detail, "local size 496640 remote size 65536");
  bool cut = false;
  auto partial = ParseHangLine(
      "so-ucloud-10-10-23-10:1307367:1307586 [0] transport/net_ib.cc:1038 NCCL WARN NET/IB : "
      "req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size 496640 remo",
      &cut);
  ASSERT_TRUE(partial.has_value());
  EXPECT_TRUE(cut);
}

TEST(NcclWarnLines, CudaFailureBehindAnOpenMpiTagTakesTheMpiRank) {
  // nccl#957: mpirun --timestamp-output --tag-output.
  HangEvent e = Parse(
      "Fri Aug 11 12:31:45 2023[1,3]<stdout>:tomte401:1850304:1881110 [3] transport.cc:154 NCCL "
      "WARN Cuda failure 'invalid argument'");
  EXPECT_EQ(e.kind, HangEventKind::kCudaError);
  EXPECT_EQ(e.detail, "invalid argument");
  EXPECT_EQ(e.host, "tomte401");
  EXPECT_EQ(e.pid, 1850304);
  EXPECT_EQ(e.rank, 3);
  // nccl#1485: teardown keeps its words; the detector tells it apart.
  HangEvent down = Parse(
      "node2:24881:25569 [32707] include/alloc.h:243 NCCL WARN Cuda failure 'driver shutting "
      "down'");
  EXPECT_EQ(down.kind, HangEventKind::kCudaError);
  EXPECT_EQ(down.detail, "driver shutting down");
  EXPECT_EQ(down.host, "node2");
  EXPECT_FALSE(down.rank.has_value());
}

TEST(NcclWarnLines, FailedVerbsCallNamesTheFunction) {
  // nccl#562.
  HangEvent e = Parse(
      "hai-a100-3:3778851:3779883 [4] ibvwrap.c:130 NCCL WARN Call to "
      "ibv_create_qp failed");
  EXPECT_EQ(e.kind, HangEventKind::kVerbsError);
  EXPECT_EQ(e.detail, "ibv_create_qp");
  EXPECT_EQ(e.host, "hai-a100-3");
  HangEvent with = Parse(
      "node1:12:13 [0] NCCL WARN Call to ibv_modify_qp failed with error "
      "Connection timed out");
  EXPECT_EQ(with.kind, HangEventKind::kVerbsError);
  EXPECT_EQ(with.detail, "ibv_modify_qp with error Connection timed out");
  // ibv_poll_cq stays a transport error.
  EXPECT_EQ(
      Parse("node1:12:13 [0] NCCL WARN NET/IB : Call to ibv_poll_cq failed with error 12").kind,
      HangEventKind::kTransportError);
}

TEST(NcclWarnLines, BacktickBeforeTheHostIsNotPartOfIt) {
  // DeepSpeed#6875: the comment opens with a stray Markdown backtick.
  HangEvent e = Parse(
      "`50428e4af543:34610:36821 [4] ib_plugin.c:1673 NCCL WARN NET/IB: Got completion from "
      "peer 10.0.1.23<47140> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca ibp152s0");
  EXPECT_EQ(e.kind, HangEventKind::kTransportError);
  EXPECT_EQ(e.host, "50428e4af543");
  EXPECT_EQ(e.error_code, 12);
}

TEST(NcclWarnLines, LastErrorRepeatingAPrefixedLineIsNotASecondEvent) {
  // DeepSpeed#6875: torch's exception quotes NCCL's last WARN line.
  laggard::Run run = IngestLines(
      "ds.log",
      "`50428e4af543:34610:36821 [4] ib_plugin.c:1673 NCCL WARN NET/IB: Got completion from "
      "peer 10.0.1.23<47140> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca ibp152s0\n"
      "50428e4af543:34610:36821 [4] NCCL INFO transport/net.cc:1314 -> 6\n"
      "50428e4af543:34610:36821 [4] NCCL INFO proxy.cc:638 -> 6\n"
      "50428e4af543:34610:36821 [4] ib_plugin.c:1673 NCCL WARN NET/IB: Got completion from "
      "peer 10.0.1.23<34696> with status=5 opcode=0 len=0 vendor err 249 (Recv) hca ibp152s0\n"
      "Last error:\n"
      "NET/IB: Got completion from peer 10.0.1.23<34696> with status=5 opcode=0 len=0 vendor "
      "err 249 (Recv) hca ibp152s0\n"
      "NET/IB: Got completion from peer 10.0.1.99<1> with status=12 opcode=0 len=0 vendor "
      "err 129 (Recv) hca ibp152s0\n");
  auto transport = EventsOf(run, HangEventKind::kTransportError);
  ASSERT_EQ(transport.size(), 3u);  // the repeat is dropped, the new peer kept
  EXPECT_EQ(transport[0].host, "50428e4af543");
  EXPECT_EQ(transport[1].host, "50428e4af543");
  EXPECT_EQ(transport[2].peer, "10.0.1.99<1>");
  ASSERT_EQ(run.network.nccl_ranks.size(), 1u);  // one process, not two hosts
  EXPECT_EQ(run.network.nccl_ranks[0].host, "50428e4af543");
}

TEST(NcclWarnLines, DeviceNumberNoDeviceHasKeysTheLineByHostAndPid) {
  // nccl#1485: the proxy thread prints garbage in the device slot.
  laggard::Run run = IngestLines(
      "nccl.log",
      "node2:24881:25569 [959657526] proxy.cc:1519 NCCL WARN [Proxy Service 3] Failed to "
      "execute operation Setup from rank 3, retcode 1\n"
      "node2:24881:25569 [32707] include/alloc.h:243 NCCL WARN Cuda failure 'driver shutting "
      "down'\n"
      "node2:24881:25569 [32691] include/alloc.h:243 NCCL WARN Cuda failure 'driver shutting "
      "down'\n"
      "node2:24881:25568 [0] include/alloc.h:250 NCCL WARN Cuda failure 'driver shutting "
      "down'\n");
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "nccl-debug");
  ASSERT_EQ(run.network.nccl_ranks.size(), 2u);
  for (const NcclRankInfo& r : run.network.nccl_ranks) {
    EXPECT_EQ(r.host, "node2");
    EXPECT_EQ(r.pid, 24881);
    EXPECT_TRUE(!r.cuda_device || *r.cuda_device == 0);
  }
  EXPECT_EQ(EventsOf(run, HangEventKind::kCudaError).size(), 3u);
}

// The held-out set's forms (tests/data/hangs/pasted/README.md).

TEST(HeldOutLines, RayPrefixBeforeTheRankPrefixIsSkipped) {
  // NeMo-RL#2140: "[rank=31]" in Ray's actor tag is not the prefix.
  HangEvent e = Parse(
      "(MegatronPolicyWorker[rank=97] pid=3421713, ip=10.1.2.206) [rank97]:[E323 "
      "05:14:22.969036376 ProcessGroupNCCL.cpp:683] [Rank 6] Watchdog caught collective "
      "operation timeout: WorkNCCL(SeqNum=1, OpType=COALESCED, NumelIn=0, NumelOut=0, "
      "Timeout(ms)=600000) ran for 651421 milliseconds before timing out.");
  EXPECT_EQ(e.kind, HangEventKind::kWatchdogTimeout);
  EXPECT_EQ(e.rank, 97);
  EXPECT_EQ(e.group_rank, 6);
}

TEST(HeldOutLines, FrTraceRecordIdFieldKeepsTheBlockOpen) {
  // pytorch#140969's report: "internal record id" between the header and
  // the missing ranks.
  laggard::Run run = IngestLines("fr.log",
                                 "Not all ranks joining collective: sequence number: 31117\n"
                                 "internal record id: 31116\n"
                                 "group info: 0:default_pg\n"
                                 "collective: nccl:all_reduce\n"
                                 "missing ranks: {3, 4, 5, 6, 7}\n"
                                 "world size: 8\n"
                                 "expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}\n"
                                 "collective state: scheduled\n");
  ASSERT_EQ(run.hang.events.size(), 1u);
  const HangEvent& e = run.hang.events[0];
  EXPECT_EQ(e.kind, HangEventKind::kFrTraceNotJoined);
  EXPECT_EQ(e.seq, 31117);
  EXPECT_EQ(e.ranks_named, (std::vector<int32_t>{3, 4, 5, 6, 7}));
}

TEST(HeldOutLines, SocketSendWithoutPidTakesTheHostBeforeTheDevice) {
  // nccl#1920: a container logger's time stamp, then "host [dev]".
  HangEvent e = Parse(
      "2025-11-24T03:20:21.001125857Z [2025-11-24 11:20:21] gpu-server320 [5] "
      "misc/socket.cc:46 NCCL WARN socketProgressOpt: Call to send to 10.44.137.149<52905> "
      "failed : Connection reset by peer");
  EXPECT_EQ(e.kind, HangEventKind::kTransportError);
  EXPECT_EQ(e.host, "gpu-server320");
  EXPECT_EQ(e.peer, "10.44.137.149<52905>");
}

TEST(HeldOutLines, MonitoredBarrierOnRankZeroNamesTheRanksThatNeverEntered) {
  HangEvent e =
      Parse("RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms");
  EXPECT_EQ(e.kind, HangEventKind::kDesyncReport);
  EXPECT_EQ(e.ranks_named, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(e.timeout_ms, 30000.0);
}

TEST(HeldOutLines, MonitoredBarrierSendTimeoutNamesThePeerARecvTimeoutDoesNot) {
  // trl#2923: rank 3's send to rank 0 timed out: rank 0 never entered.
  const std::string barrier =
      "[rank3]: RuntimeError: Rank 3 successfully reached monitoredBarrier, but received errors "
      "while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
      "[rank3]:  Original exception: \n";
  laggard::Run send = IngestLines(
      "send.log", barrier +
                      "[rank3]: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] "
                      "Timed out waiting 600000ms for send operation to complete\n");
  ASSERT_EQ(send.hang.events.size(), 2u);
  EXPECT_EQ(send.hang.events[0].kind, HangEventKind::kDesyncReport);
  EXPECT_EQ(send.hang.events[0].ranks_named, (std::vector<int32_t>{0}));
  laggard::Run recv = IngestLines(
      "recv.log", barrier +
                      "[rank3]: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
                      "Timed out waiting 600000ms for recv operation to complete\n");
  ASSERT_EQ(recv.hang.events.size(), 2u);
  EXPECT_EQ(recv.hang.events[0].kind, HangEventKind::kGlooTimeout);
  EXPECT_TRUE(recv.hang.events[0].ranks_named.empty());
}

}  // namespace
}  // namespace laggard
