// Hang reports that other tools wrote, and watchdog lines that place no
// rank: what the hang detector (analysis/hangs/hang_detector.h) decides from
// them when the groups' progress decides nothing.
//
//   torch's fr_trace analyser   "Not all ranks joining collective N" with
//                               its missing ranks: hang.not_joined (it
//                               compared every rank's dump). "Collective N
//                               ... errors" with "Culprit rank R": a
//                               hang.desync at N that names no rank, since
//                               fr_trace calls every rank that differs from
//                               its reference rank a culprit, and the
//                               reference rank may be the odd one.
//   NCCL NET "collective        the two ends of a connection posted
//   mismatch error"             different sizes: hang.desync between the
//                               host and its peer, neither blamed.
//   watchdog lines without      torch <= 2.1 prints "[Rank M]" (a rank in a
//   a global rank or group      group it does not name) and no time. When
//                               every such line of the stop has one
//                               SeqNum and one timeout, they are one
//                               group's, and different ops (or sizes,
//                               for ops whose sizes must agree) at that
//                               number are a hang.desync in group-rank
//                               words, no global rank named.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_HANGS_HANG_REPORTS_H_
#define LAGGARD_ANALYSIS_HANGS_HANG_REPORTS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/common/finding.h"
#include "model/hang.h"
#include "model/run.h"

namespace laggard {

// "allreduce", "allgatherbase": an op as dumps ("nccl:all_reduce") and
// watchdog lines ("ALLREDUCE", "_ALLGATHER_BASE") spell it, compared alike.
std::string OpKey(std::string_view op);

// Ops (as OpKey gives them) whose input is the same size on every rank.
// Others may differ by design: all_to_all splits, coalesced groups,
// gather / scatter lists, send / recv, a list all_gather.
bool SizesMustAgree(std::string_view key);

std::optional<Finding> DecideFrTrace(const std::vector<HangEvent>& events);
// With the step logs of >= 3 ranks in `run`, all ending at one step but
// one that logged a step beyond: that rank went past the collective the
// others were in, called a different one, and is named (a real gloo job
// whose rank skipped an all-reduce: tests/data/hangs/gloo_ddp_skip).
std::optional<Finding> DecideNetSizeMismatch(const Run& run, const std::vector<HangEvent>& events);
std::optional<Finding> DecideUnplacedMismatch(const std::vector<HangEvent>& events);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANGS_HANG_REPORTS_H_
