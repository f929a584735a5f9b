// The trace detector's steps on their own: FindTraceSuspect and
// DecideTraces on arrival metrics made by hand (a clear late rank, a clean
// control, the lateness edge), MeasureTraces and MatchCollectives on tiny
// traces.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "analysis/traces/collective_match.h"
#include "analysis/traces/trace_detector.h"
#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

// Arrival metrics of `arrival_ns[instance][rank]` (aligned clocks), as
// MeasureTraces would summarise them; every rank in every instance, idle
// GPUs nowhere, a profile of `window_ns`.
TraceMetrics Arrivals(const std::vector<std::vector<double>>& arrival_ns, DurationNs window_ns) {
  TraceMetrics m;
  const size_t R = arrival_ns.front().size();
  m.ranks.resize(R);
  m.device.assign(R, std::nullopt);
  m.lateness_ns.assign(R, {});
  m.last_count.assign(R, 0);
  m.delay_ns.assign(R, 0);
  m.late_in_several_steps.assign(R, 1);
  m.window_ns = window_ns;
  m.instances = arrival_ns.size();
  for (size_t ri = 0; ri < R; ++ri) {
    m.ranks[ri].rank = static_cast<int32_t>(ri);
    m.ranks[ri].file = static_cast<uint32_t>(ri);
    m.ranks[ri].window_ns = window_ns;
    m.ranks[ri].instances = arrival_ns.size();
  }
  std::vector<std::vector<double>> wait(R);
  for (const std::vector<double>& arr : arrival_ns) {
    double median = *Median(arr);
    size_t last = static_cast<size_t>(std::max_element(arr.begin(), arr.end()) - arr.begin());
    std::vector<std::pair<size_t, double>>& ia = m.arrivals_ns.emplace_back();
    for (size_t ri = 0; ri < R; ++ri) {
      m.lateness_ns[ri].push_back(arr[ri] - median);
      wait[ri].push_back(arr[last] - arr[ri]);
      ia.push_back({ri, arr[ri]});
    }
    std::vector<double> sorted = arr;
    std::sort(sorted.begin(), sorted.end());
    double delay = sorted.back() - sorted[sorted.size() - 2];
    ++m.last_count[last];
    m.delay_ns[last] += delay;
    m.instance_delays.push_back({last, delay});
  }
  for (size_t ri = 0; ri < R; ++ri) {
    m.ranks[ri].median_lateness_ns = static_cast<DurationNs>(*Median(m.lateness_ns[ri]));
    m.ranks[ri].median_wait_ns = static_cast<DurationNs>(*Median(wait[ri]));
    m.ranks[ri].delay_caused_ns = static_cast<DurationNs>(m.delay_ns[ri]);
    m.ranks[ri].share_last =
        static_cast<double>(m.last_count[ri]) / static_cast<double>(arrival_ns.size());
  }
  return m;
}

// 4 ranks, 10 instances; rank `late` arrives `late_ns` after the last of
// the others, which jitter by up to 20 us.
std::vector<std::vector<double>> OneLate(size_t late, double late_ns) {
  std::vector<std::vector<double>> a;
  for (int i = 0; i < 10; ++i) {
    std::vector<double> arr;
    for (size_t ri = 0; ri < 4; ++ri)
      arr.push_back(1e7 * i + 10'000.0 * static_cast<double>((ri + i) % 3));
    arr[late] = 0;
    arr[late] = *std::max_element(arr.begin(), arr.end()) + late_ns;
    a.push_back(arr);
  }
  return a;
}

TEST(TraceSuspectTest, TheRankHoldingEveryInstanceUpIsLate) {
  TraceMetrics m = Arrivals(OneLate(2, 1'000'000), 100'000'000);
  TraceSuspect s = FindTraceSuspect(m, TraceDetectorOptions());
  EXPECT_TRUE(s.late);
  EXPECT_EQ(s.rank, 2u);
  EXPECT_FALSE(s.from_group);
  EXPECT_DOUBLE_EQ(s.delay_share, 1.0);
  EXPECT_DOUBLE_EQ(s.mean_delay_ns, 1'000'000);
  EXPECT_TRUE(s.group.empty());
  EXPECT_NE(s.peer, 2u);
}

TEST(TraceSuspectTest, EveryRankLastInTurnIsNoOne) {
  std::vector<std::vector<double>> a;
  for (int i = 0; i < 12; ++i) {
    std::vector<double> arr(4, 1e7 * i);
    arr[static_cast<size_t>(i % 4)] += 20'000;
    a.push_back(arr);
  }
  TraceSuspect s = FindTraceSuspect(Arrivals(a, 100'000'000), TraceDetectorOptions());
  EXPECT_FALSE(s.late);
  EXPECT_TRUE(s.group.empty());
  EXPECT_FALSE(s.variable_work);
}

TEST(TraceSuspectTest, TheMeanDelayThresholdIsInclusive) {
  TraceDetectorOptions opt;
  // The others arrive together, so the delay is late_ns itself.
  auto exact = [](double late_ns) {
    std::vector<std::vector<double>> a;
    for (int i = 0; i < 10; ++i) {
      std::vector<double> arr(4, 1e7 * i);
      arr[1] += late_ns;
      a.push_back(arr);
    }
    return a;
  };
  double at = static_cast<double>(opt.min_lateness_ns);
  EXPECT_TRUE(FindTraceSuspect(Arrivals(exact(at), 50'000'000), opt).late);
  EXPECT_FALSE(FindTraceSuspect(Arrivals(exact(at - 1), 50'000'000), opt).late);
  // The same delay costing < min_cost_share of a longer profile is not late.
  EXPECT_FALSE(FindTraceSuspect(Arrivals(exact(at), 1'000'000'000'000), opt).late);
}

// 64 ranks over 3 profiled steps: rank 20 arrives 2 ms late at each of 10
// collectives and computes 20% more; every other rank computes 100 ms
// within +-0.2%, and its neighbour rank 19 happens to be the highest of
// them (+0.3%). `block`: ranks 16-23 all compute 10% more instead.
TraceMetrics PowerCappedRank20(bool block) {
  const size_t R = 64;
  std::vector<std::vector<double>> a;
  for (int i = 0; i < 10; ++i) {
    std::vector<double> arr;
    for (size_t ri = 0; ri < R; ++ri)
      arr.push_back(1e7 * i + 1'000.0 * static_cast<double>((ri * 7 + i) % 5));
    arr[20] += 2'000'000;
    a.push_back(arr);
  }
  TraceMetrics m = Arrivals(a, 300'000'000);
  m.compute.steps = 3;
  m.compute.per.assign(R, {});
  for (size_t ri = 0; ri < R; ++ri) {
    for (size_t st = 0; st < 3; ++st) {
      double f = 1 + 0.001 * static_cast<double>((ri * 3 + st) % 5) - 0.002;
      if (ri == 19) f = 1.003;
      if (block && ri >= 16 && ri < 24) f = 1.10 + 0.001 * static_cast<double>(st);
      if (ri == 20) f = block ? 1.10 + 0.001 * static_cast<double>(st) : 1.20;
      m.compute.per[ri].push_back(1e8 * f);
    }
  }
  return m;
}

// The high part of a compute block has >= 2 ranks, so without the
// half-excess floor one slow rank and whichever healthy rank computes most
// form a "block" when that rank is its neighbour, and the healthy rank is
// named with it.
TEST(TraceSuspectTest, AHealthyNeighbourOfOneSlowRankIsNotPulledIntoABlock) {
  TraceSuspect s = FindTraceSuspect(PowerCappedRank20(false), TraceDetectorOptions());
  EXPECT_TRUE(s.late);
  EXPECT_EQ(s.rank, 20u);
  EXPECT_TRUE(s.group.empty()) << s.group.size() << " ranks, from " << s.group.front();
}

TEST(TraceSuspectTest, ABlockOfRanksThatAllComputeMoreStaysTheGroup) {
  TraceSuspect s = FindTraceSuspect(PowerCappedRank20(true), TraceDetectorOptions());
  EXPECT_FALSE(s.late);
  ASSERT_EQ(s.group.size(), 8u);
  EXPECT_EQ(s.group.front(), 16u);
  EXPECT_EQ(s.group.back(), 23u);
  EXPECT_EQ(s.basis, GroupBasis::kCompute);
}

TEST(TraceDecisionTest, SlowKernelsOfTheLateRankAreComputeSlow) {
  TraceMetrics m = Arrivals(OneLate(2, 1'000'000), 100'000'000);
  TraceDetectorOptions opt;
  TraceSuspect s = FindTraceSuspect(m, opt);
  SuspectComparison c;
  c.peers = 3;
  c.kernels.ratio = 1.3;
  c.kernels.weight_ns = 5e6;
  c.kernels.keys = 2;
  c.top_kernel = "`gemm` 1.30x slower";
  TraceAnalysis a = DecideTraces(m, s, c, opt);
  EXPECT_EQ(a.culprit, 2);
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kTraceLateArrival);
  EXPECT_EQ(a.findings[0].entity.rank, 2);
  EXPECT_EQ(a.findings[1].code, FindingCode::kTraceComputeSlow);
  EXPECT_NEAR(*a.findings[1].slowdown, 0.3, 1e-12);
  EXPECT_NE(a.findings[1].message.find("top: `gemm` 1.30x slower"), std::string::npos);
  EXPECT_NEAR(*a.throughput_lost, 10 * 1e6 / 1e8, 1e-12);
  // At the healthy speed, with idle time of an empty launch queue covering
  // over half its lateness: its host.
  c.kernels.ratio = 1.0;
  c.host_gaps.known = true;
  c.host_gaps.unlaunched_ns = 6'000'000;
  c.host_gaps.peers = 3;
  a = DecideTraces(m, s, c, opt);
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[1].code, FindingCode::kTraceHostStall);
  // Neither: a delay under unexplained_min_cost_share of the profile is not
  // blamed.
  c.host_gaps.unlaunched_ns = 0;
  a = DecideTraces(m, s, c, opt);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].severity, Severity::kCritical);
  EXPECT_EQ(a.culprit, 2);
  m.window_ns = 1'000'000'000;
  a = DecideTraces(m, s, c, opt);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].severity, Severity::kInfo);
  EXPECT_FALSE(a.culprit);
  EXPECT_FALSE(a.throughput_lost);
}

TEST(TraceDecisionTest, NoOneLateOnAQuietJobGivesNoFinding) {
  std::vector<std::vector<double>> a;
  for (int i = 0; i < 12; ++i) {
    std::vector<double> arr(4, 1e7 * i);
    arr[static_cast<size_t>(i % 4)] += 20'000;
    a.push_back(arr);
  }
  TraceMetrics m = Arrivals(a, 100'000'000);
  TraceDetectorOptions opt;
  TraceSuspect s = FindTraceSuspect(m, opt);
  TraceAnalysis out = DecideTraces(m, s, CompareSuspect(m, s, opt), opt);
  EXPECT_TRUE(out.findings.empty());
  EXPECT_FALSE(out.culprit);
}

// One op and one collective call: compute [t, t + compute), then the call
// until `end`.
void Iteration(RankTrace& t, TimeNs start, DurationNs compute, TimeNs end, int64_t seq) {
  t.ops.push_back(TraceOp{start, compute, 1, 7, OpClass::kGemm, 0});
  t.ops.push_back(
      TraceOp{start + compute, end - start - compute, 2, 20, OpClass::kCommunication, 0});
  CollectiveCall c;
  c.start_ns = start + compute;
  c.dur_ns = end - c.start_ns;
  c.collective = 3;
  c.group = 4;
  c.seq = seq;
  t.collectives.push_back(c);
}

TEST(TraceMetricsTest, ALateRankMeasuresItsLatenessDelayAndTransfer) {
  laggard::Run run;
  for (int32_t r = 0; r < 2; ++r) {
    RankTrace t;
    t.rank = r;
    t.file = static_cast<uint32_t>(r);
    for (int64_t i = 0; i < 3; ++i) {
      // Rank 1 computes 2 ms longer; the collective ends 1 ms after it arrives.
      TimeNs start = i * 10'000'000;
      Iteration(t, start, 4'000'000 + r * 2'000'000, start + 7'000'000, i);
    }
    run.traces.push_back(t);
  }
  TraceDetectorOptions opt;
  TraceMetrics m = MeasureTraces(run, opt);
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.instances, 3u);
  EXPECT_EQ(m.ranks[0].clock_offset_ns, 0);
  EXPECT_EQ(m.last_count[1], 3u);
  EXPECT_EQ(m.last_count[0], 0u);
  EXPECT_DOUBLE_EQ(m.delay_ns[1], 3 * 2e6);
  EXPECT_EQ(m.lateness_ns[1], std::vector<double>(3, 1e6));
  EXPECT_EQ(m.ranks[1].median_lateness_ns, 1'000'000);
  EXPECT_EQ(m.ranks[0].median_wait_ns, 2'000'000);
  EXPECT_EQ(m.median_transfer_ns, 1'000'000);
  EXPECT_EQ(m.ranks[1].call_lateness_ns, std::vector<std::optional<DurationNs>>(3, 1'000'000));
  // Busy and idle: 7 ms of ops every 10 ms over a 27 ms window.
  EXPECT_EQ(m.window_ns, 27'000'000);
  EXPECT_EQ(m.ranks[0].busy_ns, 21'000'000);
  EXPECT_EQ(m.ranks[0].idle_ns, 6'000'000);
  EXPECT_EQ(m.ranks[0].gaps, 2u);
  EXPECT_EQ(m.ranks[1].compute_busy_ns, 18'000'000);
  // No profiled steps: nothing per step.
  EXPECT_EQ(m.compute.steps, 0u);
}

TEST(CollectiveMatchTest, CallsMatchBySeqElseByOrderAndAmbiguousKeysAreDropped) {
  RankTrace a, b;
  auto call = [](RankTrace& t, TimeNs start, std::optional<int64_t> seq, uint32_t group) {
    CollectiveCall c;
    c.start_ns = start;
    c.dur_ns = 1000;
    c.collective = 1;
    c.group = group;
    c.seq = seq;
    c.nelems = 64;
    t.collectives.push_back(c);
  };
  call(a, 0, 0, 7);
  call(b, 5, 0, 7);    // seq 0 of group 7 on both ranks
  call(a, 100, 1, 7);  // seq 1 on rank a only
  call(a, 200, std::nullopt, 8);
  call(b, 205, std::nullopt, 8);  // the first unsequenced call of group 8 on each
  call(b, 300, 2, 7);
  call(b, 310, 2, 7);  // seq 2 twice on rank b: ambiguous
  call(a, 305, 2, 7);
  std::vector<std::vector<Arrival>> matched = MatchCollectives({&a, &b});
  ASSERT_EQ(matched.size(), 2u);
  for (const std::vector<Arrival>& inst : matched) {
    ASSERT_EQ(inst.size(), 2u);
    EXPECT_EQ(inst[0].rank_index, 0u);
    EXPECT_EQ(inst[1].rank_index, 1u);
  }
  EXPECT_EQ(matched[0][1].start, 5);
  EXPECT_EQ(matched[1][0].start, 200);
  EXPECT_EQ(matched[1][0].call, 2u);
  EXPECT_EQ(matched[1][1].call, 1u);
}

}  // namespace
}  // namespace laggard
