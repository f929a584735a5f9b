// Network detector: for ranks that *wait*, is it the network, and where?
//
// Assumption: hosts of one job are built alike (same NICs, same switches,
// same NCCL setup), so a host whose link, bandwidth or transport differs from
// its peers' is the suspect; an identical host that is slow together with its
// switch neighbours points outside the job (the article's shared switch).
//
// Metrics and decisions (defaults, origin):
//   IB port      state not Active -> port_down (confidence higher when the
//                same CA/port is Active on the other hosts); Active port
//                whose rate is < 90% of the median rate of Active ports of
//                the same link layer and CA type on all hosts, or whose
//                width is below theirs -> link_degraded (4X -> 1X, 400 -> 200)
//   Ethernet     "Link detected: no" -> port_down; speed < 90% of the median
//                speed of the same interface name on other hosts ->
//                link_degraded
//   nccl-tests   per run: bus bandwidth at large sizes = median out-of-place
//                busbw of the rows >= 1/4 of the run's largest size; runs are
//                compared with runs of the same collective and rank count;
//                <= 0.7x their median -> bandwidth_low (article: same-model
//                nodes at half the bandwidth). The host common to every low
//                run (each in >= 2) is named; else each low run's hosts.
//                #wrong > 0 or failure lines -> test_errors
//   NCCL log     a host using NET/Socket while most use IB -> socket_fallback;
//                no GDRDMA connection on a host while others have them -> no_gdr
//   topology     a GPU whose nearest NIC is NODE/SYS away while most GPUs
//                have one at PIX/PXB -> poor_path
//   counters     every host of one switch waits for credits per byte sent
//                (perfquery PortXmitWait / PortXmitData) far more than the
//                other switches' hosts (robust z >= 4 and >= 1.5x their
//                median) -> shared_switch, pattern port_counters; from
//                snapshots over time, a switch whose every host waits >= 2x
//                the others' median (and above each of them) in >= 2
//                intervals, twice as many as any other switch -> the same
//   switch       >= 2 suspect hosts (from step/trace/network findings), all
//                on one switch of the host->switch map, with other switches'
//                hosts fine -> shared_switch
//
// Thread-safety: AnalyzeNetwork() is a pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_NETWORK_DETECTOR_H_
#define LAGGARD_ANALYSIS_NETWORK_DETECTOR_H_

#include <vector>

#include "analysis/finding.h"
#include "analysis/hardware_detector.h"
#include "analysis/rank_map.h"
#include "model/run.h"

namespace laggard {

struct NetworkDetectorOptions {
  double rate_ratio = 0.9;
  double bandwidth_ratio = 0.7;
  // Hosts of one switch slow together: each at or below this share of
  // comparable runs' bandwidth while every host elsewhere is at or above
  // switch_peer_ratio (nccl-tests repeat within ~1-3% on a quiet fabric).
  double switch_group_ratio = 0.93;
  double switch_peer_ratio = 0.97;
  // Port counters (perfquery): a switch whose every host waits for credits
  // (PortXmitWait / PortXmitData) at >= port_wait_z robust z above the hosts
  // on other switches and >= port_wait_ratio x their median. z 4: a host's
  // chance of passing by noise is < 1e-4 under a normal spread, and every
  // host of the switch must pass; 1.5x: leaves with different cabling or
  // firmware differ by tens of percent, a congested one by multiples. The
  // MAD floor (0.05 in log, 5%) keeps identical hosts from making any
  // difference significant. Hosts that sent < port_min_data_share of the
  // median host's bytes did not carry the job's traffic (NET/Socket).
  double port_wait_z = 4;
  double port_wait_ratio = 1.5;
  double port_wait_mad_floor = 0.05;
  double port_min_data_share = 0.1;
  // The same with too few hosts elsewhere for a spread (< 3), or a spread
  // too noisy for z: every host of the switch waits more than every host
  // elsewhere, the least-waiting of them >= port_wait_apart_min x the
  // others' median and the switch's median >= port_wait_apart_ratio x it.
  double port_wait_apart_min = 2;
  double port_wait_apart_ratio = 2.5;
  // Snapshots over time (a `date; perfquery -x` sampling loop): per interval
  // between consecutive snapshots, a switch is congested when every one of
  // its hosts waits per byte more than every host elsewhere and >=
  // port_interval_ratio x their median (2x: the ordinary wait varies by
  // tens of percent between intervals, a congested leaf's by multiples),
  // with >= port_interval_min_hosts hosts on it and elsewhere (one host
  // against one is above it half the time by chance, two against two a
  // sixth). Named when congested in >= port_interval_min_count intervals
  // and >= port_interval_dominance x as many as any other switch. Hosts
  // with different snapshot counts are aligned by time within
  // port_interval_align_s.
  double port_interval_ratio = 2;
  size_t port_interval_min_hosts = 2;
  // One host elsewhere suffices when the switch has this many, each above
  // it (a fifth by chance for 4 against 1, before the 2x).
  size_t port_interval_min_hosts_vs_one = 3;
  size_t port_interval_min_count = 2;
  size_t port_interval_dominance = 2;
  double port_interval_align_s = 5;
};

struct NcclTestStats {
  size_t run = 0;  // index into run.network.nccl_tests
  std::string collective;
  std::vector<std::string> hosts;
  std::optional<double> large_busbw_gbps;
  std::optional<double> peer_busbw_gbps;  // median of comparable runs
};

struct NetworkAnalysis {
  std::vector<NcclTestStats> nccl_tests;
  std::vector<Finding> findings;
};

NetworkAnalysis AnalyzeNetwork(const Run& run, const RankMap& ranks,
                               const std::vector<SuspectRank>& suspects,
                               const NetworkDetectorOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_NETWORK_DETECTOR_H_
