// Internal to the trace simulator (kineto_traces.h): the compute kernels its
// ranks launch, and the scenario check and truth.json writer
// (kineto_truth.cc). Only kineto_traces.cc and kineto_truth.cc include it.

#ifndef LAGGARD_SIMULATOR_WRITERS_KINETO_SIM_H_
#define LAGGARD_SIMULATOR_WRITERS_KINETO_SIM_H_

#include <cstdint>
#include <string>

#include "base/status.h"
#include "simulator/writers/kineto_traces.h"

namespace laggard::sim {

namespace kineto_kernels {

// One kind of compute kernel: the name CUPTI reports, the aten op that
// launches it, its nominal duration and launch configuration.
struct KernelKind {
  const char* name;
  const char* op;
  double dur_us;
  int regs, smem, grid, block;
};

// Forward and backward of a transformer layer in bf16 on H100 (cuBLAS sm90
// and CUTLASS GEMMs, flash-attention 2, ATen elementwise), and the fused
// AdamW step.
inline constexpr KernelKind kKinds[] = {
    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
     "float>(int, float, "
     "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, "
     "c10::BFloat16*)",
     "aten::native_layer_norm", 45, 30, 0, 16384, 256},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
     "segment_k_off_"
     "kernel__5x_cublas",
     "aten::addmm", 520, 168, 213248, 132, 384},
    {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t, "
     "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, "
     "false, true, "
     "false, false>(Flash_fwd_params)",
     "aten::_flash_attention_forward", 410, 255, 49152, 1024, 128},
    {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
     "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
     "aten::addmm", 180, 126, 12288, 512, 128},
    {"void at::native::vectorized_elementwise_kernel<4, "
     "at::native::CUDAFunctor_add<c10::BFloat16>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
     "at::detail::Array<char*, 3>)",
     "aten::add", 35, 28, 0, 8192, 128},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_"
     "segment_k_off_"
     "kernel__5x_cublas",
     "aten::addmm", 700, 168, 213248, 132, 384},
    {"void at::native::vectorized_elementwise_kernel<4, "
     "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::"
     "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl("
     "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
     "const::{lambda()#4}::"
     "operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
     "aten::gelu", 60, 32, 0, 16384, 128},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
     "segment_k_off_"
     "kernel__5x_cublas",
     "aten::mm", 700, 168, 213248, 132, 384},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
     "segment_k_off_"
     "kernel__5x_cublas",
     "aten::mm", 690, 154, 147456, 132, 256},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl("
     "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
     "const::{lambda()#4}::"
     "operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> "
     ">(int, "
     "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::"
     "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
     "c10::BFloat16)#1}, "
     "at::detail::Array<char*, 3>)",
     "aten::gelu_backward", 90, 32, 0, 16384, 128},
    {"void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, "
     "2, 4, 2, false, "
     "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, "
     "true, false, "
     "false, false, false, false, false>(Flash_bwd_params)",
     "aten::_flash_attention_backward", 1050, 255, 147456, 1024, 256},
    {"void at::native::(anonymous "
     "namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>("
     "c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 "
     "const*, "
     "c10::BFloat16*, int)",
     "aten::native_layer_norm_backward", 80, 40, 0, 8192, 256},
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::"
     "TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
     "(at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, "
     "bool, float*, "
     "float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous "
     "namespace)::"
     "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, "
     "double, double, "
     "double, bool, bool, float*, float*)",
     "aten::_fused_adamw_", 350, 72, 0, 320, 512},
};
inline constexpr uint16_t kForwardPattern[] = {0, 1, 2, 3, 4, 0, 5, 6, 7, 4};
inline constexpr uint16_t kBackwardPattern[] = {7, 8, 9, 7, 8, 7, 8, 10, 7, 8, 11};
inline constexpr uint16_t kOptimizerKind = 12;

}  // namespace kineto_kernels

// The scenario's values in range, or the first one that is not.
Status ValidateTraceScenario(const TraceScenario& sc);
// truth.json of the traces in `dir`: the culprit, the injected faults and
// each host's clock offset, as the trace tests and benchmarks read it.
Status WriteTraceTruth(const TraceScenario& sc, const std::string& dir, bool gzip);

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_WRITERS_KINETO_SIM_H_
