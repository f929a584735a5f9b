// A diagnosed model-parallel run for the report tests (HTML what-if
// section, merged trace): one hand-made 1F1B op timeline
// (analysis/pipelines/pipeline_timeline_fixture.h) of dp x pp workers, 8 microbatches,
// with one fault, run through every detector and the verdict as `laggard
// diagnose` does.

#ifndef LAGGARD_TESTS_REPORT_PIPELINE_REPORT_FIXTURE_H_
#define LAGGARD_TESTS_REPORT_PIPELINE_REPORT_FIXTURE_H_

#include <memory>

#include "analysis/analyze_run.h"
#include "analysis/pipelines/pipeline_timeline_fixture.h"
#include "report/report.h"
#include "verdict/verdict.h"

namespace laggard::testing_util {

enum class PipelineFault {
  kNone,
  kSlowWorker,  // worker (dp 1, pp 1) computes 30% longer
  kHeavyStage,  // the last stage computes 25% longer on every DP rank
  kWorkload,    // DP rank step % dp computes 20% longer in that step
};

struct PipelineDiagnosed {
  Run run;
  Analyses analyses;
  Verdict verdict;
  ReportInput input() const { return ReportInput{run, analyses, verdict}; }
  const WhatIf& whatif() const { return *analyses.pipelines.timelines.at(0).whatif; }
};

inline std::unique_ptr<PipelineDiagnosed> PipelineRun(int32_t dp, int32_t pp, PipelineFault fault,
                                                      int32_t steps = 4) {
  using K = TimelineOpKind;
  auto d = std::make_unique<PipelineDiagnosed>();
  d->run.files.push_back({"timeline.json.gz", "megatron_timeline", 0, 0, true});
  d->run.op_timelines.push_back(testing::OneFOneBTimeline(
      dp, pp, 8, steps, [=](K k, int32_t w_dp, int32_t w_pp, int64_t step, int32_t) {
        DurationNs base = testing::BaseDuration(k);
        if (k != K::kForwardCompute && k != K::kBackwardCompute) return base;
        switch (fault) {
          case PipelineFault::kNone: return base;
          case PipelineFault::kSlowWorker: return w_dp == 1 && w_pp == 1 ? base * 13 / 10 : base;
          case PipelineFault::kHeavyStage: return w_pp == pp - 1 ? base * 5 / 4 : base;
          case PipelineFault::kWorkload: return w_dp == step % dp ? base * 6 / 5 : base;
        }
        return base;
      }));
  d->analyses = AnalyzeRun(d->run, AnalysisOptions{});
  d->verdict = DecideVerdict(d->run, d->analyses);
  return d;
}

}  // namespace laggard::testing_util

#endif  // LAGGARD_TESTS_REPORT_PIPELINE_REPORT_FIXTURE_H_
