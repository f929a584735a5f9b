// Tells apart the training jobs that the files given hold, before they are
// merged into one Run: a folder with a restarted run copied beside the
// first, two runs' traces together, or sample files of several tools must
// not give one verdict about "the job" (a healthy rank of one job compared
// with another job's ranks is blamed for their difference).
//
// Each file read gives keys (KeysOfFile): what it holds, the world size it
// states (a profiler trace's distributedInfo, an op timeline's layout, a
// launch log's layout line), the wall-clock span of its timed records
// (steps with a start time, trace ops on the host's clock; times before
// 2000 or more than a day after now are not wall clock), its ranks, hosts,
// and the first steps of each rank (StepPrint).
//
// Job files (steps, traces, op timelines, other tools' reports, hang
// evidence) are grouped by evidence only (AssignJobs):
//   1. files stating the same world size are one job unless their spans lie
//      more than kJobGapNs apart (then one job per span) and no timed file
//      spans both; different world sizes are different jobs;
//   2. a timed file stating no world size joins the one job whose span lies
//      within kJobGapNs of its own (and whose world holds its ranks; when
//      several do, the one its span overlaps); with none, such files form
//      jobs of their own: files whose spans overlap are one episode, and
//      the next episode within kJobGapNs is another job only when it names
//      some of the ranks seen so far but not the same set (a run of another
//      size after the first); the same ranks again are a restart, other
//      ranks other nodes of the job timed a little apart;
//   3. an untimed file stating no world size joins the job when there is
//      one;
//   4. machine files (GPU metrics, network data) join the job when there is
//      one, else the one job whose hosts they name;
//   5. runs side by side (jobs_folders.cc): within a job, folders that
//      disagree on the same rank's steps (step records, and profiler traces'
//      steps apart) at every small step offset are split apart; folders
//      that agree or share no step are clustered, nearest folders first;
//      folders of the same ranks, one's span after the other's, are a
//      restart and stay together.
// A file that fits several jobs goes with the one whose files share its
// folder most closely, else it is in no job: job.unplaced, never guessed.
// One job or none: every file is read, as if nothing were split. Two runs
// of the same ranks in one folder cannot be told apart: their records
// collide (step.duplicate, trace.duplicate_rank).

#ifndef LAGGARD_INGEST_JOBS_H_
#define LAGGARD_INGEST_JOBS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/jobs.h"
#include "model/run.h"

namespace laggard {

// Spans further apart than this are different jobs (two days: a restart
// after a long queue, and timestamps of local time read as UTC, stay one).
inline constexpr DurationNs kJobGapNs = 48LL * 3600 * 1'000'000'000;

struct JobKeys {
  enum class Kind : uint8_t {
    kNone,     // nothing read (unrecognised, empty, unreadable)
    kMachine,  // GPU metrics or network data only
    kJob,      // steps, traces, op timelines, reports or hang evidence
  };
  Kind kind = Kind::kNone;
  std::string what;  // "Kineto trace", "step log", "GPU metrics file", ...
  std::optional<int32_t> world_size;
  std::optional<TimeNs> first_ns, last_ns;
  std::vector<int32_t> ranks;      // sorted, unique
  uint32_t unranked = 0;           // traces, workers or step series of no rank
  std::vector<std::string> hosts;  // sorted, unique
  uint64_t bytes = 0;
  // The first kPrintSteps steps of each rank, from step records and from
  // profiler traces apart (source 0 and 1: they time a step differently):
  // two runs copied side by side disagree on them, two views of one run (a
  // log and a CSV) agree.
  struct StepPrint {
    int32_t rank;
    uint8_t source;
    int64_t step;
    DurationNs duration_ns;
  };
  static constexpr size_t kPrintSteps = 32;
  std::vector<StepPrint> prints;
};

// The keys of one file's reading (its steps flushed).
JobKeys KeysOfFile(const RunBuilder& b, uint64_t bytes);

// A file in no job: the evidence could not place it (job.unplaced).
inline constexpr int32_t kUnplacedFile = -1;

struct JobAssignment {
  JobSplit split;
  // Per file: its job (index into split.jobs), or kUnplacedFile. Files of
  // kind kNone are in the chosen job; every file is in job 0 when there is
  // one job or none.
  std::vector<int32_t> job_of_file;
};

// Groups `files` (parallel to `paths`) into jobs and chooses the one to
// analyse: `wanted` (1-based, --job) when it names one, else the largest:
// the most ranks, then the most files, then the most bytes, then the first.
// A `wanted` beyond the jobs found leaves the default chosen and
// chosen_by_flag false: the caller says so.
JobAssignment AssignJobs(const std::vector<JobKeys>& files, const std::vector<std::string>& paths,
                         std::optional<int32_t> wanted);

// Notes each file left out of `run` (another job's: job.other; placed in
// none: job.unplaced) in its diagnostics and sets run.jobs. Nothing when
// there is one job or none.
void NoteLeftOut(JobAssignment& jobs, Run& run);

}  // namespace laggard

#endif  // LAGGARD_INGEST_JOBS_H_
