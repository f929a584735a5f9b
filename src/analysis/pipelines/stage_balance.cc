#include "analysis/pipelines/stage_balance.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

std::string Ms(double ns) { return fmt::format("{:.1f} ms", ns / 1e6); }

}  // namespace

StageBalance AnalyzeStageBalance(const TraceAnalysis& traces, const RunLayout& layout,
                                 const StageBalanceOptions& o) {
  StageBalance out;
  if (!layout.pipelined()) return out;
  std::map<int32_t, StageCompute> by_stage;
  std::map<int32_t, uint32_t> file_of;
  for (const RankTraceStats& s : traces.ranks) {
    if (s.steps == 0 || s.rank < 0 || s.rank >= layout.layout.world()) continue;
    const int32_t stage = layout.Coord(s.rank).pp;
    StageCompute& sc = by_stage[stage];
    sc.stage = stage;
    sc.ranks.push_back(s.rank);
    sc.per_step_ns.push_back(static_cast<double>(s.compute_busy_ns) / static_cast<double>(s.steps));
    file_of[s.rank] = s.file;
  }
  for (auto& [stage, sc] : by_stage) {
    sc.median_ns = Median(sc.per_step_ns).value_or(0);
    out.stages.push_back(sc);
  }
  if (out.stages.size() < 2) return out;
  std::vector<const StageCompute*> order;
  for (const StageCompute& sc : out.stages) order.push_back(&sc);
  std::sort(order.begin(), order.end(), [](const StageCompute* a, const StageCompute* b) {
    return a->median_ns > b->median_ns || (a->median_ns == b->median_ns && a->stage < b->stage);
  });
  const StageCompute& heavy = *order[0];
  const StageCompute& next = *order[1];
  if (next.median_ns <= 0 || heavy.median_ns / next.median_ns < o.stage_ratio) return out;
  for (double v : heavy.per_step_ns) {
    if (std::abs(v / heavy.median_ns - 1) > o.member_band) return out;  // one rank makes it heavy
  }
  // The gap must stand out from how much role peers differ: ranks doing
  // the same work on a shared host differ by up to ~13% (real 4- and 6-rank
  // CPU jobs on 2 cores, 2026-12-03); a last stage with the loss is 1.14x
  // its neighbours there, within that noise.
  double noise = 0;
  for (const StageCompute& sc : out.stages) {
    if (sc.per_step_ns.size() < 2) continue;
    auto [lo, hi] = std::minmax_element(sc.per_step_ns.begin(), sc.per_step_ns.end());
    if (*lo > 0) noise = std::max(noise, *hi / *lo - 1);
  }
  if (heavy.median_ns / next.median_ns - 1 < o.over_peer_spread * noise) return out;

  Finding f = MakeFinding(FindingCode::kPipelineStageImbalance);
  f.entity.pp_stage = heavy.stage;
  f.entity.job = true;
  f.ranks = layout.StageRanks(heavy.stage);
  f.pattern = Pattern::kPersistent;
  f.cause = "pipeline_stage_imbalance";
  // Balanced, every stage would compute the stages' mean (the what-if's
  // ideal: every op at its type's mean).
  double mean = 0;
  for (const StageCompute& sc : out.stages) mean += sc.median_ns;
  mean /= static_cast<double>(out.stages.size());
  f.slowdown = heavy.median_ns / mean - 1;
  if (traces.median_step_ns && *traces.median_step_ns > 0) {
    f.recovered = std::clamp((heavy.median_ns - mean) / static_cast<double>(*traces.median_step_ns),
                             0.0, 1.0);
  }
  f.message = fmt::format(
      "pipeline stage {} computes {:.2f}x the next heaviest stage ({}) per step, on every rank "
      "of it alike ({} of {} ranks traced): the layers are not partitioned evenly, no rank of "
      "the stage is slower than its role peers",
      heavy.stage, heavy.median_ns / next.median_ns, next.stage, heavy.ranks.size(),
      f.ranks.size());
  f.confidence = layout.layout.dp >= 2 && heavy.ranks.size() >= 2
                     ? o.confidence.stage_imbalance
                     : o.confidence.stage_imbalance_weak;
  std::vector<std::string> stages;
  for (const StageCompute* sc : order) {
    stages.push_back(fmt::format("stage {} {}", sc->stage, Ms(sc->median_ns)));
  }
  f.evidence.push_back({fmt::format("traced compute per step, median of each stage's ranks: {}",
                                    fmt::join(stages, ", ")),
                        std::nullopt});
  std::vector<std::string> members;
  for (size_t i = 0; i < heavy.ranks.size(); ++i) {
    members.push_back(fmt::format("rank {} {}", heavy.ranks[i], Ms(heavy.per_step_ns[i])));
  }
  f.evidence.push_back({fmt::format("stage {}'s ranks alike (within {:.0f}%): {}", heavy.stage,
                                    100 * o.member_band, fmt::join(members, ", ")),
                        SourceRef{file_of[heavy.ranks[0]], 0}});
  f.evidence.push_back(
      {fmt::format("layout {} from {}", LayoutText(layout.layout), LayoutSourceName(layout.source)),
       layout.src});
  if (layout.layout.dp < 2) {
    f.evidence.push_back(
        {"one data-parallel replica: a slow GPU on this stage would look the same; check its "
         "GPU metrics before repartitioning",
         std::nullopt});
  }
  f.next_steps.push_back(fmt::format(
      "rebalance the layers of stage {}: fewer layers there (an uneven split, e.g. Megatron's "
      "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers, or count the "
      "embedding and loss as layers){}",
      heavy.stage,
      f.recovered
          ? fmt::format("; balanced, the step recovers at least ~{:.0f}%", 100 * *f.recovered)
          : std::string()));
  out.finding = std::move(f);
  return out;
}

}  // namespace laggard
