// `laggard inspect`: per file the reader that took it (or why it was
// skipped), what it gave and its own data quality, then the merged run; text
// and JSON; diagnose's ingest options; exit codes.

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadFile;
using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzip;
using Json = nlohmann::json;

using Result = testing_util::CliResult;
using testing_util::RunCli;

// Article lines of ranks 0 and 1, steps 0..2: 6 records on lines 1..6.
constexpr const char* kTwoRanks =
    "rank 0, step 0, time 0.81s\nrank 1, step 0, time 0.82s\n"
    "rank 0, step 1, time 0.80s\nrank 1, step 1, time 0.83s\n"
    "rank 0, step 2, time 0.81s\nrank 1, step 2, time 0.82s\n";

// Two GPUs, two samples each (nvidia-smi dmon).
constexpr const char* kDmon =
    "# gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk\n"
    "# Idx     W     C     C     %     %     %     %   MHz   MHz\n"
    "    0   250    45     -    98    40     0     0  2619  1980\n"
    "    1   248    44     -    97    41     0     0  2619  1980\n"
    "    0   251    46     -    99    40     0     0  2619  1980\n"
    "    1   249    45     -    97    41     0     0  2619  1980\n";

// A folder of one step log, one GPU log, a note nobody reads and an empty file.
void WriteMixedFolder(const TempDir& dir) {
  WriteFile(dir.File("run/train.log"), kTwoRanks);
  WriteFile(dir.File("run/node-01/dmon.txt"), kDmon);
  WriteFile(dir.File("run/notes.md"), "# notes\n\nnothing to read here\n");
  WriteFile(dir.File("run/empty.log"), "");
}

// The table row of the file named `name`: the first line that starts with
// its path (data-quality lines further down name it too, after "first at").
std::string RowOf(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find("/" + name + " ");
    if (at != std::string::npos && line[0] == '/') return line;
  }
  ADD_FAILURE() << "no row for " << name << " in:\n" << text;
  return "";
}

const Json* FileEntry(const Json& doc, const std::string& suffix) {
  for (const Json& f : doc["files"]) {
    if (f["path"].get<std::string>().ends_with(suffix)) return &f;
  }
  return nullptr;
}

TEST(InspectTest, TextListsEveryFileWithItsReaderAndWhatItGave) {
  TempDir dir;
  WriteMixedFolder(dir);
  Result r = RunCli({"inspect", dir.File("run")});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("laggard inspect: 4 files, 2 read, 2 skipped", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("verdict"), std::string::npos) << "inspect must not diagnose:\n" << r.out;
  std::map<std::string, std::string> row;
  for (const char* name : {"train.log", "dmon.txt", "notes.md", "empty.log"}) {
    row[name] = RowOf(r.out, name);
  }
  EXPECT_NE(row["train.log"].find("text-log"), std::string::npos) << row["train.log"];
  EXPECT_NE(row["train.log"].find("6 step records, 2 ranks (0-1), steps 0-2"), std::string::npos)
      << row["train.log"];
  EXPECT_NE(row["dmon.txt"].find("nvidia-smi-dmon"), std::string::npos) << row["dmon.txt"];
  EXPECT_NE(row["dmon.txt"].find("2 GPUs, 4 samples; host node-01"), std::string::npos)
      << row["dmon.txt"];
  EXPECT_NE(row["notes.md"].find("skipped"), std::string::npos) << row["notes.md"];
  EXPECT_NE(row["notes.md"].find("file.unrecognised"), std::string::npos) << row["notes.md"];
  EXPECT_NE(row["empty.log"].find("file.empty: empty file"), std::string::npos) << row["empty.log"];
  // The columns line up: every row starts its FORMAT column where the header does.
  size_t header = r.out.find("FILE");
  ASSERT_NE(header, std::string::npos);
  size_t format_col = r.out.find("FORMAT", header) - header;
  EXPECT_EQ(row["train.log"].find("text-log"), format_col) << r.out;
  EXPECT_EQ(row["notes.md"].find("skipped"), format_col) << r.out;
  EXPECT_NE(r.out.find("run after merging: 10 records from 2 files\n"
                       "  steps    6 step records of 2 ranks, steps 0-2\n"
                       "  traces   0\n"
                       "  GPUs     2, 4 samples\n"
                       "  network  0 records\n"),
            std::string::npos)
      << r.out;
}

TEST(InspectTest, JsonDocumentHoldsEachFileAndTheTotals) {
  TempDir dir;
  WriteMixedFolder(dir);
  Result r = RunCli({"inspect", "--json", "-", dir.File("run")});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  Json doc = Json::parse(r.out);
  EXPECT_EQ(doc["schema"], "laggard.inspect/1");
  ASSERT_EQ(doc["files"].size(), 4u);
  const Json* log = FileEntry(doc, "/train.log");
  ASSERT_NE(log, nullptr);
  EXPECT_EQ((*log)["format"], "text-log");
  EXPECT_TRUE((*log)["skipped"].is_null());
  EXPECT_EQ((*log)["records"], 6);
  EXPECT_EQ((*log)["steps"]["records"], 6);
  EXPECT_EQ((*log)["steps"]["ranks"], 2);
  EXPECT_EQ((*log)["steps"]["distinct_steps"], 3);
  EXPECT_EQ((*log)["steps"]["last_step"], 2);
  EXPECT_TRUE((*log)["gpus"].is_null());
  EXPECT_TRUE((*log)["data_quality"].empty());
  const Json* dmon = FileEntry(doc, "/dmon.txt");
  ASSERT_NE(dmon, nullptr);
  EXPECT_EQ((*dmon)["gpus"]["gpus"], 2);
  EXPECT_EQ((*dmon)["gpus"]["samples"], 4);
  EXPECT_EQ((*dmon)["hosts"], Json::array({"node-01"}));
  EXPECT_TRUE((*dmon)["steps"].is_null());
  const Json* notes = FileEntry(doc, "/notes.md");
  ASSERT_NE(notes, nullptr);
  EXPECT_TRUE((*notes)["format"].is_null());
  EXPECT_EQ((*notes)["skipped"]["code"], "file.unrecognised");
  EXPECT_EQ(doc["totals"]["files"], 4);
  EXPECT_EQ(doc["totals"]["files_read"], 2);
  EXPECT_EQ(doc["totals"]["files_skipped"], 2);
  EXPECT_EQ(doc["totals"]["step_records"], 6);
  EXPECT_EQ(doc["totals"]["gpu_samples"], 4);
  EXPECT_EQ(doc["totals"]["skipped_files"], 2);
  EXPECT_EQ(r.out.find("verdict"), std::string::npos);
}

TEST(InspectTest, JsonToAFileKeepsTheTextOnStdout) {
  TempDir dir;
  WriteMixedFolder(dir);
  Result r = RunCli({"inspect", "--json", dir.File("inspect.json"), dir.File("run")});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("laggard inspect: 4 files", 0), 0u) << r.out;
  EXPECT_EQ(Json::parse(ReadFile(dir.File("inspect.json")))["files"].size(), 4u);
}

TEST(InspectTest, SkippedFileSaysWhy) {
  TempDir dir;
  WriteFile(dir.File("train.log"), kTwoRanks);
  WriteFile(dir.File("blob.bin"), std::string("\x7f"
                                              "ELF\x02\x01\x01\0\0\0\0\0",
                                              12));
  Result r = RunCli({"inspect", "--json", "-", dir.path()});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  Json doc = Json::parse(r.out);
  const Json* blob = FileEntry(doc, "/blob.bin");
  ASSERT_NE(blob, nullptr);
  EXPECT_TRUE((*blob)["format"].is_null());
  EXPECT_EQ((*blob)["skipped"]["code"], "file.binary");
  EXPECT_EQ((*blob)["skipped"]["message"], "binary data (NUL or control bytes)");
  EXPECT_EQ((*blob)["records"], 0);
  ASSERT_EQ((*blob)["data_quality"].size(), 1u);
  EXPECT_EQ((*blob)["data_quality"][0]["kind"], "skipped_file");

  Result text = RunCli({"inspect", dir.path()});
  std::string row = RowOf(text.out, "blob.bin");
  EXPECT_NE(row.find(" skipped "), std::string::npos) << row;
  EXPECT_NE(row.find(" 0  file.binary: binary data (NUL or control bytes)"), std::string::npos)
      << row;
}

TEST(InspectTest, BadRecordsAreCountedOnTheirFileWithTheFirstLocation) {
  TempDir dir;
  // Lines 7 and 9 look like step records but cannot be read.
  WriteFile(dir.File("a.log"), std::string(kTwoRanks) + "rank 0, step 3, time ???\n" +
                                   "rank 1, step 3, time 0.8s\n" + "rank 1, step 4, time ?!\n");
  WriteGzip(dir.File("b.log.gz"), "rank 2, step 0, time 0.8s\nrank 2, step 1, time 0.9s\n");
  Result r = RunCli({"inspect", "--json", "-", dir.path()});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  Json doc = Json::parse(r.out);
  const Json* a = FileEntry(doc, "/a.log");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ((*a)["records"], 7);
  ASSERT_EQ((*a)["data_quality"].size(), 1u) << (*a)["data_quality"].dump();
  const Json& garbled = (*a)["data_quality"][0];
  EXPECT_EQ(garbled["code"], "step.garbled");
  EXPECT_EQ(garbled["kind"], "bad_record");
  EXPECT_EQ(garbled["count"], 2);
  EXPECT_EQ(garbled["line"], 7);
  EXPECT_FALSE(garbled.contains("file"));  // the file's own list: the file is the entry's
  const Json* b = FileEntry(doc, "/b.log.gz");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ((*b)["steps"]["first_rank"], 2);
  EXPECT_TRUE((*b)["data_quality"].empty());
  // The run's list names the file.
  ASSERT_EQ(doc["data_quality"].size(), 2u) << doc["data_quality"].dump();
  EXPECT_EQ(doc["data_quality"][0]["code"], "step.garbled");
  EXPECT_EQ(doc["data_quality"][0]["file"], dir.File("a.log"));
  EXPECT_EQ(doc["totals"]["bad_records"], 2);

  Result text = RunCli({"inspect", dir.path()});
  EXPECT_NE(text.out.find("    step.garbled                      2  first at line 7: "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  step.garbled                      2  first at " + dir.File("a.log") +
                          ":7: "),
            std::string::npos)
      << text.out;
}

// Facts are the reader's output before the merge: the merge's checks
// (a step both files report) belong to the run, not to either file.
TEST(InspectTest, DuplicatesAcrossFilesAreTheRunsNotAFiles) {
  TempDir dir;
  WriteFile(dir.File("a.log"), kTwoRanks);
  WriteFile(dir.File("b.log"), "rank 1, step 2, time 0.9s\n");
  Result r = RunCli({"inspect", "--json", "-", dir.path()});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  Json doc = Json::parse(r.out);
  EXPECT_EQ((*FileEntry(doc, "/b.log"))["steps"]["records"], 1);
  EXPECT_TRUE((*FileEntry(doc, "/b.log"))["data_quality"].empty());
  EXPECT_EQ(doc["totals"]["step_records"], 6);
  ASSERT_EQ(doc["data_quality"].size(), 1u) << doc["data_quality"].dump();
  EXPECT_EQ(doc["data_quality"][0]["code"], "step.duplicate");
}

TEST(InspectTest, TakesDiagnosesIngestOptions) {
  TempDir dir;
  // Megatron lines carry no rank: --rank-from names it from the path.
  WriteFile(dir.File("job-7.txt"),
            " iteration        1/     100 | elapsed time per iteration (ms): 1234.5 |\n"
            " iteration        2/     100 | elapsed time per iteration (ms): 1200.1 |\n");
  Json plain = Json::parse(RunCli({"inspect", "--json", "-", dir.path()}).out);
  EXPECT_EQ(plain["files"][0]["steps"]["unattributed"], 2);
  EXPECT_EQ(plain["files"][0]["steps"]["ranks"], 0);
  Result r = RunCli({"inspect", "--json", "-", "--rank-from", "job-(\\d+)", dir.path()});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  Json named = Json::parse(r.out);
  EXPECT_EQ(named["files"][0]["steps"]["unattributed"], 0);
  EXPECT_EQ(named["files"][0]["steps"]["first_rank"], 7);

  WriteFile(dir.File("custom.log"), "it=3 took 812ms\nit=4 took 815ms\n");
  Result custom = RunCli({"inspect", "--json", "-", "--step-pattern",
                          "it=(?<step>\\d+) took (?<time>\\S+)", dir.File("custom.log")});
  ASSERT_EQ(custom.rc, kExitOk) << custom.err;
  EXPECT_EQ(Json::parse(custom.out)["files"][0]["steps"]["records"], 2);
}

TEST(InspectTest, NoUsableInputOrBadUsageExitsTwo) {
  TempDir empty;
  Result none = RunCli({"inspect", empty.path()});
  EXPECT_EQ(none.rc, kExitNoInput);
  EXPECT_EQ(none.out.rfind("laggard inspect: 0 files, 0 read, 0 skipped", 0), 0u) << none.out;
  EXPECT_NE(
      none.err.find(
          "no usable step times, traces, op timelines, GPU metrics, network data, hang evidence or "
          "StragglerDetector reports in 0 files"),
      std::string::npos)
      << none.err;

  TempDir skipped_only;
  WriteFile(skipped_only.File("notes.md"), "nothing about steps\n");
  Result skipped = RunCli({"inspect", "--json", "-", skipped_only.path()});
  EXPECT_EQ(skipped.rc, kExitNoInput);
  EXPECT_EQ(Json::parse(skipped.out)["files"][0]["skipped"]["code"], "file.unrecognised");

  EXPECT_EQ(RunCli({"inspect"}).rc, kExitNoInput);
  Result missing = RunCli({"inspect", "/no/such/laggard/path"});
  EXPECT_EQ(missing.rc, kExitNoInput);
  EXPECT_NE(missing.err.find("/no/such/laggard/path"), std::string::npos) << missing.err;
  Result pattern = RunCli({"inspect", "--step-pattern", "(?<step>\\d+", empty.path()});
  EXPECT_EQ(pattern.rc, kExitNoInput);
  EXPECT_NE(pattern.err.find("--step-pattern"), std::string::npos) << pattern.err;
}

}  // namespace
}  // namespace laggard
