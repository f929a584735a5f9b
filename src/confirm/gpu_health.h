// A GPU suspect's health checks read back (nvidia-smi -q and dcgmi diag
// outputs, through the readers diagnose uses): what holds it back now.
// Against it: dcgmi diag failed a test of the GPU (a failed Deployment test,
// such as persistence mode off, means the diagnostic could not run: said,
// not held against it); clock event reasons active while it is busy (SW
// power cap, HW slowdown, SW / HW thermal, HW power brake, an applications
// clock setting; an idle card's flags say nothing); an enforced power
// limit below 95% of the default; a narrower PCIe link while busy;
// uncorrected ECC errors; a page retirement or row remap waiting for a
// reset, or a failed remap.
//   something against it, the control clean (or none): confirmed;
//   the control shows trouble too: inconclusive (the host or the test);
//   nothing: inconclusive, never refuted (a health check cannot clear a
//     slowness it does not measure: a GEMM can).
//
// Thread-safety: reads files; no shared state.

#ifndef LAGGARD_CONFIRM_GPU_HEALTH_H_
#define LAGGARD_CONFIRM_GPU_HEALTH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace laggard::confirm {

struct GpuHealth {
  std::string verdict;  // "confirmed", "inconclusive", "not judged"
  std::string figures;
  std::vector<std::string> faults;
  size_t records = 0;  // GPU records read from the suspect's outputs
};

// `gpu`: the suspect's index, which picks its record from a page of
// several GPUs.
GpuHealth JudgeGpuHealth(const std::vector<std::string>& suspect_files,
                         const std::vector<std::string>& control_files,
                         std::optional<int32_t> gpu = std::nullopt);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_GPU_HEALTH_H_
