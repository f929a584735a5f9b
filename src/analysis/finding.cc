#include "analysis/finding.h"

#include <iterator>

namespace laggard {
namespace {

constexpr FindingInfo kCatalogue[] = {
    {"step.straggler", Severity::kCritical, "rank slower than its peers"},
    {"step.synchronised", Severity::kWarning,
     "step times are synchronised across ranks: they cannot name the culprit"},
    {"step.job_slowdown", Severity::kWarning, "the whole job slowed down"},
    {"step.periodic_slowdown", Severity::kWarning, "slowdowns recur periodically"},
    {"step.jitter", Severity::kInfo, "rare slow steps on random ranks"},
    {"step.no_peers", Severity::kWarning, "no peers to compare with"},
    {"trace.late_arrival", Severity::kCritical, "rank arrives last at the collectives"},
    {"trace.compute_slow", Severity::kCritical, "rank's kernels run slower than a healthy peer's"},
    {"trace.host_stall", Severity::kCritical,
     "kernels are normal but the rank idles before launching them"},
    {"trace.comm_bound", Severity::kWarning,
     "no late rank; collective transfers take much of every step"},
    {"trace.clock_offsets", Severity::kInfo, "rank clocks disagree; offsets were removed"},
    {"trace.no_match", Severity::kWarning, "no collective could be matched across ranks"},
};
static_assert(std::size(kCatalogue) == static_cast<size_t>(FindingCode::kCount));

}  // namespace

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "info";
}

const FindingInfo& Describe(FindingCode code) { return kCatalogue[static_cast<size_t>(code)]; }

}  // namespace laggard
