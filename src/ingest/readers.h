// Factories for the step-time readers. The CLI builds the list it wants and
// hands it to Ingest(); nothing registers itself.

#ifndef LAGGARD_INGEST_READERS_H_
#define LAGGARD_INGEST_READERS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ingest/line_matcher.h"
#include "ingest/step_reader.h"
#include "ingest/trace_reader.h"

namespace laggard {

// Free-text logs, scanned line by line with `matchers` (tried in order; the
// first that matches wins). Claims any text file, with low confidence unless
// a matcher recognises a line of the head, so a log whose first step line is
// far down still gets read.
std::unique_ptr<StepReader> MakeTextLogReader(std::vector<std::unique_ptr<LineMatcher>> matchers);

// CSV (or TSV / semicolon-separated) with a header naming the columns
// (field_names.h).
std::unique_ptr<StepReader> MakeCsvStepReader();

// A `rank,host,gpu` table (no step or duration column): places ranks on hosts
// and GPUs, so GPU metrics join ranks whose step logs do not say where they
// ran. Sits in csv_reader.cc, sharing its CSV splitting.
std::unique_ptr<StepReader> MakeRankMapReader();

// JSON Lines: one object per line with the same field names as CSV.
std::unique_ptr<StepReader> MakeJsonlStepReader();

// `nvidia-smi -q` / `nvidia-smi -a` text: one GpuRecord per GPU block
// (nvidia_smi_q.cc).
std::unique_ptr<StepReader> MakeNvidiaSmiQReader();

// The default `nvidia-smi` table: one GpuRecord per GPU row group
// (nvidia_smi_table.cc).
std::unique_ptr<StepReader> MakeNvidiaSmiTableReader();

// The standard reader set in sniffing order: JSONL, CSV, nvidia-smi -q, the
// nvidia-smi table, then text logs with the user pattern (if any), the
// article's line and Megatron lines.
// GPU metrics from nvidia-smi (one GpuRecord per GPU per file):
// `nvidia-smi dmon` (any -s, any -o), `nvidia-smi --query-gpu=...
// --format=csv` and `nvidia-smi nvlink --status`.
std::unique_ptr<StepReader> MakeNvidiaSmiDmonReader();
std::unique_ptr<StepReader> MakeNvidiaSmiQueryCsvReader();
std::unique_ptr<StepReader> MakeNvlinkStatusReader();
// The standard reader set in sniffing order: JSONL, CSV, the nvidia-smi
// readers (dmon, --query-gpu CSV, nvlink --status), then text logs with
// Network link state, appended to RunBuilder::network(): `ibstat`,
// `ibstatus`, `ibv_devinfo` (IbPort per port), `ethtool IFACE` / `ethtool -S
// IFACE` (EthLink per interface), each also as many hosts' outputs in one
// file (pdsh / dshbak / ansible, host_lines.h); and a user's host -> switch
// CSV map (NetworkData::switch_of).
std::unique_ptr<StepReader> MakeIbstatReader();
std::unique_ptr<StepReader> MakeIbstatusReader();
std::unique_ptr<StepReader> MakeIbvDevinfoReader();
std::unique_ptr<StepReader> MakeEthtoolReader();
std::unique_ptr<StepReader> MakeSwitchMapReader();
// `perfquery` / `perfquery -x` port counters (perfquery.cc): one
// IbPortCounters per (host, LID, port), also from pdsh / dshbak captures.
std::unique_ptr<StepReader> MakePerfqueryReader();
// The hardware log of `laggard agent` (hardware.jsonl): GPU samples and facts,
// XIDs, lost GPUs, InfiniBand ports and network links.
std::unique_ptr<StepReader> MakeAgentLogReader();
// nccl-tests output of any *_perf binary (nccl_tests.cc): one NcclTestRun
// per run, appended to RunBuilder::network(); NCCL INFO lines inside the
// output give NcclRankInfo entries too.
std::unique_ptr<StepReader> MakeNcclTestsReader();
// NCCL_DEBUG=INFO logs (nccl_debug.cc): one NcclRankInfo per (host, pid,
// CUDA device). Claims files whose head is at least half NCCL lines; when
// such a file also holds other lines (a training log run with
// NCCL_DEBUG=INFO), `step_lines` (a text-log reader) reads it again for step
// records. Without `step_lines` only NCCL lines are read.
std::unique_ptr<StepReader> MakeNcclDebugReader(std::unique_ptr<StepReader> step_lines = nullptr);
// `nvidia-smi topo -m` (nvidia_smi_topo.cc): one TopologyMatrix per matrix.
std::unique_ptr<StepReader> MakeNvidiaSmiTopoReader();
// DCGM outputs (GPU metrics and health, into RunBuilder::AddGpu):
// `dcgmi dmon` tables, `dcgmi diag` results (table or -j JSON), and
// dcgm-exporter's Prometheus text (/metrics, one or more scrapes).
std::unique_ptr<StepReader> MakeDcgmiDmonReader();
std::unique_ptr<StepReader> MakeDcgmiDiagReader();
std::unique_ptr<StepReader> MakeDcgmExporterReader();
// The standard reader set in sniffing order: JSONL, CSV, then text logs with
// the user pattern (if any), the article's line and Megatron lines, then the
// nccl-tests, NCCL_DEBUG (with its own text-log reader for step lines) and
// `nvidia-smi topo -m` readers.
struct StepReaderSet {
  std::vector<std::unique_ptr<StepReader>> owned;
  std::vector<const StepReader*> readers;  // views of `owned`, for Ingest()
};
StatusOr<StepReaderSet> MakeDefaultStepReaders(const std::optional<std::string>& step_pattern);

// The standard trace readers: Kineto / Chrome trace JSON, Nsight Systems SQLite.
struct TraceReaderSet {
  std::vector<std::unique_ptr<TraceReader>> owned;
  std::vector<const TraceReader*> readers;
};
TraceReaderSet MakeDefaultTraceReaders();

}  // namespace laggard

#endif  // LAGGARD_INGEST_READERS_H_
