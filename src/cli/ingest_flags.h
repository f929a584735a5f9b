// The command-line options that shape ingest, shared by `laggard diagnose`
// and `laggard inspect` so both read the same inputs the same way: how a
// file's rank and host are found, which step lines and trace ranges count,
// which kernels communicate, how many files are read at once.
//
// Called from the CLI's main thread only.

#ifndef LAGGARD_CLI_INGEST_FLAGS_H_
#define LAGGARD_CLI_INGEST_FLAGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ingest/ingest.h"
#include "model/run.h"
#include "mpi/mpi_ingest.h"

namespace CLI {
class App;
}

namespace laggard {

struct IngestFlags {
  // The flags Ingest() takes as they are. diagnose also sets split_jobs (tell
  // the jobs in the files apart) and job (--job N, else the one with the
  // most ranks); `progress` is given per call.
  IngestOptions ingest;
  // The step-line regex: it makes the text readers (MakeDefaultTextReaders).
  std::optional<std::string> step_pattern;
};

// Adds --rank-from, --file-ranks, --host-from, --step-pattern,
// --step-marker, --comm-kernel and --threads to `cmd`, bound to `flags`.
void AddIngestFlags(CLI::App* cmd, IngestFlags& flags);

// Reads `paths` with the standard readers (MakeDefaultTextReaders with
// --step-pattern, MakeDefaultTraceReaders) and the options of `flags`.
// `progress` is IngestOptions::progress (may be empty); `file_facts` as in
// Ingest(). Fails when --step-pattern does not compile or Ingest() fails;
// the message is ready to print after "laggard: ".
StatusOr<Run> IngestWithFlags(const std::vector<std::string>& paths, const IngestFlags& flags,
                              std::function<void(size_t, size_t, uint64_t)> progress = {},
                              std::vector<FileFacts>* file_facts = nullptr);

// IngestWithFlags() across the processes of an MPI job (diagnose --mpi,
// mpi/mpi_ingest.h): the Run on process 0, nullopt on the others. `report`
// is filled with the shares and the bytes gathered.
StatusOr<std::optional<Run>> IngestWithFlagsOverMpi(
    const std::vector<std::string>& paths, const IngestFlags& flags, double timeout_s,
    std::function<void(size_t, size_t, uint64_t)> progress, MpiIngestReport* report);

}  // namespace laggard

#endif  // LAGGARD_CLI_INGEST_FLAGS_H_
