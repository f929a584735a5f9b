// The compute half of the article's confirmation step on GPUs: a GEMM timed
// on each GPU at once (as a training step loads them: shared power and
// cooling count), with clocks, temperature and power sampled while it
// runs, so a GPU that runs slower than its peers of the same model shows as
// fewer TFLOP/s and the samples say whether it was throttled.
//
// cuBLAS and the CUDA runtime are loaded with dlopen at run time, like NVML
// (agent/nvml.h): no CUDA at build time, and a clear error when they are
// absent. The few CUDA and cuBLAS types used are declared in gpu_gemm.cc to
// match their C ABI (CUDA 11, 12 and 13; checked against CUDA 13.0's
// cuda_runtime_api.h, cublas_api.h, library_types.h and driver_types.h): cudaMalloc, cudaMemcpy,
// cudaEvent* (cudaEventQuery polled, so that a hung GPU cannot block the run), cublasCreate_v2 and
// cublasGemmEx with a 32-bit float compute type.
//
// Devices are named as nvidia-smi and NVML number them: each CUDA device's
// PCI bus id is looked up in NVML (CUDA's own order, and
// CUDA_VISIBLE_DEVICES, may differ). Without NVML, CUDA_DEVICE_ORDER is set
// to PCI_BUS_ID before the runtime starts, which gives the same order when
// every GPU is visible.
//
// Output: GemmLine() (cpu_gemm.h) with the GPU's fields, one line per GPU:
//   laggard-gemm host=n1 device=gpu:3 dtype=bf16 n=8192 reps=1650 seconds=3.00
//     gflops=712011.20 gflops_min=698113.00 gflops_max=715233.90
//     model=NVIDIA_H100_80GB_HBM3 uuid=GPU-5d6e... sm_mhz=1980 sm_mhz_min=1755
//     temp_c_max=71 power_w_max=690 throttle=sw_power_cap blas=cuBLAS 120205
//
// Not thread-safe: one run at a time in a process (it starts one thread
// per GPU and samples NVML from the calling thread). A device CUDA sees
// that NVML does not, whose CUDA index is another GPU's NVML index, is not
// timed (a failure says so) rather than named as that GPU.

#ifndef LAGGARD_CONFIRM_GPU_GEMM_H_
#define LAGGARD_CONFIRM_GPU_GEMM_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/nvml.h"
#include "base/status.h"
#include "confirm/cpu_gemm.h"

namespace laggard::confirm {

struct GpuGemmOptions {
  std::string dtype = "bf16";  // "bf16" | "fp16" | "fp32" (fp32: no TF32)
  int n = 8192;                // square matrices, n x n
  double seconds = 3.0;        // timed, all GPUs at once, after the warm-up
  double warmup_s = 0.5;       // not timed: clocks and cuBLAS settle
  double burst_s = 0.1;        // one measurement: GEMMs between two events
  double sample_s = 0.1;       // NVML sampling period
  double setup_s = 60;         // a GPU not set up by then is given up on
  double stuck_s = 60;         // a burst not ended this long after the run's end: hung
};

// "bf16" | "fp16" | "fp32"; an error naming them for anything else.
Status CheckGpuDtype(std::string_view dtype);

// The CUDA runtime and cuBLAS, loaded once.
class Cuda {
 public:
  struct Api;
  // `cudart` / `cublas`: a soname or a path; "" searches the usual
  // sonames of CUDA 13, 12 and 11, then the unversioned ones. An error naming what to install
  // otherwise.
  static StatusOr<std::shared_ptr<Cuda>> Load(const std::string& cudart, const std::string& cublas);
  ~Cuda();
  const Api& api() const { return *api_; }
  // "cuBLAS 12.2.5 (CUDA runtime 12020)".
  const std::string& version() const { return version_; }

 private:
  Cuda() = default;
  void* cudart_ = nullptr;
  void* cublas_ = nullptr;
  std::unique_ptr<Api> api_;
  std::string version_;
};

// One GPU that could not be timed, with why.
struct GpuGemmFailure {
  std::string device;  // "gpu:3"
  std::string what;    // "cudaMalloc: out of memory (error 2)"
};

struct GpuGemmRun {
  std::vector<GemmResult> results;
  std::vector<GpuGemmFailure> failures;
  // A GPU's thread is still inside the driver (a hung GPU): the caller
  // ends the process (_exit) once it has printed, without unloading CUDA.
  bool stuck = false;
};

// Times the GEMM on the GPUs named by their NVML index (`gpus`; nullopt:
// every GPU), all at once, each GPU's figure the median of its bursts'
// rates; `nvml` (may be null) is sampled while each GPU is timed. A GPU
// asked for that does not exist is an error; one that fails, or hangs
// (cudaEventQuery polled against a deadline), is a failure. `cuda` must
// outlive the process when the run is `stuck`.
StatusOr<GpuGemmRun> RunGpuGemm(const Cuda& cuda, agent::GpuBackend* nvml,
                                const std::optional<std::vector<int>>& gpus,
                                const GpuGemmOptions& options);

// IEEE half and bfloat16 bits of a float (round to nearest even), for the
// matrices' random fill.
uint16_t HalfBits(float f);
uint16_t Bfloat16Bits(float f);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_GPU_GEMM_H_
