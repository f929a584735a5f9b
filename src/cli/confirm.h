// `laggard confirm REPORT.json`: the tests that confirm or refute each
// culprit of a diagnosis (confirm/plan.h), printed (--launcher print, the
// default), or run through a launcher (confirm/launch.h: local, mpirun,
// srun, ssh) and read back into one answer per culprit
// (confirm/read_back.h). `laggard gemm`: the CPU GEMM per core
// (confirm/cpu_gemm.h), or per GPU with --gpus (confirm/gpu_gemm.h).
// docs/confirm.md.
//
// Called from RunLaggard() on the main thread.

#ifndef LAGGARD_CLI_CONFIRM_H_
#define LAGGARD_CLI_CONFIRM_H_

#include <optional>
#include <ostream>
#include <string>

#include "agent/nvml.h"
#include "confirm/cpu_gemm.h"
#include "confirm/plan.h"

namespace CLI {
class App;
}

namespace laggard {

struct ConfirmOptions {
  std::string report;
  std::string suspect;  // HOST or HOST:GPU, instead of a report
  std::string hosts;    // with suspect: the hosts to pair it with
  std::string launcher = "print";
  std::string out_dir = "laggard-confirm";
  bool out_given = false;  // --out on the command line (--results writes only then)
  std::string rank_cores;  // "0:0,1:1"
  bool dry_run = false;    // the launcher's command lines, nothing run
  std::string results;     // read the tests' outputs from here instead of running them
  bool json = false;
  confirm::PlanOptions plan;
};

struct GemmFlags {
  std::string cores;  // "" for every core this process may run on
  std::string gpus;   // "all" or "0,3": the GPUs instead of the cores
  std::optional<int> n;
  std::optional<double> seconds;
  std::string dtype = "bf16";  // GPUs
  std::string cudart_lib, cublas_lib;
  std::string nvml_lib = agent::kNvmlLibrary;
  std::optional<std::string> fake_gpus;  // NVML scripted (agent/fake_gpu.h), for tests
};

void AddConfirmFlags(CLI::App* cmd, ConfirmOptions& options);
void AddGemmFlags(CLI::App* cmd, GemmFlags& flags);

int Confirm(const ConfirmOptions& options, std::ostream& out, std::ostream& err);
int Gemm(const GemmFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace laggard

#endif  // LAGGARD_CLI_CONFIRM_H_
