// NCCL's view of the simulated cluster:
//   nccl-tests/all_reduce_perf_<host>.txt            all_reduce_perf -b 1G -e 8G
//   nccl-tests/all_reduce_perf_<hostA>_<hostB>.txt   -f 2 -g 1, one process per GPU,
//     every pair up to 8 nodes (or with all_pair_tests), neighbours beyond
//     (nccl-tests 2.13 layout; bus bandwidth from the same link model as the
//     job, at the end of the run: ClusterRun::BusBandwidthGBps)
//   nccl-debug.log   NCCL_DEBUG=INFO lines of every rank's communicator
//     initialisation (NCCL 2.21.5): network plugin, NET/IB device list or
//     the NET/Socket fallback, and each ring channel's connections via
//     P2P/IPC, SHM (a GPU without NVLink) or NET/IB/<dev>/GDRDMA.

#include <algorithm>
#include <cmath>

#include "simulator/rng.h"
#include "simulator/writers/writers.h"

namespace laggard::sim {
namespace {

constexpr const char* kNcclVersion = "2.21.5+cuda12.4";

// The node pairs of the two-node tests.
std::vector<std::pair<int, int>> Pairs(int nodes, bool all) {
  std::vector<std::pair<int, int>> pairs;
  if (nodes < 2) return pairs;
  if (nodes <= 8 || all) {
    for (int a = 0; a < nodes; ++a) {
      for (int b = a + 1; b < nodes; ++b) pairs.emplace_back(a, b);
    }
  } else {
    for (int a = 0; a < nodes; ++a)
      pairs.emplace_back(std::min(a, (a + 1) % nodes), std::max(a, (a + 1) % nodes));
  }
  return pairs;
}

int Singles(const ClusterRun& run) {
  return run.scenario().gpus_per_node > 1 ? run.scenario().nodes : 0;
}

std::string TimeStr(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

// The NIC rail i's traffic uses: its own, or a neighbour's when its port is down.
int RailNic(const NodeState& ns, int i) {
  int g = static_cast<int>(ns.nics.size());
  if (ns.nics[static_cast<size_t>(i)].up) return i;
  if ((i ^ 1) < g && ns.nics[static_cast<size_t>(i ^ 1)].up) return i ^ 1;
  for (int d = 1; d < g; ++d) {
    if (ns.nics[static_cast<size_t>((i + d) % g)].up) return (i + d) % g;
  }
  return -1;
}

// Index of NIC `nic` in NCCL's NET/IB device list (down ports are left out).
int NetDev(const NodeState& ns, int nic) {
  int dev = 0;
  for (int j = 0; j < nic; ++j) dev += ns.nics[static_cast<size_t>(j)].up ? 1 : 0;
  return dev;
}

}  // namespace

std::string HostIp(int node) { return fmt::format("10.1.{}.{}", node / 250, 10 + node % 250); }

int NcclTestCount(const ClusterRun& run, const RunOutputOptions& opt) {
  return Singles(run) + static_cast<int>(Pairs(run.scenario().nodes, opt.all_pair_tests).size()) +
         static_cast<int>(opt.group_tests.size());
}

Status WriteNcclTest(const RunContext& ctx, int index, uint64_t* bytes, int* files) {
  const ClusterRun& run = ctx.run;
  int g = run.scenario().gpus_per_node;
  std::vector<int> nodes;
  std::string name;
  if (index < Singles(run)) {
    nodes = {index};
    name = HostName(index);
  } else if (auto pairs = Pairs(run.scenario().nodes, ctx.opt.all_pair_tests);
             static_cast<size_t>(index - Singles(run)) < pairs.size()) {
    auto [a, b] = pairs[static_cast<size_t>(index - Singles(run))];
    nodes = {a, b};
    name = HostName(a) + "_" + HostName(b);
  } else {
    nodes = ctx.opt.group_tests[static_cast<size_t>(index - Singles(run)) - pairs.size()];
    bool range = nodes.back() - nodes.front() + 1 == static_cast<int>(nodes.size());
    if (range) {
      name = HostName(nodes.front()) + ".." + HostName(nodes.back());
    } else {
      for (int n : nodes) name += (name.empty() ? "" : "+") + HostName(n);
    }
  }
  double busbw = run.BusBandwidthGBps(nodes, nodes.size() == 1);
  int n = g * static_cast<int>(nodes.size());
  double ring = 2.0 * (n - 1) / n;
  OutFile f(ctx.dir + "/nccl-tests/all_reduce_perf_" + name + ".txt");
  f.Raw(
      "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
      "iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n");
  for (int r = 0; r < n; ++r) {
    int node = nodes[static_cast<size_t>(r / g)], gpu = r % g;
    f.Print(
        "#  Rank {:>2} Group  0 Pid {:>6} on {:>10} device {:>2} [0x{:02x}] NVIDIA H100 80GB "
        "HBM3\n",
        r, 41000 + node * 61 + gpu, HostName(node), gpu, GpuBusId(gpu));
  }
  f.Print("NCCL version {}\n", kNcclVersion);
  f.Raw(
      "#\n"
      "#                                                              out-of-place                 "
      "      in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)\n");
  Rng rng(run.scenario().seed ^ (0xabcdef12ull * static_cast<uint64_t>(index + 1)));
  double sum = 0;
  int count = 0;
  for (int64_t size = 1LL << 30; size <= 8LL << 30; size *= 2) {
    f.Print("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", size, size / 4, "float", "sum", -1);
    for (int place = 0; place < 2; ++place) {
      double latency_us = 30 + 5 * std::log2(static_cast<double>(n));
      double us = (latency_us + ring * static_cast<double>(size) / (busbw * 1e3)) *
                  (1 + 0.01 * (2 * rng.Uniform() - 1));
      double algbw = static_cast<double>(size) / 1e3 / us;
      double bus = algbw * ring;
      sum += std::round(bus * 100) / 100;
      ++count;
      f.Print("  {}  {:6.2f}  {:6.2f}  {:>5}", TimeStr(us), algbw, bus, 0);
    }
    f.Raw("\n");
  }
  f.Print("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {:g}\n#\n", sum / count);
  if (Status st = f.Close(bytes); !st.ok()) return st;
  ++*files;
  return Status::Ok();
}

Status WriteNcclDebug(const RunContext& ctx, uint64_t* bytes, int* files) {
  const ClusterRun& run = ctx.run;
  const ClusterScenario& sc = run.scenario();
  int g = sc.gpus_per_node, nodes = sc.nodes, n = sc.ranks();
  int nch = std::max(2, std::min(16, 2 * g));
  uint64_t comm_id = Rng(sc.seed ^ 0xc0ffeeull).Next();
  OutFile f(ctx.dir + "/nccl-debug.log");
  auto rank_of = [&](int node, int gpu) { return node * g + gpu; };
  for (int r = 0; r < n; ++r) {
    int node = r / g, gpu = r % g;
    const NodeState& ns = run.node_states()[static_cast<size_t>(node)];
    int pid = TraceProcessId(r);
    std::string host = HostName(node);
    std::string p0 = fmt::format("{}:{}:{} [{}] NCCL INFO ", host, pid, pid, gpu);
    std::string p1 = fmt::format("{}:{}:{} [{}] NCCL INFO ", host, pid, pid + 97, gpu);
    std::string ip = HostIp(node);
    uint64_t comm = 0x55d3a0000000ull + static_cast<uint64_t>(r) * 0x1f3a0ull;
    bool socket = ns.socket_fallback;
    f.Print("{}cudaDriverVersion 12070\n", p0);
    f.Print("{}Bootstrap : Using eth0:{}<0>\n", p0, ip);
    f.Print("{}NCCL version {}\n", p0, kNcclVersion);
    f.Print("{}NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n", p0);
    if (socket) {
      f.Print("{}NET/IB : No device found.\n", p0);
      f.Print("{}NET/Socket : Using [0]eth0:{}<0>\n", p0, ip);
      f.Print("{}Using network Socket\n", p0);
    } else {
      f.Print("{}NET/IB : Using", p0);
      int dev = 0;
      for (int j = 0; j < g; ++j) {
        if (ns.nics[static_cast<size_t>(j)].up) f.Print(" [{}]mlx5_{}:1/IB", dev++, j);
      }
      f.Print(" [RO]; OOB eth0:{}<0>\n", ip);
      f.Print("{}Using network IB\n", p0);
    }
    f.Print(
        "{}ncclCommInitRank comm 0x{:x} rank {} nranks {} cudaDev {} nvmlDev {} busId {:x}000 "
        "commId 0x{:x} - "
        "Init START\n",
        p0, comm, r, n, gpu, gpu, GpuBusId(gpu), comm_id);
    f.Print("{}Setting affinity for GPU {} to {}\n", p1, gpu,
            gpu < (g + 1) / 2 ? "ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff"
                              : "ffffff00,00000000,0000ffff,ffffffff,ff000000,00000000");
    f.Print("{}comm 0x{:x} rank {} nRanks {} nNodes {} localRanks {} localRank {} MNNVL 0\n", p1,
            comm, r, n, nodes, g, gpu);
    if (r == 0) {
      for (int c = 0; c < nch; ++c) {
        f.Print("{}Channel {:02d}/{:02d} : ", p1, c, nch);
        int e = c % g;
        for (int nd = 0; nd < nodes; ++nd) {
          for (int k = 0; k < g; ++k) f.Print("{:>4}", rank_of(nd, (e + k) % g));
        }
        f.Raw("\n");
      }
    }
    // Trees: a chain inside each node, a binary tree over node heads.
    int up = gpu > 0 ? r - 1 : (node > 0 ? rank_of((node - 1) / 2, 0) : -1);
    std::vector<int> down;
    if (gpu + 1 < g) down.push_back(r + 1);
    if (gpu == 0) {
      for (int child : {2 * node + 1, 2 * node + 2}) {
        if (child < nodes) down.push_back(rank_of(child, 0));
      }
    }
    while (down.size() < 3) down.push_back(-1);
    f.Print("{}Trees [0] {}/{}/{}->{}->{} [1] {}/{}/{}->{}->{}\n", p1, down[0], down[1], down[2], r,
            up, down[0], down[1], down[2], r, up);
    f.Print("{}P2P Chunksize set to 524288\n", p1);
    for (int c = 0; c < nch; ++c) {
      int e = c % g, x = (e + g - 1) % g;
      auto intra = [&](int a, int b) {
        return ns.nvlinks_active[static_cast<size_t>(a)] > 0 &&
                       ns.nvlinks_active[static_cast<size_t>(b)] > 0
                   ? "P2P/IPC"
                   : "SHM/direct/direct";
      };
      auto net = [&](int local) {
        if (socket) return std::string("NET/Socket/0");
        int nic = RailNic(ns, local);
        return fmt::format("NET/IB/{}/GDRDMA", NetDev(ns, nic < 0 ? 0 : nic));
      };
      if (gpu == e && nodes > 1) {
        int prev_node = (node + nodes - 1) % nodes;
        f.Print("{}Channel {:02d}/0 : {}[{}] -> {}[{}] [receive] via {}\n", p1, c,
                rank_of(prev_node, x), x, r, gpu, net(gpu));
      }
      if (gpu == x && nodes > 1) {
        int next_node = (node + 1) % nodes;
        f.Print("{}Channel {:02d}/0 : {}[{}] -> {}[{}] [send] via {}\n", p1, c, r, gpu,
                rank_of(next_node, e), e, net(gpu));
      } else if (g > 1) {
        int next = (gpu + 1) % g;
        f.Print("{}Channel {:02d}/0 : {}[{}] -> {}[{}] via {}\n", p1, c, r, gpu,
                rank_of(node, next), next, intra(gpu, next));
      }
    }
    f.Print("{}Connected all rings\n", p1);
    f.Print("{}Connected all trees\n", p1);
    f.Print("{}threadThresholds 8/8/64 | {}/8/64 | 512 | 512\n", p1, 8 * n);
    f.Print(
        "{}{} coll channels, {} collnet channels, 0 nvls channels, {} p2p channels, 2 p2p channels "
        "per peer\n",
        p1, nch, nch, nch);
    f.Print(
        "{}ncclCommInitRank comm 0x{:x} rank {} nranks {} cudaDev {} nvmlDev {} busId {:x}000 "
        "commId 0x{:x} - "
        "Init COMPLETE\n",
        p0, comm, r, n, gpu, gpu, GpuBusId(gpu), comm_id);
  }
  if (Status st = f.Close(bytes); !st.ok()) return st;
  ++*files;
  return Status::Ok();
}

}  // namespace laggard::sim
