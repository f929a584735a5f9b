#include "analysis/steps/profiled_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

constexpr size_t kMinMatchedSteps = 3;

// A mismatch past this counts as this much in a shift's score, so that one
// step at a window's edge does not outweigh the rest.
constexpr double kMismatchClip = 0.5;

struct RankShift {
  int64_t shift = 0;
  double score = std::numeric_limits<double>::infinity();  // mean clipped |ln ratio|
  double mismatch = 0;                                     // median |ln ratio|
};

// The shift that best matches `trace`'s step durations to `series`'.
std::optional<RankShift> BestShift(const RankTrace& trace, const StepSeries& series,
                                   int64_t max_shift) {
  std::unordered_map<int64_t, DurationNs> logged;
  logged.reserve(series.steps.size());
  for (const StepRecord& r : series.steps) logged.emplace(r.step, r.duration_ns);
  std::optional<RankShift> best;
  for (int64_t k = -max_shift; k <= max_shift; ++k) {
    std::vector<double> errors;
    for (const TraceStep& t : trace.steps) {
      auto it = logged.find(t.step + k);
      DurationNs d = t.end_ns - t.start_ns;
      if (it == logged.end() || it->second <= 0 || d <= 0) continue;
      errors.push_back(
          std::fabs(std::log(static_cast<double>(d) / static_cast<double>(it->second))));
    }
    if (errors.size() < kMinMatchedSteps) continue;
    // The mean tells shifts apart where steps of equal length make several
    // medians 0; the median is what must be small.
    double score = 0;
    for (double e : errors) score += std::min(e, kMismatchClip);
    score /= static_cast<double>(errors.size());
    if (!best || score < best->score) best = RankShift{k, score, *Median(errors)};
  }
  return best;
}

}  // namespace

std::optional<LogStepRange> ProfiledLogSteps(const Run& run, int64_t max_shift,
                                             double max_mismatch) {
  std::optional<LogStepRange> out;
  for (const RankTrace& trace : run.traces) {
    if (!trace.rank || trace.steps.size() < kMinMatchedSteps) continue;
    const StepSeries* series = run.FindRank(*trace.rank);
    if (!series) continue;
    std::optional<RankShift> s = BestShift(trace, *series, max_shift);
    if (!s || s->mismatch > max_mismatch) continue;
    if (out && out->shift != s->shift) return std::nullopt;  // ranks disagree: no mapping
    auto [lo, hi] =
        std::minmax_element(trace.steps.begin(), trace.steps.end(),
                            [](const TraceStep& a, const TraceStep& b) { return a.step < b.step; });
    int64_t first = lo->step + s->shift, last = hi->step + s->shift;
    if (!out) {
      out = LogStepRange{first, last, s->shift, 0};
    } else {
      out->first = std::min(out->first, first);
      out->last = std::max(out->last, last);
    }
    ++out->ranks;
  }
  return out;
}

}  // namespace laggard
