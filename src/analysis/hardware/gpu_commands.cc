#include "analysis/hardware/gpu_commands.h"

#include <fmt/format.h>

namespace laggard {

bool IsAmdGpu(const std::optional<std::string>& model) {
  if (!model) return false;
  for (const char* word : {"AMD", "Radeon", "Instinct"}) {
    if (model->find(word) != std::string::npos) return true;
  }
  return false;
}

std::string WatchGpuCommand(const std::optional<std::string>& model, int32_t gpu) {
  return IsAmdGpu(model) ? fmt::format("watch -n 1 rocm-smi -d {}", gpu)
                         : fmt::format("nvidia-smi dmon -i {} -s pucvmt -d 1", gpu);
}

std::string ResetClocksCommand(const std::optional<std::string>& model, int32_t gpu) {
  return IsAmdGpu(model)
             ? fmt::format("rocm-smi -d {} --resetclocks` (and `--setperflevel auto`)", gpu)
             : fmt::format("nvidia-smi -i {} -rac` and `nvidia-smi -i {} -rgc", gpu, gpu);
}

std::string SetPowerCapCommand(const std::optional<std::string>& model, int32_t gpu, double watts) {
  return IsAmdGpu(model) ? fmt::format("rocm-smi -d {} --setpoweroverdrive {:.0f}", gpu, watts)
                         : fmt::format("nvidia-smi -i {} -pl {:.0f}", gpu, watts);
}

std::string ShowPowerCommand(const std::optional<std::string>& model, int32_t gpu) {
  return IsAmdGpu(model) ? fmt::format("rocm-smi -d {} --showpower --showmaxpower", gpu)
                         : fmt::format("nvidia-smi -i {} -q -d POWER", gpu);
}

std::string ShowPcieCommand(const std::optional<std::string>& model, int32_t gpu) {
  return IsAmdGpu(model) ? fmt::format("rocm-smi -d {} --showmetrics", gpu)
                         : fmt::format("nvidia-smi -i {} -q -d PCIE", gpu);
}

std::string GpuDiagCommand(const std::optional<std::string>& model) {
  return IsAmdGpu(model) ? "rvs -g` (the ROCm Validation Suite)" : "dcgmi diag -r 2";
}

}  // namespace laggard
