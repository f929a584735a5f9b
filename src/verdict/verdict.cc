#include "verdict/verdict.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "verdict/verdict_internal.h"

namespace laggard {
namespace {

using verdict_internal::AddSteps;
using verdict_internal::AlsoCpuWorkCulprit;
using verdict_internal::BaseVerdict;
using verdict_internal::BoundByCulprit;
using verdict_internal::CapTwoRankConfidence;
using verdict_internal::CiteToolReports;
using verdict_internal::CpuWorkCulprit;
using verdict_internal::CulpritsAreAnImbalancedStage;
using verdict_internal::DropCostlessCulprit;
using verdict_internal::DropTwoRankLateWork;
using verdict_internal::DropUnbornOut;
using verdict_internal::DropWindowCoreSlowdown;
using verdict_internal::EnrichGroupCulprit;
using verdict_internal::EnrichHostCpu;
using verdict_internal::EnrichRankCulprit;
using verdict_internal::EpisodeThroughputLost;
using verdict_internal::FirstOf;
using verdict_internal::GpuHoursPerDay;
using verdict_internal::HangVerdict;
using verdict_internal::HardwareOnlyCulprits;
using verdict_internal::HostCpuCulprits;
using verdict_internal::LateOnSlowCoreCulprit;
using verdict_internal::NarrowGroupToMoreWork;
using verdict_internal::NetworkCulprits;
using verdict_internal::OnGpu;
using verdict_internal::PauseCulprit;
using verdict_internal::PipelineVerdict;
using verdict_internal::PreferCommBound;
using verdict_internal::PreferCpuWork;
using verdict_internal::PreferHostCpu;
using verdict_internal::PriceByLevelShift;
using verdict_internal::PriceByPauses;
using verdict_internal::ProbeWorkCulprit;
using verdict_internal::PutStepsFirst;
using verdict_internal::SayCpuWorkUndecided;
using verdict_internal::SayWhatTheAgentSaw;
using verdict_internal::SlowCoreCulprits;
using verdict_internal::SlowerCoreOnAverage;
using verdict_internal::StallDoesMoreWork;
using verdict_internal::StragglerSummary;
using verdict_internal::TimeTieStep;
using verdict_internal::ToolReportCulprit;
using verdict_internal::WorldSize;

// What is missing to decide, as next steps.
void AskForMissing(const Run& run, const Verdict& v, std::vector<std::string>& next_steps) {
  for (const Culprit& c : v.culprits) {
    if (!c.entity.rank || c.cause_class != CauseClass::kUnknown) continue;
    auto mentions = [&](std::string_view what) {
      return std::any_of(next_steps.begin(), next_steps.end(),
                         [&](const std::string& s) { return s.find(what) != std::string::npos; });
    };
    if (c.entity.host && run.hardware.Find(*c.entity.host, c.entity.gpu.value_or(-1)) == nullptr &&
        !mentions("nvidia-smi dmon")) {
      AddSteps(
          next_steps,
          {fmt::format(
              "no GPU metrics for {}: run `nvidia-smi dmon -s pucvmt -o DT -d 1` there and on a "
              "healthy host at the same time, and `nvidia-smi -q` once",
              *c.entity.host)});
    }
    if (run.traces.empty() && !mentions("trace")) {
      AddSteps(next_steps,
               {fmt::format("add profiler traces of 2 steps from rank {} and a healthy rank to "
                            "tell compute-slow from waiting",
                            *c.entity.rank)});
    }
    break;
  }
}

// What a more-work culprit costs at most: its extra work per step, as
// PreferCpuWork prices it; none where the job's step time changed level
// once by no more than that, which measures it (PriceByLevelShift takes a
// shift up to the culprit's own bound).
std::optional<double> WorkBound(const Culprit& c, const Analyses& a) {
  if (!c.slowdown || *c.slowdown <= 0) return std::nullopt;
  const double bound = *c.slowdown / (1 + *c.slowdown);
  const std::optional<LevelShift>& shift = a.steps.job.level_shift;
  if (shift && shift->cost() <= bound) return std::nullopt;
  return bound;
}

}  // namespace

Verdict DecideVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces) {
  return BaseVerdict(run, steps, traces);
}

namespace {

// What the verdict costs (its pauses, else a level shift of the step
// time); then a lone culprit that costs nothing measurable is dropped.
void Price(Verdict& v, const Analyses& a) {
  if (!PriceByPauses(v, a)) PriceByLevelShift(v, a);
  DropCostlessCulprit(v);
}

// A straggler verdict's culprits enriched with their causes, replaced by
// stronger host CPU evidence, or dropped; `none_left` when every one was
// dropped (the verdict then says no straggler, and why), `dropped` their
// ranks. True when it changed them.
bool RefineStragglers(Verdict& v, const Analyses& a, std::vector<std::string>& next,
                      bool& none_left, std::vector<int32_t>& dropped) {
  bool changed = false;
  for (Culprit& c : v.culprits) {
    changed |= c.ranks.size() > 1 ? EnrichGroupCulprit(c, a, next) : EnrichRankCulprit(c, a, next);
    changed |= EnrichHostCpu(c, a, next);
  }
  changed |=
      PreferHostCpu(v, a, next) || PreferCpuWork(v, a, next) || StallDoesMoreWork(v, a, next);
  std::vector<int32_t> named;
  for (const Culprit& c : v.culprits) {
    if (c.entity.rank) named.push_back(*c.entity.rank);
    named.insert(named.end(), c.ranks.begin(), c.ranks.end());
  }
  if (DropUnbornOut(v, a) | DropWindowCoreSlowdown(v, a, next) | DropTwoRankLateWork(v, a)) {
    none_left = v.culprits.empty();
    if (none_left) {
      dropped = std::move(named);
      return true;
    }
    changed = true;
  }
  for (Culprit& c : v.culprits) changed |= SlowerCoreOnAverage(c, a, next);
  changed |= NarrowGroupToMoreWork(v, a, next);
  changed |= AlsoCpuWorkCulprit(v, a, next);
  return changed;
}

// The most likely culprit first; but a second slow rank the traces found
// beside their culprit (trace.compute_slow of another rank) stays behind
// it, whatever host evidence raised it to: the traces' culprit holds the
// job up most (bench/realjobs d18 w4_data_stall_15ms_r0: a healthy rank on
// a core 1.71x slow, ops 1.60x, 1.08 ms late, was put before the rank
// whose data stall made 93% of the waiting).
void OrderCulprits(Verdict& v, const Analyses& a) {
  std::stable_sort(v.culprits.begin(), v.culprits.end(),
                   [](const Culprit& x, const Culprit& y) { return x.confidence > y.confidence; });
  const std::optional<int32_t> primary = a.traces.culprit;
  if (!primary) return;
  auto second = [&](const Culprit& c) {
    return c.entity.rank && *c.entity.rank != *primary && c.ranks.size() <= 1 &&
           std::any_of(a.traces.findings.begin(), a.traces.findings.end(), [&](const Finding& f) {
             return f.code == FindingCode::kTraceComputeSlow && f.entity.rank == c.entity.rank;
           });
  };
  auto first = std::find_if(v.culprits.begin(), v.culprits.end(), [&](const Culprit& c) {
    return c.entity.rank == primary && c.ranks.size() <= 1;
  });
  if (first == v.culprits.end()) return;
  auto ahead = std::find_if(v.culprits.begin(), first, second);
  if (ahead != first) std::rotate(ahead, first, first + 1);
}

// `v` names `culprits`, which cost `lost` at most when known.
void NameCulprits(Verdict& v, std::vector<Culprit> culprits, const Analyses& a,
                  std::optional<double> lost = std::nullopt) {
  v.culprits = std::move(culprits);
  v.status = VerdictStatus::kStraggler;
  v.throughput_lost = lost;
  if (lost) v.impact_method = ImpactMethod::kUpperBound;
  v.gpu_hours_per_day = GpuHoursPerDay(lost, WorldSize(a.steps, a.traces));
}

// Where step times and traces name no straggler: culprits found by another
// signal (a pause, a wait for a CPU, more work, more work for its core's
// speed in a 2-rank job, a late rank on a slower core, a slower core of a rank not
// in `set_aside`, a GPU, a tool's report), with what they cost at most when
// known; a hardware culprit joins `net`, its episode's cost in `hw_cost`.
// True when it named.
bool NameByOtherSignals(Verdict& v, const Analyses& a, std::vector<std::string>& next,
                        std::vector<Culprit>& net, std::optional<double>& hw_cost,
                        const std::vector<int32_t>& set_aside = {}) {
  if (const Finding* pause = FirstOf(a.pauses.findings, FindingCode::kHostPause)) {
    PutStepsFirst(next, pause->next_steps);
    NameCulprits(v, {PauseCulprit(*pause)}, a);
  } else if (auto cpu = HostCpuCulprits(a); !cpu.empty()) {
    if (const Finding* f = FirstOf(a.host_cpu.findings, FindingCode::kHostCpuContention))
      PutStepsFirst(next, f->next_steps);
    NameCulprits(v, std::move(cpu), a);
  } else if (auto work = CpuWorkCulprit(a, next)) {
    std::optional<double> lost = WorkBound(*work, a);
    NameCulprits(v, {std::move(*work)}, a, lost);
  } else if (auto probe = ProbeWorkCulprit(a, next)) {
    NameCulprits(v, {std::move(probe->culprit)}, a, probe->lost);
  } else if (auto late = LateOnSlowCoreCulprit(v, a, next)) {
    NameCulprits(v, {std::move(late->culprit)}, a, late->lost);
  } else if (auto core = v.status == VerdictStatus::kNoStraggler
                             ? SlowCoreCulprits(a, set_aside, next)
                             : std::nullopt) {
    NameCulprits(v, std::move(core->culprits), a, core->lost);
  } else if (auto hws = HardwareOnlyCulprits(a); !hws.empty()) {
    // Tied to a slowdown episode: what that episode cost.
    if (hws.size() == 1 && hws[0].onset_step) {
      hw_cost = EpisodeThroughputLost(a, *hws[0].onset_step);
    }
    for (const Culprit& hw : hws) {
      for (const Finding& f : a.hardware.findings) {
        if (OnGpu(f, hw.entity)) AddSteps(next, f.next_steps);
      }
      // A GPU no rank could be tied to: what would tie it.
      if (auto tie = a.ranks.TieStep(hw.entity.host, hw.entity.gpu)) AddSteps(next, {*tie});
      // A GPU link fault shows in nccl-tests / NET findings of its host
      // too: the GPU is the more specific culprit.
      std::erase_if(net, [&](const Culprit& c) { return c.entity.host == hw.entity.host; });
    }
    net.insert(net.begin(), hws.begin(), hws.end());
    return false;
  } else if (auto tool = ToolReportCulprit(v, a, next)) {
    NameCulprits(v, {std::move(*tool)}, a);
  } else {
    if (auto tie = TimeTieStep(a)) AddSteps(next, {*tie});
    return false;
  }
  return true;
}

// Every culprit of a straggler verdict was dropped (`dropped`: their
// ranks; `v` says no straggler, and why): another signal's culprit
// (NameByOtherSignals), when it names none of those ranks (but one that
// waits for a CPU, a host-stall culprit with host.cpu_contention on its
// rank: the wait stretched its ops), no hardware, and in a 2-rank job no
// more-work rank (its one baseline is the rank set aside), is the verdict,
// the drop's reason an evidence line, with its own next steps. True when
// it named one; else `v` stays the no-straggler verdict (the first signal
// that names a rank set aside otherwise ends the search).
bool NameAfterDrop(Verdict& v, const Analyses& a, const std::vector<int32_t>& dropped,
                   std::vector<std::string>& next) {
  Verdict named = v;
  std::vector<std::string> steps;
  std::vector<Culprit> net;
  std::optional<double> hw_cost;
  if (!NameByOtherSignals(named, a, steps, net, hw_cost, dropped) || !net.empty()) return false;
  auto set_aside = [&](int32_t r) {
    return std::find(dropped.begin(), dropped.end(), r) != dropped.end();
  };
  // A rank set aside that waits for a CPU (host.cpu_contention) is named
  // for it: its ops ran long, and the wait says why.
  auto waits = [&](const Culprit& c) {
    return c.cause_class == CauseClass::kHostStall && c.entity.rank &&
           std::any_of(
               a.host_cpu.findings.begin(), a.host_cpu.findings.end(), [&](const Finding& f) {
                 return f.code == FindingCode::kHostCpuContention && f.entity.rank == c.entity.rank;
               });
  };
  const bool two = WorldSize(a.steps, a.traces) == 2;
  for (const Culprit& c : named.culprits) {
    // With two ranks a more-work rank's one baseline is the rank set aside.
    if ((c.entity.rank && set_aside(*c.entity.rank) && !waits(c)) ||
        std::any_of(c.ranks.begin(), c.ranks.end(), set_aside) ||
        (two && c.cause_class == CauseClass::kComputeSlow))
      return false;
  }
  const std::string said = "verdict: no straggler — ";
  const std::string why = v.summary.starts_with(said) ? v.summary.substr(said.size()) : v.summary;
  // A rank set aside and named for its wait: why it was set aside, and
  // that its wait names it all the same.
  bool renamed = false;
  for (Culprit& c : named.culprits) {
    if (!c.entity.rank || !set_aside(*c.entity.rank)) continue;
    c.evidence.push_back("its profiled steps' culprit was set aside (" + why +
                         "); it is named for its wait for a CPU, which stretched its ops");
    renamed = true;
  }
  if (!renamed)
    named.culprits.front().evidence.push_back("the profiled steps' culprit set aside: " + why);
  v = std::move(named);
  next = std::move(steps);
  return true;
}

}  // namespace

Verdict DecideVerdict(const Run& run, const Analyses& a) {
  // A stopped job: the hang is the verdict, whatever the steps before it did.
  if (auto hang = HangVerdict(run, a)) return *hang;
  Verdict v = BaseVerdict(run, a.steps, a.traces);
  // An op timeline's verdict where step times and traces name no straggler,
  // and a stage's where the stragglers named are that stage's ranks, alike:
  // the stage is partitioned heavier, its ranks are not faulty.
  if (v.status != VerdictStatus::kStraggler || CulpritsAreAnImbalancedStage(v, a)) {
    if (auto pipeline = PipelineVerdict(a)) v = std::move(*pipeline);
  }
  bool changed = false;
  std::vector<std::string> next = v.next_steps;
  if (v.status == VerdictStatus::kStraggler) {
    bool none_left = false;
    std::vector<int32_t> dropped;
    changed = RefineStragglers(v, a, next, none_left, dropped);
    if (none_left && !NameAfterDrop(v, a, dropped, next)) {  // no straggler, said why
      SayCpuWorkUndecided(v, a, v.next_steps);
      PreferCommBound(v, a);
      return v;
    }
  }
  std::vector<Culprit> net = NetworkCulprits(v, a, next);
  std::optional<double> hw_cost;  // of the hardware-only culprit's episode
  if (v.status != VerdictStatus::kStraggler)
    changed |= NameByOtherSignals(v, a, next, net, hw_cost);
  if (!net.empty()) {
    changed = true;
    if (v.status != VerdictStatus::kStraggler) {
      // Synchronised or job-wide step times are what a slow link looks like
      // from the ranks: the slow transfer holds everyone back equally. A
      // job-wide cause the traces show (imbalance, interference) is a
      // second problem and stays.
      // A communication-bound job is what the named link does: the link
      // replaces it.
      std::erase_if(v.culprits, [](const Culprit& c) {
        return !c.entity.job || c.cause_class == CauseClass::kUnknown ||
               c.cause_class == CauseClass::kCommunication;
      });
      v.throughput_lost.reset();
      v.gpu_hours_per_day.reset();
      v.status = VerdictStatus::kStraggler;
    }
    for (Culprit& c : net) v.culprits.push_back(std::move(c));
  }
  if (changed) OrderCulprits(v, a);
  if (hw_cost && !v.throughput_lost) {
    v.throughput_lost = hw_cost;
    v.gpu_hours_per_day = GpuHoursPerDay(hw_cost, WorldSize(a.steps, a.traces));
  }
  AskForMissing(run, v, next);
  SayCpuWorkUndecided(v, a, next);
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
  changed |= CapTwoRankConfidence(v, WorldSize(a.steps, a.traces));
  if (changed) {
    BoundByCulprit(v, WorldSize(a.steps, a.traces));
    v.summary = StragglerSummary(v);
  }
  Price(v, a);
  PreferCommBound(v, a);
  CiteToolReports(v, run, a, v.next_steps);
  SayWhatTheAgentSaw(v, a);
  return v;
}

}  // namespace laggard
