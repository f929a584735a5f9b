#include "analysis/trace_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "analysis/host_gaps.h"
#include "analysis/kernel_compare.h"
#include "analysis/robust_stats.h"
#include "base/text.h"

namespace laggard {
namespace {

constexpr DurationNs kMinGapNs = 10'000;          // idle intervals shorter than 10 us are noise
constexpr DurationNs kMinLatenessNs = 100'000;    // 100 us
constexpr double kKernelRatioThreshold = 1.05;    // article: < 5% is normal variation
constexpr double kCommBoundShare = 0.4;
constexpr size_t kMinInstances = 3;
constexpr size_t kMinLaunches = 3;
// A late rank (or group) must cost the job >= 1% of the profiled time: less
// is the normal spread between same-model GPUs (the article's < 5% per GPU,
// seen once per collective) and not worth a verdict.
constexpr double kMinCostShare = 0.01;
// A late rank whose kernels and idle time are both normal must cost more
// before it is blamed: nothing but its arrival order speaks for it.
constexpr double kUnexplainedMinCostShare = 0.03;
// No one late, yet every rank's GPU idles at least this share of its
// profiled window with no kernel running: the whole job waits for its hosts
// (busy GPUs in synchronous training idle < 1%: waiting for a peer is time
// inside an NCCL kernel, not idle).
constexpr double kJobIdleShare = 0.05;

std::string Ms(DurationNs ns) { return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6); }

// Union of [start, end) intervals (sorted by start) -> total covered time,
// idle gaps between them within the window.
struct Coverage {
  DurationNs busy = 0;
  size_t gaps = 0;
  DurationNs largest_gap = 0;
  DurationNs gap_total = 0;
};

template <typename Pred>
Coverage Cover(const std::vector<TraceOp>& ops, Pred keep) {
  Coverage c;
  bool open = false;
  TimeNs cur_start = 0, cur_end = 0;
  for (const TraceOp& op : ops) {
    if (!keep(op)) continue;
    TimeNs s = op.start_ns, e = op.start_ns + op.dur_ns;
    if (!open) {
      open = true;
      cur_start = s;
      cur_end = e;
      continue;
    }
    if (s > cur_end) {
      c.busy += cur_end - cur_start;
      DurationNs gap = s - cur_end;
      if (gap >= kMinGapNs) {
        ++c.gaps;
        c.largest_gap = std::max(c.largest_gap, gap);
      }
      c.gap_total += gap;
      cur_start = s;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (open) c.busy += cur_end - cur_start;
  return c;
}

double MedianNs(std::vector<double> v) { return Median(std::move(v)).value_or(0); }

// Ranks late together. Per rank, the mean aligned lateness over its
// instances; sorted, the late group is the upper cluster above the first
// break (scanning from the middle up) of at least kGroupSigmas x the
// normal ranks' spread and kMinLatenessNs. The group is at most half the
// ranks: with exactly half, the later half is the one the others wait for.
// The spread comes from the lower half's quantiles (0.125..0.375), which
// hold only normal ranks: (Q.375 - Q.125) / 0.831 is the normal sigma
// when the group is small and overestimates it (x1.6) when it is half.
constexpr double kGroupSigmas = 6;

std::vector<size_t> FindLateGroup(const std::vector<std::vector<double>>& lateness, double* excess_out) {
  std::vector<std::pair<double, size_t>> mean;
  for (size_t ri = 0; ri < lateness.size(); ++ri) {
    if (lateness[ri].size() < kMinInstances) continue;
    double sum = 0;
    for (double l : lateness[ri]) sum += l;
    mean.push_back({sum / static_cast<double>(lateness[ri].size()), ri});
  }
  const size_t n = mean.size();
  if (n < 3) return {};
  std::sort(mean.begin(), mean.end());
  std::vector<double> v;
  for (auto& m : mean) v.push_back(m.first);
  double sigma = (*Quantile(v, 0.375) - *Quantile(v, 0.125)) / 0.831;
  double need = std::max(kGroupSigmas * sigma, static_cast<double>(kMinLatenessNs));
  for (size_t i = (n + 1) / 2; i < n; ++i) {
    if (v[i] - v[i - 1] < need) continue;
    std::vector<size_t> group;
    for (size_t j = i; j < n; ++j) group.push_back(mean[j].second);
    std::sort(group.begin(), group.end());
    double low = MedianNs(std::vector<double>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i)));
    *excess_out = v[i] - low;  // the least late member's lateness over a normal rank's
    return group;
  }
  return {};
}

// One host whose every traced rank idles its GPU far more than any rank of
// any other host: the host starves its GPUs (CPU contention, a host-wide
// stall). Its ranks need not come last together: each catches up at a
// different collective, so lateness alone shows one of them, or none.
// Needs >= 2 hosts, the host with >= 2 traced ranks; its least idle rank must
// idle >= kIdleHostRatio x the most idle rank elsewhere and more by >= 1%
// of the profile (kMinCostShare).
constexpr double kIdleHostRatio = 3;

std::vector<size_t> FindIdleHost(const TraceAnalysis& out, DurationNs window) {
  std::map<std::string, std::vector<size_t>> by_host;
  for (size_t ri = 0; ri < out.ranks.size(); ++ri) {
    if (out.ranks[ri].host) by_host[*out.ranks[ri].host].push_back(ri);
  }
  if (by_host.size() < 2) return {};
  const std::vector<size_t>* top = nullptr;
  DurationNs top_min = 0;
  for (const auto& [host, ranks] : by_host) {
    if (ranks.size() < 2) continue;
    DurationNs least = std::numeric_limits<DurationNs>::max();
    for (size_t ri : ranks) least = std::min(least, out.ranks[ri].idle_ns);
    if (!top || least > top_min) top = &ranks, top_min = least;
  }
  if (!top) return {};
  DurationNs others_max = 0;
  for (size_t ri = 0; ri < out.ranks.size(); ++ri) {
    if (std::find(top->begin(), top->end(), ri) == top->end()) {
      others_max = std::max(others_max, out.ranks[ri].idle_ns);
    }
  }
  if (static_cast<double>(top_min) < kIdleHostRatio * static_cast<double>(others_max) ||
      static_cast<double>(top_min - others_max) < kMinCostShare * static_cast<double>(window)) {
    return {};
  }
  return *top;
}

// Compute time (union of non-communication ops) per profiled step.
std::vector<double> ComputePerStep(const RankTrace& t) {
  std::vector<double> out;
  for (const TraceStep& s : t.steps) {
    std::vector<TraceOp> in;
    auto it = std::lower_bound(t.ops.begin(), t.ops.end(), s.start_ns,
                               [](const TraceOp& op, TimeNs ts) { return op.start_ns < ts; });
    for (; it != t.ops.end() && it->start_ns < s.end_ns; ++it) {
      if (it->cls != OpClass::kCommunication) in.push_back(*it);
    }
    out.push_back(static_cast<double>(Cover(in, [](const TraceOp&) { return true; }).busy));
  }
  return out;
}

// ComputePerStep of every rank, cut to the steps all of them profiled.
struct StepCompute {
  std::vector<std::vector<double>> per;  // [rank index][step]
  size_t steps = 0;
};

StepCompute ComputeMatrix(const std::vector<const RankTrace*>& traces) {
  StepCompute m;
  m.per.resize(traces.size());
  size_t steps = SIZE_MAX;
  for (size_t ri = 0; ri < traces.size(); ++ri) {
    m.per[ri] = ComputePerStep(*traces[ri]);
    steps = std::min(steps, m.per[ri].size());
  }
  m.steps = steps == SIZE_MAX ? 0 : steps;
  return m;
}

// Key that identifies one collective instance across ranks.
using InstanceKey = std::tuple<uint32_t /*group*/, int64_t /*seq or ordinal*/, uint32_t /*coll*/,
                               int64_t /*nelems*/, bool /*has_seq*/>;

struct Arrival {
  size_t rank_index;
  TimeNs start;
  TimeNs end;
  uint64_t offset;
  size_t call;  // index into the rank's RankTrace::collectives
};

// A culprit is late in more than one profiled step: one unlucky step (a
// rank's jitter that step is several sigma out among hundreds of ranks)
// makes a rank last at every collective of that step, and nothing more.
bool LateInSeveralSteps(const RankTrace& t, const std::vector<TimeNs>& late_starts) {
  if (t.steps.size() < 2) return true;
  std::vector<size_t> steps;
  for (TimeNs ts : late_starts) {
    for (size_t i = 0; i < t.steps.size(); ++i) {
      if (ts >= t.steps[i].start_ns && ts < t.steps[i].end_ns) steps.push_back(i);
    }
  }
  std::sort(steps.begin(), steps.end());
  return std::unique(steps.begin(), steps.end()) - steps.begin() >= 2;
}

// One rank whose compute time (union of compute ops) per step exceeds the
// step's median rank in every profiled step (>= 2): mean excess >=
// max(2%, 5 sigma / sqrt(steps)), sigma the robust spread of every rank's
// per-step excess, and >= 2x the next rank's. A 3-5% slower GPU makes its
// rank late by less than the arrival jitter of hundreds of ranks; its
// kernel time shows it directly. 2% of compute is ~1.7% of a step: above
// the 1% cost floor of a late rank.
constexpr double kComputeOutlierMin = 0.02;
constexpr double kComputeOutlierSigmas = 5;

std::optional<std::pair<size_t, double>> FindComputeOutlier(const StepCompute& m) {
  const size_t R = m.per.size();
  const size_t steps = m.steps;
  const auto& per = m.per;
  if (R < 4 || steps < 2) return std::nullopt;
  std::vector<double> all, mean(R, 0);
  std::vector<char> always(R, 1);
  for (size_t s = 0; s < steps; ++s) {
    std::vector<double> v;
    for (size_t ri = 0; ri < R; ++ri) v.push_back(per[ri][s]);
    double med = MedianNs(v);
    if (med <= 0) return std::nullopt;
    for (size_t ri = 0; ri < R; ++ri) {
      double x = per[ri][s] / med - 1;
      all.push_back(x);
      mean[ri] += x / static_cast<double>(steps);
      if (x <= 0) always[ri] = 0;
    }
  }
  double sigma = kMadToSigma * Mad(all).value_or(0);
  size_t best = 0;
  for (size_t ri = 1; ri < R; ++ri) {
    if (mean[ri] > mean[best]) best = ri;
  }
  double second = -1;
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri != best) second = std::max(second, mean[ri]);
  }
  double need = std::max(kComputeOutlierMin, kComputeOutlierSigmas * sigma / std::sqrt(static_cast<double>(steps)));
  if (!always[best] || mean[best] < need || mean[best] < 2 * std::max(0.0, second)) return std::nullopt;
  return std::make_pair(best, mean[best]);
}

// A block of consecutive ranks that computes more than the rest (a
// pipeline stage with more layers), when its lateness is lost in the
// arrival jitter of hundreds of ranks. Per rank its mean compute excess
// over the steps' medians; sorted, the split into a low and a high part
// (the high part 2 ranks to half the ranks) with the largest separation
// d = (mean high - mean low) / pooled standard deviation. A block needs
// d >= kBlockSeparation, the high part >= kComputeOutlierMin above the low
// one, and the high part's ranks >= 90% of the rank range they span (the
// few at the boundary that jitter across the split aside): the top ranks
// of a healthy job are neither this far apart nor consecutive.
constexpr double kBlockSeparation = 4;
constexpr double kBlockFill = 0.9;

std::vector<size_t> FindComputeBlock(const StepCompute& m, double* excess_out) {
  const size_t R = m.per.size();
  const size_t steps = m.steps;
  if (R < 8 || steps < 2) return {};
  std::vector<double> mean(R, 0);
  for (size_t s = 0; s < steps; ++s) {
    std::vector<double> v;
    for (size_t ri = 0; ri < R; ++ri) v.push_back(m.per[ri][s]);
    double med = MedianNs(v);
    if (med <= 0) return {};
    for (size_t ri = 0; ri < R; ++ri) mean[ri] += (m.per[ri][s] / med - 1) / static_cast<double>(steps);
  }
  std::vector<std::pair<double, size_t>> sorted;
  for (size_t ri = 0; ri < R; ++ri) sorted.push_back({mean[ri], ri});
  std::sort(sorted.begin(), sorted.end());
  // Prefix sums for the mean and variance of both parts at every split.
  std::vector<double> sum(R + 1, 0), sq(R + 1, 0);
  for (size_t i = 0; i < R; ++i) {
    sum[i + 1] = sum[i] + sorted[i].first;
    sq[i + 1] = sq[i] + sorted[i].first * sorted[i].first;
  }
  double best_d = 0, best_diff = 0;
  size_t best_k = 0;
  for (size_t k = (R + 1) / 2; k + 2 <= R; ++k) {
    double nl = static_cast<double>(k), nh = static_cast<double>(R - k);
    double ml = sum[k] / nl, mh = (sum[R] - sum[k]) / nh;
    double ssl = sq[k] - nl * ml * ml, ssh = (sq[R] - sq[k]) - nh * mh * mh;
    double sd = std::sqrt(std::max(0.0, (ssl + ssh) / static_cast<double>(R - 2)));
    if (sd <= 0) continue;
    double d = (mh - ml) / sd;
    if (d > best_d) best_d = d, best_k = k, best_diff = mh - ml;
  }
  if (best_k == 0 || best_d < kBlockSeparation || best_diff < kComputeOutlierMin) return {};
  std::vector<size_t> high;
  for (size_t i = best_k; i < R; ++i) high.push_back(sorted[i].second);
  std::sort(high.begin(), high.end());
  double span = static_cast<double>(high.back() - high.front() + 1);
  if (static_cast<double>(high.size()) < kBlockFill * span) return {};
  *excess_out = best_diff;
  return high;
}

// What a set of ranks costs the job: per instance, the set's last arrival
// minus everyone else's last arrival, summed.
double GroupDelay(const std::vector<char>& in,
                  const std::vector<std::vector<std::pair<size_t, double>>>& inst_arrivals) {
  double delay = 0;
  for (const auto& inst : inst_arrivals) {
    double g = -1e300, o = -1e300;
    for (auto [ri, a] : inst) {
      double& m = in[ri] ? g : o;
      m = std::max(m, a);
    }
    if (g > -1e300 && o > -1e300) delay += std::max(0.0, g - o);
  }
  return delay;
}

// How a group was found: late together, idle host, or a compute block.
enum class GroupBasis { kLateness, kIdle, kCompute };

// Ranks late together: one host's ranks (host contention, a host-wide
// fault) or a block of ranks (a pipeline stage with more work). Why: their
// kernels against a healthy peer's (slow kernels), or idle GPUs (host).
Finding GroupFinding(const std::vector<const RankTrace*>& traces, TraceAnalysis& out,
                     const std::vector<std::vector<double>>& lateness, const std::vector<size_t>& group,
                     double excess, const std::vector<std::vector<std::pair<size_t, double>>>& inst_arrivals,
                     GroupBasis basis) {
  const size_t R = traces.size();
  std::vector<char> in(R, 0);
  for (size_t gi : group) in[gi] = 1;
  size_t peer = R;
  for (size_t ri = 0; ri < R; ++ri) {
    if (in[ri] || !out.ranks[ri].median_lateness_ns) continue;
    if (peer == R || std::abs(*out.ranks[ri].median_lateness_ns) < std::abs(*out.ranks[peer].median_lateness_ns)) {
      peer = ri;
    }
  }
  std::vector<double> ratios;
  double extra_idle = 0, late_sum = 0;
  std::vector<int32_t> ranks;
  for (size_t gi : group) {
    ranks.push_back(out.ranks[gi].rank);
    if (peer < R) {
      ratios.push_back(CompareKernels(*traces[gi], {traces[peer]}, kMinLaunches).ratio);
      extra_idle += static_cast<double>(out.ranks[gi].idle_ns - out.ranks[peer].idle_ns);
    }
    for (double l : lateness[gi]) late_sum += std::max(0.0, l);
  }
  double ratio = ratios.empty() ? 1.0 : MedianNs(ratios);
  // One host: every group member there, and the group is (nearly) all of
  // that host's traced ranks.
  std::optional<std::string> host = out.ranks[group.front()].host;
  for (size_t gi : group) {
    if (out.ranks[gi].host != host) host.reset();
  }
  size_t host_ranks = 0;
  for (const RankTraceStats& st : out.ranks) host_ranks += host && st.host == host;
  bool whole_host = host && group.size() >= 2 && 4 * group.size() >= 3 * host_ranks;
  bool block = true;
  for (size_t i = 1; i < ranks.size(); ++i) block = block && ranks[i] == ranks[i - 1] + 1;

  double delay = GroupDelay(in, inst_arrivals);
  DurationNs window = 0;
  for (const RankTraceStats& st : out.ranks) window = std::max(window, st.window_ns);
  if (window > 0) out.throughput_lost = std::min(1.0, delay / static_cast<double>(window));

  Finding f;
  f.code = FindingCode::kTraceLateGroup;
  f.severity = Severity::kCritical;
  f.ranks = ranks;
  f.confidence = 0.7;
  f.pattern = whole_host ? Pattern::kHost : block ? Pattern::kBlock : Pattern::kScattered;
  std::string who;
  if (whole_host) {
    f.entity.host = host;
    who = fmt::format("the {} traced ranks of {} ({})", ranks.size(), *host, RankListText(ranks));
  } else {
    f.entity.rank = ranks.front();
    f.entity.host = out.ranks[group.front()].host;
    who = fmt::format("ranks {}", RankListText(ranks));
  }
  std::string why;
  // A compute block computes more by construction: its kernels are the why
  // even when the name-by-name ratio stays under the threshold.
  if (ratio >= kKernelRatioThreshold || (basis == GroupBasis::kCompute && ratio > 1)) {
    f.cause = "slow_kernels";
    f.slowdown = ratio - 1;
    why = fmt::format("their compute kernels run {:.2f}x as long as healthy rank {}'s", ratio,
                      out.ranks[peer].rank);
  } else if (peer < R && extra_idle >= 0.5 * late_sum) {
    f.cause = "host_stall";
    why = fmt::format(
        "their kernels run at the healthy speed ({:.2f}x of rank {}) but their GPUs idle {} more per "
        "rank with no kernel running: they wait for the host",
        ratio, out.ranks[peer].rank, Ms(static_cast<DurationNs>(extra_idle / static_cast<double>(group.size()))));
  } else {
    why = "why is not known from the traces";
  }
  if (basis == GroupBasis::kIdle) {
    DurationNs least = std::numeric_limits<DurationNs>::max(), others = 0;
    for (size_t ri = 0; ri < R; ++ri) {
      if (in[ri]) least = std::min(least, out.ranks[ri].idle_ns);
      else others = std::max(others, out.ranks[ri].idle_ns);
    }
    f.message = fmt::format(
        "{} all leave their GPUs idle: each at least {} of the {} profile with no kernel running, "
        "against at most {} on any rank of another host; {}",
        who, Ms(least), Ms(window), Ms(others), why);
  } else if (basis == GroupBasis::kCompute) {
    f.message = fmt::format(
        "{} compute more than the other ranks: {:.1f}% more per profiled step on average, a split "
        "of more than {:.0f} standard deviations; their late arrivals are lost in the jitter of {} "
        "ranks; {}",
        who, 100 * excess, kBlockSeparation, R, why);
  } else {
    f.message = fmt::format(
        "{} arrive late together: on average over {} collectives the least late of them arrives {} "
        "after a typical rank, a gap of more than {:.0f}x the other ranks' spread; {}",
        who, out.instances, Ms(static_cast<DurationNs>(excess)), kGroupSigmas, why);
  }
  if (window > 0) {
    f.evidence.push_back(Evidence{fmt::format("the group holds the job up by {} of a {} profile",
                                              Ms(static_cast<DurationNs>(delay)), Ms(window)),
                                  SourceRef{traces[group.front()]->file, 0}});
  }
  std::string where = host.value_or("their hosts");
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
  } else {
    f.next_steps.push_back(fmt::format(
        "compare the trace of rank {} with a healthy rank's around the late collectives", ranks.front()));
  }
  return f;
}

// No one late: does every rank's GPU idle >= kJobIdleShare of its profiled
// window? Then the GPUs wait for the host side everywhere — the job's only
// host (a `host` late group: contention, data loader, I/O there), or, over
// several hosts, a job-wide host stall (shared storage, the input pipeline,
// Python). GPU traces only: idle in a CPU-only trace means no CPU op.
std::optional<Finding> JobIdleFinding(const std::vector<const RankTrace*>& traces,
                                      const TraceAnalysis& out) {
  // Every rank of the job traced: two of 128 say nothing about the rest.
  if (out.ranks.size() < 2 ||
      (out.world_size && static_cast<size_t>(*out.world_size) != out.ranks.size())) {
    return std::nullopt;
  }
  std::vector<double> shares;
  std::set<std::string> hosts;
  bool host_unknown = false;
  DurationNs largest_gap = 0;
  size_t gaps = 0;
  for (const RankTraceStats& st : out.ranks) {
    if (st.cpu_only || st.window_ns <= 0) return std::nullopt;
    shares.push_back(static_cast<double>(st.idle_ns) / static_cast<double>(st.window_ns));
    if (st.host) hosts.insert(*st.host);
    else host_unknown = true;
    largest_gap = std::max(largest_gap, st.largest_gap_ns);
    gaps += st.gaps;
  }
  auto [lo, hi] = std::minmax_element(shares.begin(), shares.end());
  if (*lo < kJobIdleShare) return std::nullopt;
  double median = Median(shares).value_or(*lo);
  Finding f;
  bool one_host = hosts.size() == 1 && !host_unknown;
  f.severity = Severity::kCritical;
  f.confidence = 0.6;
  f.slowdown = median;
  f.cause = "host_stall";
  for (const RankTraceStats& st : out.ranks) f.ranks.push_back(st.rank);
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
    who = fmt::format("every rank's GPU ({} ranks)", out.ranks.size());
  }
  f.message = fmt::format(
      "no rank arrives late, but {} idles {:.1f}-{:.1f}% of its profiled window (median {:.1f}%) "
      "with no kernel running, in gaps of up to {}: the GPUs wait for the host side (CPU work, "
      "the data loader, I/O) on every rank",
      who, 100 * *lo, 100 * *hi, 100 * median, Ms(largest_gap));
  f.evidence.push_back(Evidence{fmt::format("{} idle gaps >= 10 us over {} ranks' traces", gaps, out.ranks.size()),
                                SourceRef{traces.front()->file, 0}});
  f.next_steps.push_back(fmt::format(
      "look at {}: CPU use (top, pidstat -u 1: other processes, the ranks' CPU / NUMA affinity), "
      "data loader workers and I/O (num_workers, pin_memory, storage throughput); a CPU trace of "
      "one step shows what the host does while the GPU idles",
      one_host ? *hosts.begin() : std::string("the hosts")));
  return f;
}

// No one late, no late group: does the work per rank change from step to
// step? Per profiled step, the robust spread (1.4826 MAD / median) of the
// ranks' compute time; fixed-shape training varies 1-3% (the article's
// jitter; healthy simulated runs measure 1.1-1.5%); above that, with a
// different slowest rank across steps, the data differs (sequence lengths,
// batches).
constexpr double kVariableWorkCv = 0.03;

std::optional<Finding> VariableWorkFinding(const StepCompute& m) {
  const size_t R = m.per.size();
  const size_t steps = m.steps;
  const auto& per = m.per;
  if (R < 4 || steps == 0) return std::nullopt;
  std::vector<double> cvs, spikes;
  std::vector<size_t> slowest;
  for (size_t s = 0; s < steps; ++s) {
    std::vector<double> v;
    size_t arg = 0;
    for (size_t ri = 0; ri < R; ++ri) {
      v.push_back(per[ri][s]);
      if (per[ri][s] > per[arg][s]) arg = ri;
    }
    double med = MedianNs(v);
    if (med <= 0) return std::nullopt;
    cvs.push_back(kMadToSigma * Mad(v).value_or(0) / med);
    spikes.push_back(per[arg][s] / med - 1);
    slowest.push_back(arg);
  }
  double cv = MedianNs(cvs);
  std::vector<size_t> distinct = slowest;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (cv < kVariableWorkCv || (steps >= 2 && distinct.size() == 1)) return std::nullopt;
  Finding f;
  f.code = FindingCode::kTraceVariableWork;
  f.severity = Severity::kWarning;
  f.entity.job = true;
  f.confidence = steps >= 2 ? 0.7 : 0.5;
  f.cause = "variable_work";
  f.slowdown = MedianNs(spikes);
  f.message = fmt::format(
      "compute per step differs between ranks by {:.1f}% (robust spread over {} ranks, median of {} "
      "profiled steps; fixed-shape training varies 1-3%), the slowest rank {:+.0f}% over the median, "
      "and {} different ranks are slowest in {} steps: the work per rank varies from step to step, "
      "no GPU is slow",
      100 * cv, R, steps, 100 * *f.slowdown, distinct.size(), steps);
  f.next_steps.push_back(
      "balance the work per rank: bucket or pack sequences by length, pad to fixed shapes, or use a "
      "token-count-balanced sampler; log tokens per rank per step to confirm");
  return f;
}

// Up to kMaxKernelPeers ranks to compare the suspect with: `peer` (the
// least late) first, then the ranks least late in absolute terms.
constexpr size_t kMaxKernelPeers = 4;
std::vector<const RankTrace*> HealthyPeers(const std::vector<const RankTrace*>& traces,
                                           const std::vector<RankTraceStats>& ranks, size_t suspect,
                                           size_t peer) {
  std::vector<size_t> order;
  for (size_t ri = 0; ri < traces.size(); ++ri) {
    if (ri != suspect && ri != peer) order.push_back(ri);
  }
  auto lateness = [&](size_t ri) {
    return ranks[ri].median_lateness_ns ? std::abs(*ranks[ri].median_lateness_ns) : INT64_MAX;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lateness(a) < lateness(b); });
  std::vector<const RankTrace*> out;
  if (peer != suspect) out.push_back(traces[peer]);
  for (size_t ri : order) {
    if (out.size() >= kMaxKernelPeers) break;
    out.push_back(traces[ri]);
  }
  return out;
}

void AddHostGapEvidence(Finding& h, const HostGapComparison& hg, int32_t rank, uint32_t file) {
  h.message += fmt::format("; rank {}: {}", rank, DescribeHostGaps(hg));
  h.evidence.push_back(Evidence{
      fmt::format("GPU idle with an empty launch queue {} on rank {} vs {} (median of {} peers); idle "
                  "with launches queued {} vs {}",
                  Ms(hg.unlaunched_ns), rank, Ms(hg.peer_unlaunched_ns), hg.peers, Ms(hg.queued_ns),
                  Ms(hg.peer_queued_ns)),
      SourceRef{file, 0}});
}

TraceBusyStats BusyStats(const Run& run, const RankTrace& t) {
  TraceBusyStats st;
  st.host = t.host;
  st.file = t.file;
  st.trace = static_cast<uint32_t>(&t - run.traces.data());
  st.cpu_only = t.cpu_only;
  st.steps = t.steps.size();
  if (!t.ops.empty()) {
    TimeNs first = t.ops.front().start_ns, last = first;
    for (const TraceOp& op : t.ops) {
      last = std::max(last, op.start_ns + op.dur_ns);
      st.busy_by_class_ns[static_cast<size_t>(op.cls)] += op.dur_ns;
    }
    st.window_ns = last - first;
    Coverage all = Cover(t.ops, [](const TraceOp&) { return true; });
    Coverage compute = Cover(t.ops, [](const TraceOp& op) { return op.cls != OpClass::kCommunication; });
    Coverage comm = Cover(t.ops, [](const TraceOp& op) { return op.cls == OpClass::kCommunication; });
    st.busy_ns = all.busy;
    st.compute_busy_ns = compute.busy;
    st.comm_busy_ns = comm.busy;
    st.idle_ns = st.window_ns - all.busy;
    st.gaps = all.gaps;
    st.largest_gap_ns = all.largest_gap;
  }
  st.collectives = t.collectives.size();
  for (const CollectiveCall& c : t.collectives) st.collective_ns += c.dur_ns;
  return st;
}

}  // namespace

TraceAnalysis AnalyzeTraces(const Run& run) {
  TraceAnalysis out;
  // Traces of one job: the world size with the most ranked traces (traces
  // without a world size join any job), then one trace per rank, the first
  // in file order.
  std::map<int32_t, size_t> per_world;
  for (const RankTrace& t : run.traces) {
    if (t.rank && t.world_size) ++per_world[*t.world_size];
  }
  std::optional<int32_t> world;
  size_t most = 0;
  for (auto [w, n] : per_world) {
    if (n > most) most = n, world = w;
  }
  std::map<int32_t, const RankTrace*> by_rank;
  for (bool known_world : {true, false}) {  // the job's own traces first
    for (const RankTrace& t : run.traces) {
      if (!t.rank || t.world_size.has_value() != known_world) continue;
      if (world && t.world_size && *t.world_size != *world) continue;
      if (!by_rank.count(*t.rank)) by_rank[*t.rank] = &t;
    }
  }
  for (const RankTrace& t : run.traces) {
    if (!t.rank) out.unranked.push_back(BusyStats(run, t));
  }
  if (by_rank.empty()) return out;
  out.world_size = world;
  std::vector<const RankTrace*> traces;
  for (auto& [r, t] : by_rank) traces.push_back(t);
  const size_t R = traces.size();

  // Per-rank busy / idle.
  for (const RankTrace* t : traces) {
    RankTraceStats st;
    static_cast<TraceBusyStats&>(st) = BusyStats(run, *t);
    st.rank = *t->rank;
    out.ranks.push_back(std::move(st));
  }

  // Step length, from ProfilerStep ranges.
  {
    std::vector<double> lens;
    for (const RankTrace* t : traces) {
      for (const TraceStep& s : t->steps) lens.push_back(static_cast<double>(s.end_ns - s.start_ns));
    }
    if (!lens.empty()) out.median_step_ns = static_cast<DurationNs>(MedianNs(lens));
  }

  // Match collective instances.
  std::map<InstanceKey, std::vector<Arrival>> instances;
  for (size_t ri = 0; ri < R; ++ri) {
    std::map<std::tuple<uint32_t, uint32_t, int64_t>, int64_t> ordinal;
    const std::vector<CollectiveCall>& calls = traces[ri]->collectives;
    for (size_t ci = 0; ci < calls.size(); ++ci) {
      const CollectiveCall& c = calls[ci];
      uint32_t group = c.group.value_or(UINT32_MAX);
      int64_t nel = c.nelems.value_or(-1);
      InstanceKey key;
      if (c.seq) {
        key = {group, *c.seq, c.collective, 0, true};
      } else {
        int64_t n = ordinal[{group, c.collective, nel}]++;
        key = {group, n, c.collective, nel, false};
      }
      instances[key].push_back(Arrival{ri, c.start_ns, c.start_ns + c.dur_ns, c.offset, ci});
    }
  }
  // Keep instances seen once per rank on at least two ranks.
  std::vector<std::vector<Arrival>> matched;
  for (auto& [key, arrivals] : instances) {
    if (arrivals.size() < 2) continue;
    std::sort(arrivals.begin(), arrivals.end(), [](const Arrival& a, const Arrival& b) { return a.rank_index < b.rank_index; });
    bool unique = std::adjacent_find(arrivals.begin(), arrivals.end(), [](const Arrival& a, const Arrival& b) {
                    return a.rank_index == b.rank_index;
                  }) == arrivals.end();
    if (unique) matched.push_back(std::move(arrivals));
  }
  out.instances = matched.size();
  if (R >= 2 && matched.empty()) {
    Finding f;
    f.code = FindingCode::kTraceNoMatch;
    f.severity = Describe(f.code).severity;
    f.entity.job = true;
    f.confidence = 0.9;
    size_t with = 0;
    for (const RankTrace* t : traces) with += !t->collectives.empty();
    f.message = fmt::format(
        "{} rank traces, {} with collectives, but no collective call could be matched across ranks "
        "(different steps profiled, or different jobs?)",
        R, with);
    f.next_steps.push_back(
        "profile the same steps on every rank (torch.profiler schedule with the same wait/warmup/"
        "active on all ranks) so collectives can be matched");
    out.findings.push_back(std::move(f));
  }
  if (matched.empty()) return out;

  // Clock offsets from collective ends.
  std::vector<std::vector<double>> end_dev(R);
  for (const auto& inst : matched) {
    std::vector<double> ends;
    for (const Arrival& a : inst) ends.push_back(static_cast<double>(a.end));
    double med = MedianNs(ends);
    for (const Arrival& a : inst) end_dev[a.rank_index].push_back(static_cast<double>(a.end) - med);
  }
  std::vector<DurationNs> offset(R, 0);
  DurationNs max_abs_offset = 0;
  for (size_t ri = 0; ri < R; ++ri) {
    if (end_dev[ri].empty()) continue;
    offset[ri] = static_cast<DurationNs>(std::llround(MedianNs(end_dev[ri])));
    out.ranks[ri].clock_offset_ns = offset[ri];
    max_abs_offset = std::max(max_abs_offset, std::abs(offset[ri]));
  }

  // Per instance: lateness, wait, transfer, last arrival.
  std::vector<std::vector<double>> lateness(R), wait(R);
  std::vector<size_t> last_count(R, 0), seen(R, 0);
  std::vector<double> transfers;
  std::vector<double> delay_by_rank(R, 0);  // last minus second-to-last arrival
  std::vector<std::pair<size_t, double>> instance_delays;  // (last rank, its delay) per instance
  std::vector<std::pair<uint64_t, size_t>> last_offsets;  // evidence: (file offset, rank index)
  std::vector<std::vector<std::pair<size_t, double>>> inst_arrivals;  // (rank index, aligned arrival)
  std::vector<std::vector<TimeNs>> last_starts(R);  // own-clock starts of the calls a rank was last at
  for (size_t ri = 0; ri < R; ++ri) out.ranks[ri].call_lateness_ns.resize(traces[ri]->collectives.size());
  for (const auto& inst : matched) {
    std::vector<double> arr, ends;
    for (const Arrival& a : inst) {
      arr.push_back(static_cast<double>(a.start - offset[a.rank_index]));
      ends.push_back(static_cast<double>(a.end - offset[a.rank_index]));
    }
    double med_arrival = MedianNs(arr);
    double med_end = MedianNs(ends);
    size_t last_i = static_cast<size_t>(std::max_element(arr.begin(), arr.end()) - arr.begin());
    double last = arr[last_i];
    transfers.push_back(std::max(0.0, med_end - last));
    for (size_t i = 0; i < inst.size(); ++i) {
      size_t ri = inst[i].rank_index;
      lateness[ri].push_back(arr[i] - med_arrival);
      out.ranks[ri].call_lateness_ns[inst[i].call] = static_cast<DurationNs>(std::llround(arr[i] - med_arrival));
      wait[ri].push_back(last - arr[i]);
      ++seen[ri];
    }
    std::vector<std::pair<size_t, double>>& ia = inst_arrivals.emplace_back();
    for (size_t i = 0; i < inst.size(); ++i) ia.push_back({inst[i].rank_index, arr[i]});
    ++last_count[inst[last_i].rank_index];
    last_starts[inst[last_i].rank_index].push_back(inst[last_i].start);
    if (arr.size() >= 2) {
      std::vector<double> sorted = arr;
      std::sort(sorted.begin(), sorted.end());
      delay_by_rank[inst[last_i].rank_index] += sorted.back() - sorted[sorted.size() - 2];
      instance_delays.push_back({inst[last_i].rank_index, sorted.back() - sorted[sorted.size() - 2]});
    }
    if (last_offsets.size() < 3) last_offsets.push_back({inst[last_i].offset, inst[last_i].rank_index});
  }
  out.median_transfer_ns = static_cast<DurationNs>(MedianNs(transfers));
  for (size_t ri = 0; ri < R; ++ri) {
    RankTraceStats& st = out.ranks[ri];
    st.instances = seen[ri];
    if (seen[ri] == 0) continue;
    st.share_last = static_cast<double>(last_count[ri]) / static_cast<double>(seen[ri]);
    st.median_lateness_ns = static_cast<DurationNs>(MedianNs(lateness[ri]));
    st.median_wait_ns = static_cast<DurationNs>(MedianNs(wait[ri]));
  }

  if (max_abs_offset >= 1'000'000) {
    Finding f;
    f.code = FindingCode::kTraceClockOffsets;
    f.severity = Severity::kInfo;
    f.entity.job = true;
    f.confidence = 0.9;
    // The largest offsets first.
    std::vector<size_t> order(R);
    for (size_t ri = 0; ri < R; ++ri) order[ri] = ri;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return std::abs(offset[a]) > std::abs(offset[b]); });
    std::string list;
    for (size_t i = 0; i < R && i < 6; ++i) {
      size_t ri = order[i];
      list += fmt::format("{}rank {}{} {:+.2f} ms", list.empty() ? "" : ", ", out.ranks[ri].rank,
                          out.ranks[ri].host ? " (" + *out.ranks[ri].host + ")" : std::string(),
                          static_cast<double>(offset[ri]) / 1e6);
    }
    if (R > 6) list += ", ...";
    f.message = fmt::format(
        "rank clocks disagree by up to {}; offsets estimated from {} collective ends were removed "
        "({})",
        Ms(max_abs_offset), matched.size(), list);
    out.findings.push_back(std::move(f));
  }

  // The culprit: the rank whose late arrivals hold the others up. Each
  // instance's delay is its last arrival minus the second-to-last: what the
  // job would have gained without that one rank. A stalled rank may be last
  // at only one collective per step (the later ones start in sync), so the
  // decision weighs delay, not the share of instances.
  double total_delay = 0;
  size_t best = 0, second = R > 1 ? 1 : 0;
  for (size_t ri = 0; ri < R; ++ri) {
    total_delay += delay_by_rank[ri];
    out.ranks[ri].delay_caused_ns = static_cast<DurationNs>(delay_by_rank[ri]);
  }
  for (size_t ri = 0; ri < R; ++ri) {
    if (delay_by_rank[ri] > delay_by_rank[best]) best = ri;
  }
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri != best && (second == best || delay_by_rank[ri] > delay_by_rank[second])) second = ri;
  }
  double delay_share = total_delay > 0 ? delay_by_rank[best] / total_delay : 0;
  double mean_delay = last_count[best] > 0 ? delay_by_rank[best] / static_cast<double>(last_count[best]) : 0;
  // Noise: the delays of the instances where another rank came last. With
  // jitter alone some rank is always last, by a margin of the same size as
  // everyone else's; a culprit's margin stands out (>= 3x) from them.
  std::vector<double> noise;
  for (auto [ri, d] : instance_delays) {
    if (ri != best) noise.push_back(d);
  }
  bool stands_out = noise.size() < kMinInstances || mean_delay >= 3 * MedianNs(noise);
  bool late = R >= 2 && last_count[best] >= kMinInstances && delay_share >= 0.5 &&
              delay_by_rank[best] >= 3 * delay_by_rank[second] &&
              mean_delay >= static_cast<double>(kMinLatenessNs) && stands_out;
  // No one rank holds the job up by its delay: are ranks late together
  // (one host's, a block of ranks)? A group of one is a late rank whose
  // margin over the second-to-last arrival is too small to stand out per
  // instance but whose mean lateness does over all of them.
  DurationNs window = 0;
  for (const RankTraceStats& st : out.ranks) window = std::max(window, st.window_ns);
  const double min_cost = kMinCostShare * static_cast<double>(window);
  late = late && delay_by_rank[best] >= min_cost && LateInSeveralSteps(*traces[best], last_starts[best]);
  std::vector<size_t> group;
  double group_excess = 0;
  bool from_group = false;
  // A host starving all its GPUs is the culprit even when one of its ranks
  // is the late one.
  std::vector<size_t> idle_host = FindIdleHost(out, window);
  auto in_idle_host = [&](size_t ri) { return std::find(idle_host.begin(), idle_host.end(), ri) != idle_host.end(); };
  if (late && in_idle_host(best)) late = false;
  // A late rank, while every rank's compute per step spreads like variable
  // work, is the top of that spread, not a culprit — unless its GPU idles
  // for most of its lateness: more work does not idle a GPU, a stalled host
  // (data loader) does.
  StepCompute step_compute;
  std::optional<Finding> variable_work;
  if (late) {
    step_compute = ComputeMatrix(traces);
    std::vector<double> idle_others;
    for (size_t ri = 0; ri < R; ++ri) {
      if (ri != best) idle_others.push_back(static_cast<double>(out.ranks[ri].idle_ns));
    }
    double extra_idle = static_cast<double>(out.ranks[best].idle_ns) - Median(idle_others).value_or(0);
    if (extra_idle < 0.5 * delay_by_rank[best]) {
      variable_work = VariableWorkFinding(step_compute);
      if (variable_work) late = false;
    }
  }
  // A late rank inside a block of ranks that all compute more is one of
  // that block (a pipeline stage), not a lone culprit.
  // A compute block that costs >= the floor becomes the group; `must_hold`
  // (a late rank) has to be one of its ranks.
  bool by_compute = false;
  auto take_compute_block = [&](std::optional<size_t> must_hold) {
    double block_excess = 0;
    std::vector<size_t> block = FindComputeBlock(step_compute, &block_excess);
    if (block.empty() || (must_hold && std::find(block.begin(), block.end(), *must_hold) == block.end())) return;
    std::vector<char> in(R, 0);
    for (size_t gi : block) in[gi] = 1;
    if (GroupDelay(in, inst_arrivals) < min_cost) return;
    group = std::move(block);
    group_excess = block_excess;
    by_compute = true;
  };
  if (late && !variable_work) {
    take_compute_block(best);
    if (by_compute) late = false;
  }
  if (!late && !variable_work && group.empty() && R >= 3) {
    group = FindLateGroup(lateness, &group_excess);
    if (group.size() == 1 && (delay_by_rank[group.front()] < min_cost ||
                              !LateInSeveralSteps(*traces[group.front()], last_starts[group.front()]))) {
      group.clear();
    }
    if (group.size() > 1) {
      std::vector<char> in(R, 0);
      for (size_t gi : group) in[gi] = 1;
      if (GroupDelay(in, inst_arrivals) < min_cost) group.clear();
    }
    if (group.size() == 1) {
      best = group.front();
      late = from_group = true;
      group.clear();
      delay_share = total_delay > 0 ? delay_by_rank[best] / total_delay : 0;
      mean_delay = last_count[best] > 0 ? delay_by_rank[best] / static_cast<double>(last_count[best]) : 0;
    }
  }
  bool by_idle = false;
  if (!idle_host.empty() && (!late || in_idle_host(best)) && group != idle_host && !variable_work) {
    group = idle_host;  // the late-together message when they are also that
    late = from_group = by_compute = false;
    by_idle = true;
  }
  // Neither: one rank whose compute per step stands out in every step, or
  // a block of ranks that computes more.
  std::optional<double> compute_excess;
  if (!late && group.empty() && !variable_work) {
    step_compute = ComputeMatrix(traces);
    take_compute_block(std::nullopt);
    if (!by_compute) {
      if (auto co = FindComputeOutlier(step_compute)) {
        best = co->first;
        compute_excess = co->second;
        late = from_group = true;
        delay_share = total_delay > 0 ? delay_by_rank[best] / total_delay : 0;
        mean_delay = last_count[best] > 0 ? delay_by_rank[best] / static_cast<double>(last_count[best]) : 0;
      }
    }
    if (!late && group.empty()) variable_work = VariableWorkFinding(step_compute);
  }
  const RankTraceStats& cand = out.ranks[best];

  // A healthy peer: the rank with the smallest |lateness|.
  size_t peer = best == 0 ? 1 : 0;
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri == best || !out.ranks[ri].median_lateness_ns) continue;
    if (!out.ranks[peer].median_lateness_ns ||
        std::abs(*out.ranks[ri].median_lateness_ns) < std::abs(*out.ranks[peer].median_lateness_ns)) {
      peer = ri;
    }
  }
  // The victim: the longest time in collectives.
  size_t victim = 0;
  for (size_t ri = 1; ri < R; ++ri) {
    if (out.ranks[ri].collective_ns > out.ranks[victim].collective_ns) victim = ri;
  }

  if (late) {
    out.culprit = cand.rank;
    if (window > 0) out.throughput_lost = std::min(1.0, delay_by_rank[best] / static_cast<double>(window));
    const RankTrace& ct = *traces[best];
    Finding f;
    f.code = FindingCode::kTraceLateArrival;
    f.severity = Severity::kCritical;
    f.entity.rank = cand.rank;
    f.entity.host = cand.host;
    f.entity.gpu = ct.device;
    f.confidence = from_group ? 0.55 : delay_share >= 0.8 ? 0.75 : 0.6;
    f.message = fmt::format(
        "rank {} arrives last at {} of {} collectives, {} after the next rank on average: it holds "
        "the job up by {} in total ({:.0f}% of all waiting); median wait {} vs {} on healthy rank {}",
        cand.rank, last_count[best], cand.instances, Ms(static_cast<DurationNs>(mean_delay)),
        Ms(static_cast<DurationNs>(delay_by_rank[best])), 100 * delay_share,
        Ms(cand.median_wait_ns.value_or(0)), Ms(out.ranks[peer].median_wait_ns.value_or(0)),
        out.ranks[peer].rank);
    if (compute_excess) {
      f.message += fmt::format("; its compute per step stands out: {:.1f}% above the median rank's in every profiled step",
                               100 * *compute_excess);
    } else if (from_group) {
      f.message += fmt::format(
          "; its mean lateness over all collectives is {} above the other ranks', {:.0f}x their spread",
          Ms(static_cast<DurationNs>(group_excess)), kGroupSigmas);
    }
    for (auto [off, ri] : last_offsets) {
      if (ri != best) continue;
      f.evidence.push_back(Evidence{fmt::format("late collective on rank {} (byte offset {})", cand.rank, off),
                                    SourceRef{traces[ri]->file, 0}});
    }
    if (victim != best) {
      f.evidence.push_back(Evidence{
          fmt::format("rank {} spends the most time in NCCL ({}): a victim waiting, not the culprit",
                      out.ranks[victim].rank, Ms(out.ranks[victim].collective_ns)),
          SourceRef{traces[victim]->file, 0}});
    }
    out.findings.push_back(std::move(f));

    // Why late: slower kernels (by name and shape), or gaps?
    std::vector<const RankTrace*> peers = HealthyPeers(traces, out.ranks, best, peer);
    KernelComparison kc = CompareKernels(ct, peers, kMinLaunches);
    double kernel_ratio = kc.ratio;
    double weight_sum = kc.weight_ns;
    HostGapComparison hg = CompareHostGaps(ct, peers);
    const RankTraceStats& ps = out.ranks[peer];
    // Idle = neither computing nor communicating: a victim's extra time is
    // inside its NCCL kernels, a stalled rank's is outside any kernel.
    DurationNs extra_idle = cand.idle_ns - ps.idle_ns;
    // The delay the culprit adds over the profile, summed over instances.
    double total_lateness = 0;
    for (double l : lateness[best]) total_lateness += std::max(0.0, l);
    if ((weight_sum > 0 && kernel_ratio >= kKernelRatioThreshold) || compute_excess) {
      Finding k;
      k.code = FindingCode::kTraceComputeSlow;
      k.severity = Severity::kCritical;
      k.entity = out.findings.back().entity;
      k.slowdown = compute_excess ? *compute_excess : kernel_ratio - 1;
      k.confidence = compute_excess ? 0.6 : 0.8;
      k.message = fmt::format(
          "rank {}'s compute kernels run {:.2f}x as long as healthy rank {}'s (time-weighted, {} "
          "kernels compared by name{}); top: {}",
          cand.rank, kernel_ratio, ps.rank, kc.keys, kc.keys_with_shape > 0 ? " and launch shape" : "",
          DescribeTopKernel(kc, run.names, cand.rank, peers.size()));
      if (compute_excess) {
        k.message += fmt::format("; its compute time is {:.1f}% above the median rank's in every profiled step",
                                 100 * *compute_excess);
      }
      k.evidence.push_back(Evidence{fmt::format("compute busy {} on rank {} vs {} on rank {}",
                                                Ms(cand.compute_busy_ns), cand.rank,
                                                Ms(ps.compute_busy_ns), ps.rank),
                                    SourceRef{ct.file, 0}});
      k.next_steps.push_back(fmt::format(
          "the GPU of rank {} executes slowly: check its hardware metrics against a healthy GPU "
          "at the same time (nvidia-smi dmon -s pucvmt -d 1{}: temperature, SM clock, power cap, "
          "PCIe link)",
          cand.rank, ct.device ? fmt::format(" -i {}", *ct.device) : ""));
      out.findings.push_back(std::move(k));
    } else if (hg.known ? static_cast<double>(hg.unlaunched_ns - hg.peer_unlaunched_ns) >= 0.5 * total_lateness
                        : static_cast<double>(extra_idle) >= 0.5 * total_lateness) {
      Finding h;
      h.code = FindingCode::kTraceHostStall;
      h.severity = Severity::kCritical;
      h.entity = out.findings.back().entity;
      h.confidence = 0.75;
      h.message = fmt::format(
          "rank {}'s kernels run at the healthy speed ({:.2f}x of rank {}) but its GPU idles {} "
          "more with no kernel running: it waits for the host (data loader, CPU, Python) before "
          "launching work",
          cand.rank, kernel_ratio, ps.rank, Ms(extra_idle));
      h.evidence.push_back(Evidence{fmt::format("largest idle gap {} on rank {}, {} gaps",
                                                Ms(cand.largest_gap_ns), cand.rank, cand.gaps),
                                    SourceRef{ct.file, 0}});
      if (hg.known) AddHostGapEvidence(h, hg, cand.rank, ct.file);
      h.next_steps.push_back(fmt::format(
          "look at rank {}'s host: data loader workers and I/O, CPU contention (top / pidstat on {}), "
          "Python GC; compare its CPU trace with rank {}'s around the gaps",
          cand.rank, cand.host.value_or("its node"), ps.rank));
      out.findings.push_back(std::move(h));
    } else if (delay_by_rank[best] < kUnexplainedMinCostShare * static_cast<double>(window)) {
      // Late by a small margin with normal kernels and no idle: with few
      // ranks one of them is last in most profiled steps by chance.
      Finding& late_f = out.findings.back();
      late_f.severity = Severity::kInfo;
      late_f.confidence = 0.3;
      late_f.message += fmt::format(
          "; but its kernels run at the healthy speed and its GPU does not idle more, and the delay is "
          "{:.1f}% of the profile (< {:.0f}%): within what chance gives {} ranks, not blamed",
          100 * delay_by_rank[best] / static_cast<double>(window), 100 * kUnexplainedMinCostShare, R);
      out.culprit.reset();
      out.throughput_lost.reset();
    }
  } else if (!group.empty()) {
    out.findings.push_back(GroupFinding(traces, out, lateness, group, group_excess, inst_arrivals,
                                        by_idle ? GroupBasis::kIdle
                                        : by_compute ? GroupBasis::kCompute
                                                     : GroupBasis::kLateness));
  } else if (variable_work) {
    out.findings.push_back(std::move(*variable_work));
  } else if (std::optional<Finding> idle = JobIdleFinding(traces, out)) {
    out.findings.push_back(std::move(*idle));
  } else if (out.median_step_ns && out.median_transfer_ns && R >= 2) {
    // Nobody is late: is the network slow for everyone?
    double steps_profiled = 0;
    for (const RankTraceStats& st : out.ranks) steps_profiled = std::max(steps_profiled, static_cast<double>(st.steps));
    double per_step_transfer =
        static_cast<double>(*out.median_transfer_ns) * static_cast<double>(matched.size()) /
        std::max(1.0, steps_profiled);
    double share = per_step_transfer / static_cast<double>(*out.median_step_ns);
    if (share >= kCommBoundShare) {
      Finding f;
      f.code = FindingCode::kTraceCommBound;
      f.severity = Severity::kWarning;
      f.entity.job = true;
      f.confidence = 0.7;
      f.slowdown = share;
      f.message = fmt::format(
          "no rank holds the others up (the largest share of waiting, {:.0f}%, is rank {}'s), but "
          "collective transfers take {:.0f}% of each {} step on every rank: the job is "
          "communication-bound",
          100 * delay_share, cand.rank, 100 * share, Ms(*out.median_step_ns));
      f.next_steps.push_back(
          "measure the network: nccl-tests all_reduce_perf between nodes, ibstat / ethtool on "
          "every NIC; compare busbw with the fabric's rating");
      out.findings.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace laggard
