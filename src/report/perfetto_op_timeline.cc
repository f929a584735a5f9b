// The merged trace's op timelines (docs/merged-trace.md, "Op timelines"):
// each op of a model-parallel job's timeline as a complete event on its
// worker's thread, once as measured and once where the what-if's ideal
// replay (analysis/pipelines/pipeline_replay.h) puts it, so the two steps sit one
// above the other in Perfetto:
//
//   pid  "op timeline: DP rank d (measured)"        tid per (pp, tp) worker
//   pid  "op timeline: DP rank d (ideal, what-if)"  the same threads
//
// An ideal op starts at its step's measured start (the earliest start of
// that step's ops, over every worker) + WhatIf::ideal_start_ns and lasts
// ideal_end_ns - ideal_start_ns: the typical duration of its type, the one
// the measured op's args compare it with.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "analysis/pipelines/pipeline_detector.h"
#include "report/trace_writer.h"

namespace laggard::report_trace {
namespace {

// The steps of a timeline that are written (the first ones, whole), and
// where each starts.
struct StepSelection {
  std::map<int64_t, TimeNs> start;  // step -> earliest start_ns of its ops
  size_t steps = 0;                 // distinct steps of the timeline
  size_t ops = 0;                   // ops of the written steps
};

StepSelection SelectSteps(const OpTimeline& t, size_t budget) {
  std::map<int64_t, std::pair<size_t, TimeNs>> per_step;  // step -> ops, earliest start
  for (const TimelineOp& op : t.ops) {
    auto [it, fresh] = per_step.try_emplace(op.step, 0, op.start_ns);
    ++it->second.first;
    it->second.second = std::min(it->second.second, op.start_ns);
  }
  StepSelection sel;
  sel.steps = per_step.size();
  for (const auto& [step, ops_start] : per_step) {
    if (budget == 0 || (!sel.start.empty() && sel.ops + ops_start.first > budget)) break;
    sel.start[step] = ops_start.second;
    sel.ops += ops_start.first;
  }
  return sel;
}

// An op on a thread: [start, end) in absolute ns and its index in ops[].
struct OpSpan {
  int64_t start = 0;
  int64_t end = 0;
  uint32_t op = 0;
};

std::string MsText(double ns) { return report_json::Num(ns / 1e6).dump(); }

class OpTimelineWriter {
 public:
  OpTimelineWriter(TimeNs t0, int& next_tid, TraceWriter& w) : t0_(t0), next_tid_(next_tid), w_(w) {
    for (int k = 0; k < kTimelineOpKinds; ++k) {
      names_[static_cast<size_t>(k)] = TraceStr(TimelineOpName(static_cast<TimelineOpKind>(k)));
    }
  }

  // One timeline: its processes from `next_pid` (advanced); `budget` ops
  // left to write (decreased). Returns its otherData entry.
  Json Write(const Run& run, const OpTimeline& t, const PipelineMetrics* m,
             const std::string& title, int& next_pid, size_t& budget, size_t max_ops);

 private:
  // Ideal times of the timeline being written, or nullptr.
  bool HasIdeal(size_t op) const {
    return whatif_ != nullptr && std::isfinite(whatif_->ideal_start_ns[op]) &&
           std::isfinite(whatif_->ideal_end_ns[op]);
  }
  double IdealDur(size_t op) const {
    return static_cast<double>(whatif_->ideal_end_ns[op]) - whatif_->ideal_start_ns[op];
  }
  void WriteThread(int pid, const std::string& label, int sort, std::vector<OpSpan> spans,
                   bool ideal);
  std::string Args(const TimelineOp& op, size_t i, bool ideal) const;

  const TimeNs t0_;
  int& next_tid_;
  TraceWriter& w_;
  std::array<std::string, kTimelineOpKinds> names_;
  const OpTimeline* t_ = nullptr;
  const WhatIf* whatif_ = nullptr;  // with an ideal time per op
  TimeNs last_end_ = 0;             // of the measured ops written
};

std::string OpTimelineWriter::Args(const TimelineOp& op, size_t i, bool ideal) const {
  std::string a = fmt::format("{{\"step\":{}", op.step);
  if (op.microbatch >= 0) a += fmt::format(",\"microbatch\":{}", op.microbatch);
  if (op.chunk >= 0) a += fmt::format(",\"chunk\":{}", op.chunk);
  a += fmt::format(",\"seq\":{}", op.seq);
  if (ideal) {
    a += ",\"measured_ms\":" + MsText(static_cast<double>(op.dur_ns));
  } else if (HasIdeal(i) && IdealDur(i) > 0) {
    // The ideal replay gives each op its type's typical duration.
    double typical = IdealDur(i);
    a += ",\"typical_ms\":" + MsText(typical) +
         ",\"vs_typical\":" + report_json::Num(static_cast<double>(op.dur_ns) / typical).dump();
  }
  return a + "}";
}

// `spans` on the track `label` of `pid`, lanes as overlaps need.
void OpTimelineWriter::WriteThread(int pid, const std::string& label, int sort,
                                   std::vector<OpSpan> spans, bool ideal) {
  std::sort(spans.begin(), spans.end(), [](const OpSpan& a, const OpSpan& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  std::vector<std::pair<int64_t, int64_t>> bounds;
  bounds.reserve(spans.size());
  for (const OpSpan& s : spans) bounds.emplace_back(s.start, s.end);
  std::vector<size_t> lane = AssignLanes(bounds);
  size_t lanes = spans.empty() ? 1 : *std::max_element(lane.begin(), lane.end()) + 1;
  int first_tid = next_tid_;
  for (size_t i = 0; i < lanes; ++i) {
    w_.ThreadName(pid, first_tid + static_cast<int>(i),
                  i == 0 ? label : fmt::format("{} (overlap {})", label, i + 1),
                  sort + static_cast<int>(i));
  }
  const char* cat = ideal ? "op_ideal" : "op";
  for (size_t i = 0; i < spans.size(); ++i) {
    const OpSpan& s = spans[i];
    const TimelineOp& op = t_->ops[s.op];
    w_.Event(fmt::format(
        "\"ph\":\"X\",\"name\":{},\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
        "\"args\":{}",
        names_[static_cast<size_t>(op.kind)], cat, pid, first_tid + static_cast<int>(lane[i]),
        Micros(s.start - t0_), Micros(std::max<int64_t>(0, s.end - s.start)),
        Args(op, s.op, ideal)));
    if (!ideal) last_end_ = std::max(last_end_, s.end);
  }
  next_tid_ += static_cast<int>(lanes);
}

Json OpTimelineWriter::Write(const Run& run, const OpTimeline& t, const PipelineMetrics* m,
                             const std::string& title, int& next_pid, size_t& budget,
                             size_t max_ops) {
  Json entry;
  entry["file"] = t.file < run.files.size() ? Json(run.files[t.file].path) : Json(nullptr);
  entry["ops"] = t.ops.size();
  const WhatIf* whatif = m != nullptr && m->whatif ? &*m->whatif : nullptr;
  if (m != nullptr && m->error) entry["whatif_error"] = *m->error;
  std::vector<ParallelCoord> coords;
  auto layout = ResolveLayout(t, whatif ? std::optional(whatif->layout) : std::nullopt, &coords);
  if (!layout.ok()) {
    entry["error"] = layout.status().message();
    entry["ops_written"] = 0;
    return entry;
  }
  const ParallelLayout& l = layout.value();
  entry["layout"] = {{"dp", l.dp}, {"pp", l.pp}, {"tp", l.tp}, {"vpp", l.vpp}};
  t_ = &t;
  whatif_ = whatif != nullptr && whatif->ideal_start_ns.size() == t.ops.size() &&
                    whatif->ideal_end_ns.size() == t.ops.size()
                ? whatif
                : nullptr;
  last_end_ = 0;
  StepSelection sel = SelectSteps(t, budget);
  budget -= std::min(budget, sel.ops);

  // Per worker, the measured and the ideal spans of the written steps.
  std::vector<std::vector<OpSpan>> measured(t.workers.size()), ideal(t.workers.size());
  size_t ideal_ops = 0;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const TimelineOp& op = t.ops[i];
    auto step = sel.start.find(op.step);
    if (step == sel.start.end() || op.worker < 0 ||
        static_cast<size_t>(op.worker) >= t.workers.size()) {
      continue;
    }
    auto w = static_cast<size_t>(op.worker);
    auto idx = static_cast<uint32_t>(i);
    measured[w].push_back(OpSpan{op.start_ns, op.start_ns + op.dur_ns, idx});
    if (HasIdeal(i)) {
      int64_t s = step->second + std::llround(whatif_->ideal_start_ns[i]);
      int64_t e = step->second + std::llround(whatif_->ideal_end_ns[i]);
      ideal[w].push_back(OpSpan{s, e, idx});
      ++ideal_ops;
    }
  }

  // Per DP rank, its workers by (pp, tp); the measured process, then the ideal one.
  std::map<int32_t, std::vector<size_t>> workers_of_dp;
  for (size_t w = 0; w < t.workers.size(); ++w) workers_of_dp[coords[w].dp].push_back(w);
  int first_pid = next_pid;
  for (auto& [dp, workers] : workers_of_dp) {
    std::sort(workers.begin(), workers.end(), [&](size_t a, size_t b) {
      return std::pair(coords[a].pp, coords[a].tp) < std::pair(coords[b].pp, coords[b].tp);
    });
    for (bool is_ideal : {false, true}) {
      if (is_ideal && whatif_ == nullptr) continue;
      int pid = next_pid++;
      w_.ProcessName(
          pid,
          fmt::format("{}DP rank {} ({})", title, dp, is_ideal ? "ideal, what-if" : "measured"),
          pid);
      for (size_t w : workers) {
        const ParallelCoord& c = coords[w];
        std::string label = fmt::format("pp {} tp {}", c.pp, c.tp);
        if (t.workers[w].rank) label += fmt::format(" (rank {})", *t.workers[w].rank);
        WriteThread(pid, label, (c.pp * l.tp + c.tp) * 1024,
                    std::move(is_ideal ? ideal[w] : measured[w]), is_ideal);
      }
    }
  }
  size_t omitted = sel.steps - sel.start.size();
  if (omitted > 0 && next_pid > first_pid) {
    Json args = {{"steps_written", sel.start.size()}, {"steps", sel.steps}, {"limit_ops", max_ops}};
    w_.Event(fmt::format(
        "\"ph\":\"i\",\"name\":{1},\"cat\":\"op_timeline\",\"s\":\"p\",\"pid\":{0},\"tid\":{0},"
        "\"ts\":{2},\"args\":{3}",
        first_pid,
        TraceStr(fmt::format("op timeline: first {} of {} steps written (at most {} ops)",
                             sel.start.size(), sel.steps, max_ops)),
        Micros(last_end_ - t0_), args.dump()));
  }
  entry["ideal"] = whatif_ != nullptr;
  entry["steps"] = sel.steps;
  entry["steps_written"] = sel.start.size();
  entry["steps_omitted"] = omitted;
  entry["ops_written"] = sel.ops;
  entry["ideal_ops_written"] = ideal_ops;
  entry["pids"] = next_pid > first_pid ? Json::array({first_pid, next_pid - 1}) : Json::array();
  return entry;
}

}  // namespace

std::optional<TimeNs> OpTimelinesStart(const Run& run) {
  std::optional<TimeNs> start;
  for (const OpTimeline& t : run.op_timelines) {
    for (const TimelineOp& op : t.ops) start = start ? std::min(*start, op.start_ns) : op.start_ns;
  }
  return start;
}

Json WriteOpTimelines(const ReportInput& in, TimeNs t0, int first_pid, int& next_tid,
                      TraceWriter& w, size_t max_ops) {
  const Run& run = in.run;
  Json out = Json::array();
  OpTimelineWriter writer(t0, next_tid, w);
  int next_pid = first_pid;
  size_t budget = max_ops;
  for (size_t i = 0; i < run.op_timelines.size(); ++i) {
    const OpTimeline& t = run.op_timelines[i];
    // AnalyzePipelines() measures the run's timelines in order.
    const PipelineMetrics* m = nullptr;
    if (i < in.analyses.pipelines.timelines.size() &&
        in.analyses.pipelines.timelines[i].file == t.file) {
      m = &in.analyses.pipelines.timelines[i];
    }
    std::string title = "op timeline: ";
    if (run.op_timelines.size() > 1) {
      std::string file = t.file < run.files.size() ? run.files[t.file].path : "?";
      title = fmt::format("op timeline {} ({}): ", i + 1, file.substr(file.rfind('/') + 1));
    }
    out.push_back(writer.Write(run, t, m, title, next_pid, budget, max_ops));
  }
  return out;
}

}  // namespace laggard::report_trace
