// Reading a confirmation's outputs back into one answer per culprit.
//
// A communication test's output is read by the nccl-tests reader (the one
// `diagnose` uses); its figure is the bus bandwidth of its largest message
// size (out-of-place, else in-place, else the run's average): the size
// where the link, not latency, sets the pace. The pairs of one culprit are
// then judged together:
//   a suspect host's triangle, (S, H1), (S, H2) and the control (H1, H2):
//     both suspect pairs at <= kPairSlow of the control: confirmed, the
//       node (with its NIC and, when its partners sit behind another
//       switch, its switch's uplink);
//     both at >= kPairFast: refuted, S's network is as fast as its peers';
//     one slow and one fast: the path between S and that partner, not S;
//   S's `ibstat` then tells its NIC from the rest of it: a port not Active,
//     or slower than S's others, makes a confirmed node the NIC (locus
//     "nic"); ports all alike leave it the node;
//   a suspect switch: across its uplink, inside it, and a control pair
//   elsewhere: slow across with fast inside and elsewhere is confirmed (the
//     uplink or the switch's other tenants); fast across is refuted; slow
//     inside too points at a host under it, not the uplink.
// A CPU job's GEMM test carries its own verdict (run.h): confirmed when
// any of the culprit's is, refuted when all are. Health checks (nvidia-smi,
// dcgmi) are saved for reading, not judged here.
//
// Thread-safety: pure functions but BusBandwidthOf(), which reads a file.

#ifndef LAGGARD_CONFIRM_READ_BACK_H_
#define LAGGARD_CONFIRM_READ_BACK_H_

#include <optional>
#include <string>
#include <vector>

#include "confirm/plan.h"
#include "confirm/run.h"

namespace laggard::confirm {

// A pair is slow at this share of its reference or less (the network
// detector's bandwidth ratio), fast at kPairFast or more.
inline constexpr double kPairSlow = 0.7;
inline constexpr double kPairFast = 0.85;

// The bus bandwidth (GB/s) of the nccl-tests output saved in `file`, or
// nullopt with why (no nccl-tests table in it, no row with a figure).
std::optional<double> BusBandwidthOf(const std::string& file, std::string& why);

// The ports of the `ibstat` output saved in `file`; empty with why when it
// holds none.
std::vector<PortReading> IbstatPortsOf(const std::string& file, std::string& why);

// A host's rails: the kind of port it has most of, how many, and the
// fastest rate among them.
struct Rails {
  std::string kind;  // "InfiniBand MT4129"
  size_t count = 0;
  double best_gbps = 0;
};
Rails RailsOf(const std::vector<PortReading>& ports);

// What a host's ports say of its NICs. Its rails are the kind of port (link
// layer and CA type) it has most of; a rail not Active while another is, or
// Active at a lower rate than its fastest peer ("mlx5_3 port 1 at 200 Gb/s,
// its peers 400"), is a fault. Other kinds (a front-end Ethernet NIC's
// unused ports, Down) and a host of one port say nothing. Empty when the
// rails agree.
std::vector<std::string> NicFaults(const std::vector<PortReading>& ports);

struct PairFigure {
  std::string a, b;
  double gbps = 0;
  size_t test = 0;  // into the plan's tests
  PairRole role = PairRole::kNone;
};

struct Confirmation {
  size_t culprit = 0;
  std::string verdict;  // "confirmed", "refuted", "inconclusive", "not run"
  // What the tests point at: "node", "nic", "path", "switch", "compute" or "".
  std::string locus;
  std::string figures;
  std::vector<PairFigure> pairs;  // its communication tests' figures
};

// One entry per culprit that has tests in `plan`, in culprit order; `runs`
// holds one entry per planned test (empty state: not run).
std::vector<Confirmation> ReadBack(const ConfirmInput& in, const ConfirmPlan& plan,
                                   const std::vector<TestRun>& runs);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_READ_BACK_H_
