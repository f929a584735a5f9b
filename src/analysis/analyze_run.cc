#include "analysis/analyze_run.h"

#include "analysis/stage_balance.h"

#include <algorithm>
#include <vector>

namespace laggard {

Analyses AnalyzeRun(const Run& run, const AnalysisOptions& options) {
  Analyses a;
  a.layout = ResolveRunLayout(run, options.layout);
  StepDetectorOptions step_options = options.steps;
  if (a.layout.layout) step_options.layout = a.layout.layout->layout;
  a.steps = AnalyzeStepTimes(run, step_options);
  a.traces = AnalyzeTraces(run, options.traces);
  a.ranks = RankMap::Build(run, options.gpus_per_node, options.first_node);
  a.pipelines = AnalyzePipelines(run, options.layout, options.pipelines);
  // Traced ranks against their role peers, stage against stage.
  if (a.layout.layout && a.layout.layout->pipelined()) {
    StageBalance balance = AnalyzeStageBalance(a.traces, *a.layout.layout);
    if (balance.finding) {
      a.pipelines.findings.push_back(std::move(*balance.finding));
      // Compute that differs between ranks is the stages' here, not work
      // that moves: the trace detector compared every rank with every other.
      std::erase_if(a.traces.findings,
                    [](const Finding& f) { return f.code == FindingCode::kTraceVariableWork; });
    }
  }
  std::vector<SuspectRank> suspects = SuspectRanks(run, a.steps, a.traces);
  // A slow worker of an op timeline is a suspect like a straggler: its GPU's
  // metrics may say why.
  for (const Finding& f : a.pipelines.findings) {
    if (f.code != FindingCode::kPipelineSlowWorker || !f.entity.rank) continue;
    if (std::none_of(suspects.begin(), suspects.end(),
                     [&](const SuspectRank& s) { return s.rank == *f.entity.rank; })) {
      suspects.push_back(SuspectRank{*f.entity.rank, std::nullopt, std::nullopt});
    }
  }
  a.hardware = AnalyzeHardware(run, a.ranks, suspects, options.hardware);
  a.network = AnalyzeNetwork(run, a.ranks, suspects, options.network);
  a.pauses = AnalyzePauses(run, a.steps, a.traces, a.ranks, options.pauses);
  a.hang = AnalyzeHang(run, options.hang);
  // The steps of a hung job: live, from now; offline, where the logs end
  // once the ranks' lines said it hung.
  if (!options.live_now_ns && a.hang.hang) {
    a.stall = FindStallsAtHang(ProgressFromSteps(run, /*need_clock=*/false), options.stall);
  }
  if (options.live_now_ns)
    a.stall = FindStalls(ProgressFromSteps(run), *options.live_now_ns, options.stall);
  return a;
}

}  // namespace laggard
