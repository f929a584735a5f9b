// The NCCL family: nccl-tests outputs and NCCL_DEBUG=INFO logs, appended to
// RunBuilder::network(). Registered by ingest/readers.cc.

#ifndef LAGGARD_INGEST_NCCL_NCCL_READERS_H_
#define LAGGARD_INGEST_NCCL_NCCL_READERS_H_

#include <memory>

#include "ingest/common/text_reader.h"

namespace laggard {

// nccl-tests output of any *_perf binary (nccl_tests.cc): one NcclTestRun
// per run; NCCL INFO lines inside the output give NcclRankInfo entries too.
std::unique_ptr<TextReader> MakeNcclTestsReader();

// NCCL_DEBUG=INFO logs (nccl_debug.cc): one NcclRankInfo per (host, pid,
// CUDA device). Claims files whose head is at least half NCCL lines; when
// such a file also holds other lines (a training log run with
// NCCL_DEBUG=INFO), `step_lines` (a text-log reader) reads it again for step
// records. Without `step_lines` only NCCL lines are read.
std::unique_ptr<TextReader> MakeNcclDebugReader(std::unique_ptr<TextReader> step_lines = nullptr);

}  // namespace laggard

#endif  // LAGGARD_INGEST_NCCL_NCCL_READERS_H_
