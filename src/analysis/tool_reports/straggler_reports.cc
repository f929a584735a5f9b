#include "analysis/tool_reports/straggler_reports.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "analysis/tool_reports/nvrx_reports.h"
#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

// A data loader is a suspect when its slowest get_batch is this share of an
// iteration's round trip and this many times the fastest rank's.
constexpr double kDataShareOfStep = 0.05;
constexpr double kDataRatio = 3.0;
// A fastest get_batch under this (ms) loads no data.
constexpr double kDataLoads = 0.05;

constexpr std::string_view kTool = "Megatron's StragglerDetector";

// The same report: the same time and extremes (a log and its copy).
bool Same(const ToolReport& a, const ToolReport& b) {
  if (a.when != b.when || a.lowest_tflops != b.lowest_tflops) return false;
  for (size_t m = 0; m < kToolMetricCount; ++m) {
    if (a.metrics[m].min != b.metrics[m].min || a.metrics[m].max != b.metrics[m].max) return false;
  }
  return true;
}

// "the report at 2024-10-23 01:29:30 gives round trip 1446.49 ms (rank 13)
// to 1570.32 ms (rank 30)": one metric's extremes as read.
Evidence Extremes(const ToolReport& r, ToolMetric metric, std::string_view words) {
  const ToolExtremes& m = r.metric(metric);
  return Evidence{fmt::format("the report{} gives {} {:.2f} ms (rank {}) to {:.2f} ms (rank {})",
                              r.when.empty() ? "" : " at " + r.when, words, m.min->value,
                              m.min->rank, m.max->value, m.max->rank),
                  r.src};
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
  auto spread_of = [](const ToolReport& r) {
    const ToolExtremes& rtt = r.metric(ToolMetric::kRoundTripMs);
    return rtt.max->value / rtt.min->value - 1;
  };
  ToolSlowestRank s;
  s.reports = static_cast<int>(reports.size());
  const ToolReport* widest = &reports.front();
  for (const ToolReport& r : reports) {
    if (spread_of(r) > spread_of(*widest)) widest = &r;
  }
  Finding f;
  f.code = FindingCode::kToolStragglerReport;
  auto times = [](const ToolReport& r) {
    const ToolExtremes& rtt = r.metric(ToolMetric::kRoundTripMs);
    return fmt::format(
        "{:.2f} ms of timed forward work per iteration on rank {} against {:.2f} "
        "ms on rank {}{}",
        rtt.max->value, rtt.max->rank, rtt.min->value, rtt.min->rank,
        r.when.empty() ? "" : " at " + r.when);
  };
  if (spread_of(*widest) < kToolMaterialSpread) {
    // Every report's extremes bound all ranks of its interval.
    s.even = true;
    s.rank = widest->metric(ToolMetric::kRoundTripMs).max->rank;
    s.spread = spread_of(*widest);
    out = s;
    f.entity.rank = s.rank;
    f.severity = Severity::kInfo;
    f.confidence = kToolEvenConfidence;
    f.message = fmt::format(
        "{}: every rank's round trip lies within {:.1f}% of every other's {} (the widest: {}): "
        "no straggler by its measure in the intervals it reported",
        kTool, 100 * s.spread, s.reports == 1 ? "in its only report" : "in each of its reports",
        times(*widest));
    f.evidence.push_back(Extremes(*widest, ToolMetric::kRoundTripMs, "round trips"));
    return f;
  }
  auto top = MostOften(reports, [](const ToolReport& r) -> std::optional<int32_t> {
    return r.metric(ToolMetric::kRoundTripMs).max->rank;
  });
  s.rank = top->first;
  s.named = top->second;
  std::vector<double> spreads, gaps;
  const ToolReport* last = nullptr;
  for (const ToolReport& r : reports) {
    if (r.metric(ToolMetric::kRoundTripMs).max->rank != s.rank) continue;
    spreads.push_back(spread_of(r));
    last = &r;
    const std::vector<RankValue>& low = r.lowest_tflops;
    if (low.size() >= 2 && low[0].rank == s.rank && low[0].value > 0) {
      gaps.push_back(low[1].value / low[0].value - 1);
    }
  }
  s.spread = Median(spreads).value_or(0);
  s.gap = Median(gaps);
  s.consistent = s.reports >= kToolMinReports && s.named >= kToolConsistentShare * s.reports &&
                 static_cast<int>(gaps.size()) >= kToolMinReports && *s.gap >= kToolMaterialSpread;
  out = s;
  f.entity.rank = s.rank;
  f.slowdown = s.consistent ? *s.gap : s.spread;
  std::string head = fmt::format(
      "{} names rank {} slowest {}, {}{:.1f}% behind the fastest rank "
      "({})",
      kTool, s.rank, InReports(s.named, s.reports), s.named > 1 ? "a median " : "", 100 * s.spread,
      times(*last));
  if (s.consistent) {
    f.severity = Severity::kWarning;
    f.confidence = kToolConsistentConfidence;
    f.message = fmt::format(
        "{}; alone: its Bottom throughput lists put it a median {:.1f}% below the next lowest rank",
        head, 100 * *s.gap);
  } else {
    f.severity = Severity::kInfo;
    f.confidence = kToolUnconfirmedConfidence;
    std::string why;
    if (s.reports < kToolMinReports) {
      why = fmt::format(
          "{} cannot tell one slow rank from a spread over all of them: each gives "
          "only the interval's fastest and slowest",
          s.reports == 1 ? "one report" : "so few reports");
    } else if (s.named < kToolConsistentShare * s.reports) {
      why = "the slowest rank changes from report to report";
    } else if (static_cast<int>(gaps.size()) < kToolMinReports) {
      why = fmt::format(
          "without its Bottom N lists (--straggler-minmax-count) the reports cannot show whether "
          "rank {} alone is slow or a group of ranks (a pipeline stage with more work)",
          s.rank);
    } else {
      why = fmt::format(
          "its Bottom N lists put other ranks within {:.1f}% of it: a group of ranks "
          "is as slow (a pipeline stage with more work?), not one",
          100 * *s.gap);
    }
    f.message = head + "; " + why;
    f.next_steps.push_back(
        "run with --log-straggler and --straggler-minmax-count 4 for more logging intervals, or "
        "log per-rank step times (rank, step, time) so that every rank is compared at every step");
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
    // A fastest fetch of ~0 is a rank that loads no data (a middle pipeline
    // stage): no ratio to take.
    if (!data.min || !data.max || !rtt.max || rtt.max->value <= 0 || data.min->value < kDataLoads) {
      continue;
    }
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
  // The report of its slowest fetch among those naming it.
  const ToolReport* worst = nullptr;
  for (const ToolReport& r : suspect) {
    const RankValue& v = *r.metric(ToolMetric::kDataMs).max;
    if (v.rank == rank && (!worst || v.value > worst->metric(ToolMetric::kDataMs).max->value))
      worst = &r;
  }
  const ToolExtremes& data = worst->metric(ToolMetric::kDataMs);
  double rtt = worst->metric(ToolMetric::kRoundTripMs).max->value;
  Finding f;
  f.code = FindingCode::kToolDataLoaderSlow;
  f.entity.rank = rank;
  bool consistent = reports >= kToolMinReports && named >= kToolConsistentShare * reports;
  f.severity = consistent ? Severity::kWarning : Severity::kInfo;
  f.confidence = consistent ? kToolConsistentConfidence : kToolUnconfirmedConfidence;
  f.message = fmt::format(
      "{}: rank {} had the slowest get_batch {}, up to {:.2f} ms, {:.0f}x the fastest rank's "
      "({:.2f} ms) and {:.0f}% of the timed forward work per iteration (one fetch, the "
      "interval's slowest): its data loading is a suspect apart from its GPU",
      kTool, rank, InReports(named, reports), data.max->value, data.max->value / data.min->value,
      data.min->value, 100 * data.max->value / rtt);
  f.evidence.push_back(Extremes(*worst, ToolMetric::kDataMs, "slowest get_batch times"));
  if (consistent) {
    f.next_steps.push_back(fmt::format(
        "check rank {}'s data path: its dataset shard's storage, the data-loader workers and "
        "their CPU cores, and whether prefetching keeps up",
        rank));
  }
  return f;
}

}  // namespace

std::string InReports(int named, int reports) {
  if (reports == 1) return "in its only report";
  return fmt::format("in {} of {} reports", named, reports);
}

ToolReportAnalysis AnalyzeToolReports(const Run& run) {
  ToolReportAnalysis a;
  AnalyzeNvrxReports(run, a.findings, a.nvrx);
  if (run.tool_reports.empty()) return a;
  // Each report once, by file.
  std::map<uint32_t, std::vector<ToolReport>> by_file;
  std::vector<const ToolReport*> seen;
  size_t repeated = 0;
  for (const ToolReport& r : run.tool_reports) {
    if (std::any_of(seen.begin(), seen.end(), [&](const ToolReport* x) { return Same(*x, r); })) {
      ++repeated;
      continue;
    }
    seen.push_back(&r);
    by_file[r.src.file].push_back(r);
  }
  const std::vector<ToolReport>* read = nullptr;
  size_t others = 0;
  for (const auto& [file, reports] : by_file) {
    if (read == nullptr || reports.size() > read->size()) read = &reports;
  }
  for (const auto& [file, reports] : by_file) others += &reports == read ? 0 : reports.size();
  std::vector<Evidence> notes;
  if (repeated > 0) {
    notes.push_back(Evidence{
        fmt::format("{} report{} repeated in another file (a copy of the log) counted once",
                    repeated, repeated == 1 ? "" : "s"),
        std::nullopt});
  }
  if (others > 0) {
    notes.push_back(Evidence{
        fmt::format("{} report{} of {} other file{} not pooled with these {} (another run of the "
                    "job, or a restart): read them alone",
                    others, others == 1 ? "" : "s", by_file.size() - 1,
                    by_file.size() == 2 ? "" : "s", read->size()),
        std::nullopt});
  }
  std::vector<Finding> mine;
  if (auto f = SlowestFinding(*read, a.slowest)) mine.push_back(std::move(*f));
  if (auto f = DataLoaderFinding(*read)) mine.push_back(std::move(*f));
  for (Finding& f : mine) {
    f.evidence.insert(f.evidence.end(), notes.begin(), notes.end());
    a.findings.push_back(std::move(f));
  }
  return a;
}

}  // namespace laggard
