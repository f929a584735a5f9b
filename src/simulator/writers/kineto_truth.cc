// truth.json of the trace simulator (kineto_traces.h) and the check of its
// scenario: what the trace tests and benchmarks score laggard against.

#include "simulator/writers/kineto_sim.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "simulator/writers/kineto_writer.h"
#include "simulator/writers/step_logs.h"

namespace laggard::sim {
namespace {

constexpr int64_t kSec = 1'000'000'000;

using kineto_json::Sink;

std::string JsonOrNull(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : "null";
}

}  // namespace

Status ValidateTraceScenario(const TraceScenario& sc) {
  if (sc.ranks < 1 || sc.gpus_per_node < 1 || sc.steps < 1) {
    return Status::Error("trace scenario: ranks, gpus_per_node and steps must be at least 1");
  }
  if (sc.first_step < 0) return Status::Error("trace scenario: first_step must not be negative");
  if (sc.collectives_per_step < 0 || sc.kernels_per_step < sc.collectives_per_step + 2) {
    return Status::Error(fmt::format(
        "trace scenario: kernels_per_step ({}) must be at least collectives_per_step ({}) + 2",
        sc.kernels_per_step, sc.collectives_per_step));
  }
  if (sc.bucket_bytes < 1 || !(sc.bus_bw_gbps > 0) || !(sc.jitter >= 0 && sc.jitter < 1)) {
    return Status::Error(
        "trace scenario: bucket_bytes and bus_bw_gbps must be positive, jitter in [0, 1)");
  }
  auto bad_rank = [&](int r) { return r < 0 || r >= sc.ranks; };
  if (sc.compute_slow && (bad_rank(sc.compute_slow->rank) || !(sc.compute_slow->factor > 0))) {
    return Status::Error(
        "trace scenario: compute_slow needs a rank in range and a positive factor");
  }
  if (sc.data_stall && (bad_rank(sc.data_stall->rank) || !(sc.data_stall->seconds >= 0))) {
    return Status::Error("trace scenario: data_stall needs a rank in range and seconds >= 0");
  }
  if (sc.network_slow && !(sc.network_slow->factor > 0)) {
    return Status::Error("trace scenario: network_slow needs a positive factor");
  }
  if (sc.schedule && (sc.compute_slow || sc.data_stall || sc.network_slow)) {
    return Status::Error("trace scenario: a scheduled trace takes its faults from the schedule");
  }
  for (size_t i = 0; i < sc.traced_ranks.size(); ++i) {
    if (bad_rank(sc.traced_ranks[i]) || (i > 0 && sc.traced_ranks[i] <= sc.traced_ranks[i - 1])) {
      return Status::Error(fmt::format(
          "trace scenario: traced ranks must ascend within [0, {}); got {} at position {}",
          sc.ranks, sc.traced_ranks[i], i));
    }
  }
  int nodes = (sc.ranks + sc.gpus_per_node - 1) / sc.gpus_per_node;
  if (!sc.clock_offsets_ns.empty() && static_cast<int>(sc.clock_offsets_ns.size()) != nodes) {
    return Status::Error(fmt::format("trace scenario: {} clock offsets for {} nodes",
                                     sc.clock_offsets_ns.size(), nodes));
  }
  for (int64_t o : HostClockOffsetsNs(sc)) {
    if (std::abs(o) > 1000 * kSec)
      return Status::Error("trace scenario: clock offsets must stay within 1000 s");
  }
  return Status::Ok();
}

Status WriteTraceTruth(const TraceScenario& sc, const std::string& dir, bool gzip) {
  std::string kind = "none";
  std::optional<int> culprit;
  std::optional<double> factor, stall_s;
  std::vector<std::string> faults;
  if (sc.compute_slow) {
    faults.push_back(fmt::format("{{\"kind\": \"compute_slow\", \"rank\": {}, \"factor\": {}}}",
                                 sc.compute_slow->rank, sc.compute_slow->factor));
  }
  if (sc.data_stall) {
    faults.push_back(fmt::format("{{\"kind\": \"data_stall\", \"rank\": {}, \"seconds\": {}}}",
                                 sc.data_stall->rank, sc.data_stall->seconds));
  }
  if (sc.network_slow) {
    faults.push_back(fmt::format("{{\"kind\": \"network_slow\", \"rank\": null, \"factor\": {}}}",
                                 sc.network_slow->factor));
  }
  // The headline fault: a rank fault names the culprit; a slow network is
  // job-wide and names none.
  if (sc.compute_slow) {
    kind = "compute_slow";
    culprit = sc.compute_slow->rank;
    factor = sc.compute_slow->factor;
  } else if (sc.data_stall) {
    kind = "data_stall";
    culprit = sc.data_stall->rank;
    stall_s = sc.data_stall->seconds;
  } else if (sc.network_slow) {
    kind = "network_slow";
    factor = sc.network_slow->factor;
  }
  std::vector<int64_t> offsets = HostClockOffsetsNs(sc);
  int nodes = static_cast<int>(offsets.size());
  std::string out = fmt::format(
      "{{\n  \"schema\": \"laggard.sim.kineto_traces/1\",\n  \"seed\": {},\n  \"ranks\": {},\n  "
      "\"gpus_per_node\": {},\n"
      "  \"nodes\": {},\n  \"first_step\": {},\n  \"steps\": {},\n  \"kernels_per_step\": {},\n"
      "  \"collectives_per_step\": {},\n  \"bus_bw_gbps\": {},\n  \"fault\": \"{}\",\n",
      sc.seed, sc.ranks, sc.gpus_per_node, nodes, sc.first_step, sc.steps, sc.kernels_per_step,
      sc.collectives_per_step, sc.bus_bw_gbps, kind);
  out += fmt::format("  \"culprit_rank\": {},\n", culprit ? std::to_string(*culprit) : "null");
  out +=
      fmt::format("  \"culprit_host\": {},\n",
                  culprit ? fmt::format("\"{}\"", HostName(*culprit / sc.gpus_per_node)) : "null");
  out += fmt::format("  \"culprit_gpu\": {},\n",
                     culprit ? std::to_string(*culprit % sc.gpus_per_node) : "null");
  out += fmt::format("  \"factor\": {},\n  \"stall_s\": {},\n", JsonOrNull(factor),
                     JsonOrNull(stall_s));
  out += fmt::format("  \"faults\": [{}],\n", fmt::join(faults, ", "));
  out +=
      "  \"clock_offset_convention\": \"host_time = true_time + offset\",\n  \"clock_offsets_ns\": "
      "{";
  for (int n = 0; n < nodes; ++n) {
    out += fmt::format("{}\"{}\": {}", n ? ", " : "", HostName(n), offsets[static_cast<size_t>(n)]);
  }
  out += "},\n  \"files\": [\n";
  const std::vector<int> traced = TracedRanks(sc);
  for (size_t i = 0; i < traced.size(); ++i) {
    int r = traced[i];
    out += fmt::format("    {{\"rank\": {}, \"host\": \"{}\", \"gpu\": {}, \"path\": \"{}\"}}{}\n",
                       r, HostName(r / sc.gpus_per_node), r % sc.gpus_per_node,
                       KinetoTracePath(sc, r, gzip), i + 1 < traced.size() ? "," : "");
  }
  out += "  ]\n}\n";
  std::string path = dir + "/truth.json";
  Sink sink;
  if (Status st = sink.Open(path, false); !st.ok()) return st;
  if (!sink.Write(out)) return Status::Error(fmt::format("{}: write failed", path));
  return sink.Close();
}

}  // namespace laggard::sim
