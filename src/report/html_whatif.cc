// What the HTML report's "What-if (op timeline)" section draws
// (docs/html-report.md): per op timeline with a what-if replay, its
// headline numbers, a pipeline stage x DP rank grid of the replay's
// per-worker slowdowns, and the top groups of each decomposition. The page
// embeds it beside the report document (html_report.cc) and
// html_whatif.js draws it; nothing here decides anything, it only arranges
// the replay's numbers (analysis/pipelines/pipeline_replay.h) for the grid.

#include <algorithm>
#include <map>

#include "analysis/pipelines/pipeline_detector.h"
#include "report/json_document.h"

namespace laggard::report_json {
namespace {

// Past this many cells, the grid keeps only the DP ranks with a replayed
// worker (the replay decomposes at most WhatIfOptions::max_worker_groups).
constexpr size_t kMaxHeatmapCells = 4096;
// Groups of each decomposition listed in the section's tables.
constexpr size_t kTopGroups = 6;

Json TopGroups(const std::vector<WhatIfGroup>& groups, std::string_view prefix) {
  Json rows = Json::array();
  for (size_t i = 0; i < groups.size() && i < kTopGroups; ++i) {
    const WhatIfGroup& g = groups[i];
    rows.push_back({{"group", fmt::format("{}{}", prefix, g.label)},
                    {"slowdown", Num(g.slowdown)},
                    {"recovered", g.recovered ? Num(*g.recovered) : Json(nullptr)}});
  }
  return {{"top", std::move(rows)},
          {"more", groups.size() > kTopGroups ? groups.size() - kTopGroups : 0}};
}

// The findings of the pipeline detector about this timeline (their evidence
// points into its file).
Json FindingsOf(const ReportInput& in, const OpTimeline& t) {
  Json out = Json::array();
  for (const Finding& f : in.analyses.pipelines.findings) {
    bool ours = std::any_of(f.evidence.begin(), f.evidence.end(), [&](const Evidence& e) {
      return e.source && e.source->file == t.file;
    });
    if (ours) out.push_back({{"code", Describe(f.code).name}, {"message", f.message}});
  }
  return out;
}

}  // namespace

Json WhatIfHeatmap(const WhatIf& w, const std::vector<TimelineWorker>& workers) {
  const ParallelLayout& l = w.layout;
  struct Cell {
    const WhatIfGroup* worst = nullptr;  // the slowest of its tp ranks
    int32_t tp_replayed = 0;
  };
  std::map<std::pair<int32_t, int32_t>, Cell> cells;  // (pp, dp) -> cell
  for (const WhatIfGroup& g : w.by_worker) {
    if (!g.dp || !g.pp || *g.dp < 0 || *g.dp >= l.dp || *g.pp < 0 || *g.pp >= l.pp) continue;
    Cell& c = cells[{*g.pp, *g.dp}];
    ++c.tp_replayed;
    if (c.worst == nullptr || g.slowdown > c.worst->slowdown) c.worst = &g;
  }
  std::vector<int32_t> columns;
  bool all = static_cast<size_t>(l.dp) * static_cast<size_t>(l.pp) <= kMaxHeatmapCells;
  for (int32_t dp = 0; dp < l.dp; ++dp) {
    bool replayed = std::any_of(cells.begin(), cells.end(),
                                [&](const auto& kv) { return kv.first.second == dp; });
    if (all || replayed) columns.push_back(dp);
  }
  Json rows = Json::array();
  for (int32_t pp = 0; pp < l.pp; ++pp) {
    Json row = Json::array();
    for (int32_t dp : columns) {
      auto it = cells.find({pp, dp});
      if (it == cells.end()) {
        row.push_back(nullptr);  // not replayed
        continue;
      }
      const WhatIfGroup& g = *it->second.worst;
      Json cell = {{"slowdown", Num(g.slowdown)}, {"worker", g.label}};
      if (g.worker && *g.worker >= 0 && static_cast<size_t>(*g.worker) < workers.size() &&
          workers[static_cast<size_t>(*g.worker)].rank) {
        cell["rank"] = *workers[static_cast<size_t>(*g.worker)].rank;
      }
      if (l.tp > 1) cell["tp_replayed"] = it->second.tp_replayed;
      row.push_back(std::move(cell));
    }
    rows.push_back(std::move(row));
  }
  return {{"rows", "pp_stage"},
          {"columns", "dp_rank"},
          {"tp", l.tp},
          {"dp_ranks", columns},
          {"dp_ranks_not_shown", l.dp - static_cast<int32_t>(columns.size())},
          {"cells", std::move(rows)}};
}

Json OpTimelineWhatIfs(const ReportInput& in) {
  Json out = Json::array();
  const Run& run = in.run;
  for (size_t i = 0; i < in.analyses.pipelines.timelines.size() && i < run.op_timelines.size();
       ++i) {
    const PipelineMetrics& m = in.analyses.pipelines.timelines[i];
    const OpTimeline& t = run.op_timelines[i];
    if (!m.whatif || m.file != t.file) continue;
    const WhatIf& w = *m.whatif;
    Json j;
    j["file"] = t.file < run.files.size() ? Json(run.files[t.file].path) : Json(nullptr);
    j["layout"] = {
        {"dp", w.layout.dp}, {"pp", w.layout.pp}, {"tp", w.layout.tp}, {"vpp", w.layout.vpp}};
    j["steps"] = w.per_step.size();
    j["slowdown"] = Num(w.slowdown);
    j["measured_step_s"] = Num(w.measured_step_ns / 1e9);
    j["ideal_step_s"] = Num(w.ideal_step_ns / 1e9);
    j["workers"] = t.workers.size();
    j["workers_replayed"] = w.workers_replayed;
    j["findings"] = FindingsOf(in, t);
    j["heatmap"] = WhatIfHeatmap(w, t.workers);
    j["by_stage"] = TopGroups(w.by_stage, "stage ");
    j["by_dp_rank"] = TopGroups(w.by_dp_rank, "DP rank ");
    j["by_op_type"] = TopGroups(w.by_op_type, "");
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace laggard::report_json
