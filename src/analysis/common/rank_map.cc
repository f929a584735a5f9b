#include "analysis/common/rank_map.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace laggard {
namespace {

constexpr std::string_view kRankMapFile = "a rank map (a CSV `rank,host,gpu`, one row per rank)";

std::string ByLogsLayout(const std::string& host) {
  return fmt::format(
      "step logs in a folder per host ({}/rank-R.log) or step lines that name host and "
      "local_rank",
      host);
}

}  // namespace

std::string_view TieRuleName(TieRule rule) {
  switch (rule) {
    case TieRule::kLogged: return "logged";
    case TieRule::kTrace: return "trace";
    case TieRule::kHostOrder: return "host_order";
    case TieRule::kLoggedHost: return "logged_host";
    case TieRule::kHostNumber: return "host_number";
    case TieRule::kHostPosition: return "host_position";
  }
  return "";
}

std::optional<HostNumber> ParseHostNumber(std::string_view host) {
  std::string_view name = host.substr(0, host.find('.'));
  size_t end = name.size(), begin = end;
  while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9') --begin;
  // No number, no prefix (an address or a bare number), or too long to count nodes.
  if (begin == end || begin == 0 || end - begin > 9) return std::nullopt;
  HostNumber n;
  n.prefix = std::string(name.substr(0, begin));
  for (size_t i = begin; i < end; ++i) n.number = n.number * 10 + (name[i] - '0');
  return n;
}

std::vector<std::pair<int32_t, int32_t>> RankRanges(const std::vector<int32_t>& ranks) {
  std::vector<std::pair<int32_t, int32_t>> out;
  for (int32_t r : ranks) {
    if (!out.empty() && out.back().second + 1 == r) {
      out.back().second = r;
    } else {
      out.push_back({r, r});
    }
  }
  return out;
}

std::string RankRangesText(const std::vector<int32_t>& ranks) {
  std::vector<std::pair<int32_t, int32_t>> ranges = RankRanges(ranks);
  std::string s;
  for (size_t i = 0; i < ranges.size() && i < 6; ++i) {
    const auto& [a, b] = ranges[i];
    s += (i ? ", " : "") + (a == b ? std::to_string(a) : fmt::format("{}-{}", a, b));
  }
  if (ranges.size() > 6) s += fmt::format(", ... ({} ranks)", ranks.size());
  return s;
}

// The state of one Build(): the run's ranks and hosts, and why the
// --gpus-per-node rules did not apply where they did not.
struct RankMap::Builder {
  const Run& run;
  std::optional<int32_t> g;
  std::optional<int32_t> first_node;
  RankMap m;
  std::set<int32_t> ranks;                     // every rank step logs or traces name
  std::map<int32_t, std::string> logged_host;  // rank -> the host its step log or trace names
  int64_t job_ranks = 0;                       // the largest rank (or world size) + 1
  std::string refusal;                         // why the host-number rule tied nothing
  std::string refusal_fix;                     // what would tie them instead
  bool names_refused = false;                  // the names, not the numbering, refused it

  void Collect();
  void TieHostOrder();
  void TieLoggedHost();
  std::optional<int64_t> FirstNumber(const std::map<int64_t, std::string>& host_of_number,
                                     int64_t nodes, std::string& basis);
  void TieByHostNumber();
  void TieByPosition();
  void ListUntied();
};

void RankMap::Builder::Collect() {
  std::set<std::string> hosts;
  for (const StepSeries& s : run.ranks) {
    ranks.insert(s.info.rank);
    if (s.info.host) {
      hosts.insert(*s.info.host);
      logged_host.emplace(s.info.rank, *s.info.host);
    }
    if (s.info.host && s.info.local_gpu)
      m.Add(s.info.rank, *s.info.host, *s.info.local_gpu, TieRule::kLogged);
  }
  for (const RankTrace& t : run.traces) {
    if (t.host) hosts.insert(*t.host);
    if (t.rank) ranks.insert(*t.rank);
    if (t.rank && t.host) logged_host.emplace(*t.rank, *t.host);
    if (t.rank && t.host && t.device) m.Add(*t.rank, *t.host, *t.device, TieRule::kTrace);
    if (t.world_size) job_ranks = std::max<int64_t>(job_ranks, *t.world_size);
  }
  if (!ranks.empty()) job_ranks = std::max<int64_t>(job_ranks, int64_t{*ranks.rbegin()} + 1);
  for (const GpuRecord& gpu : run.hardware.gpus) {
    if (gpu.host) hosts.insert(*gpu.host);
  }
  for (const IbPort& p : run.network.ib_ports) {
    if (p.host) hosts.insert(*p.host);
  }
  for (const EthLink& l : run.network.eth_links) {
    if (l.host) hosts.insert(*l.host);
  }
  m.hosts_.assign(hosts.begin(), hosts.end());
  std::sort(m.hosts_.begin(), m.hosts_.end(), NaturalLess);
}

void RankMap::Builder::TieHostOrder() {
  // A host whose ranks are known but not their GPUs: when its ranks are n
  // consecutive numbers and the inputs describe n GPUs of it, rank k of the
  // host runs on GPU k (the launchers' default placement, local rank = GPU).
  std::map<std::string, std::vector<int32_t>> unplaced;
  for (const StepSeries& s : run.ranks) {
    if (s.info.host && !m.gpu_of_.count(s.info.rank)) unplaced[*s.info.host].push_back(s.info.rank);
  }
  for (auto& [host, host_ranks] : unplaced) {
    std::set<int32_t> gpus;
    for (const GpuRecord& gpu : run.hardware.gpus) {
      if (gpu.host == host && !gpu.mig_instance) gpus.insert(gpu.index);
    }
    std::vector<int32_t> all = host_ranks;
    for (const auto& [r, where] : m.gpu_of_) {
      if (where.first == host) all.push_back(r);
    }
    std::sort(all.begin(), all.end());
    bool consecutive =
        !all.empty() && all.back() - all.front() + 1 == static_cast<int32_t>(all.size());
    bool gpus_match = gpus.size() == all.size() && !gpus.empty() && *gpus.begin() == 0 &&
                      *gpus.rbegin() == static_cast<int32_t>(gpus.size()) - 1;
    if (!consecutive || !gpus_match) continue;
    for (int32_t r : host_ranks) m.Add(r, host, r - all.front(), TieRule::kHostOrder);
  }
  m.how_[TieRule::kHostOrder] =
      "host from the step logs (a field or their folder) or the agent that saw the rank's "
      "process, GPU = the rank's place among the host's consecutive ranks";
}

void RankMap::Builder::TieLoggedHost() {
  int32_t gpus = *g;
  std::map<std::string, std::set<int32_t>> blocks;  // host -> rank / G of its logged ranks
  for (const auto& [r, host] : logged_host) blocks[host].insert(r / gpus);
  for (const auto& [r, host] : logged_host) {
    if (!m.gpu_of_.count(r) && blocks[host].size() == 1)
      m.Add(r, host, r % gpus, TieRule::kLoggedHost);
  }
  m.how_[TieRule::kLoggedHost] = fmt::format(
      "host from the step logs (a field or their folder) or the agent that saw the "
      "rank's process, GPU = rank mod {}",
      gpus);
}

// The number in the host name of the job's first node, and in `basis` how
// it was decided; nullopt (and `refusal`) when it cannot be.
std::optional<int64_t> RankMap::Builder::FirstNumber(
    const std::map<int64_t, std::string>& host_of_number, int64_t nodes, std::string& basis) {
  int32_t gpus = *g;
  if (first_node) {
    basis = fmt::format("--first-node {}", *first_node);
    return *first_node;
  }
  std::optional<int64_t> from_logs;
  int32_t from_rank = 0;
  for (const auto& [r, host] : logged_host) {
    int64_t first = ParseHostNumber(host)->number - r / gpus;
    if (!from_logs) {
      from_logs = first, from_rank = r;
    } else if (first != *from_logs) {
      refusal = fmt::format(
          "the step logs put rank {} on {} and rank {} on {}: host numbers do not follow rank "
          "order",
          from_rank, logged_host[from_rank], r, host);
      refusal_fix = fmt::format("{}, or {}", kRankMapFile, ByLogsLayout(host));
      return std::nullopt;
    }
  }
  const auto& [lowest, lowest_host] = *host_of_number.begin();
  const auto& [highest, highest_host] = *host_of_number.rbegin();
  if (from_logs) {
    basis = fmt::format("rank {} runs on {} (its step log or trace)", from_rank,
                        logged_host[from_rank]);
    return from_logs;
  }
  if (lowest == 0) {
    basis = fmt::format("numbered from 0: {} is one of the run's hosts", lowest_host);
    return 0;
  }
  if (static_cast<int64_t>(host_of_number.size()) == nodes && highest - lowest + 1 == nodes) {
    basis = fmt::format("the job's {} nodes are all in the inputs, from {}", nodes, lowest_host);
    return lowest;
  }
  if (highest == nodes) {
    basis = fmt::format("numbered from 1: {} is the last of the job's {} nodes ({} ranks / {})",
                        highest_host, nodes, job_ranks, gpus);
    return 1;
  }
  refusal = fmt::format(
      "cannot tell whether host numbers start at 0 or 1 (the job has {} nodes by {} ranks / {}; "
      "the inputs name {} of them, the lowest {})",
      nodes, job_ranks, gpus, host_of_number.size(), lowest_host);
  refusal_fix = fmt::format(
      "--first-node 0 or --first-node 1 (the number in the host name of rank 0), the GPU "
      "metrics of rank 0's host as well, {}, or {}",
      ByLogsLayout(lowest_host), kRankMapFile);
  return std::nullopt;
}

void RankMap::Builder::TieByHostNumber() {
  int32_t gpus = *g;
  int64_t nodes = (job_ranks + gpus - 1) / gpus;
  std::map<int64_t, std::string> host_of_number;
  std::optional<std::string> prefix_host;
  std::string prefix;
  auto refuse_names = [&](std::string why) {
    refusal = std::move(why);
    refusal_fix = fmt::format("{}, or {}", ByLogsLayout(m.hosts_.front()), kRankMapFile);
    names_refused = true;
  };
  for (const std::string& h : m.hosts_) {
    std::optional<HostNumber> n = ParseHostNumber(h);
    if (!n) return refuse_names(fmt::format("host {} has no number in its name", h));
    if (prefix_host && n->prefix != prefix) {
      return refuse_names(fmt::format(
          "hosts {} and {} are named differently, so their numbers need not count nodes",
          *prefix_host, h));
    }
    if (host_of_number.count(n->number)) {
      return refuse_names(
          fmt::format("hosts {} and {} have the same number", host_of_number[n->number], h));
    }
    prefix_host = h, prefix = n->prefix;
    host_of_number[n->number] = h;
  }
  if (host_of_number.empty() || nodes == 0) return;
  std::string basis;
  std::optional<int64_t> first = FirstNumber(host_of_number, nodes, basis);
  if (!first) return;
  for (const auto& [n, h] : host_of_number) {
    if (n - *first >= 0 && n - *first < nodes) continue;
    refusal = fmt::format(
        "{} would be node {} of a job of {} nodes ({} ranks / {}): host numbers do not count the "
        "job's nodes from {}",
        h, n - *first, nodes, job_ranks, gpus, *first);
    refusal_fix = fmt::format("{}, or {}", ByLogsLayout(h), kRankMapFile);
    names_refused = !first_node;
    return;
  }
  m.how_[TieRule::kHostNumber] = fmt::format(
      "--gpus-per-node {}: rank = (host number - {}) x {} + GPU; {}", gpus, *first, gpus, basis);
  for (int32_t r : ranks) {
    if (m.gpu_of_.count(r)) continue;
    auto it = host_of_number.find(*first + r / gpus);
    if (it != host_of_number.end()) m.Add(r, it->second, r % gpus, TieRule::kHostNumber);
  }
}

void RankMap::Builder::TieByPosition() {
  int32_t gpus = *g;
  int64_t nodes = (job_ranks + gpus - 1) / gpus;
  if (!names_refused || !logged_host.empty() || static_cast<int64_t>(m.hosts_.size()) != nodes)
    return;
  m.how_[TieRule::kHostPosition] = fmt::format(
      "--gpus-per-node {}: rank = node index x {} + GPU, node index = the host's place in name "
      "order among the job's {} hosts (all in the inputs)",
      gpus, gpus, nodes);
  for (int32_t r : ranks) {
    size_t node = static_cast<size_t>(r / gpus);
    if (!m.gpu_of_.count(r) && node < m.hosts_.size())
      m.Add(r, m.hosts_[node], r % gpus, TieRule::kHostPosition);
  }
  refusal.clear();
}

void RankMap::Builder::ListUntied() {
  if (ranks.empty()) return;  // nothing to tie GPUs to
  std::map<std::string, std::set<int32_t>> gpus_of;
  for (const GpuRecord& gpu : run.hardware.gpus) {
    if (gpu.host) gpus_of[*gpu.host].insert(gpu.index);
  }
  for (const std::string& host : m.hosts_) {
    auto it = gpus_of.find(host);
    if (it == gpus_of.end() || !m.RanksOnHost(host).empty()) continue;
    UntiedGpus u;
    u.host = host;
    u.gpus.assign(it->second.begin(), it->second.end());
    std::vector<int32_t> logged;
    for (const auto& [r, h] : logged_host) {
      if (h == host) logged.push_back(r);
    }
    if (!logged.empty()) {
      u.why = g ? fmt::format("the step logs put ranks {} on it, which are not one block of {}",
                              RankRangesText(logged), *g)
                : fmt::format(
                      "the step logs put ranks {} on it, which are not one consecutive rank per "
                      "GPU of its {}",
                      RankRangesText(logged), u.gpus.size());
      u.to_tie = g ? std::string(kRankMapFile)
                   : fmt::format("--gpus-per-node G (GPU = rank mod G), or {}", kRankMapFile);
    } else if (g && !refusal.empty()) {
      u.why = refusal;
      u.to_tie = refusal_fix;
    } else if (g) {
      u.why = "no rank the step logs or traces name runs on it by --gpus-per-node";
      u.to_tie = fmt::format("{}, or {}", ByLogsLayout(host), kRankMapFile);
    } else {
      u.why = logged_host.empty()
                  ? "the step logs name no host or GPU, and no trace names its host and device"
                  : fmt::format("no step log or trace names {} as its host", host);
      // The arithmetic needs a numbered name; a rank map or the logs' layout never does.
      u.to_tie = fmt::format("{}, or {}", ByLogsLayout(host), kRankMapFile);
      if (ParseHostNumber(host)) {
        u.to_tie = fmt::format(
            "--gpus-per-node G (rank = (host number - the first node's number) x G + GPU), {}",
            u.to_tie);
      }
    }
    m.untied_.push_back(std::move(u));
  }
}

void RankMap::Add(int32_t rank, const std::string& host, int32_t gpu, TieRule rule) {
  if (gpu_of_.count(rank) || rank_of_.count({host, gpu})) return;
  gpu_of_[rank] = {host, gpu};
  rank_of_[{host, gpu}] = rank;
  rule_of_[rank] = rule;
}

RankMap RankMap::Build(const Run& run, std::optional<int32_t> gpus_per_node,
                       std::optional<int32_t> first_node) {
  Builder b{run, gpus_per_node && *gpus_per_node > 0 ? gpus_per_node : std::nullopt, first_node};
  b.Collect();
  b.m.how_[TieRule::kLogged] = "host and GPU (local rank) from the step logs or a rank map";
  b.m.how_[TieRule::kTrace] = "host and device from the profiler traces";
  b.TieHostOrder();
  if (b.g) {
    b.TieLoggedHost();
    b.TieByHostNumber();
    b.TieByPosition();
  }
  b.ListUntied();
  return std::move(b.m);
}

std::vector<RankTie> RankMap::Ties() const {
  std::map<TieRule, RankTie> by_rule;
  std::map<TieRule, std::set<std::string>> hosts;
  for (const auto& [rank, rule] : rule_of_) {
    RankTie& t = by_rule[rule];
    t.rule = rule;
    t.ranks.push_back(rank);
    hosts[rule].insert(gpu_of_.at(rank).first);
  }
  std::vector<RankTie> out;
  for (auto& [rule, t] : by_rule) {
    auto how = how_.find(rule);
    if (how != how_.end()) t.how = how->second;
    t.hosts.assign(hosts[rule].begin(), hosts[rule].end());
    std::sort(t.hosts.begin(), t.hosts.end(), NaturalLess);
    out.push_back(std::move(t));
  }
  return out;
}

const UntiedGpus* RankMap::UntiedOn(const std::string& host) const {
  for (const UntiedGpus& u : untied_) {
    if (u.host == host) return &u;
  }
  return nullptr;
}

std::optional<std::string> RankMap::TieStep(const std::optional<std::string>& host,
                                            const std::optional<int32_t>& gpu) const {
  const UntiedGpus* u = host && gpu ? UntiedOn(*host) : nullptr;
  if (u == nullptr) return std::nullopt;
  return fmt::format("to tie GPU {} of {} to its rank, give {}", *gpu, *host, u->to_tie);
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
