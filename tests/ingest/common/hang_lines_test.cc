// Hang lines in rank logs (ingest/common/hang_lines.h): each line form on
// the real lines of tests/data/hangs/ (sources in its README and each
// file's comments), the global / group rank split, and how the step-log,
// NCCL_DEBUG and hang-log readers share a log.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

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

}  // namespace
}  // namespace laggard
