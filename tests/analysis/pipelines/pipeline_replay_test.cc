#include "analysis/pipelines/pipeline_replay.h"

#include <gtest/gtest.h>

#include "analysis/pipelines/pipeline_timeline_fixture.h"

namespace laggard {
namespace {

using K = TimelineOpKind;
using testing::BaseDuration;
using testing::OneFOneBTimeline;

OpTimeline Balanced(int32_t dp = 2, int32_t pp = 4, int32_t mb = 8, int32_t steps = 4) {
  return OneFOneBTimeline(dp, pp, mb, steps,
                          [](K k, int32_t, int32_t, int64_t, int32_t) { return BaseDuration(k); });
}

TEST(PipelineReplayTest, BalancedJobRunsAtItsIdeal) {
  auto w = RunWhatIf(Balanced(), std::nullopt);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_DOUBLE_EQ(w.value().slowdown, 1.0);
  EXPECT_FALSE(w.value().fit.any());
  EXPECT_EQ(w.value().per_step.size(), 4u);
  ASSERT_EQ(w.value().by_stage.size(), 4u);
  for (const WhatIfGroup& g : w.value().by_stage) EXPECT_DOUBLE_EQ(g.slowdown, 1.0);
  EXPECT_EQ(w.value().by_worker.size(), 8u);
}

// 1F1B over p stages and m microbatches, forward f, backward b, negligible
// transfers: (m + p - 1) x (f + b) plus the step's tail on the last stage.
TEST(PipelineReplayTest, StepTimeIsTheOneFOneBCriticalPath) {
  OpTimeline t = OneFOneBTimeline(1, 4, 8, 1, [](K k, int32_t, int32_t, int64_t, int32_t) {
    if (k == K::kForwardCompute) return DurationNs{10'000'000};
    if (k == K::kBackwardCompute) return DurationNs{20'000'000};
    return DurationNs{0};
  });
  auto w = RunWhatIf(t, std::nullopt);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_NEAR(w.value().measured_step_ns, (8 + 4 - 1) * 30e6, 1);
}

TEST(PipelineReplayTest, HeavyStageLeadsTheStageDecomposition) {
  OpTimeline t = OneFOneBTimeline(2, 4, 8, 4, [](K k, int32_t, int32_t pp, int64_t, int32_t) {
    DurationNs d = BaseDuration(k);
    bool compute = k == K::kForwardCompute || k == K::kBackwardCompute;
    return compute && pp == 3 ? d * 13 / 10 : d;
  });
  auto w = RunWhatIf(t, std::nullopt);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_GT(w.value().slowdown, 1.05);
  EXPECT_EQ(w.value().by_stage.front().pp, 3);
  EXPECT_GT(w.value().by_stage.front().slowdown, w.value().slowdown);
  EXPECT_GT(w.value().by_stage.front().recovered.value_or(0), 0.05);
  // Both replicas of the stage alike.
  EXPECT_EQ(w.value().by_worker[0].pp, 3);
  EXPECT_EQ(w.value().by_worker[1].pp, 3);
  EXPECT_NEAR(w.value().by_worker[0].slowdown, w.value().by_worker[1].slowdown, 1e-9);
}

TEST(PipelineReplayTest, SlowWorkerLeadsTheWorkerDecomposition) {
  OpTimeline t = OneFOneBTimeline(4, 2, 8, 4, [](K k, int32_t dp, int32_t pp, int64_t, int32_t) {
    DurationNs d = BaseDuration(k);
    bool compute = k == K::kForwardCompute || k == K::kBackwardCompute;
    return compute && dp == 2 && pp == 0 ? d * 14 / 10 : d;
  });
  auto w = RunWhatIf(t, std::nullopt);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const WhatIfGroup& top = w.value().by_worker.front();
  EXPECT_EQ(top.dp, 2);
  EXPECT_EQ(top.pp, 0);
  EXPECT_GT(top.slowdown, w.value().by_worker[1].slowdown + 0.05);
  EXPECT_EQ(w.value().by_dp_rank.front().dp, 2);
}

TEST(PipelineReplayTest, OpsThatDoNotFitAreCountedAndTheRestReplayed) {
  OpTimeline t = Balanced(2, 2, 4, 2);
  // Drop one forward receive (its send goes unpaired) and repeat an optimizer.
  for (size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops[i].kind == K::kForwardRecv && t.ops[i].step == 1) {
      t.ops.erase(t.ops.begin() + static_cast<ptrdiff_t>(i));
      break;
    }
  }
  for (const TimelineOp& op : t.ops) {
    if (op.kind == K::kOptimizer) {
      TimelineOp again = op;
      t.ops.push_back(again);
      break;
    }
  }
  auto w = RunWhatIf(t, std::nullopt);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w.value().fit.duplicates, 1u);
  EXPECT_GE(w.value().fit.unpaired, 1u);
  EXPECT_GE(w.value().fit.missing_compute, 0u);
  EXPECT_EQ(w.value().per_step.size(), 2u);
}

TEST(PipelineReplayTest, WorkersWithoutCoordinatesNeedALayout) {
  OpTimeline t = Balanced(2, 2, 4, 1);
  t.layout.reset();
  for (TimelineWorker& w : t.workers) w.coord_known = false, w.coord = {};
  std::vector<ParallelCoord> coords;
  auto none = ResolveLayout(t, std::nullopt, &coords);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--layout"), std::string::npos);
  EXPECT_NE(none.status().message().find("ranks 0-3"), std::string::npos);
  // With --layout, ranks are placed in Megatron order.
  auto given = ResolveLayout(t, ParallelLayout{2, 2, 1, 1}, &coords);
  ASSERT_TRUE(given.ok()) << given.status().message();
  EXPECT_EQ(coords[3], (ParallelCoord{1, 1, 0}));
  auto w = RunWhatIf(t, ParallelLayout{2, 2, 1, 1});
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w.value().slowdown, 1.0);
}

TEST(PipelineReplayTest, InconsistentLayoutIsALocatedError) {
  OpTimeline t = Balanced(2, 2, 4, 1);
  std::vector<ParallelCoord> coords;
  auto contra = ResolveLayout(t, ParallelLayout{4, 1, 1, 1}, &coords);
  ASSERT_FALSE(contra.ok());
  EXPECT_NE(contra.status().message().find("contradicts"), std::string::npos);
  t.layout.reset();
  auto small = ResolveLayout(t, ParallelLayout{1, 2, 1, 1}, &coords);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("more than the layout"), std::string::npos);
}

}  // namespace
}  // namespace laggard
