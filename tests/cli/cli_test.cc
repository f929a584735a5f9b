// The CLI's contract: exit codes, the verdict line first, --quiet, --strict,
// --json to stdout, clear errors; guarded outputs, --fail-on, colour and
// the terminal, help, unknown commands.

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "cli/app.h"
#include "cli/formats.h"
#include "cli/run_cli.h"
#include "ingest/readers.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadFile;
using testing_util::TempDir;
using testing_util::WriteFile;

using Result = testing_util::CliResult;
using testing_util::RunCli;

// Runs in `dir` as the working directory, then returns to the one before.
struct InDirectory {
  explicit InDirectory(const std::string& dir) : before(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InDirectory() { std::filesystem::current_path(before); }
  std::filesystem::path before;
};

std::string FourRanks(bool garbled) {
  std::string text;
  for (int s = 0; s < 30; ++s) {
    for (int r = 0; r < 4; ++r) {
      double t = 0.8 + 0.004 * ((s * 7 + r * 3) % 5) + (r == 2 ? 0.2 : 0);
      text += "rank " + std::to_string(r) + ", step " + std::to_string(s) + ", time " +
              std::to_string(t) + "s\n";
    }
  }
  if (garbled) text += "rank 1, step 31, time ???\n";
  return text;
}

TEST(CliTest, VerdictLineComesFirst) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("verdict: rank 2 is the straggler", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("data quality"), std::string::npos);
}

TEST(CliTest, QuietPrintsOnlyTheVerdict) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", "--quiet", dir.path()});
  EXPECT_EQ(r.rc, kExitOk);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
}

TEST(CliTest, JsonToStdoutIsTheOnlyOutput) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", "--json", "-", dir.path()});
  EXPECT_EQ(r.rc, kExitOk);
  EXPECT_EQ(r.out.rfind("{\n  \"schema\": \"laggard.report/1\"", 0), 0u);
}

TEST(CliTest, StrictFailsOnBadRecordsOnly) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(true));
  EXPECT_EQ(RunCli({"diagnose", dir.path()}).rc, kExitOk);
  Result r = RunCli({"diagnose", "--strict", dir.path()});
  EXPECT_EQ(r.rc, kExitStrictFailure);
  EXPECT_NE(r.err.find("1 bad record"), std::string::npos) << r.err;
  TempDir clean;
  WriteFile(clean.File("train.log"), FourRanks(false));
  EXPECT_EQ(RunCli({"diagnose", "--strict", clean.path()}).rc, kExitOk);
}

TEST(CliTest, NoUsableInputIsAClearNonZeroExit) {
  TempDir dir;
  WriteFile(dir.File("notes.txt"), "nothing about steps here\n");
  Result r = RunCli({"diagnose", dir.path()});
  EXPECT_EQ(r.rc, kExitNoInput);
  EXPECT_NE(
      r.err.find(
          "no usable step times, traces, op timelines, GPU metrics, network data, hang evidence or "
          "StragglerDetector reports"),
      std::string::npos)
      << r.err;
  Result missing = RunCli({"diagnose", "/no/such/laggard/path"});
  EXPECT_EQ(missing.rc, kExitNoInput);
  EXPECT_NE(missing.err.find("/no/such/laggard/path"), std::string::npos);
}

TEST(CliTest, BadStepPatternIsReported) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", "--step-pattern", "(?<step>\\d+", dir.path()});
  EXPECT_EQ(r.rc, kExitNoInput);
  EXPECT_NE(r.err.find("--step-pattern"), std::string::npos) << r.err;
}

TEST(CliTest, DemoDiagnosesItsSimulatedRun) {
  TempDir dir;
  Result r = RunCli({"demo", "-o", dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_NE(r.out.find("verdict: rank 13 (node-01 GPU 5) is the straggler"), std::string::npos)
      << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir.File("report.json")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("report.html")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("trace.json")));
  EXPECT_NE(r.out.find("HTML report:  " + dir.File("report.html")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("merged trace: " + dir.File("trace.json")), std::string::npos) << r.out;
}

TEST(CliTest, NegativeOrAbsurdOptionValuesAreUsageErrors) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  for (std::vector<std::string> args : {
           std::vector<std::string>{"diagnose", "--warmup", "-1", dir.path()},
           {"diagnose", "--warmup", "99999999999", dir.path()},
           {"diagnose", "--threads", "-2", dir.path()},
           {"inspect", "--threads", "-2", dir.path()},
           {"watch", "--once", "--duration", "-5"},
           {"watch", "--once", "--gpus-per-node", "0"},
       }) {
    Result r = RunCli(args);
    EXPECT_EQ(r.rc, kExitNoInput) << args[1] << " " << args[2] << ": " << r.out;
    EXPECT_EQ(r.out.find("verdict:"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find(args[1] == "--once" ? args[2] : args[1]), std::string::npos) << r.err;
  }
}

TEST(CliTest, JsonOntoAGivenInputIsRefusedAndTheInputKept) {
  TempDir dir;
  std::string log = WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", log, "--json", log});
  EXPECT_EQ(r.rc, kExitNoInput) << r.err;
  EXPECT_NE(r.err.find("refusing to overwrite"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(log), FourRanks(false));
  // Spelt another way, still the same file.
  Result again = RunCli({"diagnose", log, "--html", dir.path() + "/./train.log"});
  EXPECT_EQ(again.rc, kExitNoInput) << again.err;
  EXPECT_EQ(ReadFile(log), FourRanks(false));
}

TEST(CliTest, JsonOntoAFileReadFromAnInputDirectoryIsRefusedAfterTheVerdict) {
  TempDir dir;
  std::string log = WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", dir.path(), "--json", log});
  EXPECT_EQ(r.rc, kExitOutputFailed) << r.err;
  EXPECT_EQ(r.out.rfind("verdict: rank 2 is the straggler", 0), 0u) << r.out;
  EXPECT_NE(r.err.find("that is an input (read as text-log)"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(log), FourRanks(false));
}

TEST(CliTest, DashWritesHtmlAndTraceToStdoutAndNoFileNamedDash) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  InDirectory cwd(dir.path());
  Result html = RunCli({"diagnose", "train.log", "--html", "-"});
  EXPECT_EQ(html.rc, kExitOk) << html.err;
  EXPECT_EQ(html.out.rfind("<!DOCTYPE html>", 0), 0u) << html.out.substr(0, 200);
  Result trace = RunCli({"diagnose", "train.log", "--trace", "-"});
  EXPECT_EQ(trace.rc, kExitOk) << trace.err;
  EXPECT_EQ(trace.out.rfind("{", 0), 0u) << trace.out.substr(0, 200);
  EXPECT_EQ(trace.out.find("\ndata quality\n"), std::string::npos);  // no text report
  EXPECT_FALSE(std::filesystem::exists(dir.File("-")));
}

TEST(CliTest, TwoOutputsToOnePathAreRefusedBeforeReading) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", dir.File("train.log"), "--json", dir.File("out.json"), "--html",
                     dir.path() + "/sub/../out.json"});
  EXPECT_EQ(r.rc, kExitNoInput);
  EXPECT_NE(r.err.find("--json and --html both write to"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("out.json")));
  Result dashes = RunCli({"diagnose", dir.File("train.log"), "--json", "-", "--trace", "-"});
  EXPECT_EQ(dashes.rc, kExitNoInput);
  EXPECT_NE(dashes.err.find("stdout"), std::string::npos) << dashes.err;
}

TEST(CliTest, AnOutputThatCannotBeWrittenKeepsTheVerdictAndItsOwnExitCode) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result r = RunCli({"diagnose", dir.File("train.log"), "--html", dir.File("report.html"), "--json",
                     dir.path() + "/no/such/dir/report.json"});
  EXPECT_EQ(r.rc, kExitOutputFailed);
  EXPECT_NE(kExitOutputFailed, kExitNoInput);
  EXPECT_EQ(r.out.rfind("verdict: rank 2 is the straggler", 0), 0u) << r.out;
  EXPECT_NE(r.err.find("--json " + dir.path() + "/no/such/dir/report.json: cannot write"),
            std::string::npos)
      << r.err;
  // The other output was still written.
  EXPECT_TRUE(std::filesystem::exists(dir.File("report.html")));
}

TEST(CliTest, FailOnGivesItsExitCodeOnlyForTheVerdictsNamed) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Result hit = RunCli({"diagnose", "--quiet", "--fail-on", "straggler", dir.path()});
  EXPECT_EQ(hit.rc, kExitFailOn) << hit.err;
  EXPECT_EQ(hit.out.rfind("verdict: rank 2 is the straggler", 0), 0u);
  EXPECT_NE(hit.err.find("--fail-on"), std::string::npos);
  EXPECT_EQ(RunCli({"diagnose", "--fail-on", "inconclusive,job-wide", dir.path()}).rc, kExitOk);
  EXPECT_EQ(
      RunCli({"diagnose", "--fail-on", "inconclusive", "--fail-on", "straggler", dir.path()}).rc,
      kExitFailOn);
  EXPECT_EQ(RunCli({"diagnose", "--fail-on", "slow", dir.path()}).rc, kExitNoInput);
  EXPECT_EQ(RunCli({"watch", "--fail-on", "straggler"}).rc, kExitNoInput);
}

TEST(CliTest, ColourOnATerminalUnlessNoColorOrDumb) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Terminal tty;
  tty.stdout_is_tty = true;
  EXPECT_NE(RunCli({"diagnose", dir.path()}, tty).out.find("\x1b["), std::string::npos);
  Terminal no_color = tty;
  no_color.no_color = true;
  EXPECT_EQ(RunCli({"diagnose", dir.path()}, no_color).out.find("\x1b["), std::string::npos);
  Terminal dumb = tty;
  dumb.dumb = true;
  EXPECT_EQ(RunCli({"diagnose", dir.path()}, dumb).out.find("\x1b["), std::string::npos);
  // An explicit --color always wins over NO_COLOR.
  EXPECT_NE(RunCli({"diagnose", "--color", "always", dir.path()}, no_color).out.find("\x1b["),
            std::string::npos);
}

TEST(CliTest, ProgressLineIsClearedBeforeTheVerdict) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  Terminal t;
  t.stderr_is_tty = true;
  t.dumb = true;
  t.progress_after = std::chrono::milliseconds(0);
  std::vector<const char*> argv = {"laggard", "diagnose", dir.path().c_str()};
  std::ostringstream screen;  // stdout and stderr on one terminal
  EXPECT_EQ(RunLaggard(3, argv.data(), screen, screen, t), kExitOk);
  std::string s = screen.str();
  size_t progress = s.find("reading files");
  size_t verdict = s.find("verdict:");
  ASSERT_NE(progress, std::string::npos) << s;
  ASSERT_NE(verdict, std::string::npos) << s;
  EXPECT_LT(progress, verdict);
  // Blanked with spaces and the cursor back at the start of the line: no
  // escape sequence (TERM=dumb), and nothing after the verdict.
  std::string before = s.substr(0, verdict);
  ASSERT_GE(before.size(), 2u);
  EXPECT_EQ(before.back(), '\r') << before;
  EXPECT_EQ(before.find_last_not_of(" \r"), before.rfind("MB") + 1) << before;
  EXPECT_EQ(s.find('\r', verdict), std::string::npos);
  EXPECT_EQ(s.find("\x1b"), std::string::npos);
}

TEST(CliTest, UnknownCommandSaysSoAndBareLaggardPrintsUsage) {
  Result r = RunCli({"diagnoze", "run/"});
  EXPECT_EQ(r.rc, kExitNoInput);
  EXPECT_NE(r.err.find("unknown command 'diagnoze'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("diagnose, inspect"), std::string::npos) << r.err;
  Result bare = RunCli({}, {}, "/opt/somewhere/bin/laggard");
  EXPECT_EQ(bare.rc, kExitNoInput);
  EXPECT_NE(bare.err.find("Usage: laggard [OPTIONS] [SUBCOMMAND]"), std::string::npos) << bare.err;
  EXPECT_NE(bare.err.find("diagnose"), std::string::npos);
  EXPECT_EQ(bare.err.find("/opt/somewhere"), std::string::npos) << bare.err;
  Result usage = RunCli({"diagnose"}, {}, "/opt/somewhere/bin/laggard");
  EXPECT_EQ(usage.rc, kExitNoInput);
  EXPECT_EQ(usage.err.find("/opt/somewhere"), std::string::npos) << usage.err;
}

TEST(CliTest, HelpHasExamplesExitCodesAndTheFormatList) {
  Result help = RunCli({"--help"});
  EXPECT_EQ(help.rc, kExitOk);
  for (const char* want : {"Examples:", "laggard diagnose run/",
                           "Exit codes:", "3  an output (--json, --html, --trace) was not written",
                           "4  --fail-on", "laggard formats"}) {
    EXPECT_NE(help.out.find(want), std::string::npos) << want << "\n" << help.out;
  }
  Result diagnose = RunCli({"diagnose", "--help"});
  EXPECT_NE(diagnose.out.find("Exit codes:"), std::string::npos) << diagnose.out;
  EXPECT_NE(diagnose.out.find("--fail-on"), std::string::npos) << diagnose.out;
  EXPECT_NE(diagnose.out.find("NO_COLOR"), std::string::npos) << diagnose.out;

  Result formats = RunCli({"formats"});
  EXPECT_EQ(formats.rc, kExitOk);
  auto text = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(text.ok());
  TraceReaderSet traces = MakeDefaultTraceReaders();
  std::vector<std::string_view> names;
  for (const TextReader* r : text->readers) names.push_back(r->name());
  for (const TraceReader* r : traces.readers) names.push_back(r->name());
  for (std::string_view name : names) {
    EXPECT_TRUE(FormatDescription(name).has_value()) << name << " has no words in cli/formats.cc";
    EXPECT_NE(formats.out.find("  " + std::string(name) + " "), std::string::npos) << name;
  }
}

TEST(CliTest, SimulateHelpListsFaultKindsAndTargetSyntax) {
  Result r = RunCli({"simulate", "--help"});
  EXPECT_EQ(r.rc, kExitOk);
  for (const char* want : {"Fault kinds", "thermal", "power_cap", "nic_degraded",
                           "shared_switch_congestion", "sequence_length_imbalance", "TARGET:",
                           "node-01:5", "node-01:mlx5_2", "node-04..node-07", "SEVERITY:"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
}

TEST(CliTest, CountsOfOneAreSingular) {
  TempDir dir;
  std::string one_rank;
  for (int s = 0; s < 30; ++s) one_rank += "rank 0, step " + std::to_string(s) + ", time 0.8s\n";
  one_rank += "rank 0, step 31, time ???\n";
  WriteFile(dir.File("train.log"), one_rank);
  Result r = RunCli({"diagnose", "--strict", dir.path()});
  EXPECT_EQ(r.rc, kExitStrictFailure);
  EXPECT_NE(r.err.find("--strict: 1 bad record\n"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("job: 1 rank,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  1 file read, 0 skipped, 30 step records\n"), std::string::npos) << r.out;
}

TEST(CliTest, UnreachablePrometheusErrorIsAWholeSentence) {
  // Port 1 on the loopback: nothing listens there.
  Result r = RunCli({"watch", "--once", "--prometheus", "http://127.0.0.1:1"});
  EXPECT_EQ(r.rc, kExitNoInput);
  EXPECT_NE(r.err.find("cannot reach Prometheus at http://127.0.0.1:1: connection failed"),
            std::string::npos)
      << r.err;
}

TEST(CliTest, ALineOfNulBytesInAStepCsvSkipsThatLineNotTheFile) {
  TempDir dir;
  std::string csv = "rank,step,time\n";
  for (int s = 0; s < 30; ++s) {
    for (int r = 0; r < 4; ++r) {
      csv += fmt::format("{},{},{}\n", r, s, r == 2 ? 1.0 : 0.8 + 0.001 * ((s + r) % 3));
    }
    if (s == 10) csv += std::string(300, '\0') + "2,10,1.0\n";  // a block a crash left unwritten
  }
  WriteFile(dir.File("steps.csv"), csv);
  Result r = RunCli({"diagnose", dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("verdict: rank 2 is the straggler", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("file.binary"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir.File("steps.csv") + ":46"), std::string::npos) << r.out;
}

TEST(CliTest, SimulatorTruthIsNamedAsTheAnswerKeyNotAnUnknownInput) {
  TempDir dir;
  WriteFile(dir.File("train.log"), FourRanks(false));
  WriteFile(dir.File("truth.json"),
            "{\n  \"faults\": [],\n  \"schema\": \"laggard.sim.truth/1\",\n  \"seed\": 1\n}\n");
  Result r = RunCli({"diagnose", dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_NE(r.out.find(dir.File("truth.json") + ": the simulator's answer key"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("text file without step-time records"), std::string::npos) << r.out;
}

// A synchronous job: every rank's step takes the same wall time (each step
// waits for the slowest rank in the all-reduce), and rank 2 computes 30%
// longer. `agent_jsonl`: the agent's steps.jsonl, else a step CSV.
std::string SynchronisedJobWithComputeTimes(bool agent_jsonl, bool with_compute) {
  std::string text = agent_jsonl ? ""
                                 : (with_compute ? "rank,step,step_time_s,compute_s\n"
                                                 : "rank,step,step_time_s\n");
  for (int s = 0; s < 40; ++s) {
    double step = 1.0 + 0.002 * ((s * 7) % 5);
    for (int r = 0; r < 4; ++r) {
      double compute = 0.6 * (r == 2 ? 1.3 : 1.0) * (1 + 0.004 * ((s * 5 + r * 3) % 5));
      if (agent_jsonl) {
        text += fmt::format(
            "{{\"rank\":{},\"step\":{},\"step_time_s\":{:.6f},\"host\":\"node-1\",\"gpu\":{}{}}}\n",
            r, s, step, r,
            with_compute ? fmt::format(",\"phase_compute_s\":{:.6f}", compute) : std::string());
      } else if (with_compute) {
        text += fmt::format("{},{},{:.6f},{:.6f}\n", r, s, step, compute);
      } else {
        text += fmt::format("{},{},{:.6f}\n", r, s, step);
      }
    }
  }
  return text;
}

TEST(CliTest, ComputeOnlyStepTimeNamesTheRankThatSynchronisedStepTimesHide) {
  TempDir dir;
  WriteFile(dir.File("steps.csv"), SynchronisedJobWithComputeTimes(false, false));
  Result without = RunCli({"diagnose", dir.path()});
  EXPECT_EQ(without.out.rfind("verdict: inconclusive — step times are synchronised", 0), 0u)
      << without.out;

  WriteFile(dir.File("steps.csv"), SynchronisedJobWithComputeTimes(false, true));
  Result r = RunCli({"diagnose", "--json", dir.File("report.json"), dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("verdict: rank 2 is the straggler — cause unknown from compute times", 0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("median compute time"), std::string::npos) << r.out;
  std::string json = ReadFile(dir.File("report.json"));
  EXPECT_NE(json.find("\"compared_on\": \"compute_time\""), std::string::npos);
  EXPECT_NE(json.find("\"step_times_synchronised\": true"), std::string::npos);
}

TEST(CliTest, TheAgentsStepLogComputePhaseNamesTheStraggler) {
  TempDir dir;
  WriteFile(dir.File("steps.jsonl"), SynchronisedJobWithComputeTimes(true, true));
  Result r = RunCli({"diagnose", dir.path()});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("verdict: rank 2 (node-1 GPU 2) is the straggler", 0), 0u) << r.out;
}

TEST(CliTest, TooFewAnalysedStepsAreInconclusiveNotNoStraggler) {
  TempDir dir;
  std::string csv = "rank,step,step_time_s\n";
  for (int s = 0; s < 2; ++s) {
    for (int r = 0; r < 4; ++r) csv += fmt::format("{},{},{}\n", r, s, 0.8 + 0.01 * r);
  }
  WriteFile(dir.File("steps.csv"), csv);
  Result r = RunCli({"diagnose", "--warmup", "0", dir.path()});
  EXPECT_EQ(r.out.rfind("verdict: inconclusive — 2 steps analysed on 4 ranks: too few", 0), 0u)
      << r.out;
  Result fail = RunCli({"diagnose", "--warmup", "0", "--fail-on", "inconclusive", dir.path()});
  EXPECT_NE(fail.rc, kExitOk);
}

// The agent's duration flags: out of range or not a duration is a clear
// message naming the flag and its range, before anything is opened.
TEST(CliTest, AgentDurationFlagsOutOfRangeAreRefused) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      {{"--interval", "50ms"}, "--interval must be between 100ms and 1h, got '50ms'"},
      {{"--rank-ttl", "0"}, "--rank-ttl must be a duration above 0, got '0'"},
      {{"--cpu-probe", "1s"}, "--cpu-probe must be between 0 and 100ms, got '1s'"},
      {{"--proc-scan", "500ms"}, "--proc-scan must be 0 or between 1s and 1h, got '500ms'"},
      {{"--proc-scan", "often"}, "--proc-scan must be 0 or between 1s and 1h, got 'often'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"agent", "--listen", "127.0.0.1:0", "--udp", "off"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Result r = RunCli(args);
    EXPECT_NE(r.rc, 0) << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace laggard
