// What the network detector's rules share (network_detector.cc and the
// node-pair bandwidth tests, pair_bandwidth.cc): the decision so far and the
// helpers that make a host's finding and its next steps. Internal to the
// network detector.

#ifndef LAGGARD_ANALYSIS_NETWORK_NETWORK_RULES_H_
#define LAGGARD_ANALYSIS_NETWORK_NETWORK_RULES_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/network/network_detector.h"

namespace laggard {

// What the rules have found so far: the findings, and the hosts with a
// fault of their own (a port down, a degraded link or bandwidth, NCCL over
// sockets), which the shared-switch rule counts as slow.
struct NetworkDecision {
  NetworkAnalysis a;
  std::set<std::string> bad_hosts;
};

// "a, b, c".
std::string HostList(const std::vector<std::string>& hosts);

// A finding of `code` about `host` (none: about no host), with the host's
// ranks and its switch from the map.
Finding HostFinding(FindingCode code, const std::optional<std::string>& host, const RankMap& ranks,
                    const std::map<std::string, std::string>& switch_of);

// " (ranks 0,1,...)", or "" for none.
std::string RanksText(const std::vector<int32_t>& ranks);

// The first host of the job, in natural order, not in `bad`.
std::string HealthyHost(const RankMap& ranks, const std::set<std::string>& bad);

// The nccl-tests command that compares `suspect` with `healthy`.
std::string PairTestCommand(const std::string& suspect, const std::string& healthy);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_NETWORK_NETWORK_RULES_H_
