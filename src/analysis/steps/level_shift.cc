#include "analysis/steps/level_shift.h"

#include <algorithm>
#include <cmath>

#include "base/stats/change_point.h"
#include "base/stats/robust_stats.h"
#include "model/trace.h"

namespace laggard {
namespace {

// The share of a side's steps that must sit on its side of the halfway mark
// between the two levels (judgement: a spike or a checkpoint step may not).
constexpr double kMinOnSide = 0.8;

// The median of values[i] over the points of segments `segs` (indices into
// `values`).
double MedianOver(const std::vector<double>& values, const std::vector<Segment>& segs) {
  std::vector<double> part;
  for (const Segment& s : segs) {
    part.insert(part.end(), values.begin() + static_cast<ptrdiff_t>(s.begin),
                values.begin() + static_cast<ptrdiff_t>(s.end));
  }
  return Median(std::move(part)).value_or(0);
}

}  // namespace

std::optional<LevelShift> MeasureLevelShift(const std::vector<int64_t>& step_numbers,
                                            const std::vector<double>& median_s, int64_t skip_first,
                                            int64_t skip_last, double noise_sigma,
                                            const LevelShiftOptions& options) {
  std::vector<int64_t> steps;
  std::vector<double> seconds;
  for (size_t i = 0; i < step_numbers.size() && i < median_s.size(); ++i) {
    if (!(median_s[i] > 0) || !std::isfinite(median_s[i])) continue;
    if (step_numbers[i] >= skip_first && step_numbers[i] <= skip_last) continue;
    steps.push_back(step_numbers[i]);
    seconds.push_back(median_s[i]);
  }
  const size_t min_segment = std::max<size_t>(1, options.min_segment);
  if (seconds.size() < 2 * min_segment) return std::nullopt;
  const double mid = Median(seconds).value_or(0);
  if (mid <= 0) return std::nullopt;
  std::vector<double> x;
  x.reserve(seconds.size());
  for (double s : seconds) x.push_back(s / mid - 1);
  ChangePointOptions cp;
  cp.min_segment = min_segment;
  cp.min_shift = std::max(options.min_shift, options.noise_sigmas * std::max(0.0, noise_sigma));
  cp.max_segments = 4;  // room to see a second change, which then refuses
  std::vector<Segment> segs = Segmentize(x, cp);
  // Each level is flat: the medians of its first and second halves within
  // half a minimum shift of each other, relatively (a 10x level's noise is
  // 10x too). A steady drift split in two is not a step.
  for (const Segment& seg : segs) {
    const size_t half = (seg.end - seg.begin) / 2;
    const double early = MedianOver(x, {Segment{seg.begin, seg.begin + half, 0}});
    const double late = MedianOver(x, {Segment{seg.begin + half, seg.end, 0}});
    if (1 + early <= 0 || std::fabs((1 + late) / (1 + early) - 1) > cp.min_shift / 2)
      return std::nullopt;
  }
  LevelShift out;
  if (segs.size() == 2 && segs[1].median - segs[0].median >= cp.min_shift) {
    out.before_s = MedianOver(seconds, {segs[0]});
    out.during_s = MedianOver(seconds, {segs[1]});
    out.first_step = steps[segs[1].begin];
    out.steps = segs[1].end - segs[1].begin;
  } else if (segs.size() == 3 && segs[1].median - segs[0].median >= cp.min_shift &&
             segs[1].median - segs[2].median >= cp.min_shift &&
             std::fabs(segs[2].median - segs[0].median) <= cp.min_shift / 2) {
    out.before_s = MedianOver(seconds, {segs[0], segs[2]});
    out.during_s = MedianOver(seconds, {segs[1]});
    out.first_step = steps[segs[1].begin];
    out.last_step = steps[segs[1].end - 1];
    out.steps = segs[1].end - segs[1].begin;
  } else {
    return std::nullopt;
  }
  if (out.before_s <= 0 || out.during_s < out.before_s * (1 + cp.min_shift)) return std::nullopt;
  // Each side holds its own level: most steps of the slower stretch above
  // the halfway mark, most others below it. A stretch whose split fell
  // inside a short change (5 slow steps at the end of a 10-step segment)
  // is not one level.
  const double mark = (out.before_s + out.during_s) / 2;
  size_t above_in = 0, below_out = 0;
  for (const Segment& seg : segs) {
    const bool in = seg.begin == segs[1].begin;
    for (size_t i = seg.begin; i < seg.end; ++i) {
      if (in) above_in += seconds[i] > mark ? 1 : 0;
      else below_out += seconds[i] < mark ? 1 : 0;
    }
  }
  const double in_steps = static_cast<double>(out.steps);
  const double out_steps = static_cast<double>(seconds.size() - out.steps);
  if (static_cast<double>(above_in) < kMinOnSide * in_steps ||
      static_cast<double>(below_out) < kMinOnSide * out_steps)
    return std::nullopt;
  return out;
}

std::optional<TimeNs> ShiftStartTime(const Run& run, const std::vector<const StepSeries*>& series,
                                     const std::vector<int64_t>& step_numbers,
                                     const std::vector<double>& median_s,
                                     const std::optional<LogStepRange>& profiled, int64_t step) {
  constexpr size_t kMaxLooked = 64;
  auto median_time = [](std::vector<double> v) -> std::optional<TimeNs> {
    std::optional<double> m = Median(std::move(v));
    if (!m) return std::nullopt;
    return static_cast<TimeNs>(*m);
  };
  std::vector<double> starts;
  for (size_t i = 0; i < series.size() && i < kMaxLooked; ++i) {
    const auto& recs = series[i]->steps;
    auto it = std::lower_bound(recs.begin(), recs.end(), step,
                               [](const StepRecord& r, int64_t s) { return r.step < s; });
    if (it != recs.end() && it->step == step && it->start_ns)
      starts.push_back(static_cast<double>(*it->start_ns));
  }
  if (!starts.empty()) return median_time(std::move(starts));
  if (!profiled) return std::nullopt;
  const int64_t trace_step = profiled->first - profiled->shift;
  size_t looked = 0;
  for (const RankTrace& t : run.traces) {
    if (looked >= kMaxLooked) break;
    for (const TraceStep& ts : t.steps) {
      if (ts.step != trace_step) continue;
      starts.push_back(static_cast<double>(ts.start_ns));
      ++looked;
      break;
    }
  }
  std::optional<TimeNs> anchor = median_time(std::move(starts));
  if (!anchor) return std::nullopt;
  // The logged steps between `step` and the window's first: their times
  // move the anchor.
  const int64_t lo = std::min(step, profiled->first), hi = std::max(step, profiled->first);
  double between_s = 0;
  int64_t found = 0;
  for (size_t i = 0; i < step_numbers.size() && i < median_s.size(); ++i) {
    if (step_numbers[i] < lo || step_numbers[i] >= hi) continue;
    if (!(median_s[i] > 0)) return std::nullopt;
    between_s += median_s[i];
    ++found;
  }
  if (found != hi - lo) return std::nullopt;
  const auto shift_ns = static_cast<TimeNs>(between_s * 1e9);
  return step <= profiled->first ? *anchor - shift_ns : *anchor + shift_ns;
}

}  // namespace laggard
