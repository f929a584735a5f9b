#include "analysis/tool_reports/straggler_reports.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "analysis/robust_stats.h"

namespace laggard {
namespace {

// A data loader is a suspect when its slowest get_batch is this share of an
// iteration's round trip and this many times the fastest rank's.
constexpr double kDataShareOfStep = 0.05;
constexpr double kDataRatio = 3.0;

constexpr std::string_view kTool = "Megatron's StragglerDetector";

// "the report at 2024-10-23 01:29:30 gives round trip 1446.49 ms (rank 13)
// to 1570.32 ms (rank 30)": one metric's extremes as read.
Evidence Extremes(const ToolReport& r, ToolMetric metric, std::string_view words) {
  const ToolExtremes& m = r.metric(metric);
  return Evidence{fmt::format("the report{} gives {} {:.2f} ms (rank {}) to {:.2f} ms (rank {})",
                              r.when.empty() ? "" : " at " + r.when, words, m.min->value,
                              m.min->rank, m.max->value, m.max->rank),
                  r.src};
}

std::string InReports(int named, int reports) {
  if (reports == 1) return "in its only report";
  return fmt::format("in {} of {} reports", named, reports);
}

// The rank most often at `pick` among the reports, with its count; ties go
// to the lower rank.
template <typename Pick>
std::optional<std::pair<int32_t, int>> MostOften(const std::vector<ToolReport>& reports,
                                                 Pick pick) {
  std::map<int32_t, int> count;
  for (const ToolReport& r : reports) {
    if (std::optional<int32_t> rank = pick(r)) ++count[*rank];
  }
  std::optional<std::pair<int32_t, int>> best;
  for (const auto& [rank, n] : count) {
    if (!best || n > best->second) best = std::pair{rank, n};
  }
  return best;
}

// What the other extremes of the reports naming `rank` slowest say about
// its GPU: the lowest clock, the highest temperature ...
std::vector<Evidence> GpuExtremes(const std::vector<ToolReport>& reports, int32_t rank, int named) {
  struct Kind {
    ToolMetric metric;
    bool min;
    std::string_view words;
  };
  constexpr Kind kKinds[] = {
      {ToolMetric::kClockMhz, true, "the lowest SM clock"},
      {ToolMetric::kTempC, false, "the highest GPU temperature"},
      {ToolMetric::kPowerW, true, "the lowest GPU power"},
      {ToolMetric::kUtilPct, true, "the lowest GPU utilisation"},
  };
  std::vector<Evidence> out;
  for (const Kind& k : kKinds) {
    int held = 0;
    const ToolReport* last = nullptr;
    for (const ToolReport& r : reports) {
      const auto& rtt = r.metric(ToolMetric::kRoundTripMs).max;
      const auto& v = k.min ? r.metric(k.metric).min : r.metric(k.metric).max;
      if (rtt && rtt->rank == rank && v && v->rank == rank) {
        ++held;
        last = &r;
      }
    }
    if (held == 0) continue;
    out.push_back(Evidence{fmt::format("rank {} also had {} in {} of the {} reports naming it "
                                       "slowest",
                                       rank, k.words, held, named),
                           last->src});
  }
  return out;
}

// The Bottom N list of the last report that printed one, read for `rank`:
// alone below the others, or one of several as slow.
std::optional<Evidence> BottomList(const std::vector<ToolReport>& reports, int32_t rank) {
  for (auto it = reports.rbegin(); it != reports.rend(); ++it) {
    const std::vector<RankValue>& low = it->lowest_tflops;
    if (low.size() < 2 || low[0].value <= 0) continue;
    double gap = low[1].value / low[0].value - 1;
    std::string text;
    if (low[0].rank != rank) {
      text =
          fmt::format("its Bottom {} throughput list puts rank {} lowest ({:.2f} TF), not rank {}",
                      low.size(), low[0].rank, low[0].value, rank);
    } else if (gap >= kToolMaterialSpread / 2) {
      text = fmt::format(
          "its Bottom {} throughput list puts rank {} alone at {:.2f} TF, the next lowest (rank "
          "{}) {:.1f}% higher",
          low.size(), rank, low[0].value, low[1].rank, 100 * gap);
    } else {
      text = fmt::format(
          "its Bottom {} throughput list has rank {} ({:.2f} TF) within {:.2f}% of rank {}: "
          "several ranks are as slow",
          low.size(), rank, low[0].value, 100 * gap, low[1].rank);
    }
    return Evidence{std::move(text), it->src};
  }
  return std::nullopt;
}

std::optional<Finding> SlowestFinding(const std::vector<ToolReport>& all,
                                      std::optional<ToolSlowestRank>& out) {
  std::vector<ToolReport> reports;
  for (const ToolReport& r : all) {
    const ToolExtremes& rtt = r.metric(ToolMetric::kRoundTripMs);
    if (rtt.min && rtt.max && rtt.min->value > 0) reports.push_back(r);
  }
  if (reports.empty()) return std::nullopt;
  auto top = MostOften(reports, [](const ToolReport& r) -> std::optional<int32_t> {
    return r.metric(ToolMetric::kRoundTripMs).max->rank;
  });
  ToolSlowestRank s;
  s.rank = top->first;
  s.named = top->second;
  s.reports = static_cast<int>(reports.size());
  std::vector<double> spreads;
  const ToolReport* last = nullptr;
  for (const ToolReport& r : reports) {
    const ToolExtremes& rtt = r.metric(ToolMetric::kRoundTripMs);
    if (rtt.max->rank != s.rank) continue;
    spreads.push_back(rtt.max->value / rtt.min->value - 1);
    last = &r;
  }
  s.spread = Median(spreads).value_or(0);
  s.consistent = s.reports >= kToolMinReports && s.named >= kToolConsistentShare * s.reports &&
                 s.spread >= kToolMaterialSpread;
  out = s;

  const ToolExtremes& rtt = last->metric(ToolMetric::kRoundTripMs);
  Finding f;
  f.code = FindingCode::kToolStragglerReport;
  f.entity.rank = s.rank;
  f.slowdown = s.spread;
  std::string times =
      fmt::format("{:.2f} ms per iteration against rank {}'s {:.2f} ms{}", rtt.max->value,
                  rtt.min->rank, rtt.min->value, s.named > 1 ? " in the last" : "");
  if (s.spread < kToolMaterialSpread) {
    f.severity = Severity::kInfo;
    f.confidence = 0.5;
    f.message = fmt::format(
        "{}: the ranks' round trips lie within {:.1f}% of each other {} (slowest rank {}, {}): "
        "no straggler by its measure",
        kTool, 100 * s.spread, InReports(s.named, s.reports), s.rank, times);
  } else if (s.consistent) {
    f.severity = Severity::kWarning;
    f.confidence = 0.6;
    f.message = fmt::format("{} names rank {} slowest {}, a median {:.1f}% behind the fastest ({})",
                            kTool, s.rank, InReports(s.named, s.reports), 100 * s.spread, times);
  } else {
    f.severity = Severity::kInfo;
    f.confidence = 0.3;
    f.message = fmt::format(
        "{} names rank {} slowest {}, {:.1f}% behind the fastest ({}); {}", kTool, s.rank,
        InReports(s.named, s.reports), 100 * s.spread, times,
        s.reports < kToolMinReports
            ? fmt::format("{} cannot tell one slow rank from a spread over all of them: each "
                          "gives only the interval's fastest and slowest",
                          s.reports == 1 ? "one report" : "so few reports")
            : "the slowest rank changes from report to report");
    f.next_steps.push_back(
        "keep --log-straggler on for more logging intervals, or log per-rank step times "
        "(rank, step, time) so that every rank is compared at every step");
  }
  f.evidence.push_back(Extremes(*last, ToolMetric::kRoundTripMs, "round trips"));
  if (auto bottom = BottomList(reports, s.rank)) f.evidence.push_back(std::move(*bottom));
  for (Evidence& e : GpuExtremes(reports, s.rank, s.named)) f.evidence.push_back(std::move(e));
  return f;
}

std::optional<Finding> DataLoaderFinding(const std::vector<ToolReport>& all) {
  std::vector<ToolReport> suspect;  // reports whose slowest get_batch is a suspect
  int reports = 0;
  for (const ToolReport& r : all) {
    const ToolExtremes& data = r.metric(ToolMetric::kDataMs);
    const ToolExtremes& rtt = r.metric(ToolMetric::kRoundTripMs);
    if (!data.min || !data.max || !rtt.max || rtt.max->value <= 0) continue;
    ++reports;
    if (data.max->value >= kDataShareOfStep * rtt.max->value &&
        data.max->value >= kDataRatio * data.min->value) {
      suspect.push_back(r);
    }
  }
  if (suspect.empty()) return std::nullopt;
  auto top = MostOften(suspect, [](const ToolReport& r) -> std::optional<int32_t> {
    return r.metric(ToolMetric::kDataMs).max->rank;
  });
  int32_t rank = top->first;
  int named = top->second;
  const ToolReport* last = nullptr;
  for (const ToolReport& r : suspect) {
    if (r.metric(ToolMetric::kDataMs).max->rank == rank) last = &r;
  }
  const ToolExtremes& data = last->metric(ToolMetric::kDataMs);
  double rtt = last->metric(ToolMetric::kRoundTripMs).max->value;
  Finding f;
  f.code = FindingCode::kToolDataLoaderSlow;
  f.entity.rank = rank;
  bool consistent = reports >= kToolMinReports && named >= kToolConsistentShare * reports;
  f.severity = consistent ? Severity::kWarning : Severity::kInfo;
  f.confidence = consistent ? 0.6 : 0.3;
  std::string ratio = data.min->value > 0
                          ? fmt::format("{:.0f}x the fastest rank's ({:.2f} ms)",
                                        data.max->value / data.min->value, data.min->value)
                          : "the fastest rank's took 0 ms";
  f.message = fmt::format(
      "{}: rank {}'s slowest get_batch took {:.2f} ms {}, {} and {:.0f}% of an iteration's "
      "round trip: its data loading is a suspect apart from its GPU",
      kTool, rank, data.max->value, InReports(named, reports), ratio, 100 * data.max->value / rtt);
  f.evidence.push_back(Extremes(*last, ToolMetric::kDataMs, "slowest get_batch times"));
  f.next_steps.push_back(fmt::format(
      "check rank {}'s data path: its dataset shard's storage, the data-loader workers and "
      "their CPU cores, and whether prefetching keeps up",
      rank));
  return f;
}

}  // namespace

ToolReportAnalysis AnalyzeToolReports(const Run& run) {
  ToolReportAnalysis a;
  if (run.tool_reports.empty()) return a;
  if (auto f = SlowestFinding(run.tool_reports, a.slowest)) a.findings.push_back(std::move(*f));
  if (auto f = DataLoaderFinding(run.tool_reports)) a.findings.push_back(std::move(*f));
  return a;
}

}  // namespace laggard
