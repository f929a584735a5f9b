// The what-if replay and the verdict on the real 3D-parallel job of the
// shared corpus (megatron_timeline/: ByteDance StragglerAnalysis, dp 2 x
// pp 4), checked against the authors' own published result, read from the
// corpus's result file (never copied here): the slowdown within 3%, the
// stage decomposition in the published order, stage 3 the culprit with no
// worker blamed.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/analyze_run.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "test_paths.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

const std::string kDir = std::string(LAGGARD_CORPUS_DIR) + "/megatron_timeline/";
const std::string kTimeline = kDir + "bytedance_StragglerAnalysis_timeline-ST.json.gz";
const std::string kResult = kDir + "bytedance_StragglerAnalysis_result-ST.json";

#define REQUIRE_CORPUS()                                                        \
  if (!std::filesystem::exists(kTimeline) || !std::filesystem::exists(kResult)) \
  GTEST_SKIP() << "shared corpus not found at " << kDir

class PipelineCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_CORPUS();
    auto readers = MakeDefaultTextReaders(std::nullopt);
    TraceReaderSet traces = MakeDefaultTraceReaders();
    auto r = Ingest({kTimeline}, readers.value().readers, IngestOptions(), traces.readers);
    ASSERT_TRUE(r.ok()) << r.status().message();
    run_ = std::move(r.value());
    analyses_ = AnalyzeRun(run_, AnalysisOptions());
    verdict_ = DecideVerdict(run_, analyses_);
    published_ = nlohmann::json::parse(std::ifstream(kResult));
  }

  const WhatIf& whatif() const { return *analyses_.pipelines.timelines.at(0).whatif; }

  laggard::Run run_;
  Analyses analyses_;
  Verdict verdict_;
  nlohmann::json published_;
};

TEST_F(PipelineCorpusTest, SlowdownMatchesThePublishedOne) {
  ASSERT_EQ(analyses_.pipelines.timelines.size(), 1u);
  ASSERT_TRUE(analyses_.pipelines.timelines[0].whatif);
  double want = published_["blocking_slowdown"].get<double>();
  EXPECT_NEAR(whatif().slowdown / want, 1.0, 0.03) << whatif().slowdown << " vs " << want;
  EXPECT_FALSE(whatif().fit.any());
  EXPECT_EQ(whatif().per_step.size(), published_["step_t_noblk"].size());
}

TEST_F(PipelineCorpusTest, StageDecompositionInThePublishedOrder) {
  std::vector<std::pair<double, int>> published;
  for (const auto& [stage, v] : published_["blocking_decompose_by_stage"].items()) {
    published.emplace_back(v.get<double>(), std::stoi(stage));
  }
  std::sort(published.rbegin(), published.rend());
  ASSERT_EQ(whatif().by_stage.size(), published.size());
  for (size_t i = 0; i < published.size(); ++i) {
    EXPECT_EQ(whatif().by_stage[i].pp, published[i].second) << "place " << i;
    EXPECT_NEAR(whatif().by_stage[i].slowdown / published[i].first, 1.0, 0.03);
  }
  for (const WhatIfGroup& g : whatif().by_dp_rank) {
    double want = published_["blocking_decompose_by_dp_rank"][std::to_string(*g.dp)].get<double>();
    EXPECT_NEAR(g.slowdown / want, 1.0, 0.03) << "dp " << *g.dp;
  }
  for (const WhatIfGroup& g : whatif().by_op_type) {
    double want = published_["blocking_decompose_by_optype"][g.label].get<double>();
    EXPECT_NEAR(g.slowdown / want, 1.0, 0.03) << g.label;
  }
}

TEST_F(PipelineCorpusTest, VerdictIsStageThreeImbalanceWithNoWorkerBlamed) {
  EXPECT_EQ(verdict_.status, VerdictStatus::kJobWide) << verdict_.summary;
  ASSERT_EQ(verdict_.culprits.size(), 1u) << verdict_.summary;
  const Culprit& c = verdict_.culprits[0];
  EXPECT_EQ(c.cause_class, CauseClass::kImbalance);
  EXPECT_EQ(c.entity.pp_stage, 3);
  EXPECT_FALSE(c.entity.rank);
  EXPECT_FALSE(c.entity.dp_rank);
  EXPECT_EQ(c.ranks, (std::vector<int32_t>{6, 7}));
  ASSERT_TRUE(verdict_.whatif);
  ASSERT_TRUE(verdict_.throughput_lost);
  EXPECT_GT(*verdict_.throughput_lost, 0.1);
  EXPECT_NE(verdict_.summary.find("stage 3"), std::string::npos) << verdict_.summary;
}

}  // namespace
}  // namespace laggard
