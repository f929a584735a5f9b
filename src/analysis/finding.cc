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
