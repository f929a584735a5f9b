// The last decision of the trace detector (trace_detector.h): DecideTraces,
// the findings; and AnalyzeTraces, the four steps in a row. The metrics are
// in trace_metrics.cc, the suspect in trace_suspect.cc.

#include "analysis/traces/trace_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

std::string Ms(DurationNs ns) { return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6); }

// The step of `trace` whose range holds `t`; nullopt when none does.
std::optional<int64_t> StepAt(const RankTrace& trace, TimeNs t) {
  for (const TraceStep& st : trace.steps) {
    if (t >= st.start_ns && t < st.end_ns) return st.step;
  }
  return std::nullopt;
}

// Up to 3 of rank index `ri`'s latest arrivals, in trace order: which
// collective (its sequence number in its group when traced), in which
// step, when, and how late against the instance's median rank; the byte
// offset locates the event in the file.
std::vector<Evidence> LateCallEvidence(const TraceMetrics& m, size_t ri) {
  if (ri >= m.traces.size() || m.traces[ri] == nullptr) return {};  // metrics made by hand
  const RankTrace& trace = *m.traces[ri];
  const std::vector<std::optional<DurationNs>>& lateness = m.ranks[ri].call_lateness_ns;
  std::vector<DurationNs> late(lateness.size(), 0);  // 0: unmatched, or early
  std::vector<size_t> calls;
  for (size_t c = 0; c < lateness.size() && c < trace.collectives.size(); ++c) {
    late[c] = lateness[c].value_or(0);
    if (late[c] > 0) calls.push_back(c);
  }
  const size_t n = std::min<size_t>(3, calls.size());
  std::partial_sort(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(n), calls.end(),
                    [&](size_t a, size_t b) { return late[a] > late[b]; });
  calls.resize(n);
  std::sort(calls.begin(), calls.end());
  std::vector<Evidence> out;
  for (size_t c : calls) {
    const CollectiveCall& call = trace.collectives[c];
    std::string_view name = m.names ? m.names->Get(call.collective) : std::string_view();
    if (name.empty() && m.names) name = m.names->Get(call.kernel);
    std::string what(name.empty() ? std::string_view("collective") : name);
    if (call.seq) what += fmt::format(" #{}", *call.seq);
    if (call.group && m.names) what += fmt::format(" (group {})", m.names->Get(*call.group));
    std::optional<int64_t> step = StepAt(trace, call.start_ns);
    // Wall clock when the trace has one; a trace timed from its own start
    // says how far into it.
    std::string when =
        trace.origin == TraceOrigin::kHostClock
            ? FormatTimestamp(call.start_ns)
            : fmt::format("{:.3f} s into the trace", static_cast<double>(call.start_ns) / 1e9);
    out.push_back(Evidence{
        fmt::format("rank {} arrived {} after the median rank at {}{}, {} (byte offset {})",
                    m.ranks[ri].rank, Ms(late[c]), what,
                    step ? fmt::format(" in step {}", *step) : std::string(), when, call.offset),
        SourceRef{m.ranks[ri].file, 0}});
  }
  return out;
}

// The communication library rank index `ri`'s collectives ran in, from
// their op names ("gloo:all_reduce" -> "gloo collectives"); "NCCL" for
// device kernels, and when the metrics carry no traces (tests).
std::string BackendWord(const TraceMetrics& m, size_t ri) {
  if (ri >= m.traces.size() || m.traces[ri] == nullptr || m.names == nullptr) return "NCCL";
  for (const CollectiveCall& c : m.traces[ri]->collectives) {
    std::string_view name = m.names->Get(c.kernel);
    for (auto [prefix, word] : {std::pair{"gloo", "gloo collectives"},
                                {"mpi", "MPI collectives"},
                                {"ucc", "UCC collectives"}}) {
      if (name.rfind(prefix, 0) == 0) return word;
    }
  }
  return "NCCL";
}

Finding NoMatchFinding(const TraceMetrics& m, const TraceDetectorOptions& opt) {
  Finding f = MakeFinding(FindingCode::kTraceNoMatch);
  f.entity.job = true;
  f.confidence = opt.confidence.no_match;
  size_t with = 0;
  for (const RankTraceStats& st : m.ranks) with += st.collectives > 0;
  f.message = fmt::format(
      "{} rank traces, {} with collectives, but no collective call could be matched across ranks "
      "(different steps profiled, or different jobs?)",
      m.ranks.size(), with);
  f.next_steps.push_back(
      "profile the same steps on every rank (torch.profiler schedule with the same wait/warmup/"
      "active on all ranks) so collectives can be matched");
  return f;
}

std::optional<Finding> ClockOffsetsFinding(const TraceMetrics& m, const TraceDetectorOptions& opt) {
  const size_t R = m.ranks.size();
  std::vector<DurationNs> offset(R, 0);
  DurationNs max_abs_offset = 0;
  for (size_t ri = 0; ri < R; ++ri) {
    offset[ri] = m.ranks[ri].clock_offset_ns.value_or(0);
    max_abs_offset = std::max(max_abs_offset, std::abs(offset[ri]));
  }
  if (max_abs_offset < opt.clock_offset_report_ns) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kTraceClockOffsets);
  f.entity.job = true;
  f.confidence = opt.confidence.clock_offsets;
  // The largest offsets first.
  std::vector<size_t> order(R);
  for (size_t ri = 0; ri < R; ++ri) order[ri] = ri;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::abs(offset[a]) > std::abs(offset[b]); });
  std::string list;
  for (size_t i = 0; i < R && i < 6; ++i) {
    size_t ri = order[i];
    list += fmt::format("{}rank {}{} {:+.2f} ms", list.empty() ? "" : ", ", m.ranks[ri].rank,
                        m.ranks[ri].host ? " (" + *m.ranks[ri].host + ")" : std::string(),
                        static_cast<double>(offset[ri]) / 1e6);
  }
  if (R > 6) list += ", ...";
  f.message = fmt::format(
      "rank clocks disagree by up to {}; offsets estimated from {} collective ends were removed "
      "({})",
      Ms(max_abs_offset), m.instances, list);
  return f;
}

// Ranks late together: one host's ranks (host contention, a host-wide
// fault) or a block of ranks (a pipeline stage with more work). Why: their
// kernels against a healthy peer's (slow kernels), or idle GPUs (host).
// What to do about a late group: its host, its kernels, or (unknown, and
// blamed) compare its trace with a healthy rank's.
void GroupNextSteps(Finding& f, const std::vector<int32_t>& ranks, const std::string& where,
                    bool unblamed) {
  if (f.cause == "host_stall") {
    f.next_steps.push_back(fmt::format(
        "look at {}: CPU contention from other processes (top, pidstat -u 1), data loader workers "
        "and I/O, the ranks' CPU / NUMA affinity; compare with a healthy host",
        where));
  } else if (f.cause == "slow_kernels") {
    f.next_steps.push_back(fmt::format(
        "ranks {} compute more (or more slowly) than the others: check their GPUs' clocks, "
        "temperature and power against a healthy GPU (nvidia-smi dmon -s pucvmt -d 1 on {}); "
        "with healthy GPUs it is the work itself: the pipeline-stage partition (layers per stage, "
        "embedding / loss stage) or the data each rank gets",
        RankListText(ranks), where));
  } else if (!unblamed) {
    f.next_steps.push_back(fmt::format(
        "compare the trace of rank {} with a healthy rank's around the late collectives",
        ranks.front()));
  }
}

Finding GroupFinding(const TraceMetrics& m, const TraceSuspect& s, const SuspectComparison& c,
                     const TraceDetectorOptions& opt, TraceAnalysis& out) {
  const size_t R = m.ranks.size();
  const std::vector<size_t>& group = s.group;
  std::vector<char> in(R, 0);
  for (size_t gi : group) in[gi] = 1;
  const size_t peer = c.group_peer;
  double extra_idle = 0, late_sum = 0;
  std::vector<int32_t> ranks;
  for (size_t gi : group) {
    ranks.push_back(m.ranks[gi].rank);
    if (peer < R) extra_idle += static_cast<double>(m.ranks[gi].idle_ns - m.ranks[peer].idle_ns);
    for (double l : m.lateness_ns[gi]) late_sum += std::max(0.0, l);
  }
  double ratio = c.group_kernel_ratios.empty() ? 1.0 : Median(c.group_kernel_ratios).value_or(0);
  // One host: every group member there, and the group is (nearly) all of
  // that host's traced ranks.
  std::optional<std::string> host = m.ranks[group.front()].host;
  for (size_t gi : group) {
    if (m.ranks[gi].host != host) host.reset();
  }
  size_t host_ranks = 0;
  for (const RankTraceStats& st : m.ranks) host_ranks += host && st.host == host;
  bool whole_host = host && group.size() >= 2 && 4 * group.size() >= 3 * host_ranks;
  bool block = true;
  for (size_t i = 1; i < ranks.size(); ++i) block = block && ranks[i] == ranks[i - 1] + 1;

  double delay = GroupDelay(group, m);
  const DurationNs window = m.window_ns;
  if (window > 0) out.throughput_lost = std::min(1.0, delay / static_cast<double>(window));

  Finding f = MakeFinding(FindingCode::kTraceLateGroup);
  f.ranks = ranks;
  f.confidence = opt.confidence.late_group;
  f.pattern = whole_host ? Pattern::kHost : block ? Pattern::kBlock : Pattern::kScattered;
  std::string who;
  if (whole_host) {
    f.entity.host = host;
    who = fmt::format("the {} traced ranks of {} ({})", ranks.size(), *host, RankListText(ranks));
  } else {
    f.entity.rank = ranks.front();
    f.entity.host = m.ranks[group.front()].host;
    who = fmt::format("ranks {}", RankListText(ranks));
  }
  std::string why;
  bool unblamed = false;
  // CPU ops are held to the CPU noise floor, as a lone rank's are.
  const double slow_ratio = m.cpu_only ? 1 + opt.cpu_op_noise : opt.kernel_ratio;
  // A compute block computes more by construction: its kernels are the why
  // even when the name-by-name ratio stays under the threshold.
  if (ratio >= slow_ratio || (s.basis == GroupBasis::kCompute && ratio > 1)) {
    f.cause = "slow_kernels";
    f.slowdown = ratio - 1;
    why = fmt::format("their compute kernels run {:.2f}x as long as healthy rank {}'s", ratio,
                      m.ranks[peer].rank);
  } else if (peer < R && extra_idle >= opt.host_stall_share * late_sum) {
    f.cause = "host_stall";
    why = fmt::format(
        "their kernels run at the healthy speed ({:.2f}x of rank {}) but their GPUs idle {} more "
        "per "
        "rank with no kernel running: they wait for the host",
        ratio, m.ranks[peer].rank,
        Ms(static_cast<DurationNs>(extra_idle / static_cast<double>(group.size()))));
  } else {
    why = "why is not known from the traces";
    // Late together by a small margin with normal ops and no idle, in a
    // CPU-only job: a lone rank so is not blamed under
    // cpu_unexplained_min_cost_share of the profile, nor is a group
    // (bench/realjobs d12: healthy ranks 1 and 3 of 4 on 2 cores, 1.41 ms
    // late, ~5% of the profile).
    if (m.cpu_only && window > 0 &&
        delay < opt.cpu_unexplained_min_cost_share * static_cast<double>(window)) {
      unblamed = true;
      why += fmt::format(
          ", and the delay is {:.1f}% of the profile (< {:.0f}%): within what a shared host's "
          "scheduling gives {} ranks, not blamed",
          100 * delay / static_cast<double>(window), 100 * opt.cpu_unexplained_min_cost_share, R);
      f.severity = Severity::kInfo;
      f.confidence = opt.confidence.late_arrival_unblamed;
      out.throughput_lost.reset();
    }
  }
  if (s.basis == GroupBasis::kIdle) {
    DurationNs least = std::numeric_limits<DurationNs>::max(), others = 0;
    for (size_t ri = 0; ri < R; ++ri) {
      if (in[ri]) least = std::min(least, m.ranks[ri].idle_ns);
      else others = std::max(others, m.ranks[ri].idle_ns);
    }
    f.message = fmt::format(
        "{} all leave their GPUs idle: each at least {} of the {} profile with no kernel running, "
        "against at most {} on any rank of another host; {}",
        who, Ms(least), Ms(window), Ms(others), why);
  } else if (s.basis == GroupBasis::kCompute) {
    f.message = fmt::format(
        "{} compute more than the other ranks: {:.1f}% more per profiled step on average, a split "
        "of more than {:.0f} standard deviations; their late arrivals are lost in the jitter of {} "
        "ranks; {}",
        who, 100 * s.group_excess, opt.block_separation, R, why);
  } else {
    f.message = fmt::format(
        "{} arrive late together: on average over {} collectives the least late of them arrives {} "
        "after a typical rank, a gap of more than {:.0f}x the other ranks' spread; {}",
        who, m.instances, Ms(static_cast<DurationNs>(s.group_excess)), opt.group_sigmas, why);
  }
  if (window > 0) {
    f.evidence.push_back(Evidence{fmt::format("the group holds the job up by {} of a {} profile",
                                              Ms(static_cast<DurationNs>(delay)), Ms(window)),
                                  SourceRef{m.ranks[group.front()].file, 0}});
  }
  GroupNextSteps(f, ranks, host.value_or("their hosts"), unblamed);
  return f;
}

// No one late: does every rank's GPU idle >= job_idle_share of its profiled
// window? Then the GPUs wait for the host side everywhere — the job's only
// host (a `host` late group: contention, data loader, I/O there), or, over
// several hosts, a job-wide host stall (shared storage, the input pipeline,
// Python). GPU traces only: idle in a CPU-only trace means no CPU op.
std::optional<Finding> JobIdleFinding(const TraceMetrics& m, const TraceDetectorOptions& opt) {
  // Every rank of the job traced: two of 128 say nothing about the rest.
  if (m.ranks.size() < 2 ||
      (m.world_size && static_cast<size_t>(*m.world_size) != m.ranks.size())) {
    return std::nullopt;
  }
  std::vector<double> shares;
  std::set<std::string> hosts;
  bool host_unknown = false;
  DurationNs largest_gap = 0;
  size_t gaps = 0;
  for (const RankTraceStats& st : m.ranks) {
    if (st.cpu_only || st.window_ns <= 0) return std::nullopt;
    shares.push_back(static_cast<double>(st.idle_ns) / static_cast<double>(st.window_ns));
    if (st.host) hosts.insert(*st.host);
    else host_unknown = true;
    largest_gap = std::max(largest_gap, st.largest_gap_ns);
    gaps += st.gaps;
  }
  auto [lo, hi] = std::minmax_element(shares.begin(), shares.end());
  if (*lo < opt.job_idle_share) return std::nullopt;
  double median = Median(shares).value_or(*lo);
  Finding f;
  bool one_host = hosts.size() == 1 && !host_unknown;
  f.severity = Severity::kCritical;
  f.confidence = opt.confidence.job_idle;
  f.slowdown = median;
  f.cause = "host_stall";
  for (const RankTraceStats& st : m.ranks) f.ranks.push_back(st.rank);
  std::string who;
  if (one_host) {
    f.code = FindingCode::kTraceLateGroup;
    f.pattern = Pattern::kHost;
    f.entity.host = *hosts.begin();
    who = fmt::format("every GPU of {}, the job's only host,", *hosts.begin());
  } else {
    f.code = FindingCode::kTraceHostStall;
    f.pattern = Pattern::kJobWide;
    f.entity.job = true;
    who = fmt::format("every rank's GPU ({} ranks)", m.ranks.size());
  }
  f.message = fmt::format(
      "no rank arrives late, but {} idles {:.1f}-{:.1f}% of its profiled window (median {:.1f}%) "
      "with no kernel running, in gaps of up to {}: the GPUs wait for the host side (CPU work, "
      "the data loader, I/O) on every rank",
      who, 100 * *lo, 100 * *hi, 100 * median, Ms(largest_gap));
  f.evidence.push_back(
      Evidence{fmt::format("{} idle gaps >= 10 us over {} ranks' traces", gaps, m.ranks.size()),
               SourceRef{m.ranks.front().file, 0}});
  f.next_steps.push_back(fmt::format(
      "look at {}: CPU use (top, pidstat -u 1: other processes, the ranks' CPU / NUMA affinity), "
      "data loader workers and I/O (num_workers, pin_memory, storage throughput); a CPU trace of "
      "one step shows what the host does while the GPU idles",
      one_host ? *hosts.begin() : std::string("the hosts")));
  return f;
}

void AddHostGapEvidence(Finding& h, const HostGapComparison& hg, int32_t rank, uint32_t file) {
  h.message += fmt::format("; rank {}: {}", rank, DescribeHostGaps(hg));
  h.evidence.push_back(Evidence{
      fmt::format(
          "GPU idle with an empty launch queue {} on rank {} vs {} (median of {} peers); idle "
          "with launches queued {} vs {}",
          Ms(hg.unlaunched_ns), rank, Ms(hg.peer_unlaunched_ns), hg.peers, Ms(hg.queued_ns),
          Ms(hg.peer_queued_ns)),
      SourceRef{file, 0}});
}

Finding LateArrivalFinding(const TraceMetrics& m, const TraceSuspect& s,
                           const TraceDetectorOptions& opt) {
  const RankTraceStats& cand = m.ranks[s.rank];
  const RankTraceStats& ps = m.ranks[s.peer];
  Finding f = MakeFinding(FindingCode::kTraceLateArrival);
  f.entity.rank = cand.rank;
  f.entity.host = cand.host;
  f.entity.gpu = m.device[s.rank];
  f.confidence = s.from_group           ? opt.confidence.late_arrival_from_group
                 : s.delay_share >= 0.8 ? opt.confidence.late_arrival_most_delay
                                        : opt.confidence.late_arrival;
  f.message = fmt::format(
      "rank {} arrives last at {} of {} collectives, {} after the next rank on average: it holds "
      "the job up by {} in total ({:.0f}% of all waiting); median wait {} vs {} on healthy rank {}",
      cand.rank, m.last_count[s.rank], cand.instances, Ms(static_cast<DurationNs>(s.mean_delay_ns)),
      Ms(static_cast<DurationNs>(m.delay_ns[s.rank])), 100 * s.delay_share,
      Ms(cand.median_wait_ns.value_or(0)), Ms(ps.median_wait_ns.value_or(0)), ps.rank);
  if (s.compute_excess) {
    f.message += fmt::format(
        "; its compute per step stands out: {:.1f}% above the median rank's in every profiled step",
        100 * *s.compute_excess);
  } else if (s.idle_share) {
    f.message += fmt::format(
        "; it runs no op on any thread for {:.0f}% of its profile, against at most {:.0f}% on any "
        "other rank: it stalls outside the training ops, and on a host whose cores the ranks "
        "share the others take its core meanwhile, so it hardly arrives late",
        100 * s.idle_share->first, 100 * s.idle_share->second);
  } else if (s.op_ratio) {
    f.message += fmt::format(
        "; its ops stand out: they run {:.2f}x as long as its peers' (self time of the same ops), "
        "more than twice any other rank's excess, and it arrives late on average",
        *s.op_ratio);
  } else if (s.from_group) {
    f.message += fmt::format(
        "; its mean lateness over all collectives is {} above the other ranks', {:.0f}x their "
        "spread",
        Ms(static_cast<DurationNs>(s.group_excess)), opt.group_sigmas);
  }
  for (Evidence& e : LateCallEvidence(m, s.rank)) f.evidence.push_back(std::move(e));
  if (s.victim != s.rank) {
    const RankTraceStats& victim = m.ranks[s.victim];
    f.evidence.push_back(Evidence{
        fmt::format("rank {} spends the most time in {} ({}): a victim waiting, not the culprit",
                    victim.rank, BackendWord(m, s.victim), Ms(victim.collective_ns)),
        SourceRef{victim.file, 0}});
  }
  return f;
}

// trace.compute_slow of the late rank: its kernels (CPU ops) run
// `kernel_ratio` times as long as its healthy peer's.
Finding ComputeSlowFinding(const TraceMetrics& m, const TraceSuspect& s, const SuspectComparison& c,
                           double kernel_ratio, const Entity& entity,
                           const TraceDetectorOptions& opt) {
  const RankTraceStats& cand = m.ranks[s.rank];
  const RankTraceStats& ps = m.ranks[s.peer];
  const KernelComparison& kc = c.kernels;
  const std::optional<int32_t>& device = m.device[s.rank];
  Finding k = MakeFinding(FindingCode::kTraceComputeSlow, entity);
  k.slowdown = s.compute_excess ? *s.compute_excess : kernel_ratio - 1;
  k.confidence =
      s.compute_excess ? opt.confidence.compute_slow_by_excess : opt.confidence.compute_slow;
  const char* ops = cand.cpu_only ? "CPU ops" : "compute kernels";
  k.message = fmt::format(
      "rank {}'s {} run {:.2f}x as long as healthy rank {}'s (time-weighted{}, {} {} compared by "
      "name{}); top: {}",
      cand.rank, ops, kernel_ratio, ps.rank, cand.cpu_only ? ", self time" : "", kc.keys,
      cand.cpu_only ? "ops" : "kernels", kc.keys_with_shape > 0 ? " and launch shape" : "",
      c.top_kernel);
  if (s.compute_excess) {
    k.message +=
        fmt::format("; its compute time is {:.1f}% above the median rank's in every profiled step",
                    100 * *s.compute_excess);
  }
  k.evidence.push_back(
      Evidence{fmt::format("compute busy {} on rank {} vs {} on rank {}", Ms(cand.compute_busy_ns),
                           cand.rank, Ms(ps.compute_busy_ns), ps.rank),
               SourceRef{cand.file, 0}});
  if (cand.cpu_only) {
    k.next_steps.push_back(fmt::format(
        "rank {} computes slowly on its CPU: compare its host's CPU load and frequency with a "
        "healthy rank's (top / pidstat -u 1 for other processes, cpupower frequency-info or "
        "/proc/cpuinfo MHz), its threads' pinning (OMP_NUM_THREADS, taskset -cp PID: ranks "
        "sharing cores) and its per-rank batch size",
        cand.rank));
  } else {
    k.next_steps.push_back(fmt::format(
        "the GPU of rank {} executes slowly: check its hardware metrics against a healthy GPU "
        "at the same time (nvidia-smi dmon -s pucvmt -d 1{}: temperature, SM clock, power cap, "
        "PCIe link)",
        cand.rank, device ? fmt::format(" -i {}", *device) : ""));
  }
  return k;
}

// trace.host_stall of the late rank: its kernels (CPU ops) run at about
// the healthy speed and it idles `extra_idle` more than its healthy peer.
Finding HostStallFinding(const TraceMetrics& m, const TraceSuspect& s, const SuspectComparison& c,
                         double kernel_ratio, DurationNs extra_idle, const Entity& entity,
                         const TraceDetectorOptions& opt) {
  const RankTraceStats& cand = m.ranks[s.rank];
  const RankTraceStats& ps = m.ranks[s.peer];
  const HostGapComparison& hg = c.host_gaps;
  Finding h = MakeFinding(FindingCode::kTraceHostStall, entity);
  h.confidence = opt.confidence.host_stall;
  h.message = cand.cpu_only
                  ? fmt::format(
                        "rank {}'s CPU ops run at about the healthy speed ({:.2f}x of rank {}) "
                        "but it runs no op on any thread for {} more: it waits outside the "
                        "training ops (data loader, a sleep, Python) before its work",
                        cand.rank, kernel_ratio, ps.rank, Ms(extra_idle))
                  : fmt::format(
                        "rank {}'s kernels run at the healthy speed ({:.2f}x of rank {}) but its "
                        "GPU idles {} more with no kernel running: it waits for the host (data "
                        "loader, CPU, Python) before launching work",
                        cand.rank, kernel_ratio, ps.rank, Ms(extra_idle));
  h.evidence.push_back(Evidence{fmt::format("largest idle gap {} on rank {}, {} gaps",
                                            Ms(cand.largest_gap_ns), cand.rank, cand.gaps),
                                SourceRef{cand.file, 0}});
  if (hg.known) AddHostGapEvidence(h, hg, cand.rank, cand.file);
  h.next_steps.push_back(
      fmt::format("look at rank {}'s host: data loader workers and I/O, CPU contention (top / "
                  "pidstat on {}), "
                  "Python GC; compare its CPU trace with rank {}'s around the gaps",
                  cand.rank, cand.host.value_or("its node"), ps.rank));
  return h;
}

// Why the late rank is late: slower kernels (by name and shape), or its
// host; with neither, a small delay is not blamed (`late_f` is amended).
void DecideWhyLate(const TraceMetrics& m, const TraceSuspect& s, const SuspectComparison& c,
                   const TraceDetectorOptions& opt, TraceAnalysis& out) {
  const RankTraceStats& cand = m.ranks[s.rank];
  const RankTraceStats& ps = m.ranks[s.peer];
  const KernelComparison& kc = c.kernels;
  const HostGapComparison& hg = c.host_gaps;
  double kernel_ratio = kc.ratio;
  double weight_sum = kc.weight_ns;
  // Idle = neither computing nor communicating: a victim's extra time is
  // inside its NCCL kernels, a stalled rank's is outside any kernel.
  DurationNs extra_idle = cand.idle_ns - ps.idle_ns;
  // The delay the culprit adds over the profile, summed over instances.
  double total_lateness = 0;
  for (double l : m.lateness_ns[s.rank]) total_lateness += std::max(0.0, l);
  // CPU ops: the host's own noise first (trace_detector.h, "CPU noise").
  double min_ratio =
      cand.cpu_only ? std::max(opt.kernel_ratio, 1 + opt.cpu_op_noise) : opt.kernel_ratio;
  if (cand.cpu_only && m.ranks.size() >= 3 && m.op_ratio.size() == m.ranks.size()) {
    // With >= 3 ranks the other ranks' own spread is measured (each one's
    // ops against its peers'): slow ops must stand out from it as the op
    // outlier does, by op_outlier_over_next in log ratio.
    double others = 0;
    for (size_t ri = 0; ri < m.ranks.size(); ++ri) {
      if (ri != s.rank && m.op_ratio[ri].weight_ns > 0)
        others = std::max(others, std::log(m.op_ratio[ri].ratio));
    }
    min_ratio = std::max(min_ratio, std::exp(opt.op_outlier_over_next * others));
  }
  // CPU ops: the rank's compute as a whole must be slower, not only its
  // ops one by one (trace_detector.h, "CPU noise").
  const bool busy_slower =
      !cand.cpu_only || ps.compute_busy_ns <= 0 ||
      static_cast<double>(cand.compute_busy_ns) >=
          (1 + opt.cpu_min_busy_excess) * static_cast<double>(ps.compute_busy_ns);
  const bool slow_ops = busy_slower && ((weight_sum > 0 && kernel_ratio >= min_ratio) ||
                                        s.compute_excess || s.op_ratio);
  const bool idle_floor =
      !cand.cpu_only || static_cast<double>(extra_idle) >=
                            opt.cpu_min_idle_share * static_cast<double>(cand.window_ns);
  const bool idles =
      idle_floor &&
      (hg.known ? static_cast<double>(hg.unlaunched_ns - hg.peer_unlaunched_ns) >=
                      opt.host_stall_share * total_lateness
                : static_cast<double>(extra_idle) >= opt.host_stall_share * total_lateness);
  // CPU ops vary with the host's load far more than GPU kernels do, so a
  // stalled rank's ops can run a few percent slow too: the larger of the
  // two explains the lateness (the ops' extra time, ratio - 1 of its
  // compute, against its extra idle time).
  bool compute_first = slow_ops;
  if (cand.cpu_only && slow_ops && idles && kernel_ratio > 0) {
    double extra_compute =
        static_cast<double>(cand.compute_busy_ns) * (kernel_ratio - 1) / kernel_ratio;
    compute_first = extra_compute >= static_cast<double>(extra_idle);
  }
  if (compute_first) {
    out.findings.push_back(
        ComputeSlowFinding(m, s, c, kernel_ratio, out.findings.back().entity, opt));
  } else if (idles) {
    out.findings.push_back(
        HostStallFinding(m, s, c, kernel_ratio, extra_idle, out.findings.back().entity, opt));
  } else if (const double floor = cand.cpu_only ? opt.cpu_unexplained_min_cost_share
                                                : opt.unexplained_min_cost_share;
             m.delay_ns[s.rank] < floor * static_cast<double>(m.window_ns)) {
    // Late by a small margin with normal kernels and no idle: with few
    // ranks one of them is last in most profiled steps by chance, and on a
    // shared host's CPU by the host's scheduling.
    Finding& late_f = out.findings.back();
    late_f.severity = Severity::kInfo;
    late_f.confidence = opt.confidence.late_arrival_unblamed;
    const double share = 100 * m.delay_ns[s.rank] / static_cast<double>(m.window_ns);
    if (cand.cpu_only) {
      late_f.message += fmt::format(
          "; but its CPU ops run {:.2f}x as long as rank {}'s (< {:.2f}x: a shared host's own "
          "noise) and it does not idle more, and the delay is {:.1f}% of the profile (< {:.0f}%): "
          "within what a shared host's scheduling gives {} ranks, not blamed",
          kernel_ratio, ps.rank, min_ratio, share, 100 * floor, m.ranks.size());
    } else {
      late_f.message += fmt::format(
          "; but its kernels run at the healthy speed and its GPU does not idle more, and the "
          "delay is {:.1f}% of the profile (< {:.0f}%): within what chance gives {} ranks, not "
          "blamed",
          share, 100 * floor, m.ranks.size());
    }
    out.culprit.reset();
    out.throughput_lost.reset();
  }
}

// A second culprit behind the first (CPU-only jobs, >= 3 ranks): another
// rank whose ops run >= op_outlier_ratio as long as its peers', more than
// op_outlier_over_next times any remaining rank's excess (log ratio), and
// late on average: it arrives after the healthy ranks but before the
// culprit, so its delay hides behind the culprit's. A victim's ops do not
// slow and it is not late.
std::optional<Finding> SecondSlowRankFinding(const TraceMetrics& m, const TraceSuspect& s,
                                             const TraceDetectorOptions& opt) {
  const size_t R = m.ranks.size();
  if (R < 3) return std::nullopt;
  const std::optional<std::pair<size_t, double>> oo = FindOpOutlier(m, opt, s.rank);
  if (!oo) return std::nullopt;
  const size_t best = oo->first;
  const KernelComparison& k = m.op_ratio[best];
  const DurationNs late = *m.ranks[best].median_lateness_ns;
  // Later than the remaining ranks by 2x, and by >= 1% of a step: on
  // shared cores a rank's ops can run slow by the host's doing while it
  // arrives with the others.
  DurationNs rest = 0;
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri != s.rank && ri != best && m.ranks[ri].median_lateness_ns)
      rest = std::max(rest, *m.ranks[ri].median_lateness_ns);
  }
  const double step = static_cast<double>(m.median_step_ns.value_or(0));
  if (late < 2 * rest || static_cast<double>(late) < opt.second_rank_min_lateness * step) {
    return std::nullopt;
  }
  const RankTraceStats& st = m.ranks[best];
  Finding f = MakeFinding(FindingCode::kTraceComputeSlow);
  f.entity.rank = st.rank;
  f.entity.host = st.host;
  f.entity.gpu = m.device[best];
  f.slowdown = k.ratio - 1;
  f.confidence = opt.confidence.second_slow_rank;
  f.message = fmt::format(
      "a second slow rank: rank {}'s CPU ops run {:.2f}x as long as its peers' (self time of the "
      "same ops, {} compared), more than {:.0f}x any other rank's excess besides rank {}, and it "
      "arrives {} late on average (median): its delay hides behind rank {}'s, who arrives after "
      "it",
      st.rank, k.ratio, k.keys, opt.op_outlier_over_next, m.ranks[s.rank].rank, Ms(late),
      m.ranks[s.rank].rank);
  f.evidence.push_back(
      Evidence{fmt::format("compute busy {} on rank {}", Ms(st.compute_busy_ns), st.rank),
               SourceRef{st.file, 0}});
  f.next_steps.push_back(fmt::format(
      "rank {} computes slowly on its CPU too: compare its host's CPU load and frequency with a "
      "healthy rank's (top / pidstat -u 1, cpupower frequency-info), its threads' pinning "
      "(taskset -cp PID) and its per-rank batch size; fix rank {} first, then rank {} will be "
      "the one holding the job up",
      st.rank, m.ranks[s.rank].rank, st.rank));
  return f;
}

// Is the network slow for everyone? Transfers take much of every step,
// with or without a late rank (`rank_named`: the traces named one).
std::optional<Finding> CommBoundFinding(const TraceMetrics& m, const TraceSuspect& s,
                                        const TraceDetectorOptions& opt, bool rank_named = false) {
  if (!m.median_step_ns || *m.median_step_ns <= 0 || !m.median_transfer_ns || m.ranks.size() < 2)
    return std::nullopt;
  double steps_profiled = 0;
  for (const RankTraceStats& st : m.ranks)
    steps_profiled = std::max(steps_profiled, static_cast<double>(st.steps));
  double per_step_transfer = static_cast<double>(*m.median_transfer_ns) *
                             static_cast<double>(m.instances) / std::max(1.0, steps_profiled);
  double share = per_step_transfer / static_cast<double>(*m.median_step_ns);
  if (share < opt.comm_bound_share) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kTraceCommBound);
  f.entity.job = true;
  f.cause = "communication_bound";
  f.confidence = opt.confidence.comm_bound;
  f.slowdown = share;
  if (rank_named) {
    f.message = fmt::format(
        "collective transfers take {:.0f}% of each {} step on every rank: the job is "
        "communication-bound, beside rank {}'s late arrivals",
        100 * share, Ms(*m.median_step_ns), m.ranks[s.rank].rank);
  } else {
    f.message = fmt::format(
        "no rank holds the others up (the largest share of waiting, {:.0f}%, is rank {}'s), but "
        "collective transfers take {:.0f}% of each {} step on every rank: the job is "
        "communication-bound",
        100 * s.delay_share, m.ranks[s.rank].rank, 100 * share, Ms(*m.median_step_ns));
  }
  if (BackendWord(m, 0) == "NCCL") {
    f.next_steps.push_back(
        "measure the network: nccl-tests all_reduce_perf between nodes, ibstat / ethtool on "
        "every NIC; compare busbw with the fabric's rating");
  } else {
    // gloo / MPI over TCP: a ring runs at its slowest link, so measure each.
    f.next_steps.push_back(
        "measure the link of every rank's host: iperf3 between each pair of hosts (or "
        "ranks' interfaces), ip -s link / ethtool -S for errors and drops, tc -s qdisc for a "
        "rate limit; the slowest link sets the ring's speed; NCCL_DEBUG=INFO or "
        "GLOO_SOCKET_IFNAME shows which interface each rank uses");
  }
  return f;
}

}  // namespace

TraceAnalysis DecideTraces(const TraceMetrics& m, const TraceSuspect& s, const SuspectComparison& c,
                           const TraceDetectorOptions& opt) {
  TraceAnalysis out;
  out.ranks = m.ranks;
  out.unranked = m.unranked;
  if (m.ranks.empty()) return out;
  out.world_size = m.world_size;
  out.median_step_ns = m.median_step_ns;
  out.instances = m.instances;
  const size_t R = m.ranks.size();
  if (R >= 2 && m.instances == 0) out.findings.push_back(NoMatchFinding(m, opt));
  if (m.instances == 0) return out;
  out.median_transfer_ns = m.median_transfer_ns;
  if (std::optional<Finding> f = ClockOffsetsFinding(m, opt)) out.findings.push_back(std::move(*f));

  if (s.late) {
    out.culprit = m.ranks[s.rank].rank;
    out.peer = m.ranks[s.peer].rank;
    if (m.window_ns > 0)
      out.throughput_lost = std::min(1.0, m.delay_ns[s.rank] / static_cast<double>(m.window_ns));
    out.findings.push_back(LateArrivalFinding(m, s, opt));
    DecideWhyLate(m, s, c, opt, out);
    if (out.culprit) {
      if (std::optional<Finding> f = SecondSlowRankFinding(m, s, opt))
        out.findings.push_back(std::move(*f));
    }
    // Transfers that take most of each step are said beside a late rank
    // too, named or not; the verdict weighs the two (PreferCommBound).
    // bench/realjobs d11, a 100 Mbit link, transfers 72% of each step: a
    // late rank with ops 1.01x its peer's read "no straggler", one on a
    // slower core "host contention, up to 7%".
    if (std::optional<Finding> f = CommBoundFinding(m, s, opt, out.culprit.has_value()))
      out.findings.push_back(std::move(*f));
  } else if (!s.group.empty()) {
    if (c.group_peer < R) out.peer = m.ranks[c.group_peer].rank;
    out.findings.push_back(GroupFinding(m, s, c, opt, out));
  } else if (s.variable_work) {
    out.findings.push_back(*s.variable_work);
    // Compute varies between ranks, but transfers take most of each step:
    // both are said, and the verdict weighs them (JobCauseVerdict).
    if (std::optional<Finding> f = CommBoundFinding(m, s, opt))
      out.findings.push_back(std::move(*f));
  } else if (std::optional<Finding> idle = JobIdleFinding(m, opt)) {
    out.findings.push_back(std::move(*idle));
  } else if (std::optional<Finding> f = CommBoundFinding(m, s, opt)) {
    out.findings.push_back(std::move(*f));
  }
  return out;
}

TraceAnalysis AnalyzeTraces(const Run& run) { return AnalyzeTraces(run, TraceDetectorOptions()); }

TraceAnalysis AnalyzeTraces(const Run& run, const TraceDetectorOptions& opt) {
  TraceMetrics metrics = MeasureTraces(run, opt);
  TraceSuspect suspect = FindTraceSuspect(metrics, opt);
  SuspectComparison comparison = CompareSuspect(metrics, suspect, opt);
  return DecideTraces(metrics, suspect, comparison, opt);
}

}  // namespace laggard
