// `laggard inspect PATH...`: what ingest made of each input file, without a
// diagnosis. Per file: the reader that took it (or why it was skipped), the
// records it gave (steps, ranks, profiler-trace events, GPU samples, network
// records) and the data-quality counts of its reading; then the run the
// files merge into. Text by default, --json for a stable document
// (schema laggard.inspect/1, docs/input-formats.md "Inspecting inputs").
// No detector runs. It takes diagnose's ingest options (cli/ingest_flags.h),
// so a file reads here as diagnose reads it.
//
// Exit codes as diagnose's: 0 when some input gave data, 2 when none did or
// on bad usage. Called from RunLaggard() on the main thread.

#ifndef LAGGARD_CLI_INSPECT_H_
#define LAGGARD_CLI_INSPECT_H_

#include <ostream>
#include <string>
#include <vector>

#include "cli/ingest_flags.h"

namespace CLI {
class App;
}

namespace laggard {

struct InspectOptions {
  std::vector<std::string> paths;
  // "": text on stdout; "-": the JSON on stdout instead; else the JSON to
  // this file and the text on stdout.
  std::string json_out;
  IngestFlags input;
};

// Adds the paths, --json and the ingest flags to `cmd`.
void AddInspectFlags(CLI::App* cmd, InspectOptions& options);
int Inspect(const InspectOptions& options, std::ostream& out, std::ostream& err);

}  // namespace laggard

#endif  // LAGGARD_CLI_INSPECT_H_
