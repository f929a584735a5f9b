#include "analysis/analyze_run.h"

#include "analysis/hardware/p2p_links.h"
#include "analysis/pipelines/stage_balance.h"
#include "analysis/suspects.h"

#include <algorithm>
#include <vector>

namespace laggard {

namespace {

// In a pipeline a stage's ranks wait for the stage before them at every
// receive, so the ranks of one stage "arrive late together" by the
// schedule's doing. With stages that compute alike (no stage imbalance),
// a late group that is exactly one stage is that, not a straggler: real
// healthy dp 2 x pp 2 jobs named stage 1's ranks so (2026-12-03).
void DropStageLateGroup(const RunLayout& layout, TraceAnalysis& traces) {
  auto is_stage = [&](const Finding& f) {
    if (f.code != FindingCode::kTraceLateGroup || f.ranks.empty()) return false;
    std::vector<int32_t> ranks = f.ranks;
    std::sort(ranks.begin(), ranks.end());
    return ranks == layout.StageRanks(layout.Coord(ranks.front()).pp);
  };
  if (std::none_of(traces.findings.begin(), traces.findings.end(), is_stage)) return;
  std::erase_if(traces.findings, is_stage);
  traces.culprit.reset();
  traces.throughput_lost.reset();
}

}  // namespace

std::vector<const Finding*> Analyses::AllFindings() const {
  std::vector<const Finding*> all;
  for (const std::vector<Finding>* fs : FindingLists(*this)) {
    for (const Finding& f : *fs) all.push_back(&f);
  }
  return all;
}

std::vector<Finding*> Analyses::MutableFindings() {
  std::vector<Finding*> all;
  for (std::vector<Finding>* fs : FindingLists(*this)) {
    for (Finding& f : *fs) all.push_back(&f);
  }
  return all;
}

Analyses AnalyzeRun(const Run& run, const AnalysisOptions& options) {
  Analyses a;
  a.layout = ResolveRunLayout(run, options.layout);
  StepDetectorOptions step_options = options.steps;
  if (a.layout.layout) step_options.layout = a.layout.layout->layout;
  a.steps = AnalyzeStepTimes(run, step_options);
  TraceDetectorOptions trace_options = options.traces;
  if (a.layout.layout && a.layout.layout->pipelined() && trace_options.role_of_rank.empty()) {
    const RunLayout& l = *a.layout.layout;
    for (int32_t r = 0; r < l.layout.world(); ++r) {
      std::vector<int32_t> peers = l.RolePeers(r);
      trace_options.role_of_rank.push_back(peers.empty() ? r : peers.front());
    }
  }
  a.traces = AnalyzeTraces(run, trace_options);
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
    } else {
      DropStageLateGroup(*a.layout.layout, a.traces);
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
  a.host_cpu = AnalyzeHostCpu(run, options.host_cpu);
  a.host_cpu.seen_by_agent = RanksOnHostCpus(run);
  MeasureWindowProbes(run, a.steps.job.profiled_steps, a.host_cpu);
  ExplainJobSlowdownsByHostCpu(run, a.steps.findings, options.host_cpu);
  const bool cpu_only =
      !a.traces.ranks.empty() && std::all_of(a.traces.ranks.begin(), a.traces.ranks.end(),
                                             [](const RankTraceStats& t) { return t.cpu_only; });
  ExplainVariableWorkByHostCpu(run, a.steps.job.profiled_steps, cpu_only, a.host_cpu,
                               a.traces.findings, options.host_cpu);
  a.hang = AnalyzeHang(run, options.hang);
  a.tool_reports = AnalyzeToolReports(run);
  for (Finding& f : P2pLinkFindings(run)) a.hardware.findings.push_back(std::move(f));
  // The steps of a hung job: live, from now; offline, where the logs end
  // once the ranks' lines said it hung.
  if (!options.live_now_ns && a.hang.hang) {
    a.stall = FindStallsAtHang(ProgressFromSteps(run, /*need_clock=*/false), options.stall);
  }
  if (options.live_now_ns)
    a.stall = FindStalls(ProgressFromSteps(run), *options.live_now_ns, options.stall);
  for (Finding* f : a.MutableFindings()) AddDefaultNextStep(*f);
  return a;
}

}  // namespace laggard
