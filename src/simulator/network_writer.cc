// Network state of one simulated node as the tools print it (layouts of the
// real captures in the shared corpus):
//   ibstat.txt        `ibstat`: one CA per GPU rail (mlx5_0.., ConnectX-7,
//                     NDR InfiniBand, Rate 400 or the degraded rate; a port
//                     that is down reads State: Down, Physical state:
//                     Polling) and the Ethernet port of eth0 (mlx5_<G>)
//   ethtool-eth0.txt  `ethtool eth0`: 100GbE, the path NCCL falls back to
// and switch-map.csv: host,switch for every host.

#include "simulator/writers.h"

namespace laggard::sim {
namespace {

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
