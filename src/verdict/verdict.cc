#include "verdict/verdict.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "analysis/robust_stats.h"

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

const Finding* FirstOf(const std::vector<Finding>& findings, FindingCode code) {
  for (const Finding& f : findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}
const Finding* FirstOf(const StepAnalysis& a, FindingCode code) { return FirstOf(a.findings, code); }

void AddSteps(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const std::string& s : from) {
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
  }
}

// The trace detector named a culprit: build the verdict around it.
Verdict TraceVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces) {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  const Finding* late = FirstOf(traces.findings, FindingCode::kTraceLateArrival);
  const Finding* slow = FirstOf(traces.findings, FindingCode::kTraceComputeSlow);
  const Finding* stall = FirstOf(traces.findings, FindingCode::kTraceHostStall);
  Culprit c;
  c.entity = late->entity;
  // Join what the step logs know of the same rank (host, GPU).
  if (const StepSeries* s = run.FindRank(*c.entity.rank)) {
    if (!c.entity.host) c.entity.host = s->info.host;
    if (!c.entity.gpu) c.entity.gpu = s->info.local_gpu;
  }
  c.confidence = std::min(late->confidence, kSingleSourceCap);
  std::string why = "arrives last at the collectives; why is not known from the traces";
  c.cause_class = "unknown";
  if (slow) {
    c.cause_class = "compute_slow";
    c.confidence = std::max(c.confidence, slow->confidence);
    why = fmt::format("compute-slow: its kernels run {:.2f}x as long as a healthy peer's",
                      1 + slow->slowdown.value_or(0));
    c.slowdown = slow->slowdown;
  } else if (stall) {
    c.cause_class = "host_stall";
    c.confidence = std::max(c.confidence, stall->confidence);
    why = "host stall: kernels are normal, the GPU idles waiting for the host";
  }
  // Step times: agreement raises confidence, a different rank lowers it.
  std::vector<int32_t> step_ranks;
  for (const Finding& f : steps.findings) {
    if (f.code == FindingCode::kStepStraggler && f.entity.rank) step_ranks.push_back(*f.entity.rank);
  }
  bool agrees = std::find(step_ranks.begin(), step_ranks.end(), *c.entity.rank) != step_ranks.end();
  if (agrees) {
    c.confidence = std::min(0.95, c.confidence + 0.1);
    for (const Finding& f : steps.findings) {
      if (f.code == FindingCode::kStepStraggler && f.entity.rank == c.entity.rank) {
        c.onset_step = f.onset_step;
        c.pattern = f.pattern;
        if (!c.slowdown) c.slowdown = f.slowdown;
      }
    }
  } else if (!step_ranks.empty()) {
    c.confidence = std::min(c.confidence, 0.5);
    why += fmt::format(" (but step times point at rank {})", step_ranks.front());
  }
  v.culprits.push_back(c);
  for (const Finding& f : steps.findings) {
    if (f.code != FindingCode::kStepStraggler || f.entity.rank == c.entity.rank) continue;
    Culprit other;
    other.entity = f.entity;
    other.cause_class = "unknown";
    other.confidence = std::min(f.confidence, 0.5);
    other.slowdown = f.slowdown;
    other.onset_step = f.onset_step;
    other.pattern = f.pattern;
    v.culprits.push_back(std::move(other));
  }
  v.throughput_lost = steps.job.throughput_lost && agrees ? steps.job.throughput_lost : traces.throughput_lost;
  size_t world = std::max(steps.job.ranks, traces.ranks.size());
  if (v.throughput_lost && world > 0) v.gpu_hours_per_day = *v.throughput_lost * static_cast<double>(world) * 24.0;
  v.summary = fmt::format("verdict: {} is the straggler — {}, confidence {}", EntityName(c.entity), why,
                          ConfidenceWord(c.confidence));
  if (v.throughput_lost) v.summary += fmt::format(", costs ~{:.0f}% of job throughput", 100 * *v.throughput_lost);
  if (slow) AddSteps(v.next_steps, slow->next_steps);
  if (stall) AddSteps(v.next_steps, stall->next_steps);
  AddSteps(v.next_steps, late->next_steps);
  if (!slow && !stall) {
    v.next_steps.push_back(fmt::format(
        "compare rank {}'s trace with a healthy rank's around the late collectives: longer kernels "
        "mean the GPU is slow, idle gaps mean it waits for the host",
        *c.entity.rank));
  }
  return v;
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

namespace {

std::string StragglerSummary(const Verdict& v);

// Several ranks late together (trace.late_group): one host's ranks, or a
// block of ranks. Slow kernels on several GPUs with no hardware finding
// are taken for more work (imbalance) until GPU metrics say otherwise
// (DecideVerdict joins them); idle GPUs mean the host.
Verdict GroupVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces, const Finding& g) {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity = g.entity;
  c.ranks = g.ranks;
  c.slowdown = g.slowdown;
  c.pattern = g.pattern;
  c.confidence = std::min(g.confidence, kSingleSourceCap);
  c.evidence.push_back("traces: " + g.message);
  if (g.cause == "host_stall") {
    c.cause_class = "host_stall";
    if (g.pattern == "host") c.cause = "host_contention";
  } else if (g.cause == "slow_kernels") {
    c.cause_class = "imbalance";
    c.cause = "uneven_work";
    // Whether GPU metrics could have shown a hardware cause at all.
    bool metrics = std::any_of(g.ranks.begin(), g.ranks.end(), [&](int32_t r) {
      const StepSeries* s = run.FindRank(r);
      std::optional<std::string> host = s ? s->info.host : std::nullopt;
      if (!host) host = g.entity.host;
      return host && std::any_of(run.hardware.gpus.begin(), run.hardware.gpus.end(),
                                 [&](const GpuRecord& gpu) { return gpu.host == host; });
    });
    c.confidence = std::min(c.confidence, metrics ? 0.6 : 0.5);
    c.evidence.push_back(metrics ? "no GPU metric shows a hardware cause on these GPUs: the ranks do more work "
                                   "per step (pipeline stage / partition), not slower work"
                                 : "no GPU metrics for these ranks' hosts: more work per step (pipeline stage / "
                                   "partition) is assumed; GPU metrics would rule out a hardware cause");
  } else {
    c.cause_class = "unknown";
  }
  v.culprits.push_back(std::move(c));
  v.throughput_lost = traces.throughput_lost;
  size_t world = std::max(steps.job.ranks, traces.ranks.size());
  if (v.throughput_lost && world > 0) v.gpu_hours_per_day = *v.throughput_lost * static_cast<double>(world) * 24.0;
  v.next_steps = g.next_steps;
  v.summary = StragglerSummary(v);
  return v;
}

// The job as a whole is the one culprit, from one finding (imbalance,
// periodic interference): its cause, confidence, slowdown and next steps.
Verdict JobCulpritVerdict(const Finding& f, std::string cause_class, std::string_view source,
                          std::string summary) {
  Verdict v;
  v.status = VerdictStatus::kJobWide;
  Culprit c;
  c.entity.job = true;
  c.cause_class = std::move(cause_class);
  c.cause = f.cause;
  c.confidence = f.confidence;
  c.slowdown = f.slowdown;
  c.evidence.push_back(fmt::format("{}: {}", source, f.message));
  v.culprits.push_back(std::move(c));
  v.summary = std::move(summary);
  v.next_steps = f.next_steps;
  return v;
}

Verdict BaseVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces) {
  if (traces.culprit && FirstOf(traces.findings, FindingCode::kTraceLateArrival)) {
    return TraceVerdict(run, steps, traces);
  }
  if (const Finding* g = FirstOf(traces.findings, FindingCode::kTraceLateGroup)) {
    return GroupVerdict(run, steps, traces, *g);
  }
  Verdict v;
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
  if (const Finding* imb = FirstOf(steps, FindingCode::kStepStageImbalance)) {
    return JobCulpritVerdict(*imb, "imbalance", "step times", "verdict: workload imbalance — " + imb->message);
  }
  if (const Finding* vw = FirstOf(traces.findings, FindingCode::kTraceVariableWork)) {
    return JobCulpritVerdict(*vw, "imbalance", "traces", "verdict: workload imbalance — " + vw->message);
  }
  if (const Finding* hs = FirstOf(traces.findings, FindingCode::kTraceHostStall); hs && hs->entity.job) {
    return JobCulpritVerdict(*hs, "host_stall", "traces", "verdict: job-wide host stall — " + hs->message);
  }
  if (const Finding* comm = FirstOf(traces.findings, FindingCode::kTraceCommBound)) {
    v.status = VerdictStatus::kJobWide;
    v.summary = "verdict: job-wide slowdown — " + comm->message + "; no single rank is to blame";
    v.next_steps = comm->next_steps;
    return v;
  }
  // The whole job slows on a fixed period and no rank stands out: periodic
  // interference (checkpoint, evaluation, GC, a scheduled job on a shared
  // switch) — a cause class of its own, whichever rank or host it hits.
  if (const Finding* per = FirstOf(steps, FindingCode::kPeriodicSlowdown);
      per && per->period_steps && !steps.job.episodes.empty()) {
    v = JobCulpritVerdict(*per, "external", "step times",
                          fmt::format("verdict: periodic interference — {}; no single rank stands out", per->message));
    Culprit& c = v.culprits.front();
    c.cause = "periodic_interference";
    c.confidence = std::min(per->confidence, kSingleSourceCap);
    c.onset_step = per->onset_step;
    c.pattern = "periodic";
    const Episode& last = steps.job.episodes.back();
    auto next = static_cast<int64_t>(std::llround(static_cast<double>(last.start_step) + *per->period_steps));
    v.next_steps.push_back(fmt::format(
        "profile the next expected slow step on every rank: step {} (torch.profiler schedule "
        "covering steps {}-{}) to see which rank or host stalls",
        next, next - 1, next + 1));
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
  if (steps.ranks.empty() && traces.ranks.empty()) {
    v.status = VerdictStatus::kInconclusive;
    v.summary = run.traces.empty()
                    ? "verdict: inconclusive — no step times and no profiler traces were found"
                    : fmt::format(
                          "verdict: inconclusive — {} trace{} without a rank and no step times: "
                          "name each trace's rank (file name rank-N, or --rank-from) and add "
                          "per-rank step times",
                          run.traces.size(), run.traces.size() == 1 ? "" : "s");
    return v;
  }
  if (steps.ranks.empty() && !traces.ranks.empty()) {
    if (const Finding* nomatch = FirstOf(traces.findings, FindingCode::kTraceNoMatch)) {
      v.status = VerdictStatus::kInconclusive;
      v.summary = "verdict: inconclusive — " + nomatch->message;
      v.next_steps = nomatch->next_steps;
    } else if (traces.ranks.size() < 2) {
      v.status = VerdictStatus::kInconclusive;
      v.summary = fmt::format(
          "verdict: inconclusive — one rank's trace (rank {}) cannot show who arrives last; add "
          "the trace of a healthy rank for the same steps",
          traces.ranks.front().rank);
    } else {
      v.status = VerdictStatus::kNoStraggler;
      v.summary = fmt::format(
          "verdict: no straggler found — no rank arrives last consistently across {} collectives "
          "on {} ranks",
          traces.instances, traces.ranks.size());
      if (traces.world_size && static_cast<size_t>(*traces.world_size) > traces.ranks.size()) {
        v.summary += fmt::format(" (only {} of the job's {} ranks are traced)", traces.ranks.size(),
                                 *traces.world_size);
      }
    }
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
  // Rare slow steps on random ranks: benign jitter, named so nobody chases it.
  if (const Finding* jitter = FirstOf(steps, FindingCode::kJitter)) {
    v.summary += "; benign jitter: " + jitter->message;
  }
  return v;
}

bool IsGpuCause(FindingCode c) {
  return c == FindingCode::kGpuThermal || c == FindingCode::kGpuPowerCap ||
         c == FindingCode::kGpuClocksLow || c == FindingCode::kGpuPcieDowngrade ||
         c == FindingCode::kGpuNvlinkDown;
}

// PCIe / NVLink link faults slow the GPU's transfers (input copies, its
// share of every collective), not its kernels: communication, as the
// HardwareOnlyCulprit rule and the simulator's truth class them; the other
// GPU causes slow the kernels.
std::string GpuCauseClass(FindingCode c) {
  return c == FindingCode::kGpuPcieDowngrade || c == FindingCode::kGpuNvlinkDown ? "communication"
                                                                                   : "compute_slow";
}

bool IsNetCause(FindingCode c) {
  return c == FindingCode::kNetPortDown || c == FindingCode::kNetLinkDegraded ||
         c == FindingCode::kNetBandwidthLow || c == FindingCode::kNetSocketFallback ||
         c == FindingCode::kNetNoGdr || c == FindingCode::kNetPoorPath;
}

bool OnGpu(const Finding& f, const Entity& e) {
  if (f.entity.rank && e.rank && *f.entity.rank == *e.rank) return true;
  return f.entity.host && e.host && f.entity.gpu && e.gpu && *f.entity.host == *e.host &&
         *f.entity.gpu == *e.gpu;
}

bool OnHost(const Finding& f, const std::optional<std::string>& host) {
  return host && f.entity.host && *f.entity.host == *host;
}

std::string CauseWords(const Culprit& c) {
  std::string s = c.cause_class == "compute_slow"   ? "compute-slow"
                  : c.cause_class == "communication" ? "communication"
                  : c.cause_class == "host_stall"    ? "host stall"
                  : c.cause_class == "external"      ? "external interference"
                  : c.cause_class == "imbalance"     ? "workload imbalance"
                                                     : "cause unknown";
  if (c.cause) s += ": " + *c.cause;
  return s;
}

std::string CulpritName(const Culprit& c) {
  if (c.ranks.size() > 1) {
    if (c.cause == "shared_switch" && c.entity.switch_name) {
      return fmt::format("the hosts of switch {} (ranks {})", *c.entity.switch_name, RankListText(c.ranks));
    }
    if (!c.entity.rank && c.entity.host) return fmt::format("{} (ranks {})", *c.entity.host, RankListText(c.ranks));
    return fmt::format("ranks {}", RankListText(c.ranks));
  }
  if (c.entity.rank) return EntityName(c.entity);
  if (c.entity.job && !c.entity.host) return "the whole job";
  std::string s = c.entity.host.value_or("unknown host");
  if (c.entity.nic) s += fmt::format(" ({})", *c.entity.nic);
  return s;
}

// Adds the hardware and network evidence of the culprit's GPU and host.
// Returns true when it changed the culprit's cause or confidence.
bool EnrichRankCulprit(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps) {
  if (!c.entity.rank) return false;
  if (auto g = a.ranks.GpuOf(*c.entity.rank)) {
    if (!c.entity.host) c.entity.host = g->first;
    if (!c.entity.gpu && c.entity.host == g->first) c.entity.gpu = g->second;
  }
  bool changed = false;
  const Finding* hw = nullptr;
  for (const Finding& f : a.hardware.findings) {
    if (!IsGpuCause(f.code) || !OnGpu(f, c.entity)) continue;
    auto score = [](const Finding* x) {
      return (x->overlaps_slow_steps == true ? 1.0 : 0.0) + x->confidence;
    };
    if (hw == nullptr || score(&f) > score(hw)) hw = &f;
  }
  if (hw != nullptr) {
    changed = true;
    c.evidence.push_back("GPU: " + hw->message);
    if (hw->overlaps_slow_steps == false) {
      c.confidence = std::min(c.confidence, 0.5);
    } else if (c.cause_class == "host_stall") {
      c.evidence.push_back("contradiction: the trace shows a host stall, not slow kernels");
      c.confidence = std::min(c.confidence, 0.5);
    } else {
      c.cause_class = GpuCauseClass(hw->code);
      c.cause = hw->cause;
      c.confidence = std::min(0.95, std::max(c.confidence, hw->confidence) + 0.15);
      std::vector<std::string> first = hw->next_steps;
      AddSteps(first, next_steps);
      next_steps = std::move(first);
    }
  }
  for (const Finding& f : a.hardware.findings) {
    if (f.code != FindingCode::kGpuErrors || !OnGpu(f, c.entity)) continue;
    c.evidence.push_back("GPU errors: " + f.message);
    c.confidence = std::min(0.95, c.confidence + 0.05);
    AddSteps(next_steps, f.next_steps);
    changed = true;
  }
  const Finding* net = nullptr;
  for (const Finding& f : a.network.findings) {
    if (!IsNetCause(f.code)) continue;
    bool mine = f.code == FindingCode::kNetPoorPath ? OnGpu(f, c.entity) : OnHost(f, c.entity.host);
    if (mine && (net == nullptr || f.confidence > net->confidence)) net = &f;
  }
  if (net != nullptr) {
    changed = true;
    c.evidence.push_back("network: " + net->message);
    if (c.cause_class == "unknown") {
      c.cause_class = "communication";
      c.cause = net->cause;
      c.confidence = std::min(0.95, std::max(c.confidence, net->confidence) + 0.1);
      std::vector<std::string> first = net->next_steps;
      AddSteps(first, next_steps);
      next_steps = std::move(first);
    }
  }
  for (const Finding& f : a.network.findings) {
    if (f.code == FindingCode::kNetSharedSwitch &&
        std::find(f.ranks.begin(), f.ranks.end(), *c.entity.rank) != f.ranks.end()) {
      c.evidence.push_back("switch: " + f.message);
      if (c.cause_class == "unknown" || c.cause_class == "communication") {
        c.cause_class = "external";
        c.cause = "shared_switch";
      }
      AddSteps(next_steps, f.next_steps);
      changed = true;
    }
  }
  return changed;
}

// A group culprit whose GPUs show a hardware cause during the slow steps
// is compute-slow (a host-wide thermal / power problem), not imbalance;
// the GPU with the strongest finding becomes the named entity.
bool EnrichGroupCulprit(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps) {
  if (c.ranks.size() < 2 || c.cause_class == "host_stall") return false;
  const Finding* hw = nullptr;
  Entity at;
  for (int32_t r : c.ranks) {
    Entity e;
    e.rank = r;
    if (auto g = a.ranks.GpuOf(r)) e.host = g->first, e.gpu = g->second;
    for (const Finding& f : a.hardware.findings) {
      if (!IsGpuCause(f.code) || !OnGpu(f, e) || f.overlaps_slow_steps == false) continue;
      if (hw == nullptr || f.confidence > hw->confidence) hw = &f, at = e;
    }
  }
  if (hw == nullptr) return false;
  c.entity.rank = at.rank;
  c.entity.host = at.host;
  c.entity.gpu = at.gpu;
  c.cause_class = GpuCauseClass(hw->code);
  c.cause = hw->cause;
  std::erase_if(c.evidence, [](const std::string& e) { return e.rfind("no GPU metric", 0) == 0; });
  c.evidence.push_back("GPU: " + hw->message);
  c.confidence = std::min(0.95, std::max(c.confidence, hw->confidence) + 0.15);
  std::vector<std::string> first = hw->next_steps;
  AddSteps(first, next_steps);
  next_steps = std::move(first);
  return true;
}

// Hosts whose network evidence is strong enough to blame on its own.
std::vector<Culprit> NetworkCulprits(const Verdict& v, const Analyses& a,
                                     std::vector<std::string>& next_steps) {
  std::vector<Culprit> out;
  // Every rank of the job on one host (and the traces' world size, when
  // known, says that is all of it): NCCL moves the job's data over NVLink,
  // PCIe or shared memory, never the host's NICs, so a NIC fault cannot
  // slow it.
  if (auto sole = a.ranks.SoleHost()) {
    bool whole = !a.traces.world_size ||
                 static_cast<size_t>(*a.traces.world_size) == a.ranks.RanksOnHost(*sole).size();
    if (whole) return out;
  }
  for (const Finding& f : a.network.findings) {
    if (!IsNetCause(f.code) || f.code == FindingCode::kNetPoorPath || f.code == FindingCode::kNetNoGdr ||
        !f.entity.host || f.severity != Severity::kCritical || f.confidence < 0.65) {
      continue;
    }
    bool covered = std::any_of(v.culprits.begin(), v.culprits.end(), [&](const Culprit& c) {
      return c.entity.host == f.entity.host && c.cause_class == "communication";
    });
    if (covered) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Culprit& c) { return c.entity.host == f.entity.host; });
    if (it == out.end()) {
      Culprit c;
      c.entity.host = f.entity.host;
      c.entity.nic = f.entity.nic;
      c.entity.switch_name = f.entity.switch_name;
      c.cause_class = "communication";
      c.cause = f.cause;
      c.confidence = std::min(f.confidence, kSingleSourceCap);
      c.slowdown = f.slowdown;
      c.evidence.push_back("network: " + f.message);
      out.push_back(std::move(c));
    } else {
      // A second independent network signal on the same host; a direct
      // observation of the link names the cause better than a bandwidth test.
      if (f.code != FindingCode::kNetBandwidthLow) it->cause = f.cause;
      if (!it->entity.nic) it->entity.nic = f.entity.nic;
      if (!it->slowdown) it->slowdown = f.slowdown;
      it->evidence.push_back("network: " + f.message);
      it->confidence = std::min(0.95, it->confidence + 0.15);
    }
    AddSteps(next_steps, f.next_steps);
  }
  // A host named by nccl-tests bandwidth alone, one of whose GPUs runs its
  // PCIe link downgraded: that link is the slow rail (the GPU's share of
  // every ring, GPUDirect RDMA), so the GPU is the culprit, not the NIC.
  for (Culprit& c : out) {
    bool bandwidth_only = std::all_of(a.network.findings.begin(), a.network.findings.end(), [&](const Finding& f) {
      return !IsNetCause(f.code) || f.code == FindingCode::kNetBandwidthLow || !OnHost(f, c.entity.host);
    });
    if (!bandwidth_only || c.entity.rank) continue;
    const Finding* pcie = nullptr;
    size_t n = 0;
    for (const Finding& f : a.hardware.findings) {
      if (f.code == FindingCode::kGpuPcieDowngrade && OnHost(f, c.entity.host) && f.entity.gpu) pcie = &f, ++n;
    }
    if (n != 1) continue;
    c.entity.rank = pcie->entity.rank;
    c.entity.gpu = pcie->entity.gpu;
    c.entity.nic.reset();
    c.cause = "pcie_downgrade";
    c.evidence.push_back("GPU: " + pcie->message);
    c.confidence = std::min(0.95, c.confidence + 0.15);
    std::vector<std::string> first = pcie->next_steps;
    AddSteps(first, next_steps);
    next_steps = std::move(first);
  }
  // Hosts of one switch slow together in nccl-tests, no host of it blamed
  // otherwise: while the job's step times show slowdowns of the whole job
  // (episodes, or synchronised steps with a communication-bound trace) —
  // what a congested switch does to a ring — or synchronised step times
  // (what any slow link looks like from the ranks), the switch's hosts are
  // the culprit, outside the job.
  // Port counters that show every host of one switch waiting for credits
  // far more than the rest name the switch on their own (a direct
  // observation of the congestion, at most 0.7), more when the job's steps
  // slow down together as well.
  for (const Finding& f : a.network.findings) {
    if (f.code != FindingCode::kNetSharedSwitch ||
        (f.pattern != "switch_group" && f.pattern != "port_counters")) {
      continue;
    }
    const bool counters = f.pattern == "port_counters";
    bool covered = std::any_of(out.begin(), out.end(), [&](const Culprit& c) {
      return c.entity.switch_name == f.entity.switch_name;
    }) || std::any_of(v.culprits.begin(), v.culprits.end(), [&](const Culprit& c) {
      return c.entity.host && std::find(f.ranks.begin(), f.ranks.end(), c.entity.rank.value_or(-1)) != f.ranks.end();
    });
    if (covered || (v.status == VerdictStatus::kStraggler && !counters)) continue;
    const Finding* episodes = FirstOf(a.steps, FindingCode::kPeriodicSlowdown);
    if (!episodes) episodes = FirstOf(a.steps, FindingCode::kJobSlowdown);
    const Finding* comm = FirstOf(a.traces.findings, FindingCode::kTraceCommBound);
    const Finding* sync = FirstOf(a.steps, FindingCode::kStepsSynchronised);
    if (!episodes && !comm && !sync && !counters) continue;
    Culprit c;
    c.entity.host = f.entity.host;
    c.entity.switch_name = f.entity.switch_name;
    c.ranks = f.ranks;
    c.cause_class = "external";
    c.cause = "shared_switch";
    c.slowdown = f.slowdown;
    if (counters) {
      c.confidence = std::min(0.7, f.confidence);
      if (episodes) c.confidence = std::min(0.85, c.confidence + (comm ? 0.15 : 0.1));
    } else {
      c.confidence = std::min(0.7, f.confidence + (episodes && comm ? 0.15 : 0.1));
    }
    c.evidence.push_back("switch: " + f.message);
    if (episodes) c.evidence.push_back("step times: " + episodes->message);
    if (comm) c.evidence.push_back("traces: " + comm->message);
    AddSteps(next_steps, f.next_steps);
    out.push_back(std::move(c));
  }
  for (const Finding& f : a.network.findings) {
    if (f.code != FindingCode::kNetSharedSwitch) continue;
    for (Culprit& c : out) {
      if (c.entity.switch_name == f.entity.switch_name && c.cause != "shared_switch") {
        c.cause_class = "external";
        c.cause = "shared_switch";
        c.evidence.push_back("switch: " + f.message);
      }
    }
    AddSteps(next_steps, f.next_steps);
  }
  return out;
}

// When neither step times nor traces can tell which rank is slow (step
// times synchronised, no late arrival), a hardware anomaly on one GPU is the
// best remaining hypothesis: a degraded NVLink / PCIe link slows the
// collectives for everyone without making its rank late, and a throttled GPU
// shows in the GPU metrics even where no trace was taken. Confidence stays
// low (<= 0.5, one signal, unconfirmed by the ranks' timing).
std::optional<Culprit> HardwareOnlyCulprit(const Analyses& a) {
  // Without step times nothing says the job is slow at all: GPU findings
  // stay findings.
  if (!a.steps.job.synchronised || a.traces.culprit) return std::nullopt;
  std::vector<const Finding*> cands;
  const Finding* late_trace = nullptr;  // the candidate's rank's late arrival, not blamed alone
  for (const Finding& f : a.hardware.findings) {
    if (!IsGpuCause(f.code) || !f.entity.host || !f.entity.gpu) continue;
    bool comm = f.code == FindingCode::kGpuNvlinkDown || f.code == FindingCode::kGpuPcieDowngrade;
    // A late-arrival analysis that found nobody late speaks against a
    // compute cause: the GPU would make its rank late. Unless its rank is
    // the one last at the collectives, by too little to be blamed on
    // arrival order alone: the GPU's own metrics explain it.
    bool late_here = false;
    std::optional<int32_t> rank = a.ranks.RankOf(*f.entity.host, *f.entity.gpu);
    for (const Finding& t : a.traces.findings) {
      if (t.code == FindingCode::kTraceLateArrival && rank && t.entity.rank == rank) {
        late_here = true;
        late_trace = &t;
      }
    }
    if (!comm && !a.traces.ranks.empty() && a.traces.instances > 0 && !late_here) continue;
    cands.push_back(&f);
  }
  if (cands.size() != 1) return std::nullopt;
  const Finding& f = *cands.front();
  Culprit c;
  c.entity = f.entity;
  bool comm = f.code == FindingCode::kGpuNvlinkDown || f.code == FindingCode::kGpuPcieDowngrade;
  c.cause_class = comm ? "communication" : "compute_slow";
  c.cause = f.cause;
  c.confidence = std::min(0.5, f.confidence);
  c.evidence.push_back("GPU: " + f.message);
  if (late_trace != nullptr && late_trace->entity.rank == a.ranks.RankOf(*f.entity.host, *f.entity.gpu)) {
    c.evidence.push_back("traces: " + late_trace->message);
  } else {
    c.evidence.push_back(comm ? "step times are synchronised and no rank arrives late: a slow link "
                                "slows every collective, not one rank"
                              : "step times are synchronised and no traces name a late rank: "
                                "unconfirmed by timing");
  }
  return c;
}

// Synchronised end-to-end step times with isolated whole-job slow steps
// (spikes, JobStepStats::spike_steps) that no trace covers, and one GPU
// whose utilisation dips in a sample where every other GPU stays busy: in
// synchronous training the waiting GPUs spin in NCCL at ~100%, so a lone
// dip is the rank everyone waits for — a host-side pause (GC, a checkpoint
// write, a stalled data loader) at the moments the job slows.
constexpr double kBusyUtilPct = 98;
constexpr double kDipUtilPct = 97;
// Dips of one GPU closer than this are one pause (a pause across a sample
// boundary, or the same moment seen by dmon and a --query-gpu log).
constexpr TimeNs kSamePauseNs = 2'000'000'000;

std::optional<Culprit> PauseCulprit(const Run& run, const Analyses& a) {
  if (!a.steps.job.synchronised || a.traces.culprit) return std::nullopt;
  const std::vector<int64_t>& spikes = a.steps.job.spike_steps;
  if (spikes.empty()) return std::nullopt;

  // Per sample time: GPUs busy and GPUs dipping, over saturated GPUs.
  const std::vector<GpuRecord>& gpus = run.hardware.gpus;
  std::vector<char> saturated(gpus.size(), 0);
  std::map<TimeNs, std::pair<int, int>> at;  // busy, dipping
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuRecord& g = gpus[i];
    if (g.time_is_approximate || !g.host) continue;
    std::vector<double> u;
    for (const GpuSample& x : g.samples) {
      if (x.util_pct) u.push_back(*x.util_pct);
    }
    if (u.size() < 10 || *Median(u) < kBusyUtilPct) continue;
    saturated[i] = 1;
    for (const GpuSample& x : g.samples) {
      if (!x.util_pct) continue;
      if (*x.util_pct >= kBusyUtilPct) ++at[x.time_ns].first;
      else if (*x.util_pct <= kDipUtilPct) ++at[x.time_ns].second;
    }
  }
  size_t best = gpus.size(), best_n = 0, second_n = 0;
  std::vector<std::pair<TimeNs, double>> best_dips;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (!saturated[i]) continue;
    std::vector<std::pair<TimeNs, double>> lone;
    for (const GpuSample& x : gpus[i].samples) {
      if (!x.util_pct || *x.util_pct > kDipUtilPct) continue;
      auto [busy, dipping] = at[x.time_ns];
      if (dipping == 1 && busy >= 2) lone.push_back({x.time_ns, *x.util_pct});
    }
    std::sort(lone.begin(), lone.end());
    std::vector<std::pair<TimeNs, double>> dips;  // one per pause
    for (const auto& d : lone) {
      if (!dips.empty() && d.first - dips.back().first < kSamePauseNs) {
        dips.back().second = std::min(dips.back().second, d.second);
      } else {
        dips.push_back(d);
      }
    }
    if (dips.size() > best_n) {
      second_n = best_n;
      best_n = dips.size(), best = i, best_dips = std::move(dips);
    } else {
      second_n = std::max(second_n, dips.size());
    }
  }
  // One GPU, dipping about as often as the job spikes. A pause that falls
  // across two 1 s samples may pull neither below the dip level: one lone
  // dip for several spikes is still that GPU, at lower confidence.
  if (best == gpus.size() || best_n == 0 || best_n > 2 * spikes.size() || second_n * 2 > best_n) {
    return std::nullopt;
  }
  const GpuRecord& g = gpus[best];
  Culprit c;
  c.entity.host = g.host;
  c.entity.gpu = g.index;
  c.entity.rank = a.ranks.RankOf(*g.host, g.index);
  c.cause_class = "host_stall";
  c.cause = "pause";
  c.confidence = best_n >= std::min<size_t>(2, spikes.size()) ? 0.5 : 0.4;
  c.slowdown = Median(a.steps.job.spike_excess);
  std::string steps_text;
  for (size_t i = 0; i < spikes.size() && i < 6; ++i) steps_text += fmt::format("{}{}", i ? ", " : "", spikes[i]);
  if (spikes.size() > 6) steps_text += ", ...";
  double low = 100;
  for (auto& d : best_dips) low = std::min(low, d.second);
  c.evidence.push_back(fmt::format(
      "GPU: GPU {} of {} drops to {:.0f}% utilisation {} time{} while every other GPU stays busy "
      "(the waiting GPUs spin in NCCL at ~100%): its rank idles while the others wait",
      g.index, *g.host, low, best_n, best_n == 1 ? "" : "s"));
  c.evidence.push_back(fmt::format(
      "step times: the whole job slows at {} isolated step{} ({}), {:+.0f}% each (median), with "
      "synchronised step times: one rank pauses, everyone waits",
      spikes.size(), spikes.size() == 1 ? "" : "s", steps_text, 100 * *c.slowdown));
  return c;
}

// What is missing to decide, as next steps.
void AskForMissing(const Run& run, const Verdict& v, std::vector<std::string>& next_steps) {
  for (const Culprit& c : v.culprits) {
    if (!c.entity.rank || c.cause_class != "unknown") continue;
    auto mentions = [&](std::string_view what) {
      return std::any_of(next_steps.begin(), next_steps.end(),
                         [&](const std::string& s) { return s.find(what) != std::string::npos; });
    };
    if (c.entity.host && run.hardware.Find(*c.entity.host, c.entity.gpu.value_or(-1)) == nullptr &&
        !mentions("nvidia-smi dmon")) {
      AddSteps(next_steps,
               {fmt::format("no GPU metrics for {}: run `nvidia-smi dmon -s pucvmt -o DT -d 1` there and on a "
                            "healthy host at the same time, and `nvidia-smi -q` once",
                            *c.entity.host)});
    }
    if (run.traces.empty() && !mentions("trace")) {
      AddSteps(next_steps, {fmt::format("add profiler traces of 2 steps from rank {} and a healthy rank to "
                                        "tell compute-slow from waiting",
                                        *c.entity.rank)});
    }
    break;
  }
}

std::string StragglerSummary(const Verdict& v) {
  const Culprit& top = v.culprits.front();
  std::string s = fmt::format("verdict: {} {} — {}", CulpritName(top),
                              top.ranks.size() > 1 ? "are the stragglers" : "is the straggler", CauseWords(top));
  if (top.slowdown && top.entity.rank) s += fmt::format(" ({:+.0f}%)", 100 * *top.slowdown);
  s += fmt::format(", confidence {}", ConfidenceWord(top.confidence));
  if (v.throughput_lost) s += fmt::format(", costs ~{:.0f}% of job throughput", 100 * *v.throughput_lost);
  for (size_t i = 1; i < v.culprits.size() && i < 3; ++i) {
    const Culprit& c = v.culprits[i];
    s += fmt::format("; also {} — {} (confidence {})", CulpritName(c), CauseWords(c),
                     ConfidenceWord(c.confidence));
  }
  if (v.culprits.size() > 3) s += fmt::format("; and {} more", v.culprits.size() - 3);
  return s;
}

}  // namespace

Analyses AnalyzeRun(const Run& run, const AnalysisOptions& options) {
  Analyses a;
  a.steps = AnalyzeStepTimes(run, options.steps);
  a.traces = AnalyzeTraces(run);
  a.ranks = RankMap::Build(run, options.gpus_per_node);
  std::vector<SuspectRank> suspects = SuspectRanks(run, a.steps, a.traces);
  a.hardware = AnalyzeHardware(run, a.ranks, suspects, options.hardware);
  a.network = AnalyzeNetwork(run, a.ranks, suspects, options.network);
  return a;
}

Verdict DecideVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces) {
  return BaseVerdict(run, steps, traces);
}

Verdict DecideVerdict(const Run& run, const Analyses& a) {
  Verdict v = BaseVerdict(run, a.steps, a.traces);
  bool changed = false;
  std::vector<std::string> next = v.next_steps;
  if (v.status == VerdictStatus::kStraggler) {
    for (Culprit& c : v.culprits) {
      changed |= c.ranks.size() > 1 ? EnrichGroupCulprit(c, a, next) : EnrichRankCulprit(c, a, next);
    }
  }
  std::vector<Culprit> net = NetworkCulprits(v, a, next);
  if (v.status != VerdictStatus::kStraggler) {
    if (auto pause = PauseCulprit(run, a)) {
      std::string who = pause->entity.rank ? fmt::format("rank {}", *pause->entity.rank)
                                           : fmt::format("GPU {} of {}", *pause->entity.gpu, *pause->entity.host);
      std::vector<std::string> first = {fmt::format(
          "find what pauses {}'s process at the slow steps: Python GC (gc.freeze() after start-up, or "
          "gc.disable() with gc.collect() between steps), checkpoint writes on the training thread, "
          "data loader workers restarting; `py-spy dump --pid PID` on {} during a slow step, or profile "
          "a window of steps that includes one",
          who, *pause->entity.host)};
      AddSteps(first, next);
      next = std::move(first);
      v.culprits.clear();
      v.culprits.push_back(std::move(*pause));
      v.status = VerdictStatus::kStraggler;
      v.throughput_lost.reset();
      v.gpu_hours_per_day.reset();
      changed = true;
    } else if (auto hw = HardwareOnlyCulprit(a)) {
      for (const Finding& f : a.hardware.findings) {
        if (OnGpu(f, hw->entity)) AddSteps(next, f.next_steps);
      }
      // A GPU link fault shows in nccl-tests / NET findings of its host too:
      // the GPU is the more specific culprit.
      std::erase_if(net, [&](const Culprit& c) { return c.entity.host == hw->entity.host; });
      net.insert(net.begin(), *hw);
    }
  }
  if (!net.empty()) {
    changed = true;
    if (v.status != VerdictStatus::kStraggler) {
      // Synchronised or job-wide step times are what a slow link looks like
      // from the ranks: the slow transfer holds everyone back equally. A
      // job-wide cause the traces show (imbalance, interference) is a
      // second problem and stays.
      std::erase_if(v.culprits, [](const Culprit& c) { return !c.entity.job || c.cause_class == "unknown"; });
      v.throughput_lost.reset();
      v.gpu_hours_per_day.reset();
      v.status = VerdictStatus::kStraggler;
    }
    for (Culprit& c : net) v.culprits.push_back(std::move(c));
  }
  if (changed) {
    std::stable_sort(v.culprits.begin(), v.culprits.end(),
                     [](const Culprit& x, const Culprit& y) { return x.confidence > y.confidence; });
  }
  AskForMissing(run, v, next);
  if (v.status == VerdictStatus::kInconclusive && run.ranks.empty() && run.traces.empty()) {
    size_t warnings = 0;
    for (const auto* list : {&a.hardware.findings, &a.network.findings}) {
      for (const Finding& f : *list) warnings += f.severity != Severity::kInfo ? 1 : 0;
    }
    if (warnings > 0) {
      v.summary += fmt::format(
          "; the GPU / network data show {} finding{} (below) — add per-rank step times to know "
          "whether they slow the job",
          warnings, warnings == 1 ? "" : "s");
    }
  }
  v.next_steps = std::move(next);
  if (changed) v.summary = StragglerSummary(v);
  return v;
}

}  // namespace laggard
