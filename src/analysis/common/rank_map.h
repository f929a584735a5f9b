// Which rank runs on which GPU of which host: the join between rank-level
// evidence (step times, traces) and host/GPU-level evidence (nvidia-smi,
// DCGM, ibstat, nccl-tests). Built once per run by AnalyzeRun(); the
// detectors, the verdict and the reports read it.
//
// Rules, first wins for each rank (TieRule):
//   kLogged       the step logs / CSV / rank map name host and GPU (local rank);
//   kTrace        a trace names rank, host and device (distributedInfo);
//   kHostOrder    the step logs name the host (a field or the file's folder)
//                 and the host's ranks are n consecutive numbers while its
//                 GPU metrics describe GPUs 0..n-1: rank k of the host on
//                 GPU k (local rank = GPU, the launchers' default);
// and with --gpus-per-node G (rank = node_index x G + local_rank):
//   kLoggedHost   a host the step logs name: GPU = rank mod G, when all the
//                 host's logged ranks fall in one block of G;
//   kHostNumber   node_index = the host name's trailing number - the first
//                 node's number (node-01, gpu-node-3, host12). The first
//                 number is --first-node, else decided from the run: a rank
//                 whose host is logged (number - rank / G), a host numbered
//                 0, every node of the job present with consecutive numbers
//                 (the lowest), or a largest number equal to the job's node
//                 count (numbered from 1). Otherwise it is not guessed: a
//                 capture of node-01 alone from a 2-node job is node 1
//                 (from 0) or node 0 (from 1). Numbers beyond the job's
//                 nodes, names without a number or of several forms refuse
//                 the rule as well;
//   kHostPosition when the rule above is refused for the names (not for an
//                 undecided numbering) and the run knows exactly as many
//                 hosts as the job has nodes: node_index = the host's
//                 position in natural name order (node-2 before node-10).
// The job's node count is ceil(ranks / G), ranks = the largest rank the
// step logs or traces name (or the traces' world size) + 1.
//
// Ties() says which rule tied which ranks (the mapping the reports print);
// untied() lists each host whose GPU metrics no rank could be tied to, why,
// and which flag, file or layout would tie it.

#ifndef LAGGARD_ANALYSIS_COMMON_RANK_MAP_H_
#define LAGGARD_ANALYSIS_COMMON_RANK_MAP_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.h"  // NaturalLess
#include "model/run.h"

namespace laggard {

// Serialized (the JSON report's rank_map.ties[].rule): append only.
enum class TieRule { kLogged, kTrace, kHostOrder, kLoggedHost, kHostNumber, kHostPosition };

// "logged", "trace", "host_order", "logged_host", "host_number", "host_position".
std::string_view TieRuleName(TieRule rule);

// The ranks one rule tied to GPUs.
struct RankTie {
  TieRule rule = TieRule::kLogged;
  std::string how;                 // the rule in words, with G and the first node
  std::vector<int32_t> ranks;      // ascending
  std::vector<std::string> hosts;  // natural order
};

// A host with GPU metrics none of whose GPUs has a rank.
struct UntiedGpus {
  std::string host;
  std::vector<int32_t> gpus;  // ascending
  std::string why;            // why no rule tied them
  std::string to_tie;         // the flag, file or layout that would
};

class RankMap {
 public:
  // `first_node`: --first-node, the number in the host name of the job's
  // first node (used only with `gpus_per_node`).
  static RankMap Build(const Run& run, std::optional<int32_t> gpus_per_node,
                       std::optional<int32_t> first_node = std::nullopt);

  std::optional<int32_t> RankOf(const std::string& host, int32_t gpu) const;
  std::vector<int32_t> RanksOnHost(const std::string& host) const;
  std::optional<std::pair<std::string, int32_t>> GpuOf(int32_t rank) const;
  // Host names seen anywhere in the run, in natural order.
  const std::vector<std::string>& hosts() const { return hosts_; }
  // The host every placed rank runs on, when ranks 0..n-1 (n >= 2) are
  // placed and all on one host; nullopt otherwise (ranks on several hosts,
  // or a gap in the numbering: some hosts' ranks are missing).
  std::optional<std::string> SoleHost() const;

  // One entry per rule that tied at least one rank, in TieRule order.
  std::vector<RankTie> Ties() const;
  // Hosts in natural order.
  const std::vector<UntiedGpus>& untied() const { return untied_; }
  // The entry of untied() for `host`, or nullptr.
  const UntiedGpus* UntiedOn(const std::string& host) const;
  // The next step that would tie GPU `gpu` of `host` to its rank, when
  // that host is in untied(): "to tie GPU 3 of node-01 to its rank, give ...".
  std::optional<std::string> TieStep(const std::optional<std::string>& host,
                                     const std::optional<int32_t>& gpu) const;

 private:
  struct Builder;
  void Add(int32_t rank, const std::string& host, int32_t gpu, TieRule rule);

  std::map<std::pair<std::string, int32_t>, int32_t> rank_of_;
  std::map<int32_t, std::pair<std::string, int32_t>> gpu_of_;
  std::map<int32_t, TieRule> rule_of_;
  std::map<TieRule, std::string> how_;
  std::vector<std::string> hosts_;
  std::vector<UntiedGpus> untied_;
};

// The trailing number of a host's short name (before the first '.'):
// node-01 -> {"node-", 1}, gpu-node-3 -> {"gpu-node-", 3}, host12 ->
// {"host", 12}. nullopt for a name without one or without a prefix
// (an IP address).
struct HostNumber {
  std::string prefix;
  int64_t number = 0;
};
std::optional<HostNumber> ParseHostNumber(std::string_view host);

// Ascending ranks as ranges, "0-7, 16-23, 40"; past 6 ranges, "..., (N ranks)".
std::string RankRangesText(const std::vector<int32_t>& ranks);
// [[first, last], ...] of ascending ranks.
std::vector<std::pair<int32_t, int32_t>> RankRanges(const std::vector<int32_t>& ranks);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_COMMON_RANK_MAP_H_
