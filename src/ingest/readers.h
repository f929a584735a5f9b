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

// JSON Lines: one object per line with the same field names as CSV.
std::unique_ptr<StepReader> MakeJsonlStepReader();

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
