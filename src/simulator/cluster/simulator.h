// Internal to the cluster simulator: the Simulator behind SimulateCluster()
// (cluster.h). One object per call; its work is split by concern:
//   cluster.cc        preparation (per-GPU constants, faults, switches),
//                     the passes and the effect of each fault
//   network_model.cc  bandwidths of each node and of the job's all-reduce
//   simulate_pass.cc  one pass over every step of every rank
//
// A run is several passes over the same seed: the recorded one with every
// fault, its healthy control and, with several faults, one per fault
// alone. Every random number comes from a stream keyed by what it is for
// (sim_internal.h), so the passes share every draw the faults do not
// change, and each pass draws its streams in the same order every time.
//
// Thread-safety: Run() simulates the passes that are not recorded on
// threads of their own; those only read the object and write their own
// Pass. The recorded pass alone writes run_.

#ifndef LAGGARD_SIMULATOR_CLUSTER_SIMULATOR_H_
#define LAGGARD_SIMULATOR_CLUSTER_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "simulator/cluster/cluster.h"

namespace laggard::sim {

class Simulator {
 public:
  Simulator(const ClusterScenario& sc, const SimulateOptions& opt) : sc_(sc), opt_(opt), run_(sc) {}

  StatusOr<ClusterRun> Run();

 private:
  // Per-GPU constants drawn from the seed: no two GPUs are identical.
  struct GpuConst {
    double silicon = 1;  // compute time factor (~0.3% spread)
    double r_th = kThermalResistanceCPerW;
    double p_dyn = kDynamicPowerW;
  };

  // One fault, prepared for the step loop.
  struct ActiveFault {
    const Fault* f = nullptr;
    size_t index = 0;  // in the scenario's faults
    size_t slot = 0;   // in faults_
    double severity = 0;
    FaultEntities ent;
    std::vector<int> ranks;  // ranks whose own GPU, work or host time it changes
  };

  struct Pass {
    std::vector<char> enabled;  // per faults_ slot: whether the fault acts in this pass
    bool record = false;
    std::vector<double> step_s;                        // rank 0 step time per step
    std::vector<double> transfer_ns;                   // sum of transfer times per step
    std::vector<std::vector<double>> culprit_compute;  // per fault: compute ns of its first rank
    std::vector<std::vector<double>> culprit_host;     // per fault: host ns of its first rank
  };

  // The links of one node's GPUs and NICs (per GPU index, rail i = NIC i).
  struct NodeLinks {
    std::vector<double> rate_gbps;
    std::vector<char> up;
    std::vector<int> nvlinks;
    std::vector<int> pcie_width;
    bool socket = false;
  };

  // What one pass carries from step to step (simulate_pass.cc).
  struct PassState;

  using Mask = std::vector<char>;  // per faults_ slot
  // Whether fault `a` acts at `step` in a pass with mask `on`.
  static bool Active(const ActiveFault& a, int step, const Mask& on) {
    return on[a.slot] && FaultActive(*a.f, step);
  }

  // cluster.cc
  void Prepare();
  void PrepareSwitches();
  void FillNodeStates();
  // `alone[i]`: a pass with only fault slot i (empty when there is one fault).
  void MeasureEffects(const Pass& faulty, const Pass& healthy, const std::vector<Pass>& alone);

  // network_model.cc. Bandwidths of each node given the faults active at
  // `step`; `states`, when given, gets each node's links.
  void NodeBandwidths(int step, const Mask& on, std::vector<double>& intra,
                      std::vector<double>& inter, std::vector<NodeState>* states) const;
  // `node`'s links at `step`; healthy ones unless `faulty` (a network fault touches the node).
  NodeLinks LinksOf(int node, int step, const Mask& on, bool faulty) const;
  // All-reduce bus bandwidth inside a node with `links` and through its NICs;
  // fills `st` (when given) with the links and the rail each NIC carries.
  void NodeBusBw(const NodeLinks& links, double& intra, double& inter, NodeState* st) const;
  double JobBusBw(const std::vector<double>& intra, const std::vector<double>& inter, int step,
                  const Mask& on) const;
  double CongestionFactor(int node, int step, const Mask& on) const;
  int PcieWidth(int node, int gpu, int step, const Mask& on) const;

  // simulate_pass.cc: SimulatePass() runs the steps below for every step,
  // in this order; each draws from its streams in rank order.
  void SimulatePass(Pass& pass);
  PassState StartPass(Pass& pass);
  void UpdateNetwork(PassState& st, int s) const;  // when the active network faults change
  void DrawTransfers(Pass& pass, PassState& st, int s) const;  // the job stream, per collective
  void ApplyRankFaults(PassState& st, int s) const;            // work and host time per rank
  void SetGpuClocks(PassState& st, int s);                     // clock of each tracked GPU
  void RunHostAndFirstCompute(PassState& st, int s);           // rank streams: jitter, host, copies
  void RunCollectives(PassState& st, int s);                   // rank streams: per-rank skew
  void FinishStep(Pass& pass, PassState& st, int s);           // step end, what the pass records
  void AdvanceGpu(PassState& st, int s, size_t rank, int64_t step_ns);  // power and temperature
  ScheduledStep& Scheduled(int s, size_t rank);

  const ClusterScenario& sc_;
  const SimulateOptions& opt_;
  ClusterRun run_;
  int ranks_ = 0;
  int g_ = 0;
  std::vector<GpuConst> gpus_;  // [rank]
  std::vector<ActiveFault> faults_;
  std::vector<double> shares_;
  std::vector<int64_t> bytes_;
  std::vector<int> tracked_;     // ranks whose GPU clock and temperature are simulated
  std::vector<int> track_slot_;  // rank -> index in tracked_, or -1
};

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_CLUSTER_SIMULATOR_H_
