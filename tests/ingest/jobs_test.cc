// Jobs told apart before the files are merged (ingest/jobs.h): the rules on
// keys, then real folders read as laggard diagnose reads them.

#include "ingest/jobs.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "simulator/cluster/cluster.h"
#include "simulator/run_writer.h"
#include "test_util.h"

namespace laggard {
namespace {

constexpr TimeNs kHour = 3600LL * 1'000'000'000;
constexpr TimeNs kT0 = 1'700'000'000LL * 1'000'000'000;  // 2023-11-14

JobKeys Job(std::string what, std::optional<int32_t> world, std::vector<int32_t> ranks,
            std::optional<TimeNs> at = std::nullopt) {
  JobKeys k;
  k.kind = JobKeys::Kind::kJob;
  k.what = std::move(what);
  k.world_size = world;
  k.ranks = std::move(ranks);
  if (at) {
    k.first_ns = *at;
    k.last_ns = *at + kHour / 4;
  }
  return k;
}

JobKeys Machine(std::vector<std::string> hosts) {
  JobKeys k;
  k.kind = JobKeys::Kind::kMachine;
  k.what = "GPU metrics file";
  k.hosts = std::move(hosts);
  return k;
}

std::vector<std::string> Paths(size_t n) {
  std::vector<std::string> p;
  for (size_t i = 0; i < n; ++i) p.push_back("f" + std::to_string(i));
  return p;
}

JobAssignment Assign(const std::vector<JobKeys>& files, std::optional<int32_t> wanted = {}) {
  return AssignJobs(files, Paths(files.size()), wanted);
}

TEST(JobsTest, OneWorldIsOneJobAndEveryFileIsRead) {
  std::vector<JobKeys> files = {Job("Kineto trace", 4, {0}, kT0), Job("Kineto trace", 4, {1}, kT0),
                                Job("step log", {}, {0, 1, 2, 3}), Machine({})};
  JobAssignment a = Assign(files);
  ASSERT_EQ(a.split.jobs.size(), 1u);
  EXPECT_FALSE(a.split.several());
  EXPECT_EQ(a.split.jobs[0].ranks, 4u);
  EXPECT_EQ(a.split.jobs[0].what, "2 Kineto traces, 1 step log");
  for (int32_t j : a.job_of_file) EXPECT_EQ(j, 0);
}

TEST(JobsTest, DifferentWorldSizesAreDifferentJobsAndTheMostRanksIsChosen) {
  std::vector<JobKeys> files = {Job("Kineto trace", 2, {0}, kT0), Job("Kineto trace", 8, {0}, kT0),
                                Job("Kineto trace", 8, {5}, kT0 + kHour)};
  JobAssignment a = Assign(files);
  ASSERT_EQ(a.split.jobs.size(), 2u);
  EXPECT_EQ(a.job_of_file, (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(a.split.chosen, 1u);
  EXPECT_FALSE(a.split.chosen_by_flag);
  EXPECT_EQ(a.split.jobs[1].world_size, 8);

  JobAssignment asked = Assign(files, 1);
  EXPECT_EQ(asked.split.chosen, 0u);
  EXPECT_TRUE(asked.split.chosen_by_flag);
  // Beyond the jobs found: the default, and the caller says so.
  JobAssignment beyond = Assign(files, 3);
  EXPECT_EQ(beyond.split.chosen, 1u);
  EXPECT_FALSE(beyond.split.chosen_by_flag);
}

TEST(JobsTest, ARestartHoursLaterIsOneJobAndDaysApartAreTwo) {
  JobAssignment restart = Assign(
      {Job("step log", 4, {0, 1, 2, 3}, kT0), Job("step log", 4, {0, 1, 2, 3}, kT0 + 5 * kHour)});
  EXPECT_FALSE(restart.split.several());
  JobAssignment apart = Assign(
      {Job("step log", 4, {0, 1, 2, 3}, kT0), Job("step log", 4, {0, 1, 2, 3}, kT0 + 72 * kHour)});
  ASSERT_TRUE(apart.split.several());
  EXPECT_EQ(apart.job_of_file, (std::vector<int32_t>{0, 1}));
}

TEST(JobsTest, AFileOfNoWorldJoinsTheOneJobNearItInTimeOrStandsAlone) {
  std::vector<JobKeys> files = {Job("Kineto trace", 2, {0}, kT0),
                                Job("Kineto trace", 8, {0}, kT0 + 500 * kHour),
                                Job("nsys report", {}, {}, kT0 + 501 * kHour),
                                Job("nsys report", {}, {}, kT0 + 2000 * kHour)};
  JobAssignment a = Assign(files);
  ASSERT_EQ(a.split.jobs.size(), 3u);
  EXPECT_EQ(a.job_of_file, (std::vector<int32_t>{0, 1, 1, 2}));
  EXPECT_EQ(a.split.jobs[2].world_size, std::nullopt);
  // A rank beyond the near job's world does not join it.
  files[2].ranks = {12};
  JobAssignment b = Assign(files);
  EXPECT_NE(b.job_of_file[2], b.job_of_file[1]);
}

TEST(JobsTest, RunsOfOtherRanksOneAfterTheOtherAreTwoJobsARestartIsOne) {
  // Step CSVs with times and no world size: ranks 0-1 for 15 minutes, then
  // ranks 0-3; then ranks 0-3 again (a restart).
  std::vector<JobKeys> files = {Job("step log", {}, {0}, kT0),
                                Job("step log", {}, {1}, kT0),
                                Job("step log", {}, {0}, kT0 + kHour),
                                Job("step log", {}, {1, 2, 3}, kT0 + kHour),
                                Job("step log", {}, {0, 1, 2, 3}, kT0 + 2 * kHour),
                                Job("step log", {}, {}, kT0 + 3 * kHour)};
  JobAssignment a = Assign(files);
  ASSERT_EQ(a.split.jobs.size(), 2u);
  EXPECT_EQ(a.job_of_file, (std::vector<int32_t>{0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(a.split.jobs[1].ranks, 4u);
  EXPECT_EQ(a.split.chosen, 1u);
}

TEST(JobsTest, NodesTimedAMinuteApartAreOneJobAndASpanBridgesProfiledDays) {
  // Per-node traces of one job, timed a minute apart, no world size.
  std::vector<JobKeys> nodes = {
      Job("Kineto trace", {}, {0}, kT0), Job("Kineto trace", {}, {1}, kT0),
      Job("Kineto trace", {}, {2}, kT0 + kHour / 2), Job("Kineto trace", {}, {3}, kT0 + kHour / 2)};
  EXPECT_FALSE(Assign(nodes).split.several());
  // Traces of world 2 on day 1 and day 5, step logs over the whole week.
  JobKeys week = Job("step log", {}, {0, 1}, kT0);
  week.last_ns = kT0 + 7 * 24 * kHour;
  JobAssignment a = Assign({Job("Kineto trace", 2, {0}, kT0 + 24 * kHour),
                            Job("Kineto trace", 2, {0}, kT0 + 5 * 24 * kHour), week});
  EXPECT_FALSE(a.split.several());
  EXPECT_EQ(a.split.jobs.at(0).files, 3u);
}

TEST(JobsTest, AFileThatFitsSeveralJobsIsUnplacedNotGuessed) {
  // Untimed and of no world, beside two jobs: which one?
  std::vector<JobKeys> files = {Job("Kineto trace", 2, {0}, kT0), Job("Kineto trace", 8, {0}, kT0),
                                Job("step log", {}, {0})};
  JobAssignment a = Assign(files);
  ASSERT_EQ(a.split.jobs.size(), 2u);
  EXPECT_EQ(a.job_of_file[2], kUnplacedFile);
  EXPECT_EQ(a.split.unplaced, 1u);
  // Timed within both jobs' spans: also unplaced.
  files[2].first_ns = kT0;
  files[2].last_ns = kT0 + kHour;
  EXPECT_EQ(Assign(files).job_of_file[2], kUnplacedFile);
}

TEST(JobsTest, MachineFilesGoWithTheJobOfTheirHostsOrNone) {
  std::vector<JobKeys> files = {Job("Kineto trace", 2, {0}, kT0), Job("Kineto trace", 8, {0}, kT0),
                                Machine({"node-b"}), Machine({}), Machine({"node-z"})};
  files[1].hosts = {"node-b"};
  JobKeys empty;  // a file nothing was read from
  files.push_back(empty);
  JobAssignment a = Assign(files);
  ASSERT_EQ(a.split.jobs.size(), 2u);
  EXPECT_EQ(a.job_of_file, (std::vector<int32_t>{0, 1, 1, kUnplacedFile, kUnplacedFile, 1}));
  EXPECT_EQ(a.split.jobs[1].files, 2u);
  // The unread file's notes stay with the chosen job, whichever it is.
  EXPECT_EQ(Assign(files, 1).job_of_file[5], 0);
}

TEST(JobsTest, LeftOutFilesAreNotedAndListed) {
  std::vector<JobKeys> files = {Job("Kineto trace", 2, {0}, kT0),
                                Job("Kineto trace", 8, {0, 1}, kT0), Job("step log", {}, {0})};
  JobAssignment a = Assign(files);
  laggard::Run run;
  for (const std::string& p : Paths(3)) run.files.push_back(InputFileInfo{.path = p});
  NoteLeftOut(a, run);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kJobOther), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kJobUnplaced), 1u);
  ASSERT_EQ(run.jobs.jobs.size(), 2u);
  EXPECT_EQ(run.jobs.chosen, 1u);
}

// Every kept real DDP job (bench/realjobs: rank logs, step CSVs with times,
// Kineto traces) is one job, and nothing is left out.
TEST(JobsRealTest, EachRealJobFolderIsOneJob) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.split_jobs = true;
  int folders = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing_util::TestData("realjobs"))) {
    if (!e.is_directory()) continue;
    ++folders;
    auto run = Ingest({e.path().string()}, readers->readers, options, traces.readers);
    ASSERT_TRUE(run.ok());
    EXPECT_FALSE(run->jobs.several()) << e.path() << ": " << run->jobs.jobs.size() << " jobs";
    EXPECT_EQ(run->diagnostics.count(DiagCode::kJobUnplaced), 0u) << e.path();
  }
  EXPECT_GE(folders, 20);
}

// Two real jobs copied into one folder: each found, the larger diagnosed,
// the other's files listed and left out.
TEST(JobsRealTest, TwoRealJobsInOneFolderAreTold) {
  testing_util::TempDir dir;
  for (const char* job : {"w2_healthy", "w4_healthy"}) {
    std::filesystem::copy(testing_util::TestData("realjobs", job), dir.File(job),
                          std::filesystem::copy_options::recursive);
  }
  auto readers = MakeDefaultTextReaders(std::nullopt);
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.split_jobs = true;
  auto run = Ingest({dir.path()}, readers->readers, options, traces.readers);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->jobs.jobs.size(), 2u);
  const JobInfo& chosen = run->jobs.jobs[run->jobs.chosen];
  EXPECT_EQ(chosen.ranks, 4u);  // torch 1.13 traces state no world size: the ranks tell
  EXPECT_EQ(run->ranks.size(), 4u);
  EXPECT_EQ(run->diagnostics.count(DiagCode::kJobOther), run->jobs.jobs[0].files);
}

// Copies every file of the real job `job` whose name starts with one of
// `prefixes` into `to`.
void CopyReal(const std::string& job, const std::string& to, std::vector<std::string> prefixes) {
  std::filesystem::create_directories(to);
  for (const auto& e :
       std::filesystem::directory_iterator(testing_util::TestData("realjobs", job))) {
    std::string name = e.path().filename().string();
    for (const std::string& p : prefixes) {
      if (name.rfind(p, 0) == 0) std::filesystem::copy(e.path(), to + "/" + name);
    }
  }
}

StatusOr<laggard::Run> IngestJobs(const std::string& dir);

// Runs side by side in folders that are not siblings below one root, or
// traces alone: told apart by their steps (a README beside them changes
// nothing).
TEST(JobsRealTest, RunsSideBySideAreToldByTheirSteps) {
  testing_util::TempDir dir;
  CopyReal("w4_healthy", dir.File("run"), {"rank", "steps", "trace"});
  CopyReal("w2_healthy", dir.File("run/previous"), {"rank", "steps", "trace"});
  testing_util::WriteFile(dir.File("README.txt"), "notes\n");
  auto run = IngestJobs(dir.path());
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->jobs.jobs.size(), 2u);
  EXPECT_EQ(run->ranks.size(), 4u);
  EXPECT_EQ(run->jobs.unplaced, 0u);
  EXPECT_EQ(run->diagnostics.count(DiagCode::kStepDuplicate), 0u);

  testing_util::TempDir traces;
  CopyReal("w4_healthy", traces.File("run_a"), {"trace_rank0", "trace_rank1", "trace_rank3"});
  CopyReal("w4_healthy_op_noise", traces.File("run_b"), {"trace"});
  auto both = IngestJobs(traces.path());
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->jobs.jobs.size(), 2u);
  EXPECT_EQ(both->traces.size(), 4u);
}

// Two views of one run never split it: a CSV counting steps from 1 in a
// folder of its own, and per-kind folders beside an old run's logs.
TEST(JobsRealTest, ViewsOfOneRunStayTogether) {
  testing_util::TempDir dir;
  CopyReal("w2_healthy_window_transient", dir.File("run"), {"rank", "trace"});
  std::filesystem::create_directories(dir.File("wandb_export"));
  for (int r = 0; r < 2; ++r) {
    std::string csv =
        testing_util::ReadFile(testing_util::TestData("realjobs", "w2_healthy_window_transient") +
                               "/steps_rank" + std::to_string(r) + ".csv");
    std::string out;
    size_t line_start = 0;
    for (size_t end; (end = csv.find('\n', line_start)) != std::string::npos;
         line_start = end + 1) {
      std::string line = csv.substr(line_start, end - line_start);
      size_t a = line.find(','), b = line.find(',', a + 1);
      if (line_start > 0 && a != std::string::npos && b != std::string::npos) {
        line = line.substr(0, a + 1) +
               std::to_string(std::stoll(line.substr(a + 1, b - a - 1)) + 1) + line.substr(b);
      }
      out += line + "\n";
    }
    testing_util::WriteFile(dir.File("wandb_export/steps_rank" + std::to_string(r) + ".csv"), out);
  }
  auto run = IngestJobs(dir.path());
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(run->jobs.several());

  testing_util::TempDir kinds;
  CopyReal("w4_compute_1.1", kinds.File("job/logs"), {"rank"});
  CopyReal("w4_compute_1.1", kinds.File("job/csv"), {"steps"});
  CopyReal("w4_compute_1.1", kinds.File("job/traces"), {"trace"});
  CopyReal("w2_healthy", kinds.File("job/old_run"), {"rank"});
  auto split = IngestJobs(kinds.path());
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(split->jobs.jobs.size(), 2u);
  EXPECT_EQ(split->ranks.size(), 4u);
  EXPECT_EQ(split->traces.size(), 4u);
  EXPECT_EQ(split->jobs.unplaced, 0u);
}

// Writes a healthy simulated run (timed CSV step logs, traces, nvidia-smi,
// network outputs) of `nodes` x 4 GPUs starting at `start_s` into `dir`.
void WriteSimulatedRun(const std::string& dir, uint64_t seed, int nodes, int64_t start_s) {
  sim::ClusterScenario sc;
  sc.seed = seed;
  sc.nodes = nodes;
  sc.gpus_per_node = 4;
  sc.steps = 40;
  sc.start_time_s = start_s;
  ASSERT_TRUE(sim::ResolveScenario(&sc).ok());
  sim::RunOutputOptions out;
  out.step_format = sim::StepLogFormat::kCsv;
  out.trace_steps = 3;
  out.measure_effects = false;
  auto written = sim::WriteClusterRun(sc, out, dir);
  ASSERT_TRUE(written.ok()) << written.status().message();
}

StatusOr<laggard::Run> IngestJobs(const std::string& dir) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.split_jobs = true;
  return Ingest({dir}, readers->readers, options, traces.readers);
}

// A simulated run whose logs restart halfway: the same ranks again, an hour
// later, steps starting over, in a folder of their own. One job.
TEST(JobsSimTest, ARestartedRunIsOneJob) {
  testing_util::TempDir dir;
  WriteSimulatedRun(dir.File("attempt1"), 1, 2, 1'764'000'000);
  WriteSimulatedRun(dir.File("attempt2"), 2, 2, 1'764'003'600);
  auto run = IngestJobs(dir.path());
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(run->jobs.several()) << run->jobs.jobs.size() << " jobs";
  EXPECT_EQ(run->diagnostics.count(DiagCode::kJobUnplaced), 0u);
  EXPECT_EQ(run->ranks.size(), 8u);
}

// Two simulated runs of different sizes side by side, at the same hour:
// two jobs, the larger diagnosed, every file placed with its own run.
TEST(JobsSimTest, TwoRunsOfDifferentSizesAreTwoJobs) {
  testing_util::TempDir dir;
  WriteSimulatedRun(dir.File("small"), 1, 2, 1'764'000'000);
  WriteSimulatedRun(dir.File("large"), 2, 3, 1'764'000'000);
  auto run = IngestJobs(dir.path());
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->jobs.jobs.size(), 2u);
  const JobInfo& chosen = run->jobs.jobs[run->jobs.chosen];
  EXPECT_EQ(chosen.world_size, 12);
  EXPECT_EQ(run->ranks.size(), 12u);
  EXPECT_EQ(run->jobs.unplaced, 0u);
  EXPECT_EQ(run->diagnostics.count(DiagCode::kJobOther),
            run->jobs.jobs[1 - run->jobs.chosen].files);
}

// laggard diagnose on two jobs: the list first, the verdict of one, stderr
// says which; --job chooses; --job beyond them is a usage error.
TEST(JobsCliTest, DiagnoseListsTheJobsAndReadsOne) {
  testing_util::TempDir dir;
  for (const char* job : {"w2_compute_1.2", "w4_healthy"}) {
    std::filesystem::copy(testing_util::TestData("realjobs", job), dir.File(job),
                          std::filesystem::copy_options::recursive);
  }
  testing_util::CliResult r = testing_util::RunCli({"diagnose", dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("job 2 of 2: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("jobs: these files hold 2 jobs; this report is about job 2"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("these files hold 2 jobs; diagnosing job 2"), std::string::npos) << r.err;

  testing_util::CliResult first =
      testing_util::RunCli({"diagnose", dir.path(), "--job", "1", "-q"});
  EXPECT_EQ(first.rc, kExitOk) << first.err;
  EXPECT_NE(first.out.find("job 1 of 2: "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("rank 1"), std::string::npos) << first.out;  // w2's compute straggler

  testing_util::CliResult beyond = testing_util::RunCli({"diagnose", dir.path(), "--job", "3"});
  EXPECT_EQ(beyond.rc, kExitNoInput);
  EXPECT_NE(beyond.err.find("--job 3: these files hold 2 jobs (1 to 2)"), std::string::npos)
      << beyond.err;
  testing_util::CliResult one =
      testing_util::RunCli({"diagnose", dir.File("w4_healthy"), "--job", "2"});
  EXPECT_EQ(one.rc, kExitNoInput);
  EXPECT_NE(one.err.find("--job 2: these files hold one job"), std::string::npos) << one.err;
}

}  // namespace
}  // namespace laggard
