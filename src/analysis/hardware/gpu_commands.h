// The commands a GPU finding's next steps name, in the GPU vendor's tools:
// nvidia-smi and DCGM for NVIDIA GPUs, rocm-smi and the ROCm Validation
// Suite for AMD's (a model name holding "AMD", "Radeon" or "Instinct", as
// rocm-smi and amd-smi print them). Each returns the command text, without
// backticks. Used by the hardware detector.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_HARDWARE_GPU_COMMANDS_H_
#define LAGGARD_ANALYSIS_HARDWARE_GPU_COMMANDS_H_

#include <optional>
#include <string>

namespace laggard {

bool IsAmdGpu(const std::optional<std::string>& model);

// Watch the GPU's power, clocks, temperature and use each second.
std::string WatchGpuCommand(const std::optional<std::string>& model, int32_t gpu);
// Reset clocks an operator or a profile set.
std::string ResetClocksCommand(const std::optional<std::string>& model, int32_t gpu);
// Set the power cap to `watts`, and show the limits.
std::string SetPowerCapCommand(const std::optional<std::string>& model, int32_t gpu, double watts);
std::string ShowPowerCommand(const std::optional<std::string>& model, int32_t gpu);
// Show the PCIe link under load.
std::string ShowPcieCommand(const std::optional<std::string>& model, int32_t gpu);
// The vendor's hardware diagnostic.
std::string GpuDiagCommand(const std::optional<std::string>& model);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HARDWARE_GPU_COMMANDS_H_
