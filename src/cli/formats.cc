#include "cli/formats.h"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "cli/app.h"
#include "ingest/readers.h"

namespace laggard {
namespace {

using Entry = std::pair<std::string_view, std::string_view>;

// Reader name -> what it reads (docs/input-formats.md has the details).
constexpr std::array kDescriptions = {
    Entry{"jsonl", "step times as JSON Lines: one object per step (rank, step, duration)"},
    Entry{"csv", "step times as CSV/TSV with a header naming step and duration columns"},
    Entry{"rank-map", "a rank,host,gpu table: where each rank ran"},
    Entry{"nvidia-smi-q", "nvidia-smi -q / -a (also -l loops)"},
    Entry{"nvidia-smi-table", "nvidia-smi's default table"},
    Entry{"rocm-smi", "AMD rocm-smi: the Concise Info table and rocm-smi -a / --showallinfo"},
    Entry{"amd-smi-metric", "AMD amd-smi metric (the human-readable form)"},
    Entry{"nvidia-smi-dmon", "nvidia-smi dmon"},
    Entry{"nvidia-smi-query-gpu", "nvidia-smi --query-gpu=... --format=csv"},
    Entry{"nvidia-smi-nvlink", "nvidia-smi nvlink --status"},
    Entry{"nvidia-smi-topo", "nvidia-smi topo -m"},
    Entry{"p2p-bandwidth",
          "CUDA sample p2pBandwidthLatencyTest: GPU-to-GPU bandwidth and latency matrices"},
    Entry{"ibstat", "ibstat"},
    Entry{"ibstatus", "ibstatus"},
    Entry{"ibv_devinfo", "ibv_devinfo (-v)"},
    Entry{"ethtool", "ethtool IFACE and ethtool -S IFACE"},
    Entry{"switch-map", "a host,switch table: which leaf switch each host hangs on"},
    Entry{"perfquery", "perfquery (and -x) port counters, one capture or a timestamped loop"},
    Entry{"node-pairs",
          "a pasted node-pair bandwidth table (host1,host2 busbw): tells a bad node from the "
          "fabric"},
    Entry{"dcgmi-dmon", "dcgmi dmon"},
    Entry{"dcgmi-diag", "dcgmi diag"},
    Entry{"dcgm-exporter", "dcgm-exporter's Prometheus text"},
    Entry{"text-log",
          "training logs: the article's 'rank R, step S, time Ts' lines, Megatron "
          "iteration lines, Megatron StragglerDetector and NVRx straggler reports, or your "
          "--step-pattern"},
    Entry{"agent_log", "laggard agent's rolling logs (steps.jsonl, hardware.jsonl)"},
    Entry{"nccl-tests", "nccl-tests output (all_reduce_perf, ...)"},
    Entry{"nccl-debug", "NCCL_DEBUG=INFO logs"},
    Entry{"kineto", "torch.profiler / Kineto Chrome trace JSON (.json, .json.gz)"},
    Entry{"torch-legacy", "the legacy autograd profiler's trace (PyTorch without Kineto)"},
    Entry{"megatron-timeline",
          "Megatron-style op timeline (StragglerAnalysis to_timeline.py Chrome trace)"},
    Entry{"nsys-sqlite", "Nsight Systems SQLite export (nsys export --type sqlite)"},
    Entry{"flight-recorder",
          "PyTorch Flight Recorder dump (TORCH_NCCL_DUMP_ON_TIMEOUT: pickle or JSON, per rank)"},
    Entry{"hang-log",
          "rank log holding only hang lines (ProcessGroupNCCL watchdog, gloo, NCCL errors, "
          "torchrun failures)"},
    Entry{"ncclras",
          "NCCL RAS status report (ncclras, echo status | nc localhost 28028; NCCL 2.24+)"},
};

}  // namespace

std::optional<std::string_view> FormatDescription(std::string_view reader_name) {
  for (const Entry& e : kDescriptions) {
    if (e.first == reader_name) return e.second;
  }
  return std::nullopt;
}

int PrintFormats(std::ostream& out) {
  auto text = MakeDefaultTextReaders(std::nullopt);
  TraceReaderSet traces = MakeDefaultTraceReaders();
  out << "Input formats, recognised by content (not by name), in the order tried;\n"
         "directories are walked, .gz is read transparently (docs/input-formats.md):\n\n";
  auto line = [&](std::string_view name) {
    out << fmt::format("  {:<22} {}\n", name, FormatDescription(name).value_or(""));
  };
  out << "profiler traces\n";
  for (const TraceReader* r : traces.readers) line(r->name());
  out << "\nstep times, GPU metrics, network, NCCL\n";
  if (text.ok()) {
    for (const TextReader* r : text->readers) line(r->name());
  }
  return kExitOk;
}

}  // namespace laggard
