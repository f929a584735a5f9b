// Network state of one simulated node as the tools print it (layouts of the
// real captures in the shared corpus):
//   ibstat.txt        `ibstat`: one CA per GPU rail (mlx5_0.., ConnectX-7,
//                     NDR InfiniBand, Rate 400 or the degraded rate; a port
//                     that is down reads State: Down, Physical state:
//                     Polling) and the Ethernet port of eth0 (mlx5_<G>)
//   ethtool-eth0.txt  `ethtool eth0`: 100GbE, the path NCCL falls back to
//   perfquery.txt     `perfquery -x -C mlx5_<i> -P 1` for every InfiniBand
//                     CA (PortCountersExtended with the additional counters:
//                     64-bit data, packets, errors, PortXmitWait), counters
//                     cumulative over the run (see PortCounterModel below);
//                     a port that is down cannot be queried: perfquery's
//                     failure lines instead
// and switch-map.csv: host,switch for every host.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "simulator/rng.h"
#include "simulator/writers.h"

namespace laggard::sim {
namespace {

// What a port moved and waited over the run.
struct PortTotals {
  uint64_t xmit_bytes = 0, rcv_bytes = 0;
  uint64_t xmit_wait_ticks = 0;
  uint64_t symbol_errors = 0, link_recoveries = 0;
};

// Cumulative port counters of node `node` (docs/simulator.md, "Port
// counters"):
//   traffic   each all-reduce of B bytes moves 2(R-1)/R x B through every
//             node's NICs each way (what the ring's inter-node busbw carries),
//             split evenly over its G rails, each rail on its NIC
//             (NodeState::rail_nic); none with NET/Socket or a single node.
//   wait      PortXmitWait, ticks of 1 ns: the time the port spends sending
//             (bytes / (rate x 0.92 / 8)) times the ordinary incast share
//             w = 4% x e^(0.12 N) per host x e^(0.05 N) per port, plus, on a
//             host behind a congested switch, s / (1 - s) of the time it
//             sends while the congestion is active (a link left 1 - s of its
//             bandwidth sends 1/(1 - s) as long, waiting for credits the
//             rest): the share of steps it is active x s / (1 - s).
//   errors    a port that trained below its rate has symbol errors and
//             link recoveries; healthy ports none.
std::vector<PortTotals> PortCounterModel(const ClusterRun& run, int node) {
  const ClusterScenario& sc = run.scenario();
  const NodeState& ns = run.node_states()[static_cast<size_t>(node)];
  int g = sc.gpus_per_node;
  std::vector<PortTotals> out(static_cast<size_t>(g));
  Rng rng(Rng(sc.seed ^ 0x7065726671756572ull).Next() ^ (static_cast<uint64_t>(node) * 0x9e3779b97f4a7c15ull));
  double host_share = 0.04 * std::exp(0.12 * rng.Normal());
  std::vector<double> port_share(static_cast<size_t>(g));
  for (double& w : port_share) w = host_share * std::exp(0.05 * rng.Normal());
  // Management traffic every port carries (subnet manager, PMA queries).
  for (PortTotals& p : out) p.xmit_bytes = p.rcv_bytes = 256ull * static_cast<uint64_t>(sc.steps);
  double extra = 0;  // s / (1 - s) x share of steps congested
  for (const Fault& f : sc.faults) {
    if (f.kind != FaultKind::kSharedSwitchCongestion) continue;
    if (std::find(f.target.nodes.begin(), f.target.nodes.end(), node) == f.target.nodes.end()) continue;
    int active = 0;
    for (int s = 0; s < sc.steps; ++s) active += FaultActive(f, s);
    double sev = f.severity.value_or(DefaultSeverity(f.kind));
    extra += sev / (1 - sev) * active / sc.steps;
  }
  if (sc.nodes > 1 && !ns.rail_nic.empty()) {
    int k_count = sc.collectives_per_step;
    double per_step = 0;
    for (int k = 0; k < k_count; ++k) {
      per_step += static_cast<double>((k == 0 && k_count > 1) ? std::min<int64_t>(1 << 20, sc.bucket_bytes)
                                                              : sc.bucket_bytes);
    }
    double r = sc.ranks();
    double node_bytes = 2 * (r - 1) / r * per_step * sc.steps;
    for (int rail = 0; rail < g; ++rail) {
      int nic = ns.rail_nic[static_cast<size_t>(rail)];
      auto b = static_cast<uint64_t>(node_bytes / g);
      out[static_cast<size_t>(nic)].xmit_bytes += b;
      out[static_cast<size_t>(nic)].rcv_bytes += b;
    }
    for (int i = 0; i < g; ++i) {
      const NicState& nic = ns.nics[static_cast<size_t>(i)];
      if (!nic.up) continue;
      double send_ns = static_cast<double>(out[static_cast<size_t>(i)].xmit_bytes) / (nic.rate_gbps * kIbEfficiency / 8);
      out[static_cast<size_t>(i)].xmit_wait_ticks =
          static_cast<uint64_t>(std::llround(send_ns * (port_share[static_cast<size_t>(i)] + extra)));
    }
  }
  for (int i = 0; i < g; ++i) {
    const NicState& nic = ns.nics[static_cast<size_t>(i)];
    if (nic.up && nic.rate_gbps < kIbRateGbps) {
      out[static_cast<size_t>(i)].symbol_errors = 40 + rng.Next() % 400;
      out[static_cast<size_t>(i)].link_recoveries = 1 + rng.Next() % 3;
    }
  }
  return out;
}

void PerfqueryBlock(OutFile& f, int lid, const PortTotals& p) {
  auto field = [&](std::string_view name, auto value) {
    std::string key = fmt::format("{}:", name);
    f.Print("{}{}{}\n", key, std::string(key.size() < 33 ? 33 - key.size() : 0, '.'), value);
  };
  f.Print("# Port extended counters: Lid {} port 1 (CapMask: 0x5A00 CapMask2: 0x0000002)\n", lid);
  uint64_t xp = p.xmit_bytes / 4096 + 1, rp = p.rcv_bytes / 4096 + 1;
  field("PortSelect", 1);
  field("CounterSelect", "0x0000");
  field("PortXmitData", p.xmit_bytes / 4);
  field("PortRcvData", p.rcv_bytes / 4);
  field("PortXmitPkts", xp);
  field("PortRcvPkts", rp);
  field("PortUnicastXmitPkts", xp);
  field("PortUnicastRcvPkts", rp);
  field("PortMulticastXmitPkts", 0);
  field("PortMulticastRcvPkts", 0);
  field("CounterSelect2", "0x00");
  field("SymbolErrorCounter", p.symbol_errors);
  field("LinkErrorRecoveryCounter", p.link_recoveries);
  field("LinkDownedCounter", 0);
  field("PortRcvErrors", 0);
  field("PortRcvRemotePhysicalErrors", 0);
  field("PortRcvSwitchRelayErrors", 0);
  field("PortXmitDiscards", 0);
  field("PortXmitConstraintErrors", 0);
  field("PortRcvConstraintErrors", 0);
  field("LocalLinkIntegrityErrors", 0);
  field("ExcessiveBufferOverrunErrors", 0);
  field("VL15Dropped", 0);
  field("PortXmitWait", p.xmit_wait_ticks);
  field("QP1Dropped", 0);
}

uint64_t Guid(int node, int ca) {
  return 0x946dae0300c00000ull + (static_cast<uint64_t>(node) << 8) * 16 + static_cast<uint64_t>(ca) * 4;
}

}  // namespace

Status WriteNetworkFiles(const RunContext& ctx, int node, uint64_t* bytes, int* files) {
  const ClusterRun& run = ctx.run;
  int g = run.scenario().gpus_per_node;
  const NodeState& ns = run.node_states()[static_cast<size_t>(node)];
  std::string dir = ctx.dir + "/" + HostName(node) + "/";
  OutFile ib(dir + "ibstat.txt");
  for (int ca = 0; ca < g; ++ca) {
    const NicState& nic = ns.nics[static_cast<size_t>(ca)];
    uint64_t guid = Guid(node, ca);
    ib.Print("CA 'mlx5_{}'\n", ca);
    ib.Raw("\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n\tHardware version: 0\n");
    ib.Print("\tNode GUID: 0x{:016x}\n\tSystem image GUID: 0x{:016x}\n\tPort 1:\n", guid, guid);
    if (nic.up) {
      ib.Print("\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: {}\n\t\tBase lid: {}\n\t\tLMC: 0\n\t\tSM lid: 1\n",
               static_cast<int>(nic.rate_gbps), 2 + node * g + ca);
    } else {
      ib.Raw("\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 10\n\t\tBase lid: 0\n\t\tLMC: 0\n\t\tSM lid: 0\n");
    }
    ib.Print("\t\tCapability mask: 0xa751e848\n\t\tPort GUID: 0x{:016x}\n\t\tLink layer: InfiniBand\n", guid);
  }
  uint64_t eth_guid = Guid(node, g);
  ib.Print("CA 'mlx5_{}'\n", g);
  ib.Raw("\tCA type: MT4125\n\tNumber of ports: 1\n\tFirmware version: 22.38.1002\n\tHardware version: 0\n");
  ib.Print("\tNode GUID: 0x{:016x}\n\tSystem image GUID: 0x{:016x}\n\tPort 1:\n", eth_guid, eth_guid);
  ib.Print("\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: {}\n\t\tBase lid: 0\n\t\tLMC: 0\n\t\tSM lid: 0\n"
           "\t\tCapability mask: 0x00010000\n\t\tPort GUID: 0x{:016x}\n\t\tLink layer: Ethernet\n",
           static_cast<int>(kEthRateGbps), eth_guid ^ 0x0200000000000000ull);
  if (Status st = ib.Close(bytes); !st.ok()) return st;
  ++*files;

  OutFile eth(dir + "ethtool-eth0.txt");
  static constexpr const char* kModes[] = {"1000baseKX/Full",   "10000baseKR/Full",   "25000baseCR/Full",
                                           "25000baseKR/Full",  "25000baseSR/Full",   "50000baseCR2/Full",
                                           "50000baseKR2/Full", "100000baseKR4/Full", "100000baseSR4/Full",
                                           "100000baseCR4/Full", "100000baseLR4_ER4/Full"};
  auto modes = [&](const char* label) {
    eth.Print("\t{}", label);
    for (size_t i = 0; i < std::size(kModes); ++i) {
      if (i == 0) eth.Print("{}\n", kModes[i]);
      else eth.Print("\t                        {}\n", kModes[i]);
    }
  };
  eth.Raw("Settings for eth0:\n\tSupported ports: [ FIBRE ]\n");
  modes("Supported link modes:   ");
  eth.Raw("\tSupported pause frame use: Symmetric\n\tSupports auto-negotiation: Yes\n"
          "\tSupported FEC modes: None\t RS\t BASER\n");
  modes("Advertised link modes:  ");
  eth.Raw("\tAdvertised pause frame use: Symmetric\n\tAdvertised auto-negotiation: Yes\n"
          "\tAdvertised FEC modes: None\t RS\t BASER\n"
          "\tLink partner advertised link modes:  Not reported\n"
          "\tLink partner advertised pause frame use: No\n"
          "\tLink partner advertised auto-negotiation: Yes\n"
          "\tLink partner advertised FEC modes: Not reported\n");
  eth.Print("\tSpeed: {}Mb/s\n", static_cast<int>(kEthRateGbps * 1000));
  eth.Raw("\tDuplex: Full\n\tAuto-negotiation: on\n\tPort: Direct Attach Copper\n\tPHYAD: 0\n"
          "\tTransceiver: internal\n\tSupports Wake-on: d\n\tWake-on: d\n"
          "        Current message level: 0x00000004 (4)\n"
          "                               link\n"
          "\tLink detected: yes\n");
  if (Status st = eth.Close(bytes); !st.ok()) return st;
  ++*files;

  OutFile pq(dir + "perfquery.txt");
  std::vector<PortTotals> totals = PortCounterModel(run, node);
  for (int ca = 0; ca < g; ++ca) {
    if (ns.nics[static_cast<size_t>(ca)].up) {
      PerfqueryBlock(pq, 2 + node * g + ca, totals[static_cast<size_t>(ca)]);
    } else {
      // The port has no LID: the PMA query cannot be sent.
      pq.Print("ibwarn: [{}] mad_rpc: _do_madrpc failed; dport (Lid 0)\n"
               "perfquery: iberror: failed: classportinfo query\n",
               4100 + node * 16 + ca);
    }
  }
  if (Status st = pq.Close(bytes); !st.ok()) return st;
  ++*files;
  return Status::Ok();
}

Status WriteSwitchMap(const RunContext& ctx, uint64_t* bytes, int* files) {
  OutFile f(ctx.dir + "/switch-map.csv");
  f.Raw("host,switch\n");
  const auto& switches = ctx.run.switches();
  std::vector<int> of(static_cast<size_t>(ctx.run.scenario().nodes), 0);
  for (size_t s = 0; s < switches.size(); ++s) {
    for (int n : switches[s]) of[static_cast<size_t>(n)] = static_cast<int>(s);
  }
  for (size_t n = 0; n < of.size(); ++n) f.Print("{},leaf-{:02d}\n", HostName(static_cast<int>(n)), of[n]);
  if (Status st = f.Close(bytes); !st.ok()) return st;
  ++*files;
  return Status::Ok();
}

}  // namespace laggard::sim
