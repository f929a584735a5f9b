// The cluster simulator's network model (simulator.h): the links each
// fault leaves a node, the all-reduce bus bandwidth inside the node and
// through its NICs, and the job's bandwidth, the slowest node's.

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "simulator/cluster/cluster.h"
#include "simulator/cluster/sim_internal.h"
#include "simulator/cluster/simulator.h"

namespace laggard::sim {

using internal::DegradedIbRate;
using internal::DowngradedWidth;

int Simulator::PcieWidth(int node, int gpu, int step, const Mask& on) const {
  int width = 16;
  for (const ActiveFault& a : faults_) {
    if (a.f->kind != FaultKind::kPcieDowngrade || !Active(a, step, on)) continue;
    for (auto [n, i] : a.ent.gpus) {
      if (n == node && i == gpu) width = std::min(width, DowngradedWidth(a.severity));
    }
  }
  return width;
}

double Simulator::CongestionFactor(int node, int step, const Mask& on) const {
  double f = 1;
  for (const ActiveFault& a : faults_) {
    if (a.f->kind != FaultKind::kSharedSwitchCongestion || !Active(a, step, on)) continue;
    if (std::find(a.ent.nodes.begin(), a.ent.nodes.end(), node) != a.ent.nodes.end())
      f *= 1 - a.severity;
  }
  return f;
}

Simulator::NodeLinks Simulator::LinksOf(int n, int step, const Mask& on, bool faulty) const {
  NodeLinks l;
  l.rate_gbps.assign(static_cast<size_t>(g_), kIbRateGbps);
  l.up.assign(static_cast<size_t>(g_), 1);
  l.nvlinks.assign(static_cast<size_t>(g_), kNvlinksPerGpu);
  l.pcie_width.assign(static_cast<size_t>(g_), 16);
  if (!faulty) return l;
  for (const ActiveFault& a : faults_) {
    if (!Active(a, step, on)) continue;
    switch (a.f->kind) {
      case FaultKind::kNicDegraded:
        for (auto [nn, i] : a.ent.nics) {
          if (nn == n) {
            double& rate = l.rate_gbps[static_cast<size_t>(i)];
            rate = std::min(rate, DegradedIbRate(a.severity));
          }
        }
        break;
      case FaultKind::kIbPortDown:
        for (auto [nn, i] : a.ent.nics) {
          if (nn == n) l.up[static_cast<size_t>(i)] = 0;
        }
        break;
      case FaultKind::kNvlinkDown:
        for (auto [nn, i] : a.ent.gpus) {
          if (nn == n) {
            int down = std::clamp(static_cast<int>(std::lround(a.severity * kNvlinksPerGpu)), 1,
                                  kNvlinksPerGpu);
            int& links = l.nvlinks[static_cast<size_t>(i)];
            links = std::min(links, kNvlinksPerGpu - down);
          }
        }
        break;
      case FaultKind::kPcieDowngrade:
        for (auto [nn, i] : a.ent.gpus) {
          if (nn == n) {
            int& width = l.pcie_width[static_cast<size_t>(i)];
            width = std::min(width, DowngradedWidth(a.severity));
          }
        }
        break;
      case FaultKind::kSocketFallback:
        if (a.f->target.node == n) l.socket = true;
        break;
      default: break;
    }
  }
  return l;
}

void Simulator::NodeBusBw(const NodeLinks& l, double& intra, double& inter, NodeState* st) const {
  // Inside the node: the slowest GPU's NVLink share, or PCIe through host memory.
  double in = std::numeric_limits<double>::infinity();
  if (g_ > 1) {
    for (int i = 0; i < g_; ++i) {
      double pcie = kPcieGen5x16GBps * l.pcie_width[static_cast<size_t>(i)] / 16.0;
      double bw = l.nvlinks[static_cast<size_t>(i)] > 0
                      ? kNvlinkBusEfficiency * l.nvlinks[static_cast<size_t>(i)] * kNvlinkGBps
                      : 0.5 * pcie;
      in = std::min(in, bw);
    }
  }
  // Through the NICs: G rails, each as fast as its NIC and its GPU's PCIe
  // link; a rail whose port is down shares the neighbouring NIC.
  double out;
  std::vector<int> load(static_cast<size_t>(g_), 0);
  if (st) st->rail_nic.clear();
  bool any_up = false;
  for (int i = 0; i < g_; ++i) any_up = any_up || l.up[static_cast<size_t>(i)];
  if (l.socket || !any_up) {
    out = kEthRateGbps * kSocketEfficiency / 8;
  } else {
    for (int i = 0; i < g_; ++i) {
      int nic = i;
      for (int d = 0; d < g_ && !l.up[static_cast<size_t>(nic)]; ++d) {
        nic = (i ^ 1) < g_ && d == 0 ? (i ^ 1) : (i + d + 1) % g_;
      }
      ++load[static_cast<size_t>(nic)];
      if (st) st->rail_nic.push_back(nic);
    }
    double slowest = std::numeric_limits<double>::infinity();
    for (int i = 0; i < g_; ++i) {
      if (load[static_cast<size_t>(i)] == 0) continue;
      double pcie = kPcieGen5x16GBps * l.pcie_width[static_cast<size_t>(i)] / 16.0;
      double rail = std::min(l.rate_gbps[static_cast<size_t>(i)] * kIbEfficiency / 8, pcie);
      slowest = std::min(slowest, rail / load[static_cast<size_t>(i)]);
    }
    out = g_ * slowest;
  }
  intra = in;
  inter = out;
  if (st) {
    st->nics.resize(static_cast<size_t>(g_));
    for (int i = 0; i < g_; ++i) {
      st->nics[static_cast<size_t>(i)].rate_gbps = l.rate_gbps[static_cast<size_t>(i)];
      st->nics[static_cast<size_t>(i)].up = l.up[static_cast<size_t>(i)];
    }
    st->nvlinks_active = l.nvlinks;
    st->pcie_width = l.pcie_width;
    st->socket_fallback = l.socket;
    st->intra_busbw_gbps = in;
    st->inter_busbw_gbps = out;
  }
}

void Simulator::NodeBandwidths(int step, const Mask& on, std::vector<double>& intra,
                               std::vector<double>& inter, std::vector<NodeState>* states) const {
  int nodes = sc_.nodes;
  intra.assign(static_cast<size_t>(nodes), std::numeric_limits<double>::infinity());
  inter.assign(static_cast<size_t>(nodes), std::numeric_limits<double>::infinity());
  // Only nodes with a network fault differ from the healthy value.
  std::vector<char> touched(static_cast<size_t>(nodes), 0);
  for (const ActiveFault& a : faults_) {
    FaultKind k = a.f->kind;
    if ((k == FaultKind::kPcieDowngrade || k == FaultKind::kNvlinkDown ||
         k == FaultKind::kNicDegraded || k == FaultKind::kIbPortDown ||
         k == FaultKind::kSocketFallback) &&
        Active(a, step, on)) {
      for (int n : a.ent.nodes) touched[static_cast<size_t>(n)] = 1;
    }
  }
  // Healthy nodes share one value.
  double healthy_in = 0, healthy_out = 0;
  bool have_healthy = false;
  for (int n = 0; n < nodes; ++n) {
    NodeState* st = states ? &(*states)[static_cast<size_t>(n)] : nullptr;
    bool faulty = touched[static_cast<size_t>(n)];
    if (!faulty && have_healthy && !st) {
      intra[static_cast<size_t>(n)] = healthy_in;
      inter[static_cast<size_t>(n)] = healthy_out;
      continue;
    }
    NodeBusBw(LinksOf(n, step, on, faulty), intra[static_cast<size_t>(n)],
              inter[static_cast<size_t>(n)], st);
    if (!faulty) {
      healthy_in = intra[static_cast<size_t>(n)];
      healthy_out = inter[static_cast<size_t>(n)];
      have_healthy = true;
    }
  }
}

double Simulator::JobBusBw(const std::vector<double>& intra, const std::vector<double>& inter,
                           int step, const Mask& on) const {
  double bw = std::numeric_limits<double>::infinity();
  for (int n = 0; n < sc_.nodes; ++n) {
    double b = intra[static_cast<size_t>(n)];
    if (sc_.nodes > 1)
      b = std::min(b, inter[static_cast<size_t>(n)] * CongestionFactor(n, step, on));
    bw = std::min(bw, b);
  }
  return bw;
}

double ClusterRun::BusBandwidthGBps(std::span<const int> nodes, bool single_node) const {
  double bw = std::numeric_limits<double>::infinity();
  for (int n : nodes) {
    const NodeState& st = node_states_[static_cast<size_t>(n)];
    bw = std::min(bw, st.intra_busbw_gbps);
    if (!single_node) {
      // Another job's traffic on a switch congests its uplinks: a test
      // between nodes under that switch alone stays inside it, unslowed.
      double cong = 1;
      for (const Fault& f : sc_.faults) {
        if (f.kind != FaultKind::kSharedSwitchCongestion || !FaultActive(f, sc_.steps)) continue;
        auto under = [&](int m) {
          return std::find(f.target.nodes.begin(), f.target.nodes.end(), m) != f.target.nodes.end();
        };
        if (under(n) && !std::all_of(nodes.begin(), nodes.end(), under)) {
          cong *= 1 - f.severity.value_or(DefaultSeverity(f.kind));
        }
      }
      bw = std::min(bw, st.inter_busbw_gbps * cong);
    }
  }
  return std::isfinite(bw) ? bw : kNvlinkBusEfficiency * kNvlinksPerGpu * kNvlinkGBps;
}

}  // namespace laggard::sim
