// `laggard simulate`: simulates a cluster (cluster.h) and writes a run
// directory in the real tools' formats, with the truth recorded. Used by the
// CLI, the tests and the benchmarks.
//
// Layout of DIR (host = node-00, node-01, ...):
//   <host>/rank-<R>.log                 step lines "rank R, step S, time T.TTTTs"
//                                       (.csv / .jsonl with --step-format)
//   <host>/rank-<R>.<ms>.pt.trace.json  torch.profiler (Kineto) trace of the
//                                       trace window, every rank (.gz with gzip)
//   <host>/nvidia-smi-dmon.txt          nvidia-smi dmon -s pucvmt -o DT
//   <host>/nvidia-smi-query.csv         nvidia-smi --query-gpu=... --format=csv -l 5
//   <host>/nvidia-smi-q.txt             nvidia-smi -q, at the end of the run
//   <host>/nvidia-smi-topo.txt          nvidia-smi topo -m
//   <host>/nvidia-smi-nvlink.txt        nvidia-smi nvlink --status
//   <host>/ibstat.txt                   ibstat
//   <host>/ethtool-eth0.txt             ethtool eth0
//   nccl-tests/all_reduce_perf_<host>.txt          one node, all its GPUs
//   nccl-tests/all_reduce_perf_<hostA>_<hostB>.txt two nodes (every pair up
//                                       to 8 nodes, else ring neighbours)
//   nccl-debug.log                      NCCL_DEBUG=INFO initialisation lines of every rank
//   switch-map.csv                      host,switch
//   truth.json                          what was injected and what it did
//
// Every file is written on its host's clock (true time + the host's offset
// in truth.json); step starts, dmon and query rows and Kineto timestamps
// come from the same simulated timeline. Files are written in parallel.
// Thread-safety: reentrant.

#ifndef LAGGARD_SIMULATOR_RUN_WRITER_H_
#define LAGGARD_SIMULATOR_RUN_WRITER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "simulator/cluster/cluster.h"
#include "simulator/writers/step_logs.h"

namespace laggard::sim {

enum class StepTiming : uint8_t {
  kEndToEnd,  // what a training loop timing whole steps prints: equal on all ranks
  kCompute,   // the step without the time spent inside collectives
  kBoth,      // end to end, with the compute-only time beside it (csv / jsonl)
};

struct RunOutputOptions {
  std::optional<StepLogFormat> step_format = StepLogFormat::kArticle;  // nullopt: no step logs
  StepTiming step_timing = StepTiming::kEndToEnd;
  bool traces = true;
  int trace_steps = 5;
  std::optional<int> trace_first_step;  // default: the last trace_steps steps but one
  std::vector<int> trace_ranks;         // ascending; empty: every rank writes a trace
  bool gzip_traces = false;
  bool hardware = true;  // nvidia-smi files
  bool network = true;   // ibstat, ethtool, switch-map.csv
  bool nccl_tests = true;
  // Two-node nccl-tests for every node pair (what `laggard confirm
  // --results` reads back); else every pair up to 8 nodes, neighbours beyond.
  bool all_pair_tests = false;
  // Further nccl-tests runs, each over one set of nodes (the halves of
  // `laggard confirm`'s bisection): nccl-tests/all_reduce_perf_<set>.txt.
  std::vector<std::vector<int>> group_tests;
  bool nccl_debug = true;
  bool measure_effects = true;  // simulate the healthy control for truth.json's effects
  int dmon_interval_s = 1;
  int query_interval_s = 5;
  int threads = 0;  // 0: one per core
};

struct RunSummary {
  int files = 0;
  uint64_t bytes = 0;
  double mean_step_s = 0;
  double healthy_mean_step_s = 0;
  double simulate_s = 0;  // wall time of the physics
  double write_s = 0;     // wall time of writing the files
  std::string headline;   // one line: what was injected
};

// Simulates `scenario` and writes DIR (created; existing files are
// overwritten, others left alone).
StatusOr<RunSummary> WriteClusterRun(const ClusterScenario& scenario,
                                     const RunOutputOptions& options, const std::string& dir);

// "thermal@node-01:5:0.2,onset=50" -> Fault. Grammar:
//   KIND[@TARGET][:SEVERITY][,onset=S][,end=S][,period=N][,duration=N][,cause=gc|checkpoint]
//   TARGET    all | rank<R> | r<R> | <host> | <node> | <host>:<gpu> | <node>:<gpu>
//             | <host>:mlx5_<i> | <host>..<host> | <node>..<node> | <host>+<host>+...
//             | stage<P>        (hosts are node-00, node-01, ...; nodes are 0-based)
//   SEVERITY  a fraction with a decimal point (0.2) or a percentage (20%)
// Targets are checked against the cluster by ResolveScenario.
StatusOr<Fault> ParseFaultSpec(std::string_view spec);

// A set of nodes for --group-tests: <host>..<host>, <node>..<node>,
// <host>+<host>+..., two or more, ascending and unique.
StatusOr<std::vector<int>> ParseNodeSet(std::string_view text);

// Reads a scenario file (JSON): cluster keys, "faults" (spec strings or
// objects) and "outputs"; see docs/simulator.md. Unknown keys are errors.
Status ParseScenarioJson(std::string_view text, ClusterScenario* scenario,
                         RunOutputOptions* outputs);

// "0-1023,4096,8000-8003" -> those ranks, ascending and unique; each in
// [0, ranks). Ranges are inclusive.
StatusOr<std::vector<int>> ParseRankList(std::string_view spec, int ranks);

// The default trace window: the last `steps` steps but one.
int DefaultTraceFirstStep(int total_steps, int trace_steps);

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_RUN_WRITER_H_
