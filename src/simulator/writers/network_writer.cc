// Network state of one simulated node as the tools print it (layouts of the
// real captures in the shared corpus):
//   ibstat.txt        `ibstat`: one CA per GPU rail (mlx5_0.., ConnectX-7,
//                     NDR InfiniBand, Rate 400 or the degraded rate; a port
//                     that is down reads State: Down, Physical state:
//                     Polling) and the Ethernet port of eth0 (mlx5_<G>)
//   ethtool-eth0.txt  `ethtool eth0`: 100GbE, the path NCCL falls back to
//   perfquery.txt     a sampling loop's output: every 10 steps (and at the
//                     end of the run) a `date -u +%Y-%m-%dT%H:%M:%SZ` line
//                     on the host's clock, then `perfquery -x -C mlx5_<i>
//                     -P 1` for every InfiniBand CA (PortCountersExtended
//                     with the additional counters: 64-bit data, packets,
//                     errors, PortXmitWait), counters cumulative up to that
//                     step (see PortCounterModel below); a port that is
//                     down cannot be queried: perfquery's failure lines
//                     instead
// and switch-map.csv: host,switch for every host.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "simulator/rng.h"
#include "simulator/writers/writers.h"

namespace laggard::sim {
namespace {

// What a port had moved and waited when a snapshot was taken.
struct PortTotals {
  uint64_t xmit_bytes = 0, rcv_bytes = 0;
  uint64_t xmit_wait_ticks = 0;
  uint64_t symbol_errors = 0, link_recoveries = 0;
};

// One `date -u +%Y-%m-%dT%H:%M:%SZ; perfquery -x ...` round of a node's
// sampling loop: the step it was taken after and the counters of every CA.
struct Snapshot {
  int step = 0;  // end of this many steps
  std::vector<PortTotals> ports;
};

// Snapshots every kSnapshotSteps steps (widened so a run has at most
// kMaxSnapshots), the last at the end of the run.
constexpr int kSnapshotSteps = 10;
constexpr int kMaxSnapshots = 50;
// The ordinary wait of an interval varies: lognormal per (host, interval)
// and, smaller, per port on top.
constexpr double kIntervalHostSigma = 0.25;
constexpr double kIntervalPortSigma = 0.1;

std::vector<int> SnapshotSteps(int steps) {
  int every = std::max(kSnapshotSteps, (steps + kMaxSnapshots - 1) / kMaxSnapshots);
  std::vector<int> out;
  for (int s = every; s < steps; s += every) out.push_back(s);
  out.push_back(std::max(steps, 1));
  return out;
}

// Cumulative port counters of node `node` at each snapshot
// (docs/simulator.md, "Port counters"):
//   traffic   each all-reduce of B bytes moves 2(R-1)/R x B through every
//             node's NICs each way (what the ring's inter-node busbw carries),
//             split evenly over its G rails, each rail on its NIC
//             (NodeState::rail_nic); none with NET/Socket or a single node.
//             Steps move the same bytes, so a snapshot after k of S steps
//             holds k/S of the run's.
//   wait      PortXmitWait, ticks of 1 ns, per interval between snapshots:
//             the time the port spends sending in it (bytes / (rate x 0.92
//             / 8)) times the ordinary incast share w = 4% x e^(0.12 N) per
//             host x e^(0.05 N) per port, varying by interval (lognormal,
//             sigma 0.25 per host and 0.1 per port, mean 1), plus, on a host
//             behind a congested switch, s / (1 - s) of the time it sends
//             while the congestion is active (a link left 1 - s of its
//             bandwidth sends 1/(1 - s) as long, waiting for credits the
//             rest): the share of the interval's steps it is active x
//             s / (1 - s).
//   errors    a port that trained below its rate has symbol errors and
//             link recoveries; healthy ports none (at the first snapshot).
std::vector<Snapshot> PortCounterModel(const ClusterRun& run, int node) {
  const ClusterScenario& sc = run.scenario();
  const NodeState& ns = run.node_states()[static_cast<size_t>(node)];
  int g = sc.gpus_per_node;
  auto gs = static_cast<size_t>(g);
  Rng rng(Rng(sc.seed ^ 0x7065726671756572ull).Next() ^
          (static_cast<uint64_t>(node) * 0x9e3779b97f4a7c15ull));
  double host_share = 0.04 * std::exp(0.12 * rng.Normal());
  std::vector<double> port_share(gs);
  for (double& w : port_share) w = host_share * std::exp(0.05 * rng.Normal());
  // Its own stream, so the draws above stay what they were.
  Rng interval_rng(Rng(sc.seed ^ 0x696e74657276616cull).Next() ^
                   (static_cast<uint64_t>(node) * 0xd1b54a32d192ed03ull));
  std::vector<uint64_t> errors(gs), recoveries(gs);
  for (int i = 0; i < g; ++i) {
    const NicState& nic = ns.nics[static_cast<size_t>(i)];
    if (nic.up && nic.rate_gbps < kIbRateGbps) {
      errors[static_cast<size_t>(i)] = 40 + rng.Next() % 400;
      recoveries[static_cast<size_t>(i)] = 1 + rng.Next() % 3;
    }
  }
  // Job traffic of each port over the whole run.
  std::vector<double> run_bytes(gs, 0);
  bool traffic = sc.nodes > 1 && !ns.rail_nic.empty();
  if (traffic) {
    int k_count = sc.collectives_per_step;
    double per_step = 0;
    for (int k = 0; k < k_count; ++k) {
      per_step += static_cast<double>(
          (k == 0 && k_count > 1) ? std::min<int64_t>(1 << 20, sc.bucket_bytes) : sc.bucket_bytes);
    }
    double r = sc.ranks();
    double node_bytes = 2 * (r - 1) / r * per_step * sc.steps;
    for (int rail = 0; rail < g; ++rail) {
      run_bytes[static_cast<size_t>(ns.rail_nic[static_cast<size_t>(rail)])] += node_bytes / g;
    }
  }
  std::vector<Snapshot> out;
  std::vector<uint64_t> wait(gs, 0);
  int from = 0;
  auto bytes_at = [&](size_t i, int step) {
    // Management traffic every port carries (subnet manager, PMA queries).
    return 256ull * static_cast<uint64_t>(step) +
           static_cast<uint64_t>(run_bytes[i] * step / std::max(sc.steps, 1));
  };
  for (int to : SnapshotSteps(sc.steps)) {
    double extra = 0;  // s / (1 - s) x share of the interval's steps congested
    for (const Fault& f : sc.faults) {
      if (f.kind != FaultKind::kSharedSwitchCongestion) continue;
      if (std::find(f.target.nodes.begin(), f.target.nodes.end(), node) == f.target.nodes.end())
        continue;
      int active = 0;
      for (int s = from; s < to; ++s) active += FaultActive(f, s);
      double sev = f.severity.value_or(DefaultSeverity(f.kind));
      extra += sev / (1 - sev) * active / std::max(to - from, 1);
    }
    double host_var = std::exp(kIntervalHostSigma * interval_rng.Normal() -
                               kIntervalHostSigma * kIntervalHostSigma / 2);
    Snapshot snap;
    snap.step = to;
    snap.ports.resize(gs);
    for (size_t i = 0; i < gs; ++i) {
      double port_var = std::exp(kIntervalPortSigma * interval_rng.Normal() -
                                 kIntervalPortSigma * kIntervalPortSigma / 2);
      PortTotals& p = snap.ports[i];
      p.xmit_bytes = p.rcv_bytes = bytes_at(i, to);
      const NicState& nic = ns.nics[i];
      if (traffic && nic.up) {
        double sent = static_cast<double>(p.xmit_bytes - bytes_at(i, from));
        double send_ns = sent / (nic.rate_gbps * kIbEfficiency / 8);
        wait[i] += static_cast<uint64_t>(
            std::llround(send_ns * (port_share[i] * host_var * port_var + extra)));
      }
      p.xmit_wait_ticks = wait[i];
      p.symbol_errors = errors[i];
      p.link_recoveries = recoveries[i];
    }
    out.push_back(std::move(snap));
    from = to;
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
  return 0x946dae0300c00000ull + (static_cast<uint64_t>(node) << 8) * 16 +
         static_cast<uint64_t>(ca) * 4;
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
    ib.Raw(
        "\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n\tHardware "
        "version: 0\n");
    ib.Print("\tNode GUID: 0x{:016x}\n\tSystem image GUID: 0x{:016x}\n\tPort 1:\n", guid, guid);
    if (nic.up) {
      ib.Print(
          "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: {}\n\t\tBase lid: {}\n\t\tLMC: "
          "0\n\t\tSM lid: 1\n",
          static_cast<int>(nic.rate_gbps), 2 + node * g + ca);
    } else {
      ib.Raw(
          "\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 10\n\t\tBase lid: 0\n\t\tLMC: "
          "0\n\t\tSM lid: 0\n");
    }
    ib.Print(
        "\t\tCapability mask: 0xa751e848\n\t\tPort GUID: 0x{:016x}\n\t\tLink layer: InfiniBand\n",
        guid);
  }
  uint64_t eth_guid = Guid(node, g);
  ib.Print("CA 'mlx5_{}'\n", g);
  ib.Raw(
      "\tCA type: MT4125\n\tNumber of ports: 1\n\tFirmware version: 22.38.1002\n\tHardware "
      "version: 0\n");
  ib.Print("\tNode GUID: 0x{:016x}\n\tSystem image GUID: 0x{:016x}\n\tPort 1:\n", eth_guid,
           eth_guid);
  ib.Print(
      "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: {}\n\t\tBase lid: 0\n\t\tLMC: "
      "0\n\t\tSM lid: 0\n"
      "\t\tCapability mask: 0x00010000\n\t\tPort GUID: 0x{:016x}\n\t\tLink layer: Ethernet\n",
      static_cast<int>(kEthRateGbps), eth_guid ^ 0x0200000000000000ull);
  if (Status st = ib.Close(bytes); !st.ok()) return st;
  ++*files;

  OutFile eth(dir + "ethtool-eth0.txt");
  static constexpr const char* kModes[] = {
      "1000baseKX/Full",    "10000baseKR/Full",   "25000baseCR/Full",      "25000baseKR/Full",
      "25000baseSR/Full",   "50000baseCR2/Full",  "50000baseKR2/Full",     "100000baseKR4/Full",
      "100000baseSR4/Full", "100000baseCR4/Full", "100000baseLR4_ER4/Full"};
  auto modes = [&](const char* label) {
    eth.Print("\t{}", label);
    for (size_t i = 0; i < std::size(kModes); ++i) {
      if (i == 0) eth.Print("{}\n", kModes[i]);
      else eth.Print("\t                        {}\n", kModes[i]);
    }
  };
  eth.Raw("Settings for eth0:\n\tSupported ports: [ FIBRE ]\n");
  modes("Supported link modes:   ");
  eth.Raw(
      "\tSupported pause frame use: Symmetric\n\tSupports auto-negotiation: Yes\n"
      "\tSupported FEC modes: None\t RS\t BASER\n");
  modes("Advertised link modes:  ");
  eth.Raw(
      "\tAdvertised pause frame use: Symmetric\n\tAdvertised auto-negotiation: Yes\n"
      "\tAdvertised FEC modes: None\t RS\t BASER\n"
      "\tLink partner advertised link modes:  Not reported\n"
      "\tLink partner advertised pause frame use: No\n"
      "\tLink partner advertised auto-negotiation: Yes\n"
      "\tLink partner advertised FEC modes: Not reported\n");
  eth.Print("\tSpeed: {}Mb/s\n", static_cast<int>(kEthRateGbps * 1000));
  eth.Raw(
      "\tDuplex: Full\n\tAuto-negotiation: on\n\tPort: Direct Attach Copper\n\tPHYAD: 0\n"
      "\tTransceiver: internal\n\tSupports Wake-on: d\n\tWake-on: d\n"
      "        Current message level: 0x00000004 (4)\n"
      "                               link\n"
      "\tLink detected: yes\n");
  if (Status st = eth.Close(bytes); !st.ok()) return st;
  ++*files;

  OutFile pq(dir + "perfquery.txt");
  // The node's first rank ends the steps on this host's clock.
  int rank = node * g;
  for (const Snapshot& snap : PortCounterModel(run, node)) {
    Civil c = ToCivil(ctx.host_ns(node, run.step_start_ns(rank, snap.step)));
    pq.Print("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z\n", c.year, c.month, c.day, c.hour,
             c.minute, c.second);
    for (int ca = 0; ca < g; ++ca) {
      if (ns.nics[static_cast<size_t>(ca)].up) {
        PerfqueryBlock(pq, 2 + node * g + ca, snap.ports[static_cast<size_t>(ca)]);
      } else {
        // The port has no LID: the PMA query cannot be sent.
        pq.Print(
            "ibwarn: [{}] mad_rpc: _do_madrpc failed; dport (Lid 0)\n"
            "perfquery: iberror: failed: classportinfo query\n",
            4100 + node * 16 + ca);
      }
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
  for (size_t n = 0; n < of.size(); ++n)
    f.Print("{},leaf-{:02d}\n", HostName(static_cast<int>(n)), of[n]);
  if (Status st = f.Close(bytes); !st.ok()) return st;
  ++*files;
  return Status::Ok();
}

}  // namespace laggard::sim
