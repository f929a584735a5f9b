#include "mpi/shares.h"

#include <algorithm>
#include <map>

namespace laggard {

std::vector<std::vector<uint32_t>> AssignShares(std::span<const uint64_t> bytes,
                                                std::span<const std::optional<int32_t>> rank,
                                                int processes) {
  struct Group {
    uint64_t bytes = 0;
    std::vector<uint32_t> files;  // ascending
  };
  std::vector<Group> groups;
  std::map<int32_t, size_t> group_of_rank;
  for (uint32_t i = 0; i < bytes.size(); ++i) {
    size_t g = groups.size();
    if (rank[i]) {
      auto [it, fresh] = group_of_rank.emplace(*rank[i], groups.size());
      g = it->second;
      if (fresh) groups.emplace_back();
    } else {
      groups.emplace_back();
    }
    groups[g].bytes += bytes[i];
    groups[g].files.push_back(i);
  }
  // Largest first; on equal bytes the group with the earlier first file.
  std::vector<size_t> order(groups.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return groups[a].bytes > groups[b].bytes; });
  const size_t n = static_cast<size_t>(std::max(1, processes));
  std::vector<std::vector<uint32_t>> shares(n);
  std::vector<uint64_t> load(n, 0);
  for (size_t g : order) {
    size_t p = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[p] += groups[g].bytes;
    shares[p].insert(shares[p].end(), groups[g].files.begin(), groups[g].files.end());
  }
  for (auto& share : shares) std::sort(share.begin(), share.end());
  return shares;
}

}  // namespace laggard
