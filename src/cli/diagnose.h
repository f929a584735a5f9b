// `laggard diagnose PATH...`: ingest, every detector, the verdict, and the
// reports: the terminal text on stdout, and the files --json, --html and
// --trace name. Outputs are guarded: two outputs to one path, or an output
// that names an input file, are refused; an output that cannot be written
// leaves the verdict printed and the exit code kExitOutputFailed.
//
// Called from RunLaggard() (and the demo) on the main thread.

#ifndef LAGGARD_CLI_DIAGNOSE_H_
#define LAGGARD_CLI_DIAGNOSE_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/steps/step_time_detector.h"
#include "cli/app.h"
#include "cli/history.h"
#include "cli/ingest_flags.h"
#include "verdict/verdict.h"

namespace CLI {
class App;
}

namespace laggard {

struct DiagnoseOptions {
  std::vector<std::string> paths;
  // Each "" for none, "-" for stdout (then no text report is printed).
  std::string json_out;
  std::string html_out;
  std::string trace_out;
  bool strict = false;
  bool quiet = false;
  std::string color = "auto";
  // Verdict statuses that make the exit code kExitFailOn: "straggler",
  // "job-wide", "communication-bound", "inconclusive".
  std::vector<std::string> fail_on;
  IngestFlags input;
  std::optional<int32_t> gpus_per_node;
  std::optional<int32_t> first_node;
  // --layout dp=D,pp=P,tp=T[,vpp=V]: the parallel layout of op timelines.
  std::string layout;
  StepDetectorOptions detector;
  // --mpi: spread the ingest over the processes of an MPI job; process 0
  // reports (mpi/mpi_ingest.h).
  bool mpi = false;
  double mpi_timeout_s = 600;
  // --record: append the verdict to the fleet history (cli/history.h).
  RecordFlags record;
};

// Parses --layout's "dp=2,pp=4,tp=1[,vpp=2][,order=tp-dp-pp]"; sizes not
// given are 1. Only Megatron's rank order (tp fastest, then dp, then pp;
// "tp-cp-dp-pp" with cp 1) is accepted.
StatusOr<ParallelLayout> ParseLayoutFlag(std::string_view text);

// Adds the paths and every diagnose option to `cmd`, bound to `options`.
void AddDiagnoseFlags(CLI::App* cmd, DiagnoseOptions& options);

// --fail-on for `cmd` (diagnose and watch share it).
void AddFailOnFlag(CLI::App* cmd, std::vector<std::string>& fail_on);

// True when `status` is one of the --fail-on values in `fail_on`.
bool FailsOn(const std::vector<std::string>& fail_on, VerdictStatus status);

// Colour for --color MODE ("auto", "always", "never"): "always" wins over
// NO_COLOR; "auto" colours a tty unless NO_COLOR or TERM=dumb.
bool ColourWanted(std::string_view mode, bool tty, const Terminal& terminal);

int Diagnose(const DiagnoseOptions& options, std::ostream& out, std::ostream& err,
             const Terminal& terminal);

}  // namespace laggard

#endif  // LAGGARD_CLI_DIAGNOSE_H_
