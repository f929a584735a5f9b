// The hang detector and the hang verdict: on the Flight Recorder dumps of
// tests/data/hangs (laid out as torch writes them, the 16-rank multi-group
// sets among them), on real watchdog lines, and on small hand-built
// evidence for the classes the files do not hold.

#include "analysis/hangs/hang_detector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "analysis/analyze_run.h"
#include "test_paths.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::IngestAll;
using testing_util::TempDir;
using testing_util::WriteFile;

const std::string kData = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/hangs/";

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

Verdict VerdictOf(const laggard::Run& run, Analyses* a = nullptr) {
  Analyses local = AnalyzeRun(run, AnalysisOptions());
  Verdict v = DecideVerdict(run, local);
  if (a != nullptr) *a = std::move(local);
  return v;
}

// Every rank a finding or a culprit names.
std::set<int32_t> NamedRanks(const HangAnalysis& a, const Verdict& v) {
  std::set<int32_t> named;
  for (const Finding& f : a.findings) {
    named.insert(f.ranks.begin(), f.ranks.end());
    if (f.entity.rank) named.insert(*f.entity.rank);
  }
  for (const Culprit& c : v.culprits) {
    named.insert(c.ranks.begin(), c.ranks.end());
    if (c.entity.rank) named.insert(*c.entity.rank);
  }
  return named;
}

bool AnyEvidenceHas(const Finding& f, const std::string& words) {
  return std::any_of(f.evidence.begin(), f.evidence.end(),
                     [&](const Evidence& e) { return e.text.find(words) != std::string::npos; });
}

TEST(HangDetectorTest, EveryRanksDumpNamesTheRankWhoseHostNeverEnqueued) {
  laggard::Run run = IngestAll(FilesIn(kData + "fr_v2.10"));
  ASSERT_EQ(run.hang.dumps.size(), 4u);
  Analyses a;
  Verdict v = VerdictOf(run, &a);
  ASSERT_FALSE(a.hang.findings.empty());
  const Finding& f = a.hang.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHangHostStopped) << f.message;
  EXPECT_EQ(f.entity.rank, 2);
  EXPECT_NE(f.message.find("#6"), std::string::npos) << f.message;
  EXPECT_EQ(v.status, VerdictStatus::kHang);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].entity.rank, 2);
  EXPECT_EQ(v.culprits[0].cause, "host_stopped");
  EXPECT_EQ(v.culprits[0].cause_class, CauseClass::kHostStall);
  EXPECT_GE(v.culprits[0].confidence, 0.8);  // every member dumped
}

// Two jobs' dumps in the inputs: their groups are never matched together;
// the larger job is analysed and the finding says what was left out.
TEST(HangDetectorTest, DumpsOfTwoJobsAreAnalysedApart) {
  std::vector<std::string> files = FilesIn(kData + "fr_v2.10");
  for (const std::string& f : FilesIn(kData + "fr_multigroup_host_stop")) files.push_back(f);
  laggard::Run run = IngestAll(files);
  ASSERT_EQ(run.hang.dumps.size(), 20u);
  Analyses a;
  Verdict v = VerdictOf(run, &a);
  EXPECT_EQ(a.hang.dump_jobs, 2u);
  ASSERT_FALSE(a.hang.findings.empty());
  const Finding& f = a.hang.findings.front();
  // The 16-rank job's answer, as alone (README): rank 5 alone.
  EXPECT_EQ(f.code, FindingCode::kHangHostStopped) << f.message;
  EXPECT_EQ(f.ranks, (std::vector<int32_t>{5})) << f.message;
  EXPECT_TRUE(AnyEvidenceHas(f, "dumps of 2 jobs")) << f.message;
  EXPECT_TRUE(AnyEvidenceHas(f, "left out: 4 dumps (ranks 0-3, world 4")) << f.message;
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].entity.rank, 5);
  // The 4-rank job analysed apart, as alone: rank 2's host never enqueued.
  auto other = std::find_if(a.hang.findings.begin() + 1, a.hang.findings.end(),
                            [](const Finding& g) { return g.message.starts_with("another job"); });
  ASSERT_NE(other, a.hang.findings.end());
  EXPECT_EQ(other->code, FindingCode::kHangHostStopped) << other->message;
  EXPECT_EQ(other->entity.rank, 2) << other->message;
  EXPECT_NE(other->message.find("ranks 0-3, world 4"), std::string::npos) << other->message;
}

// One world size, every rank dumped twice in two folders: two jobs by place.
TEST(HangDetectorTest, RanksDumpedTwiceInTwoPlacesAreTwoJobs) {
  std::vector<std::string> files = FilesIn(kData + "fr_multigroup_never_completed");
  for (const std::string& f : FilesIn(kData + "fr_multigroup_host_stop")) files.push_back(f);
  laggard::Run run = IngestAll(files);
  Analyses a;
  VerdictOf(run, &a);
  EXPECT_EQ(a.hang.dump_jobs, 2u);
  ASSERT_FALSE(a.hang.findings.empty());
  const Finding& f = a.hang.findings.front();
  // Either job's own answer, never a mix of both.
  if (f.code == FindingCode::kHangHostStopped) {
    EXPECT_EQ(f.ranks, (std::vector<int32_t>{5})) << f.message;
  } else {
    EXPECT_EQ(f.code, FindingCode::kHangStuckCollective) << f.message;
    EXPECT_EQ(f.ranks, (std::vector<int32_t>{6, 7})) << f.message;
  }
  EXPECT_TRUE(AnyEvidenceHas(f, "dumps of 2 jobs")) << f.message;
}

// tests/data/hangs/README.md gives the answers of both multi-group sets.
TEST(HangDetectorTest, MultiGroupDumpsNameTheRankWhoseHostStoppedAndNoHealthyRank) {
  laggard::Run run = IngestAll(FilesIn(kData + "fr_multigroup_host_stop"));
  ASSERT_EQ(run.hang.dumps.size(), 16u);
  Analyses a;
  Verdict v = VerdictOf(run, &a);
  ASSERT_FALSE(a.hang.findings.empty());
  const Finding& f = a.hang.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHangHostStopped) << f.message;
  EXPECT_EQ(f.ranks, (std::vector<int32_t>{5}));
  EXPECT_EQ(f.entity.rank, 5);
  EXPECT_NE(f.message.find("rank 5 stopped issuing collectives"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("its host stopped"), std::string::npos) << f.message;
  EXPECT_TRUE(AnyEvidenceHas(f, "rank 5's last entry's stack")) << f.message;
  EXPECT_EQ(v.status, VerdictStatus::kHang) << v.summary;
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].entity.rank, 5);
  EXPECT_EQ(v.culprits[0].cause_class, CauseClass::kHostStall);
  EXPECT_EQ(v.culprits[0].cause, "host_stopped");
  EXPECT_EQ(NamedRanks(a.hang, v), (std::set<int32_t>{5})) << v.summary;
  ASSERT_FALSE(v.next_steps.empty());
  EXPECT_NE(v.next_steps.front().find("py-spy dump"), std::string::npos) << v.next_steps.front();
  // One description, four groups; one group, two ids.
  std::set<std::vector<int32_t>> data_parallel;
  for (const HangGroupState& g : a.hang.groups) {
    if (g.pg_desc == "DATA_PARALLEL_GROUP") data_parallel.insert(g.members);
    if (g.pg_desc == "EMBEDDING_GROUP" && g.members == std::vector<int32_t>{5, 13}) {
      EXPECT_TRUE(g.matched);
      EXPECT_EQ(g.pg_id, "5 / 4");  // rank 5's process counts it 5th, rank 13's 4th
    }
  }
  EXPECT_EQ(data_parallel, (std::set<std::vector<int32_t>>{
                               {0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(a.hang.dumps_without_config, 0u);
  EXPECT_EQ(a.hang.statuses_unplaced, 7u);  // ranks 1-7's start-up group, out of the buffer
}

TEST(HangDetectorTest, MultiGroupCollectiveEnqueuedEverywhereButNeverCompletedIsGpuOrNetworkSide) {
  laggard::Run run = IngestAll(FilesIn(kData + "fr_multigroup_never_completed"));
  ASSERT_EQ(run.hang.dumps.size(), 16u);
  Analyses a;
  Verdict v = VerdictOf(run, &a);
  ASSERT_FALSE(a.hang.findings.empty());
  const Finding& f = a.hang.findings.front();
  EXPECT_EQ(f.code, FindingCode::kHangStuckCollective) << f.message;
  EXPECT_EQ(f.ranks, (std::vector<int32_t>{6, 7}));
  EXPECT_NE(f.message.find("TENSOR_MODEL_PARALLEL_GROUP, ranks 6, 7"), std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("#45255"), std::string::npos) << f.message;
  // The data-parallel groups queue behind it: their GPUs never started theirs.
  EXPECT_TRUE(AnyEvidenceHas(f, "4 more groups wait in a collective every member enqueued"))
      << f.message;
  EXPECT_EQ(v.status, VerdictStatus::kHang) << v.summary;
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].cause_class, CauseClass::kCommunication);
  EXPECT_EQ(v.culprits[0].cause, "stuck_collective");
  EXPECT_TRUE(v.culprits[0].entity.job);
  std::set<int32_t> named = NamedRanks(a.hang, v);
  for (int32_t r : named) EXPECT_TRUE(r == 6 || r == 7) << "rank " << r << " is healthy";
  EXPECT_TRUE(std::any_of(v.next_steps.begin(), v.next_steps.end(), [](const std::string& s) {
    return s.find("nvidia-smi -q -d ECC,ROW_REMAPPER") != std::string::npos;
  }));
}

TEST(HangDetectorTest, DumpsOfSomeRanksOnlyAreInconclusiveAndBlameNoSilentRank) {
  // Ranks 0 and 1 wait in #6; ranks 2 and 3 gave no dump: that is not
  // evidence that either of them is the one missing.
  laggard::Run run = IngestAll(FilesIn(kData + "fr_v2.3"));
  ASSERT_EQ(run.hang.dumps.size(), 2u);
  Analyses a;
  Verdict v = VerdictOf(run, &a);
  EXPECT_EQ(v.status, VerdictStatus::kInconclusive) << v.summary;
  EXPECT_TRUE(v.culprits.empty());
  ASSERT_FALSE(a.hang.findings.empty());
  EXPECT_EQ(a.hang.findings[0].code, FindingCode::kHangInconclusive);
  EXPECT_NE(a.hang.findings[0].message.find("2, 3 said nothing"), std::string::npos)
      << a.hang.findings[0].message;
  EXPECT_NE(v.next_steps.at(0).find("TORCH_NCCL_DUMP_ON_TIMEOUT"), std::string::npos);
}

// Hand-built evidence: dumps of a 2-rank default group.
FlightRecorderDump Dump(int32_t rank, int64_t enqueued, int64_t completed,
                        const std::string& op = "nccl:all_reduce",
                        std::vector<int64_t> sizes = {1024}) {
  FlightRecorderDump d;
  d.rank = rank;
  d.version = "2.10";
  d.status.push_back({"0", enqueued, enqueued, completed});
  CollectiveRecord e;
  e.pg_id = "0";
  e.collective_seq = completed + 1;
  e.op = op;
  e.input_sizes = {sizes};
  e.state = CollectiveState::kStarted;
  d.entries.push_back(e);
  return d;
}

laggard::Run TwoRankGroup() {
  laggard::Run run;
  ProcessGroupInfo g;
  g.id = "0";
  g.desc = "default_pg";
  g.ranks = {0, 1};
  run.hang.groups.push_back(g);
  return run;
}

// A dump's group as its pg_config and pg_status give it: the id its
// process gave it, its pg_config name, description and ranks, its progress
// and the entry of the collective it is in (or last completed).
void AddGroup(laggard::Run& run, FlightRecorderDump& d, const std::string& id,
              const std::string& name, const std::string& desc, std::vector<int32_t> ranks,
              int64_t enqueued, int64_t completed) {
  ProcessGroupInfo g;
  g.id = name;
  g.desc = desc;
  g.ranks = ranks;
  g.size = static_cast<int32_t>(ranks.size());
  g.src = SourceRef{d.file, 0};
  run.hang.groups.push_back(g);
  d.status.push_back({id, enqueued, enqueued, completed});
  CollectiveRecord e;
  e.pg_id = id;
  e.pg_name = name;
  e.pg_desc = desc;
  e.collective_seq = enqueued;
  e.op = "nccl:all_reduce";
  e.input_sizes = {{1024}};
  e.state = enqueued > completed ? CollectiveState::kStarted : CollectiveState::kCompleted;
  d.entries.push_back(e);
}

FlightRecorderDump BareDump(int32_t rank, uint32_t file) {
  FlightRecorderDump d;
  d.rank = rank;
  d.file = file;
  d.version = "2.10";
  return d;
}

TEST(HangDetectorTest, OneIdOnTwoRanksIsTwoGroupsWhenPgConfigSaysSo) {
  // Rank 1's process made a group of its own first: its "1" is that group,
  // its data-parallel group is its "2". Rank 0's "1" is the data-parallel
  // group. By id, rank 0 would wait in #10 of a group rank 1 completed up
  // to #500: a desync blaming rank 0.
  laggard::Run run;
  FlightRecorderDump d0 = BareDump(0, 0), d1 = BareDump(1, 1);
  AddGroup(run, d0, "1", "5", "DATA_PARALLEL_GROUP", {0, 1}, 10, 9);
  AddGroup(run, d1, "1", "4", "EXPERT_MODEL_PARALLEL_GROUP", {1}, 500, 500);
  AddGroup(run, d1, "2", "5", "DATA_PARALLEL_GROUP", {0, 1}, 9, 9);
  run.hang.dumps.push_back(d0);
  run.hang.dumps.push_back(d1);
  HangAnalysis a = AnalyzeHang(run);
  const HangGroupState* dp = nullptr;
  for (const HangGroupState& g : a.groups) {
    if (g.pg_desc == "DATA_PARALLEL_GROUP") dp = &g;
  }
  ASSERT_NE(dp, nullptr);
  EXPECT_TRUE(dp->matched);
  EXPECT_EQ(dp->pg_id, "1 / 2");
  EXPECT_EQ(dp->ranks.size(), 2u);
  EXPECT_EQ(dp->stuck_seq, 10);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangHostStopped) << a.findings[0].message;
  EXPECT_EQ(a.findings[0].ranks, (std::vector<int32_t>{1}));
}

TEST(HangDetectorTest, ARankWaitingInAnotherGroupIsNeverNamedForBeingBehind) {
  // Rank 1 is behind in group B (ranks 1, 2 went on to #5) only because it
  // waits in group A's #8, which rank 0 never enqueued: rank 0 is named,
  // rank 1 is not.
  laggard::Run run;
  FlightRecorderDump d0 = BareDump(0, 0), d1 = BareDump(1, 1), d2 = BareDump(2, 2);
  AddGroup(run, d0, "1", "1", "A", {0, 1}, 7, 7);
  AddGroup(run, d1, "1", "1", "A", {0, 1}, 8, 7);
  AddGroup(run, d1, "2", "2", "B", {1, 2}, 4, 4);
  AddGroup(run, d2, "1", "2", "B", {1, 2}, 5, 4);
  for (FlightRecorderDump* d : {&d0, &d1, &d2}) run.hang.dumps.push_back(*d);
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangHostStopped) << a.findings[0].message;
  EXPECT_EQ(a.findings[0].ranks, (std::vector<int32_t>{0}));
}

TEST(HangDetectorTest, DumpsWithoutPgConfigAreMatchedByIdAndSaySo) {
  // No pg_config in any dump (older Flight Recorder): the ids are all there
  // is, and the finding says the groups could not be matched.
  laggard::Run run;
  for (int32_t r = 0; r < 3; ++r) {
    FlightRecorderDump d = Dump(r, r == 2 ? 8 : 9, 8);
    d.file = static_cast<uint32_t>(r);
    if (r == 2) {
      d.entries[0].collective_seq = 8;
      d.entries[0].state = CollectiveState::kCompleted;
    }
    run.hang.dumps.push_back(d);
  }
  HangAnalysis a = AnalyzeHang(run);
  EXPECT_EQ(a.dumps_without_config, 3u);
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_FALSE(a.groups[0].matched);
  EXPECT_EQ(a.groups[0].pg_id, "0");
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.code, FindingCode::kHangHostStopped) << f.message;
  EXPECT_EQ(f.ranks, (std::vector<int32_t>{2}));
  EXPECT_TRUE(AnyEvidenceHas(f, "groups could not be matched across ranks and were taken by id"))
      << f.message;
  EXPECT_LE(f.confidence, 0.6);
}

TEST(HangDetectorTest, DifferentOpsUnderOneSequenceNumberAreADesync) {
  laggard::Run run = TwoRankGroup();
  run.hang.groups[0].ranks = {0, 1, 2};
  run.hang.dumps.push_back(Dump(0, 9, 8));
  run.hang.dumps.push_back(Dump(1, 9, 8, "nccl:all_gather", {4096}));
  run.hang.dumps.push_back(Dump(2, 9, 8));
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangDesync) << a.findings[0].message;
  EXPECT_EQ(a.findings[0].ranks, (std::vector<int32_t>{1}));  // the minority
}

TEST(HangDetectorTest, RanksPastTheStuckCollectiveAreAheadNotBlamed) {
  laggard::Run run = TwoRankGroup();
  run.hang.dumps.push_back(Dump(0, 183, 182));
  run.hang.dumps.push_back(Dump(1, 186, 185));
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangDesync);
  EXPECT_EQ(a.findings[0].ranks, (std::vector<int32_t>{0}));
  EXPECT_NE(a.findings[0].message.find("behind by 3"), std::string::npos) << a.findings[0].message;
}

TEST(HangDetectorTest, EveryoneInTheCollectiveWithTransportErrorsNamesTheLink) {
  laggard::Run run = TwoRankGroup();
  run.hang.dumps.push_back(Dump(0, 7, 6));
  run.hang.dumps.push_back(Dump(1, 7, 6));
  HangAnalysis stuck = AnalyzeHang(run);
  ASSERT_FALSE(stuck.findings.empty());
  EXPECT_EQ(stuck.findings[0].code, FindingCode::kHangStuckCollective);

  HangEvent e;
  e.kind = HangEventKind::kTransportError;
  e.rank = 1;
  e.host = "node-2";
  e.peer = "10.0.0.1<45678>";
  e.error_code = 12;
  e.text =
      "node-2:77:80 [1] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<45678> with "
      "error 12";
  run.hang.events.push_back(e);
  HangAnalysis net = AnalyzeHang(run);
  ASSERT_FALSE(net.findings.empty());
  EXPECT_EQ(net.findings[0].code, FindingCode::kHangTransportError);
  EXPECT_EQ(net.findings[0].entity.host, "node-2");
  EXPECT_NE(net.findings[0].evidence.at(0).text.find("none completed"), std::string::npos);
}

TEST(HangDetectorTest, WatchdogAbortIsTheHangsConsequenceNotAMissingProcess) {
  laggard::Run run = TwoRankGroup();
  HangEvent t;
  t.kind = HangEventKind::kWatchdogTimeout;
  t.rank = 0;
  t.pg_id = "0";
  t.seq = 40;
  t.op = "ALLREDUCE";
  run.hang.events.push_back(t);
  HangEvent x;
  x.kind = HangEventKind::kProcessExited;
  x.rank = 0;
  x.exit_code = -6;
  run.hang.events.push_back(x);
  HangAnalysis a = AnalyzeHang(run);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].code, FindingCode::kHangInconclusive) << a.findings[0].message;
  x.rank = 1;
  x.exit_code = -9;
  run.hang.events.push_back(x);
  HangAnalysis killed = AnalyzeHang(run);
  EXPECT_EQ(killed.findings.at(0).code, FindingCode::kHangProcessMissing);
  EXPECT_EQ(killed.findings[0].entity.rank, 1);
}

TEST(HangDetectorTest, StragglerBeforeTheHangIsNamedAsSuch) {
  TempDir dir;
  std::string log;
  for (int step = 0; step < 40; ++step) {
    for (int rank = 0; rank < 4; ++rank) {
      log += "rank " + std::to_string(rank) + ", step " + std::to_string(step) + ", time " +
             (rank == 2 ? "1.30" : "1.00") + "s\n";
    }
  }
  std::vector<std::string> paths = FilesIn(kData + "fr_v2.10");
  paths.push_back(WriteFile(dir.path() + "/steps.log", log));
  laggard::Run run = IngestAll(paths);
  Verdict v = VerdictOf(run);
  ASSERT_EQ(v.status, VerdictStatus::kHang) << v.summary;
  EXPECT_NE(v.summary.find("rank 2 was a straggler before the hang"), std::string::npos)
      << v.summary;
}

TEST(HangDetectorTest, RealWatchdogLinesGiveAHangVerdictOrSayWhatToCollect) {
  for (const char* name : {"torch1_watchdog.log", "torch2_watchdog_pg.log", "desync_report.log",
                           "collective_mismatch.log", "nccl_transport.log", "gloo.log",
                           "torchrun_failure.log", "pager_cut.log"}) {
    laggard::Run run = IngestAll({kData + name});
    Analyses a;
    Verdict v = VerdictOf(run, &a);
    EXPECT_TRUE(a.hang.hang) << name;
    EXPECT_TRUE(v.status == VerdictStatus::kHang || v.status == VerdictStatus::kInconclusive)
        << name << ": " << v.summary;
    for (const Culprit& c : v.culprits) {
      EXPECT_FALSE(c.evidence.empty()) << name;
    }
  }
}

TEST(HangDetectorTest, NoHangEvidenceNoHangAnalysis) {
  laggard::Run run;
  HangAnalysis a = AnalyzeHang(run);
  EXPECT_FALSE(a.hang);
  EXPECT_TRUE(a.findings.empty());
}

}  // namespace
}  // namespace laggard
