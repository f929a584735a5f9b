#include "ingest/traces/common/kernel_names.h"

#include <initializer_list>

#include "base/text.h"

namespace laggard {
namespace {

bool ContainsAny(std::string_view lowered, std::initializer_list<std::string_view> needles) {
  for (std::string_view n : needles) {
    if (lowered.find(n) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

OpClass ClassifyKernelName(std::string_view name, std::span<const std::string> comm_kernels) {
  std::string lower = ToLower(name);
  // RCCL runs some collectives as MSCCL kernels: "mscclKernel_Sum_hip_bfloat16_Simple".
  if (ContainsAny(lower, {"nccl", "rccl", "msccl", "c10d::"})) return OpClass::kCommunication;
  for (const std::string& c : comm_kernels) {
    if (lower.find(c) != std::string::npos) return OpClass::kCommunication;
  }
  if (ContainsAny(lower, {"flash", "fmha", "attention", "sdpa", "mem_eff"})) {
    return OpClass::kAttention;
  }
  if (ContainsAny(lower, {"gemm", "gemv", "xmma", "cutlass", "cublas", "wgmma", "nvjet"})) {
    return OpClass::kGemm;
  }
  if (StartsWith(name, "Cijk_")) return OpClass::kGemm;  // ROCm Tensile / hipBLASLt
  // cuBLAS / cuDNN engines are named after their architecture: sm80_..., sm90_...
  if (lower.size() > 3 && StartsWith(lower, "sm") && IsDigit(lower[2])) {
    size_t i = 2;
    while (i < lower.size() && IsDigit(lower[i])) ++i;
    if (i < lower.size() && lower[i] == '_') return OpClass::kGemm;
  }
  if (StartsWith(lower, "triton_tem_") && lower.find("mm") != std::string::npos) {
    return OpClass::kGemm;  // Inductor matmul templates (triton_tem_fused_mm_0)
  }
  return OpClass::kOtherCompute;
}

// "all_reduce", "AllReduce", "nccl:_all_gather_base", "c10d::allreduce_" ->
// allreduce / allgather / ...; an unknown name comes back lowercased without
// '_' ("" stays ""), or "" when `known_only`.
std::string CanonicalCollective(std::string_view raw, bool known_only) {
  for (std::string_view prefix : {"c10d::", "nccl:", "gloo:", "mpi:", "ucc:", "xccl:"}) {
    if (StartsWith(raw, prefix)) {
      raw.remove_prefix(prefix.size());
      break;
    }
  }
  std::string s;
  s.reserve(raw.size());
  for (char c : raw) {
    if (c != '_' && c != ' ' && c != '-') s += ToLowerAscii(c);
  }
  static constexpr std::pair<std::string_view, std::string_view> kKnown[] = {
      {"allreduce", "allreduce"}, {"allgather", "allgather"}, {"reducescatter", "reducescatter"},
      {"alltoall", "alltoall"},   {"broadcast", "broadcast"}, {"bcast", "broadcast"},
      {"sendrecv", "sendrecv"},   {"send", "send"},           {"recv", "recv"},
      {"reduce", "reduce"},       {"gather", "gather"},       {"scatter", "scatter"},
      {"barrier", "barrier"},
  };
  for (const auto& [prefix, canonical] : kKnown) {
    if (StartsWith(s, prefix)) {
      // "send"/"recv" only whole ("sendrecv" is matched before), "reduce*"
      // and "gather*" keep their suffix meaning (coalesced, base).
      if ((prefix == "send" || prefix == "recv") && s.size() != prefix.size()) continue;
      return std::string(canonical);
    }
  }
  return known_only ? std::string() : s;
}

// ncclDevKernel_AllReduce_Sum_f32_RING_LL -> "allreduce";
// ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(...) -> "sendrecv";
// ncclDevKernel_Generic_4(...) -> "".
std::string CollectiveFromKernel(std::string_view name) {
  for (std::string_view prefix :
       {"ncclDevKernel_", "ncclKernel_", "rcclKernel_", "rcclDevKernel_"}) {
    size_t at = name.find(prefix);
    if (at == std::string_view::npos) continue;
    std::string_view rest = name.substr(at + prefix.size());
    size_t end = rest.find_first_of("_(<");
    return CanonicalCollective(rest.substr(0, end), /*known_only=*/true);
  }
  return std::string();
}

}  // namespace laggard
