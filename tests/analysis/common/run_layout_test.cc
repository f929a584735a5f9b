// The run-level parallel layout: from Megatron launch logs (the corpus's
// real Megatron-DeepSpeed log and the current wording), from Kineto
// process groups that name their axis, and the rules between them.

#include "analysis/common/run_layout.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/step_logs/megatron_layout.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestAll;
using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

std::optional<LayoutStatement> Scan(const std::vector<std::string>& lines, std::string* problem) {
  MegatronLayoutScanner s;
  uint32_t n = 0;
  for (const std::string& l : lines) s.Offer(l, ++n);
  return s.Result(problem);
}

TEST(MegatronLayoutTest, ReadsTheOldLayoutLine) {
  std::string problem;
  auto st = Scan({"> initializing torch distributed ...",
                  "using world size: 64, data-parallel-size: 1, tensor-model-parallel size: 4, "
                  "pipeline-model-parallel size: 16 "},
                 &problem);
  ASSERT_TRUE(st) << problem;
  EXPECT_EQ(st->layout, (ParallelLayout{.dp = 1, .pp = 16, .tp = 4}));
  EXPECT_EQ(st->src.line, 2u);
}

TEST(MegatronLayoutTest, ReadsTheCurrentLayoutLineWithContextParallel) {
  std::string problem;
  auto st = Scan({"using world size: 16, data-parallel size: 2, context-parallel size: 2, "
                  "hierarchical context-parallel sizes: None, tensor-model-parallel size: 2, "
                  "pipeline-model-parallel size: 2"},
                 &problem);
  ASSERT_TRUE(st) << problem;
  EXPECT_EQ(st->layout, (ParallelLayout{.dp = 2, .pp = 2, .tp = 2, .vpp = 1, .cp = 2}));
}

TEST(MegatronLayoutTest, ArgumentDumpGivesTheLayoutAndTheVirtualStages) {
  std::string problem;
  auto st = Scan({"------------------------ arguments ------------------------",
                  "  data_parallel_size .............................. 2",
                  "  pipeline_model_parallel_size .................... 4",
                  "  tensor_model_parallel_size ...................... 1",
                  "  virtual_pipeline_model_parallel_size ............ 2",
                  "  world_size ...................................... 8"},
                 &problem);
  ASSERT_TRUE(st) << problem;
  EXPECT_EQ(st->layout, (ParallelLayout{.dp = 2, .pp = 4, .tp = 1, .vpp = 2}));
}

TEST(MegatronLayoutTest, SizesThatDoNotMakeTheWorldAreAProblemNotALayout) {
  std::string problem;
  auto st = Scan({"using world size: 8, data-parallel size: 2, tensor-model-parallel size: 2, "
                  "pipeline-model-parallel size: 4"},
                 &problem);
  EXPECT_FALSE(st);
  EXPECT_NE(problem.find("world size 8"), std::string::npos) << problem;
}

TEST(MegatronLayoutTest, OrdinaryLinesStateNothing) {
  std::string problem;
  EXPECT_FALSE(Scan({"hello world", "tensor parallel is great", "iteration 5/10 |"}, &problem));
  EXPECT_TRUE(problem.empty());
}

TEST(MegatronLayoutTest, CorpusMegatronDeepSpeedLogStatesItsLayout) {
  const std::string path = std::string(LAGGARD_CORPUS_DIR) +
                           "/training_logs/bigscience_meg_ds_3d_gpt2_perf_n16-ds-off.out";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared corpus not found at " << path;
  laggard::Run run = IngestPaths({path});
  ASSERT_EQ(run.layouts.size(), 1u);
  EXPECT_EQ(run.layouts[0].layout, (ParallelLayout{.dp = 1, .pp = 16, .tp = 4}));
  EXPECT_EQ(run.layouts[0].source, LayoutSource::kLaunchLog);
  EXPECT_EQ(run.layouts[0].src.line, 49u);
}

// A Kineto trace of `rank` in a dp 2 x pp 2 x tp 2 job, with the process
// groups Megatron-core (torch >= 2.4) names.
std::string KinetoWithGroups(int rank, const std::string& tp_desc = "TENSOR_MODEL_PARALLEL_GROUP") {
  ParallelLayout l{.dp = 2, .pp = 2, .tp = 2};
  ParallelCoord c = MegatronCoord(l, rank);
  auto list = [](std::vector<int> v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::vector<int> tp, dp, pp;
  for (int r = 0; r < 8; ++r) {
    ParallelCoord o = MegatronCoord(l, r);
    if (o.dp == c.dp && o.pp == c.pp) tp.push_back(r);
    if (o.tp == c.tp && o.pp == c.pp) dp.push_back(r);
    if (o.tp == c.tp && o.dp == c.dp) pp.push_back(r);
  }
  auto group = [&](const char* name, const std::string& desc, const std::vector<int>& ranks) {
    return std::string("{\"pg_name\": \"") + name + "\", \"pg_desc\": \"" + desc +
           "\", \"backend_config\": \"cuda:nccl\", \"pg_size\": " + std::to_string(ranks.size()) +
           ", \"ranks\": " + list(ranks) + "}";
  };
  std::string groups =
      "{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": "
      "\"cuda:nccl\", \"pg_size\": 8, \"ranks\": []}, " +
      group("1", "DATA_PARALLEL_GROUP", dp) + ", " + group("2", tp_desc, tp) + ", " +
      group("3", "PIPELINE_MODEL_PARALLEL_GROUP", pp);
  return "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " +
         std::to_string(rank) + ", \"world_size\": 8, \"pg_count\": 4, \"pg_config\": [" + groups +
         "], \"nccl_version\": \"2.21.5\"}, \"traceEvents\": [{\"ph\": \"X\", \"cat\": "
         "\"kernel\", \"name\": \"ampere_sgemm_128x64_nn\", \"pid\": 0, \"tid\": 7, \"ts\": 10, "
         "\"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7}}]}";
}

TEST(ProcessGroupLayoutTest, KinetoReaderKeepsTheProcessGroups) {
  TempDir dir;
  laggard::Run run = IngestAll({WriteFile(dir.path() + "/rank3.json", KinetoWithGroups(3))});
  ASSERT_EQ(run.traces.size(), 1u);
  const auto& g = run.traces[0].groups;
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].desc, "default_pg");
  EXPECT_TRUE(g[0].whole_world);
  EXPECT_EQ(g[3].desc, "PIPELINE_MODEL_PARALLEL_GROUP");
  EXPECT_EQ(g[3].ranks, (std::vector<int32_t>{3, 7}));
}

TEST(ProcessGroupLayoutTest, NamedGroupsGiveTheLayout) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int r : {0, 5}) {
    paths.push_back(
        WriteFile(dir.path() + "/rank" + std::to_string(r) + ".json", KinetoWithGroups(r)));
  }
  laggard::Run run = IngestAll(paths);
  RunLayoutResult res = ResolveRunLayout(run, std::nullopt);
  ASSERT_TRUE(res.layout);
  EXPECT_EQ(res.layout->layout, (ParallelLayout{.dp = 2, .pp = 2, .tp = 2}));
  EXPECT_EQ(res.layout->source, LayoutSource::kProcessGroups);
  EXPECT_EQ(res.layout->RolePeers(5), (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(res.layout->StageRanks(0), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(ProcessGroupLayoutTest, GroupsAgainstMegatronsOrderGiveNoLayout) {
  TempDir dir;
  // The tensor-parallel group of rank 0 is {0, 2}: a data-parallel group in
  // Megatron's order, so the description and the members disagree.
  laggard::Run run =
      IngestAll({WriteFile(dir.path() + "/rank0.json", KinetoWithGroups(0, "mesh_dp")),
                 WriteFile(dir.path() + "/rank1.json", KinetoWithGroups(1))});
  RunLayoutResult res = ResolveRunLayout(run, std::nullopt);
  EXPECT_FALSE(res.layout);
  ASSERT_FALSE(res.conflicts.empty());
}

// Real producers: HTA's test traces (torch 2.x) in the shared corpus.
TEST(ProcessGroupLayoutTest, CorpusTracesKeepTheirProcessGroups) {
  const std::string dir = std::string(LAGGARD_CORPUS_DIR) + "/kineto/";
  const std::string nccl = dir + "hta__nccl_parser_config__nccl_data.json.gz";
  const std::string gloo = dir + "hta__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz";
  if (!std::filesystem::exists(nccl) || !std::filesystem::exists(gloo)) {
    GTEST_SKIP() << "shared corpus not found at " << dir;
  }
  laggard::Run a = IngestAll({nccl});
  ASSERT_EQ(a.traces.size(), 1u);
  ASSERT_EQ(a.traces[0].groups.size(), 1u);
  EXPECT_EQ(a.traces[0].groups[0].desc, "default_pg");
  EXPECT_EQ(a.traces[0].groups[0].ranks, (std::vector<int32_t>{0, 1}));
  laggard::Run b = IngestAll({gloo});
  ASSERT_EQ(b.traces.size(), 1u);
  ASSERT_EQ(b.traces[0].groups.size(), 11u);  // default_pg, 9 numbered, one hash-named
  EXPECT_EQ(b.traces[0].groups[1].desc, "undefined");
  EXPECT_EQ(b.traces[0].groups[1].ranks.size(), 300u);
  // Undescribed groups of every rank: no layout, and no claim of one.
  RunLayoutResult res = ResolveRunLayout(b, std::nullopt);
  EXPECT_FALSE(res.layout);
  EXPECT_TRUE(res.conflicts.empty());
}

TEST(ProcessGroupLayoutTest, BadGroupEntriesAreSkippedAndTheTraceStillReads) {
  TempDir dir;
  std::string t = KinetoWithGroups(1);
  const std::string good = "\"pg_config\": [";
  t.replace(t.find(good), good.size(),
            good +
                "7, {\"pg_name\": \"9\", \"pg_desc\": \"DATA_PARALLEL_GROUP\", \"ranks\": "
                "[\"a\", -3]}, {\"pg_desc\": \"no name\", \"ranks\": [1]}, ");
  laggard::Run run = IngestAll({WriteFile(dir.path() + "/rank1.json", t)});
  ASSERT_EQ(run.traces.size(), 1u);
  EXPECT_EQ(run.traces[0].ops.size(), 1u);
  // The first entry is no object: the groups of that list are not trusted.
  EXPECT_TRUE(run.traces[0].groups.empty());
  EXPECT_FALSE(ResolveRunLayout(run, std::nullopt).layout);
}

TEST(ProcessGroupLayoutTest, UndescribedGroupsGiveNoLayout) {
  TempDir dir;
  std::string t = KinetoWithGroups(0);
  for (const char* d :
       {"DATA_PARALLEL_GROUP", "TENSOR_MODEL_PARALLEL_GROUP", "PIPELINE_MODEL_PARALLEL_GROUP"}) {
    t.replace(t.find(d), std::string_view(d).size(), "undefined");
  }
  laggard::Run run = IngestAll({WriteFile(dir.path() + "/rank0.json", t)});
  EXPECT_FALSE(ResolveRunLayout(run, std::nullopt).layout);
}

TEST(RunLayoutTest, FlagWinsAndLaunchLogsMustAgree) {
  TempDir dir;
  auto log = [&](const std::string& name, int dp, int pp) {
    return WriteFile(dir.path() + "/" + name,
                     "using world size: " + std::to_string(dp * pp) +
                         ", data-parallel size: " + std::to_string(dp) +
                         ", tensor-model-parallel size: 1, "
                         "pipeline-model-parallel size: " +
                         std::to_string(pp) + "\nrank 0, step 1, time 0.5s\nrank " +
                         std::to_string(dp * pp - 1) + ", step 1, time 0.5s\n");
  };
  laggard::Run agree = IngestPaths({log("a.log", 2, 2), log("b.log", 2, 2)});
  RunLayoutResult a = ResolveRunLayout(agree, std::nullopt);
  ASSERT_TRUE(a.layout);
  EXPECT_EQ(a.layout->source, LayoutSource::kLaunchLog);
  EXPECT_EQ(a.layout->layout, (ParallelLayout{.dp = 2, .pp = 2, .tp = 1}));

  laggard::Run disagree = IngestPaths({log("c.log", 2, 2), log("d.log", 1, 4)});
  RunLayoutResult d = ResolveRunLayout(disagree, std::nullopt);
  EXPECT_FALSE(d.layout);
  ASSERT_EQ(d.conflicts.size(), 1u);
  RunLayoutResult f = ResolveRunLayout(disagree, ParallelLayout{.dp = 1, .pp = 4, .tp = 1});
  ASSERT_TRUE(f.layout);
  EXPECT_EQ(f.layout->source, LayoutSource::kFlag);

  // A layout smaller than the ranks seen is not used.
  RunLayoutResult small = ResolveRunLayout(agree, ParallelLayout{.dp = 1, .pp = 2, .tp = 1});
  EXPECT_FALSE(small.layout);
  EXPECT_EQ(small.conflicts.size(), 1u);
}

}  // namespace
}  // namespace laggard
