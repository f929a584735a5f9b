#include "analysis/rank_map.h"

#include <algorithm>
#include <set>

namespace laggard {

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && a[ei] >= '0' && a[ei] <= '9') ++ei;
      while (ej < b.size() && b[ej] >= '0' && b[ej] <= '9') ++ej;
      std::string_view na(a.data() + i, ei - i), nb(b.data() + j, ej - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei, j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

void RankMap::Add(int32_t rank, const std::string& host, int32_t gpu) {
  if (gpu_of_.count(rank) || rank_of_.count({host, gpu})) return;
  gpu_of_[rank] = {host, gpu};
  rank_of_[{host, gpu}] = rank;
}

RankMap RankMap::Build(const Run& run, std::optional<int32_t> gpus_per_node) {
  RankMap m;
  std::set<std::string> hosts;
  for (const StepSeries& s : run.ranks) {
    if (s.info.host) hosts.insert(*s.info.host);
    if (s.info.host && s.info.local_gpu) m.Add(s.info.rank, *s.info.host, *s.info.local_gpu);
  }
  for (const RankTrace& t : run.traces) {
    if (t.host) hosts.insert(*t.host);
    if (t.rank && t.host && t.device) m.Add(*t.rank, *t.host, *t.device);
  }
  for (const GpuRecord& g : run.hardware.gpus) {
    if (g.host) hosts.insert(*g.host);
  }
  for (const IbPort& p : run.network.ib_ports) {
    if (p.host) hosts.insert(*p.host);
  }
  for (const EthLink& l : run.network.eth_links) {
    if (l.host) hosts.insert(*l.host);
  }
  m.hosts_.assign(hosts.begin(), hosts.end());
  std::sort(m.hosts_.begin(), m.hosts_.end(), NaturalLess);
  // A host whose ranks are known but not their GPUs: when its ranks are n
  // consecutive numbers and the inputs describe n GPUs of it, rank k of the
  // host runs on GPU k (the launchers' default placement, local rank = GPU).
  {
    std::map<std::string, std::vector<int32_t>> unplaced;
    for (const StepSeries& s : run.ranks) {
      if (s.info.host && !m.gpu_of_.count(s.info.rank))
        unplaced[*s.info.host].push_back(s.info.rank);
    }
    for (auto& [host, ranks] : unplaced) {
      std::set<int32_t> gpus;
      for (const GpuRecord& g : run.hardware.gpus) {
        if (g.host == host && !g.mig_instance) gpus.insert(g.index);
      }
      std::vector<int32_t> all = ranks;
      for (const auto& [r, where] : m.gpu_of_) {
        if (where.first == host) all.push_back(r);
      }
      std::sort(all.begin(), all.end());
      bool consecutive =
          !all.empty() && all.back() - all.front() + 1 == static_cast<int32_t>(all.size());
      bool gpus_match = gpus.size() == all.size() && !gpus.empty() && *gpus.begin() == 0 &&
                        *gpus.rbegin() == static_cast<int32_t>(gpus.size()) - 1;
      if (!consecutive || !gpus_match) continue;
      for (int32_t r : ranks) m.Add(r, host, r - all.front());
    }
  }
  if (gpus_per_node && *gpus_per_node > 0) {
    int32_t g = *gpus_per_node;
    // Ranks known from step logs or traces, placed by the rule.
    std::set<int32_t> ranks;
    for (const StepSeries& s : run.ranks) ranks.insert(s.info.rank);
    for (const RankTrace& t : run.traces) {
      if (t.rank) ranks.insert(*t.rank);
    }
    for (int32_t r : ranks) {
      size_t node = static_cast<size_t>(r / g);
      if (node < m.hosts_.size()) m.Add(r, m.hosts_[node], r % g);
    }
  }
  return m;
}

std::optional<std::string> RankMap::SoleHost() const {
  if (gpu_of_.size() < 2 || gpu_of_.begin()->first != 0 ||
      gpu_of_.rbegin()->first != static_cast<int32_t>(gpu_of_.size()) - 1) {
    return std::nullopt;
  }
  const std::string& host = gpu_of_.begin()->second.first;
  for (const auto& [rank, where] : gpu_of_) {
    if (where.first != host) return std::nullopt;
  }
  return host;
}

std::optional<int32_t> RankMap::RankOf(const std::string& host, int32_t gpu) const {
  auto it = rank_of_.find({host, gpu});
  if (it == rank_of_.end()) return std::nullopt;
  return it->second;
}

std::vector<int32_t> RankMap::RanksOnHost(const std::string& host) const {
  std::vector<int32_t> out;
  for (const auto& [key, rank] : rank_of_) {
    if (key.first == host) out.push_back(rank);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::pair<std::string, int32_t>> RankMap::GpuOf(int32_t rank) const {
  auto it = gpu_of_.find(rank);
  if (it == gpu_of_.end()) return std::nullopt;
  return it->second;
}

}  // namespace laggard
