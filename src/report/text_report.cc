// The terminal report: verdict first, then the evidence chain, the job's
// step-time and trace summaries (with a per-rank trace table: every rank of
// a small job, the ranks holding a large one up against the median), then
// findings with their evidence, next steps and data quality. Colour (ANSI)
// only when asked, which the CLI does on a tty without NO_COLOR or TERM=dumb
// (or with --color always). Counts of one are singular ("1 rank").

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"
#include "report/report.h"

namespace laggard {
namespace {

struct Style {
  bool on;
  std::string operator()(std::string_view text, std::string_view code) const {
    if (!on) return std::string(text);
    return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
  }
};

std::string_view SeverityColour(Severity s) {
  switch (s) {
    case Severity::kCritical: return "1;31";
    case Severity::kWarning: return "33";
    case Severity::kInfo: return "36";
  }
  return "0";
}

// "1 rank", "2 ranks".
std::string Count(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string Where(const Run& run, const SourceRef& src) {
  if (src.file >= run.files.size()) return "";
  if (src.line == 0) return run.files[src.file].path;
  return fmt::format("{}:{}", run.files[src.file].path, src.line);
}

// The per-rank trace table: every rank of a small job; of a larger one the
// ranks that hold the others up (the culprits first, then by the delay they
// caused, lateness and compute time) and a median row to read them against.
constexpr size_t kAllTraceRowsUpTo = 8;
constexpr size_t kTopTraceRows = 6;

std::string Pct(DurationNs part, DurationNs window) {
  if (window <= 0) return "-";
  return fmt::format("{:.0f}%", 100.0 * static_cast<double>(part) / static_cast<double>(window));
}

std::string SignedMs(std::optional<double> ms) {
  return ms ? fmt::format("{:+.2f} ms", *ms) : std::string("-");
}

// 1.22 s, 75.5 ms, 1.76 us.
std::string DurationText(DurationNs ns) {
  double v = static_cast<double>(ns);
  if (v >= 1e9) return fmt::format("{:.3g} s", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.3g} ms", v / 1e6);
  return fmt::format("{:.3g} us", v / 1e3);
}

std::optional<double> ToMs(const std::optional<DurationNs>& ns) {
  if (!ns) return std::nullopt;
  return static_cast<double>(*ns) / 1e6;
}

// One row's cells, for a ranked or unranked trace or the median of ranks.
struct TraceRow {
  std::string label, host, steps, window, busy, compute, comm, copy, idle, gap, last, lateness,
      offset;
};

TraceRow BusyRow(std::string label, const TraceBusyStats& t) {
  const DurationNs w = t.window_ns;
  DurationNs copy = t.busy_by_class_ns[static_cast<size_t>(OpClass::kMemcpy)] +
                    t.busy_by_class_ns[static_cast<size_t>(OpClass::kMemset)];
  return TraceRow{std::move(label),
                  t.host.value_or("-"),
                  std::to_string(t.steps),
                  DurationText(w),
                  Pct(t.busy_ns, w),
                  Pct(t.compute_busy_ns, w),
                  Pct(t.comm_busy_ns, w),
                  Pct(copy, w),
                  Pct(t.idle_ns, w),
                  DurationText(t.largest_gap_ns),
                  "-",
                  "-",
                  "-"};
}

// A rank's row; its host from the step records (or the agent, model/run.cc
// HostsFromAgent) where its trace names none.
TraceRow RankRow(const RankTraceStats& t, const Run& run) {
  TraceRow r = BusyRow(std::to_string(t.rank) + (t.cpu_only ? " (cpu)" : ""), t);
  if (!t.host) {
    const StepSeries* s = run.FindRank(t.rank);
    if (s != nullptr && s->info.host) r.host = *s->info.host;
  }
  if (t.instances > 0) r.last = fmt::format("{:.0f}%", 100 * t.share_last);
  r.lateness = SignedMs(ToMs(t.median_lateness_ns));
  r.offset = SignedMs(ToMs(t.clock_offset_ns));
  return r;
}

// The median over the ranks of get(rank) (robust_stats.h); 0 for none.
template <typename Get>
double MedianOf(const std::vector<RankTraceStats>& ranks, Get get) {
  std::vector<double> v;
  for (const RankTraceStats& t : ranks) v.push_back(static_cast<double>(get(t)));
  return Median(std::move(v)).value_or(0);
}

// Each column the median over the ranks (not one rank's row).
TraceRow MedianRow(const std::vector<RankTraceStats>& ranks) {
  TraceBusyStats m;
  auto pick = [&](auto field) {
    return static_cast<DurationNs>(
        MedianOf(ranks, [&](const RankTraceStats& t) { return t.*field; }));
  };
  m.window_ns = pick(&TraceBusyStats::window_ns);
  // Shares are medians of each rank's share, scaled back onto the median window.
  auto share = [&](auto get) {
    double s = MedianOf(ranks, [&](const RankTraceStats& t) {
      return t.window_ns > 0 ? static_cast<double>(get(t)) / static_cast<double>(t.window_ns) : 0.0;
    });
    return static_cast<DurationNs>(s * static_cast<double>(m.window_ns));
  };
  m.busy_ns = share([](const RankTraceStats& t) { return t.busy_ns; });
  m.compute_busy_ns = share([](const RankTraceStats& t) { return t.compute_busy_ns; });
  m.comm_busy_ns = share([](const RankTraceStats& t) { return t.comm_busy_ns; });
  m.idle_ns = share([](const RankTraceStats& t) { return t.idle_ns; });
  m.busy_by_class_ns[static_cast<size_t>(OpClass::kMemcpy)] = share([](const RankTraceStats& t) {
    return t.busy_by_class_ns[static_cast<size_t>(OpClass::kMemcpy)] +
           t.busy_by_class_ns[static_cast<size_t>(OpClass::kMemset)];
  });
  m.largest_gap_ns = pick(&TraceBusyStats::largest_gap_ns);
  m.steps = static_cast<size_t>(
      std::lround(MedianOf(ranks, [](const RankTraceStats& t) { return t.steps; })));
  TraceRow r = BusyRow(fmt::format("median of {}", ranks.size()), m);
  r.host = "";
  std::vector<double> late;
  for (const RankTraceStats& t : ranks) {
    if (t.median_lateness_ns) late.push_back(static_cast<double>(*t.median_lateness_ns) / 1e6);
  }
  r.lateness = SignedMs(Median(std::move(late)));
  return r;
}

void PrintTraceRows(const std::vector<TraceRow>& rows, std::ostream& out) {
  std::vector<TraceRow> all;
  all.push_back(TraceRow{"rank", "host", "steps", "window", "busy", "compute", "comm", "memcpy",
                         "idle", "largest gap", "last at", "lateness", "clock offset"});
  all.insert(all.end(), rows.begin(), rows.end());
  std::array<size_t, 13> w{};
  for (const TraceRow& r : all) {
    const std::string* cells[] = {&r.label,   &r.host,     &r.steps, &r.window, &r.busy,
                                  &r.compute, &r.comm,     &r.copy,  &r.idle,   &r.gap,
                                  &r.last,    &r.lateness, &r.offset};
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::max(w[i], cells[i]->size());
  }
  for (const TraceRow& r : all) {
    std::string line = fmt::format("  {:<{}}  {:<{}}", r.label, w[0], r.host, w[1]);
    const std::string* cells[] = {&r.steps, &r.window, &r.busy, &r.compute,  &r.comm,  &r.copy,
                                  &r.idle,  &r.gap,    &r.last, &r.lateness, &r.offset};
    for (size_t i = 0; i < 11; ++i) line += fmt::format("  {:>{}}", *cells[i], w[i + 2]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

void RenderTraceTable(const ReportInput& in, std::ostream& out) {
  const std::vector<RankTraceStats>& ranks = in.analyses.traces.ranks;
  std::vector<TraceRow> rows;
  if (ranks.size() <= kAllTraceRowsUpTo) {
    for (const RankTraceStats& t : ranks) rows.push_back(RankRow(t, in.run));
  } else {
    std::set<int32_t> culprits;
    if (in.analyses.traces.culprit) culprits.insert(*in.analyses.traces.culprit);
    for (const Culprit& c : in.verdict.culprits) {
      if (c.entity.rank) culprits.insert(*c.entity.rank);
    }
    std::vector<const RankTraceStats*> order;
    for (const RankTraceStats& t : ranks) order.push_back(&t);
    auto key = [&](const RankTraceStats* t) {
      return std::make_tuple(culprits.count(t->rank) > 0, t->delay_caused_ns,
                             t->median_lateness_ns.value_or(0), t->compute_busy_ns);
    };
    std::stable_sort(
        order.begin(), order.end(),
        [&](const RankTraceStats* a, const RankTraceStats* b) { return key(a) > key(b); });
    for (size_t i = 0; i < kTopTraceRows; ++i) rows.push_back(RankRow(*order[i], in.run));
    rows.push_back(MedianRow(ranks));
  }
  const std::vector<TraceBusyStats>& unranked = in.analyses.traces.unranked;
  const size_t unranked_rows =
      unranked.size() <= kAllTraceRowsUpTo ? unranked.size() : kTopTraceRows;
  for (size_t i = 0; i < unranked_rows; ++i) {
    rows.push_back(BusyRow(fmt::format("no rank #{}", i + 1), unranked[i]));
  }
  if (rows.empty()) return;
  PrintTraceRows(rows, out);
  if (ranks.size() > kAllTraceRowsUpTo) {
    out << fmt::format("  ... {} more ranks (all of them: --json or --html)\n",
                       ranks.size() - kTopTraceRows);
  }
  for (size_t i = 0; i < unranked_rows; ++i) {
    const uint32_t f = unranked[i].file;
    out << fmt::format("  #{}: {}\n", i + 1, f < in.run.files.size() ? in.run.files[f].path : "?");
  }
  if (unranked.size() > unranked_rows) {
    out << fmt::format("  ... {} more traces without a rank (all of them: --json or --html)\n",
                       unranked.size() - unranked_rows);
  }
}

// How ranks were tied to GPUs, one line per rule, and each host whose GPUs
// could not be (the first few; --json has all).
void RenderRankMap(const ReportInput& in, std::ostream& out) {
  const RankMap* map = in.RankMapShown();
  if (map == nullptr) return;
  std::set<std::pair<std::string, int32_t>> gpus;
  for (const GpuRecord& g : in.run.hardware.gpus) {
    if (g.host) gpus.insert({*g.host, g.index});
  }
  auto tied = std::count_if(gpus.begin(), gpus.end(), [&](const auto& g) {
    return map->RankOf(g.first, g.second).has_value();
  });
  out << fmt::format("ranks to GPUs: {} of {} tied to ranks\n", tied,
                     Count(gpus.size(), "GPU", "GPUs"));
  for (const RankTie& t : map->Ties()) {
    std::string hosts;
    for (size_t i = 0; i < t.hosts.size() && i < 4; ++i) hosts += (i ? ", " : "") + t.hosts[i];
    if (t.hosts.size() > 4) hosts += fmt::format(", ... ({} hosts)", t.hosts.size());
    out << fmt::format("  {} {} on {}: {}\n", t.ranks.size() == 1 ? "rank" : "ranks",
                       RankRangesText(t.ranks), hosts, t.how);
  }
  constexpr size_t kUntiedShown = 4;
  for (size_t i = 0; i < map->untied().size() && i < kUntiedShown; ++i) {
    const UntiedGpus& u = map->untied()[i];
    out << fmt::format("  {} {} of {}: not tied to ranks: {}; to tie them: {}\n",
                       u.gpus.size() == 1 ? "GPU" : "GPUs", RankRangesText(u.gpus), u.host, u.why,
                       u.to_tie);
  }
  if (map->untied().size() > kUntiedShown) {
    out << fmt::format("  ... and {} more hosts whose GPUs are not tied (see --json)\n",
                       map->untied().size() - kUntiedShown);
  }
}

std::string GroupsText(const std::vector<WhatIfGroup>& groups, std::string_view prefix,
                       size_t max) {
  std::string s;
  for (size_t i = 0; i < groups.size() && i < max; ++i) {
    if (!s.empty()) s += ", ";
    s += fmt::format("{}{} {:.3f}x", prefix, groups[i].label, groups[i].slowdown);
  }
  if (groups.size() > max) s += fmt::format(", ... ({} more)", groups.size() - max);
  return s;
}

// The run's parallel layout, where it comes from, and statements not used.
// The jobs the files hold, when several: which one this report is about.
void RenderJobs(const Run& run, std::ostream& out) {
  const JobSplit& split = run.jobs;
  if (!split.several()) return;
  out << fmt::format(
      "\njobs: these files hold {} jobs; this report is about job {} ({}); --job N for "
      "another\n",
      split.jobs.size(), split.chosen + 1,
      split.chosen_by_flag ? "as asked" : "the largest: most ranks, then files");
  for (size_t i = 0; i < split.jobs.size(); ++i) {
    const JobInfo& j = split.jobs[i];
    std::string when;
    if (j.first_ns) when = "; " + FormatTimestamp(*j.first_ns).substr(0, 16);
    out << fmt::format("  {} {:>2}  {}{}; {}{}; {}{}\n", i == split.chosen ? '*' : ' ', i + 1,
                       j.what, j.world_size ? fmt::format(", world size {}", *j.world_size) : "",
                       Count(j.ranks, "rank", "ranks"), when, j.first_file,
                       j.files > 1 ? fmt::format(" and {} more", j.files - 1) : "");
  }
  if (split.unplaced > 0) {
    out << fmt::format("  {} in none: nothing ties them to one job (job.unplaced below)\n",
                       Count(split.unplaced, "file", "files"));
  }
}

void RenderLayout(const ReportInput& in, std::ostream& out) {
  if (const auto& r = in.analyses.layout.layout) {
    const ParallelLayout& l = r->layout;
    std::string from = LayoutSourceName(r->source);
    if (r->src && r->src->file < in.run.files.size()) {
      from += " " + in.run.files[r->src->file].path;
      if (r->src->line > 0) from += fmt::format(":{}", r->src->line);
    }
    out << fmt::format(
        "parallel layout: dp {} x pp {} x tp {}{}{} ({}); ranks compared with "
        "their role peers (same stage and tp rank)\n",
        l.dp, l.pp, l.tp, l.cp > 1 ? fmt::format(" x cp {}", l.cp) : "",
        l.vpp > 1 ? fmt::format(", {} virtual stages", l.vpp) : "", from);
  }
  for (const std::string& c : in.analyses.layout.conflicts)
    out << "parallel layout not used: " << c << "\n";
}

// The what-if replay of each op timeline: one line per decomposition.
void RenderWhatIf(const ReportInput& in, std::ostream& out) {
  for (const PipelineMetrics& m : in.analyses.pipelines.timelines) {
    if (!m.whatif) continue;
    const WhatIf& w = *m.whatif;
    out << fmt::format(
        "what-if (op timeline, dp {} x pp {} x tp {}, {} steps): {:.3f}x slower than if no op "
        "straggled ({:.4g} s per step measured, {:.4g} s ideal)\n",
        w.layout.dp, w.layout.pp, w.layout.tp, w.per_step.size(), w.slowdown,
        w.measured_step_ns / 1e9, w.ideal_step_ns / 1e9);
    out << "  by stage:    " << GroupsText(w.by_stage, "stage ", 8) << "\n";
    out << "  by DP rank:  " << GroupsText(w.by_dp_rank, "dp ", 8) << "\n";
    out << "  by op type:  " << GroupsText(w.by_op_type, "", 5) << "\n";
    out << "  by worker:   " << GroupsText(w.by_worker, "", 4) << "\n";
    if (w.fit.any()) {
      out << fmt::format(
          "  ops that do not fit the schedule: {} duplicate, {} without their compute, {} "
          "unpaired, {} collectives missing members, {} in a cycle ({} steps left out)\n",
          w.fit.duplicates, w.fit.missing_compute, w.fit.unpaired, w.fit.incomplete_group,
          w.fit.cyclic, w.fit.steps_dropped);
    }
  }
}

}  // namespace

void RenderText(const ReportInput& in, const TextOptions& options, std::ostream& out) {
  Style style{options.color};
  const Verdict& v = in.verdict;
  std::string_view verdict_colour = v.status == VerdictStatus::kStraggler     ? "1;31"
                                    : v.status == VerdictStatus::kNoStraggler ? "1;32"
                                                                              : "1;33";
  std::string job_of = in.run.jobs.several() ? fmt::format("job {} of {}: ", in.run.jobs.chosen + 1,
                                                           in.run.jobs.jobs.size())
                                             : "";
  out << style(job_of + v.summary, verdict_colour) << "\n";
  if (options.quiet) return;
  RenderJobs(in.run, out);

  bool chain = false;
  for (const Culprit& c : v.culprits) chain |= !c.evidence.empty();
  if (chain) {
    out << "\n" << style("evidence", "1") << "\n";
    for (const Culprit& c : v.culprits) {
      std::string who =
          c.entity.rank ? fmt::format("rank {}", *c.entity.rank) : c.entity.host.value_or("job");
      if (!c.entity.rank && c.entity.pp_stage) {
        who = fmt::format("pipeline stage {}", *c.entity.pp_stage);
        if (!c.ranks.empty()) who += fmt::format(" (ranks {})", RankListText(c.ranks));
      }
      if (c.entity.rank && c.entity.host) {
        who += fmt::format(" ({}{})", *c.entity.host,
                           c.entity.gpu ? fmt::format(" GPU {}", *c.entity.gpu) : "");
      } else if (c.entity.nic) {
        who += fmt::format(" ({})", *c.entity.nic);
      }
      out << fmt::format("  {}: {}{}{}, confidence {:.2f}\n", who, CauseClassName(c.cause_class),
                         c.cause ? " / " : "", c.cause.value_or(""), c.confidence);
      for (const std::string& e : c.evidence) out << "      - " << e << "\n";
    }
  }

  const JobStepStats& job = in.analyses.steps.job;
  out << "\n";
  if (job.median_step_s) {
    out << fmt::format("job: {}, {} analysed, median step {:.4g} s",
                       Count(job.ranks, "rank", "ranks"), Count(job.steps, "step", "steps"),
                       *job.median_step_s);
    if (job.sync_spread)
      out << fmt::format(", per-step spread across ranks (p90-p10) {:.2f}%",
                         100 * *job.sync_spread);
    if (job.basis == StepBasis::kComputeTime) out << "; ranks compared on compute-only time";
    out << "\n";
  }

  if (!in.analyses.traces.ranks.empty() || !in.analyses.traces.unranked.empty()) {
    out << fmt::format(
        "traces: {}, {} matched", Count(in.analyses.traces.ranks.size(), "rank", "ranks"),
        Count(in.analyses.traces.instances, "collective instance", "collective instances"));
    if (!in.analyses.traces.unranked.empty())
      out << fmt::format(", {} without a rank", in.analyses.traces.unranked.size());
    if (in.analyses.traces.median_transfer_ns) {
      out << fmt::format(", median transfer {:.3g} ms",
                         static_cast<double>(*in.analyses.traces.median_transfer_ns) / 1e6);
    }
    out << "\n";
    RenderTraceTable(in, out);
  }
  RenderRankMap(in, out);
  RenderLayout(in, out);
  RenderWhatIf(in, out);

  std::vector<const Finding*> findings = in.analyses.AllFindings();
  if (!findings.empty()) {
    out << "\n" << style("findings", "1") << "\n";
    size_t shown = 0;
    for (const Finding* fp : findings) {
      const Finding& f = *fp;
      if (shown++ >= options.max_findings) {
        out << fmt::format("  ... and {} more (see --json)\n",
                           findings.size() - options.max_findings);
        break;
      }
      out << fmt::format("  [{}] {} ({}, confidence {:.2f})\n",
                         style(SeverityName(f.severity), SeverityColour(f.severity)), f.message,
                         Describe(f.code).name, f.confidence);
      for (const Evidence& e : f.evidence) {
        out << "      - " << e.text;
        if (e.source) {
          std::string w = Where(in.run, *e.source);
          if (!w.empty()) out << "  [" << w << "]";
        }
        out << "\n";
      }
    }
  }

  if (!v.next_steps.empty()) {
    out << "\n" << style("next steps", "1") << "\n";
    int i = 1;
    for (const std::string& s : v.next_steps) out << fmt::format("  {}. {}\n", i++, s);
  }

  const Run& run = in.run;
  const Diagnostics& d = run.diagnostics;
  size_t read = 0, skipped = 0;
  for (const InputFileInfo& f : run.files) (f.format.empty() ? skipped : read) += 1;
  out << "\n" << style("data quality", "1") << "\n";
  out << fmt::format("  {} read, {} skipped, {}\n", Count(read, "file", "files"), skipped,
                     Count(run.total_steps(), "step record", "step records"));
  for (size_t i = 0; i < static_cast<size_t>(DiagCode::kCount); ++i) {
    auto code = static_cast<DiagCode>(i);
    if (d.count(code) == 0) continue;
    const DiagInfo& info = Describe(code);
    out << fmt::format("  {:<26} {:>8}  {}\n", info.name, d.count(code), info.description);
    for (const DiagExample& e : d.examples(code)) {
      std::string where = e.file;
      if (e.line > 0) where += fmt::format(":{}", e.line);
      else if (e.offset > 0) where += fmt::format(" @{}", e.offset);
      out << "      " << (where.empty() ? "" : where + ": ") << e.message << "\n";
    }
  }
}

}  // namespace laggard
