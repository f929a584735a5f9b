#include "analysis/collective_match.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace laggard {
namespace {

// Key that identifies one collective instance across ranks.
using InstanceKey = std::tuple<uint32_t /*group*/, int64_t /*seq or ordinal*/, uint32_t /*coll*/,
                               int64_t /*nelems*/, bool /*has_seq*/>;

}  // namespace

std::vector<std::vector<Arrival>> MatchCollectives(const std::vector<const RankTrace*>& traces) {
  std::map<InstanceKey, std::vector<Arrival>> instances;
  for (size_t ri = 0; ri < traces.size(); ++ri) {
    std::map<std::tuple<uint32_t, uint32_t, int64_t>, int64_t> ordinal;
    const std::vector<CollectiveCall>& calls = traces[ri]->collectives;
    for (size_t ci = 0; ci < calls.size(); ++ci) {
      const CollectiveCall& c = calls[ci];
      uint32_t group = c.group.value_or(UINT32_MAX);
      int64_t nel = c.nelems.value_or(-1);
      InstanceKey key;
      if (c.seq) {
        key = {group, *c.seq, c.collective, 0, true};
      } else {
        int64_t n = ordinal[{group, c.collective, nel}]++;
        key = {group, n, c.collective, nel, false};
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
    bool unique = std::adjacent_find(arrivals.begin(), arrivals.end(), [](const Arrival& a, const Arrival& b) {
                    return a.rank_index == b.rank_index;
                  }) == arrivals.end();
    if (unique) matched.push_back(std::move(arrivals));
  }
  return matched;
}

}  // namespace laggard
