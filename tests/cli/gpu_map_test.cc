// The rank <-> GPU join as a user meets it in `laggard diagnose`: the
// article's workflow (per-rank step logs, plus `nvidia-smi --query-gpu ...
// --format=csv` from the suspect node and a healthy one) on a simulated
// 16-rank job whose truth is rank 11 (GPU 3 of node-01, 8 GPUs per node).
// The verdict names the right rank or refuses to name one, the mapping used
// is printed (text and JSON), and an untied hot GPU says what would tie it.

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "test_util.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;

using Result = testing_util::CliResult;
using testing_util::RunCli;

// One simulated job, written once: 2 nodes x 8 GPUs, GPU 3 of node-01
// (rank 11) thermally throttled; step logs in sim/node-NN/rank-R.log.
class GpuMapTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    Result r =
        RunCli({"simulate", "--nodes", "2", "--gpus-per-node", "8", "--steps", "60", "--seed", "4",
                "--fault", "thermal@node-01:3", "--no-traces", "--no-network", "--no-nccl-tests",
                "--no-nccl-debug", "--no-effects", "-q", "-o", dir_->File("sim")});
    ASSERT_EQ(r.rc, kExitOk) << r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // A run folder laid out as a user collects the article's inputs: every
  // rank's step log in logs/ (no host in the path or the lines), and the
  // --query-gpu CSV of each of `hosts` in its own folder.
  std::string Collect(const std::string& name, const std::vector<std::string>& hosts) {
    std::string run = dir_->File(name);
    fs::create_directories(run + "/logs");
    for (const auto& node : fs::directory_iterator(dir_->File("sim"))) {
      if (!node.is_directory()) continue;
      for (const auto& f : fs::directory_iterator(node.path())) {
        if (f.path().extension() == ".log")
          fs::copy_file(f.path(), run + "/logs/" + f.path().filename().string());
      }
    }
    for (const std::string& h : hosts) {
      fs::create_directories(run + "/" + h);
      fs::copy_file(dir_->File("sim/" + h + "/nvidia-smi-query.csv"),
                    run + "/" + h + "/nvidia-smi.csv");
    }
    return run;
  }

  static TempDir* dir_;
};

TempDir* GpuMapTest::dir_ = nullptr;

TEST_F(GpuMapTest, SuspectAndHealthyNodeGiveTheRightRankAndShowTheMapping) {
  std::string run = Collect("article", {"node-01", "node-00"});
  Result r = RunCli({"diagnose", run, "--gpus-per-node", "8"});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("verdict: rank 11 (node-01 GPU 3) is the straggler", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("ranks to GPUs: 16 of 16 GPUs tied to ranks\n"
                       "  ranks 0-15 on node-00, node-01: --gpus-per-node 8: rank = (host number "
                       "- 0) x 8 + GPU; numbered from 0: node-00 is one of the run's hosts\n"),
            std::string::npos)
      << r.out;

  Result j = RunCli({"diagnose", run, "--gpus-per-node", "8", "--json", "-"});
  ASSERT_EQ(j.rc, kExitOk) << j.err;
  nlohmann::json doc = nlohmann::json::parse(j.out);
  const nlohmann::json& map = doc.at("rank_map");
  ASSERT_EQ(map.at("ties").size(), 1u) << map.dump();
  EXPECT_EQ(map["ties"][0]["rule"], "host_number");
  EXPECT_EQ(map["ties"][0]["rank_ranges"], nlohmann::json::parse("[[0, 15]]"));
  EXPECT_EQ(map["ties"][0]["hosts"], nlohmann::json::parse(R"(["node-00", "node-01"])"));
  EXPECT_TRUE(map.at("untied").empty());
  EXPECT_EQ(doc["verdict"]["culprits"][0]["rank"], 11);
}

TEST_F(GpuMapTest, OnlyTheSuspectNodeIsNotGuessedAndSaysWhatWouldTieIt) {
  // node-01 alone: the second of 2 nodes when hosts are numbered from 0,
  // the first when from 1. The old rule took its position among the hosts
  // captured and blamed rank 3.
  std::string run = Collect("suspect_only", {"node-01"});
  Result r = RunCli({"diagnose", run, "--gpus-per-node", "8"});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.find("rank 3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.rfind("verdict: node-01 is the straggler", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("GPUs 0-7 of node-01: not tied to ranks: cannot tell whether host "
                       "numbers start at 0 or 1"),
            std::string::npos)
      << r.out;
  // The next steps say which flag or file ties the hot GPU.
  size_t next = r.out.find("next steps");
  ASSERT_NE(next, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("to tie GPU 3 of node-01 to its rank", next), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--first-node 0", next), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank,host,gpu", next), std::string::npos) << r.out;

  Result fixed = RunCli({"diagnose", run, "--gpus-per-node", "8", "--first-node", "0", "-q"});
  ASSERT_EQ(fixed.rc, kExitOk) << fixed.err;
  EXPECT_EQ(fixed.out.rfind("verdict: rank 11 (node-01 GPU 3) is the straggler", 0), 0u)
      << fixed.out;
}

TEST_F(GpuMapTest, StepLogsInHostFoldersTieWithoutAnyFlag) {
  // The simulator's own layout: node-01/rank-11.log names the host of
  // every rank; only node-01's GPU metrics.
  std::string run = dir_->File("by_host");
  fs::create_directories(run);
  for (const char* node : {"node-00", "node-01"}) {
    fs::create_directories(run + "/" + node);
    for (const auto& f : fs::directory_iterator(dir_->File(std::string("sim/") + node))) {
      if (f.path().extension() == ".log")
        fs::copy_file(f.path(), run + "/" + node + "/" + f.path().filename().string());
    }
  }
  fs::copy_file(dir_->File("sim/node-01/nvidia-smi-query.csv"), run + "/node-01/nvidia-smi.csv");
  Result r = RunCli({"diagnose", run});
  ASSERT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("verdict: rank 11 (node-01 GPU 3) is the straggler", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("  ranks 8-15 on node-01: host from the step logs (a field or their "
                       "folder) or the agent that saw the rank's process, GPU = the rank's place "
                       "among the host's consecutive ranks\n"),
            std::string::npos)
      << r.out;
}

TEST_F(GpuMapTest, FirstNodeOutOfRangeIsABadUsage) {
  std::string run = Collect("bad_flag", {"node-01"});
  Result r = RunCli({"diagnose", run, "--gpus-per-node", "8", "--first-node", "-1"});
  EXPECT_EQ(r.rc, kExitNoInput) << r.out;
}

}  // namespace
}  // namespace laggard
