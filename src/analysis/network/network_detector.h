// Network detector: for ranks that *wait*, is it the network, and where?
// The verdict stage (AnalyzeRun) calls AnalyzeNetwork() with the ranks the
// step and trace detectors suspect; tests call its two parts:
// MeasureNetwork() (the peer comparisons and per-host counters below) and
// DecideNetwork() (the rules).
//
// Assumption: hosts of one job are built alike (same NICs, same switches,
// same NCCL setup), so a host whose link, bandwidth or transport differs from
// its peers' is the suspect; an identical host that is slow together with its
// switch neighbours points outside the job (the article's shared switch).
//
// Metrics (MeasureNetwork): each IB port's and Ethernet link's peers (same
// link layer and CA type / same interface name); per nccl-tests run the
// large-size bus bandwidth and the median of comparable runs, per host its
// best ratio to them; NCCL's transports per host of each job; each GPU's
// nearest NIC in the topology matrix; per host PortXmitWait /
// PortXmitData from the last counter snapshots, and per interval between
// snapshots. Hosts that sent < port_min_data_share of the median host's
// bytes are left out of the counter metrics.
// Decisions (DecideNetwork; defaults, origin):
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
//                have one at PIX/PXB -> poor_path; more GPUs nearest one
//                NIC (at PIX/PXB) than ceil(GPUs / NICs) of the host -> nic_shared
//   counters     every host of one switch waits for credits per byte sent
//                (perfquery PortXmitWait / PortXmitData) far more than the
//                other switches' hosts (robust z >= 4 and >= 1.5x their
//                median) -> shared_switch, pattern port_counters; from
//                snapshots over time, a switch whose every host waits >= 2x
//                the others' median (and above each of them) in >= 2
//                intervals, twice as many as any other switch -> the same
//   switch       >= 2 suspect hosts (from step/trace/network findings), all
//                on one switch of the host->switch map, with other switches'
//                hosts fine -> shared_switch; or every host of one switch at
//                <= switch_group_ratio of comparable nccl-tests runs, those
//                elsewhere >= switch_peer_ratio -> shared_switch, pattern
//                switch_group
// Thresholds come from the article where it says so above, else from
// judgement, explained at each option; the shares of peers that count as
// "most" (more than half) are judgement too.
//
// Thread-safety: every function here is a pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_NETWORK_NETWORK_DETECTOR_H_
#define LAGGARD_ANALYSIS_NETWORK_NETWORK_DETECTOR_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/common/rank_map.h"
#include "analysis/suspects.h"
#include "model/run.h"

namespace laggard {

struct NetworkDetectorOptions {
  // A link below 90% of its peers' median rate / speed has negotiated down
  // (rates come in steps of 2x: 400 -> 200), with >= min_link_peers of them.
  double rate_ratio = 0.9;
  size_t min_link_peers = 3;
  // nccl-tests at <= 70% of comparable runs (the article: half the
  // bandwidth); a host is named when low in >= min_low_runs runs, all of its.
  double bandwidth_ratio = 0.7;
  size_t min_low_runs = 2;
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
  // Confidence each finding starts at (0..1): a judgement of how often the
  // rule is right when it fires; docs/detectors.md gives the reasons.
  struct Confidences {
    double ib_port_down = 0.85;                    // net.port_down, IB, Active on other hosts
    double eth_port_down = 0.8;                    // net.port_down, Ethernet, with peers
    double port_down_no_peers = 0.5;               // net.port_down, no peer to compare
    double link_degraded = 0.8;                    // net.link_degraded
    double bandwidth_low = 0.8;                    // net.bandwidth_low, low in every run
    double bandwidth_low_run = 0.65;               // net.bandwidth_low, one low run
    double test_errors = 0.7;                      // net.test_errors
    double socket_fallback = 0.85;                 // net.socket_fallback
    double no_gdr = 0.7;                           // net.no_gdr
    double poor_path = 0.6;                        // net.poor_path
    double nic_shared = 0.6;                       // net.nic_shared
    double shared_switch_slow_hosts = 0.6;         // net.shared_switch, slow hosts
    double shared_switch_group = 0.5;              // net.shared_switch, switch_group
    double shared_switch_counters_strong = 0.65;   // net.shared_switch, 2x z and ratio
    double shared_switch_counters = 0.6;           // net.shared_switch, counters by z
    double shared_switch_counters_apart = 0.55;    // net.shared_switch, counters apart
    double shared_switch_counters_one_host = 0.5;  // net.shared_switch, counters, one host
    double shared_switch_intervals = 0.6;          // net.shared_switch, counters over time
    double shared_switch_confirmed_bonus = 0.1;    // net.shared_switch, counters add
    double shared_switch_confirmed_max = 0.8;      // net.shared_switch, cap after that
    double pair_node = 0.8;                        // net.bandwidth_low, node pairs
    double pair_node_cleared = 0.85;               // net.bandwidth_low, pairs, >= 3 cleared
    double pair_fabric_one = 0.6;                  // net.pair_fabric, one slow pair
    double pair_fabric_split = 0.75;               // net.pair_fabric, groups split
    double pair_fabric_disjoint = 0.75;            // net.pair_fabric, pairs share no node
    double pair_fabric = 0.65;                     // net.pair_fabric, pairs share nodes
    double pair_slow = 0.4;                        // net.pair_slow, a slow pair undecided
    double pair_slow_node = 0.4;                   // net.pair_slow, a node not named
  };
  Confidences confidence;
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

// An IB port's peers: the Active ports of its link layer and CA type on
// every host (itself included when Active).
struct IbPortMetrics {
  std::optional<double> peer_rate_gbps;  // median
  size_t peer_rates = 0;
  std::optional<double> peer_width;  // median lanes
  size_t peer_widths = 0;
  size_t active_elsewhere = 0;  // Active ports of the same CA name and port number
};

// An Ethernet link's peers: the links of its interface name that are not down.
struct EthLinkMetrics {
  std::optional<double> peer_speed_mbps;  // median
  size_t peer_speeds = 0;
};

// nccl-tests runs that compare: same collective and rank count.
struct NcclTestGroup {
  std::string collective;
  size_t ranks = 0;
  std::vector<size_t> runs;  // into NetworkMetrics::nccl_tests, ascending
};

// NCCL's transports on the hosts of one job (processes with the same rank
// count; logs of unrelated jobs in one directory are not peers).
struct NcclJobTransports {
  std::map<std::string, std::set<std::string>> nets;  // host -> NET/… used
  std::map<std::string, bool> gdr;                    // host -> some GDR connection
  std::map<std::string, SourceRef> where;
  size_t ib_hosts = 0;   // hosts using NET/IB
  size_t gdr_hosts = 0;  // hosts with GDR
};

// A GPU's nearest NIC in a topology matrix: 0 PIX, 1 PXB, 2 PHB, 3 NODE, 4 SYS.
struct GpuNicPath {
  std::string host;
  std::string gpu;  // "GPU3"
  int link = 0;
  SourceRef src;
};

// The GPUs of one topology matrix whose nearest NIC at PIX/PXB is `nic`.
struct NicLoad {
  size_t topology = 0;  // into run.network.topologies
  size_t nic = 0;       // device index in that matrix
  std::vector<std::string> gpus;
  size_t nics = 0;  // NICs of the host
  size_t fair = 0;  // ceil(GPUs / NICs)
};

// One host's port counters summed over its ports, at one snapshot.
struct PortSample {
  std::optional<TimeNs> time_ns;
  double wait_ticks = 0, data_bytes = 0;
  std::optional<SourceRef> src;
};

// What MeasureNetwork() measures. `net` is the run's network data, whose
// records the rules read; the per-record vectors are parallel to its.
struct NetworkMetrics {
  const NetworkData* net = nullptr;
  std::vector<IbPortMetrics> ib_ports;
  std::vector<EthLinkMetrics> eth_links;
  std::vector<NcclTestStats> nccl_tests;        // with peer_busbw_gbps in groups of >= 2
  std::vector<NcclTestGroup> nccl_test_groups;  // by (collective, ranks)
  // Per host, its best large-size ratio to comparable runs (runs of >= 2 hosts).
  std::map<std::string, double> best_busbw_ratio;
  std::vector<NcclJobTransports> nccl_jobs;  // by rank count
  std::vector<GpuNicPath> gpu_nic_paths;
  std::vector<NicLoad> nic_loads;
  // Per host on the switch map, log(PortXmitWait / PortXmitData) over the
  // run (the last snapshot of each port), and where its counters came from.
  std::map<std::string, double> port_wait_log_ratio;
  std::map<std::string, std::optional<SourceRef>> port_wait_src;
  // Snapshots over time: hosts with >= 3 snapshots of every port; their
  // samples aligned into rows of one per host (by index when every host
  // has as many, else by time); per interval between consecutive rows,
  // each host's delta wait / delta data.
  size_t port_series_hosts = 0;
  std::map<std::string, std::vector<PortSample>> port_rows;
  std::vector<std::map<std::string, double>> port_interval_ratio;  // [row k - 1]
};

// Reads port_min_data_share and port_interval_align_s of `options`.
NetworkMetrics MeasureNetwork(const Run& run, const NetworkDetectorOptions& options);
// Findings in the order of the rules above (links by record, nccl-tests,
// transports, topology, switches), with the nccl-tests stats.
NetworkAnalysis DecideNetwork(const NetworkMetrics& metrics, const RankMap& ranks,
                              const std::vector<SuspectRank>& suspects,
                              const NetworkDetectorOptions& options);

// MeasureNetwork, then DecideNetwork.
NetworkAnalysis AnalyzeNetwork(const Run& run, const RankMap& ranks,
                               const std::vector<SuspectRank>& suspects,
                               const NetworkDetectorOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_NETWORK_NETWORK_DETECTOR_H_
