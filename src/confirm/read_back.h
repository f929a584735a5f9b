// Reading a confirmation's outputs back into one answer per culprit.
//
// A communication test's output is read by the nccl-tests reader (the one
// `diagnose` uses) into its bus bandwidth per message size (out-of-place,
// else in-place). Only a run that ended well (state "ran") gives figures;
// a culprit's pairs are compared at the largest size every one of them
// reached, where the link, not latency, sets the pace. Then:
//   a suspect host's triangle, (S, H1), (S, H2) and the control (H1, H2):
//     every suspect pair at <= kPairSlow of the control: confirmed, the
//       node; when its partners sit behind another switch, S or its
//       switch's uplink (inconclusive: a pair on S's own switch tells);
//     every planned suspect pair at >= kPairFast: refuted;
//     one slow and one fast: the path between S and that partner, not S;
//     a suspect pair that failed, or no control: inconclusive;
//   S's `ibstat` then tells its NIC from the rest of it (NicFaults()): a
//     faulty rail makes a confirmed node (or node-or-uplink) the NIC;
//   a suspect switch: across its uplink, inside it, and a control pair
//   elsewhere: slow across with a fast pair inside is confirmed (the uplink
//     or the switch's other tenants); without a pair inside nothing is
//     confirmed (the host under it is in the across pair); fast across
//     against a measured reference is refuted; slow inside too points at a
//     host under it, not the uplink.
// A CPU job's GEMM test carries its own verdict (run.h): confirmed when
// any of the culprit's is, refuted when all are. A GPU suspect's GEMM is
// judged here against its peers and controls (JudgeGpuGemm), together with
// its health pages (gpu_health.h), read from their saved files.
//
// Thread-safety: BusBandwidthOf(), IbstatPortsOf(), ReadResults() and
// ReadBack() (the health pages) read files; the rest are pure.

#ifndef LAGGARD_CONFIRM_READ_BACK_H_
#define LAGGARD_CONFIRM_READ_BACK_H_

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "confirm/plan.h"
#include "confirm/run.h"

namespace laggard::confirm {

// A pair is slow at this share of its reference or less (the network
// detector's bandwidth ratio), fast at kPairFast or more.
inline constexpr double kPairSlow = 0.7;
inline constexpr double kPairFast = 0.85;

// The bus bandwidth (GB/s) per message size of the nccl-tests output saved
// in `file`, ascending by size; empty with why (no nccl-tests table in it,
// no row with a figure).
std::vector<SizeBandwidth> BusBandwidthOf(const std::string& file, std::string& why);

// The plan's tests read from outputs already there, in `dir` (files or
// folders, any names: run by hand, by nccl-tests-cluster, or `laggard
// simulate --all-pair-tests`): a pair's (or a group's) test is the last
// nccl-tests run whose ranks sit on exactly its hosts; a host's ibstat test is the ibstat
// ports of that host (named by its folder, as `diagnose` reads them). A
// test with no result there is "not run". Fails only when `dir` is missing.
StatusOr<std::vector<TestRun>> ReadResults(const ConfirmPlan& plan, const std::string& dir);

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
  double gbps = 0;  // at the culprit's common size
  size_t test = 0;  // into the plan's tests
  PairRole role = PairRole::kNone;
};

struct Confirmation {
  size_t culprit = 0;
  std::string verdict;  // "confirmed", "refuted", "inconclusive", "not run"
  // What the tests point at: "node", "nic", "node_or_uplink", "path",
  // "fabric", "other_host", "switch", "compute", "gpu" or "".
  std::string locus;
  std::string figures;
  std::string host;               // the host it confirms, when it names one
  std::vector<PairFigure> pairs;  // its communication tests' figures
  int64_t size_bytes = 0;         // the message size they are compared at
};

// One entry per culprit that has tests in `plan`, in culprit order; `runs`
// holds one entry per planned test (empty state: not run). `in` gives the
// hosts' switches (a triangle whose partners sit behind another switch).
std::vector<Confirmation> ReadBack(const ConfirmInput& in, const ConfirmPlan& plan,
                                   const std::vector<TestRun>& runs);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_READ_BACK_H_
