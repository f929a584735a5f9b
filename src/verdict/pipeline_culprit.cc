// The verdict of an op timeline: the pipeline detector's finding
// (analysis/pipelines/pipeline_detector.h) becomes the culprit, and the what-if
// replay gives its cost. A slow worker is a rank culprit, which the
// hardware and network evidence of its GPU and host enrich like any other
// (verdict.cc); a stage, the work or a communication kind is a culprit of
// the whole job with its ranks.

#include <fmt/format.h>

#include <algorithm>

#include "analysis/pipelines/stage_balance.h"
#include "base/stats/robust_stats.h"
#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

const Finding* PipelineFinding(const Analyses& a) {
  for (FindingCode code :
       {FindingCode::kPipelineSlowWorker, FindingCode::kPipelineSlowCommunication,
        FindingCode::kPipelineWorkloadImbalance, FindingCode::kPipelineStageImbalance}) {
    if (const Finding* f = FirstOf(a.pipelines.findings, code)) return f;
  }
  return nullptr;
}

const WhatIf* WhatIfOf(const Analyses& a, const Finding& f) {
  for (const PipelineMetrics& m : a.pipelines.timelines) {
    for (const Evidence& e : f.evidence) {
      if (m.whatif && e.source && e.source->file == m.file) return &*m.whatif;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<double> ComputePerStep(const TraceAnalysis& traces, int32_t rank) {
  for (const RankTraceStats& s : traces.ranks) {
    if (s.rank == rank && s.steps > 0) {
      return static_cast<double>(s.compute_busy_ns) / static_cast<double>(s.steps);
    }
  }
  return std::nullopt;
}

// Whether every culprit of `v` is explained by the stage a stage imbalance
// finding names (stage_balance.h): a rank of that stage (its ranks compute
// alike); a rank that computes no more than its role peers (same stage and
// tp rank): compared with ranks of other stages it looked slow, against its
// own role it is not; or a rank that computes less per step than the heavy
// stage's ranks: it waits for that stage whatever its own speed, so it is
// not what holds the pipeline up (a shared host's noise can make one rank
// of a light stage 20% slower than its role peer and still half the heavy
// stage's time; CI run of 2026-12-02).
bool CulpritsAreAnImbalancedStage(const Verdict& v, const Analyses& a) {
  const Finding* stage = FirstOf(a.pipelines.findings, FindingCode::kPipelineStageImbalance);
  if (stage == nullptr || v.culprits.empty() || !a.layout.layout) return false;
  const RunLayout& layout = *a.layout.layout;
  std::vector<double> heavy;
  for (int32_t r : stage->ranks) {
    if (auto c = ComputePerStep(a.traces, r)) heavy.push_back(*c);
  }
  const std::optional<double> heavy_median = Median(heavy);
  auto explained = [&](int32_t r) {
    if (std::find(stage->ranks.begin(), stage->ranks.end(), r) != stage->ranks.end()) return true;
    auto own = ComputePerStep(a.traces, r);
    if (own && heavy_median && *own < *heavy_median) return true;
    std::vector<double> peers;
    for (int32_t p : layout.RolePeers(r)) {
      if (p == r) continue;
      if (auto c = ComputePerStep(a.traces, p)) peers.push_back(*c);
    }
    auto median = Median(peers);
    return own && median && *median > 0 && *own / *median < 1 + StageBalanceOptions().member_band;
  };
  for (const Culprit& c : v.culprits) {
    if (!c.ranks.empty()) {
      if (!std::all_of(c.ranks.begin(), c.ranks.end(), explained)) return false;
    } else if (!c.entity.rank || !explained(*c.entity.rank)) {
      return false;
    }
  }
  return true;
}

std::optional<Verdict> PipelineVerdict(const Analyses& a) {
  const Finding* f = PipelineFinding(a);
  if (f == nullptr) {
    const Finding* missing = FirstOf(a.pipelines.findings, FindingCode::kPipelineNoLayout);
    if (missing == nullptr) return std::nullopt;
    Verdict v;
    v.status = VerdictStatus::kInconclusive;
    v.summary = "verdict: inconclusive — " + missing->message;
    v.next_steps = missing->next_steps;
    return v;
  }
  Verdict v;
  Culprit c;
  c.entity = f->entity;
  c.cause = f->cause;
  c.confidence = std::min(f->confidence, kSingleSourceCap);
  c.slowdown = f->slowdown;
  c.pattern = f->pattern;
  c.ranks = f->ranks;
  const WhatIf* whatif = WhatIfOf(a, *f);
  c.evidence.push_back(whatif ? "what-if: " + f->message : f->message);
  for (const Evidence& e : f->evidence) c.evidence.push_back(e.text);
  std::string what;
  switch (f->code) {
    case FindingCode::kPipelineSlowWorker:
      v.status = VerdictStatus::kStraggler;
      c.cause_class = CauseClass::kUnknown;
      what = c.entity.tp_rank
                 ? fmt::format("{} (dp {}, pp {}, tp {}) is the straggler", EntityName(c.entity),
                               *c.entity.dp_rank, *c.entity.pp_stage, *c.entity.tp_rank)
                 : fmt::format(
                       "the tensor-parallel group of dp {}, pp {} (ranks {}) is the "
                       "straggler",
                       *c.entity.dp_rank, *c.entity.pp_stage, RankListText(c.ranks));
      break;
    case FindingCode::kPipelineSlowCommunication:
      v.status = c.ranks.empty() ? VerdictStatus::kCommBound : VerdictStatus::kStraggler;
      c.cause_class = CauseClass::kCommunication;
      what = c.ranks.empty() ? std::string("communication-bound")
                             : fmt::format("ranks {} communicate slowly", RankListText(c.ranks));
      break;
    case FindingCode::kPipelineWorkloadImbalance:
      v.status = VerdictStatus::kJobWide;
      c.cause_class = CauseClass::kImbalance;
      what = "workload imbalance: the work moves between replicas, no worker is faulty";
      break;
    default:
      v.status = VerdictStatus::kJobWide;
      c.cause_class = CauseClass::kImbalance;
      what = fmt::format(
          "pipeline stage {} (ranks {}) is the bottleneck: imbalance, no worker "
          "is faulty",
          *c.entity.pp_stage, RankListText(c.ranks));
      break;
  }
  if (whatif != nullptr) {
    v.whatif = *whatif;
    // The per-op ideal times stay with the analysis (the merged trace's);
    // the verdict keeps the numbers.
    v.whatif->ideal_start_ns.clear();
    v.whatif->ideal_end_ns.clear();
    v.whatif->ideal_start_ns.shrink_to_fit();
    v.whatif->ideal_end_ns.shrink_to_fit();
  }
  // What the culprit costs: the share of step time removing it gives back.
  if (f->recovered && *f->recovered > 0) {
    v.throughput_lost = *f->recovered;
    v.impact_method = whatif != nullptr ? ImpactMethod::kReplay : ImpactMethod::kLowerBound;
  }
  if (v.whatif) v.gpu_hours_per_day = GpuHoursPerDay(v.throughput_lost, v.whatif->layout.world());
  v.summary = fmt::format("verdict: {}, confidence {}", what, ConfidenceWord(c.confidence));
  if (v.whatif) {
    v.summary +=
        fmt::format("; the job runs {:.2f}x slower than if no op straggled", v.whatif->slowdown);
  }
  if (v.throughput_lost) {
    v.summary += fmt::format(", removing it recovers {}~{:.0f}%{}",
                             v.impact_method == ImpactMethod::kLowerBound ? "at least " : "",
                             100 * *v.throughput_lost,
                             v.impact_method == ImpactMethod::kReplay ? " (what-if replay)" : "");
  }
  v.next_steps = f->next_steps;
  v.culprits.push_back(std::move(c));
  return v;
}

}  // namespace laggard::verdict_internal
