// Which rank runs on which GPU of which host: the join between rank-level
// evidence (step times, traces) and host/GPU-level evidence (nvidia-smi,
// DCGM, ibstat, nccl-tests).
//
// Sources, first wins: the run's rank info (step logs or CSV naming host and
// GPU / local rank), the traces (distributedInfo rank + host + device); for a
// host whose ranks are n consecutive numbers and whose GPU metrics describe
// GPUs 0..n-1, rank k of the host on GPU k (local rank = GPU, the launchers'
// default); then the usual placement rule when the user gives --gpus-per-node G:
//   global rank = node_index x G + local_rank,
// with node_index the position of the host in natural order of the host
// names the inputs mention (node-2 before node-10).

#ifndef LAGGARD_ANALYSIS_RANK_MAP_H_
#define LAGGARD_ANALYSIS_RANK_MAP_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/run.h"

namespace laggard {

class RankMap {
 public:
  static RankMap Build(const Run& run, std::optional<int32_t> gpus_per_node);

  std::optional<int32_t> RankOf(const std::string& host, int32_t gpu) const;
  std::vector<int32_t> RanksOnHost(const std::string& host) const;
  std::optional<std::pair<std::string, int32_t>> GpuOf(int32_t rank) const;
  // Host names seen anywhere in the run, in natural order.
  const std::vector<std::string>& hosts() const { return hosts_; }
  // The host every placed rank runs on, when ranks 0..n-1 (n >= 2) are
  // placed and all on one host; nullopt otherwise (ranks on several hosts,
  // or a gap in the numbering: some hosts' ranks are missing).
  std::optional<std::string> SoleHost() const;

 private:
  void Add(int32_t rank, const std::string& host, int32_t gpu);

  std::map<std::pair<std::string, int32_t>, int32_t> rank_of_;
  std::map<int32_t, std::pair<std::string, int32_t>> gpu_of_;
  std::vector<std::string> hosts_;
};

// "node-2" < "node-10": digit runs compare as numbers.
bool NaturalLess(const std::string& a, const std::string& b);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_RANK_MAP_H_
