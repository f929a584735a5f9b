// The decision half of the network detector (network_detector.h):
// DecideNetwork and AnalyzeNetwork; the metrics are in network_metrics.cc.

#include "analysis/network/network_detector.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/network/network_rules.h"
#include "analysis/network/pair_bandwidth.h"
#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

// A net.shared_switch finding naming switch `sw` and its hosts (sorted,
// the first as the entity's host) with all their ranks.
Finding SwitchFinding(const std::string& sw, const std::vector<std::string>& sorted,
                      Pattern pattern, const RankMap& ranks) {
  Finding f = MakeFinding(FindingCode::kNetSharedSwitch);
  f.entity.switch_name = sw;
  f.entity.host = sorted.front();
  f.cause = "shared_switch";
  f.pattern = pattern;
  for (const std::string& h : sorted) {
    auto r = ranks.RanksOnHost(h);
    f.ranks.insert(f.ranks.end(), r.begin(), r.end());
  }
  return f;
}

}  // namespace

std::string HostList(const std::vector<std::string>& hosts) {
  std::string s;
  for (size_t i = 0; i < hosts.size(); ++i) s += (i ? ", " : "") + hosts[i];
  return s;
}

Finding HostFinding(FindingCode code, const std::optional<std::string>& host, const RankMap& ranks,
                    const std::map<std::string, std::string>& switch_of) {
  Finding f = MakeFinding(code);
  f.entity.host = host;
  if (host) {
    f.ranks = ranks.RanksOnHost(*host);
    auto sw = switch_of.find(*host);
    if (sw != switch_of.end()) f.entity.switch_name = sw->second;
  }
  return f;
}

std::string RanksText(const std::vector<int32_t>& ranks) {
  if (ranks.empty()) return "";
  std::string s = " (ranks ";
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) s += ",...";
  return s + ")";
}

// A healthy host to compare with: the first host, in natural order, without
// findings of its own.
std::string HealthyHost(const RankMap& ranks, const std::set<std::string>& bad) {
  for (const std::string& h : ranks.hosts()) {
    if (!bad.count(h)) return h;
  }
  return "HEALTHY_HOST";
}

std::string PairTestCommand(const std::string& suspect, const std::string& healthy) {
  return fmt::format(
      "run nccl-tests between {} and healthy {}: `mpirun -np 16 -H {}:8,{}:8 -x NCCL_DEBUG=INFO "
      "./build/all_reduce_perf -b 1G -e 8G -f 2 -g 1` (or `srun -N2 -w {},{} --ntasks-per-node=8 "
      "--gpus-per-node=8 ./build/all_reduce_perf -b 1G -e 8G -f 2 -g 1`)",
      suspect, healthy, suspect, healthy, suspect, healthy);
}

namespace {

// Files `f` of a host's own fault, its message as evidence at `src`, with
// its next step; the host counts as slow for the shared-switch rule.
void AddHostFault(NetworkDecision& d, Finding f, const std::optional<SourceRef>& src,
                  std::string next_step) {
  f.evidence.push_back({f.message, src});
  f.next_steps.push_back(std::move(next_step));
  if (f.entity.host) d.bad_hosts.insert(*f.entity.host);
  d.a.findings.push_back(std::move(f));
}

void DecideIbPorts(const NetworkMetrics& m, const RankMap& ranks, const NetworkDetectorOptions& o,
                   NetworkDecision& d) {
  const NetworkData& net = *m.net;
  for (size_t i = 0; i < net.ib_ports.size(); ++i) {
    const IbPort& p = net.ib_ports[i];
    const IbPortMetrics& pm = m.ib_ports[i];
    std::string nic = fmt::format("{} port {}", p.ca, p.port);
    if (p.state && *p.state != "Active") {
      Finding f = HostFinding(FindingCode::kNetPortDown, p.host, ranks, net.switch_of);
      f.entity.nic = nic;
      f.cause = "port_down";
      size_t peers = pm.active_elsewhere;
      f.message = fmt::format("{} on {}: state {}, physical state {}{}", nic,
                              p.host.value_or("unknown host"), *p.state, p.phys_state.value_or("?"),
                              RanksText(f.ranks));
      if (peers > 0)
        f.message += fmt::format("; the same port is Active on {} other host{}", peers,
                                 peers == 1 ? "" : "s");
      f.confidence = peers > 0 ? o.confidence.ib_port_down : o.confidence.port_down_no_peers;
      if (peers == 0) f.severity = Severity::kWarning;
      AddHostFault(
          d, std::move(f), p.src,
          fmt::format(
              "check the cable and switch port of {} on {}: `ibstat {} {}`, `ibportstate` / "
              "`mlxlink -d {} -m`; reseat or replace the cable",
              nic, p.host.value_or("the host"), p.ca, p.port, p.ca));
      continue;
    }
    if (p.state != "Active") continue;
    std::string what;
    if (p.rate_gbps && pm.peer_rate_gbps && pm.peer_rates >= o.min_link_peers &&
        *p.rate_gbps < o.rate_ratio * *pm.peer_rate_gbps) {
      what = fmt::format("rate {:.0f} Gb/s vs {:.0f} Gb/s on its peers", *p.rate_gbps,
                         *pm.peer_rate_gbps);
    }
    if (p.width && pm.peer_width && pm.peer_widths >= o.min_link_peers &&
        *p.width < *pm.peer_width) {
      what +=
          fmt::format("{}width {}X vs {:.0f}X", what.empty() ? "" : ", ", *p.width, *pm.peer_width);
    }
    if (what.empty()) continue;
    Finding f = HostFinding(FindingCode::kNetLinkDegraded, p.host, ranks, net.switch_of);
    f.entity.nic = nic;
    f.cause = "nic_degraded";
    f.message = fmt::format("{} on {}: {}{}", nic, p.host.value_or("unknown host"), what,
                            RanksText(f.ranks));
    f.confidence = o.confidence.link_degraded;
    AddHostFault(d, std::move(f), p.src,
                 fmt::format("check {} on {}: `ibstat {} {}` (Rate), `mlxlink -d {} -m` for the "
                             "negotiated speed and "
                             "errors; reseat or replace the cable / transceiver",
                             nic, p.host.value_or("the host"), p.ca, p.port, p.ca));
  }
}

void DecideEthLinks(const NetworkMetrics& m, const RankMap& ranks, const NetworkDetectorOptions& o,
                    NetworkDecision& d) {
  const NetworkData& net = *m.net;
  for (size_t i = 0; i < net.eth_links.size(); ++i) {
    const EthLink& l = net.eth_links[i];
    const EthLinkMetrics& lm = m.eth_links[i];
    if (l.link_detected == false) {
      Finding f = HostFinding(FindingCode::kNetPortDown, l.host, ranks, net.switch_of);
      f.entity.nic = l.iface;
      f.cause = "port_down";
      f.message = fmt::format("{} on {}: link not detected{}", l.iface,
                              l.host.value_or("unknown host"), RanksText(f.ranks));
      f.confidence =
          lm.peer_speeds == 0 ? o.confidence.port_down_no_peers : o.confidence.eth_port_down;
      AddHostFault(d, std::move(f), l.src,
                   fmt::format("check cable and switch port of {} on {}: `ethtool {}`, "
                               "`ip link show {}`",
                               l.iface, l.host.value_or("the host"), l.iface, l.iface));
      continue;
    }
    const std::optional<double>& med = lm.peer_speed_mbps;
    if (!l.speed_mbps || !med || lm.peer_speeds < o.min_link_peers ||
        static_cast<double>(*l.speed_mbps) >= o.rate_ratio * *med) {
      continue;
    }
    Finding f = HostFinding(FindingCode::kNetLinkDegraded, l.host, ranks, net.switch_of);
    f.entity.nic = l.iface;
    f.cause = "nic_degraded";
    f.message =
        fmt::format("{} on {}: {} Mb/s vs {:.0f} Mb/s on its peers{}", l.iface,
                    l.host.value_or("unknown host"), *l.speed_mbps, *med, RanksText(f.ranks));
    f.confidence = o.confidence.link_degraded;
    AddHostFault(d, std::move(f), l.src,
                 fmt::format("check the negotiated speed of {} on {}: `ethtool {}`; "
                             "reseat or replace the cable / transceiver",
                             l.iface, l.host.value_or("the host"), l.iface));
  }
}

// Low nccl-tests runs: a host low in every comparable run it is in (>=
// min_low_runs), else each low run on its own.
void DecideBandwidth(const NetworkMetrics& m, const RankMap& ranks, const NetworkDetectorOptions& o,
                     NetworkDecision& d) {
  const NetworkData& net = *m.net;
  const std::vector<NcclTestStats>& tests = d.a.nccl_tests;
  std::set<size_t> by_pairs;  // two-host runs the node-pair rules decided
  DecidePairTests(m, ranks, o, d, by_pairs);
  // (group, host) -> (low runs, runs): a host is judged within each group.
  std::map<std::pair<std::pair<std::string, size_t>, std::string>, std::pair<size_t, size_t>>
      host_low;
  std::vector<size_t> low_runs;
  for (const NcclTestGroup& g : m.nccl_test_groups) {
    if (g.runs.size() < 2) continue;
    for (size_t i : g.runs) {
      if (by_pairs.count(i)) continue;
      bool low = tests[i].large_busbw_gbps && tests[i].peer_busbw_gbps &&
                 *tests[i].large_busbw_gbps <= o.bandwidth_ratio * *tests[i].peer_busbw_gbps;
      for (const std::string& h : tests[i].hosts) {
        auto& c = host_low[{{g.collective, g.ranks}, h}];
        c.second++;
        if (low) c.first++;
      }
      if (low) low_runs.push_back(i);
    }
  }
  std::vector<std::string> culprits;
  for (auto& [gh, c] : host_low) {
    if (c.first >= o.min_low_runs && c.first == c.second &&
        std::find(culprits.begin(), culprits.end(), gh.second) == culprits.end()) {
      culprits.push_back(gh.second);
    }
  }
  std::sort(culprits.begin(), culprits.end(), NaturalLess);
  auto run_text = [&](size_t i) {
    const NcclTestStats& s = tests[i];
    return fmt::format(
        "{} on {}: {:.1f} GB/s bus bandwidth at large sizes vs {:.1f} GB/s median of "
        "comparable runs ({:.2f}x)",
        s.collective, HostList(s.hosts), *s.large_busbw_gbps, *s.peer_busbw_gbps,
        *s.large_busbw_gbps / *s.peer_busbw_gbps);
  };
  if (!culprits.empty()) {
    for (const std::string& h : culprits) {
      Finding f = HostFinding(FindingCode::kNetBandwidthLow, h, ranks, net.switch_of);
      f.cause = "nic_degraded";
      size_t n = 0;
      std::vector<double> ratios;
      for (size_t i : low_runs) {
        const NcclTestStats& s = tests[i];
        if (std::find(s.hosts.begin(), s.hosts.end(), h) == s.hosts.end()) continue;
        ++n;
        ratios.push_back(*s.large_busbw_gbps / *s.peer_busbw_gbps);
        f.evidence.push_back({run_text(i), net.nccl_tests[i].src});
      }
      f.message = fmt::format(
          "every nccl-tests run with {} is slow: {} runs at {:.2f}x the bus "
          "bandwidth of comparable runs{}",
          h, n, Median(ratios).value_or(0), RanksText(f.ranks));
      f.slowdown = 1 - Median(ratios).value_or(1);
      f.confidence = o.confidence.bandwidth_low;
      f.next_steps.push_back(fmt::format("check {}'s NICs: `ibstat` and `ethtool` on it", h));
      f.next_steps.push_back(PairTestCommand(
          h, HealthyHost(ranks, std::set<std::string>(culprits.begin(), culprits.end()))));
      d.bad_hosts.insert(h);
      d.a.findings.push_back(std::move(f));
    }
    return;
  }
  for (size_t i : low_runs) {
    const NcclTestStats& s = tests[i];
    Finding f =
        HostFinding(FindingCode::kNetBandwidthLow,
                    s.hosts.size() == 1 ? std::optional<std::string>(s.hosts[0]) : std::nullopt,
                    ranks, net.switch_of);
    f.cause = "nic_degraded";
    f.message = run_text(i);
    f.slowdown = 1 - *s.large_busbw_gbps / *s.peer_busbw_gbps;
    f.confidence = o.confidence.bandwidth_low_run;
    f.evidence.push_back({run_text(i), net.nccl_tests[i].src});
    if (!s.hosts.empty()) {
      f.next_steps.push_back(
          fmt::format("check the NICs of {}: `ibstat` and `ethtool` on each", HostList(s.hosts)));
      f.next_steps.push_back(PairTestCommand(
          s.hosts.front(),
          HealthyHost(ranks, std::set<std::string>(s.hosts.begin(), s.hosts.end()))));
    }
    for (const std::string& h : s.hosts) d.bad_hosts.insert(h);
    d.a.findings.push_back(std::move(f));
  }
}

void DecideTestErrors(const NetworkMetrics& m, const RankMap& ranks,
                      const NetworkDetectorOptions& o, NetworkDecision& d) {
  const NetworkData& net = *m.net;
  for (size_t i = 0; i < net.nccl_tests.size(); ++i) {
    const NcclTestRun& r = net.nccl_tests[i];
    int64_t wrong = 0;
    for (const NcclTestRow& row : r.rows)
      wrong += row.oop_wrong.value_or(0) + row.ip_wrong.value_or(0);
    if (wrong == 0 && r.errors.empty()) continue;
    const NcclTestStats& s = d.a.nccl_tests[i];
    Finding f =
        HostFinding(FindingCode::kNetTestErrors,
                    s.hosts.size() == 1 ? std::optional<std::string>(s.hosts[0]) : std::nullopt,
                    ranks, net.switch_of);
    f.message = fmt::format("{} on {}: {} wrong results{}", s.collective, HostList(s.hosts), wrong,
                            r.errors.empty() ? "" : "; " + r.errors.front());
    f.confidence = o.confidence.test_errors;
    f.evidence.push_back({f.message, r.src});
    f.next_steps.push_back(
        "rerun the test with NCCL_DEBUG=INFO and check the hosts' GPUs with `dcgmi diag -r 2`");
    d.a.findings.push_back(std::move(f));
  }
}

// NCCL transports, compared among the processes of one job: NET/Socket
// where most hosts use IB; no GDR where most hosts have it.
void DecideTransports(const NetworkMetrics& m, const RankMap& ranks,
                      const NetworkDetectorOptions& o, NetworkDecision& d) {
  const NetworkData& net = *m.net;
  for (const NcclJobTransports& j : m.nccl_jobs) {
    for (auto& [h, s] : j.nets) {
      if (!s.count("Socket") || s.count("IB") || j.ib_hosts * 2 < j.nets.size()) continue;
      Finding f = HostFinding(FindingCode::kNetSocketFallback, h, ranks, net.switch_of);
      f.cause = "socket_fallback";
      f.message = fmt::format("NCCL on {} uses NET/Socket while {} of {} hosts use NET/IB{}", h,
                              j.ib_hosts, j.nets.size(), RanksText(f.ranks));
      f.confidence = o.confidence.socket_fallback;
      f.evidence.push_back({f.message, j.where.at(h)});
      f.next_steps.push_back(fmt::format(
          "on {}: check `ibstat` (ports Active?), that the IB verbs libraries are installed, and "
          "NCCL_IB_HCA / NCCL_SOCKET_IFNAME; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET",
          h));
      d.bad_hosts.insert(h);
      d.a.findings.push_back(std::move(f));
    }
    for (auto& [h, g] : j.gdr) {
      if (g || j.gdr_hosts * 2 < j.gdr.size() || j.gdr_hosts == 0) continue;
      Finding f = HostFinding(FindingCode::kNetNoGdr, h, ranks, net.switch_of);
      f.cause = "no_gdr";
      f.message =
          fmt::format("NCCL on {} connects without GPU Direct RDMA while {} of {} hosts use it{}",
                      h, j.gdr_hosts, j.gdr.size(), RanksText(f.ranks));
      f.confidence = o.confidence.no_gdr;
      f.evidence.push_back({f.message, j.where.at(h)});
      f.next_steps.push_back(fmt::format(
          "on {}: check that the nvidia-peermem (nv_peer_mem) module is loaded (`lsmod | grep "
          "peermem`) and the PCIe ACS settings",
          h));
      d.a.findings.push_back(std::move(f));
    }
  }
}

// Topology: a GPU whose nearest NIC is across the CPU interconnect while
// most have one on their PCIe switch; more GPUs behind one NIC than the
// host's NICs share out evenly (their traffic queues on it while another
// NIC idles).
void DecideTopology(const NetworkMetrics& m, const RankMap& ranks, const NetworkDetectorOptions& o,
                    NetworkDecision& d) {
  const NetworkData& net = *m.net;
  const std::vector<GpuNicPath>& near = m.gpu_nic_paths;
  size_t close = 0;
  for (const GpuNicPath& n : near) close += n.link <= 1 ? 1 : 0;
  if (close * 2 > near.size()) {
    for (const GpuNicPath& n : near) {
      if (n.link < 3) continue;
      std::optional<std::string> host =
          n.host.empty() ? std::nullopt : std::optional<std::string>(n.host);
      Finding f = HostFinding(FindingCode::kNetPoorPath, host, ranks, net.switch_of);
      f.cause = "poor_path";
      int32_t gpu = std::atoi(n.gpu.c_str() + 3);
      f.entity.gpu = gpu;
      if (host) {
        f.entity.rank = ranks.RankOf(*host, gpu);
        f.ranks.clear();
        if (f.entity.rank) f.ranks.push_back(*f.entity.rank);
      }
      f.message = fmt::format(
          "{} of {}: nearest NIC is {} away (across the CPU interconnect) while "
          "{} of {} GPUs have one on their PCIe switch",
          n.gpu, n.host.empty() ? "unknown host" : n.host, n.link == 3 ? "NODE" : "SYS", close,
          near.size());
      f.severity = Severity::kWarning;
      f.confidence = o.confidence.poor_path;
      f.evidence.push_back({f.message, n.src});
      f.next_steps.push_back(
          "check `nvidia-smi topo -m` and NCCL's NIC choice (NCCL_DEBUG=INFO, "
          "NCCL_IB_HCA); pin the rank to the GPU next to its NIC");
      d.a.findings.push_back(std::move(f));
    }
  }
  for (const NicLoad& load : m.nic_loads) {
    if (load.gpus.size() <= load.fair) continue;
    const TopologyMatrix& t = net.topologies[load.topology];
    Finding f = HostFinding(FindingCode::kNetNicShared, t.host, ranks, net.switch_of);
    f.cause = "nic_shared";
    f.entity.nic = t.devices[load.nic];
    std::string list;
    for (const std::string& g : load.gpus) list += (list.empty() ? "" : ", ") + g;
    f.message = fmt::format(
        "{} of {}: {} GPUs ({}) are nearest to it while {} NICs could serve {} "
        "each",
        t.devices[load.nic], t.host.value_or("unknown host"), load.gpus.size(), list, load.nics,
        load.fair);
    f.confidence = o.confidence.nic_shared;
    f.evidence.push_back({f.message, t.src});
    f.next_steps.push_back(
        "check `nvidia-smi topo -m` and which NIC each rank uses (NCCL_DEBUG=INFO "
        "\"NET/IB : Using\"); set NCCL_IB_HCA or fix the PCIe placement so each "
        "GPU has its own rail");
    d.a.findings.push_back(std::move(f));
  }
}

// >= 2 slow hosts (suspects, hosts with findings) without a fault of their
// own, all on one switch of several: the switch.
std::optional<Finding> SlowHostsSwitchFinding(const NetworkMetrics& m, const RankMap& ranks,
                                              const std::vector<SuspectRank>& suspects,
                                              const NetworkDetectorOptions& o,
                                              const NetworkDecision& d) {
  const NetworkData& net = *m.net;
  if (net.switch_of.empty()) return std::nullopt;
  std::set<std::string> slow = d.bad_hosts;
  for (const SuspectRank& s : suspects) {
    if (auto g = ranks.GpuOf(s.rank)) slow.insert(g->first);
  }
  // A slow host with a fault of its own (a port down, a degraded link,
  // NCCL over sockets) is explained by it; two such hosts on one switch are
  // two faults, not the switch.
  std::set<std::string> explained;
  for (const Finding& f : d.a.findings) {
    if ((f.code == FindingCode::kNetPortDown || f.code == FindingCode::kNetLinkDegraded ||
         f.code == FindingCode::kNetSocketFallback) &&
        f.entity.host) {
      explained.insert(*f.entity.host);
    }
  }
  std::map<std::string, std::vector<std::string>> by_switch;
  std::map<std::string, size_t> unexplained;
  for (const std::string& h : slow) {
    auto it = net.switch_of.find(h);
    if (it == net.switch_of.end()) continue;
    by_switch[it->second].push_back(h);
    unexplained[it->second] += explained.count(h) == 0;
  }
  std::set<std::string> switches;
  for (auto& [h, sw] : net.switch_of) switches.insert(sw);
  if (!(by_switch.size() == 1 && by_switch.begin()->second.size() >= 2 && switches.size() >= 2 &&
        unexplained[by_switch.begin()->first] >= 2)) {
    return std::nullopt;
  }
  const auto& [sw, hosts] = *by_switch.begin();
  Finding f = MakeFinding(FindingCode::kNetSharedSwitch);
  f.entity.switch_name = sw;
  f.cause = "shared_switch";
  std::vector<std::string> sorted = hosts;
  std::sort(sorted.begin(), sorted.end(), NaturalLess);
  for (const std::string& h : sorted) {
    auto r = ranks.RanksOnHost(h);
    f.ranks.insert(f.ranks.end(), r.begin(), r.end());
  }
  f.message = fmt::format(
      "the slow hosts {} all hang off switch {}, hosts on the other {} "
      "switch{} are fine: likely traffic from outside the job",
      HostList(sorted), sw, switches.size() - 1, switches.size() == 2 ? "" : "es");
  f.confidence = o.confidence.shared_switch_slow_hosts;
  auto src = net.switch_src.find(sorted.front());
  f.evidence.push_back({f.message, src != net.switch_src.end()
                                       ? std::optional<SourceRef>(src->second)
                                       : std::nullopt});
  f.next_steps.push_back(fmt::format(
      "check switch {}'s other tenants and its port counters (congestion, pause frames); ask "
      "the network team whether another job shares it",
      sw));
  return f;
}

// Slowdowns that come and go together on the hosts of one switch point
// outside the job (the article's shared-switch pitfall). Per host,
// its best nccl-tests run against comparable runs; one switch whose every
// host (>= 2) is at or below switch_group_ratio while every host on the
// other switches (>= 2) is at or above switch_peer_ratio.
std::optional<Finding> SwitchGroupFinding(const NetworkMetrics& m, const RankMap& ranks,
                                          const NetworkDetectorOptions& o) {
  const NetworkData& net = *m.net;
  if (net.switch_of.empty()) return std::nullopt;
  const std::map<std::string, double>& best = m.best_busbw_ratio;
  std::map<std::string, std::vector<std::string>> by_switch;
  for (auto& [h, r] : best) {
    auto sw = net.switch_of.find(h);
    if (sw == net.switch_of.end()) return std::nullopt;  // cannot say the others are fine
    by_switch[sw->second].push_back(h);
  }
  for (auto& [sw, hosts] : by_switch) {
    if (hosts.size() < 2) continue;
    size_t on_switch = 0;
    for (auto& [h, s2] : net.switch_of) on_switch += s2 == sw;
    if (hosts.size() < on_switch) continue;  // some of its hosts were not measured
    bool all_slow = std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) {
      return best.at(h) <= o.switch_group_ratio;
    });
    size_t others = 0;
    bool others_fine = true;
    for (auto& [h, r] : best) {
      if (net.switch_of.at(h) == sw) continue;
      ++others;
      others_fine = others_fine && r >= o.switch_peer_ratio;
    }
    if (!all_slow || !others_fine || others < 2) continue;
    std::vector<std::string> sorted = hosts;
    std::sort(sorted.begin(), sorted.end(), NaturalLess);
    std::vector<double> ratios;
    for (const std::string& h : sorted) ratios.push_back(best.at(h));
    double ratio = Median(ratios).value_or(1);
    Finding f = SwitchFinding(sw, sorted, Pattern::kSwitchGroup, ranks);
    f.slowdown = 1 - ratio;
    f.confidence = o.confidence.shared_switch_group;
    f.message = fmt::format(
        "every host on switch {} ({}) is slow in nccl-tests, its best run at {:.2f}x the bus "
        "bandwidth of comparable runs, while the {} hosts on other switches reach >= {:.2f}x: "
        "the hosts of one switch slow down together, likely traffic from outside the job",
        sw, HostList(sorted), ratio, others, o.switch_peer_ratio);
    auto src = net.switch_src.find(sorted.front());
    f.evidence.push_back({f.message, src != net.switch_src.end()
                                         ? std::optional<SourceRef>(src->second)
                                         : std::nullopt});
    f.next_steps.push_back(fmt::format(
        "check switch {}'s other tenants and its port counters (congestion, pause frames, "
        "PortXmitWait with `perfquery` on the hosts' ports); ask the network team whether another "
        "job shares it; rerun nccl-tests between {} and a host on another switch while the job is "
        "slow",
        sw, sorted.front()));
    return f;
  }
  return std::nullopt;
}

// One switch's hosts against the others' (see PortCounterSwitchFinding).
struct SwitchWait {
  bool by_z = false, apart = false;
  std::optional<double> min_z;
  double times = 0, least_times = 0, score = 0;
  size_t others = 0;
};

SwitchWait JudgeSwitchWait(const NetworkMetrics& m, const std::string& sw,
                           const NetworkDetectorOptions& o) {
  const NetworkData& net = *m.net;
  SwitchWait w;
  std::vector<double> others, mine;
  for (auto& [h, r] : m.port_wait_log_ratio)
    (net.switch_of.at(h) == sw ? mine : others).push_back(r);
  w.others = others.size();
  if (others.empty()) return w;
  double med = Median(others).value_or(0);
  double least = *std::min_element(mine.begin(), mine.end());
  w.times = std::exp(Median(mine).value_or(med) - med);
  w.least_times = std::exp(least - med);
  // Robust z against the others' spread, when there are enough of them.
  if (others.size() >= 3) {
    double scale = std::max(1.4826 * Mad(others).value_or(0), o.port_wait_mad_floor);
    w.min_z = (least - med) / scale;
  }
  w.by_z = w.min_z && *w.min_z >= o.port_wait_z && w.times >= o.port_wait_ratio;
  // Or apart: above every other host, by multiples.
  // (One host against one or two others is no pattern: its own link's far
  // end could be it.)
  w.apart = (mine.size() >= 2 || others.size() >= 3) &&
            least > *std::max_element(others.begin(), others.end()) &&
            std::exp(least - med) >= o.port_wait_apart_min && w.times >= o.port_wait_apart_ratio;
  // Rank switches by z; one apart without a z ranks by its margin in log.
  w.score = w.min_z.value_or(0) + (least - med);
  return w;
}

// Per-switch congestion from port counters (issue: shared_switch_congestion
// leaves no trace in step times or nccl-tests taken while the switch is
// quiet). One switch whose every host (all of its mapped hosts measured;
// one host alone on its switch at lower confidence, and only at >=
// port_wait_apart_ratio x the others' median) has a log ratio >=
// port_wait_z robust z above the hosts on the other switches (>= 3; median
// and MAD of their log ratios, MAD floored at port_wait_mad_floor), with
// the switch's median >= port_wait_ratio x the others' median; or, with
// fewer than 3 hosts elsewhere or a spread too wide for z, every host of the
// switch above every host elsewhere by multiples (port_wait_apart_*), at
// lower confidence.
std::optional<Finding> PortCounterSwitchFinding(const NetworkMetrics& m, const RankMap& ranks,
                                                const NetworkDetectorOptions& o) {
  const NetworkData& net = *m.net;
  if (net.switch_of.empty() || net.port_counters.empty()) return std::nullopt;
  std::map<std::string, std::vector<std::string>> by_switch;
  for (auto& [h, r] : m.port_wait_log_ratio) by_switch[net.switch_of.at(h)].push_back(h);
  if (by_switch.size() < 2) return std::nullopt;
  std::optional<Finding> best;
  double best_z = 0;
  for (auto& [sw, members] : by_switch) {
    size_t on_switch = 0;
    for (auto& [h, s2] : net.switch_of) on_switch += s2 == sw;
    // A host alone on its switch (per the map) counts too: its waits are
    // the switch port in front of it withholding credits on every rail, so
    // the switch or what lies behind it, not one NIC or cable; with no
    // neighbour to confirm it, at lower confidence.
    if (members.size() < on_switch) continue;
    SwitchWait w = JudgeSwitchWait(m, sw, o);
    if (w.others == 0 || (!w.by_z && !w.apart)) continue;
    // One host is one sample: hosts differ by tens of percent in cabling,
    // firmware and their own HCA, and a healthy host alone on its switch
    // was seen at 1.6x with a z of 9.7 against three tight neighbours. It
    // names its switch only by multiples (port_wait_apart_ratio).
    if (members.size() == 1 && w.times < o.port_wait_apart_ratio) continue;
    if (best && w.score <= best_z) continue;
    std::vector<std::string> sorted = members;
    std::sort(sorted.begin(), sorted.end(), NaturalLess);
    Finding f = SwitchFinding(sw, sorted, Pattern::kPortCounters, ranks);
    if (w.by_z) {
      f.confidence = *w.min_z >= 2 * o.port_wait_z && w.times >= 2 * o.port_wait_ratio
                         ? o.confidence.shared_switch_counters_strong
                         : o.confidence.shared_switch_counters;
    } else {
      f.confidence = o.confidence.shared_switch_counters_apart;
    }
    if (sorted.size() == 1) f.confidence = o.confidence.shared_switch_counters_one_host;
    std::string spread =
        w.min_z
            ? fmt::format("its least-waiting host {:.1f} robust deviations above theirs", *w.min_z)
            : std::string("too few hosts elsewhere for a spread");
    if (!w.by_z) {
      spread += fmt::format(
          "; even its least-waiting host waits {:.1f}x their median and more "
          "than any of them",
          w.least_times);
    }
    f.message = fmt::format(
        "{} on switch {} ({}) waits {:.1f}x as long per byte sent as the {} host{} on the "
        "other switches (PortXmitWait / PortXmitData over the run, {}): credit back-pressure on "
        "that switch's links only, likely traffic from outside the job",
        sorted.size() == 1 ? "the only host of the job" : "every host", sw, HostList(sorted),
        w.times, w.others, w.others == 1 ? "" : "s", spread);
    f.evidence.push_back({f.message, m.port_wait_src.at(sorted.front())});
    f.next_steps.push_back(fmt::format(
        "ask the network team what else runs through switch {} (`perfquery` PortXmitWait on its "
        "uplink ports, the switch's congestion counters); move the job off it or rerun nccl-tests "
        "between {} and a host on another switch while the job is slow",
        sw, sorted.front()));
    best = std::move(f);
    best_z = w.score;
  }
  return best;
}

// The intervals in which one switch is congested: every one of its hosts
// (>= port_interval_min_hosts, all of its mapped hosts measured) waits per
// byte more than every host elsewhere (>= port_interval_min_hosts of them,
// or one against >= port_interval_min_hosts_vs_one on the switch) and >=
// port_interval_ratio x their median. Returns the intervals counted.
size_t CongestedIntervals(const NetworkMetrics& m,
                          const std::map<std::string, std::vector<std::string>>& by_switch,
                          const NetworkDetectorOptions& o,
                          std::map<std::string, std::vector<size_t>>& congested) {
  const NetworkData& net = *m.net;
  size_t intervals = 0;
  for (size_t k = 1; k <= m.port_interval_ratio.size(); ++k) {
    const std::map<std::string, double>& ratio = m.port_interval_ratio[k - 1];
    if (ratio.size() < o.port_interval_min_hosts + 1) continue;
    ++intervals;
    for (auto& [sw, members] : by_switch) {
      size_t on_switch = 0;
      for (auto& [h, s2] : net.switch_of) on_switch += s2 == sw;
      std::vector<double> mine, others;
      for (auto& [h, r] : ratio) (net.switch_of.at(h) == sw ? mine : others).push_back(r);
      // One host elsewhere is enough against port_interval_min_hosts_vs_one
      // hosts on the switch (each must be above it).
      size_t need_others =
          mine.size() >= o.port_interval_min_hosts_vs_one ? 1 : o.port_interval_min_hosts;
      if (mine.size() < std::max(on_switch, o.port_interval_min_hosts) ||
          others.size() < need_others) {
        continue;
      }
      double least = *std::min_element(mine.begin(), mine.end());
      double med = Median(others).value_or(0);
      if (least > *std::max_element(others.begin(), others.end()) &&
          least >= o.port_interval_ratio * med) {
        congested[sw].push_back(k);
      }
    }
  }
  return intervals;
}

// Congestion that comes and goes, from snapshots over time (issue: a switch
// congested a quarter of the run rises only 1.3-1.45x in the run's totals,
// inside host-to-host noise). The switch congested in >=
// port_interval_min_count intervals and >= port_interval_dominance x as
// many as any other switch is named.
std::optional<Finding> PortCounterIntervalFinding(const NetworkMetrics& m, const RankMap& ranks,
                                                  const NetworkDetectorOptions& o) {
  const NetworkData& net = *m.net;
  if (net.switch_of.empty() || net.port_counters.empty()) return std::nullopt;
  if (m.port_series_hosts < o.port_interval_min_hosts + 1 || m.port_rows.empty())
    return std::nullopt;
  const std::map<std::string, std::vector<PortSample>>& rows = m.port_rows;
  std::map<std::string, std::vector<std::string>> by_switch;
  for (auto& [h, v] : rows) by_switch[net.switch_of.at(h)].push_back(h);
  if (by_switch.size() < 2) return std::nullopt;
  std::map<std::string, std::vector<size_t>>
      congested;  // switch -> intervals (index of the end snapshot)
  size_t intervals = CongestedIntervals(m, by_switch, o, congested);
  std::string top;
  size_t top_count = 0, second = 0;
  for (auto& [sw, ks] : congested) {
    if (ks.size() > top_count) {
      second = top_count;
      top = sw;
      top_count = ks.size();
    } else {
      second = std::max(second, ks.size());
    }
  }
  if (top_count < o.port_interval_min_count || top_count < o.port_interval_dominance * second) {
    return std::nullopt;
  }
  std::vector<std::string> sorted = by_switch[top];
  std::sort(sorted.begin(), sorted.end(), NaturalLess);
  const std::vector<PortSample>& first_host = rows.at(sorted.front());
  auto when = [&](size_t k) {
    const PortSample& end = first_host[k];
    const PortSample& begin = first_host[k - 1];
    if (begin.time_ns && end.time_ns) {
      return fmt::format("{} to {}", FormatTimestamp(*begin.time_ns),
                         FormatTimestamp(*end.time_ns));
    }
    return fmt::format("snapshots {} to {}", k, k + 1);
  };
  const std::vector<size_t>& ks = congested[top];
  Finding f = SwitchFinding(top, sorted, Pattern::kPortCounters, ranks);
  f.confidence = o.confidence.shared_switch_intervals;
  f.message = fmt::format(
      "every host on switch {} ({}) waited >= {:.0f}x as long per byte sent as the median host on "
      "the other switches, and longer than any of them, in {} of {} intervals between perfquery "
      "snapshots (PortXmitWait / PortXmitData deltas; first {}, last {}); other switches at most "
      "{}: credit back-pressure on that switch's links that comes and goes, likely traffic from "
      "outside the job",
      top, HostList(sorted), o.port_interval_ratio, ks.size(), intervals, when(ks.front()),
      when(ks.back()), second);
  f.evidence.push_back({f.message, first_host[ks.front()].src});
  f.next_steps.push_back(fmt::format(
      "ask the network team what else runs through switch {} at those times (`perfquery` "
      "PortXmitWait on its uplink ports, the switch's congestion counters); move the job off it or "
      "rerun nccl-tests between {} and a host on another switch while it is congested",
      top, sorted.front()));
  return f;
}

// The switch rules, in order: slow hosts on one switch, else a switch
// group in nccl-tests; then the port counters, which confirm a switch
// already named (one finding, with both pieces of evidence) or add one.
void DecideSwitches(const NetworkMetrics& m, const RankMap& ranks,
                    const std::vector<SuspectRank>& suspects, const NetworkDetectorOptions& o,
                    NetworkDecision& d) {
  if (std::optional<Finding> f = SlowHostsSwitchFinding(m, ranks, suspects, o, d)) {
    d.a.findings.push_back(std::move(*f));
  } else if (std::optional<Finding> g = SwitchGroupFinding(m, ranks, o)) {
    d.a.findings.push_back(std::move(*g));
  }
  std::optional<Finding> counters = PortCounterSwitchFinding(m, ranks, o);
  if (!counters) counters = PortCounterIntervalFinding(m, ranks, o);
  if (auto& f = counters) {
    auto same = std::find_if(d.a.findings.begin(), d.a.findings.end(), [&](const Finding& g) {
      return g.code == FindingCode::kNetSharedSwitch &&
             g.entity.switch_name == f->entity.switch_name;
    });
    if (same != d.a.findings.end()) {
      same->evidence.push_back(f->evidence.front());
      same->confidence = std::min(
          o.confidence.shared_switch_confirmed_max,
          std::max(same->confidence, f->confidence) + o.confidence.shared_switch_confirmed_bonus);
      same->pattern = Pattern::kPortCounters;
    } else {
      d.a.findings.push_back(std::move(*f));
    }
  }
}

}  // namespace

NetworkAnalysis DecideNetwork(const NetworkMetrics& m, const RankMap& ranks,
                              const std::vector<SuspectRank>& suspects,
                              const NetworkDetectorOptions& o) {
  NetworkDecision d;
  d.a.nccl_tests = m.nccl_tests;
  if (m.net == nullptr) return d.a;
  DecideIbPorts(m, ranks, o, d);
  DecideEthLinks(m, ranks, o, d);
  DecideBandwidth(m, ranks, o, d);
  DecideTestErrors(m, ranks, o, d);
  DecideTransports(m, ranks, o, d);
  DecideTopology(m, ranks, o, d);
  DecideSwitches(m, ranks, suspects, o, d);
  return std::move(d.a);
}

NetworkAnalysis AnalyzeNetwork(const Run& run, const RankMap& ranks,
                               const std::vector<SuspectRank>& suspects,
                               const NetworkDetectorOptions& o) {
  return DecideNetwork(MeasureNetwork(run, o), ranks, suspects, o);
}

}  // namespace laggard
