// The verdict's host CPU rules (host.cpu_contention, analysis/
// host_cpu_detector.h): a culprit whose process waited for a CPU was made
// slow by its host; where step times and traces name no culprit, a rank
// that waits for a CPU while its peers do not is one. Internal to
// src/verdict/.

#include <algorithm>

#include <fmt/format.h>

#include "verdict/verdict_helpers.h"

namespace laggard::verdict_internal {
namespace {

const Finding* ContentionOf(const Analyses& a, int32_t rank) {
  for (const Finding& f : a.host_cpu.findings) {
    if (f.entity.rank == rank) return &f;
  }
  return nullptr;
}

}  // namespace

bool EnrichHostCpu(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps) {
  if (a.host_cpu.findings.empty()) return false;
  std::vector<int32_t> ranks = c.ranks;
  if (ranks.empty() && c.entity.rank) ranks.push_back(*c.entity.rank);
  if (ranks.empty()) return false;
  const Finding* best = nullptr;
  size_t waiting = 0;
  for (int32_t r : ranks) {
    const Finding* f = ContentionOf(a, r);
    if (f == nullptr) continue;
    ++waiting;
    if (best == nullptr || f->slowdown.value_or(0) > best->slowdown.value_or(0)) best = f;
  }
  if (best == nullptr) return false;
  c.evidence.push_back(best->evidence.front().text);
  // A cause already observed on the GPU or the network stays; so does a
  // group of which some ranks do not wait.
  bool observed = c.cause && *c.cause != "host_contention";
  bool explains = !c.slowdown || best->slowdown.value_or(0) >= 0.5 * *c.slowdown;
  if (observed || waiting < ranks.size() || !explains) {
    c.evidence.push_back(
        fmt::format("host CPU: the wait for a CPU explains part of it (+{:.0f}% of {:.0f}%)",
                    100 * best->slowdown.value_or(0), 100 * c.slowdown.value_or(0)));
    return true;
  }
  c.cause_class = CauseClass::kHostStall;
  c.cause = "host_contention";
  c.confidence = Raised(std::max(c.confidence, best->confidence), kCauseObservedGain);
  // The traces' "check its GPU / hardware" gives way to the host's step.
  for (const Finding& t : a.traces.findings) {
    if (t.code == FindingCode::kTraceComputeSlow && t.entity.rank &&
        std::find(ranks.begin(), ranks.end(), *t.entity.rank) != ranks.end())
      RemoveSteps(next_steps, t.next_steps);
  }
  PutStepsFirst(next_steps, best->next_steps);
  return true;
}

std::vector<Culprit> HostCpuCulprits(const Analyses& a) {
  std::vector<Culprit> out;
  for (const Finding& f : a.host_cpu.findings) {
    Culprit c;
    c.entity = f.entity;
    c.cause_class = CauseClass::kHostStall;
    c.cause = f.cause;
    c.slowdown = f.slowdown;
    c.confidence = std::min(f.confidence, kSingleSourceCap);
    for (const Evidence& e : f.evidence) c.evidence.push_back(e.text);
    out.push_back(std::move(c));
  }
  return out;
}

bool PreferHostCpu(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps) {
  if (v.status != VerdictStatus::kStraggler || a.host_cpu.findings.empty()) return false;
  double waited = a.host_cpu.findings.front().slowdown.value_or(0);
  auto unexplained = [&](const Culprit& c) {
    return c.cause_class == CauseClass::kUnknown && c.entity.rank && c.ranks.size() <= 1 &&
           c.slowdown.value_or(0) < waited && ContentionOf(a, *c.entity.rank) == nullptr;
  };
  if (v.culprits.empty() || !std::all_of(v.culprits.begin(), v.culprits.end(), unexplained))
    return false;
  std::string dropped;
  for (const Culprit& c : v.culprits) {
    dropped += fmt::format("{}rank {} ({:+.0f}%)", dropped.empty() ? "" : ", ", *c.entity.rank,
                           100 * c.slowdown.value_or(0));
  }
  std::vector<Culprit> host = HostCpuCulprits(a);
  host.front().evidence.push_back(fmt::format(
      "step times alone point at {} with no cause; the wait for a CPU measured here is the larger "
      "slowdown, and explained",
      dropped));
  v.culprits = std::move(host);
  PutStepsFirst(next_steps, a.host_cpu.findings.front().next_steps);
  return true;
}

}  // namespace laggard::verdict_internal
