// The verdict stage's internal interface: each source of culprits (one file
// each: rank_culprit.cc, hardware_culprit.cc, network_culprit.cc, ...), the
// enrichment and pricing of culprits, and the small rules they share
// (culprit_rules.cc: entity names, the first finding of a code, next-step
// lists, confidence arithmetic, a culprit from a finding, the run's noise).
// Internal to src/verdict/.

#ifndef LAGGARD_VERDICT_VERDICT_INTERNAL_H_
#define LAGGARD_VERDICT_VERDICT_INTERNAL_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "verdict/verdict.h"

namespace laggard::verdict_internal {

// What the step-time detector compared the ranks on, for the summary.
std::string_view TimesCompared(const StepAnalysis& steps);

std::string EntityName(const Entity& e);

// "(persistent, +21%)" or "(periodic: +60% every 100 steps)".
std::string PatternText(const Finding* f);

const Finding* FirstOf(const std::vector<Finding>& findings, FindingCode code);

const Finding* FirstOf(const StepAnalysis& a, FindingCode code);

void AddSteps(std::vector<std::string>& to, const std::vector<std::string>& from);

// Drops from `to` every step `gone` holds.
void RemoveSteps(std::vector<std::string>& to, const std::vector<std::string>& gone);

// `from`'s next steps first, then those already in `to` (without repeats).
void PutStepsFirst(std::vector<std::string>& to, const std::vector<std::string>& from);

// An agreeing signal's gain, within kMaxConfidence.
double Raised(double confidence, double gain);

size_t WorldSize(const StepAnalysis& steps, const TraceAnalysis& traces);

std::optional<double> GpuHoursPerDay(const std::optional<double>& throughput_lost, size_t world);

// Caps v.throughput_lost (an upper bound) at 1 - 1/(1 + slowdown) of its
// first culprit's own slowdown, when that culprit is a rank, GPU, host or
// NIC with one, and updates gpu_hours_per_day for `world` ranks.
void BoundByCulprit(Verdict& v, size_t world);

// A straggler verdict of a 2-rank job: each rank is compared with the other
// alone, and no majority says which is the odd one. Its rank culprits whose
// cause is unknown or host_contention (peer comparisons, not a GPU's or a
// link's own metric) are held to kTwoRankCap, below "high", with a line of
// evidence saying why. bench/realjobs 2026-12-05 (draws d2-d5, 480 runs):
// 2-rank first culprits at >= 0.8 were right in 62 of 69 runs (90%),
// 4-rank ones in 37 of 38. True when it lowered one.
inline constexpr double kTwoRankCap = 0.75;

// A communication-bound job (trace.comm_bound) whose transfers take at
// least this share of each step: the network is the larger problem than
// compute that varies between ranks (JobCauseVerdict: compute is then the
// smaller part of each step, however it varies) or rank culprits of
// another cause costing less than a third of it (PreferCommBound).
// bench/realjobs d11: a 100 Mbit link's transfers took 68-74% of the step
// against 5-15% in healthy runs.
inline constexpr double kCommMostOfStep = 0.5;

// The verdict of a communication-bound job (trace.comm_bound): no rank to
// blame, the job's transfers (rank_culprit.cc).
Verdict CommBoundVerdict(const Finding& comm);

// A no-straggler verdict, or a straggler verdict whose culprits are ranks
// (no host, NIC, switch or job) of another cause than communication or
// external, costing (an upper bound or measured) under a third of the
// share of each step the job's transfers take, in a job whose transfers
// take at least kCommMostOfStep of it: the verdict is communication-bound,
// and what it said before follows, the culprits as a smaller problem (bench/realjobs d11: a rank
// on a 1.7x slower core costing up to 7%, where a 100 Mbit link's
// transfers took 72% of each step). Culprits of no observed cause costing
// under kMinorBesideNetwork in all (an upper bound) are said as minor, not
// named (d13, d14: a rank late by 1-2% of a 2-rank job behind the link, a
// host stall of no cause, was named beside it). Compute-slow ranks read
// from their thread's CPU time alone (CPU-only traces, no trace finding of
// theirs above information: late arrival, compute-slow, host stall) are not
// named either, whatever their cost: gloo
// waits for a transfer on a CPU, polling, so a rank's CPU time per step there is its wait as much
// as its work (bench/realjobs d39 w4_comm_100mbit rep 2: healthy rank 1 at 1.17x its peers' CPU
// time over 20 steps was said as a smaller problem, +17%; d18, d19 and d33 had such ranks too).
// True when it changed the verdict (culprit_rules.cc).
inline constexpr double kMinorBesideNetwork = 0.03;
bool PreferCommBound(Verdict& v, const Analyses& a);
bool CapTwoRankConfidence(Verdict& v, size_t world);

// After culprits were dropped for `dropped` (why, each): with none left the
// verdict is no straggler, saying the first why, with `next_step`; else the
// first culprit carries it. False when nothing was dropped.
bool SayDropped(Verdict& v, const std::vector<std::string>& dropped, std::string next_step);

// A lone rank culprit the others barely wait for is not holding the job
// back: when the upper bound of its cost (what the others waited on it) is
// under kCostlessBelow, the verdict is no straggler and says what was
// found. bench/realjobs d10 (2026-12-06): the one straggler verdict of 120
// under 2% cost 0.36% (rank 0, a slower core, last at 1 of 10
// collectives), named "confidence high". True when it dropped one.
inline constexpr double kCostlessBelow = 0.01;
bool DropCostlessCulprit(Verdict& v);

// ", costs up to ~19% of job throughput" (an upper bound), ", costs ~12%
// of job throughput (what-if replay)"; "" without a figure.
std::string CostPhrase(const Verdict& v);

// The job's step time changed level once (JobStepStats::level_shift) at
// the first culprit's onset (its onset step within 5 steps, or an anomaly of
// its GPU within 10 s of the shift's start), or nothing says when that
// culprit began: the culprit is priced by it (ImpactMethod::kBeforeAfter)
// where it has no figure yet, or, when tied, has an upper bound and the
// measurement is within the culprit's own 1 - 1/(1 + slowdown). A replay or
// lower bound stays, and a periodic or intermittent culprit is not one
// level. Puts the cost phrase in v.summary. True when priced (impact.cc).
bool PriceByLevelShift(Verdict& v, const Analyses& a);

// A pause culprit (host.pause) without a figure is priced by the job's
// isolated slow steps, its pauses: their seconds over the median step, over
// all the job's seconds since the first (JobStepStats::spike_cost,
// ImpactMethod::kSlowSteps). True when priced (impact.cc).
bool PriceByPauses(Verdict& v, const Analyses& a);

// A culprit of one finding's entity, slowdown, onset and pattern, its
// confidence at most `cap`.
Culprit CulpritOf(const Finding& f, CauseClass cause_class, double cap);

// The rank that pauses at the job's isolated slow steps (host.pause,
// pause_detector.h): a host stall, on the finding's evidence.
Culprit PauseCulprit(const Finding& pause);

// How many steps a rank's median needs for a 10% excess to stand three
// standard errors above the run's per-step noise (the median's standard
// error is ~1.2533 sigma / sqrt(n) for normal noise), at least 5 (fewer
// do not measure the noise itself); nullopt when the noise is unknown.
std::optional<size_t> StepsToTell(const StepAnalysis& steps);

// "cannot tell: N steps, need M" where the run has fewer steps than
// StepsToTell(), and the step detector named nobody (`named_nobody`) or
// only ranks whose excess is within the noise (WithinStepNoise); nullopt
// otherwise.
std::optional<Verdict> TooFewStepsVerdict(const StepAnalysis& steps, bool named_nobody);

// A persistent step straggler whose excess is under three standard errors
// of its median (1.2533 sigma / sqrt(its steps)) of the run's per-step
// noise, in a run too short to tell (StepsToTell). An episode that began
// and recovered is measured over its own steps, whatever the run's length,
// and so is one that began after the first analysed step and lasted to the
// last, unless the rank is slow over the whole run too (SlowOverTheRun:
// excess >= 5% at z >= 3, its total time >= 2.5% over its peers'):
// bench/realjobs 2026-12-05 (d6) named a healthy 4-rank run's rank 1 for
// +8% over steps 28-32 with the run's per-step noise at 7.6% (three
// standard errors over 5 steps: 12.8%).
bool WithinStepNoise(const Finding& straggler, const StepAnalysis& steps);

// A step straggler whose slowdown comes and goes (periodic, intermittent,
// or an episode that recovered) on a rank not slow over the whole run (its
// median under the step detector's 5% flag threshold, or its total time
// under 2.5% over its peers': not SlowByMedianAndTotal), hitting at most
// kMinorStepHits steps by under its strong threshold (15%) each, and costing,
// spread over the rank's analysed steps, under kMinorStepCost of its step
// time: the cost, else nullopt. Step times alone do not name such a rank
// (bench/realjobs d8, 2026-12-06: healthy runs named rank 1 for 4 steps of
// +12% every 4 steps, 1.4% over the run, and rank 0 for +11% over steps
// 5-9, 1.6%; the host's cores drift apart for seconds at a time). More
// hits, a stronger slowdown, a rank slow throughout, or one that a trace or
// a host signal names, is judged as before; simulated pauses are named by
// their pause findings, whatever their cost.
inline constexpr double kMinorStepCost = 0.02;
inline constexpr double kMinorStepHits = 10;
std::optional<double> MinorStepCost(const Finding& straggler, const StepAnalysis& steps);

// The share of its rank's analysed steps that a persistent step straggler
// which recovered (onset to end_step) covers; nullopt when it lasted to the
// end, is of another pattern, or its rank is slow over the whole run too
// (SlowByMedianAndTotal: the episode is then its worst part, not all it
// costs).
std::optional<double> RecoveredShare(const Finding& straggler, const StepAnalysis& steps);

// A step straggler step times alone do not stand by: inside the run's noise
// (WithinStepNoise) or minor (MinorStepCost). It neither names, nor agrees
// with, nor contradicts a culprit.
bool StepStragglerTooWeak(const Finding& straggler, const StepAnalysis& steps);

// "; minor, not named: rank 1: 4 slow steps (...) — ~1.4% of its step time
// over the run" for each step straggler MinorStepCost() leaves out; empty
// when there is none.
std::string MinorStepText(const StepAnalysis& steps);

// Thermal, power cap, clocks, PCIe, NVLink: the GPU findings that name a
// cause (hardware_culprit.cc).
bool IsGpuCause(FindingCode c);

// How far a GPU anomaly's onset may sit from the start of a whole-job change
// of step time and still be the same event: nvidia-smi / DCGM sample every
// 1-5 s and a change point is placed to a step, so max(10 s, two steps of
// `step_s`) (judgement; hardware_culprit.cc).
DurationNs OnsetSlack(double step_s);

// A port down, a degraded link, low bandwidth, a socket fallback, no GPU
// Direct RDMA, a poor path: the network findings that name a cause
// (network_culprit.cc).
bool IsNetCause(FindingCode c);

// Whether `f` is about the GPU of `e`: the same rank, or the same host and
// GPU index; OnHost: about `host` (enrich_culprit.cc).
bool OnGpu(const Finding& f, const Entity& e);
bool OnHost(const Finding& f, const std::optional<std::string>& host);

// Adds the hardware and network evidence of a rank culprit's GPU and host
// (its cause when observed); EnrichGroupCulprit: a group's, whose GPUs show
// a hardware cause during the slow steps. True when the culprit's cause or
// confidence changed (enrich_culprit.cc).
bool EnrichRankCulprit(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps);
bool EnrichGroupCulprit(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps);

// Hosts whose network evidence is strong enough to blame on its own, not
// already named for communication in `v`; their next steps are added
// (network_culprit.cc).
std::vector<Culprit> NetworkCulprits(const Verdict& v, const Analyses& a,
                                     std::vector<std::string>& next_steps);

// GPUs' hardware anomalies as the culprits where step times and traces
// cannot name one: the GPU a whole-job slowdown followed, else each GPU
// with its own strong anomaly; empty when none (hardware_culprit.cc).
std::vector<Culprit> HardwareOnlyCulprits(const Analyses& a);

// The share of the job's time the whole-job slowdown episode starting at
// `start_step` cost: its steps' excess over the baseline / the job's time,
// the other steps at the baseline (hardware_culprit.cc).
std::optional<double> EpisodeThroughputLost(const Analyses& a, int64_t start_step);

// Where that rule cannot tie a GPU's anomaly to a whole-job slowdown because
// the step logs carry no times: the next step that would.
std::optional<std::string> TimeTieStep(const Analyses& a);

// A culprit (a rank, or a group of ranks) whose process waited for a CPU
// (host.cpu_contention) or whose CPU ran slower than its peers'
// (host.cpu_slow): host contention when that explains at least half its
// slowdown and no GPU or network cause was observed, else one more piece of
// evidence. Not by the probe over the run for a one-rank culprit read from
// the profiled steps whose core ran the probe there at most 1 -
// max_step_probe_gap times its peers' (faster) while its CPU time there for
// its core's speed is >= 1 + kWindowWorkPerProbe times theirs: an evidence
// line says the run's core is not why (bench/realjobs d11-d21: 3 such runs,
// 2.0x faults from mid-run whose ranks swapped cores and a 2-rank 1.2x, their
// window probe 0.59-0.90x, work per probe there 1.15-1.92x).
// Returns true when it changed the culprit (host_cpu_culprit.cc).
bool EnrichHostCpu(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps);

// Where step times and traces name no culprit: the ranks that wait for a
// CPU while their peers do not, the most slowed first (host_cpu_culprit.cc).
std::vector<Culprit> HostCpuCulprits(const Analyses& a);

// What the agent saw on the cores of each host_contention culprit
// (a.host_cpu.seen_by_agent, analysis/host/host_neighbours.h), as evidence:
// the busiest processes not the job's (at most kMaxNeighboursSaid per
// culprit) with their command lines, steal of at least kAgentStealFloor,
// a core speed of at most kAgentSlowCore. Stopping or moving the
// neighbour, and moving off a host with steal, go first in the verdict's
// next steps (agent_evidence.cc).
inline constexpr size_t kMaxNeighboursSaid = 3;
inline constexpr double kAgentStealFloor = 0.05;
inline constexpr double kAgentSlowCore = 0.9;
void SayWhatTheAgentSaw(Verdict& v, const Analyses& a);

// Where step times and traces name no culprit, in a job whose traces hold
// CPU ops only: the one rank whose thread uses more CPU time per step than
// its peers', step by step on CPUs as fast as theirs (step.cpu_time_high,
// probes logged), is compute-slow. Its next steps go first. nullopt with no
// such rank or more than one (host_cpu_culprit.cc).
// In a 2-rank job the excess must be at least kTwoRankMoreWork: one rank
// is compared with one, and bench/realjobs 2026-12-05 (d6, cores 1.37x
// apart) had a healthy 2-rank run at 1.08x over 24 steps with equal probes;
// 4-rank healthy runs stayed at <= 1.02x where z >= 5.
inline constexpr double kTwoRankMoreWork = 0.15;
// Nor is it named below medium confidence (too few steps on cores as
// fast): CpuWorkUndecided says it and what would tell (bench/realjobs d34:
// a healthy 2-rank rank at 1.21x over 14 probe-matched steps, 1.07x over
// the run, confidence 0.49, on cores 1.73x apart; of the 13 faulty 2-rank
// ranks so named in d11-d33, one was below 0.5: d32, 1.2x, 0.47 over 11
// steps).
inline bool LowTwoRankExcess(const Analyses& a, double confidence) {
  return WorldSize(a.steps, a.traces) == 2 && confidence < kMediumConfidence;
}
std::optional<Culprit> CpuWorkCulprit(const Analyses& a, std::vector<std::string>& next_steps);

// Where nothing else names a straggler in a 2-rank CPU-only job: the rank
// whose CPU time per step over its probe time (the work per unit of its
// core's speed, median over >= min_cpu_time_steps steps) is >= 1 +
// kTwoRankProbeWork times its peer's is compute-slow, at
// kTwoRankProbeWorkConfidence: it does more work, though a faster core
// may hide it from step and op times. The probe does not feel all that
// slows a GEMM: bench/realjobs d11-d18 (96 2-rank runs each of healthy and
// stall ranks) put healthy and stalled runs' ranks at up to 1.25x, 1.5x
// faults at 1.23-1.9x (p10 1.32); 8 2-rank x1.5 / x2.0 runs were "no
// straggler" beside a peer on a core 1.5-1.9x slower (slow_core_culprit.cc).
// `lost`: its extra CPU time per step over its peer's as a share of its
// own, what the job waits for it at most now; none named where its faster
// core hides it (its CPU time per step under 1 + kCpuTimeAgreement times
// its peer's).
inline constexpr double kTwoRankProbeWork = 0.35;
inline constexpr double kTwoRankProbeWorkConfidence = 0.55;
struct ProbeWork {
  Culprit culprit;
  double lost = 0;
};
std::optional<ProbeWork> ProbeWorkCulprit(const Analyses& a, std::vector<std::string>& next_steps);
// Where ProbeWorkCulprit names none because the rank's faster core hides
// its extra work (CPU time per step under 1 + kCpuTimeAgreement times its
// peer's, its core's probe time under its peer's): what SayCpuWorkUndecided
// says of it, a run that can tell (a third rank, or the cores swapped),
// and that the probe may overstate the cores' difference. bench/realjobs: a
// 2-rank 2.0x rank on a core 1.83x faster, and d12's 1.5x rank on a core
// 1.55x faster, both with CPU time per step ~1.0x their peer's.
std::optional<std::string> FasterCoreHidesWork(const Analyses& a);

// A straggler verdict of a CPU-only job with one more rank, not named, whose
// thread does more work per step (step.cpu_time_high on probed steps) by
// at least kHiddenMoreWork and kHiddenMoreWorkZ times the detector's
// standard errors: a second straggler hidden behind the first (the job
// waits for each step's slowest rank), named compute-slow. bench/realjobs
// 2026-12-05: the two-fault runs' 1.5x rank read 1.41-1.44x at 16-59
// standard errors; the one other such rank, beside a periodic stall, 1.06x
// at 6 (host_cpu_culprit.cc). Not in a 2-rank job: the one peer is the
// culprit, and a rank waiting for it inside collectives burns CPU time
// (d15 w2_cpu_hog_r0, d17 w2_host_stall_15ms_r2: the healthy rank at
// 1.25-1.28x its stalled peer's CPU time, named beside it). True when it
// added one.
// Peers on the hidden rank's own core over the whole run (their probe
// within kSameCoreProbe of its own) whose CPU time per step is below its
// own by max(kHiddenMoreWork, half its excess) confirm the work: then the
// detector's own floor of standard errors suffices, and the core does not
// explain it (here only: a rank named alone keeps the veto) (bench/realjobs d11-d17: 6 two-fault
// runs' 1.5x rank read 1.36-1.55x at 6.0-13.3 standard errors, 1.33-1.49x against the rank sharing
// its core; the 4-rank healthy ranks' same-core ratio reached 1.24x).
// Failing that, the one rank not named whose CPU time per step for its
// core's speed (work_per_probe: CPU time over the probe's time, median
// over the steps) is >= 1 + kHiddenWorkPerProbe times the median of the
// other ranks not named (>= 2 of them: a named rank that waits for a CPU
// reads low, no baseline), each of the others under 1 + kHiddenMoreWork
// of the rest's but its, in a job with no
// communication culprit or comm-bound traces (a throttled rank's peers
// burn CPU time polling in gloo: to 1.36x) is named so, at
// kHiddenWorkPerProbeConfidence. bench/realjobs d11-d24, 4-rank runs on
// floating ranks: the two-fault runs' 1.5x rank read 1.27-1.46x (52
// runs), the faulty 1.5x ranks 1.31x and more; 2,600 other ranks outside
// the throttled-link runs 1.20x at most (a CPU hog's). Per-step CPU time
// against peers on as fast a core read the two-fault runs' missed 1.5x
// ranks at 3.8-6.5 standard errors only (cores 1.6-1.9x apart).
inline constexpr double kHiddenMoreWork = 0.1;
inline constexpr double kHiddenMoreWorkZ = 2;
inline constexpr double kSameCoreProbe = 0.05;
inline constexpr double kHiddenWorkPerProbe = 0.25;
inline constexpr double kHiddenWorkPerProbeConfidence = 0.6;
bool AlsoCpuWorkCulprit(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps);

// A straggler verdict of a CPU-only job whose first culprit is a group of
// ranks late together, not for a CPU they wait on, of which exactly one
// rank's thread does more work per step (step.cpu_time_high on probed
// steps, as CpuWorkCulprit) while every other member's CPU time per step is
// within kGroupPeerWork of its peers': that rank alone is the culprit,
// compute-slow; the others were late waiting on it. bench/realjobs
// 2026-12-06 (d7, cores 1.06x): a 1.5x rank 3 at 1.41x CPU time and rank 1
// at its peers' were named "ranks 1, 3, uneven work" (host_cpu_culprit.cc).
// True when it narrowed the group.
inline constexpr double kGroupPeerWork = 0.05;
bool NarrowGroupToMoreWork(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps);

// A no-straggler or inconclusive verdict whose CPU-only job has a rank that
// ran more CPU time per step than its peers, on CPUs as fast, but over too
// few steps to tell from noise: its summary and next steps say what it
// would take ("rank 3's thread used 1.08x ... run ~60 steps to tell");
// not for a rank whose core explains the excess (kCoreExplainsWork). Else,
// in a 2-rank job, what FasterCoreHidesWork says, else what
// TwoRankExcessNote says; else, with >= 3 ranks, what WorkSensitivityText
// says (cpu_work_note.cc). UndecidedWorkText: the first three's text.
std::optional<std::string> UndecidedWorkText(const Analyses& a);
void SayCpuWorkUndecided(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps);
// A CPU-only job of >= 3 ranks with probed work ratios: the run steps in
// which a rank with kTellExcess more work would stand out from this run's
// noise in 19 runs of 20 (StepsToTellExcess) — "run ~N steps to tell"
// (too_short) when the run had fewer, else that it had enough — after the
// rank with the largest excess that no other rule speaks for: >= 1 +
// kTellExcess / 4 but under 1 + min_cpu_time_excess (above it
// CpuWorkUndecided speaks), >= 1 standard error, its core not explaining
// it (what it reads against what naming it needs). nullopt when the ratios
// are too few. The issue's "say how many steps a run needs to tell 10%
// from its noise" (bench/realjobs d24: two 4-rank 1.1x runs read
// 1.04-1.05x at 1.3-3.3 standard errors, "no straggler" with nothing more).
// Without such a rank, the one whose CPU time per step for its core's speed
// (work_per_probe) stands >= 1 + kTellExcess / 2 over the others' median
// with each other rank under 1 + kTellExcess / 4, outside comm-bound
// traces, is said as the largest excess, not named (bench/realjobs d35 and
// d36, 4-rank runs, from the step tables: the 1.1x and 1.2x ranks read
// 1.07-1.28x, the next rank under 1.025x in 6 of 16; the tops of the 16
// healthy runs 1.10x at most, none with the next under 1.025x. Said in 1
// of the 240 runs, d35's w4_compute_1.1 rep 1, whose "4 ranks within 3.3%
// ... run ~531 steps to tell" named no rank).
inline constexpr double kTellExcess = 0.1;
struct SensitivityNote {
  std::string text;
  bool too_short = false;  // the run had fewer steps than it needs
};
std::optional<SensitivityNote> WorkSensitivityText(const Analyses& a);
// In a 2-rank CPU-only job, the rank whose thread used the most CPU time
// per step over its peer's on CPUs as fast (work_ratio >= 1 + kTellExcess /
// 4, under 1 + kTwoRankMoreWork, >= 1 standard error, its core not
// explaining it): what it read, and that with one peer only a third rank
// or swapped cores tell it from its core. nullopt with no such rank.
// WorkSensitivityText's largest excess, for two ranks (bench/realjobs d28:
// 2-rank 1.1x ranks at 1.03-1.08x CPU time, "no straggler" with nothing
// more).
std::optional<std::string> TwoRankExcessNote(const Analyses& a);
// How every 2-rank reading of extra work that one peer cannot tell from the
// cores ends: what would tell.
inline constexpr std::string_view kTwoRanksCannotTell =
    "(a probe does not feel all that slows a GEMM): compare with a third rank, or swap the "
    "ranks' cores";
// What SayCpuWorkUndecided says of a rank not in `skip` on CPUs as fast
// (its first part), whatever the verdict; nullopt when it would say
// nothing.
std::optional<std::string> CpuWorkUndecided(const Analyses& a,
                                            const std::vector<int32_t>& skip = {});

// Where step times and traces name no straggler (a no-straggler or
// inconclusive verdict `v`), in a CPU-only job: the rank the traces found
// last at >= kLateOnSlowCoreShare of the collectives but did not blame
// (its ops under the CPU floors, a small delay: on a shared host's cores,
// often chance), whose core ran the probe >= 1 + min_probe_excess times
// its peers' over the run (host.cpu_slow) and in the profiled steps, by
// enough to explain kWindowCoreExplains of its delay: the host's slower
// core makes it late, a culprit with the host as the cause. `lost` is its
// delay's share of the profile (the longest rank's window), what it costs
// at most. bench/realjobs d12: a healthy rank's core 1.63x slow (1.26x in
// the window), last at 7 of 10 collectives, 90% of the waiting and 10% of
// the profile, was "no straggler" (host_cpu_culprit.cc).
inline constexpr double kLateOnSlowCoreShare = 0.6;
struct LateOnSlowCore {
  Culprit culprit;
  double lost = 0;
};
std::optional<LateOnSlowCore> LateOnSlowCoreCulprit(const Verdict& v, const Analyses& a,
                                                    std::vector<std::string>& next_steps);

// The evidence line of a late group's more work assumed from its slower
// ops with no GPU metrics to rule out a hardware cause (GroupVerdict);
// EnrichHostCpu takes it back where the ranks' CPU time shows no more work
// and each waits for a CPU (bench/realjobs d16, d17: a busy loop on the
// core of ranks 1 and 3 of 4, named "ranks 1, 3 uneven work" at +16%
// while each waited 34% of its step for a CPU at 1.06x its peers' CPU time).
inline constexpr std::string_view kAssumedMoreWork =
    "no GPU metrics for these ranks' hosts: more work per step (pipeline stage / partition) is "
    "assumed; GPU metrics would rule out a hardware cause";
// The same reading where GPU metrics show no hardware cause (GroupVerdict).
inline constexpr std::string_view kInferredMoreWork =
    "no GPU metric shows a hardware cause on these GPUs: the ranks do more work per step "
    "(pipeline stage / partition), not slower work";
// The start of EnrichHostCpu's line for a slower CPU that explains part of
// a culprit's slowdown only; SlowerCoreOnAverage takes it back.
inline constexpr std::string_view kSlowerCpuExplainsPart =
    "host CPU: its slower CPU explains part of it";

// Where nothing else names a straggler, in a CPU-only job: each rank (not
// in `not_these`) whose core ran the probe >= 1 + kSlowCoreNamed times its
// peers' over the run (host.cpu_slow) and whose thread used >= 1 +
// kCpuTimeAgreement times their CPU time per step over the run: the same
// work run longer on a slower core, which the ranks in step with it wait
// for at every collective (so step times read alike), a culprit with the
// host as the cause, the slowest core first. `lost` is the largest
// culprit's extra CPU time as a share of its step, what it costs at most.
// None while another rank's extra CPU time is undecided (CpuWorkUndecided
// of a rank neither named nor in `not_these`: more steps, or a third rank,
// tell whether that is the fault).
// bench/realjobs d17 w2_compute_1.1_r0: the faulty rank on a core 1.58x
// slow, 1.21x its peer's CPU time per step, was "no straggler"; the issue
// asks that a rank on a measurably slower core be named with a host cause
// (slow_core_culprit.cc).
inline constexpr double kSlowCoreNamed = 0.2;
struct SlowCore {
  std::vector<Culprit> culprits;
  double lost = 0;
};
std::optional<SlowCore> SlowCoreCulprits(const Analyses& a, const std::vector<int32_t>& not_these,
                                         std::vector<std::string>& next_steps);

// A compute-slow culprit of a CPU-only job (no cause known, one rank) whose
// core ran the probe >= 1 + kSlowCoreNamed times its peers' on average over
// the run (RankCpuStats::probe_mean_ns: a rank that moves between cores
// shows its time on the slower one there, not in the median) while its
// CPU time per step over its probe time is under 1 + kCpuTimeAgreement
// times theirs (work_per_probe): the same work on a slower core; its cause
// becomes host_contention, the host's next step first. bench/realjobs
// d15 w2_healthy_2_r1, d19 w2_healthy_0_r3: healthy 2-rank ranks at 1.31x
// and 1.32x the mean probe, 0.96x and 1.02x the work per probe, named
// compute-slow from ops 1.52x and 1.16x; no faulty compute-slow rank of
// d11-d19 passes both (work per probe 1.06x and up; the one at a mean
// probe >= 1.2x, 1.15x). True when it renamed it (slow_core_culprit.cc).
// Both over >= min_cpu_time_steps steps; and in the profiled steps its CPU
// time over its probe time (window means) under 1 + kWindowWorkPerProbe
// times its peers' (1 + kSlowCoreNamed for a core slowed part of the run,
// kPartTimeCore). Run after the drops, on the culprits they kept.
inline constexpr double kWindowWorkPerProbe = 0.1;
// A core slowed part of the run reads so: its mean probe over its peers' >=
// 1 + kPartTimeCore times its median probe over theirs. Then
// SlowerCoreOnAverage reads the work from the run's means (mean CPU time
// over mean probe, under 1 + kWindowWorkPerProbe), not per step: the
// step's CPU time spans the slow stretches its probe may miss; and the
// profiled steps' work per probe within 1 + kSlowCoreNamed, not 1 +
// kWindowWorkPerProbe: their ~10 probes may have missed those stretches.
// bench/realjobs d27 w2_healthy_0_r3: a healthy rank's probes 50 or ~95 us,
// mean 1.33x its peer's, median 1.08x; CPU time 1.40x, so 1.05x of its mean
// core, but 1.43x on the steps whose probes matched (named compute-slow).
inline constexpr double kPartTimeCore = 0.1;
bool SlowerCoreOnAverage(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps);

// A straggler verdict whose every culprit is a rank of unknown cause, less
// slowed than a rank that waits for a CPU: those ranks become the culprits
// (host_cpu_culprit.cc). Returns true when it changed the verdict.
bool PreferHostCpu(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps);

// A straggler verdict of a CPU-only job whose every culprit is a rank of
// unknown cause, named by step times alone, less slowed than another rank's
// thread does more work per step (CpuWorkCulprit): that rank is the
// culprit, compute-slow, and the step-time ranks an evidence line. The CPU
// time per step measures the work; a few percent of step time on one rank
// of 4 ranks sharing 2 cores measures the scheduler (bench/realjobs d9:
// rank 3 computing 1.1x, 1.09x its peers' CPU time over 34 probed steps,
// while step times put healthy rank 0 at +6%). A step-time episode that
// recovered is compared by its share of the run (d13: healthy rank 1 +14%
// over steps 11-15 of 35 beside rank 3 at 1.06x CPU time over 27 probed
// steps). True when it changed the verdict.
bool PreferCpuWork(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps);

// A straggler verdict of a CPU-only job whose first culprit is one rank
// the traces read as a host stall (trace.host_stall, no cause named beside
// it) while its thread does more work per step on CPUs as fast
// (CpuWorkCulprit names the same rank) by at least kStallMoreWork, its
// traced ops' busy time per profiled step at least half that excess above
// its peers' median
// (a stall that computes outside the ops, inline decoding or GC, stays a
// stall) and its CPU time over the run passing DropUnbornOut's test:
// compute-slow, the stall's evidence kept. bench/realjobs d37
// w4_compute_1.5 rep 1: the faulty rank, its ops 1.46x its peers' (not
// passed as slow ops by the traces) and a 42 ms idle gap, was named
// host_stall while its CPU time per step read 1.42x (+-0.02 over 21 steps).
// A wait costs CPU time too (cold caches after it): d38's 40 stalled ranks
// (sleeps of 15-250 ms, data and host stalls) read 0.94-1.06x their peers'
// mean CPU time per step, three 50 ms stalls 1.06-1.09x step by step, so
// named compute-slow with no floor; the 1.5x faults read 1.39-1.49x.
// True when it changed the culprit.
inline constexpr double kStallMoreWork = 0.25;
bool StallDoesMoreWork(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps);

// A CPU-only job's compute-slow culprit from the traces' profiled window
// whose thread's mean CPU time per step over the whole run is within
// max(kCpuTimeAgreement, its slowdown / 4) of its peers': the window's
// difference does not last, and the culprit is dropped; with none left the
// verdict is no straggler, saying why. Kept when its core ran the probe
// < 1 + min_probe_excess / 2 times its peers' in the profiled steps and its
// CPU time per step there was above theirs by the margin above: the cores
// did not make the window's difference (bench/realjobs: a 2.0x fault from
// step 20 on a rank with the faster core, 1.8x faster, read 0.95-1.07x
// over the run; window probes 0.55-0.67x; healthy ranks dropped here ran
// theirs 1.35-1.69x; 4-rank ranks with ops 1.27-1.53x, probe and CPU time
// at their peers' in the window, stay dropped); such a one is said and
// held to kTwoRankCap (the run's CPU time does not back it), unless (a)
// with >= 3 ranks its CPU time there over its core's is under 1 +
// kWindowNoiseZ times the run's window_noise (what stretches as long of
// the unprofiled steps show by chance), or (b) another culprit stays that
// the profiled steps alone do not name: then it is dropped too
// (bench/realjobs d11-d32: the 4-rank healthy ranks kept this way alone
// read 0.5-2.7 such deviations, a 1.1x rank 4.9 (d27); beside a rank
// computing 2.0x, healthy ranks read 4.2 (d24) and 8.0 (d32, 1.12x in the
// window on a calm run). Kept so too on a core slower in the window, when
// its thread's CPU time there and its ops' excess are each >= 1 +
// kSlowerCoreWindowWork times that core's slowness: more than
// a slower core makes (d35: a 2.0x fault from step 20 whose rank took the
// slower core at step 23, CPU time 2.56x and ops 2.79x its peer's on a core
// 1.79x as slow by the probe, read 1.39x over the run; healthy ranks on
// slower cores in the window of d35's 120 runs read CPU time 0.85-1.18x
// their core's slowness, a probe overstating what a slower core does to
// the job's work). Returns true when it dropped or kept one so
// (window_culprit.cc).
inline constexpr double kCpuTimeAgreement = 0.05;
// A job-wide slowdown episode of at most kPassingEpisodeSteps steps that
// ended before the run did, costing under kPassingEpisodeShare of the run's
// time, is said in a no-straggler verdict, not made the job-wide verdict
// (rank_culprit.cc, PassingEpisode): a 3-step blip of a 40-step run whose
// probes did not rise is a passing event, not the job's state
// (bench/realjobs: 11 of 420 healthy runs of d11-d32 and one of d36's 20
// read "job-wide slowdown" for +50-114% over 3-5 steps). A slowdown that
// lasts, or runs to the last step, or recurs (periodic) stays job-wide.
inline constexpr size_t kPassingEpisodeSteps = 5;
inline constexpr double kPassingEpisodeShare = 0.05;
inline constexpr double kWindowNoiseZ = 4;
inline constexpr double kSlowerCoreWindowWork = 0.3;
bool DropUnbornOut(Verdict& v, const Analyses& a);

// A 2-rank CPU-only job's one culprit, read from the traces with no cause
// and no onset or pattern (late at the collectives, its ops and idle
// under the floors), whose thread used >= 1 + kTellExcess / 4 but < 1 +
// kTwoRankLateWork times its peer's CPU time per step, step by step on
// CPUs as fast (work_ratio, >= kTwoRankLateWorkZ standard errors), and
// in the profiled steps enough more to make half its cost there: late for
// that extra CPU time, which one peer cannot tell from the two cores'
// difference (a healthy 2-rank run read 1.09x, w2_healthy_two_cores) —
// dropped, the verdict no straggler, asking for a third rank or the
// cores swapped. bench/realjobs d11-d26 (1,800 runs): the 3 culprits read
// so were all wrong, 2 healthy runs' ranks at 1.05x and 1.07x (6.9-7
// standard errors, their ops 1.2x in the window) and a 1.1x run's healthy
// rank at 1.06x (cpu_work_note.cc). True when it dropped one.
inline constexpr double kTwoRankLateWorkZ = 2;
inline constexpr double kTwoRankLateWork = 0.1;
bool DropTwoRankLateWork(Verdict& v, const Analyses& a);

// A single-rank culprit read from the traces alone (no cause observed)
// whose CPU ran the probe >= 1 + min_probe_excess times its peers' in the
// profiled steps (mean) and by enough to explain half its slowdown, while
// over the run it ran < 1 + min_probe_excess / 2 times theirs (median; <
// 1 + min_probe_excess when the window explains kWindowCoreExplains of its
// slowdown): its core slowed while the profiler ran (a shared VM's cores
// do, often). A compute-slow one only in a CPU-only job, with no
// step.cpu_time_high (more work measured step by step), whose CPU time per
// step over the run is within DropUnbornOut's margin of its peers' (with
// the window explaining kWindowCoreExplains: of its peers' times its
// core's slowness over the run); where its CPU time in the window is its
// core's (work per probe there under 1 + kWindowWorkPerProbe its peers'),
// its CPU time per step and its core outside the profiled steps instead
// (bench/realjobs d20: 1.06x over the run, 0.97x outside). Dropped; with
// none left, no straggler, said why.
// One whose core ran the probe >= 1 + min_probe_excess times its peers'
// over the run as well, in a CPU-only job, with the window explaining
// kWindowCoreExplains of its slowdown (and, compute-slow, its CPU time per
// step over the run within its core's slowness times DropUnbornOut's
// margin) is not dropped but named host_contention, its next step first
// (bench/realjobs d11: a healthy rank's ops 1.39x its peer's, its probe
// 1.65x in the profiled steps, was named compute-slow). True when it
// dropped or renamed one (window_culprit.cc).
inline constexpr double kWindowCoreExplains = 0.75;
bool DropWindowCoreSlowdown(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps);

// Whether the traces of `rank` hold CPU ops only: the job computes on its
// CPUs, and the thread's CPU time is its compute (host_cpu_culprit.cc).
// `rank`'s host CPU measurements (a.host_cpu.ranks); nullptr without
// them (host_cpu_culprit.cc).
const RankCpuStats* CpuStatsOf(const Analyses& a, int32_t rank);
bool CpuOnlyTrace(const Analyses& a, int32_t rank);
// Whether a trace finding (late arrival, compute-slow) names `rank`: the
// culprit was read from the profiled steps.
bool FromTraces(const Analyses& a, int32_t rank);
// The rank's core speed and CPU time in the profiled steps against its
// peers': its mean probe time there over their median (`probe`) and its
// mean CPU time per step there over theirs (`cpu`); nullopt unless both are
// known, `probe` positive (RankCpuStats::window_probe_ns, window_cpu_ns;
// host_cpu_culprit.cc).
struct WindowRatios {
  double probe = 1;
  double cpu = 1;
  double WorkPerProbe() const { return cpu / probe; }
};
std::optional<WindowRatios> WindowRatiosOf(const Analyses& a, int32_t rank);
// The rank's mean CPU time per step over the run (its total: a fault that
// began mid-run counts in full) against its peers' median, the ranks in
// `without` left out of the peers (host_cpu_culprit.cc).
std::optional<double> CpuTimeRatio(const Analyses& a, int32_t rank,
                                   const std::vector<int32_t>& without = {});

// A rank's extra CPU time per step (step.cpu_time_high) is no proof of
// more work when its core ran the probe at least this share of that
// excess slower over the run (host.cpu_slow): MoreWorkCulprit names none,
// unless beside another culprit peers on its core confirm it
// (AlsoCpuWorkCulprit, kSameCoreProbe).
inline constexpr double kCoreExplainsWork = 0.75;
// Whether `rank`'s core ran the probe slower over the run (host.cpu_slow)
// by at least kCoreExplainsWork of a CPU-time `excess`: the extra CPU time
// may be the core's (host_cpu_culprit.cc).
bool CoreExplainsWork(const Analyses& a, int32_t rank, double excess);
// Of >= 3 ranks each with a work_per_probe (CPU time over probe time), the
// one reading highest against the others' median, that ratio, and the
// highest of the others' against the rest but it (a second rank doing more
// work lifts the top's baseline). Used by AlsoCpuWorkCulprit's hidden rank
// and WorkSensitivityText's note (host_cpu_culprit.cc).
struct ProbeWorkTop {
  const RankCpuStats* rank = nullptr;
  double ratio = 0;
  double next = 0;
};
ProbeWorkTop TopOfProbeWork(const std::vector<const RankCpuStats*>& field);

// Where laggard's own evidence cannot decide (inconclusive, or too few
// ranks with step times or traces to compare) and no GPU's finding names a
// culprit either: the rank Megatron's StragglerDetector, else NVRx, names
// slowest, alone, consistently (tool.straggler_report / tool.nvrx_report,
// warning), cause unknown unless its GPU's or host's findings say
// (tool_culprit.cc).
std::optional<Culprit> ToolReportCulprit(const Verdict& v, const Analyses& a,
                                         std::vector<std::string>& next_steps);

// Cites the StragglerDetector and NVRx beside the verdict: on each rank
// culprit, a line per tool saying whether it agrees; on a verdict with no
// culprit, their readings in the summary. A run with nothing else about the
// ranks (no step times or traces of two ranks, no GPU or network warning)
// takes their reading as the verdict: "no straggler" when the
// StragglerDetector's every report lies within 5% (NVRx's kernel scores
// alone never clear a job), else inconclusive, saying why (tool_culprit.cc).
void CiteToolReports(Verdict& v, const Run& run, const Analyses& a,
                     std::vector<std::string>& next_steps);

// The verdict of a model-parallel job's op timeline (pipeline_culprit.cc):
// a stage, a worker, the work or a communication group, with the what-if
// replay's numbers; nullopt when the pipeline detector found nothing.
std::optional<Verdict> PipelineVerdict(const Analyses& a);
// Traced compute per profiled step of `rank` (RankTraceStats::
// compute_busy_ns / steps), when traced (pipeline_culprit.cc).
std::optional<double> ComputePerStep(const TraceAnalysis& traces, int32_t rank);

// Whether every culprit of `v` is explained by the stage that a stage
// imbalance finding names (pipeline_culprit.cc): then PipelineVerdict()'s
// stage replaces them.
bool CulpritsAreAnImbalancedStage(const Verdict& v, const Analyses& a);

// The verdict of a stopped job (hang_culprit.cc): the hang detector's first
// finding as the culprit, with what the step times said about it before;
// nullopt when the run holds no hang evidence.
std::optional<Verdict> HangVerdict(const Run& run, const Analyses& a);

// A step-time straggler `f` beside a culprit the traces named (`first`):
// true, with a word on `first`, when its slowdown is under
// kSmallStepStraggler and the traces, covering its rank at >= 5
// collectives, show it arriving no later than the median, or last at none
// and after the median by under the trace detector's
// second_rank_min_lateness of a step (it waits for the others there). It is then not a
// second culprit: step times of ranks that share cores spread by a few
// percent (bench/realjobs: 4 ranks on 2 vCPUs named a healthy rank +5%
// beside a 1.5x rank the traces showed; d13: a healthy rank +7%, last at
// none of 10 collectives, 0.28 ms after the median, was named first beside
// a rank stalled 15 ms a step). StepStragglerTracedWaiting says why, or
// nullopt; it is not a contradiction of the traced culprit either.
inline constexpr double kSmallStepStraggler = 0.10;
std::optional<std::string> StepStragglerTracedWaiting(const Finding& f,
                                                      const TraceAnalysis& traces);
bool SmallStepStragglerTracedEarly(const Finding& f, const TraceAnalysis& traces, Culprit& first);

// Whether a step-time straggler's episode lies wholly outside the steps the
// profiler traced (it recovered before them, or began after): the traces
// cannot confirm or contradict it (bench/realjobs d14: healthy rank 0 +16%
// in steps 5-10 capped the traced 1.92x rank of steps 30-39 at 0.5, "but
// step times point at rank 0").
bool StragglerOutsideProfile(const Finding& f, const StepAnalysis& steps);

// The verdict from step times and traces alone, most specific rule first
// (rank_culprit.cc): a late rank, a late group, a step straggler, a
// job-wide cause, traces that clear the run, or no culprit.
Verdict BaseVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces);

// The straggler verdict's summary line: its first three culprits with their
// cause, confidence and cost (cause.cc).
std::string StragglerSummary(const Verdict& v);

}  // namespace laggard::verdict_internal

#endif  // LAGGARD_VERDICT_VERDICT_INTERNAL_H_
