// The registry of readers: the one place that knows every input format.
// Each family (one folder under ingest/) declares its factories in its own
// header; MakeDefaultTextReaders() and MakeDefaultTraceReaders() list them in
// sniffing order. Nothing registers itself: the CLI builds the sets and hands
// them to Ingest().
//
// A new format is one file in its family plus one line here.

#ifndef LAGGARD_INGEST_READERS_H_
#define LAGGARD_INGEST_READERS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ingest/agent_log/agent_log_reader.h"
#include "ingest/amd_smi/amd_smi_readers.h"
#include "ingest/common/text_reader.h"
#include "ingest/dcgm/dcgm_readers.h"
#include "ingest/hangs/hang_readers.h"
#include "ingest/nccl/nccl_readers.h"
#include "ingest/network/network_readers.h"
#include "ingest/nvidia_smi/nvidia_smi_readers.h"
#include "ingest/step_logs/step_log_readers.h"
#include "ingest/traces/common/trace_reader.h"

namespace laggard {

// The standard text readers in sniffing order: JSONL, CSV, the rank map, the
// nvidia-smi readers (-q, table, dmon, --query-gpu CSV, nvlink --status), the
// network readers (ibstat, ibstatus, ibv_devinfo, ethtool, switch map,
// perfquery), the DCGM readers, then text logs with the user pattern (if
// any), the article's line and Megatron lines, the agent log, nccl-tests,
// NCCL_DEBUG (with its own text-log reader for step lines) and `nvidia-smi
// topo -m`. Fails when `step_pattern` does not compile.
struct TextReaderSet {
  std::vector<std::unique_ptr<TextReader>> owned;
  std::vector<const TextReader*> readers;  // views of `owned`, for Ingest()
};
StatusOr<TextReaderSet> MakeDefaultTextReaders(const std::optional<std::string>& step_pattern);

// The standard trace readers: Kineto / Chrome trace JSON, the legacy autograd
// profiler's Chrome trace (torch without Kineto), Megatron-style op timelines
// (StragglerAnalysis' Chrome trace), Nsight Systems SQLite.
struct TraceReaderSet {
  std::vector<std::unique_ptr<TraceReader>> owned;
  std::vector<const TraceReader*> readers;
};
TraceReaderSet MakeDefaultTraceReaders();

}  // namespace laggard

#endif  // LAGGARD_INGEST_READERS_H_
