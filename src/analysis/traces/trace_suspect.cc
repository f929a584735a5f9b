// The first decision of the trace detector (trace_detector.h):
// FindTraceSuspect, who holds the job up.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "analysis/traces/trace_detector.h"
#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

double MedianNs(std::vector<double> v) { return Median(std::move(v)).value_or(0); }

// Ranks late together. Per rank, the mean aligned lateness over its
// instances; sorted, the late group is the upper cluster above the first
// break (scanning from the middle up) of at least group_sigmas x the
// normal ranks' spread and min_lateness_ns. The group is at most half the
// ranks: with exactly half, the later half is the one the others wait for.
// The spread comes from the lower half's quantiles (0.125..0.375), which
// hold only normal ranks: (Q.375 - Q.125) / 0.831 is the normal sigma
// when the group is small and overestimates it (x1.6) when it is half.
std::vector<size_t> FindLateGroup(const std::vector<std::vector<double>>& lateness,
                                  double* excess_out, const TraceDetectorOptions& opt) {
  std::vector<std::pair<double, size_t>> mean;
  for (size_t ri = 0; ri < lateness.size(); ++ri) {
    if (lateness[ri].size() < opt.min_instances) continue;
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
  double need = std::max(opt.group_sigmas * sigma, static_cast<double>(opt.min_lateness_ns));
  for (size_t i = (n + 1) / 2; i < n; ++i) {
    if (v[i] - v[i - 1] < need) continue;
    std::vector<size_t> group;
    for (size_t j = i; j < n; ++j) group.push_back(mean[j].second);
    std::sort(group.begin(), group.end());
    double low =
        MedianNs(std::vector<double>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i)));
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
// idle >= idle_host_ratio x the most idle rank elsewhere and more by >=
// min_cost_share of the profile.
std::vector<size_t> FindIdleHost(const TraceMetrics& m, const TraceDetectorOptions& opt) {
  std::map<std::string, std::vector<size_t>> by_host;
  for (size_t ri = 0; ri < m.ranks.size(); ++ri) {
    if (m.ranks[ri].host) by_host[*m.ranks[ri].host].push_back(ri);
  }
  if (by_host.size() < 2) return {};
  const std::vector<size_t>* top = nullptr;
  DurationNs top_min = 0;
  for (const auto& [host, ranks] : by_host) {
    if (ranks.size() < 2) continue;
    DurationNs least = std::numeric_limits<DurationNs>::max();
    for (size_t ri : ranks) least = std::min(least, m.ranks[ri].idle_ns);
    if (!top || least > top_min) top = &ranks, top_min = least;
  }
  if (!top) return {};
  DurationNs others_max = 0;
  for (size_t ri = 0; ri < m.ranks.size(); ++ri) {
    if (std::find(top->begin(), top->end(), ri) == top->end()) {
      others_max = std::max(others_max, m.ranks[ri].idle_ns);
    }
  }
  if (static_cast<double>(top_min) < opt.idle_host_ratio * static_cast<double>(others_max) ||
      static_cast<double>(top_min - others_max) <
          opt.min_cost_share * static_cast<double>(m.window_ns)) {
    return {};
  }
  return *top;
}

// One rank whose compute time (union of compute ops) per step exceeds the
// step's median rank in every profiled step (>= 2): mean excess >=
// max(compute_outlier_min, compute_outlier_sigmas sigma / sqrt(steps)),
// sigma the robust spread of every rank's per-step excess, and >= 2x the
// next rank's. A 3-5% slower GPU makes its rank late by less than the
// arrival jitter of hundreds of ranks; its kernel time shows it directly.
// 2% of compute is ~1.7% of a step: above the 1% cost floor of a late rank.
std::optional<std::pair<size_t, double>> FindComputeOutlier(const StepCompute& m, bool cpu_only,
                                                            const TraceDetectorOptions& opt) {
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
  double need =
      std::max(cpu_only ? opt.cpu_op_noise : opt.compute_outlier_min,
               opt.compute_outlier_sigmas * sigma / std::sqrt(static_cast<double>(steps)));
  if (!always[best] || mean[best] < need || mean[best] < 2 * std::max(0.0, second))
    return std::nullopt;
  return std::make_pair(best, mean[best]);
}

// A block of consecutive ranks that computes more than the rest (a
// pipeline stage with more layers), when its lateness is lost in the
// arrival jitter of hundreds of ranks. Per rank its mean compute excess
// over the steps' medians; sorted, the split into a low and a high part
// (the high part 2 ranks to half the ranks) with the largest separation
// d = (mean high - mean low) / pooled standard deviation. A block needs
// d >= block_separation, the high part >= compute_outlier_min above the
// low one, and the high part's ranks >= block_fill of the rank range they
// span (the few at the boundary that jitter across the split aside), and its
// least member >= half that excess above the low part: the top ranks of a
// healthy job are neither this far apart nor consecutive, and a healthy
// rank beside one slow rank is no block with it.
std::vector<size_t> FindComputeBlock(const StepCompute& m, double* excess_out,
                                     const TraceDetectorOptions& opt) {
  const size_t R = m.per.size();
  const size_t steps = m.steps;
  if (R < 8 || steps < 2) return {};
  std::vector<double> mean(R, 0);
  for (size_t s = 0; s < steps; ++s) {
    std::vector<double> v;
    for (size_t ri = 0; ri < R; ++ri) v.push_back(m.per[ri][s]);
    double med = MedianNs(v);
    if (med <= 0) return {};
    for (size_t ri = 0; ri < R; ++ri)
      mean[ri] += (m.per[ri][s] / med - 1) / static_cast<double>(steps);
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
  if (best_k == 0 || best_d < opt.block_separation || best_diff < opt.compute_outlier_min)
    return {};
  // Every member computes at least half the part's mean excess over the
  // low part: the high part has >= 2 ranks, so one slow rank and whichever
  // healthy rank computes most make a "block" whenever the two are
  // neighbours, and the healthy one would be named.
  const double low_mean = sum[best_k] / static_cast<double>(best_k);
  if (sorted[best_k].first - low_mean < best_diff / 2) return {};
  std::vector<size_t> high;
  for (size_t i = best_k; i < R; ++i) high.push_back(sorted[i].second);
  std::sort(high.begin(), high.end());
  double span = static_cast<double>(high.back() - high.front() + 1);
  if (static_cast<double>(high.size()) < opt.block_fill * span) return {};
  *excess_out = best_diff;
  return high;
}

// No one late, no late group: does the work per rank change from step to
// step? Per profiled step, the robust spread (1.4826 MAD / median) of the
// ranks' compute time; fixed-shape training varies 1-3% (the article's
// jitter; healthy simulated runs measure 1.1-1.5%); above
// variable_work_cv, with a different slowest rank across steps, the data
// differs (sequence lengths, batches).
// `compute` with each rank's steps scaled by (all ranks' mean) / (its
// role's mean), when the ranks have roles of their own (role[ri] per rank
// index); false when they do not.
bool ScaleByRole(StepCompute& compute, const std::vector<int32_t>& role) {
  const size_t R = compute.per.size();
  if (role.size() != R) return false;
  std::map<int32_t, std::pair<double, size_t>> sum;  // role -> (sum, count)
  double all = 0;
  size_t n = 0;
  for (size_t ri = 0; ri < R; ++ri) {
    for (double v : compute.per[ri]) {
      sum[role[ri]].first += v;
      ++sum[role[ri]].second;
      all += v;
      ++n;
    }
  }
  if (sum.size() < 2 || n == 0 || all <= 0) return false;
  const double mean = all / static_cast<double>(n);
  for (size_t ri = 0; ri < R; ++ri) {
    const auto& [total, count] = sum[role[ri]];
    if (total <= 0) continue;
    const double scale = mean / (total / static_cast<double>(count));
    for (double& v : compute.per[ri]) v *= scale;
  }
  return true;
}

std::optional<Finding> VariableWorkFinding(const StepCompute& measured, bool cpu_only,
                                           const TraceDetectorOptions& opt,
                                           const std::vector<int32_t>& role) {
  // Scaled per role on a copy, only where the ranks have roles.
  StepCompute scaled;
  bool by_role = false;
  if (role.size() == measured.per.size()) {
    scaled = measured;
    by_role = ScaleByRole(scaled, role);
  }
  const StepCompute& m = by_role ? scaled : measured;
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
  const double need =
      cpu_only ? std::max(opt.variable_work_cv, opt.cpu_variable_work_cv) : opt.variable_work_cv;
  if (cv < need || (steps >= 2 && distinct.size() == 1)) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kTraceVariableWork);
  f.entity.job = true;
  f.confidence = steps >= 2 ? opt.confidence.variable_work : opt.confidence.variable_work_one_step;
  f.cause = "variable_work";
  f.slowdown = MedianNs(spikes);
  f.message = fmt::format(
      "compute per step differs between ranks by {:.1f}% (robust spread over {} ranks, median of "
      "{} "
      "profiled steps; fixed-shape training varies 1-3%), the slowest rank {:+.0f}% over the "
      "median, "
      "and {} different ranks are slowest in {} steps: the work per rank varies from step to step, "
      "no GPU is slow",
      100 * cv, R, steps, 100 * *f.slowdown, distinct.size(), steps);
  if (by_role) {
    f.message +=
        " (each rank against its role peers: every pipeline stage's own typical compute taken out)";
  }
  f.next_steps.push_back(
      "balance the work per rank: bucket or pack sequences by length, pad to fixed shapes, or use "
      "a "
      "token-count-balanced sampler; log tokens per rank per step to confirm");
  return f;
}

// CPU-only jobs, >= 3 ranks: the rank that idles far more than any other
// (see the header, "idle outlier"); its index, share and the next share.
std::optional<std::tuple<size_t, double, double>> FindIdleOutlier(const TraceMetrics& m,
                                                                  const TraceDetectorOptions& opt) {
  const size_t R = m.ranks.size();
  if (!m.cpu_only || R < 3) return std::nullopt;
  std::vector<double> share(R, 0);
  for (size_t ri = 0; ri < R; ++ri) {
    const RankTraceStats& st = m.ranks[ri];
    if (st.window_ns <= 0) return std::nullopt;
    share[ri] = static_cast<double>(st.idle_ns) / static_cast<double>(st.window_ns);
  }
  size_t best = 0;
  for (size_t ri = 1; ri < R; ++ri) {
    if (share[ri] > share[best]) best = ri;
  }
  double next = 0;
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri != best) next = std::max(next, share[ri]);
  }
  if (share[best] < opt.idle_outlier_share || share[best] < opt.idle_outlier_over_next * next) {
    return std::nullopt;
  }
  return std::make_tuple(best, share[best], next);
}

bool Holds(const std::vector<size_t>& v, size_t ri) {
  return std::find(v.begin(), v.end(), ri) != v.end();
}

// The late-rank test on the rank with the most delay (see the header).
bool DelayStandsOut(const TraceMetrics& m, TraceSuspect& s, const TraceDetectorOptions& opt) {
  const size_t R = m.ranks.size();
  const std::vector<double>& delay = m.delay_ns;
  double total_delay = 0;
  size_t best = 0, second = R > 1 ? 1 : 0;
  for (size_t ri = 0; ri < R; ++ri) total_delay += delay[ri];
  for (size_t ri = 0; ri < R; ++ri) {
    if (delay[ri] > delay[best]) best = ri;
  }
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri != best && (second == best || delay[ri] > delay[second])) second = ri;
  }
  s.rank = best;
  s.delay_share = total_delay > 0 ? delay[best] / total_delay : 0;
  s.mean_delay_ns =
      m.last_count[best] > 0 ? delay[best] / static_cast<double>(m.last_count[best]) : 0;
  // Noise: the delays of the instances where another rank came last. With
  // jitter alone some rank is always last, by a margin of the same size as
  // everyone else's; a culprit's margin stands out from them.
  std::vector<double> noise;
  for (auto [ri, d] : m.instance_delays) {
    if (ri != best) noise.push_back(d);
  }
  bool stands_out =
      noise.size() < opt.min_instances || s.mean_delay_ns >= opt.late_over_noise * MedianNs(noise);
  // Last often enough, or rarely by a stall that holds nearly all delay
  // and a good share of the window.
  const bool rare = m.last_count[best] >= opt.rare_late_min_instances &&
                    s.delay_share >= opt.rare_late_delay_share &&
                    delay[best] >= opt.rare_late_window_share * static_cast<double>(m.window_ns);
  bool late = R >= 2 && (m.last_count[best] >= opt.min_instances || rare) &&
              s.delay_share >= opt.late_delay_share &&
              delay[best] >= opt.late_over_next * delay[second] &&
              s.mean_delay_ns >= static_cast<double>(opt.min_lateness_ns) && stands_out;
  const double min_cost = opt.min_cost_share * static_cast<double>(m.window_ns);
  return late && delay[best] >= min_cost && m.late_in_several_steps[best];
}

// Makes `ri` the late rank found other than by its delay.
void TakeLateRank(const TraceMetrics& m, size_t ri, TraceSuspect& s) {
  double total_delay = 0;
  for (double d : m.delay_ns) total_delay += d;
  s.rank = ri;
  s.late = s.from_group = true;
  s.delay_share = total_delay > 0 ? m.delay_ns[ri] / total_delay : 0;
  s.mean_delay_ns =
      m.last_count[ri] > 0 ? m.delay_ns[ri] / static_cast<double>(m.last_count[ri]) : 0;
}

// A compute block that costs >= the floor becomes the group; `must_hold`
// (a late rank) has to be one of its ranks.
bool TakeComputeBlock(const TraceMetrics& m, std::optional<size_t> must_hold, TraceSuspect& s,
                      const TraceDetectorOptions& opt) {
  double block_excess = 0;
  std::vector<size_t> block = FindComputeBlock(m.compute, &block_excess, opt);
  if (block.empty() || (must_hold && !Holds(block, *must_hold))) return false;
  if (GroupDelay(block, m) < opt.min_cost_share * static_cast<double>(m.window_ns)) return false;
  s.group = std::move(block);
  s.group_excess = block_excess;
  s.basis = GroupBasis::kCompute;
  return true;
}

// Ranks late together by their mean lateness; a group of one is a late
// rank whose margin over the second-to-last arrival is too small to stand
// out per instance but whose mean lateness does over all of them.
void TakeLateGroup(const TraceMetrics& m, TraceSuspect& s, const TraceDetectorOptions& opt) {
  const double min_cost = opt.min_cost_share * static_cast<double>(m.window_ns);
  std::vector<size_t> group = FindLateGroup(m.lateness_ns, &s.group_excess, opt);
  if (group.size() == 1 &&
      (m.delay_ns[group.front()] < min_cost || !m.late_in_several_steps[group.front()])) {
    group.clear();
  }
  if (group.size() > 1 && GroupDelay(group, m) < min_cost) group.clear();
  if (group.size() == 1) {
    TakeLateRank(m, group.front(), s);
    return;
  }
  s.group = std::move(group);
  s.basis = GroupBasis::kLateness;
}

// The healthy peer (least |median lateness| other than the suspect) and
// the victim (most time in collectives).
void FindPeerAndVictim(const TraceMetrics& m, TraceSuspect& s) {
  const size_t R = m.ranks.size();
  s.peer = s.rank == 0 ? 1 : 0;
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri == s.rank || !m.ranks[ri].median_lateness_ns) continue;
    if (!m.ranks[s.peer].median_lateness_ns ||
        std::abs(*m.ranks[ri].median_lateness_ns) < std::abs(*m.ranks[s.peer].median_lateness_ns)) {
      s.peer = ri;
    }
  }
  s.victim = 0;
  for (size_t ri = 1; ri < R; ++ri) {
    if (m.ranks[ri].collective_ns > m.ranks[s.victim].collective_ns) s.victim = ri;
  }
}

}  // namespace

std::optional<std::pair<size_t, double>> FindOpOutlier(const TraceMetrics& m,
                                                       const TraceDetectorOptions& opt,
                                                       std::optional<size_t> exclude) {
  const size_t R = m.op_ratio.size();
  if (R < 2 || R != m.ranks.size()) return std::nullopt;
  std::optional<size_t> best;
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri == exclude || m.op_ratio[ri].weight_ns <= 0) continue;
    if (!best || m.op_ratio[ri].ratio > m.op_ratio[*best].ratio) best = ri;
  }
  if (!best) return std::nullopt;
  double next = 0;  // the largest other log ratio, when above 0
  for (size_t ri = 0; ri < R; ++ri) {
    if (ri != exclude && ri != *best && m.op_ratio[ri].weight_ns > 0)
      next = std::max(next, std::log(m.op_ratio[ri].ratio));
  }
  const KernelComparison& k = m.op_ratio[*best];
  const std::optional<DurationNs>& late = m.ranks[*best].median_lateness_ns;
  if (k.ratio < opt.op_outlier_ratio || std::log(k.ratio) < opt.op_outlier_over_next * next ||
      !late || *late <= 0) {
    return std::nullopt;
  }
  return std::make_pair(*best, k.ratio);
}

TraceSuspect FindTraceSuspect(const TraceMetrics& m, const TraceDetectorOptions& opt) {
  TraceSuspect s;
  const size_t R = m.ranks.size();
  if (m.instances == 0 || R < 2) return s;
  // The culprit: the rank whose late arrivals hold the others up, by its
  // delay (a stalled rank may be last at only one collective per step: the
  // later ones start in sync, so delay is weighed, not the share of
  // instances).
  s.late = DelayStandsOut(m, s, opt);
  const std::optional<std::pair<size_t, double>> oo = FindOpOutlier(m, opt);
  // A rank stalled outside its ops on a shared host hardly arrives late
  // (the others take its core meanwhile), but it idles.
  if (!s.late) {
    if (auto io = FindIdleOutlier(m, opt)) {
      TakeLateRank(m, std::get<0>(*io), s);
      s.idle_share = std::make_pair(std::get<1>(*io), std::get<2>(*io));
    }
  }
  // A host starving all its GPUs is the culprit even when one of its ranks
  // is the late one.
  std::vector<size_t> idle_host = FindIdleHost(m, opt);
  if (s.late && Holds(idle_host, s.rank)) s.late = false;
  // A late rank, while every rank's compute per step spreads like variable
  // work, is the top of that spread, not a culprit — unless its GPU idles
  // for most of its lateness: more work does not idle a GPU, a stalled host
  // (data loader) does.
  if (s.late) {
    std::vector<double> idle_others;
    for (size_t ri = 0; ri < R; ++ri) {
      if (ri != s.rank) idle_others.push_back(static_cast<double>(m.ranks[ri].idle_ns));
    }
    double extra_idle =
        static_cast<double>(m.ranks[s.rank].idle_ns) - Median(idle_others).value_or(0);
    // Nor when the same ops run slower on it than on its peers (CPU-only
    // jobs): varying work changes the ops' shapes, not their speed.
    bool slow_ops = oo && oo->first == s.rank;
    if (extra_idle < opt.host_stall_share * m.delay_ns[s.rank] && !slow_ops) {
      s.variable_work = VariableWorkFinding(m.compute, m.cpu_only, opt, m.role);
      if (s.variable_work) s.late = false;
    }
  }
  // A late rank inside a block of ranks that all compute more is one of
  // that block (a pipeline stage), not a lone culprit.
  bool by_compute = false;
  if (s.late && !s.variable_work) {
    by_compute = TakeComputeBlock(m, s.rank, s, opt);
    if (by_compute) s.late = false;
  }
  // No one rank holds the job up by its delay: are ranks late together
  // (one host's, a block of ranks)?
  if (!s.late && !s.variable_work && s.group.empty() && R >= 3) TakeLateGroup(m, s, opt);
  if (!idle_host.empty() && (!s.late || Holds(idle_host, s.rank)) && s.group != idle_host &&
      !s.variable_work) {
    s.group = idle_host;  // the late-together message when they are also that
    s.late = s.from_group = by_compute = false;
    s.basis = GroupBasis::kIdle;
  }
  // Neither: one rank whose compute per step stands out in every step, or
  // a block of ranks that computes more.
  if (!s.late && s.group.empty() && !s.variable_work) {
    by_compute = TakeComputeBlock(m, std::nullopt, s, opt);
    if (!by_compute) {
      if (auto co = FindComputeOutlier(m.compute, m.cpu_only, opt)) {
        TakeLateRank(m, co->first, s);
        s.compute_excess = co->second;
      } else if (oo) {
        TakeLateRank(m, oo->first, s);
        s.op_ratio = oo->second;
      }
    }
    if (!s.late && s.group.empty())
      s.variable_work = VariableWorkFinding(m.compute, m.cpu_only, opt, m.role);
  }
  FindPeerAndVictim(m, s);
  return s;
}

double GroupDelay(const std::vector<size_t>& group, const TraceMetrics& m) {
  std::vector<char> in(m.ranks.size(), 0);
  for (size_t gi : group) in[gi] = 1;
  double delay = 0;
  for (const auto& inst : m.arrivals_ns) {
    double g = -1e300, o = -1e300;
    for (auto [ri, a] : inst) {
      double& mx = in[ri] ? g : o;
      mx = std::max(mx, a);
    }
    if (g > -1e300 && o > -1e300) delay += std::max(0.0, g - o);
  }
  return delay;
}

}  // namespace laggard
