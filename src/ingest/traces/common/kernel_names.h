// Names of device kernels and collectives, shared by every trace reader so a
// class or collective means the same whichever profiler wrote the trace.
//
//   ClassifyKernelName     communication first (NCCL / RCCL / MSCCL names, and the
//                          user's own --comm-kernel names: a custom
//                          all-reduce such as vLLM's cross_device_reduce, say
//                          nothing of gemm), then attention
//                          ("fmha_cutlassF_..." is attention), then GEMM, else
//                          other compute
//   CanonicalCollective    "all_reduce", "AllReduce", "nccl:_all_gather_base",
//                          "c10d::allreduce_" -> allreduce, allgather, ...
//   CollectiveFromKernel   ncclDevKernel_AllReduce_Sum_f32_RING_LL -> allreduce
//   IsCpuCommName          the CPU-side ranges of communication, whichever
//                          profiler traced them: gloo:all_reduce, c10d::...
//
// Pure functions.

#ifndef LAGGARD_INGEST_TRACES_COMMON_KERNEL_NAMES_H_
#define LAGGARD_INGEST_TRACES_COMMON_KERNEL_NAMES_H_

#include <span>
#include <string>
#include <string_view>

#include "base/text.h"
#include "formats/kineto_keys.h"
#include "model/trace.h"

namespace laggard {

// `comm_kernels`: more communication kernels, as lowercase substrings of
// their names (IngestOptions::comm_kernels).
OpClass ClassifyKernelName(std::string_view name, std::span<const std::string> comm_kernels = {});

// Canonical collective of a raw name; an unknown name comes back lowercased
// without '_' ("" stays ""), or "" when `known_only`.
std::string CanonicalCollective(std::string_view raw, bool known_only);

// The collective an NCCL / RCCL kernel name names, "" when none
// (ncclDevKernel_Generic_4).
std::string CollectiveFromKernel(std::string_view name);

// Backend execution ranges of c10d collectives ("gloo:all_reduce").
inline bool IsBackendCommAnnotation(std::string_view name) {
  return StartsWith(name, "gloo:") || StartsWith(name, "nccl:") || StartsWith(name, "mpi:") ||
         StartsWith(name, "ucc:") || StartsWith(name, "xccl:");
}

// CPU-side communication: backend ranges, c10d:: ops, record_param_comms,
// anything gloo.
inline bool IsCpuCommName(std::string_view name) {
  return IsBackendCommAnnotation(name) || StartsWith(name, "c10d::") ||
         name == kineto_keys::name::kRecordParamComms ||
         name.find("gloo") != std::string_view::npos;
}

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_COMMON_KERNEL_NAMES_H_
