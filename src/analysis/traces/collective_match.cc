#include "analysis/traces/collective_match.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

namespace laggard {
namespace {

// Key that identifies one collective instance across ranks.
using InstanceKey = std::tuple<uint32_t /*group*/, int64_t /*step*/, int64_t /*seq or ordinal*/,
                               uint32_t /*coll*/, int64_t /*nelems*/, bool /*has_seq*/>;

constexpr int64_t kNoStep = std::numeric_limits<int64_t>::min();

// Whether calls are numbered within their step: every trace CPU-only with
// steps (see the header).
bool ByStep(const std::vector<const RankTrace*>& traces) {
  return !traces.empty() && std::all_of(traces.begin(), traces.end(), [](const RankTrace* t) {
    return t->cpu_only && !t->steps.empty();
  });
}

// The number of the last step of `t` to start at or before `ts`; kNoStep
// before the first.
int64_t StepOf(const std::vector<std::pair<TimeNs, int64_t>>& starts, TimeNs ts) {
  auto after = std::upper_bound(starts.begin(), starts.end(), std::make_pair(ts, INT64_MAX));
  return after == starts.begin() ? kNoStep : std::prev(after)->second;
}

}  // namespace

std::vector<std::vector<Arrival>> MatchCollectives(const std::vector<const RankTrace*>& traces) {
  std::map<InstanceKey, std::vector<Arrival>> instances;
  const bool by_step = ByStep(traces);
  for (size_t ri = 0; ri < traces.size(); ++ri) {
    std::vector<std::pair<TimeNs, int64_t>> step_starts;  // (start, number), by start
    if (by_step) {
      for (const TraceStep& s : traces[ri]->steps) step_starts.emplace_back(s.start_ns, s.step);
      std::sort(step_starts.begin(), step_starts.end());
    }
    std::map<std::tuple<int64_t, uint32_t, uint32_t, int64_t>, int64_t> ordinal;
    const std::vector<CollectiveCall>& calls = traces[ri]->collectives;
    for (size_t ci = 0; ci < calls.size(); ++ci) {
      const CollectiveCall& c = calls[ci];
      uint32_t group = c.group.value_or(UINT32_MAX);
      int64_t nel = c.nelems.value_or(-1);
      InstanceKey key;
      if (c.seq) {
        key = {group, 0, *c.seq, c.collective, 0, true};
      } else {
        int64_t step = by_step ? StepOf(step_starts, c.start_ns) : kNoStep;
        int64_t n = ordinal[{step, group, c.collective, nel}]++;
        key = {group, step, n, c.collective, nel, false};
      }
      instances[key].push_back(Arrival{ri, c.start_ns, c.start_ns + c.dur_ns, c.offset, ci});
    }
  }
  // Keep instances seen once per rank on at least two ranks.
  std::vector<std::vector<Arrival>> matched;
  for (auto& [key, arrivals] : instances) {
    if (arrivals.size() < 2) continue;
    std::sort(arrivals.begin(), arrivals.end(),
              [](const Arrival& a, const Arrival& b) { return a.rank_index < b.rank_index; });
    bool unique = std::adjacent_find(arrivals.begin(), arrivals.end(),
                                     [](const Arrival& a, const Arrival& b) {
                                       return a.rank_index == b.rank_index;
                                     }) == arrivals.end();
    if (unique) matched.push_back(std::move(arrivals));
  }
  return matched;
}

}  // namespace laggard
