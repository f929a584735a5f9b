// `laggard diagnose --mpi`: the ingest of one diagnosis spread over the
// processes of an Open MPI job (mpirun or srun). Every process lists the same
// files (PlanIngest), takes its share (AssignShares: by bytes, a rank's
// files together), reads it with its threads, and sends what it read to
// process 0 (share_wire.h); process 0 merges every file's result in file
// order, as the single-process Ingest() does, and runs the detectors, the
// verdict and the reports on it. The report is the same, byte for byte.
//
// No process waits forever: one that hears nothing for the timeout (process
// 0: the next share; the others: process 0 taking theirs) aborts the whole
// job with MPI_Abort and a message naming whom it waited for.
//
// Called from the CLI's main thread (MPI_THREAD_FUNNELED); MPI is
// initialised and finalised inside.

#ifndef LAGGARD_MPI_MPI_INGEST_H_
#define LAGGARD_MPI_MPI_INGEST_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "ingest/ingest.h"
#include "model/run.h"

namespace laggard {

struct MpiIngestOptions {
  // Seconds without a message before a process aborts the job. Process 0
  // counts from the end of its own reading and from each share it takes; a
  // process waiting for process 0 allows this plus twice its own reading
  // time, since process 0 reads a share of the same size first.
  double timeout_s = 600;
};

// What the distributed ingest did, for the progress line and the benches.
struct MpiIngestReport {
  int processes = 1;
  int process = 0;                      // this process
  std::vector<uint64_t> share_files;    // per process
  std::vector<uint64_t> share_bytes;    // per process: input bytes of its files
  std::vector<uint64_t> message_bytes;  // per process: its share message (0 for process 0)
  uint64_t bytes_gathered = 0;          // sum of message_bytes
  double read_s = 0;                    // this process's reading
  double gather_s = 0;                  // process 0: from its reading's end to the last share
};

// Whether this laggard was built with Open MPI (the LAGGARD_MPI CMake option).
bool MpiBuilt();

// Reads `plan`'s files across the MPI job. Returns the merged Run on process
// 0 and nullopt on the others. An error when MPI is not built in or a share
// does not decode; an unreadable input file is a data-quality entry, as in
// Ingest().
StatusOr<std::optional<Run>> IngestOverMpi(const IngestPlan& plan,
                                           const std::vector<const TextReader*>& readers,
                                           const std::vector<const TraceReader*>& trace_readers,
                                           const IngestOptions& options,
                                           const MpiIngestOptions& mpi,
                                           MpiIngestReport* report = nullptr);

}  // namespace laggard

#endif  // LAGGARD_MPI_MPI_INGEST_H_
