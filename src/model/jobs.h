// Jobs: the training jobs that the files given hold, when there is more than
// one (ingest/jobs.h tells them apart). A run's analysis covers one job; the
// others are listed here, and their files are counted in data quality
// (job.other, job.unplaced) but not read into the diagnosis.

#ifndef LAGGARD_MODEL_JOBS_H_
#define LAGGARD_MODEL_JOBS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/time.h"

namespace laggard {

// One job found among the files.
struct JobInfo {
  uint32_t files = 0;                 // files read into it: the job's own and those tied by host
  std::string first_file;             // the first of them, in file order
  std::string what;                   // what they hold: "2 Kineto traces, 1 step log"
  std::optional<int32_t> world_size;  // the world size the files state
  uint32_t ranks = 0;                 // ranks with data (steps, traces, op-timeline workers)
  std::optional<TimeNs> first_ns, last_ns;  // wall-clock span of its timed records
  std::vector<std::string> hosts;           // sorted
  uint64_t bytes = 0;
};

struct JobSplit {
  std::vector<JobInfo> jobs;    // in the order of their first file; empty or one: one job
  size_t chosen = 0;            // the job analysed (index into jobs)
  bool chosen_by_flag = false;  // named with --job, not the default (the most ranks)
  uint32_t unplaced = 0;        // files no evidence ties to one job: in none of them

  bool several() const { return jobs.size() > 1; }
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_JOBS_H_
