// What the hang detector's rules share (hang_detector.cc, hang_transport.cc,
// hang_not_joined.cc, hang_rules.cc): the words for ranks, groups and stacks,
// the confidence a group's evidence earns, and the rules for a rank that
// never joined and a collective every rank is stuck in. Internal to
// analysis/hangs/.

#ifndef LAGGARD_ANALYSIS_HANGS_HANG_RULES_H_
#define LAGGARD_ANALYSIS_HANGS_HANG_RULES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/hangs/hang_detector.h"
#include "analysis/hangs/hang_groups.h"

namespace laggard::hang_internal {

// A group's finding from every member's dump, from some members' dumps, or
// from log lines only.
inline constexpr double kConfidenceAllDumps = 0.85;
inline constexpr double kConfidencePartial = 0.6;
inline constexpr double kConfidenceLines = 0.5;

// "0, 1, 3" (at most `max`, then "(+N more)"); "rank 2" / "ranks 0, 1, 3".
std::string RankList(const std::vector<int32_t>& ranks, size_t max);
std::string Ranks(const std::vector<int32_t>& ranks, size_t max);
// A Flight Recorder entry's stack, its first four frames.
std::string FramesText(const std::vector<StackFrame>& frames);
// "process group 0 (default_pg)"; a group matched by pg_config other than
// the default one also by its ranks, since one description can name
// several groups: "process group 2 / 1 (DATA_PARALLEL_GROUP, ranks 1, 3,
// 5, 7)".
std::string GroupName(const HangGroupState& g);
// kConfidenceAllDumps, kConfidencePartial or kConfidenceLines, by where the
// group's states come from.
double ConfidenceOf(const HangGroupState& g);
// A rank's last enqueued / completed / started collective and its stack.
void AddStateEvidence(Finding& f, const HangRankState& s);
// Evidence not tied to the group decided: how the groups were matched.
void AddMatchingEvidence(Finding& f, size_t dumps_without_config);

// Ranks that never reached the collective their group waits in. Ranks
// behind by their own dump's last enqueued are hang.host_stopped, across
// every group that shows them; otherwise the first group's are
// hang.not_joined.
std::optional<Finding> DecideNotJoined(const std::vector<HangGroupState>& groups,
                                       const HangDetectorOptions& o);

// A collective every member enqueued and none completed: the GPU or the
// network side. Where several groups show one, the others queue behind
// it: the one every member's GPU started comes first, then the one
// enqueued first. `started_only`: beside a finding already decided, only
// a collective every member's GPU started stands on its own; the others
// queue behind what that finding names.
std::optional<Finding> DecideStuck(const std::vector<HangGroupState>& groups, bool started_only,
                                   const HangDetectorOptions& o);

}  // namespace laggard::hang_internal

#endif  // LAGGARD_ANALYSIS_HANGS_HANG_RULES_H_
