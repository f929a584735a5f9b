// Node pairs' bandwidth, read for a bad node or the fabric: the test users
// run to localise a slow network (nccl-tests between every pair of nodes,
// nccl-tests #106). Pairs come from a pasted node-pair table (each file
// its own set) or from the two-host nccl-tests runs of one comparable group
// (same collective and rank count, network_detector.h), when they span 3
// hosts or more.
//
// A pair is slow at <= slow_ratio (the detector's bandwidth_ratio, 0.7) of
// the fast level, the median of the best third of the pairs (the healthy
// bandwidth: a bad node slows up to two thirds of the pairs of a small
// set, and no healthy pair runs much above its link). Repeated pairs take
// their median. Then:
//   - a node slow with every partner is the node, when it has >= 2
//     partners and >= 2 of them are fast (>= kPairFastRatio of the fast
//     level) with another node, by >= 2 distinct pairs (else the partners
//     could be the slow ones), unless another such node was never tested
//     with it, it is alone on its switch, or it is fast in another table or
//     test: net.bandwidth_low naming the host;
//   - a slow pair whose two nodes are each fast with another partner is
//     the path between them (switch, cable, routing): net.pair_fabric,
//     naming no node;
//   - a slow pair neither explained nor cleared (its nodes tested with no
//     one else) is net.pair_slow, information: either node or the path.
// With fewer than 3 hosts or 3 pairs nothing is decided; a pair at
// <= slow_ratio of the best is net.pair_slow, saying so.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_NETWORK_PAIR_BANDWIDTH_H_
#define LAGGARD_ANALYSIS_NETWORK_PAIR_BANDWIDTH_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/network/network_rules.h"
#include "model/source.h"

namespace laggard {

// One measurement of a node pair.
// The fastest pair is left out of the fast level while it runs above this
// many times the next: a typo ("8836" for 88.36) would lift the level over
// every healthy pair.
inline constexpr double kPairTooFast = 3;

// A pair clears its nodes (shows them fast) only at this share of the fast
// level or more: a pair just above the slow cut (0.71x) is no evidence that
// its nodes are healthy.
inline constexpr double kPairFastRatio = 0.85;

struct PairMeasure {
  std::string a, b;
  double gbps = 0;
  SourceRef src;
  std::optional<std::string> note;  // the table row's "# ..." comment
};

// A pair with its measurements merged.
struct PairLink {
  std::string a, b;  // a before b in natural order
  double gbps = 0;   // median of its measurements
  size_t measurements = 0;
  SourceRef src;  // the first measurement
  std::optional<std::string> note;
  bool slow = false;
  bool fast = false;  // >= kPairFastRatio of the fast level: clears its nodes
};

struct PairDecision {
  std::vector<PairLink> pairs;  // slowest first
  size_t hosts = 0;
  bool decided = false;                // >= 3 hosts and >= 3 pairs
  double reference_gbps = 0;           // the fast level (the best pair when not decided)
  std::vector<std::string> bad_nodes;  // natural order
  // Nodes slow with every partner that the pairs cannot pin down, and why
  // (a node may appear twice, with two reasons): net.pair_slow.
  std::vector<std::pair<std::string, std::string>> suspects;
  std::vector<size_t> fabric;  // into pairs: slow, both nodes fast elsewhere
  std::vector<size_t> open;    // into pairs: slow, undecided
};

PairDecision DecidePairs(const std::vector<PairMeasure>& measures, double slow_ratio);

// The node-pair rules on the run's tables and its two-host nccl-tests runs;
// `handled` gets the nccl-tests runs (into NetworkMetrics::nccl_tests) they
// decided, which the per-run bandwidth rule then leaves alone.
void DecidePairTests(const NetworkMetrics& m, const RankMap& ranks, const NetworkDetectorOptions& o,
                     NetworkDecision& d, std::set<size_t>& handled);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_NETWORK_PAIR_BANDWIDTH_H_
