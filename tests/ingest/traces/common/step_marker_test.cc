// --step-marker names (ingest/traces/common/step_marker.h) and the steps of marker
// ranges, apart from any reader.

#include "ingest/traces/common/step_marker.h"

#include <gtest/gtest.h>

#include <string>

namespace laggard {
namespace {

std::optional<int64_t> Number(std::string_view marker, std::string_view name) {
  std::optional<MarkedStep> m = MatchStepMarker(marker, name);
  EXPECT_TRUE(m.has_value()) << name;
  return m ? m->number : std::nullopt;
}

TEST(StepMarkerTest, TheMarkerAloneOrWithANumberIsAStep) {
  EXPECT_EQ(Number("train_step", "train_step"), std::nullopt);
  EXPECT_EQ(Number("train_step", "train_step 12"), 12);
  EXPECT_EQ(Number("train_step", "train_step#12"), 12);
  EXPECT_EQ(Number("train_step", "train_step_12"), 12);
  EXPECT_EQ(Number("train_step", "train_step: 12"), 12);
  EXPECT_EQ(Number("train_step", "train_step=3"), 3);
  EXPECT_EQ(Number("step", "step12"), 12);
  EXPECT_EQ(Number("step", "step-0"), 0);
}

TEST(StepMarkerTest, OtherNamesThatStartWithTheMarkerAreNotSteps) {
  for (std::string_view name :
       {"train_step_fwd", "train_stepper", "train_step 3 backward", "train_step #",
        "train_step 1234567890123456789", "train_ste", "Train_step", " train_step", ""}) {
    EXPECT_FALSE(MatchStepMarker("train_step", name)) << name;
  }
  EXPECT_FALSE(MatchStepMarker("", "anything"));
}

TEST(StepMarkerTest, NumberedRangesOfOneStepMerge) {
  std::vector<TraceStep> steps = StepsOfMarkers({{7, 100, 150}, {6, 0, 90}, {7, 95, 155}});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].step, 7);
  EXPECT_EQ(steps[0].start_ns, 95);
  EXPECT_EQ(steps[0].end_ns, 155);
  EXPECT_EQ(steps[1].step, 6);
}

TEST(StepMarkerTest, RangesWithoutNumbersAreNumberedByStart) {
  // One range without a number: all are numbered by their order.
  std::vector<TraceStep> steps =
      StepsOfMarkers({{std::nullopt, 300, 400}, {5, 100, 200}, {9, 0, 90}});
  ASSERT_EQ(steps.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(steps[static_cast<size_t>(i)].step, i);
  EXPECT_EQ(steps[0].start_ns, 0);
  EXPECT_EQ(steps[1].start_ns, 100);
  EXPECT_EQ(steps[2].start_ns, 300);
  EXPECT_TRUE(StepsOfMarkers({}).empty());
}

TEST(StepMarkerTest, UnusableMarkersSayWhy) {
  EXPECT_EQ(CheckStepMarker("train_step"), "");
  EXPECT_EQ(CheckStepMarker("训练步"), "");
  EXPECT_NE(CheckStepMarker(""), "");
  EXPECT_NE(CheckStepMarker(std::string(201, 'x')), "");
  EXPECT_NE(CheckStepMarker("a\tb"), "");
}

}  // namespace
}  // namespace laggard
