// The nvidia-smi family: GPU metrics and facts as `nvidia-smi` prints them,
// into RunBuilder::AddGpu() (one GpuRecord per GPU per file), and the GPU /
// NIC topology matrix. Registered by ingest/readers.cc.

#ifndef LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_READERS_H_
#define LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_READERS_H_

#include <memory>

#include "ingest/common/text_reader.h"

namespace laggard {

// `nvidia-smi -q` / `nvidia-smi -a` text: one GpuRecord per GPU block
// (nvidia_smi_q.cc).
std::unique_ptr<TextReader> MakeNvidiaSmiQReader();

// The default `nvidia-smi` table: one GpuRecord per GPU row group
// (nvidia_smi_table.cc).
std::unique_ptr<TextReader> MakeNvidiaSmiTableReader();

// `nvidia-smi dmon` (any -s, any -o; nvidia_smi_dmon.cc).
std::unique_ptr<TextReader> MakeNvidiaSmiDmonReader();

// `nvidia-smi --query-gpu=... --format=csv` (nvidia_smi_query_csv.cc).
std::unique_ptr<TextReader> MakeNvidiaSmiQueryCsvReader();

// `nvidia-smi nvlink --status` (nvidia_smi_nvlink.cc).
std::unique_ptr<TextReader> MakeNvlinkStatusReader();

// `nvidia-smi topo -m` (nvidia_smi_topo.cc): one TopologyMatrix per matrix,
// into RunBuilder::network().
std::unique_ptr<TextReader> MakeNvidiaSmiTopoReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_READERS_H_
