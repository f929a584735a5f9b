#include "ingest/traces/common/trace_builder.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace laggard {

uint32_t ShapeTable::Intern(const LaunchShape& shape, NameTable& names) {
  if (auto it = ids_.find(shape); it != ids_.end()) return it->second;
  if (ids_.size() >= kMaxShapes) return kNoShape;
  const auto& d = shape;
  uint32_t id =
      names.Intern(fmt::format("grid {}x{}x{} block {}x{}x{}", d[0], d[1], d[2], d[3], d[4], d[5]));
  ids_.emplace(shape, id);
  return id;
}

std::vector<TraceStep> StepRanges::Take(RepeatedSteps repeats) {
  if (!marked_.empty()) return StepsOfMarkers(std::move(marked_));
  if (repeats == RepeatedSteps::kSpan) return StepsOfMarkers(std::move(builtin_));
  std::vector<TraceStep> steps;
  steps.reserve(builtin_.size());
  for (const MarkerRange& r : builtin_) steps.push_back(TraceStep{*r.number, r.start_ns, r.end_ns});
  std::stable_sort(steps.begin(), steps.end(), [](const TraceStep& a, const TraceStep& b) {
    return a.step != b.step ? a.step < b.step : a.start_ns < b.start_ns;
  });
  steps.erase(std::unique(steps.begin(), steps.end(),
                          [](const TraceStep& a, const TraceStep& b) { return a.step == b.step; }),
              steps.end());
  return steps;
}

void TraceBuilder::EndOpRun() {
  if (run_ends_.empty()) run_ends_.push_back(0);
  run_ends_.push_back(ops_.size());
}

void TraceBuilder::AddCommMeta(int64_t id, CommMeta meta) {
  if (meta.empty()) return;
  comm_meta_[id] = std::move(meta);
}

void TraceBuilder::CompleteCollectives() {
  if (comm_meta_.empty()) return;
  for (size_t i = 0; i < collectives_.size(); ++i) {
    if (!collective_meta_[i]) continue;
    auto it = comm_meta_.find(*collective_meta_[i]);
    if (it == comm_meta_.end()) continue;
    CollectiveCall& c = collectives_[i];
    const CommMeta& m = it->second;
    if (!c.seq) c.seq = m.seq;
    if (!c.group) c.group = m.group;
    if (!c.nelems) c.nelems = m.nelems;
    if (!c.group_size) c.group_size = m.group_size;
    if (names_.Get(c.collective).empty() && !m.collective.empty()) {
      c.collective = names_.Intern(m.collective);
    }
  }
}

// The start of each op's launch call (parallel to the ops, before sorting),
// by correlation; empty when there are no launch calls. Frees the launch
// lists.
LaunchTimes TraceBuilder::LinkLaunches(size_t n_ops, TimeNs shift_ns) {
  LaunchTimes out;
  if (launches_.empty() || op_correlation_.size() != n_ops) return out;
  out.resize(n_ops, kNoLaunch);
  // CUPTI numbers correlations densely from 1: a table indexed by them
  // links in one pass (a sort plus a search per op costs a tenth of the
  // ingest). Sparse ids fall back to sort + binary search.
  uint32_t max_corr = 0;
  for (const LaunchCall& l : launches_) max_corr = std::max(max_corr, l.correlation);
  if (max_corr <= 4 * launches_.size() + 65536) {
    constexpr TimeNs kUnset = kNoLaunch;
    std::vector<TimeNs> by_corr(static_cast<size_t>(max_corr) + 1, kUnset);
    for (const LaunchCall& l : launches_) {
      if (by_corr[l.correlation] == kUnset) by_corr[l.correlation] = l.start_ns;
    }
    for (size_t i = 0; i < n_ops; ++i) {
      uint32_t c = op_correlation_[i];
      if (c != kNoCorrelation && c <= max_corr && by_corr[c] != kUnset) {
        out[i] = by_corr[c] + shift_ns;
      }
    }
    std::vector<LaunchCall>().swap(launches_);
    std::vector<uint32_t>().swap(op_correlation_);
    return out;
  }
  std::sort(launches_.begin(), launches_.end(),
            [](const LaunchCall& a, const LaunchCall& b) { return a.correlation < b.correlation; });
  for (size_t i = 0; i < n_ops; ++i) {
    if (op_correlation_[i] == kNoCorrelation) continue;
    auto it = std::lower_bound(launches_.begin(), launches_.end(), op_correlation_[i],
                               [](const LaunchCall& l, uint32_t c) { return l.correlation < c; });
    if (it != launches_.end() && it->correlation == op_correlation_[i]) {
      out[i] = it->start_ns + shift_ns;
    }
  }
  std::vector<LaunchCall>().swap(launches_);
  std::vector<uint32_t>().swap(op_correlation_);
  return out;
}

// By start, stable. With launch times, one sort carries them along; without,
// each run is sorted only when it is not in order already, then the runs
// are merged (the same order as one stable sort of all ops).
void TraceBuilder::SortOps(std::vector<TraceOp>& ops) {
  if (!launch_ns_.empty()) {
    SortOpsByStart(ops, launch_ns_);
    return;
  }
  auto by_start = [](const TraceOp& a, const TraceOp& b) { return a.start_ns < b.start_ns; };
  auto at = [&](size_t i) { return ops.begin() + static_cast<ptrdiff_t>(i); };
  for (size_t i = 0; i + 1 < run_ends_.size(); ++i) {
    if (!std::is_sorted(at(run_ends_[i]), at(run_ends_[i + 1]), by_start)) {
      std::stable_sort(at(run_ends_[i]), at(run_ends_[i + 1]), by_start);
    }
    if (i > 0) std::inplace_merge(at(0), at(run_ends_[i]), at(run_ends_[i + 1]), by_start);
  }
}

RankTrace TraceBuilder::Finish(TimeNs shift_ns, RepeatedSteps repeats) {
  RankTrace t;
  CompleteCollectives();
  if (run_ends_.empty() || run_ends_.back() != ops_.size()) EndOpRun();
  t.ops = std::move(ops_);
  t.collectives = std::move(collectives_);
  t.steps = steps_.Take(repeats);
  if (shift_ns != 0) {
    for (TraceOp& op : t.ops) op.start_ns += shift_ns;
    for (CollectiveCall& c : t.collectives) c.start_ns += shift_ns;
    for (TraceStep& s : t.steps) s.start_ns += shift_ns, s.end_ns += shift_ns;
  }
  if (!op_correlation_.empty() || !launches_.empty()) {
    launch_ns_ = LinkLaunches(t.ops.size(), shift_ns);
  } else if (!any_launch_ || launch_ns_.size() != t.ops.size()) {
    launch_ns_.clear();
  } else if (shift_ns != 0) {
    for (TimeNs& l : launch_ns_) {
      if (l != kNoLaunch) l += shift_ns;
    }
  }
  SortOps(t.ops);
  auto by_start = [](const CollectiveCall& a, const CollectiveCall& b) {
    return a.start_ns < b.start_ns;
  };
  if (!std::is_sorted(t.collectives.begin(), t.collectives.end(), by_start)) {
    std::stable_sort(t.collectives.begin(), t.collectives.end(), by_start);
  }
  return t;
}

void TraceBuilder::AttributeLaunchGaps(RankTrace& trace) {
  ::laggard::AttributeLaunchGaps(trace, launch_ns_);
  LaunchTimes().swap(launch_ns_);
}

}  // namespace laggard
