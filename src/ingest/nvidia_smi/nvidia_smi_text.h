// Pieces of the two readers of nvidia-smi's human-readable output,
// `nvidia-smi -q` (nvidia_smi_q.cc) and the default table
// (nvidia_smi_table.cc): the performance state, and the value cells and
// GPU collection they share with other GPU tools (common/gpu_collector.h).
//
// Thread-safety: pure functions.

#ifndef LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_TEXT_H_
#define LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_TEXT_H_

#include <string_view>

#include "ingest/common/gpu_collector.h"

namespace laggard::nvsmi {

using gpu_text::GpuCollector;
using gpu_text::IsUnavailable;
using gpu_text::Number;
using gpu_text::ParseNumber;

// "P0" .. "P15" -> 0 .. 15.
Number ParsePerfState(std::string_view value);

}  // namespace laggard::nvsmi

#endif  // LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_TEXT_H_
