// The words of a verdict: the serialized names of its enums, its
// confidence word, and the summary line that names its culprits and their
// cause.

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "verdict/verdict.h"
#include "verdict/verdict_internal.h"

namespace laggard {

std::string_view ImpactMethodName(ImpactMethod m) {
  switch (m) {
    case ImpactMethod::kUpperBound: return "upper_bound";
    case ImpactMethod::kReplay: return "replay";
    case ImpactMethod::kLowerBound: return "lower_bound";
    case ImpactMethod::kBeforeAfter: return "before_after";
    case ImpactMethod::kSlowSteps: return "slow_steps";
  }
  return "upper_bound";
}

std::string_view VerdictStatusName(VerdictStatus s) {
  switch (s) {
    case VerdictStatus::kStraggler: return "straggler";
    case VerdictStatus::kNoStraggler: return "no_straggler";
    case VerdictStatus::kInconclusive: return "inconclusive";
    case VerdictStatus::kJobWide: return "job_wide";
    case VerdictStatus::kCommBound: return "communication_bound";
    case VerdictStatus::kHang: return "hang";
  }
  return "inconclusive";
}

std::string_view ConfidenceWord(double c) {
  if (c >= kHighConfidence) return "high";
  if (c >= kMediumConfidence) return "medium";
  return "low";
}

namespace verdict_internal {
namespace {

std::string_view CauseClassWords(CauseClass c) {
  switch (c) {
    case CauseClass::kComputeSlow: return "compute-slow";
    case CauseClass::kCommunication: return "communication";
    case CauseClass::kHostStall: return "host stall";
    case CauseClass::kExternal: return "external interference";
    case CauseClass::kImbalance: return "workload imbalance";
    case CauseClass::kUnknown:
    case CauseClass::kCount: break;
  }
  return "cause unknown";
}

std::string CauseWords(const Culprit& c) {
  std::string s(CauseClassWords(c.cause_class));
  if (c.cause) s += ": " + *c.cause;
  return s;
}

std::string CulpritName(const Culprit& c) {
  if (c.ranks.size() > 1) {
    if (c.cause == "shared_switch" && c.entity.switch_name) {
      return fmt::format("the hosts of switch {} (ranks {})", *c.entity.switch_name,
                         RankListText(c.ranks));
    }
    if (!c.entity.rank && c.entity.host)
      return fmt::format("{} (ranks {})", *c.entity.host, RankListText(c.ranks));
    return fmt::format("ranks {}", RankListText(c.ranks));
  }
  if (c.entity.rank) return EntityName(c.entity);
  if (c.entity.job && !c.entity.host) return "the whole job";
  std::string s = c.entity.host.value_or("unknown host");
  if (c.entity.nic) s += fmt::format(" ({})", *c.entity.nic);
  return s;
}

}  // namespace

std::string StragglerSummary(const Verdict& v) {
  const Culprit& top = v.culprits.front();
  std::string s = fmt::format("verdict: {} {} — {}", CulpritName(top),
                              top.ranks.size() > 1 ? "are the stragglers" : "is the straggler",
                              CauseWords(top));
  if (top.slowdown && top.entity.rank) s += fmt::format(" ({:+.0f}%)", 100 * *top.slowdown);
  s += fmt::format(", confidence {}", ConfidenceWord(top.confidence));
  s += CostPhrase(v);
  for (size_t i = 1; i < v.culprits.size() && i < 3; ++i) {
    const Culprit& c = v.culprits[i];
    s += fmt::format("; also {} — {} (confidence {})", CulpritName(c), CauseWords(c),
                     ConfidenceWord(c.confidence));
  }
  if (v.culprits.size() > 3) s += fmt::format("; and {} more", v.culprits.size() - 3);
  return s;
}

}  // namespace verdict_internal
}  // namespace laggard

namespace laggard {

std::string CulpritNameOf(const Culprit& c) { return verdict_internal::CulpritName(c); }

}  // namespace laggard
