// The findings catalogue: one entry per code, names that say their category,
// the serialized words of patterns and bands, and each default next step
// formatted with the arguments its callers pass.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include <fmt/format.h>

#include "analysis/common/finding.h"

namespace laggard {
namespace {

TEST(FindingCatalogueTest, EveryCodeHasAUniqueNameATitleAndItsCategoryAsThePrefix) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < static_cast<size_t>(FindingCode::kCount); ++i) {
    const FindingInfo& info = Describe(static_cast<FindingCode>(i));
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_FALSE(info.title.empty()) << info.name;
    std::string_view prefix = info.name.substr(0, info.name.find('.'));
    std::string_view category = FindingCategoryName(info.category);
    // "step." / "trace." name the categories "steps" / "traces"; "net." is "network".
    bool matches = category == prefix || category == std::string(prefix) + "s" ||
                   (prefix == "net" && category == "network");
    EXPECT_TRUE(matches) << info.name << " in category " << category;
  }
}

TEST(FindingCatalogueTest, SerializedNamesAreAppendOnly) {
  EXPECT_EQ(Describe(FindingCode::kStepStraggler).name, "step.straggler");
  EXPECT_EQ(Describe(FindingCode::kTraceVariableWork).name, "trace.variable_work");
  EXPECT_EQ(Describe(FindingCode::kHostPause).name, "host.pause");
  EXPECT_EQ(Describe(FindingCode::kStepProfilerWindow).name, "step.profiler_window");
  EXPECT_EQ(Describe(FindingCode::kGpuPowerLimitChanged).name, "gpu.power_limit_changed");
  EXPECT_EQ(Describe(FindingCode::kPipelineStageImbalance).name, "pipeline.stage_imbalance");
  EXPECT_EQ(Describe(FindingCode::kPipelineNoLayout).name, "pipeline.no_layout");
  EXPECT_EQ(Describe(FindingCode::kHangNotJoined).name, "hang.not_joined");
  EXPECT_EQ(Describe(FindingCode::kHangInconclusive).name, "hang.inconclusive");
  EXPECT_EQ(Describe(FindingCode::kHangRankStalled).name, "hang.rank_stalled");
  EXPECT_EQ(Describe(FindingCode::kHangJobStalled).name, "hang.job_stalled");
  EXPECT_EQ(Describe(FindingCode::kHangHostStopped).name, "hang.host_stopped");
  EXPECT_EQ(Describe(FindingCode::kHostCpuContention).name, "host.cpu_contention");
  EXPECT_EQ(Describe(FindingCode::kHostCpuSlow).name, "host.cpu_slow");
  EXPECT_EQ(Describe(FindingCode::kStepCpuTimeHigh).name, "step.cpu_time_high");
  EXPECT_EQ(Describe(FindingCode::kGpuThrottleHistory).name, "gpu.throttle_history");
  EXPECT_EQ(Describe(FindingCode::kToolStragglerReport).name, "tool.straggler_report");
  EXPECT_EQ(Describe(FindingCode::kToolDataLoaderSlow).name, "tool.data_loader_slow");
  EXPECT_EQ(Describe(FindingCode::kGpuP2pBandwidthLow).name, "gpu.p2p_bandwidth_low");
  EXPECT_EQ(Describe(FindingCode::kToolNvrxReport).name, "tool.nvrx_report");
  EXPECT_EQ(Describe(FindingCode::kNetPairFabric).name, "net.pair_fabric");
  EXPECT_EQ(Describe(FindingCode::kNetPairSlow).name, "net.pair_slow");
  EXPECT_EQ(static_cast<size_t>(FindingCode::kNetPairSlow) + 1,
            static_cast<size_t>(FindingCode::kCount));
  EXPECT_EQ(FindingCategoryName(FindingCategory::kPipeline), "pipeline");
  EXPECT_EQ(FindingCategoryName(FindingCategory::kHang), "hang");
  EXPECT_EQ(FindingCategoryName(FindingCategory::kTool), "tool");
}

TEST(FindingCatalogueTest, PatternAndBandWordsAreTheReportsWords) {
  EXPECT_EQ(PatternName(Pattern::kPersistent), "persistent");
  EXPECT_EQ(PatternName(Pattern::kPeriodic), "periodic");
  EXPECT_EQ(PatternName(Pattern::kIntermittent), "intermittent");
  EXPECT_EQ(PatternName(Pattern::kJobWide), "job_wide");
  EXPECT_EQ(PatternName(Pattern::kJitter), "jitter");
  EXPECT_EQ(PatternName(Pattern::kHost), "host");
  EXPECT_EQ(PatternName(Pattern::kBlock), "block");
  EXPECT_EQ(PatternName(Pattern::kScattered), "scattered");
  EXPECT_EQ(PatternName(Pattern::kSwitchGroup), "switch_group");
  EXPECT_EQ(PatternName(Pattern::kPortCounters), "port_counters");
  EXPECT_EQ(PatternName(Pattern::kOnsetAtEnd), "onset_at_end");
  EXPECT_EQ(SlowdownBandName(SlowdownBand::kNormal), "normal");
  EXPECT_EQ(SlowdownBandName(SlowdownBand::kSuspect), "suspect");
  EXPECT_EQ(SlowdownBandName(SlowdownBand::kStraggler), "straggler");
}

TEST(FindingCatalogueTest, DefaultNextStepsFormatWithTheirCallersArguments) {
  EXPECT_EQ(DefaultNextStep(FindingCode::kTraceLateArrival, fmt::arg("rank", 5)),
            "compare rank 5's trace with a healthy rank's around the late collectives: longer "
            "kernels mean the GPU is slow, idle gaps mean it waits for the host");
  EXPECT_EQ(DefaultNextStep(FindingCode::kPeriodicSlowdown, fmt::arg("step", int64_t{120}),
                            fmt::arg("first", int64_t{119}), fmt::arg("last", int64_t{121})),
            "profile the next expected slow step on every rank: step 120 (torch.profiler schedule "
            "covering steps 119-121) to see which rank or host stalls");
  std::string pause =
      DefaultNextStep(FindingCode::kHostPause, fmt::arg("who", std::string("rank 3")),
                      fmt::arg("host", std::string("node-00")));
  EXPECT_EQ(pause.rfind("find what pauses rank 3's process at the slow steps: Python GC", 0), 0u)
      << pause;
  EXPECT_NE(pause.find("`py-spy dump --pid PID` on node-00 during a slow step"), std::string::npos)
      << pause;
  EXPECT_EQ(pause.find('{'), std::string::npos) << pause;
  std::string stopped = DefaultNextStep(FindingCode::kHangHostStopped, fmt::arg("rank", 5));
  EXPECT_EQ(stopped.rfind("see where rank 5 is: `py-spy dump --pid PID` on its host", 0), 0u)
      << stopped;
  std::string stuck =
      DefaultNextStep(FindingCode::kHangStuckCollective, fmt::arg("ranks", std::string("6, 7")));
  EXPECT_EQ(stuck.rfind("on the hosts of ranks 6, 7: `nvidia-smi -q -d ECC,ROW_REMAPPER`", 0), 0u)
      << stuck;
  EXPECT_NE(stuck.find("`ncclras`"), std::string::npos) << stuck;
}

TEST(FindingCatalogueTest, ATemplateMissingItsArgumentComesBackUnformatted) {
  EXPECT_EQ(DefaultNextStep(FindingCode::kTraceLateArrival),
            Describe(FindingCode::kTraceLateArrival).next_step);
  EXPECT_EQ(DefaultNextStep(FindingCode::kJitter), "");
}

TEST(FindingCatalogueTest, EveryRowHasANextStepOrSaysWhyNone) {
  for (size_t i = 0; i < static_cast<size_t>(FindingCode::kCount); ++i) {
    const FindingInfo& info = Describe(static_cast<FindingCode>(i));
    EXPECT_NE(info.next_step.empty(), info.no_next_step.empty()) << info.name;
    if (!info.no_next_step.empty()) {
      EXPECT_EQ(info.severity, Severity::kInfo)
          << info.name << ": only informational rows have none";
    }
    if (info.next_step.find('{') == std::string_view::npos) {
      EXPECT_EQ(DefaultNextStep(static_cast<FindingCode>(i)), info.next_step) << info.name;
    }
  }
}

TEST(FindingCatalogueTest, AFindingWithoutNextStepsGetsItsRowsDefault) {
  Finding warn = MakeFinding(FindingCode::kNetBandwidthLow);
  AddDefaultNextStep(warn);
  ASSERT_EQ(warn.next_steps.size(), 1u);
  EXPECT_EQ(warn.next_steps[0], Describe(FindingCode::kNetBandwidthLow).next_step);

  Finding own = MakeFinding(FindingCode::kNetBandwidthLow);
  own.next_steps = {"rerun nccl-tests between node-03 and node-07"};
  AddDefaultNextStep(own);
  EXPECT_EQ(own.next_steps,
            std::vector<std::string>{"rerun nccl-tests between node-03 and node-07"});

  Finding info = MakeFinding(FindingCode::kToolDataLoaderSlow);
  info.severity = Severity::kInfo;  // a finding that decides nothing gets no step
  AddDefaultNextStep(info);
  EXPECT_TRUE(info.next_steps.empty());

  Finding templated = MakeFinding(FindingCode::kTraceLateArrival);  // names {rank}
  AddDefaultNextStep(templated);
  EXPECT_TRUE(templated.next_steps.empty());
}

TEST(FindingCatalogueTest, MakeFindingTakesTheSeverityFromTheCatalogue) {
  for (size_t i = 0; i < static_cast<size_t>(FindingCode::kCount); ++i) {
    auto code = static_cast<FindingCode>(i);
    Finding f = MakeFinding(code, Entity{.rank = 3});
    EXPECT_EQ(f.code, code);
    EXPECT_EQ(f.severity, Describe(code).severity) << Describe(code).name;
    EXPECT_EQ(f.entity.rank, 3);
  }
  EXPECT_EQ(MakeFinding(FindingCode::kGpuIdleWaiting).severity, Severity::kInfo);
  EXPECT_EQ(MakeFinding(FindingCode::kStepStraggler).severity, Severity::kCritical);
  EXPECT_FALSE(MakeFinding(FindingCode::kStepStraggler).entity.rank);
}

}  // namespace
}  // namespace laggard
