// The verdict's host CPU rules (host.cpu_contention, host.cpu_slow:
// analysis/host/host_cpu_detector.h): a culprit whose process waited for a CPU,
// or whose CPU ran slower than its peers', was made slow by its host; where
// step times and traces name no culprit, a rank that waits for a CPU while
// its peers do not is one. Internal to src/verdict/.

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"
#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// The rank's host CPU finding (either code) that slows it most.
const Finding* HostCpuOf(const Analyses& a, int32_t rank) {
  const Finding* best = nullptr;
  for (const Finding& f : a.host_cpu.findings) {
    if (f.code == FindingCode::kStepCpuTimeHigh) continue;  // the rank's work, not its host
    if (f.entity.rank == rank && (!best || f.slowdown.value_or(0) > best->slowdown.value_or(0)))
      best = &f;
  }
  return best;
}

// The contention findings: a measured wait names a culprit by itself; a
// slow probe only explains one (a slower CPU may not slow a GPU job).
std::vector<const Finding*> Waiting(const Analyses& a) {
  std::vector<const Finding*> out;
  for (const Finding& f : a.host_cpu.findings) {
    if (f.code == FindingCode::kHostCpuContention) out.push_back(&f);
  }
  return out;
}

}  // namespace

bool FromTraces(const Analyses& a, int32_t rank) {
  return std::any_of(a.traces.findings.begin(), a.traces.findings.end(), [&](const Finding& f) {
    return f.entity.rank == rank &&
           (f.code == FindingCode::kTraceLateArrival || f.code == FindingCode::kTraceComputeSlow);
  });
}

const RankCpuStats* CpuStatsOf(const Analyses& a, int32_t rank) {
  for (const RankCpuStats& r : a.host_cpu.ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

bool CpuOnlyTrace(const Analyses& a, int32_t rank) {
  for (const RankTraceStats& st : a.traces.ranks) {
    if (st.rank == rank) return st.cpu_only;
  }
  return false;
}

std::optional<WindowRatios> WindowRatiosOf(const Analyses& a, int32_t rank) {
  std::optional<double> probe =
      RatioToPeers(a.host_cpu.ranks, rank, &RankCpuStats::window_probe_ns);
  std::optional<double> cpu = RatioToPeers(a.host_cpu.ranks, rank, &RankCpuStats::window_cpu_ns);
  if (!probe || !cpu || *probe <= 0) return std::nullopt;
  return WindowRatios{*probe, *cpu};
}

std::optional<double> CpuTimeRatio(const Analyses& a, int32_t rank,
                                   const std::vector<int32_t>& without) {
  const RankCpuStats* mine = nullptr;
  std::vector<double> others;
  for (const RankCpuStats& r : a.host_cpu.ranks) {
    if (!r.on_cpu_mean_ns || r.on_cpu_steps < HostCpuDetectorOptions().min_cpu_time_steps) continue;
    if (r.rank == rank) mine = &r;
    else if (std::find(without.begin(), without.end(), r.rank) == without.end())
      others.push_back(*r.on_cpu_mean_ns);
  }
  std::optional<double> median = Median(std::move(others));
  if (mine == nullptr || !median || *median <= 0) return std::nullopt;
  return *mine->on_cpu_mean_ns / *median;
}

// After culprits were dropped for `dropped` (why, each): with none left the
// verdict is no straggler, saying the first why, with `next_step`; else the
// first culprit carries it. False when nothing was dropped.
bool SayDropped(Verdict& v, const std::vector<std::string>& dropped, std::string next_step) {
  if (dropped.empty()) return false;
  if (v.culprits.empty()) {
    v.status = VerdictStatus::kNoStraggler;
    v.throughput_lost.reset();
    v.gpu_hours_per_day.reset();
    v.summary = "verdict: no straggler — " + dropped.front();
    v.next_steps = {std::move(next_step)};
  } else {
    v.culprits.front().evidence.push_back("not a culprit: " + dropped.front());
  }
  return true;
}

bool EnrichHostCpu(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps) {
  if (a.host_cpu.findings.empty()) return false;
  std::vector<int32_t> ranks = c.ranks;
  if (ranks.empty() && c.entity.rank) ranks.push_back(*c.entity.rank);
  if (ranks.empty()) return false;
  const Finding* best = nullptr;
  size_t waiting = 0;
  for (int32_t r : ranks) {
    const Finding* f = HostCpuOf(a, r);
    if (f == nullptr) continue;
    ++waiting;
    if (best == nullptr || f->slowdown.value_or(0) > best->slowdown.value_or(0)) best = f;
  }
  if (best == nullptr) return false;
  c.evidence.push_back(best->evidence.front().text);
  // A group's more work (uneven_work) is assumed from its slower ops; in a
  // CPU-only job whose ranks all wait for a CPU (host.cpu_contention) and
  // use less than half the ops' excess more CPU time per step than the
  // ranks outside the group (at most 5% counts as none), the wait
  // stretched the ops: not more work.
  const double work_floor = std::max(kCpuTimeAgreement, c.slowdown.value_or(0) / 2);
  const bool no_more_work =
      c.cause == "uneven_work" && std::all_of(ranks.begin(), ranks.end(), [&](int32_t r) {
        std::optional<double> work = CpuTimeRatio(a, r, ranks);  // against the ranks outside
        return CpuOnlyTrace(a, r) && work && *work - 1 < work_floor &&
               std::any_of(a.host_cpu.findings.begin(), a.host_cpu.findings.end(),
                           [&](const Finding& f) {
                             return f.code == FindingCode::kHostCpuContention && f.entity.rank == r;
                           });
      });
  // A cause already observed on the GPU or the network stays; so does a
  // group of which some ranks do not wait.
  bool observed = c.cause && *c.cause != "host_contention" && !no_more_work;
  bool explains = !c.slowdown || best->slowdown.value_or(0) >= 0.5 * *c.slowdown;
  // A culprit read from the profiled steps on a core slower over the run
  // but faster there (bench/realjobs d16: a 2.0x fault from step 20, the
  // ranks swapping cores at step 27), its CPU time there for its core's
  // speed above its peers': the run's core does not explain it.
  if (best->code == FindingCode::kHostCpuSlow && ranks.size() == 1 && c.slowdown &&
      FromTraces(a, ranks[0])) {
    // Faster there by more than the probes' agreement band
    // (max_step_probe_gap), its CPU time there for its core's speed above
    // its peers'.
    std::optional<WindowRatios> window = WindowRatiosOf(a, ranks[0]);
    const double faster = 1 - HostCpuDetectorOptions().max_step_probe_gap;
    if (window && window->probe <= faster && window->WorkPerProbe() >= 1 + kWindowWorkPerProbe) {
      c.evidence.back() = fmt::format(
          "host CPU: its core ran the probe {:.2f}x as long as its peers' over the run, but "
          "{:.2f}x in the profiled steps where it was read: not why it was slow there",
          1 + best->slowdown.value_or(0), window->probe);
      return true;
    }
  }
  if (observed || waiting < ranks.size() || !explains) {
    c.evidence.push_back(
        fmt::format("{} (+{:.0f}% of {:.0f}%)",
                    best->code == FindingCode::kHostCpuSlow
                        ? kSlowerCpuExplainsPart
                        : std::string_view("host CPU: its wait for a CPU explains part of it"),
                    100 * best->slowdown.value_or(0), 100 * c.slowdown.value_or(0)));
    return true;
  }
  if (no_more_work) {
    // The more-work reading (GroupVerdict's line and next steps) goes.
    std::erase_if(c.evidence, [](const std::string& e) {
      return e == kAssumedMoreWork || e == kInferredMoreWork;
    });
    for (const Finding& g : a.traces.findings) {
      if (g.code == FindingCode::kTraceLateGroup && g.ranks == c.ranks)
        RemoveSteps(next_steps, g.next_steps);
    }
    c.evidence.push_back(
        fmt::format("host CPU: their CPU time per step is under {:.0f}% above the other ranks', "
                    "less than half their ops' excess: not more work; the wait for a CPU "
                    "stretched their ops",
                    100 * work_floor));
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
  for (const Finding* f : Waiting(a)) {
    Culprit c;
    c.entity = f->entity;
    c.cause_class = CauseClass::kHostStall;
    c.cause = f->cause;
    c.slowdown = f->slowdown;
    c.confidence = std::min(f->confidence, kSingleSourceCap);
    for (const Evidence& e : f->evidence) c.evidence.push_back(e.text);
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// A step-time culprit's slowdown spread over the run, and the words that
// say so: its step finding's episode, when it recovered (RecoveredShare),
// over the steps analysed; the slowdown itself, no words, otherwise.
struct RunShare {
  double cost = 0;
  std::string words;
};
RunShare OverTheRun(const Culprit& c, const StepAnalysis& steps) {
  const double slowdown = c.slowdown.value_or(0);
  for (const Finding& f : steps.findings) {
    if (f.code != FindingCode::kStepStraggler || f.entity.rank != c.entity.rank || !f.onset_step ||
        f.onset_step != c.onset_step)
      continue;
    if (std::optional<double> share = RecoveredShare(f, steps)) {
      return RunShare{slowdown * *share,
                      fmt::format("{:+.0f}% over steps {}-{}, ~{:.0f}% of the run", 100 * slowdown,
                                  *f.onset_step, *f.end_step, 100 * slowdown * *share)};
    }
  }
  return RunShare{slowdown, fmt::format("{:+.0f}%", 100 * slowdown)};
}

struct MoreWork {
  Culprit culprit;
  const Finding* finding = nullptr;  // its step.cpu_time_high
};

// `rank`'s mean CPU time per step over the run against the median of its
// peers' whose core ran the probe within kSameCoreProbe of its own over
// the run (on its core, as far as the probe tells); nullopt with no such
// peer.
std::optional<double> SameCorePeersWork(const Analyses& a, int32_t rank) {
  const size_t least = HostCpuDetectorOptions().min_cpu_time_steps;
  auto measured = [&](const RankCpuStats& r) {
    return r.on_cpu_mean_ns && r.on_cpu_steps >= least && r.probe_ns && *r.probe_ns > 0;
  };
  const RankCpuStats* mine = CpuStatsOf(a, rank);
  if (mine == nullptr || !measured(*mine)) return std::nullopt;
  std::vector<double> peers;
  for (const RankCpuStats& r : a.host_cpu.ranks) {
    if (r.rank == rank || !measured(r)) continue;
    const double probe = static_cast<double>(*r.probe_ns) / static_cast<double>(*mine->probe_ns);
    if (std::abs(probe - 1) <= kSameCoreProbe) peers.push_back(*r.on_cpu_mean_ns);
  }
  std::optional<double> median = Median(std::move(peers));
  if (!median || *median <= 0) return std::nullopt;
  return *mine->on_cpu_mean_ns / *median;
}

// Whether `more` (a step.cpu_time_high) is confirmed over the whole run by
// peers on its core: its CPU time per step >= 1 + max(kHiddenMoreWork,
// half its excess) theirs (SameCorePeersWork). Then the core does not
// explain the work.
bool SameCoreConfirms(const Analyses& a, const Finding& more) {
  std::optional<double> work = SameCorePeersWork(a, *more.entity.rank);
  return work && *work - 1 >= std::max(kHiddenMoreWork, more.slowdown.value_or(0) / 2);
}

// The one rank outside `named` whose thread does more work per step
// (step.cpu_time_high on probed steps of a CPU-only job), by at least
// `min_slowdown` and `min_z` standard errors, as a compute-slow culprit;
// nullopt when there is none or more than one. With `confirmed_z`, where
// peers on its core confirm it over the run (SameCoreConfirms), that many
// suffice and its core does not veto it.
std::optional<MoreWork> MoreWorkCulprit(const Analyses& a, const std::vector<int32_t>& named,
                                        double min_slowdown, double min_z,
                                        std::optional<double> confirmed_z = std::nullopt) {
  const Finding* more = nullptr;
  for (const Finding& f : a.host_cpu.findings) {
    if (f.code != FindingCode::kStepCpuTimeHigh || !f.entity.rank ||
        std::find(named.begin(), named.end(), *f.entity.rank) != named.end())
      continue;
    if (more != nullptr) return std::nullopt;  // two ranks do more work: not one straggler
    more = &f;
  }
  if (more == nullptr || more->slowdown.value_or(0) < min_slowdown ||
      !CpuOnlyTrace(a, *more->entity.rank))
    return std::nullopt;
  const RankCpuStats* stats = CpuStatsOf(a, *more->entity.rank);
  const bool confirmed = confirmed_z && SameCoreConfirms(a, *more);
  if (stats == nullptr || !stats->work_probed || stats->work_z < (confirmed ? *confirmed_z : min_z))
    return std::nullopt;
  // Its core ran the probe's fixed work nearly as much slower over the
  // run: the extra CPU time may be the core's, not more work
  // (bench/realjobs d8: a healthy rank 1.52x the CPU time on the 10 steps
  // its probe passed, on a core 1.62x slow over 40 steps, named
  // compute-slow beside the stalled rank; d11: 1.25x on a core 1.24x
  // slow). Not more work, then; host.cpu_slow speaks for the core. (A
  // rank compared with peers whose probe matched its own still moves
  // between cores within a step: the veto stays, unless peers on its core
  // over the whole run confirm the work.)
  if (!confirmed && CoreExplainsWork(a, *more->entity.rank, more->slowdown.value_or(0)))
    return std::nullopt;
  Culprit c;
  c.entity = more->entity;
  c.cause_class = CauseClass::kComputeSlow;
  c.slowdown = more->slowdown;
  c.confidence = std::min(more->confidence, kSingleSourceCap);
  for (const Evidence& e : more->evidence) c.evidence.push_back(e.text);
  c.evidence.push_back(
      "its traces hold CPU ops only: the thread's CPU time is the rank's compute; the others "
      "wait for it inside their own ops and collectives, so step times and op times read alike");
  return MoreWork{std::move(c), more};
}

// AlsoCpuWorkCulprit's second reading (kHiddenWorkPerProbe): the one rank
// outside `named` whose CPU time per step for its core's speed stands out
// from the other ranks outside `named` (a named rank that waits for a CPU
// reads low there: not a baseline), of which there are >= 2.
std::optional<Culprit> HiddenProbeWorkCulprit(const Verdict& v, const Analyses& a,
                                              const std::vector<int32_t>& named,
                                              std::vector<std::string>& next_steps) {
  const bool comm = FirstOf(a.traces.findings, FindingCode::kTraceCommBound) != nullptr ||
                    std::any_of(v.culprits.begin(), v.culprits.end(), [](const Culprit& c) {
                      return c.cause_class == CauseClass::kCommunication;
                    });
  if (comm) return std::nullopt;
  const size_t least = HostCpuDetectorOptions().min_cpu_time_steps;
  std::vector<const RankCpuStats*> unnamed;
  for (const RankCpuStats& r : a.host_cpu.ranks) {
    if (std::find(named.begin(), named.end(), r.rank) != named.end()) continue;
    if (!r.work_per_probe || *r.work_per_probe <= 0 || r.work_per_probe_steps < least ||
        !CpuOnlyTrace(a, r.rank))
      return std::nullopt;
    unnamed.push_back(&r);
  }
  if (unnamed.size() < 3) return std::nullopt;
  const ProbeWorkTop top = TopOfProbeWork(unnamed);
  const RankCpuStats* best = top.rank;
  const double best_ratio = top.ratio;
  if (best_ratio < 1 + kHiddenWorkPerProbe) return std::nullopt;
  // Each other rank not named, against the rest but `best`: under 1 +
  // kHiddenMoreWork (a second rank doing more work lifts best's baseline).
  const double next_ratio = top.next;
  if (next_ratio >= 1 + kHiddenMoreWork) return std::nullopt;
  Culprit c;
  c.entity.rank = best->rank;
  c.cause_class = CauseClass::kComputeSlow;
  c.slowdown = best_ratio - 1;
  c.confidence = kHiddenWorkPerProbeConfidence;
  c.evidence.push_back(fmt::format(
      "host CPU: rank {}'s thread used {:.2f}x the CPU time per step for its core's speed of the "
      "other ranks not named (CPU time over the probe's fixed work, median of {} steps; the "
      "others read at most {:.2f}x): it does more work each step",
      best->rank, best_ratio, best->work_per_probe_steps, next_ratio));
  c.evidence.push_back("its traces hold CPU ops only: the thread's CPU time is the rank's compute");
  AddSteps(next_steps,
           {fmt::format("compare what rank {} computes with its peers': batch and sequence sizes, "
                        "padding, the data shard, extra work on that rank",
                        best->rank)});
  return c;
}

}  // namespace

ProbeWorkTop TopOfProbeWork(const std::vector<const RankCpuStats*>& field) {
  // `r`'s reading against the field but r and `also`.
  auto ratio_of = [&](const RankCpuStats* r, const RankCpuStats* also) {
    std::vector<double> peers;
    for (const RankCpuStats* p : field) {
      if (p != r && p != also) peers.push_back(*p->work_per_probe);
    }
    return *r->work_per_probe / *Median(std::move(peers));
  };
  ProbeWorkTop top;
  for (const RankCpuStats* r : field) {
    const double ratio = ratio_of(r, nullptr);
    if (ratio > top.ratio) top.ratio = ratio, top.rank = r;
  }
  for (const RankCpuStats* r : field) {
    if (r != top.rank) top.next = std::max(top.next, ratio_of(r, top.rank));
  }
  return top;
}

bool CoreExplainsWork(const Analyses& a, int32_t rank, double excess) {
  return std::any_of(a.host_cpu.findings.begin(), a.host_cpu.findings.end(), [&](const Finding& f) {
    return f.code == FindingCode::kHostCpuSlow && f.entity.rank == rank &&
           f.slowdown.value_or(0) >= kCoreExplainsWork * excess;
  });
}

std::optional<Culprit> CpuWorkCulprit(const Analyses& a, std::vector<std::string>& next_steps) {
  const HostCpuDetectorOptions o;
  const double least = WorldSize(a.steps, a.traces) == 2 ? kTwoRankMoreWork : o.min_cpu_time_excess;
  std::optional<MoreWork> m = MoreWorkCulprit(a, {}, least, o.min_cpu_time_z);
  if (!m || LowTwoRankExcess(a, m->culprit.confidence)) return std::nullopt;
  PutStepsFirst(next_steps, m->finding->next_steps);
  return std::move(m->culprit);
}

bool AlsoCpuWorkCulprit(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps) {
  // With two ranks the one peer is the culprit named, and a rank's extra
  // CPU time may be its wait for that culprit inside the collectives
  // (gloo polls): no baseline tells a second fault from the first.
  if (v.status != VerdictStatus::kStraggler || v.culprits.empty() ||
      WorldSize(a.steps, a.traces) == 2)
    return false;
  std::vector<int32_t> named;
  for (const Culprit& c : v.culprits) {
    if (c.entity.rank) named.push_back(*c.entity.rank);
    named.insert(named.end(), c.ranks.begin(), c.ranks.end());
  }
  const HostCpuDetectorOptions o;
  std::optional<MoreWork> m = MoreWorkCulprit(
      a, named, kHiddenMoreWork, kHiddenMoreWorkZ * o.min_cpu_time_z, o.min_cpu_time_z);
  std::optional<Culprit> hidden;
  if (m) {
    AddSteps(next_steps, m->finding->next_steps);
    hidden = std::move(m->culprit);
  } else {
    hidden = HiddenProbeWorkCulprit(v, a, named, next_steps);
  }
  if (!hidden) return false;
  hidden->evidence.push_back(fmt::format(
      "hidden behind {}: the job waits for the slowest rank of each step, so a second, smaller "
      "delay does not show in step times",
      EntityName(v.culprits.front().entity)));
  v.culprits.push_back(std::move(*hidden));
  return true;
}

bool NarrowGroupToMoreWork(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps) {
  if (v.status != VerdictStatus::kStraggler || v.culprits.empty()) return false;
  const Culprit& group = v.culprits.front();
  if (group.ranks.size() < 2 || group.cause_class == CauseClass::kHostStall) return false;
  const HostCpuDetectorOptions o;
  const double least = WorldSize(a.steps, a.traces) == 2 ? kTwoRankMoreWork : o.min_cpu_time_excess;
  std::optional<MoreWork> m = MoreWorkCulprit(a, {}, least, o.min_cpu_time_z);
  if (!m) return false;
  const int32_t rank = *m->culprit.entity.rank;
  if (std::find(group.ranks.begin(), group.ranks.end(), rank) == group.ranks.end()) return false;
  std::string others;
  for (int32_t r : group.ranks) {
    if (r == rank) continue;
    const RankCpuStats* stats = CpuStatsOf(a, r);
    // At most that above (one far below may read against the more-work
    // rank on their shared core: it does no more work either way).
    if (stats == nullptr || !stats->work_probed || !stats->work_ratio ||
        *stats->work_ratio > 1 + kGroupPeerWork)
      return false;
    others += fmt::format("{}rank {} {:.2f}x", others.empty() ? "" : ", ", r, *stats->work_ratio);
  }
  Culprit one = std::move(m->culprit);
  one.evidence.insert(one.evidence.begin(), group.evidence.front());
  one.evidence.push_back(fmt::format(
      "the rest of the late group uses no more CPU time per step than the ranks it is compared "
      "with ({}): late waiting on rank {}",
      others, rank));
  PutStepsFirst(next_steps, m->finding->next_steps);
  v.culprits.front() = std::move(one);
  return true;
}

bool PreferHostCpu(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps) {
  std::vector<const Finding*> waiting = Waiting(a);
  if (v.status != VerdictStatus::kStraggler || waiting.empty()) return false;
  double waited = waiting.front()->slowdown.value_or(0);
  auto unexplained = [&](const Culprit& c) {
    return c.cause_class == CauseClass::kUnknown && c.entity.rank && c.ranks.size() <= 1 &&
           c.slowdown.value_or(0) < waited && HostCpuOf(a, *c.entity.rank) == nullptr;
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
  PutStepsFirst(next_steps, waiting.front()->next_steps);
  return true;
}

bool PreferCpuWork(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps) {
  if (v.status != VerdictStatus::kStraggler || v.culprits.empty()) return false;
  std::vector<std::string> probe_steps;
  std::optional<Culprit> work = CpuWorkCulprit(a, probe_steps);
  if (!work) return false;
  const double more = work->slowdown.value_or(0);
  // Step-time culprits only: a slowdown measured, no trace naming the rank;
  // an episode's spread over the run (what it costs), as the work's is.
  auto weaker = [&](const Culprit& c) {
    return c.cause_class == CauseClass::kUnknown && c.entity.rank && c.ranks.size() <= 1 &&
           c.entity.rank != work->entity.rank && c.slowdown && OverTheRun(c, a.steps).cost < more &&
           !FromTraces(a, *c.entity.rank) && HostCpuOf(a, *c.entity.rank) == nullptr;
  };
  if (!std::all_of(v.culprits.begin(), v.culprits.end(), weaker)) return false;
  // DropUnbornOut's test, passed first: its CPU time over the whole run
  // agrees, so the culprit named stays named.
  std::optional<double> ratio = CpuTimeRatio(a, *work->entity.rank);
  if (!ratio || *ratio - 1 < std::max(kCpuTimeAgreement, more / 4)) return false;
  std::string dropped;
  for (const Culprit& c : v.culprits) {
    dropped += fmt::format("{}rank {} ({})", dropped.empty() ? "" : ", ", *c.entity.rank,
                           OverTheRun(c, a.steps).words);
    // Its step finding's next steps name it the suspect and the work rank
    // a healthy peer.
    for (const Finding& f : a.steps.findings) {
      if (f.code == FindingCode::kStepStraggler && f.entity.rank == c.entity.rank)
        RemoveSteps(next_steps, f.next_steps);
    }
  }
  work->evidence.push_back(fmt::format(
      "step times alone point at {} with no cause; this rank's extra CPU time per step, on CPUs "
      "as fast, is the larger slowdown, and measured",
      dropped));
  // The step times' what-if priced the ranks dropped: the bound of this
  // rank's own slowdown instead.
  v.throughput_lost = more / (1 + more);
  v.impact_method = ImpactMethod::kUpperBound;
  v.gpu_hours_per_day = GpuHoursPerDay(v.throughput_lost, WorldSize(a.steps, a.traces));
  v.culprits = {std::move(*work)};
  PutStepsFirst(next_steps, probe_steps);
  return true;
}

bool StallDoesMoreWork(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps) {
  if (v.status != VerdictStatus::kStraggler || v.culprits.empty()) return false;
  Culprit& stall = v.culprits.front();
  // The traces' stall, no cause named beside it (host_contention is the
  // agent's or the probe's reading of the same rank: it stays).
  if (stall.cause_class != CauseClass::kHostStall || stall.cause || !stall.entity.rank ||
      stall.ranks.size() > 1 || !CpuOnlyTrace(a, *stall.entity.rank))
    return false;
  std::vector<std::string> work_steps;
  std::optional<Culprit> work = CpuWorkCulprit(a, work_steps);
  const double excess = work ? work->slowdown.value_or(0) : 0;
  if (!work || work->entity.rank != stall.entity.rank || excess < kStallMoreWork) return false;
  // Its traced ops explain the CPU time: their busy time per profiled step
  // at least half the excess above its peers' median (a stall that computes
  // outside the ops, inline decoding or GC, stays a stall).
  std::vector<double> peers;
  for (const RankTraceStats& t : a.traces.ranks) {
    const std::optional<double> busy = ComputePerStep(a.traces, t.rank);
    if (t.rank != *stall.entity.rank && busy && *busy > 0) peers.push_back(*busy);
  }
  const std::optional<double> mine = ComputePerStep(a.traces, *stall.entity.rank);
  const std::optional<double> peer_busy = Median(std::move(peers));
  if (!mine || !peer_busy || *mine < (1 + excess / 2) * *peer_busy) return false;
  // DropUnbornOut's test, passed first (as PreferCpuWork): its CPU time over
  // the whole run agrees, so the compute-slow culprit stays named.
  const std::optional<double> ratio = CpuTimeRatio(a, *stall.entity.rank);
  if (!ratio || *ratio - 1 < std::max(kCpuTimeAgreement, excess / 4)) return false;
  work->evidence.push_back(fmt::format(
      "the profiled steps read a host stall (it idles more than its peers between ops), but its "
      "thread used {:.2f}x its peers' CPU time per step, more than a wait costs (>= {:.2f}x): it "
      "computes more",
      1 + work->slowdown.value_or(0), 1 + kStallMoreWork));
  for (const std::string& e : stall.evidence) work->evidence.push_back(e);
  work->confidence = std::min(work->confidence, stall.confidence);
  work->onset_step = stall.onset_step;
  work->pattern = stall.pattern;
  for (const Finding& f : a.traces.findings) {
    if (f.code == FindingCode::kTraceHostStall && f.entity.rank == stall.entity.rank)
      RemoveSteps(next_steps, f.next_steps);
  }
  PutStepsFirst(next_steps, work_steps);
  stall = std::move(*work);
  return true;
}

}  // namespace laggard::verdict_internal
