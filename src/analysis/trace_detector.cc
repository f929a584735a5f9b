#include "analysis/trace_detector.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

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
  if (by_rank.empty()) return out;
  out.world_size = world;
  std::vector<const RankTrace*> traces;
  for (auto& [r, t] : by_rank) traces.push_back(t);
  const size_t R = traces.size();

  // Per-rank busy / idle.
  for (const RankTrace* t : traces) {
    RankTraceStats st;
    st.rank = *t->rank;
    st.host = t->host;
    st.file = t->file;
    st.trace = static_cast<uint32_t>(t - run.traces.data());
    st.cpu_only = t->cpu_only;
    st.steps = t->steps.size();
    if (!t->ops.empty()) {
      TimeNs first = t->ops.front().start_ns, last = first;
      for (const TraceOp& op : t->ops) {
        last = std::max(last, op.start_ns + op.dur_ns);
        st.busy_by_class_ns[static_cast<size_t>(op.cls)] += op.dur_ns;
      }
      st.window_ns = last - first;
      Coverage all = Cover(t->ops, [](const TraceOp&) { return true; });
      Coverage compute = Cover(t->ops, [](const TraceOp& op) { return op.cls != OpClass::kCommunication; });
      st.busy_ns = all.busy;
      st.compute_busy_ns = compute.busy;
      st.idle_ns = st.window_ns - all.busy;
      st.gaps = all.gaps;
      st.largest_gap_ns = all.largest_gap;
    }
    st.collectives = t->collectives.size();
    for (const CollectiveCall& c : t->collectives) st.collective_ns += c.dur_ns;
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
    ++last_count[inst[last_i].rank_index];
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
  const RankTraceStats& cand = out.ranks[best];
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
    DurationNs window = 0;
    for (const RankTraceStats& st : out.ranks) window = std::max(window, st.window_ns);
    if (window > 0) out.throughput_lost = std::min(1.0, delay_by_rank[best] / static_cast<double>(window));
    const RankTrace& ct = *traces[best];
    Finding f;
    f.code = FindingCode::kTraceLateArrival;
    f.severity = Severity::kCritical;
    f.entity.rank = cand.rank;
    f.entity.host = cand.host;
    f.entity.gpu = ct.device;
    f.confidence = delay_share >= 0.8 ? 0.75 : 0.6;
    f.message = fmt::format(
        "rank {} arrives last at {} of {} collectives, {} after the next rank on average: it holds "
        "the job up by {} in total ({:.0f}% of all waiting); median wait {} vs {} on healthy rank {}",
        cand.rank, last_count[best], cand.instances, Ms(static_cast<DurationNs>(mean_delay)),
        Ms(static_cast<DurationNs>(delay_by_rank[best])), 100 * delay_share,
        Ms(cand.median_wait_ns.value_or(0)), Ms(out.ranks[peer].median_wait_ns.value_or(0)),
        out.ranks[peer].rank);
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
    if (weight_sum > 0 && kernel_ratio >= kKernelRatioThreshold) {
      Finding k;
      k.code = FindingCode::kTraceComputeSlow;
      k.severity = Severity::kCritical;
      k.entity = out.findings.back().entity;
      k.slowdown = kernel_ratio - 1;
      k.confidence = 0.8;
      k.message = fmt::format(
          "rank {}'s compute kernels run {:.2f}x as long as healthy rank {}'s (time-weighted, {} "
          "kernels compared by name{}); top: {}",
          cand.rank, kernel_ratio, ps.rank, kc.keys, kc.keys_with_shape > 0 ? " and launch shape" : "",
          DescribeTopKernel(kc, run.names, cand.rank, peers.size()));
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
    }
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
