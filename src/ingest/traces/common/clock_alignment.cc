#include "ingest/traces/common/clock_alignment.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

namespace laggard {
namespace {

// (step, collective kind, n-th call of that kind in that step).
using CallKey = std::tuple<int64_t, uint32_t, uint32_t>;

constexpr int64_t kBeforeFirstStep = std::numeric_limits<int64_t>::min();

// Each call's key and end, in the trace's call order (by start).
std::vector<std::pair<CallKey, TimeNs>> KeyedEnds(const RankTrace& t, bool by_step) {
  std::vector<std::pair<TimeNs, int64_t>> step_starts;  // (start, number), by start
  if (by_step) {
    for (const TraceStep& s : t.steps) step_starts.emplace_back(s.start_ns, s.step);
    std::sort(step_starts.begin(), step_starts.end());
  }
  std::map<std::pair<int64_t, uint32_t>, uint32_t> nth;
  std::vector<std::pair<CallKey, TimeNs>> out;
  out.reserve(t.collectives.size());
  for (const CollectiveCall& c : t.collectives) {
    int64_t step = kBeforeFirstStep;
    auto after = std::upper_bound(step_starts.begin(), step_starts.end(),
                                  std::make_pair(c.start_ns, std::numeric_limits<int64_t>::max()));
    if (after != step_starts.begin()) step = std::prev(after)->second;
    uint32_t n = nth[{step, c.collective}]++;
    out.emplace_back(CallKey{step, c.collective, n}, c.start_ns + c.dur_ns);
  }
  return out;
}

// The median of `v` (sorted here), rounded down to the ns between two.
DurationNs Median(std::vector<DurationNs> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  if (n % 2 == 1) return v[n / 2];
  DurationNs a = v[n / 2 - 1], b = v[n / 2];
  return a + (b - a) / 2;
}

void Shift(RankTrace& t, DurationNs by) {
  for (TraceOp& op : t.ops) op.start_ns += by;
  for (CollectiveCall& c : t.collectives) c.start_ns += by;
  for (TraceStep& s : t.steps) s.start_ns += by, s.end_ns += by;
}

std::string Ms(DurationNs ns, bool sign) {
  double ms = static_cast<double>(ns) / 1e6;
  return sign ? fmt::format("{:+.3f} ms", ms) : fmt::format("{:.3f} ms", ms);
}

// The index of the reference trace, if any (see the header).
std::optional<size_t> PickReference(const Run& run) {
  std::optional<size_t> best;
  auto better = [&](size_t i) {
    if (!best) return true;
    const RankTrace& a = run.traces[i];
    const RankTrace& b = run.traces[*best];
    bool a_host = a.origin == TraceOrigin::kHostClock, b_host = b.origin == TraceOrigin::kHostClock;
    if (a_host != b_host) return a_host;
    return *a.rank < *b.rank;
  };
  for (size_t i = 0; i < run.traces.size(); ++i) {
    const RankTrace& t = run.traces[i];
    if (t.rank && !t.collectives.empty() && better(i)) best = i;
  }
  return best;
}

}  // namespace

std::vector<DurationNs> CollectiveEndOffsets(const RankTrace& reference, const RankTrace& trace) {
  const bool by_step = !reference.steps.empty() && !trace.steps.empty();
  std::map<CallKey, TimeNs> reference_ends;
  for (const auto& [key, end] : KeyedEnds(reference, by_step)) reference_ends.emplace(key, end);
  std::vector<DurationNs> offsets;
  for (const auto& [key, end] : KeyedEnds(trace, by_step)) {
    auto it = reference_ends.find(key);
    if (it != reference_ends.end()) offsets.push_back(it->second - end);
  }
  return offsets;
}

void AlignTraceClocks(Run& run) {
  bool any_file_start = false;
  for (const RankTrace& t : run.traces) any_file_start |= t.origin == TraceOrigin::kFileStart;
  if (!any_file_start) return;
  const std::optional<size_t> ref = PickReference(run);
  const bool alone = run.traces.size() < 2;
  for (size_t i = 0; i < run.traces.size(); ++i) {
    RankTrace& t = run.traces[i];
    if (t.origin != TraceOrigin::kFileStart) continue;
    const std::string& path = run.files[t.file].path;
    if (ref && i == *ref) {
      t.alignment = ClockAlignment{*t.rank, 0, 0, 0};
      continue;
    }
    if (alone) continue;
    if (!t.rank) {
      run.diagnostics.Add(DiagCode::kTraceClockUnaligned, path, 0,
                          "timed from its own profiler start and without a rank: not aligned");
      continue;
    }
    if (!ref) {
      run.diagnostics.Add(DiagCode::kTraceClockUnaligned, path, 0,
                          fmt::format("rank {}: timed from its own profiler start, and no ranked "
                                      "trace has collectives to align it by",
                                      *t.rank));
      continue;
    }
    const RankTrace& reference = run.traces[*ref];
    std::vector<DurationNs> offsets = CollectiveEndOffsets(reference, t);
    if (t.collectives.empty()) {
      run.diagnostics.Add(DiagCode::kTraceClockUnaligned, path, 0,
                          fmt::format("rank {}: timed from its own profiler start, and without a "
                                      "collective to align it by: its times are not comparable "
                                      "with other ranks'",
                                      *t.rank));
      continue;
    }
    if (offsets.size() < kMinAlignPairs) {
      run.diagnostics.Add(
          DiagCode::kTraceClockUnaligned, path, 0,
          fmt::format("rank {}: timed from its own profiler start, and {} of its {} collectives "
                      "match rank {}'s ({} needed): its times are not comparable with other "
                      "ranks'",
                      *t.rank, offsets.size(), t.collectives.size(), *reference.rank,
                      kMinAlignPairs));
      continue;
    }
    const DurationNs shift = Median(offsets);
    std::vector<DurationNs> deviations;
    deviations.reserve(offsets.size());
    for (DurationNs d : offsets) deviations.push_back(std::abs(d - shift));
    const DurationNs spread = Median(std::move(deviations));
    Shift(t, shift);
    t.alignment =
        ClockAlignment{*reference.rank, shift, spread, static_cast<uint32_t>(offsets.size())};
    run.diagnostics.Add(
        DiagCode::kTraceClockAligned, path, 0,
        fmt::format("rank {}: timed from its own profiler start; moved by {} onto rank {}'s clock "
                    "(median offset of {} matched collective ends, spread {})",
                    *t.rank, Ms(shift, true), *reference.rank, offsets.size(), Ms(spread, false)));
  }
}

}  // namespace laggard
