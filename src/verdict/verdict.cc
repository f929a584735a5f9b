#include "verdict/verdict.h"

#include <algorithm>

#include <fmt/format.h>

namespace laggard {
namespace {

std::string EntityName(const Entity& e) {
  if (!e.rank) return "the job";
  std::string s = fmt::format("rank {}", *e.rank);
  if (e.host && e.gpu) s += fmt::format(" ({} GPU {})", *e.host, *e.gpu);
  else if (e.host) s += fmt::format(" ({})", *e.host);
  return s;
}

// "(persistent, +21%)" or "(periodic: +60% every 100 steps)".
std::string PatternText(const Finding* f) {
  if (!f->pattern) return "";
  if (f->pattern == "periodic" && f->period_steps && f->spike) {
    return fmt::format(" (periodic: {:+.0f}% every {:.0f} steps)", 100 * *f->spike, *f->period_steps);
  }
  if (f->pattern == "intermittent" && f->spike) {
    return fmt::format(" (intermittent: {:+.0f}% on some steps)", 100 * *f->spike);
  }
  return fmt::format(" ({}, {:+.0f}%)", *f->pattern, 100 * f->slowdown.value_or(0));
}

const Finding* FirstOf(const StepAnalysis& a, FindingCode code) {
  for (const Finding& f : a.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

}  // namespace

std::string_view VerdictStatusName(VerdictStatus s) {
  switch (s) {
    case VerdictStatus::kStraggler: return "straggler";
    case VerdictStatus::kNoStraggler: return "no_straggler";
    case VerdictStatus::kInconclusive: return "inconclusive";
    case VerdictStatus::kJobWide: return "job_wide";
  }
  return "inconclusive";
}

std::string_view ConfidenceWord(double c) {
  if (c >= 0.8) return "high";
  if (c >= 0.5) return "medium";
  return "low";
}

Verdict DecideVerdict(const Run& run, const StepAnalysis& steps) {
  Verdict v;
  (void)run;
  std::vector<const Finding*> stragglers;
  for (const Finding& f : steps.findings) {
    if (f.code == FindingCode::kStepStraggler) stragglers.push_back(&f);
  }
  std::stable_sort(stragglers.begin(), stragglers.end(), [](const Finding* a, const Finding* b) {
    return a->slowdown.value_or(0) * a->confidence > b->slowdown.value_or(0) * b->confidence;
  });

  if (!stragglers.empty()) {
    v.status = VerdictStatus::kStraggler;
    for (const Finding* f : stragglers) {
      Culprit c;
      c.entity = f->entity;
      c.cause_class = "unknown";
      c.confidence = std::min(f->confidence, kSingleSourceCap);
      c.slowdown = f->slowdown;
      c.onset_step = f->onset_step;
      c.pattern = f->pattern;
      v.culprits.push_back(std::move(c));
    }
    v.throughput_lost = steps.job.throughput_lost;
    if (v.throughput_lost && steps.job.ranks > 0) {
      v.gpu_hours_per_day = *v.throughput_lost * static_cast<double>(steps.job.ranks) * 24.0;
    }
    const Culprit& top = v.culprits.front();
    std::string who = EntityName(top.entity);
    if (v.culprits.size() > 1) who += fmt::format(" (and {} more)", v.culprits.size() - 1);
    v.summary = fmt::format(
        "verdict: {} is the straggler — cause unknown from step times alone{}, confidence {}",
        who, PatternText(stragglers.front()),
        ConfidenceWord(top.confidence));
    if (v.throughput_lost) {
      v.summary += fmt::format(", costs ~{:.0f}% of job throughput", 100 * *v.throughput_lost);
    }
    for (const Finding* f : stragglers) {
      for (const std::string& s : f->next_steps) {
        if (std::find(v.next_steps.begin(), v.next_steps.end(), s) == v.next_steps.end()) v.next_steps.push_back(s);
      }
      if (v.next_steps.size() >= 4) break;
    }
    return v;
  }
  if (const Finding* sync = FirstOf(steps, FindingCode::kStepsSynchronised)) {
    v.status = VerdictStatus::kInconclusive;
    v.summary = fmt::format(
        "verdict: inconclusive — step times are synchronised across {} ranks (spread {:.2f}%), so "
        "they cannot name the culprit; add traces of 2 steps from every rank",
        steps.job.ranks, 100 * steps.job.sync_spread.value_or(0));
    if (!steps.job.episodes.empty()) {
      v.summary += fmt::format(" ({} job-wide slowdown episode{} seen)", steps.job.episodes.size(),
                               steps.job.episodes.size() == 1 ? "" : "s");
    }
    v.next_steps = sync->next_steps;
    return v;
  }
  if (const Finding* none = FirstOf(steps, FindingCode::kNoPeers)) {
    v.status = VerdictStatus::kInconclusive;
    v.summary = "verdict: inconclusive — " + none->message;
    v.next_steps = none->next_steps;
    for (const Finding& f : steps.findings) {
      if (f.code == FindingCode::kJobSlowdown || f.code == FindingCode::kPeriodicSlowdown) {
        v.summary += fmt::format("; {}", f.message);
        break;
      }
    }
    return v;
  }
  const Finding* periodic = FirstOf(steps, FindingCode::kPeriodicSlowdown);
  const Finding* slowdown = periodic ? periodic : FirstOf(steps, FindingCode::kJobSlowdown);
  if (slowdown) {
    v.status = VerdictStatus::kJobWide;
    v.summary = fmt::format("verdict: job-wide slowdown — {}; no single rank is to blame",
                            slowdown->message);
    v.next_steps = slowdown->next_steps;
    return v;
  }
  v.status = VerdictStatus::kNoStraggler;
  double spread = 0;
  for (const RankStepStats& r : steps.ranks) {
    if (r.excess) spread = std::max(spread, std::abs(*r.excess));
  }
  v.summary = fmt::format(
      "verdict: no straggler found — {} ranks within {:.1f}% of each other over {} steps",
      steps.job.ranks, 100 * spread, steps.job.steps);
  return v;
}

}  // namespace laggard
