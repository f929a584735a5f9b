// The compute half of the article's confirmation step on CPUs: a GEMM timed
// on one core at a time, so a core that a neighbour slows (or a slower
// vCPU) shows as fewer GFLOP/s than its peers. `laggard gemm` prints it;
// `laggard confirm` plans it for CPU jobs (plan.h).
//
// BLAS is Debian's OpenBLAS (libopenblas0), loaded with dlopen at run time
// like NVML: no BLAS at build time, and a clear error when it is absent.
// Each measurement pins the calling thread to its core (sched_setaffinity)
// and runs OpenBLAS single-threaded, so the figure is that core's.
//
// Output, one line per core (ParseGemmLine() reads it back):
//   laggard-gemm host=vm device=cpu:1 dtype=fp32 n=512 reps=41 seconds=1.00
//     gflops=38.21 gflops_min=35.90 gflops_max=38.77 blas=OpenBLAS 0.3.21
// (a GPU's line has more fields before blas=: gpu_gemm.h).
//
// Not thread-safe: the pinning changes the calling thread's affinity (and
// restores it).

#ifndef LAGGARD_CONFIRM_CPU_GEMM_H_
#define LAGGARD_CONFIRM_CPU_GEMM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace laggard::confirm {

struct GemmOptions {
  int n = 512;           // square matrices, n x n, fp32
  double seconds = 1.0;  // per core (the cores take turns)
  double burst_s = 0.2;  // one turn: repetitions timed together (median over turns)
  int min_reps = 3;      // turns per core at least
};

struct GemmResult {
  std::string host;
  std::string device;  // "cpu:3"
  std::string dtype = "fp32";
  int n = 0;
  int reps = 0;
  double seconds = 0;
  double gflops = 0;  // median over the repetitions
  double gflops_min = 0;
  double gflops_max = 0;
  std::string blas;  // openblas_get_config(), first words; cuBLAS's version on GPUs
  // GPUs (gpu_gemm.h): the model (spaces as '_' in the line), the UUID, and
  // what NVML showed while the GEMM ran; absent when not read.
  std::optional<std::string> model, uuid;
  std::optional<double> sm_mhz;  // median of the samples
  std::optional<double> sm_mhz_min, temp_c_max, power_w_max;
  std::string throttle;  // clock event reasons seen, "sw_power_cap,hw_slowdown"; "" none
};

// OpenBLAS, loaded once.
class Blas {
 public:
  // libopenblas.so.0; an error naming the package when it cannot be loaded.
  static StatusOr<std::shared_ptr<Blas>> Load();
  ~Blas();
  void Sgemm(int n, const float* a, const float* b, float* c) const;
  const std::string& config() const { return config_; }

 private:
  Blas() = default;
  void* handle_ = nullptr;
  using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                           int, float, float*, int);
  SgemmFn sgemm_ = nullptr;
  std::string config_;
};

// Times the GEMM on `cores`, round robin, one burst of `burst_s` per core
// per round, for `seconds` x the cores in all; a core's figure is the
// median of its bursts' rates. A core the process may not run on
// (outside its affinity mask) is an error.
StatusOr<std::vector<GemmResult>> RunCpuGemm(const Blas& blas, const std::vector<int>& cores,
                                             const GemmOptions& options);

// The cores this process may run on (sched_getaffinity), ascending.
std::vector<int> AllowedCores();

// "0-3,6" -> {0, 1, 2, 3, 6}; an error for anything else.
StatusOr<std::vector<int>> ParseCoreList(std::string_view text);

std::string GemmLine(const GemmResult& r);
// A GemmLine() back; nullopt for any other line.
std::optional<GemmResult> ParseGemmLine(std::string_view line);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_CPU_GEMM_H_
