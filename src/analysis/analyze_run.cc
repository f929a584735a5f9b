#include "analysis/analyze_run.h"

#include <vector>

namespace laggard {

Analyses AnalyzeRun(const Run& run, const AnalysisOptions& options) {
  Analyses a;
  a.steps = AnalyzeStepTimes(run, options.steps);
  a.traces = AnalyzeTraces(run, options.traces);
  a.ranks = RankMap::Build(run, options.gpus_per_node, options.first_node);
  std::vector<SuspectRank> suspects = SuspectRanks(run, a.steps, a.traces);
  a.hardware = AnalyzeHardware(run, a.ranks, suspects, options.hardware);
  a.network = AnalyzeNetwork(run, a.ranks, suspects, options.network);
  a.pauses = AnalyzePauses(run, a.steps, a.traces, a.ranks, options.pauses);
  return a;
}

}  // namespace laggard
