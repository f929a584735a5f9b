// `diagnose --record`, `history` and `history drain` end to end: simulated
// runs in real tool formats (step logs, nvidia-smi -q with GPU UUIDs) are
// diagnosed and recorded; the history names the GPU that throttled in three
// of four jobs, keyed by its UUID; drain prints, and with --apply runs, the
// Slurm command; bad stores are refused and left as they were.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/history.h"
#include "cli/run_cli.h"
#include "history/store.h"
#include "test_util.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using testing_util::ReadFile;
using testing_util::RunCli;
using testing_util::TempDir;
using testing_util::WriteFile;

// Four simulated jobs of 2 nodes x 4 GPUs; GPU 2 of node-01 (rank 6) runs
// hot in jobs 0, 1 and 3. The simulator gives each (node, GPU) the same UUID
// in every job, as a fleet's cards keep theirs.
class HistoryCliTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    for (int j = 0; j < 4; ++j) {
      std::vector<std::string> args = {"simulate",
                                       "--nodes",
                                       "2",
                                       "--gpus-per-node",
                                       "4",
                                       "--steps",
                                       "60",
                                       "--seed",
                                       std::to_string(10 + j),
                                       "--no-traces",
                                       "--no-network",
                                       "--no-nccl-tests",
                                       "--no-nccl-debug",
                                       "--no-effects",
                                       "-q",
                                       "-o",
                                       dir_->File("job" + std::to_string(j))};
      if (j != 2) {
        args.push_back("--fault");
        args.push_back("thermal@node-01:2:0.3");
      }
      auto r = RunCli(args);
      ASSERT_EQ(r.rc, kExitOk) << r.err;
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string Job(int j) { return dir_->File("job" + std::to_string(j)); }

  static void RecordAll(const std::string& history) {
    for (int j = 0; j < 4; ++j) {
      auto r = RunCli({"diagnose", Job(j), "--record", "--history", history, "--job-id",
                       "slurm:" + std::to_string(500 + j), "-q"});
      ASSERT_EQ(r.rc, kExitOk) << r.err;
      ASSERT_NE(r.err.find("recorded job slurm:" + std::to_string(500 + j)), std::string::npos)
          << r.err;
    }
  }

  static TempDir* dir_;
};

TempDir* HistoryCliTest::dir_ = nullptr;

TEST_F(HistoryCliTest, TheCardThatThrottledInThreeOfFourJobsIsChronicByItsUuid) {
  TempDir tmp;
  std::string h = tmp.File("history.db");
  RecordAll(h);
  auto text = RunCli({"history", "--history", h});
  ASSERT_EQ(text.rc, kExitOk) << text.err;
  EXPECT_NE(text.out.find("4 jobs"), std::string::npos) << text.out;
  auto json = RunCli({"history", "--history", h, "--json"});
  ASSERT_EQ(json.rc, kExitOk) << json.err;
  auto j = nlohmann::json::parse(json.out);
  ASSERT_FALSE(j["offenders"].empty()) << json.out;
  const auto& first = j["offenders"][0];
  EXPECT_EQ(first["standing"], "chronic") << json.out;
  EXPECT_EQ(first["kind"], "gpu");
  EXPECT_EQ(first["host"], "node-01");
  EXPECT_EQ(first["gpu"], 2);
  EXPECT_EQ(first["identity"], "hardware");
  EXPECT_EQ(first["culprit_all"], 3);
  EXPECT_EQ(first["jobs_all"], 4);
  EXPECT_TRUE(first["uuid"].is_string());
  EXPECT_NE(text.out.find(first["uuid"].get<std::string>()), std::string::npos) << text.out;
  for (const auto& o : j["offenders"]) {
    if (o["key"] != first["key"]) {
      EXPECT_NE(o["standing"], "chronic") << o.dump();
    }
  }

  auto drain = RunCli({"history", "drain", "--history", h});
  ASSERT_EQ(drain.rc, kExitOk) << drain.err;
  EXPECT_NE(drain.out.find("dry run"), std::string::npos) << drain.out;
  EXPECT_NE(drain.out.find("scontrol update NodeName=node-01 State=DRAIN Reason='laggard: GPU 2"),
            std::string::npos)
      << drain.out;
  EXPECT_EQ(drain.out.find("node-00"), std::string::npos) << drain.out;
}

TEST_F(HistoryCliTest, ThePageShowsTheOffenderAndItsHostsRow) {
  TempDir tmp;
  std::string h = tmp.File("history.db");
  RecordAll(h);
  std::string page = tmp.File("history.html");
  auto r = RunCli({"history", "--history", h, "--html", page});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  std::string html = ReadFile(page);
  EXPECT_NE(html.find("<td class=\"chronic\">chronic</td>"), std::string::npos) << html;
  size_t row = html.find("<tr><th>node-01</th>");
  ASSERT_NE(row, std::string::npos) << html;
  std::string cells = html.substr(row, html.find("</tr>", row) - row);
  size_t culprit_cells = 0;
  for (size_t at = cells.find("class=\"c\""); at != std::string::npos;
       at = cells.find("class=\"c\"", at + 1)) {
    ++culprit_cells;
  }
  EXPECT_EQ(culprit_cells, 3u) << cells;
  EXPECT_NE(cells.find("GPU 2 compute_slow/thermal"), std::string::npos) << cells;
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Never onto the store itself.
  auto onto = RunCli({"history", "--history", h, "--html", h});
  EXPECT_EQ(onto.rc, kExitNoInput);
  EXPECT_TRUE(RunCli({"history", "--history", h}).rc == kExitOk);
}

TEST_F(HistoryCliTest, DrainApplyRunsTheCommandAndRecordsIt) {
  TempDir tmp;
  std::string h = tmp.File("history.db");
  RecordAll(h);
  // A stand-in scontrol on PATH that writes down its arguments.
  std::string bin = tmp.File("bin");
  fs::create_directories(bin);
  std::string log = tmp.File("scontrol.args");
  WriteFile(bin + "/scontrol", "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + log + "\necho ok\n");
  fs::permissions(bin + "/scontrol", fs::perms::owner_all);
  std::string old_path = std::getenv("PATH");
  setenv("PATH", (bin + ":" + old_path).c_str(), 1);
  auto r = RunCli({"history", "drain", "--history", h, "--apply"});
  setenv("PATH", old_path.c_str(), 1);
  ASSERT_EQ(r.rc, kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("-> done"), std::string::npos) << r.out;
  std::string args = ReadFile(log);
  EXPECT_NE(args.find("update\nNodeName=node-01\nState=DRAIN\nReason=laggard: GPU 2"),
            std::string::npos)
      << args;
}

TEST_F(HistoryCliTest, RecordingTheSameJobTwiceKeepsTheFirst) {
  TempDir tmp;
  std::string h = tmp.File("history.db");
  auto a = RunCli({"diagnose", Job(0), "--record", "--history", h, "--job-id", "x", "-q"});
  ASSERT_EQ(a.rc, kExitOk) << a.err;
  auto b = RunCli({"diagnose", Job(2), "--record", "--history", h, "--job-id", "x", "-q"});
  ASSERT_EQ(b.rc, kExitOk) << b.err;
  EXPECT_NE(b.err.find("is already in"), std::string::npos) << b.err;
  // The same inputs under another id are the same job.
  auto c = RunCli({"diagnose", Job(0), "--record", "--history", h, "--job-id", "y", "-q"});
  ASSERT_EQ(c.rc, kExitOk) << c.err;
  EXPECT_NE(c.err.find("is already in"), std::string::npos) << c.err;
  auto j = nlohmann::json::parse(RunCli({"history", "--history", h, "--json"}).out);
  EXPECT_EQ(j["jobs"], 1);
}

TEST_F(HistoryCliTest, AForeignFileIsRefusedTheVerdictStillPrintedAndTheFileKept) {
  TempDir tmp;
  std::string h = WriteFile(tmp.File("history.db"), "not a database at all\n");
  auto r = RunCli({"diagnose", Job(0), "--record", "--history", h, "-q"});
  EXPECT_EQ(r.rc, kExitOutputFailed);
  EXPECT_NE(r.out.find("verdict:"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("not an SQLite database"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(h), "not a database at all\n");
  auto q = RunCli({"history", "--history", h});
  EXPECT_EQ(q.rc, kExitNoInput);
  EXPECT_NE(q.err.find("not an SQLite database"), std::string::npos) << q.err;
}

TEST_F(HistoryCliTest, AnEmptyOrMissingHistoryIsAClearAnswer) {
  TempDir tmp;
  auto missing = RunCli({"history", "--history", tmp.File("none.db")});
  EXPECT_EQ(missing.rc, kExitNoInput);
  EXPECT_NE(missing.err.find("diagnose --record"), std::string::npos) << missing.err;
  std::string h = tmp.File("h.db");
  RecordAll(h);
  auto none = RunCli({"history", "--history", h, "--since", "2099-01-01"});
  EXPECT_EQ(none.rc, kExitOk) << none.err;
  EXPECT_NE(none.out.find("no recorded jobs match"), std::string::npos) << none.out;
  auto other = RunCli({"history", "--history", h, "--host", "node-77"});
  EXPECT_EQ(other.rc, kExitOk) << other.err;
  EXPECT_NE(other.out.find("only the parts of host node-77"), std::string::npos) << other.out;
  EXPECT_EQ(other.out.find("GPU-"), std::string::npos) << other.out;
  auto bad = RunCli({"history", "--history", h, "--since", "yesterday"});
  EXPECT_EQ(bad.rc, kExitNoInput);
  EXPECT_NE(bad.err.find("--since yesterday"), std::string::npos) << bad.err;
}

// Three jobs of one fault kind, each simulated with its own seed, diagnosed
// and recorded into `history`.
void RecordThree(const TempDir& tmp, const std::string& history,
                 const std::vector<std::string>& sim_args) {
  for (int j = 0; j < 3; ++j) {
    // Step logs alone cannot name a rank (synchronous steps are equal on
    // every rank): two profiled steps per rank can.
    std::vector<std::string> args = {"simulate",
                                     "--steps",
                                     "60",
                                     "--seed",
                                     std::to_string(20 + j),
                                     "--trace-steps",
                                     "2",
                                     "--no-effects",
                                     "-q",
                                     "-o",
                                     tmp.File("run" + std::to_string(j))};
    args.insert(args.end(), sim_args.begin(), sim_args.end());
    auto sim = RunCli(args);
    ASSERT_EQ(sim.rc, kExitOk) << sim.err;
    auto r = RunCli(
        {"diagnose", tmp.File("run" + std::to_string(j)), "--record", "--history", history, "-q"});
    ASSERT_EQ(r.rc, kExitOk) << r.err;
    ASSERT_NE(r.err.find("recorded job"), std::string::npos) << r.out << r.err;
  }
}

TEST(HistoryFaultKindsTest, TheJobsOwnWorkSplitIsRankFixedAndDrainsNothing) {
  TempDir tmp;
  std::string h = tmp.File("h.db");
  RecordThree(tmp, h,
              {"--nodes", "2", "--gpus-per-node", "4", "--pipeline-stages", "4", "--fault",
               "pipeline_stage_imbalance@stage1:0.3"});
  auto text = RunCli({"history", "--history", h});
  EXPECT_EQ(text.out.find("chronic (culprit in >= 3 and >= 50% of its last 10 jobs): none"),
            text.out.find("chronic ("))
      << text.out;
  EXPECT_NE(text.out.find("rank-fixed: rank 2"), std::string::npos) << text.out;
  auto drain = RunCli({"history", "drain", "--history", h});
  EXPECT_EQ(drain.out.find("scontrol"), std::string::npos) << drain.out;
}

TEST(HistoryFaultKindsTest, ASharedSwitchDrainsNoneOfTheNodesBehindIt) {
  TempDir tmp;
  std::string h = tmp.File("h.db");
  RecordThree(tmp, h,
              {"--nodes", "8", "--gpus-per-node", "2", "--fault",
               "shared_switch_congestion@node-04..node-07:0.5"});
  auto drain = RunCli({"history", "drain", "--history", h});
  EXPECT_EQ(drain.out.find("scontrol"), std::string::npos) << drain.out;
  auto j = nlohmann::json::parse(RunCli({"history", "--history", h, "--json"}).out);
  for (const auto& o : j["offenders"]) {
    if (o["standing"] == "chronic") {
      EXPECT_EQ(o["kind"], "switch") << o.dump();
    }
  }
}

TEST(HistoryFaultKindsTest, HostContentionIsTheHostsNotItsCards) {
  TempDir tmp;
  std::string h = tmp.File("h.db");
  RecordThree(
      tmp, h,
      {"--nodes", "2", "--gpus-per-node", "4", "--fault", "host_cpu_contention@node-01:0.3"});
  auto j = nlohmann::json::parse(RunCli({"history", "--history", h, "--json"}).out);
  ASSERT_FALSE(j["offenders"].empty()) << j.dump(1);
  for (const auto& o : j["offenders"]) {
    EXPECT_NE(o["kind"], "gpu") << o.dump();
    EXPECT_EQ(o["host"], "node-01") << o.dump();
  }
  auto drain = RunCli({"history", "drain", "--history", h});
  EXPECT_NE(drain.out.find("NodeName=node-01 "), std::string::npos) << drain.out;
}

TEST(HistoryFaultKindsTest, ARankOnAKnownHostWithoutItsGpuIsRecordedOnTheHost) {
  TempDir tmp;
  std::string h = tmp.File("h.db");
  RecordThree(tmp, h,
              {"--nodes", "2", "--gpus-per-node", "4", "--step-logs-only", "--step-timing",
               "compute", "--fault", "slow_kernel@node-01:2:0.3"});
  auto j = nlohmann::json::parse(RunCli({"history", "--history", h, "--json"}).out);
  ASSERT_FALSE(j["offenders"].empty()) << j.dump(1);
  const auto& first = j["offenders"][0];
  EXPECT_EQ(first["kind"], "host") << first.dump();
  EXPECT_EQ(first["host"], "node-01");
  EXPECT_EQ(first["standing"], "chronic");
  EXPECT_EQ(first["ranks"], nlohmann::json::array({6}));
  auto drain = RunCli({"history", "drain", "--history", h});
  EXPECT_NE(drain.out.find("NodeName=node-01 "), std::string::npos) << drain.out;
}

TEST_F(HistoryCliTest, HostAndGpuPickWhoseStandingIsShownNotWhichJobsCount) {
  TempDir tmp;
  std::string h = tmp.File("history.db");
  RecordAll(h);
  auto other = RunCli({"history", "drain", "--history", h, "--host", "node-00"});
  EXPECT_NE(other.out.find("nothing to drain"), std::string::npos) << other.out;
  auto same = RunCli({"history", "drain", "--history", h, "--host", "node-01"});
  EXPECT_NE(same.out.find("NodeName=node-01 "), std::string::npos) << same.out;
}

TEST_F(HistoryCliTest, DrainApplyOnAMistypedPathCreatesNothingAndChangesNoRecord) {
  TempDir tmp;
  std::string h = tmp.File("history.db");
  RecordAll(h);
  auto before = nlohmann::json::parse(RunCli({"history", "--history", h, "--json"}).out);
  auto missing = RunCli({"history", "drain", "--apply", "--history", tmp.File("typo/h.db")});
  EXPECT_EQ(missing.rc, kExitNoInput);
  EXPECT_FALSE(fs::exists(tmp.File("typo")));
  auto after = nlohmann::json::parse(RunCli({"history", "--history", h, "--json"}).out);
  EXPECT_EQ(before, after);
}

// Real inputs. A real nvidia-smi -a of 8 RTX 6000 Ada (the corpus): its 8
// cards are recorded by the UUIDs the file prints, and its verdict
// (inconclusive: GPU metrics, no step times) makes them undecided, not
// healthy. Two real PyTorch jobs (tests/data/realjobs): a CPU hog names
// rank 1, whose host no input gives: a rank part, weaker evidence, never
// drained; the healthy job is the other one without a straggler.
TEST(HistoryRealInputTest, ARealGpuPageIsRecordedByItsUuids) {
  std::string page =
      std::string(LAGGARD_CORPUS_DIR) + "/nvidia_smi/thamada_RTX6000Ada_x8_nvidia_smi_a.txt";
  if (!fs::exists(page)) GTEST_SKIP() << "corpus file absent: " << page;
  std::vector<std::string> uuids;
  std::istringstream lines(ReadFile(page));
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find("GPU UUID");
    if (at != std::string::npos) uuids.push_back(line.substr(line.find("GPU-", at)));
  }
  ASSERT_EQ(uuids.size(), 8u);
  TempDir tmp;
  std::string h = tmp.File("h.db");
  auto r = RunCli({"diagnose", page, "--record", "--history", h, "-q"});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_NE(r.err.find("8 parts, 0 culprits"), std::string::npos) << r.err;
  auto store = history::HistoryStore::Open(h, history::HistoryStore::Mode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto jobs = store->Load({});
  ASSERT_EQ(jobs->size(), 1u);
  std::vector<std::string> keys;
  for (const history::PartRecord& p : (*jobs)[0].parts) {
    EXPECT_EQ(p.identity, history::Identity::kHardware) << p.key;
    keys.push_back(p.uuid.value_or(""));
  }
  std::sort(keys.begin(), keys.end());
  std::sort(uuids.begin(), uuids.end());
  EXPECT_EQ(keys, uuids);
  auto j = nlohmann::json::parse(RunCli({"history", "--history", h, "--json"}).out);
  EXPECT_EQ(j["jobs_undecided"], 1);
  EXPECT_TRUE(j["offenders"].empty());
}

TEST(HistoryRealInputTest, RealJobsWithoutHostsAreRecordedByRank) {
  TempDir tmp;
  std::string h = tmp.File("h.db");
  for (const char* run : {"w2_cpu_hog", "w2_healthy"}) {
    auto r = RunCli(
        {"diagnose", testing_util::TestData("realjobs", run), "--record", "--history", h, "-q"});
    ASSERT_EQ(r.rc, kExitOk) << r.err;
  }
  auto j = nlohmann::json::parse(RunCli({"history", "--history", h, "--json"}).out);
  EXPECT_EQ(j["jobs"], 2);
  EXPECT_EQ(j["jobs_without_straggler"], 1);
  ASSERT_EQ(j["offenders"].size(), 1u) << j.dump(1);
  const auto& o = j["offenders"][0];
  EXPECT_EQ(o["key"], "rank:1");
  EXPECT_EQ(o["standing"], "transient");
  EXPECT_EQ(o["weak_identity"], true);
  EXPECT_EQ(j["jobs_with_weak_identity"], 1);
  auto drain = RunCli({"history", "drain", "--history", h});
  EXPECT_NE(drain.out.find("nothing to drain"), std::string::npos) << drain.out;
}

TEST(HistorySinceTest, SpansAndDatesAreRead) {
  EXPECT_EQ(*ParseSince("30d", 1'000'000'000), 1'000'000'000 - 30 * 86400);
  EXPECT_EQ(*ParseSince("12h", 1'000'000'000), 1'000'000'000 - 12 * 3600);
  EXPECT_EQ(*ParseSince("2w", 1'000'000'000), 1'000'000'000 - 14 * 86400);
  EXPECT_EQ(*ParseSince("2026-11-01", 0), 1793491200);
  EXPECT_FALSE(ParseSince("30x", 0).ok());
  EXPECT_FALSE(ParseSince("", 0).ok());
}

}  // namespace
}  // namespace laggard

namespace laggard::history {
namespace {

using testing_util::ReadFile;
using testing_util::RunCli;
using testing_util::TempDir;
using testing_util::WriteFile;

// watch --record and --history: what would do nothing, or fail only when
// the job ends, is refused when watch starts (no Prometheus needed).
TEST(WatchRecordTest, FlagsThatWouldDoNothingOrFailLateAreRefusedAtOnce) {
  TempDir dir;
  auto no_id = RunCli({"watch", "--record", "--history", dir.File("h.db")});
  EXPECT_EQ(no_id.rc, kExitNoInput);
  EXPECT_NE(no_id.err.find("--record needs --job-id"), std::string::npos) << no_id.err;
  auto no_record = RunCli({"watch", "--job-id", "7"});
  EXPECT_EQ(no_record.rc, kExitNoInput);
  EXPECT_NE(no_record.err.find("give --record too"), std::string::npos) << no_record.err;
  auto history_alone = RunCli({"watch", "--history", dir.File("h.db")});
  EXPECT_EQ(history_alone.rc, kExitNoInput);
  EXPECT_NE(history_alone.err.find("give one of them"), std::string::npos) << history_alone.err;
  // A file that is not a store: refused before any window is read, untouched.
  WriteFile(dir.File("notes.txt"), "not a database\n");
  auto foreign = RunCli({"watch", "--record", "--job-id", "7", "--history", dir.File("notes.txt"),
                         "--prometheus", "http://127.0.0.1:1"});
  EXPECT_EQ(foreign.rc, kExitNoInput);
  EXPECT_NE(foreign.err.find("not an SQLite database"), std::string::npos) << foreign.err;
  EXPECT_EQ(ReadFile(dir.File("notes.txt")), "not a database\n");
}

// --once against no Prometheus: no window read, nothing recorded, and the
// exit code says Prometheus (2), not the record.
TEST(WatchRecordTest, NoWindowReadRecordsNothing) {
  TempDir dir;
  auto r = RunCli({"watch", "--once", "--record", "--job-id", "7", "--history", dir.File("h.db"),
                   "--prometheus", "http://127.0.0.1:1"});
  EXPECT_EQ(r.rc, kExitNoInput) << r.err;
  EXPECT_NE(r.err.find("no window was read; nothing recorded"), std::string::npos) << r.err;
}

// The fleet series of a store: a part culprit in two jobs, by cause.
TEST(WatchRecordTest, CulpritJobsMetricsCountWhatHistoryCounts) {
  TempDir dir;
  std::string path = dir.File("h.db");
  {
    auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 3; ++i) {
      JobRecord j;
      j.job_id = "job-" + std::to_string(i);
      j.recorded_at_s = 1'700'000'000 + i;
      j.status = "straggler";
      PartRecord p;
      p.key = "gpu:GPU-\"q\"";  // a quote to escape
      p.kind = PartKind::kGpu;
      p.identity = Identity::kHardware;
      p.uuid = "GPU-\"q\"";
      p.host = "node-01";
      p.gpu = 3;
      p.culprit = i < 2;
      p.cause_class = "compute_slow";
      p.cause = "thermal";
      p.confidence = 0.9;
      j.parts.push_back(p);
      ASSERT_TRUE(store->Record(j).ok());
    }
  }
  auto m = CulpritJobsMetrics(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->rfind(std::string(kCulpritJobsHeader), 0), 0u);
  EXPECT_NE(m->find("laggard_culprit_jobs_total{host=\"node-01\",gpu_uuid=\"GPU-\\\"q\\\"\","
                    "part=\"gpu:GPU-\\\"q\\\"\",cause=\"compute_slow/thermal\"} 2\n"),
            std::string::npos)
      << *m;
  EXPECT_FALSE(CulpritJobsMetrics(dir.File("none.db")).ok());
}

}  // namespace
}  // namespace laggard::history
