// Hang evidence from NCCL RAS reports (model/hang.h RasReport): a process
// RAS could not reach, ranks behind in a communicator's operation counts.
// The hang detector's AnalyzeHang() (analysis/hangs/hang_detector.h, whose
// header states these rules beside its others) calls them.
//
// RAS names ranks within a communicator: they are global ranks only in a
// communicator of the whole job (its size is `world`'s), else they are
// said as "rank N of communicator H".
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_HANGS_HANG_RAS_H_
#define LAGGARD_ANALYSIS_HANGS_HANG_RAS_H_

#include <cstdint>
#include <optional>

#include "analysis/common/finding.h"
#include "analysis/hangs/hang_detector.h"
#include "model/run.h"

namespace laggard {

// What of a RAS report is hang evidence: a process it could not reach, an
// NCCL error, a communicator it could not complete. A MISMATCH of operation
// counts in one query is not: NCCL's collectives outrun RAS's own query
// (the RAS documentation's sample shows 6 ranks one operation behind on a
// job that runs well); it is when the same counts show in two queries, or
// beside other hang evidence.
bool RasShowsProblem(const Run& run);

// hang.process_missing: the processes RAS could not reach (INCOMPLETE) or
// considers dead, the latest word on each, with the ranks it lists as
// missing with them; or only its counts of such processes.
std::optional<Finding> DecideRasLost(const Run& run, std::optional<int32_t> world,
                                     const HangDetectorOptions& o);

// hang.not_joined: ranks whose operation count is behind the
// communicator's highest: they never launched the collectives the others
// launched. From the latest report that details the communicator;
// "persists" when an earlier report gave it the same counts, "resolved"
// when a later complete report no longer details it. One query's counts
// count only where `other` hang evidence stands beside them.
std::optional<Finding> DecideRasBehind(const Run& run, std::optional<int32_t> world, bool other,
                                       const HangDetectorOptions& o);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANGS_HANG_RAS_H_
