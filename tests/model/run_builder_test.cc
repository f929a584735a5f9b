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

// A rank whose step records name no host takes the host of the agent that
// tied a process to it within the job's steps' span (10 s either side),
// said as rank.host_from_agent; not where two hosts did, nor from a record
// of another time, nor over a host the steps name.
TEST(RunBuilderTest, ARankWithNoHostTakesTheAgentsHost) {
  constexpr TimeNs kS = 1'000'000'000;
  RunBuilder b;
  for (int32_t rank = 0; rank < 4; ++rank) {
    for (int64_t step = 0; step < 3; ++step)
      b.AddStep(rank, step, kS, 1000 * kS + step * kS, SourceRef{0, 1});
  }
  b.SetHost(3, "stated", "steps.log", 1);
  auto proc = [](TimeNs t, int32_t rank) {
    return HostProcReading{
        .time_ns = t, .pid = 100 + rank, .comm = "python3", .rank = rank, .src = SourceRef{1, 7}};
  };
  b.AddHostCpu(HostCpuLog{.host = "node7",
                          .procs = {proc(1001 * kS, 1), proc(1001 * kS, 2), proc(1001 * kS, 3),
                                    proc(1100 * kS, 0)}});  // rank 0: 97 s after the job
  b.AddHostCpu(HostCpuLog{.host = "node8", .procs = {proc(1002 * kS, 2)}});
  laggard::Run run;
  run.files = {InputFileInfo{.path = "steps.log"}, InputFileInfo{.path = "hardware.jsonl"}};
  b.Finalize(run);
  ASSERT_EQ(run.ranks.size(), 4u);
  EXPECT_FALSE(run.ranks[0].info.host.has_value());  // outside the job's span
  EXPECT_EQ(run.ranks[1].info.host.value_or(""), "node7");
  EXPECT_FALSE(run.ranks[2].info.host.has_value());  // two hosts: not guessed
  EXPECT_EQ(run.ranks[3].info.host.value_or(""), "stated");
  EXPECT_EQ(run.diagnostics.count(DiagCode::kRankHostFromAgent), 1u);
}

// Without step times to bound the job: only a rank the logs tie to one pid
// (rank 1's two pids are two jobs' processes); never a rank whose trace
// names its host.
TEST(RunBuilderTest, WithoutStepTimesOnlyARankOfOneProcessTakesTheAgentsHost) {
  RunBuilder b;
  for (int32_t rank = 0; rank < 3; ++rank) {
    for (int64_t step = 0; step < 3; ++step)
      b.AddStep(rank, step, 1'000'000, std::nullopt, SourceRef{0, 1});
  }
  RankTrace trace;
  trace.rank = 2;
  trace.host = "node7.example";
  b.AddTrace(std::move(trace));
  auto proc = [](int64_t pid, int32_t rank) {
    return HostProcReading{.time_ns = 5, .pid = pid, .comm = "python3", .rank = rank};
  };
  b.AddHostCpu(
      HostCpuLog{.host = "node7",
                 .procs = {proc(100, 0), proc(100, 0), proc(101, 1), proc(201, 1), proc(102, 2)}});
  laggard::Run run;
  run.files = {InputFileInfo{.path = "steps.log"}, InputFileInfo{.path = "hardware.jsonl"}};
  b.Finalize(run);
  ASSERT_EQ(run.ranks.size(), 3u);
  EXPECT_EQ(run.ranks[0].info.host.value_or(""), "node7");
  EXPECT_FALSE(run.ranks[1].info.host.has_value());
  EXPECT_FALSE(run.ranks[2].info.host.has_value());
  EXPECT_EQ(run.diagnostics.count(DiagCode::kRankHostFromAgent), 1u);
}

}  // namespace
}  // namespace laggard
