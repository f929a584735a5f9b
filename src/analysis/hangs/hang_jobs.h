// Flight Recorder dumps of more than one job in the inputs: a folder with
// a restarted job's dumps, or two jobs' dumps copied together. Each job's
// process groups are its own, so the hang detector
// (analysis/hangs/hang_detector.h) analyses one job's dumps and says that the
// others were left out; it never matches groups across jobs.
//
// Jobs are told apart by what each dump says of itself:
//   world       the size of its default group (pg_config `default_pg`:
//               its ranks, else its size): dumps of different sizes are
//               different jobs
//   rank twice  two dumps of one rank are two jobs; they are split by the
//               dump's place: its folder and its file name without the
//               rank's digits ("run1/nccl_trace_rank_", "run2/...")
// Dumps that neither tells apart stay one job. The job analysed is the
// one with most dumps; on a tie the one whose latest entry is latest.
//
// Thread-safety: pure function.

#ifndef LAGGARD_ANALYSIS_HANGS_HANG_JOBS_H_
#define LAGGARD_ANALYSIS_HANGS_HANG_JOBS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/run.h"

namespace laggard {

struct DumpJob {
  std::vector<size_t> dumps;     // indices into run.hang.dumps
  std::vector<int32_t> ranks;    // the dumps' ranks, ascending, unique
  std::optional<int32_t> world;  // its default group's size, when a dump says
  std::string place;             // "run1/nccl_trace_rank_#" of its first dump
};

// The jobs of run.hang.dumps, the one to analyse first; one job (or none)
// when nothing tells them apart.
std::vector<DumpJob> SplitDumpJobs(const Run& run);

// The input of a hang analysis of `job`: its dumps and the process groups
// they gave, with the run's hang lines, RAS reports and NCCL rank lines.
// Step times and traces are not tied to a job, so they are left out.
Run RunOfDumpJob(const Run& run, const DumpJob& job);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANGS_HANG_JOBS_H_
