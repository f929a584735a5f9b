// The metric steps of the trace detector (trace_detector.h): MeasureTraces
// and CompareSuspect.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>

#include "analysis/traces/collective_match.h"
#include "analysis/traces/trace_detector.h"
#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

double MedianNs(std::vector<double> v) { return Median(std::move(v)).value_or(0); }

// Union of [start, end) intervals (sorted by start) -> total covered time,
// idle gaps between them within the window.
struct Coverage {
  DurationNs busy = 0;
  size_t gaps = 0;
  DurationNs largest_gap = 0;
  DurationNs gap_total = 0;
};

template <typename Pred>
Coverage Cover(const std::vector<TraceOp>& ops, DurationNs min_gap_ns, Pred keep) {
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
      if (gap >= min_gap_ns) {
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

// Compute time (union of non-communication ops) per profiled step.
std::vector<double> ComputePerStep(const RankTrace& t, DurationNs min_gap_ns) {
  std::vector<double> out;
  for (const TraceStep& s : t.steps) {
    std::vector<TraceOp> in;
    auto it = std::lower_bound(t.ops.begin(), t.ops.end(), s.start_ns,
                               [](const TraceOp& op, TimeNs ts) { return op.start_ns < ts; });
    for (; it != t.ops.end() && it->start_ns < s.end_ns; ++it) {
      if (it->cls != OpClass::kCommunication) in.push_back(*it);
    }
    out.push_back(
        static_cast<double>(Cover(in, min_gap_ns, [](const TraceOp&) { return true; }).busy));
  }
  return out;
}

StepCompute ComputeMatrix(const std::vector<const RankTrace*>& traces, DurationNs min_gap_ns) {
  StepCompute m;
  m.per.resize(traces.size());
  size_t steps = SIZE_MAX;
  for (size_t ri = 0; ri < traces.size(); ++ri) {
    m.per[ri] = ComputePerStep(*traces[ri], min_gap_ns);
    steps = std::min(steps, m.per[ri].size());
  }
  m.steps = steps == SIZE_MAX ? 0 : steps;
  return m;
}

TraceBusyStats BusyStats(const Run& run, const RankTrace& t, DurationNs min_gap_ns) {
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
    Coverage all = Cover(t.ops, min_gap_ns, [](const TraceOp&) { return true; });
    Coverage compute = Cover(t.ops, min_gap_ns,
                             [](const TraceOp& op) { return op.cls != OpClass::kCommunication; });
    Coverage comm = Cover(t.ops, min_gap_ns,
                          [](const TraceOp& op) { return op.cls == OpClass::kCommunication; });
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

// Traces of one job: the world size with the most ranked traces (traces
// without a world size join any job), then one trace per rank, the first
// in file order.
std::vector<const RankTrace*> JobTraces(const Run& run, std::optional<int32_t>& world) {
  std::map<int32_t, size_t> per_world;
  for (const RankTrace& t : run.traces) {
    if (t.rank && t.world_size) ++per_world[*t.world_size];
  }
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
  std::vector<const RankTrace*> traces;
  for (auto& [r, t] : by_rank) traces.push_back(t);
  return traces;
}

// Clock offsets from collective ends: per rank, the median over instances
// of (its end - the instance's median end); 0 for a rank in none.
std::vector<DurationNs> ClockOffsets(const std::vector<std::vector<Arrival>>& matched,
                                     TraceMetrics& m) {
  const size_t R = m.ranks.size();
  std::vector<std::vector<double>> end_dev(R);
  for (const auto& inst : matched) {
    std::vector<double> ends;
    for (const Arrival& a : inst) ends.push_back(static_cast<double>(a.end));
    double med = MedianNs(ends);
    for (const Arrival& a : inst) end_dev[a.rank_index].push_back(static_cast<double>(a.end) - med);
  }
  std::vector<DurationNs> offset(R, 0);
  for (size_t ri = 0; ri < R; ++ri) {
    if (end_dev[ri].empty()) continue;
    offset[ri] = static_cast<DurationNs>(std::llround(MedianNs(end_dev[ri])));
    m.ranks[ri].clock_offset_ns = offset[ri];
  }
  return offset;
}

// A culprit is late in more than one profiled step (see TraceMetrics).
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

// Per instance: lateness, wait, transfer, last arrival, delay; then each
// rank's summary of them.
void MeasureArrivals(const std::vector<std::vector<Arrival>>& matched,
                     const std::vector<DurationNs>& offset, TraceMetrics& m) {
  const size_t R = m.ranks.size();
  std::vector<std::vector<double>> wait(R);
  std::vector<size_t> seen(R, 0);
  std::vector<double> transfers;
  std::vector<std::vector<TimeNs>> last_starts(
      R);  // own-clock starts of the calls a rank was last at
  m.lateness_ns.assign(R, {});
  m.last_count.assign(R, 0);
  m.delay_ns.assign(R, 0);
  for (size_t ri = 0; ri < R; ++ri)
    m.ranks[ri].call_lateness_ns.resize(m.traces[ri]->collectives.size());
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
      m.lateness_ns[ri].push_back(arr[i] - med_arrival);
      m.ranks[ri].call_lateness_ns[inst[i].call] =
          static_cast<DurationNs>(std::llround(arr[i] - med_arrival));
      wait[ri].push_back(last - arr[i]);
      ++seen[ri];
    }
    std::vector<std::pair<size_t, double>>& ia = m.arrivals_ns.emplace_back();
    for (size_t i = 0; i < inst.size(); ++i) ia.push_back({inst[i].rank_index, arr[i]});
    ++m.last_count[inst[last_i].rank_index];
    last_starts[inst[last_i].rank_index].push_back(inst[last_i].start);
    if (arr.size() >= 2) {
      std::vector<double> sorted = arr;
      std::sort(sorted.begin(), sorted.end());
      m.delay_ns[inst[last_i].rank_index] += sorted.back() - sorted[sorted.size() - 2];
      m.instance_delays.push_back(
          {inst[last_i].rank_index, sorted.back() - sorted[sorted.size() - 2]});
    }
  }
  m.median_transfer_ns = static_cast<DurationNs>(MedianNs(transfers));
  m.late_in_several_steps.assign(R, 0);
  for (size_t ri = 0; ri < R; ++ri) {
    RankTraceStats& st = m.ranks[ri];
    st.delay_caused_ns = static_cast<DurationNs>(m.delay_ns[ri]);
    m.late_in_several_steps[ri] = LateInSeveralSteps(*m.traces[ri], last_starts[ri]);
    st.instances = seen[ri];
    if (seen[ri] == 0) continue;
    st.share_last = static_cast<double>(m.last_count[ri]) / static_cast<double>(seen[ri]);
    st.median_lateness_ns = static_cast<DurationNs>(MedianNs(m.lateness_ns[ri]));
    st.median_wait_ns = static_cast<DurationNs>(MedianNs(wait[ri]));
  }
}

// Up to max_kernel_peers ranks to compare the suspect with: `peer` (the
// least late) first, then the ranks least late in absolute terms.
std::vector<const RankTrace*> HealthyPeers(const TraceMetrics& m, size_t suspect, size_t peer,
                                           const TraceDetectorOptions& opt) {
  const std::vector<RankTraceStats>& ranks = m.ranks;
  std::vector<size_t> order;
  for (size_t ri = 0; ri < m.traces.size(); ++ri) {
    if (ri != suspect && ri != peer) order.push_back(ri);
  }
  auto lateness = [&](size_t ri) {
    return ranks[ri].median_lateness_ns ? std::abs(*ranks[ri].median_lateness_ns) : INT64_MAX;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lateness(a) < lateness(b); });
  std::vector<const RankTrace*> out;
  if (peer != suspect) out.push_back(m.traces[peer]);
  for (size_t ri : order) {
    if (out.size() >= opt.max_kernel_peers) break;
    out.push_back(m.traces[ri]);
  }
  return out;
}

}  // namespace

TraceMetrics MeasureTraces(const Run& run, const TraceDetectorOptions& opt) {
  TraceMetrics m;
  m.names = &run.names;
  std::optional<int32_t> world;
  m.traces = JobTraces(run, world);
  for (const RankTrace& t : run.traces) {
    if (!t.rank) m.unranked.push_back(BusyStats(run, t, opt.min_gap_ns));
  }
  if (m.traces.empty()) return m;
  m.world_size = world;
  for (const RankTrace* t : m.traces) {
    RankTraceStats st;
    static_cast<TraceBusyStats&>(st) = BusyStats(run, *t, opt.min_gap_ns);
    st.rank = *t->rank;
    m.window_ns = std::max(m.window_ns, st.window_ns);
    m.ranks.push_back(std::move(st));
    m.device.push_back(t->device);
  }
  for (const RankTraceStats& st : m.ranks) {
    if (st.rank < 0 || static_cast<size_t>(st.rank) >= opt.role_of_rank.size()) {
      m.role.clear();
      break;
    }
    m.role.push_back(opt.role_of_rank[static_cast<size_t>(st.rank)]);
  }
  // Step length, from ProfilerStep ranges.
  std::vector<double> lens;
  for (const RankTrace* t : m.traces) {
    for (const TraceStep& s : t->steps) lens.push_back(static_cast<double>(s.end_ns - s.start_ns));
  }
  if (!lens.empty()) m.median_step_ns = static_cast<DurationNs>(MedianNs(lens));

  std::vector<std::vector<Arrival>> matched = MatchCollectives(m.traces);
  m.instances = matched.size();
  if (matched.empty()) return m;
  std::vector<DurationNs> offset = ClockOffsets(matched, m);
  MeasureArrivals(matched, offset, m);
  m.compute = ComputeMatrix(m.traces, opt.min_gap_ns);
  m.cpu_only = !m.traces.empty() && std::all_of(m.traces.begin(), m.traces.end(),
                                                [](const RankTrace* t) { return t->cpu_only; });
  if (m.cpu_only && m.traces.size() >= 2)
    m.op_ratio = CompareEachWithPeers(m.traces, opt.max_kernel_peers, opt.min_launches);
  return m;
}

SuspectComparison CompareSuspect(const TraceMetrics& m, const TraceSuspect& s,
                                 const TraceDetectorOptions& opt) {
  SuspectComparison c;
  const size_t R = m.traces.size();
  if (s.late) {
    const RankTrace& ct = *m.traces[s.rank];
    std::vector<const RankTrace*> peers = HealthyPeers(m, s.rank, s.peer, opt);
    c.peers = peers.size();
    c.kernels = CompareKernels(ct, peers, opt.min_launches);
    c.host_gaps = CompareHostGaps(ct, peers);
    c.top_kernel = DescribeTopKernel(c.kernels, *m.names, m.ranks[s.rank].rank, peers.size());
  } else if (!s.group.empty()) {
    std::vector<char> in(R, 0);
    for (size_t gi : s.group) in[gi] = 1;
    c.group_peer = R;
    for (size_t ri = 0; ri < R; ++ri) {
      if (in[ri] || !m.ranks[ri].median_lateness_ns) continue;
      if (c.group_peer == R || std::abs(*m.ranks[ri].median_lateness_ns) <
                                   std::abs(*m.ranks[c.group_peer].median_lateness_ns)) {
        c.group_peer = ri;
      }
    }
    if (c.group_peer < R) {
      for (size_t gi : s.group) {
        c.group_kernel_ratios.push_back(
            CompareKernels(*m.traces[gi], {m.traces[c.group_peer]}, opt.min_launches).ratio);
      }
    }
  }
  return c;
}

}  // namespace laggard
