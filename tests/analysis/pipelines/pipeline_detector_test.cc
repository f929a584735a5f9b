#include "analysis/pipelines/pipeline_detector.h"

#include <gtest/gtest.h>

#include "analysis/pipelines/pipeline_timeline_fixture.h"

namespace laggard {
namespace {

using K = TimelineOpKind;
using testing::BaseDuration;
using testing::OneFOneBTimeline;

bool IsCompute(K k) { return k == K::kForwardCompute || k == K::kBackwardCompute; }

std::vector<Finding> Decide(OpTimeline t, std::optional<ParallelLayout> layout = std::nullopt) {
  Run run;
  run.files.push_back({"timeline.json.gz", "megatron_timeline", 0, 0, true});
  run.op_timelines.push_back(std::move(t));
  return AnalyzePipelines(run, layout).findings;
}

TEST(PipelineDetectorTest, BalancedJobGivesNothing) {
  auto f = Decide(OneFOneBTimeline(
      2, 4, 8, 4, [](K k, int32_t, int32_t, int64_t, int32_t) { return BaseDuration(k); }));
  EXPECT_TRUE(f.empty());
}

TEST(PipelineDetectorTest, HeavyStageIsImbalanceWithNoWorkerBlamed) {
  auto f = Decide(OneFOneBTimeline(2, 4, 8, 4, [](K k, int32_t, int32_t pp, int64_t, int32_t) {
    return IsCompute(k) && pp == 3 ? BaseDuration(k) * 5 / 4 : BaseDuration(k);
  }));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, FindingCode::kPipelineStageImbalance);
  EXPECT_EQ(f[0].entity.pp_stage, 3);
  EXPECT_FALSE(f[0].entity.rank);
  EXPECT_FALSE(f[0].entity.dp_rank);
  EXPECT_EQ(f[0].ranks, (std::vector<int32_t>{6, 7}));
  ASSERT_TRUE(f[0].recovered);
  EXPECT_GT(*f[0].recovered, 0.05);
}

TEST(PipelineDetectorTest, SlowWorkerIsNamedAgainstItsRolePeers) {
  auto f = Decide(OneFOneBTimeline(4, 2, 8, 4, [](K k, int32_t dp, int32_t pp, int64_t, int32_t) {
    return IsCompute(k) && dp == 1 && pp == 1 ? BaseDuration(k) * 13 / 10 : BaseDuration(k);
  }));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, FindingCode::kPipelineSlowWorker);
  EXPECT_EQ(f[0].entity.rank, 5);  // Megatron order: dp + 4 x pp
  EXPECT_EQ(f[0].entity.dp_rank, 1);
  EXPECT_EQ(f[0].entity.pp_stage, 1);
  EXPECT_NEAR(*f[0].slowdown, 0.3, 0.01);
}

TEST(PipelineDetectorTest, WorkThatMovesBetweenReplicasIsWorkloadImbalance) {
  auto f = Decide(OneFOneBTimeline(4, 2, 8, 8, [](K k, int32_t dp, int32_t, int64_t step, int32_t) {
    return IsCompute(k) && dp == step % 4 ? BaseDuration(k) * 6 / 5 : BaseDuration(k);
  }));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, FindingCode::kPipelineWorkloadImbalance);
  EXPECT_TRUE(f[0].entity.job);
}

TEST(PipelineDetectorTest, SlowReduceScatterIsCommunication) {
  auto f = Decide(OneFOneBTimeline(2, 2, 8, 4, [](K k, int32_t, int32_t pp, int64_t, int32_t) {
    return k == K::kGradsReduceScatter && pp == 0 ? BaseDuration(k) * 20 : BaseDuration(k);
  }));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, FindingCode::kPipelineSlowCommunication);
  EXPECT_EQ(f[0].ranks, (std::vector<int32_t>{0, 1}));
}

TEST(PipelineDetectorTest, TimelineWithoutLayoutAsksForIt) {
  OpTimeline t = OneFOneBTimeline(
      2, 2, 4, 1, [](K k, int32_t, int32_t, int64_t, int32_t) { return BaseDuration(k); });
  t.layout.reset();
  for (TimelineWorker& w : t.workers) w.coord_known = false;
  auto f = Decide(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, FindingCode::kPipelineNoLayout);
  EXPECT_NE(f[0].message.find("timeline.json.gz"), std::string::npos);
  EXPECT_NE(f[0].next_steps.at(0).find("--layout"), std::string::npos);
  EXPECT_TRUE(Decide(t, ParallelLayout{2, 2, 1, 1}).empty());
}

}  // namespace
}  // namespace laggard
