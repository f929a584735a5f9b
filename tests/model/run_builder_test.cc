// RunBuilder's rank table: ranks in any order, from any offset, merged
// across builders (one per file) without a table of every rank per file.

#include <gtest/gtest.h>

#include <vector>

#include "model/run.h"

namespace laggard {
namespace {

// The ranks of `run` and each one's step numbers, in order.
std::vector<std::pair<int32_t, std::vector<int64_t>>> RanksAndSteps(const Run& run) {
  std::vector<std::pair<int32_t, std::vector<int64_t>>> out;
  for (const StepSeries& s : run.ranks) {
    std::vector<int64_t> steps;
    for (const StepRecord& r : s.steps) steps.push_back(r.step);
    out.emplace_back(s.info.rank, steps);
  }
  return out;
}

TEST(RunBuilderTest, RanksInDescendingOrderFromAHighOffsetKeepTheirSteps) {
  RunBuilder b;
  for (int64_t step = 0; step < 3; ++step) {
    for (int32_t rank = 99999; rank >= 99990; --rank) {
      b.AddStep(rank, step, 1'000'000 + rank, std::nullopt, SourceRef{0, 1});
    }
  }
  b.AddStep(7, 0, 5, std::nullopt, SourceRef{0, 2});  // far below the rest
  laggard::Run run;
  b.Finalize(run);
  auto got = RanksAndSteps(run);
  ASSERT_EQ(got.size(), 11u);
  EXPECT_EQ(got[0].first, 7);
  EXPECT_EQ(got[0].second, std::vector<int64_t>({0}));
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, 99989 + static_cast<int32_t>(i));
    EXPECT_EQ(got[i].second, std::vector<int64_t>({0, 1, 2}));
    EXPECT_EQ(run.ranks[i].steps[0].duration_ns, 1'000'000 + got[i].first);
  }
}

TEST(RunBuilderTest, BuildersOfDisjointRankRangesMerge) {
  RunBuilder all;
  for (int32_t node = 3; node >= 0; --node) {  // files of 8 ranks each, last node first
    RunBuilder file;
    for (int32_t rank = node * 8; rank < node * 8 + 8; ++rank) {
      file.AddStep(rank, 0, 100 + rank, std::nullopt, SourceRef{static_cast<uint32_t>(node), 1});
    }
    all.MergeFrom(std::move(file));
  }
  RunBuilder again;  // the same rank once more, from another file
  again.AddStep(12, 1, 50, std::nullopt, SourceRef{9, 1});
  all.MergeFrom(std::move(again));
  laggard::Run run;
  all.Finalize(run);
  ASSERT_EQ(run.ranks.size(), 32u);
  for (int32_t r = 0; r < 32; ++r) {
    EXPECT_EQ(run.ranks[static_cast<size_t>(r)].info.rank, r);
    EXPECT_EQ(run.ranks[static_cast<size_t>(r)].steps[0].duration_ns, 100 + r);
  }
  EXPECT_EQ(run.ranks[12].steps.size(), 2u);
}

TEST(RunBuilderTest, ABuilderIsReusableAfterFinalize) {
  RunBuilder b;
  b.AddStep(500, 0, 10, std::nullopt, SourceRef{0, 1});
  laggard::Run first;
  b.Finalize(first);
  b.AddStep(3, 0, 20, std::nullopt, SourceRef{0, 1});
  laggard::Run second;
  b.Finalize(second);
  ASSERT_EQ(second.ranks.size(), 1u);
  EXPECT_EQ(second.ranks[0].info.rank, 3);
  EXPECT_EQ(second.ranks[0].steps[0].duration_ns, 20);
}

}  // namespace
}  // namespace laggard
