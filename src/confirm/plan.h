// `laggard confirm`'s plan: the fewest tests that confirm or refute each
// culprit of a diagnosis, the article's closing step ("one pure-compute and
// one pure-communication benchmark separate hardware from software").
//
// Input: the JSON report of `laggard diagnose --json` (ReadReport()).
// Per culprit, by its cause class:
//   compute_slow, host_stall, unknown, with a GPU
//       health on the suspect GPU: `nvidia-smi -q -i G` (the whole page:
//       its PCIe link too) and `dcgmi diag -r 1 -i G` (-r 2 by
//       option); the same dcgmi run on a healthy GPU of the same model,
//       another host preferred, as the control; `laggard gemm --gpus all`
//       on the suspect's host (the GPU against its peers there) and
//       `laggard gemm --gpus all` on the control GPU's host when it is
//       another (every GPU of that host at once, loaded alike);
//   the same on a CPU job (no GPUs in the report): `laggard gemm --cores`
//       on the suspect rank's core and on a healthy rank's core, when the
//       rank -> core map is given (--rank-cores), else on every core;
//   a group culprit's ranks: each rank's GPU as above, none the control of
//       another;
//   communication, with a host
//       the triangle of nccl-tests all_reduce_perf runs between the suspect
//       host S and two healthy hosts H1, H2, on S's own switch first: (S,
//       H1), (S, H2) and the control (H1, H2): slow with both partners and
//       a fast control is the node (partners on another switch: the node or
//       its switch's uplink, as the why says); all three slow is the
//       fabric; with one healthy host, (S, H1) alone and no control;
//   external (a shared switch), or a switch
//       once per switch: a host under it with one elsewhere (across the
//       uplink), two hosts under it (inside the switch), and a control pair
//       elsewhere: slow across, fast inside and elsewhere is the switch's
//       uplink or its other tenants, not a node.
// At most 3 benchmark runs and 3 health checks per suspect. Every test is a command line for the
// launcher (print: shown only); nothing runs unless asked (cli/confirm.cc).
//
// Pure functions of their input.

#ifndef LAGGARD_CONFIRM_PLAN_H_
#define LAGGARD_CONFIRM_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace laggard::confirm {

struct ReportCulprit {
  std::optional<int32_t> rank;
  std::optional<std::string> host;
  std::optional<int32_t> gpu;
  std::optional<std::string> nic;
  std::optional<std::string> switch_name;
  std::string cause_class;  // "compute_slow", "communication", ...
  std::optional<std::string> cause;
  double confidence = 0;
  std::vector<int32_t> ranks;  // a group culprit's ranks
};

struct ReportGpu {
  std::string host;
  int32_t gpu = 0;
  std::optional<int32_t> rank;
  std::optional<std::string> model;
};

// What the plan needs of a diagnose report.
struct ConfirmInput {
  std::string status;  // the verdict's
  std::string summary;
  std::vector<ReportCulprit> culprits;
  std::vector<ReportGpu> gpus;
  std::vector<std::string> hosts;                // the job's, in natural order
  std::map<int32_t, std::string> host_of_rank;   // from the report's ranks
  std::vector<int32_t> ranks;                    // ascending
  std::map<std::string, std::string> switch_of;  // host -> switch
  // The job computes on CPUs: its traces say so (gloo, no device), and no
  // GPU is in the report. A GPU job without GPU metrics is not one.
  bool cpu_job = false;
  std::map<int32_t, int32_t> gpu_of_rank;  // from hardware.gpus and ranks
  // When the job ran (the report's job.first_time / last_time, ISO 8601):
  // the confirmation carries them, so that it is never folded into
  // another job's verdict (fold.h).
  std::optional<std::string> first_time, last_time;
};

// Whether `h` can be a host name in a command line: letters, digits, '-',
// '.', '_', not starting with '-' (never an option).
bool LooksLikeHost(const std::string& h);

// The input for a suspect named by hand (`laggard confirm --suspect`):
// HOST (its network: the triangle and its ports), HOST:GPU (that GPU's
// health against a GPU of another host) or "all" (the network of all the
// hosts, no host known: bisected, confirm/bisect.h), paired with the hosts of
// `hosts_text`, one per line, optionally with its switch ("HOST SWITCH" or
// "HOST,SWITCH"; a "host,switch" header and # comments are skipped, as in
// `laggard simulate`'s switch-map.csv). `where` names the hosts file in
// errors; `gpus_per_node` gives each host's GPUs for a GPU suspect.
inline constexpr int32_t kMaxGpuIndex = 1023;  // HOST:GPU above it is refused
StatusOr<ConfirmInput> SuspectInput(std::string_view suspect, std::string_view hosts_text,
                                    const std::string& where, int gpus_per_node);

// The report's JSON text (schema laggard.report/1); `where` names it in
// errors. A communication_bound verdict, which names nobody, gets one
// culprit: the job's network, with no host (bisected).
StatusOr<ConfirmInput> ReadReport(std::string_view json_text, const std::string& where);

enum class TestKind : uint8_t { kHealth, kCompute, kCommunication };
std::string_view TestKindName(TestKind k);  // "health", "compute", "communication"

// A communication test's place in its culprit's set: a pair with the
// suspect host, across a suspect switch's uplink, inside that switch, or a
// control pair of healthy hosts.
// kHalf: a bisection's test (confirm/bisect.h), on half the suspected hosts
// or one of them with a cleared host.
enum class PairRole : uint8_t { kNone, kSuspect, kAcross, kInside, kControl, kHalf };
std::string_view PairRoleName(PairRole r);  // "suspect", ..., "half", ""

struct PlannedTest {
  TestKind kind = TestKind::kHealth;
  PairRole role = PairRole::kNone;
  size_t culprit = 0;              // index into ConfirmInput::culprits
  bool control = false;            // a healthy control, not the suspect
  std::vector<std::string> hosts;  // where it runs, in order
  std::optional<int32_t> gpu;
  // The command as it runs on each host; a communication test's is one
  // process of it, started procs[i] times on hosts[i] by the launcher
  // (confirm/launch.h).
  std::vector<std::string> argv;
  std::vector<int> procs;
  // A test of one host's GPUs: how many the host has in the report (0: not
  // a GPU test, or not known). srun allocates them all (--exclusive), so
  // that a GPU's index is nvidia-smi's whatever the cgroup shows.
  int node_gpus = 0;
  double time_limit_s = 120;
  std::string why;  // what it tells apart
};

struct PlanOptions {
  int dcgm_level = 1;                 // dcgmi diag -r N
  int gpus_per_node = 0;              // processes per host for nccl-tests; 0: from the report
  std::string nccl_tests_dir;         // where all_reduce_perf is; "" for PATH
  std::map<int32_t, int> rank_cores;  // --rank-cores 0:0,1:1 (CPU jobs)
  std::string laggard = "laggard";    // the binary for `laggard gemm`
};

// The GPUs a culprit names, (host, index): its own, or each of a group's
// ranks', sorted, once each.
std::vector<std::pair<std::string, int32_t>> CulpritGpus(const ConfirmInput& in,
                                                         const ReportCulprit& c);
// Every GPU any culprit names: none of them is another's peer or control.
std::set<std::pair<std::string, int32_t>> NamedGpus(const ConfirmInput& in);

struct ConfirmPlan {
  std::vector<PlannedTest> tests;
  // Per culprit: what could not be planned and why ("no healthy host on
  // another switch").
  std::vector<std::string> notes;
};

ConfirmPlan PlanConfirm(const ConfirmInput& in, const PlanOptions& options);

// An nccl-tests all_reduce_perf run over `hosts` for culprit `culprit`,
// each host with its processes (the report's ranks there, or
// --gpus-per-node).
PlannedTest GroupTest(const ConfirmInput& in, const PlanOptions& o, size_t culprit,
                      std::vector<std::string> hosts, PairRole role, std::string why);

// The switch `host` sits under, from the report's switch map.
std::optional<std::string> SwitchOf(const ConfirmInput& in, const std::string& host);

// "node-01 GPU 3", "rank 5 (node-01)", "host node-04", "switch leaf-2".
std::string CulpritName(const ReportCulprit& c);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_PLAN_H_
