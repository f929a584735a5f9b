#include "analysis/traces/host_gaps.h"

#include <fmt/format.h>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

std::optional<double> UnlaunchedShare(const TraceStep& s) {
  if (!s.idle_unlaunched_ns || s.end_ns <= s.start_ns) return std::nullopt;
  return static_cast<double>(*s.idle_unlaunched_ns) / static_cast<double>(s.end_ns - s.start_ns);
}

}  // namespace

HostGapComparison CompareHostGaps(const RankTrace& suspect,
                                  const std::vector<const RankTrace*>& peers) {
  HostGapComparison h;
  if (!suspect.idle_unlaunched_ns || !suspect.idle_queued_ns) return h;
  std::vector<double> unl, que;
  for (const RankTrace* p : peers) {
    if (!p->idle_unlaunched_ns || !p->idle_queued_ns) continue;
    unl.push_back(static_cast<double>(*p->idle_unlaunched_ns));
    que.push_back(static_cast<double>(*p->idle_queued_ns));
  }
  if (unl.empty()) return h;
  h.known = true;
  h.peers = unl.size();
  h.unlaunched_ns = *suspect.idle_unlaunched_ns;
  h.queued_ns = *suspect.idle_queued_ns;
  h.peer_unlaunched_ns = static_cast<DurationNs>(*Median(unl));
  h.peer_queued_ns = static_cast<DurationNs>(*Median(que));
  for (const TraceStep& s : suspect.steps) {
    std::optional<double> share = UnlaunchedShare(s);
    if (!share || (h.step && *share <= h.step_share)) continue;
    h.step = s.step;
    h.step_share = *share;
  }
  if (h.step) {
    std::vector<double> shares;
    for (const RankTrace* p : peers) {
      for (const TraceStep& s : p->steps) {
        if (s.step != *h.step) continue;
        if (std::optional<double> share = UnlaunchedShare(s)) shares.push_back(*share);
        break;
      }
    }
    h.peer_step_share = Median(std::move(shares));
  }
  return h;
}

std::string DescribeHostGaps(const HostGapComparison& h) {
  if (!h.known) return "no launch calls linked to their kernels";
  if (h.step) {
    return fmt::format("GPU idle {:.0f}% of step {} with an empty launch queue, peers {}",
                       100 * h.step_share, *h.step,
                       h.peer_step_share ? fmt::format("{:.0f}%", 100 * *h.peer_step_share)
                                         : std::string("unknown"));
  }
  return fmt::format("GPU idle {:.2f} ms with an empty launch queue, peers {:.2f} ms",
                     static_cast<double>(h.unlaunched_ns) / 1e6,
                     static_cast<double>(h.peer_unlaunched_ns) / 1e6);
}

}  // namespace laggard
