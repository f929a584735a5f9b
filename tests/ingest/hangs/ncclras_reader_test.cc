// The NCCL RAS status-report reader (ingest/hangs/ncclras_reader.cc): NCCL's
// own samples (tests/data/hangs/ncclras/README.md says which lines come from
// where), reports built from the printing code for the forms no sample
// shows, that it claims no other format's file, and a corruption suite
// (every bad line counted with its line number, nothing crashes).

#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/common/sniff.h"
#include "ingest/hangs/hang_readers.h"
#include "ingest/readers.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

std::string DataFile(const std::string& name) {
  return std::string(LAGGARD_SOURCE_DIR) + "/tests/data/hangs/ncclras/" + name;
}

Run Ingest1(const std::string& path) { return IngestPaths({path}); }

Run IngestText(const std::string& text) {
  TempDir dir;
  return IngestPaths({WriteFile(dir.File("ras.txt"), text)});
}

std::vector<uint64_t> Lines(const Run& run, DiagCode c) {
  std::vector<uint64_t> out;
  for (const DiagExample& e : run.diagnostics.examples(c)) out.push_back(e.line);
  return out;
}

TEST(NcclRasReader, DocsHealthyReportGivesTheJobSummaryAndOneTableRow) {
  laggard::Run run = Ingest1(DataFile("docs_healthy.txt"));
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "ncclras");
  ASSERT_EQ(run.hang.ras.size(), 1u);
  const RasReport& r = run.hang.ras[0];
  EXPECT_EQ(r.nodes, 4);
  EXPECT_EQ(r.processes, 32);
  EXPECT_EQ(r.gpus, 32);
  ASSERT_EQ(r.comm_groups.size(), 1u);
  EXPECT_EQ(r.comm_groups[0].comms, 8);
  EXPECT_EQ(r.comm_groups[0].ranks_per_comm, 4);
  EXPECT_EQ(r.comm_groups[0].ranks_in_group, 32);
  EXPECT_EQ(r.comm_groups[0].status, "RUNNING");
  EXPECT_EQ(r.comm_groups[0].errors, "OK");
  EXPECT_EQ(r.comm_groups[0].src.line, 13u);
  EXPECT_TRUE(r.comms.empty());
  // The docs' excerpt stops before Errors / Warnings: said, not hidden.
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHangRasTruncated), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHangRasBadLine), 0u);
}

TEST(NcclRasReader, DocsMismatchGivesTheCountsAndTheRanksBehind) {
  laggard::Run run = Ingest1(DataFile("docs_mismatch.txt"));
  ASSERT_EQ(run.hang.ras.size(), 1u);
  const RasReport& r = run.hang.ras[0];
  ASSERT_EQ(r.comms.size(), 1u);
  const RasCommunicator& c = r.comms[0];
  EXPECT_EQ(c.id, "#0-0");
  EXPECT_EQ(c.hash, "27a079b828ff1a75");
  EXPECT_EQ(c.problems, (std::vector<std::string>{"MISMATCH"}));
  ASSERT_EQ(c.op_counts.size(), 2u);
  EXPECT_EQ(c.op_counts[0].op, "collective");
  EXPECT_EQ(c.op_counts[0].ops_launched, 6650);
  EXPECT_EQ(c.op_counts[0].ranks, 26);
  EXPECT_EQ(c.op_counts[1].ops_launched, 6649);
  EXPECT_EQ(c.op_counts[1].ranks, 6);
  ASSERT_EQ(c.ranks.size(), 6u);
  for (const RasRank& k : c.ranks) {
    EXPECT_EQ(k.issue, RasRankIssue::kOpCount);
    EXPECT_EQ(k.ops_launched, 6649) << k.comm_rank;  // the count line above them
    EXPECT_EQ(k.node, "172.16.64.210");
  }
  EXPECT_EQ(c.ranks[5].comm_rank, 7);
  EXPECT_EQ(c.ranks[5].gpu, 7);
  EXPECT_EQ(c.ranks[5].pid, 483079);
  EXPECT_EQ(c.ranks[5].src.line, 17u);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NcclRasReader, DocsStatusMismatchNamesUnknownRunningAndFinalizeRanks) {
  laggard::Run run = Ingest1(DataFile("docs_finalize.txt"));
  ASSERT_EQ(run.hang.ras.size(), 1u);
  const RasReport& r = run.hang.ras[0];
  ASSERT_EQ(r.comm_groups.size(), 3u);
  EXPECT_EQ(r.comm_groups[0].ranks_per_node, "1-2");
  EXPECT_EQ(r.comm_groups[0].status, "FINALIZE");
  EXPECT_EQ(r.comm_groups[2].status, "INIT");
  ASSERT_EQ(r.comms.size(), 1u);
  const RasCommunicator& c = r.comms[0];
  ASSERT_EQ(c.ranks.size(), 6u);
  EXPECT_EQ(c.ranks[0].issue, RasRankIssue::kStatus);
  EXPECT_EQ(c.ranks[0].status, "RUNNING");
  EXPECT_EQ(c.ranks[3].comm_rank, 24);
  EXPECT_EQ(c.ranks[4].status, "FINALIZE");
  EXPECT_EQ(c.ranks[4].comm_rank, 4);
  // The docs' "[...]" elision is no RAS line: counted where it is.
  EXPECT_EQ(Lines(run, DiagCode::kHangRasBadLine), (std::vector<uint64_t>{7}));
}

TEST(NcclRasReader, DocsIncompleteGivesTheMissingProcessRankAndTimeouts) {
  laggard::Run run = Ingest1(DataFile("docs_incomplete.txt"));
  ASSERT_EQ(run.hang.ras.size(), 1u);
  const RasReport& r = run.hang.ras[0];
  EXPECT_EQ(r.processes_missing, 1);
  ASSERT_EQ(r.processes_lost.size(), 1u);
  EXPECT_EQ(r.processes_lost[0].pid, 3487984);
  EXPECT_EQ(r.processes_lost[0].node, "172.16.64.213");
  EXPECT_EQ(r.processes_lost[0].gpus, (std::vector<int32_t>{5}));
  EXPECT_FALSE(r.processes_lost[0].dead);
  ASSERT_EQ(r.comms.size(), 1u);
  EXPECT_EQ(r.comms[0].ranks_missing, 1);
  ASSERT_EQ(r.comms[0].ranks.size(), 1u);
  EXPECT_EQ(r.comms[0].ranks[0].comm_rank, 21);
  EXPECT_EQ(r.comms[0].ranks[0].issue, RasRankIssue::kMissing);
  EXPECT_EQ(r.timeouts, 2);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NcclRasReader, RealExampleReportsReadWholeWithBannerAndPrompt) {
  laggard::Run run = Ingest1(DataFile("example_healthy.txt"));
  ASSERT_EQ(run.hang.ras.size(), 1u);
  EXPECT_EQ(run.hang.ras[0].nccl_version, "2.30.7");
  EXPECT_EQ(run.hang.ras[0].processes, 8);
  EXPECT_EQ(run.hang.ras[0].src.line, 2u);  // the "$ ncclras -v" prompt is not the report's
  EXPECT_TRUE(run.hang.ras[0].complete);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHangRasTruncated), 0u);

  laggard::Run exited = Ingest1(DataFile("example_exit_incomplete.txt"));
  ASSERT_EQ(exited.hang.ras.size(), 1u);
  const RasCommunicator& c = exited.hang.ras[0].comms.at(0);
  ASSERT_EQ(c.ranks.size(), 1u);
  EXPECT_EQ(c.ranks[0].comm_rank, 7);
  EXPECT_EQ(c.ranks[0].issue, RasRankIssue::kMissing);
  EXPECT_EQ(c.ranks[0].pid, 3748990);
  EXPECT_EQ(c.ranks[0].node, "node1");
  EXPECT_EQ(exited.hang.ras[0].comm_groups.at(0).ranks_per_node, "3-4");

  laggard::Run dead = Ingest1(DataFile("example_exit_dead.txt"));
  ASSERT_EQ(dead.hang.ras.size(), 1u);
  EXPECT_TRUE(dead.hang.ras[0].no_comms);
  EXPECT_EQ(dead.hang.ras[0].processes_dead, 1);
  ASSERT_EQ(dead.hang.ras[0].processes_lost.size(), 1u);
  EXPECT_TRUE(dead.hang.ras[0].processes_lost[0].dead);

  laggard::Run sleep = Ingest1(DataFile("example_sleep_mismatch.txt"));
  const RasCommunicator& s = sleep.hang.ras.at(0).comms.at(0);
  EXPECT_EQ(s.op_counts.at(0).op, "AllReduce");
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_EQ(s.ranks[0].ops_launched, 60);
  EXPECT_EQ(s.ranks[0].op, "AllReduce");
}

TEST(NcclRasReader, TwoQueriesInOneFileAreTwoReports) {
  laggard::Run run = Ingest1(DataFile("constructed_behind_two_queries.txt"));
  ASSERT_EQ(run.hang.ras.size(), 2u);
  EXPECT_EQ(run.hang.ras[0].nccl_version, "2.27.3");
  EXPECT_EQ(run.hang.ras[1].src.line, run.hang.ras[0].src.line + 28);
  for (const RasReport& r : run.hang.ras) {
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.comms.at(0).ranks.at(0).comm_rank, 5);
  }
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NcclRasReader, ErrorSectionNamesTheRankAndItsError) {
  laggard::Run run = Ingest1(DataFile("constructed_async_error.txt"));
  const RasCommunicator& c = run.hang.ras.at(0).comms.at(0);
  EXPECT_EQ(c.problems, (std::vector<std::string>{"ERROR"}));
  ASSERT_EQ(c.ranks.size(), 1u);
  EXPECT_EQ(c.ranks[0].issue, RasRankIssue::kError);
  EXPECT_EQ(c.ranks[0].error, "Remote process error");
  EXPECT_EQ(c.ranks[0].node, "10.0.0.11");
  EXPECT_EQ(run.hang.ras[0].comm_groups.size(), 2u);
}

TEST(NcclRasReader, OldMissingRankListAndCutQuery) {
  laggard::Run run = Ingest1(DataFile("constructed_v2.24_cut.txt"));
  const RasReport& r = run.hang.ras.at(0);
  EXPECT_EQ(r.processes_lost.at(0).gpus, (std::vector<int32_t>{2, 3}));
  const RasCommunicator& c = r.comms.at(0);
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_EQ(c.ranks[0].comm_rank, 6);
  EXPECT_EQ(c.ranks[1].comm_rank, 7);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHangRasTruncated), 1u);
}

TEST(NcclRasReader, SniffClaimsOnlyRasReports) {
  auto reader = MakeNcclRasReader();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::string(LAGGARD_SOURCE_DIR) + "/tests/data")) {
    if (!entry.is_regular_file()) continue;
    std::string path = entry.path().string();
    std::string head = testing_util::ReadFile(path).substr(0, kSniffBytes);
    int score = reader->Sniff(head);
    // RAS reports: the catalogue's, and the ones pasted in issue threads.
    if (path.find("/hangs/ncclras/") != std::string::npos ||
        path.find("/hangs/pasted/ras_") != std::string::npos) {
      if (EndsWith(path, ".txt")) {
        EXPECT_GE(score, kSniffSure) << path;
      }
    } else {
      EXPECT_EQ(score, kSniffNo) << path;
    }
  }
}

TEST(NcclRasReader, DamagedLinesAreCountedWhereTheyAreAndTheRestIsRead) {
  std::string text =
      "Communicators... (0.002s)\n"                                                  // 1
      "=============\n"                                                              // 2
      "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"  // 3
      "    0         1         2         4         8   RUNNING  MISMATCH\n"          // 4 cut row
      "    1         1         2         4         8         8  SLEEPING  OK\n"      // 5 bad status
      "Errors\n"                                                                     // 6
      "======\n"                                                                     // 7
      "INCOMPLETE\n"                                                                 // 8
      "  Missing communicator data from many job processes\n"                        // 9
      "  Process x on node n managing GPU 1\n"                                       // 10
      "  Process 12 on node 10.0.0.1 managing GPU 1\n"                               // 11
      "#0-0 (feed) INCOMPLETE\n"                                                     // 12
      "  Rank -- GPU 3 managed by process 1 on node n\n"                             // 13
      "  Rank 9 -- GPU 3 managed by process on node n\n"                             // 14
      "  The missing ranks: 4,x\n"                                                   // 15
      "Warnings\n"                                                                   // 16
      "========\n"                                                                   // 17
      "#0-0 (feed) MISMATCH\n"                                                       // 18
      "  Communicator ranks have different AllReduce operation counts\n"             // 19
      "  3 ranks have launched up to operation -4\n"                                 // 20
      "  Rank 2 has launched up to operation 99999999999999999999999 -- GPU 1 managed by "
      "process 5 on node n\n"                                                               // 21
      "  Rank 1 has launched up to operation 7 -- GPU 1 managed by process 5 on node n\n";  // 22
  laggard::Run run = IngestText(text);
  ASSERT_EQ(run.hang.ras.size(), 1u);
  EXPECT_EQ(Lines(run, DiagCode::kHangRasBadLine),
            (std::vector<uint64_t>{4, 5, 9, 10, 13}));  // the first five examples
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHangRasBadLine), 9u);
  const RasReport& r = run.hang.ras[0];
  EXPECT_EQ(r.processes_lost.size(), 1u);
  ASSERT_EQ(r.comms.size(), 1u);
  ASSERT_EQ(r.comms[0].ranks.size(), 1u);
  EXPECT_EQ(r.comms[0].ranks[0].comm_rank, 1);
  EXPECT_EQ(r.comms[0].ranks[0].ops_launched, 7);
}

TEST(NcclRasReader, WatchdogLinesPastedUnderTheReportAreHangEventsNotBadLines) {
  // nccl#1730: a periodic RAS query, then rank 118's watchdog lines.
  std::string text =
      "NCCL version 2.26.2 compiled with CUDA 12.4\n"
      "CUDA runtime version 12040, driver version 12040\n"
      "\n"
      "Job summary\n"
      "===========\n"
      "\n"
      "  Nodes  Processes         GPUs  Processes     GPUs\n"
      "(total)   per node  per process    (total)  (total)\n"
      "     32          8            1        256      256\n"
      "\n"
      "Communicators... (0.01s)\n"
      "=============\n"
      "\n"
      "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
      "    #  in group  per comm  per node  per comm  in group\n"
      "    0         1        32         8       256       256   RUNNING      OK\n"
      "\n"
      "Errors\n"
      "======\n"
      "\n"
      "Warnings\n"
      "========\n"
      "\n"
      "[rank118]:[E603 17:48:01.005271823 ProcessGroupNCCL.cpp:632] [Rank 118] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=2398459, OpType=ALLREDUCE, "
      "NumelIn=8652160, NumelOut=8652160, Timeout(ms)=1800000) ran for 1800068 milliseconds "
      "before timing out.\n"
      "[rank118]:[E603 17:48:01.005538748 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID "
      "0(default_pg) Rank 118]  failure detected by watchdog at work sequence id: 2398459 PG "
      "status: last enqueued work: 2398578, last completed work: 2398458\n"
      "not a RAS line and not a hang line\n";
  laggard::Run run = IngestText(text);
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "ncclras");
  ASSERT_EQ(run.hang.ras.size(), 1u);
  EXPECT_TRUE(run.hang.ras[0].complete);
  EXPECT_EQ(run.hang.ras[0].gpus, 256);
  ASSERT_EQ(run.hang.events.size(), 2u);
  EXPECT_EQ(run.hang.events[0].kind, HangEventKind::kWatchdogTimeout);
  EXPECT_EQ(run.hang.events[0].rank, 118);
  EXPECT_EQ(run.hang.events[0].seq, 2398459);
  EXPECT_EQ(run.hang.events[0].src.line, 24u);
  EXPECT_EQ(run.hang.events[1].kind, HangEventKind::kWatchdogException);
  EXPECT_EQ(run.hang.events[1].pg_desc, "default_pg");
  EXPECT_EQ(run.hang.events[1].last_enqueued, 2398578);
  ASSERT_EQ(run.hang.logs.size(), 1u);
  EXPECT_FALSE(run.hang.logs[0].truncated);
  // Only the line neither reads is counted.
  EXPECT_EQ(Lines(run, DiagCode::kHangRasBadLine), (std::vector<uint64_t>{26}));
}

TEST(NcclRasReader, AFileOfRasHeadingsAloneIsUnrecognisedNotSilentlyEmpty) {
  laggard::Run run = IngestText("Job summary\n===========\n\nWarnings\n========\n");
  EXPECT_TRUE(run.hang.ras.size() <= 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kFileUnrecognised), 1u);
}

// Reads `text` with the RAS reader itself, whatever a sniff would say.
uint64_t ReadDirect(const std::string& text, RunBuilder& out) {
  TempDir dir;
  std::string path = WriteFile(dir.File("ras.bin"), text);
  auto source = OpenByteSource(path);
  EXPECT_TRUE(source.ok());
  if (!source.ok()) return 0;
  LineReader lines(**source);
  ReaderContext ctx;
  ctx.path = path;
  ctx.out = &out;
  return MakeNcclRasReader()->Read(lines, ctx);
}

TEST(NcclRasReader, ArbitraryBytesAfterTheBannerNeverCrash) {
  std::string text = "NCCL version 2.28.3 compiled with CUDA 12.9\nErrors\n";
  for (int i = 0; i < 4000; ++i) text += static_cast<char>((i * 7919) % 256);
  text += "\nWarnings\n#\n#-\n#0-\n# ()\n#0-0 () MISMATCH\n  Rank 99999999999 -- GPU\n";
  RunBuilder out;
  uint64_t taken = ReadDirect(text, out);
  EXPECT_EQ(out.hang().ras.size(), 1u);
  EXPECT_GE(taken, 1u);  // the banner
  EXPECT_GT(out.diagnostics().count(DiagCode::kHangRasBadLine), 0u);
}

}  // namespace
}  // namespace laggard
