// `laggard confirm REPORT.json`: the tests that confirm or refute each
// culprit of a diagnosis (confirm/plan.h), printed (--launcher print, the
// default) or run here (--launcher local: the tests of this machine; GEMM
// results read back and judged). `laggard gemm`: the CPU GEMM per core
// (confirm/cpu_gemm.h). docs/confirm.md.
//
// Called from RunLaggard() on the main thread.

#ifndef LAGGARD_CLI_CONFIRM_H_
#define LAGGARD_CLI_CONFIRM_H_

#include <ostream>
#include <string>

#include "confirm/cpu_gemm.h"
#include "confirm/plan.h"

namespace CLI {
class App;
}

namespace laggard {

struct ConfirmOptions {
  std::string report;
  std::string launcher = "print";
  std::string out_dir = "laggard-confirm";
  std::string rank_cores;  // "0:0,1:1"
  bool json = false;
  confirm::PlanOptions plan;
};

struct GemmFlags {
  std::string cores;  // "" for every core this process may run on
  confirm::GemmOptions options;
};

void AddConfirmFlags(CLI::App* cmd, ConfirmOptions& options);
void AddGemmFlags(CLI::App* cmd, GemmFlags& flags);

int Confirm(const ConfirmOptions& options, std::ostream& out, std::ostream& err);
int Gemm(const GemmFlags& flags, std::ostream& out, std::ostream& err);

// A suspect core's GEMM against its peers': "confirmed" below
// kConfirmedBelow of the peers' median, "refuted" at kRefutedFrom or more,
// else "inconclusive". Two cores of one host differ by a few percent at
// rest; a core shared with a busy neighbour runs at half or less.
inline constexpr double kConfirmedBelow = 0.85;
inline constexpr double kRefutedFrom = 0.95;

}  // namespace laggard

#endif  // LAGGARD_CLI_CONFIRM_H_
