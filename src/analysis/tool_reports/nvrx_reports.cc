#include "analysis/tool_reports/nvrx_reports.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

constexpr std::string_view kTool = "NVRx straggler detection";

// One report's relative scores, lowest first (NaN dropped).
std::vector<RankScore> Sorted(const std::vector<RankScore>& scores) {
  std::vector<RankScore> s;
  for (const RankScore& x : scores) {
    if (std::isfinite(x.score) && x.score > 0) s.push_back(x);
  }
  std::stable_sort(s.begin(), s.end(),
                   [](const RankScore& a, const RankScore& b) { return a.score < b.score; });
  return s;
}

std::string Who(const RankScore& r) {
  return r.node.empty() ? fmt::format("rank {}", r.rank)
                        : fmt::format("rank {} ({})", r.rank, r.node);
}

bool Flagged(const std::vector<NvrxReport>& reports, int32_t rank) {
  for (const NvrxReport& r : reports) {
    if (std::find(r.flagged_relative.begin(), r.flagged_relative.end(), rank) !=
        r.flagged_relative.end())
      return true;
  }
  return false;
}

void IndividualFinding(const std::vector<NvrxReport>& reports, std::vector<Finding>& out) {
  const NvrxReport* at = nullptr;
  RankScore low;
  for (const NvrxReport& r : reports) {
    std::vector<RankScore> s = Sorted(r.individual);
    if (!s.empty() && s.front().score < kNvrxDropped &&
        (at == nullptr || s.front().score < low.score)) {
      low = s.front();
      at = &r;
    }
  }
  if (at == nullptr) return;
  Finding f;
  f.code = FindingCode::kToolNvrxReport;
  f.entity.rank = low.rank;
  if (!low.node.empty()) f.entity.host = low.node;
  f.severity = Severity::kInfo;
  f.confidence = kNvrxDroppedConfidence;
  f.cause = "slowed_over_time";  // not a reading of who is slowest
  f.slowdown = 1 / low.score - 1;
  f.message = fmt::format(
      "{}: {}'s GPU individual score fell to {:.2f}: its kernels ran ~{:.0f}% slower than in its "
      "own best interval — a slowdown over time (heat, clocks, another job), whatever its peers",
      kTool, Who(low), low.score, 100 * (1 / low.score - 1));
  f.evidence.push_back(Evidence{f.message, at->src});
  out.push_back(std::move(f));
}

// One report's relative scores as read for the lowest rank.
struct Reading {
  const NvrxReport* report;
  std::vector<RankScore> sorted;
  // How many of `sorted`'s lowest are the job's lowest: all when every
  // rank is listed; with Worst/Best lists, those of the Worst list (the
  // first half as printed), none when a nan there leaves its order open.
  size_t known = 0;
};

// The same report (a log and its copy): the same scores, nodes and flags.
bool Same(const NvrxReport& a, const NvrxReport& b) {
  auto same = [](const std::vector<RankScore>& x, const std::vector<RankScore>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                      [](const RankScore& p, const RankScore& q) {
                        return p.rank == q.rank && p.node == q.node &&
                               (p.score == q.score || (std::isnan(p.score) && std::isnan(q.score)));
                      });
  };
  return same(a.relative, b.relative) && same(a.individual, b.individual) &&
         a.flagged_relative == b.flagged_relative && a.flagged_individual == b.flagged_individual;
}

// Each report once: a copy of a log in another file counts once.
std::vector<Reading> ReadingsOf(const Run& run) {
  std::vector<Reading> readings;
  std::vector<const NvrxReport*> seen;
  for (const NvrxReport& r : run.nvrx_reports) {
    if (std::any_of(seen.begin(), seen.end(), [&](const NvrxReport* x) {
          return x->src.file != r.src.file && Same(*x, r);
        })) {
      continue;
    }
    seen.push_back(&r);
    std::vector<RankScore> s = Sorted(r.relative);
    if (s.size() < 2) continue;
    size_t known = s.size();
    if (r.relative_ranks > static_cast<int32_t>(r.relative.size())) {
      const size_t worst = r.relative.size() / 2;
      bool nan = std::any_of(r.relative.begin(), r.relative.begin() + worst,
                             [](const RankScore& x) { return !std::isfinite(x.score); });
      known = nan ? 0 : worst;
    }
    readings.push_back(Reading{&r, std::move(s), known});
  }
  return readings;
}

// Why the lowest rank `s` is no straggler by NVRx's measure.
std::string WhyNot(const ToolSlowestRank& s, int32_t ranks, bool enough, int alone) {
  if (ranks < 3) return "two ranks: nothing says which of them is the odd one";
  if (!enough) return "the lowest rank changes from report to report";
  if (!s.gap) return "its Worst list shows no second rank to compare it with";
  if (s.reports < 2 && *s.gap >= kToolMaterialSpread && s.spread >= kNvrxSlowerBy)
    return "one report: one interval's kernels decide nothing; it takes two or more";
  if (*s.gap < kToolMaterialSpread) {
    return fmt::format("the next lowest rank is within {:.1f}% of it: several ranks are as slow",
                       100 * *s.gap);
  }
  if (s.spread >= kNvrxSlowerBy) {
    return fmt::format(
        "alone and that slow in only {} of {} reports: one bad interval decides nothing", alone,
        s.reports);
  }
  return fmt::format("less than {:.0f}% slower: within what same-model GPUs differ",
                     100 * kNvrxSlowerBy);
}

}  // namespace

void AnalyzeNvrxReports(const Run& run, std::vector<Finding>& out,
                        std::optional<ToolSlowestRank>& slowest) {
  std::vector<Reading> readings = ReadingsOf(run);
  IndividualFinding(run.nvrx_reports, out);
  if (readings.empty()) return;
  auto range = [](const Reading& x) { return x.sorted.back().score / x.sorted.front().score - 1; };
  ToolSlowestRank s;
  s.reports = static_cast<int>(readings.size());
  const Reading* widest = &readings.front();
  for (const Reading& x : readings) {
    if (range(x) > range(*widest)) widest = &x;
  }
  int32_t ranks = 0;
  for (const Reading& x : readings) ranks = std::max(ranks, x.report->relative_ranks);
  Finding f;
  f.code = FindingCode::kToolNvrxReport;
  if (range(*widest) < kToolMaterialSpread) {
    s.even = true;
    s.rank = widest->sorted.front().rank;
    s.spread = range(*widest);
    slowest = s;
    f.entity.rank = s.rank;
    f.severity = Severity::kInfo;
    f.confidence = kToolEvenConfidence;
    f.message = fmt::format(
        "{}: every rank's GPU relative score lies within {:.1f}% of the best {} (lowest: {} at "
        "{:.2f}, best {:.2f}; {} ranks scored): no straggler by its measure (GPU kernels only: "
        "host, data-loading and network time are not in its scores)",
        kTool, 100 * s.spread, s.reports == 1 ? "in its only report" : "in each of its reports",
        Who(widest->sorted.front()), widest->sorted.front().score, widest->sorted.back().score,
        ranks);
    f.evidence.push_back(Evidence{f.message, widest->report->src});
    out.push_back(std::move(f));
    return;
  }
  std::map<int32_t, int> count;
  for (const Reading& x : readings) ++count[x.sorted.front().rank];
  auto top = std::max_element(count.begin(), count.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  s.rank = top->first;
  s.named = top->second;
  std::vector<double> slower, gaps;
  const Reading* last = nullptr;
  // Reports in which the rank is lowest, alone (the next lowest known, 5%
  // above) and 15% below the best; and in which the two lowest, alone on
  // one node, are.
  int alone = 0, node_alone = 0;
  for (const Reading& x : readings) {
    if (x.sorted.front().rank != s.rank) continue;
    last = &x;
    slower.push_back(range(x));
    const auto& v = x.sorted;
    double gap = v[1].score / v[0].score - 1;
    if (x.known >= 2) gaps.push_back(gap);
    alone += x.known >= 2 && gap >= kToolMaterialSpread && range(x) >= kNvrxSlowerBy;
    node_alone += x.known >= 3 && !v[0].node.empty() && v[0].node == v[1].node &&
                  v[2].node != v[0].node && v[2].score / v[1].score - 1 >= kToolMaterialSpread &&
                  v[2].score / v[0].score - 1 >= kNvrxSlowerBy;
  }
  s.spread = Median(slower).value_or(0);
  s.gap = Median(gaps);
  // Two reports at least: one interval's kernels can be one bad minute.
  const int needed = std::max(2, static_cast<int>(std::ceil(kToolConsistentShare * s.reports)));
  const bool enough = ranks >= 3 && s.named >= kToolConsistentShare * s.reports;
  const bool node_pair = ranks >= 3 && node_alone >= needed;
  s.consistent = ranks >= 3 && alone >= needed;
  const RankScore& low = last->sorted.front();
  f.entity.rank = s.rank;
  if (!low.node.empty()) f.entity.host = low.node;
  f.slowdown = s.spread;
  bool flagged = Flagged(run.nvrx_reports, s.rank);
  std::string head = fmt::format(
      "{} puts {} lowest {}: GPU relative score {:.2f} against the best rank's {:.2f} (its kernels "
      "~{:.0f}% slower){}",
      kTool, Who(low), InReports(s.named, s.reports), low.score, last->sorted.back().score,
      100 * s.spread, flagged ? "; NVRx flags it a straggler" : "");
  if (enough && node_pair) {
    const RankScore& second = last->sorted[1];
    s.consistent = false;  // the node, not one rank
    f.entity.rank.reset();
    f.entity.host = low.node;
    f.ranks = {low.rank, second.rank};
    f.severity = Severity::kWarning;
    f.confidence = kToolConsistentConfidence;
    f.message = fmt::format(
        "{} puts ranks {} and {}, both on node {}, lowest {}: GPU relative scores {:.2f} and "
        "{:.2f} against the best rank's {:.2f}, the next lowest rank {:.2f}: the node, not one GPU",
        kTool, low.rank, second.rank, low.node, InReports(s.named, s.reports), low.score,
        second.score, last->sorted.back().score, last->sorted[2].score);
  } else if (s.consistent) {
    f.severity = Severity::kWarning;
    f.confidence = kToolConsistentConfidence;
    f.message = fmt::format("{}; alone: the next lowest rank scores a median {:.0f}% higher", head,
                            100 * *s.gap);
  } else {
    f.severity = Severity::kInfo;
    f.confidence = kToolUnconfirmedConfidence;
    std::string why = WhyNot(s, ranks, enough, alone);
    f.message = head + "; " + why;
  }
  slowest = s;
  f.evidence.push_back(Evidence{
      fmt::format("the report gives {} ranks' scores, lowest {:.2f} ({}), next {:.2f} ({}), best "
                  "{:.2f} ({})",
                  last->sorted.size(), low.score, Who(low), last->sorted[1].score,
                  Who(last->sorted[1]), last->sorted.back().score, Who(last->sorted.back())),
      last->report->src});
  out.push_back(std::move(f));
}

}  // namespace laggard
