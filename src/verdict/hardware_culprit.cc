// The verdict's last hardware rule: when step times are synchronised and
// no trace names a late rank, a cause seen on one GPU, the stronger when a
// whole-job slowdown began at the GPU's onset; or, with no slowdown tied to
// any, each of several GPUs that throttled strongly. Internal to
// src/verdict/.

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "model/time.h"
#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// The whole-job slowdown episode that began at `f`'s onset, if any.
const Episode* EpisodeAtOnset(const Analyses& a, const Finding& f) {
  if (!f.onset_time) return nullptr;
  for (const Episode& e : a.steps.job.episodes) {
    if (!e.start_time) continue;
    if (std::llabs(*f.onset_time - *e.start_time) <= OnsetSlack(e.median_step_s)) return &e;
  }
  return nullptr;
}

// Several GPUs with no slowdown tied to any: each is named at this
// confidence of its own finding or more (thermal with slowdown reasons
// active 0.85, clocks held low 0.75; a hot GPU without throttling less).
constexpr double kSeveralGpusMinConfidence = 0.7;

// The culprit of GPU finding `f` (`ep`: the slowdown episode tied to it).
Culprit CulpritOf(const Analyses& a, const Finding& f, const Episode* ep,
                  const Finding* late_trace);

}  // namespace

DurationNs OnsetSlack(double step_s) {
  constexpr DurationNs kMinSlackNs = 10'000'000'000;
  return std::max<DurationNs>(kMinSlackNs, static_cast<DurationNs>(2e9 * step_s));
}

bool IsGpuCause(FindingCode c) {
  return c == FindingCode::kGpuThermal || c == FindingCode::kGpuPowerCap ||
         c == FindingCode::kGpuClocksLow || c == FindingCode::kGpuPcieDowngrade ||
         c == FindingCode::kGpuNvlinkDown;
}

// When neither step times nor traces can tell which rank is slow (step
// times synchronised, no late arrival), a hardware anomaly on a GPU is the
// best remaining hypothesis (on several GPUs: each that shows its own cause
// at >= kSeveralGpusMinConfidence, unless one of them is tied to a
// slowdown): a degraded NVLink / PCIe link slows the
// collectives for everyone without making its rank late, and a throttled GPU
// shows in the GPU metrics even where no trace was taken. Confidence stays
// at kContradictedCap or below (one signal, unconfirmed by the ranks'
// timing), or kSingleSourceCap when a whole-job slowdown began at the GPU's
// onset (EpisodeAtOnset: two signals that agree in time).
std::vector<Culprit> HardwareOnlyCulprits(const Analyses& a) {
  // Without step times nothing says the job is slow at all: GPU findings
  // stay findings.
  if (!a.steps.job.synchronised || a.traces.culprit) return {};
  struct Candidate {
    const Finding* finding;
    const Episode* episode;  // EpisodeAtOnset(), or nullptr
  };
  std::vector<Candidate> cands;
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
    // Nor does it when the traces cover other steps than the whole-job
    // slowdown that began with the GPU's anomaly (a cap lifted before the
    // profiler ran).
    const Episode* ep = EpisodeAtOnset(a, f);
    bool untraced = ep != nullptr && ProfileMisses(a.steps.job, *ep);
    if (!comm && !a.traces.ranks.empty() && a.traces.instances > 0 && !late_here && !untraced)
      continue;
    cands.push_back(Candidate{&f, ep});
  }
  // Several GPUs: the one whose onset a whole-job slowdown followed. With
  // none tied to a slowdown, each GPU that shows its own cause strongly
  // (>= kSeveralGpusMinConfidence: throttled in its metrics, not merely
  // warm) is named, the most confident first: a synchronous job waits for
  // every one of them, and naming none misses them all (two throttled
  // cards in one job were "inconclusive").
  if (cands.size() > 1) {
    std::vector<Candidate> tied = cands;
    std::erase_if(tied, [](const Candidate& x) { return x.episode == nullptr; });
    if (tied.size() == 1) {
      cands = std::move(tied);
    } else if (tied.empty()) {
      std::erase_if(cands, [](const Candidate& x) {
        return x.finding->confidence < kSeveralGpusMinConfidence;
      });
      std::stable_sort(cands.begin(), cands.end(), [](const Candidate& x, const Candidate& y) {
        return x.finding->confidence > y.finding->confidence;
      });
    } else {
      return {};
    }
  }
  std::vector<Culprit> out;
  for (const Candidate& cand : cands) {
    out.push_back(CulpritOf(a, *cand.finding, cand.episode, late_trace));
  }
  return out;
}

namespace {

Culprit CulpritOf(const Analyses& a, const Finding& f, const Episode* ep,
                  const Finding* late_trace) {
  Culprit c;
  c.entity = f.entity;
  bool comm = f.code == FindingCode::kGpuNvlinkDown || f.code == FindingCode::kGpuPcieDowngrade;
  c.cause_class = comm ? CauseClass::kCommunication : CauseClass::kComputeSlow;
  c.cause = f.cause;
  // Two signals agree in time: the GPU's own metrics and the job's steps.
  c.confidence = std::min(ep ? kSingleSourceCap : kContradictedCap, f.confidence);
  c.onset_step = ep ? std::optional<int64_t>(ep->start_step) : std::nullopt;
  c.evidence.push_back("GPU: " + f.message);
  if (ep != nullptr) {
    double excess = ep->baseline_step_s > 0 ? ep->median_step_s / ep->baseline_step_s - 1 : 0;
    if (excess > 0) c.slowdown = excess;
    c.evidence.push_back(fmt::format(
        "steps: the whole job slowed in steps {}-{} ({:+.0f}%), from {}, {:.1f} s {} this GPU's "
        "onset",
        ep->start_step, ep->end_step, 100 * excess, FormatTimestamp(*ep->start_time),
        static_cast<double>(std::llabs(*ep->start_time - *f.onset_time)) / 1e9,
        *ep->start_time >= *f.onset_time ? "after" : "before"));
    if (ProfileMisses(a.steps.job, *ep)) {
      c.evidence.push_back(fmt::format(
          "traces: the profiled steps {}-{} lie outside that slowdown, so they cannot time it",
          a.steps.job.profiled_steps->first, a.steps.job.profiled_steps->last));
    }
  }
  if (late_trace != nullptr &&
      late_trace->entity.rank == a.ranks.RankOf(*f.entity.host, *f.entity.gpu)) {
    c.evidence.push_back("traces: " + late_trace->message);
  } else if (ep == nullptr) {
    c.evidence.push_back(comm ? "step times are synchronised and no rank arrives late: a slow link "
                                "slows every collective, not one rank"
                              : "step times are synchronised and no traces name a late rank: "
                                "unconfirmed by timing");
  }
  return c;
}

}  // namespace

std::optional<double> EpisodeThroughputLost(const Analyses& a, int64_t start_step) {
  for (const Episode& e : a.steps.job.episodes) {
    if (e.start_step != start_step || e.median_step_s <= e.baseline_step_s) continue;
    double in = static_cast<double>(e.steps) * e.median_step_s;
    double rest = static_cast<double>(a.steps.job.steps - std::min(a.steps.job.steps, e.steps)) *
                  e.baseline_step_s;
    if (in + rest <= 0) return std::nullopt;
    return static_cast<double>(e.steps) * (e.median_step_s - e.baseline_step_s) / (in + rest);
  }
  return std::nullopt;
}

std::optional<std::string> TimeTieStep(const Analyses& a) {
  if (!a.steps.job.synchronised) return std::nullopt;
  const std::vector<Episode>& eps = a.steps.job.episodes;
  auto untimed =
      std::find_if(eps.begin(), eps.end(), [](const Episode& e) { return !e.start_time; });
  if (untimed == eps.end()) return std::nullopt;
  for (const Finding& f : a.hardware.findings) {
    if (!IsGpuCause(f.code) || !f.onset_time || !f.entity.host || !f.entity.gpu) continue;
    return fmt::format(
        "log a timestamp with each step (a `timestamp` column in the step CSV / JSONL, or "
        "laggard_step.py) so that GPU {} of {}'s {} from {} can be tied to the whole job's "
        "slowdown of steps {}-{}: the step logs carry no times",
        *f.entity.gpu, *f.entity.host, f.cause.value_or("anomaly"), FormatTimestamp(*f.onset_time),
        untimed->start_step, untimed->end_step);
  }
  return std::nullopt;
}

}  // namespace laggard::verdict_internal
