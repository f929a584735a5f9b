// The metric half of the step-time detector (step_time_detector.h):
// MeasureSteps, MeasureOnsets and ThroughputLost.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <map>

#include "analysis/steps/step_time_detector.h"
#include "base/parallel.h"
#include "base/stats/change_point.h"

namespace laggard {
namespace {

constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();

// Below this many step records per thread a pass stays on one thread
// (base/parallel.h): 2^18 cells take ~1 ms per pass.
constexpr size_t kMinCellsPerThread = size_t{1} << 18;

// The threads the passes over `m`'s R x C matrix get.
unsigned PassThreads(size_t cells, const StepDetectorOptions& opt) {
  return ParallelThreads(opt.threads, cells, kMinCellsPerThread);
}

// The analysed window of every series, as a rank x step matrix of seconds,
// stored twice: row-major for per-rank passes and column-major for per-step
// passes (a column walk of the row-major copy touches one cache line and one
// page per rank: at 4,096 ranks that was most of the detector's time).
struct StepMatrix {
  std::vector<size_t> first_used;     // index of the first record after warm-up
  std::vector<int64_t> step_numbers;  // column -> step number
  ParallelBuffer<float> values;       // row-major, NaN where missing
  ParallelBuffer<float> by_step;      // the same, column-major
};

StepMatrix BuildMatrix(const std::vector<const StepSeries*>& series, size_t warmup,
                       const StepDetectorOptions& opt) {
  StepMatrix m;
  for (const StepSeries* s : series) {
    // Keep at least 3 steps: warm-up is skipped only when enough remain.
    size_t skip = s->steps.size() >= warmup + 3 ? warmup : 0;
    m.first_used.push_back(skip);
  }
  // The union of the series' step numbers (each ascending and unique after
  // Finalize). Usually every rank logged the same steps: one linear check
  // per series against the union so far; a series with new steps is merged
  // in. Past a few merges (ranks with disjoint steps) sorting everything
  // once is cheaper than merging again and again.
  constexpr size_t kMaxMerges = 16;
  size_t merges = 0;
  std::vector<int64_t> own, merged;
  auto step_of = [](const StepRecord& rec) { return rec.step; };
  for (size_t r = 0; r < series.size() && merges <= kMaxMerges; ++r) {
    const auto& steps = series[r]->steps;
    own.clear();
    for (size_t i = m.first_used[r]; i < steps.size(); ++i) own.push_back(step_of(steps[i]));
    if (std::adjacent_find(own.begin(), own.end(), std::greater_equal<int64_t>()) != own.end()) {
      merges = kMaxMerges + 1;  // not ascending (a Run not from Finalize): sort instead
      break;
    }
    if (std::includes(m.step_numbers.begin(), m.step_numbers.end(), own.begin(), own.end()))
      continue;
    merged.clear();
    std::set_union(m.step_numbers.begin(), m.step_numbers.end(), own.begin(), own.end(),
                   std::back_inserter(merged));
    m.step_numbers.swap(merged);
    ++merges;
  }
  if (merges > kMaxMerges) {
    m.step_numbers.clear();
    for (size_t r = 0; r < series.size(); ++r) {
      const auto& steps = series[r]->steps;
      for (size_t i = m.first_used[r]; i < steps.size(); ++i)
        m.step_numbers.push_back(steps[i].step);
    }
    std::sort(m.step_numbers.begin(), m.step_numbers.end());
    m.step_numbers.erase(std::unique(m.step_numbers.begin(), m.step_numbers.end()),
                         m.step_numbers.end());
  }
  const size_t cols = m.step_numbers.size();
  const size_t R = series.size(), C = cols;
  const unsigned threads = PassThreads(R * C, opt);
  m.values.resize(R * C);
  ParallelFor(R, threads, [&](size_t begin, size_t end, unsigned) {
    for (size_t r = begin; r < end; ++r) {
      const auto& steps = series[r]->steps;
      float* row = m.values.data() + r * cols;
      std::fill(row, row + cols, kMissing);
      size_t c = 0;
      for (size_t i = m.first_used[r]; i < steps.size(); ++i) {
        while (m.step_numbers[c] < steps[i].step) ++c;  // both ascending
        row[c] = static_cast<float>(ToSeconds(steps[i].duration_ns));
      }
    }
  });
  // Blocked transpose: both sides stay within a few cache lines per block;
  // each thread writes whole columns of blocks.
  constexpr size_t kBlock = 64;
  m.by_step.resize(R * C);
  const size_t col_blocks = (C + kBlock - 1) / kBlock;
  ParallelFor(col_blocks, threads, [&](size_t begin, size_t end, unsigned) {
    for (size_t c0 = begin * kBlock; c0 < std::min(C, end * kBlock); c0 += kBlock) {
      for (size_t r0 = 0; r0 < R; r0 += kBlock) {
        for (size_t r = r0; r < std::min(R, r0 + kBlock); ++r) {
          for (size_t c = c0; c < std::min(C, c0 + kBlock); ++c)
            m.by_step[c * R + r] = m.values[r * C + c];
        }
      }
    }
  });
  return m;
}

size_t Steps(const StepMetrics& m) { return m.step_numbers.size(); }

// The values of step column c, one per rank (NaN where missing).
std::span<const float> Column(const StepMetrics& m, size_t c) {
  return std::span<const float>(m.seconds_by_step).subspan(c * m.series.size(), m.series.size());
}

// Relative excess of rank r at column c over its group's median; nullopt
// when the rank has no value there or fewer than 2 peers reported.
std::optional<double> ExcessAt(const StepMetrics& m, size_t r, size_t c) {
  const size_t C = Steps(m);
  float v = m.seconds_by_rank[r * C + c];
  size_t gi = m.group_of[r] * C + c;
  if (std::isnan(v) || m.group_step_ranks[gi] < 2 || m.group_step_median_s[gi] <= 0)
    return std::nullopt;
  return v / m.group_step_median_s[gi] - 1;
}

// Peer groups: pipeline stages when every rank has one and every stage has
// at least min_stage_ranks ranks (ranks of one stage do the same work),
// else all ranks.
void GroupByStage(StepMetrics& m, const StepDetectorOptions& opt) {
  const size_t R = m.series.size();
  m.group_of.assign(R, 0);
  // A rank's stage: its own (a rank map), else the run layout's.
  auto stage_of = [&](const StepSeries* s) -> std::optional<int32_t> {
    if (s->info.pipeline_stage) return s->info.pipeline_stage;
    if (opt.layout && s->info.rank < opt.layout->world()) {
      return MegatronCoord(*opt.layout, s->info.rank).pp;
    }
    return std::nullopt;
  };
  std::vector<std::optional<int32_t>> stage(R);
  for (size_t r = 0; r < R; ++r) stage[r] = stage_of(m.series[r]);
  std::map<int32_t, size_t> stage_index;
  std::map<int32_t, size_t> stage_size;
  bool staged = std::all_of(stage.begin(), stage.end(),
                            [](const std::optional<int32_t>& s) { return s.has_value(); });
  for (size_t r = 0; r < R && staged; ++r) ++stage_size[*stage[r]];
  staged = staged && stage_size.size() > 1 &&
           std::all_of(stage_size.begin(), stage_size.end(),
                       [&](const auto& kv) { return kv.second >= opt.min_stage_ranks; });
  if (staged) {
    for (auto& [st, n] : stage_size) {
      stage_index.emplace(st, stage_index.size());
      m.group_stage.push_back(st);
    }
    for (size_t r = 0; r < R; ++r) m.group_of[r] = stage_index[*stage[r]];
  }
}

// Per step across all ranks: median, spread (p90 - p10, which unlike
// max - min does not widen with the rank count) and slowest rank; returns
// the spreads.
std::vector<double> MeasureStepColumns(StepMetrics& m, const StepDetectorOptions& opt) {
  const size_t R = m.series.size(), C = Steps(m);
  m.step_median_s.assign(C, 0);
  m.step_slowest.assign(C, -1);
  m.step_ranks.assign(C, 0);
  std::vector<double> spread_at(C, kMissing);  // NaN: the step has no spread
  ParallelFor(C, PassThreads(R * C, opt), [&](size_t begin, size_t end, unsigned) {
    std::vector<double> col;
    for (size_t c = begin; c < end; ++c) {
      col.clear();
      float best = -1;
      std::span<const float> column = Column(m, c);
      for (size_t r = 0; r < R; ++r) {
        float v = column[r];
        if (std::isnan(v)) continue;
        col.push_back(v);
        if (v > best) best = v, m.step_slowest[c] = static_cast<int32_t>(r);
      }
      m.step_ranks[c] = col.size();
      if (col.empty()) continue;
      m.step_median_s[c] = *Median(col);
      if (col.size() >= 2 && m.step_median_s[c] > 0) {
        static constexpr double kSpreadQ[] = {0.1, 0.9};
        double q[2];
        QuantilesInPlace(col, kSpreadQ, q);
        spread_at[c] = (q[1] - q[0]) / m.step_median_s[c];
      }
    }
  });
  std::vector<double> spread;
  for (double s : spread_at) {
    if (!std::isnan(s)) spread.push_back(s);
  }
  return spread;
}

// Per step, the median of each rank's group: what "its peers" did then
// (with one group, the step's median).
void MeasureGroupColumns(StepMetrics& m, const StepDetectorOptions& opt) {
  const size_t R = m.series.size(), C = Steps(m);
  const size_t groups = m.group_stage.empty() ? 1 : m.group_stage.size();
  if (groups == 1) {
    m.group_step_median_s = m.step_median_s;
    m.group_step_ranks = m.step_ranks;
    return;
  }
  m.group_step_median_s.assign(groups * C, 0);
  m.group_step_ranks.assign(groups * C, 0);
  ParallelFor(C, PassThreads(R * C, opt), [&](size_t begin, size_t end, unsigned) {
    std::vector<std::vector<double>> by_group(groups);
    for (size_t c = begin; c < end; ++c) {
      for (auto& g : by_group) g.clear();
      std::span<const float> column = Column(m, c);
      for (size_t r = 0; r < R; ++r) {
        float v = column[r];
        if (!std::isnan(v)) by_group[m.group_of[r]].push_back(v);
      }
      for (size_t g = 0; g < groups; ++g) {
        m.group_step_ranks[g * C + c] = by_group[g].size();
        if (!by_group[g].empty()) m.group_step_median_s[g * C + c] = *Median(by_group[g]);
      }
    }
  });
}

// Per-rank summaries, how far each rank's own median sits from the steps'
// medians (~0 on every rank when step times are synchronised end to end)
// and how often each rank was the slowest.
void MeasureRanks(StepMetrics& m, const StepDetectorOptions& opt) {
  const size_t R = m.series.size(), C = Steps(m);
  const unsigned threads = PassThreads(R * C, opt);
  m.ranks.resize(R);
  std::vector<double> worst_of(threads, -1);  // per worker: max is order-free
  ParallelFor(R, threads, [&](size_t begin, size_t end, unsigned worker) {
    std::vector<double> secs, offsets;
    for (size_t r = begin; r < end; ++r) {
      RankStepStats& st = m.ranks[r];
      st.info = m.series[r]->info;
      st.steps_total = m.series[r]->steps.size();
      secs.clear();
      for (size_t c = 0; c < C; ++c) {
        float v = m.seconds_by_rank[r * C + c];
        if (!std::isnan(v)) secs.push_back(v);
      }
      st.steps_used = secs.size();
      st.seconds = Summarize(secs);
      if (R < 2) continue;
      offsets.clear();
      for (size_t c = 0; c < C; ++c) {
        float v = m.seconds_by_rank[r * C + c];
        if (std::isnan(v) || m.step_ranks[c] < 2 || m.step_median_s[c] <= 0) continue;
        offsets.push_back(v / m.step_median_s[c] - 1);
      }
      if (auto med = Median(offsets))
        worst_of[worker] = std::max(worst_of[worker], std::fabs(*med));
    }
  });
  double worst = *std::max_element(worst_of.begin(), worst_of.end());
  if (R >= 2 && worst >= 0) m.job.sync_rank_offset = worst;
  size_t slowest_count_total = 0;
  std::vector<size_t> counts(R, 0);
  for (size_t c = 0; c < C; ++c) {
    if (m.step_ranks[c] >= 2 && m.step_slowest[c] >= 0) {
      ++counts[static_cast<size_t>(m.step_slowest[c])];
      ++slowest_count_total;
    }
  }
  for (size_t r = 0; r < R; ++r) {
    m.ranks[r].slowest_share = slowest_count_total ? static_cast<double>(counts[r]) /
                                                         static_cast<double>(slowest_count_total)
                                                   : 0;
  }
}

// What the job's pauses cost from the first one on: the seconds of its
// slow steps (>= need) over the median step `base`, over every step's
// seconds since then, the profiled steps (and their warm-up and export)
// left out (JobStepStats::spike_cost, spike_cost_from). None unless every
// slow step left is isolated (its analysed neighbours below `need`): a run
// of slow steps is a slowdown, not pauses.
void MeasureSpikeCost(StepMetrics& m, double need, double base, const StepDetectorOptions& opt) {
  const size_t C = Steps(m);
  const std::optional<StepSpan> prof = ProfilerSlowedSteps(m.job, opt);
  auto profiled = [&](size_t c) { return prof && prof->Holds(m.step_numbers[c]); };
  auto slow = [&](size_t c) {
    return m.step_ranks[c] > 0 && !profiled(c) && m.step_median_s[c] >= need;
  };
  double extra = 0, total = 0;
  std::optional<int64_t> first;
  for (size_t c = 0; c < C; ++c) {
    if (m.step_ranks[c] == 0 || profiled(c)) continue;
    if (slow(c)) {
      if ((c > 0 && slow(c - 1)) || (c + 1 < C && slow(c + 1))) return;
      if (!first) first = m.step_numbers[c];
      extra += m.step_median_s[c] - base;
    }
    if (first) total += m.step_median_s[c];
  }
  if (!first || total <= 0) return;
  m.job.spike_cost = extra / total;
  m.job.spike_cost_from = first;
}

// Job-level pace and spikes: a pause of one rank (GC, a checkpoint write)
// makes the whole job's step slower once, by less than an episode's 1.3x;
// needs enough steps for the spread of the per-step medians to mean
// something.
void MeasurePace(StepMetrics& m, std::vector<double> spread, const StepDetectorOptions& opt) {
  const size_t C = Steps(m);
  std::vector<double> medians_present;
  for (size_t c = 0; c < C; ++c) {
    if (m.step_ranks[c] > 0) medians_present.push_back(m.step_median_s[c]);
  }
  m.job.median_step_s = Median(medians_present);
  m.job.baseline_step_s = Quantile(medians_present, 0.25);
  m.job.sync_spread = Median(std::move(spread));
  // Noise of the per-step medians from consecutive differences: a level
  // shift (the article's 0.8 s -> 8 s) adds one large difference, which the
  // MAD ignores, where the MAD of the medians themselves would widen with it.
  if (m.job.baseline_step_s && *m.job.baseline_step_s > 0 && medians_present.size() >= 3) {
    std::vector<double> diffs;
    diffs.reserve(medians_present.size() - 1);
    for (size_t i = 1; i < medians_present.size(); ++i)
      diffs.push_back(medians_present[i] - medians_present[i - 1]);
    m.job.step_noise_sigma =
        kMadToSigma * Mad(diffs).value_or(0) / std::sqrt(2.0) / *m.job.baseline_step_s;
  }
  if (m.job.median_step_s && *m.job.median_step_s > 0 &&
      medians_present.size() >= opt.min_steps_for_spikes) {
    double base = *m.job.median_step_s;
    double sigma = kMadToSigma * Mad(medians_present).value_or(0);
    double need = base * (1 + std::max(opt.spike_min, opt.spike_sigmas * sigma / base));
    for (size_t c = 0; c < C; ++c) {
      if (m.step_ranks[c] == 0 || m.step_median_s[c] < need) continue;
      m.job.spike_steps.push_back(m.step_numbers[c]);
      m.job.spike_excess.push_back(m.step_median_s[c] / base - 1);
    }
    MeasureSpikeCost(m, need, base, opt);
  }
}

// Relative excess of every value over its step's median: the noise level,
// and the slow-step threshold from it.
void MeasureNoise(StepMetrics& m, const StepDetectorOptions& opt) {
  const size_t R = m.series.size(), C = Steps(m);
  std::vector<double> residuals;
  size_t stride = std::max<size_t>(1, (R * C) / 1'000'000);
  for (size_t i = 0; i < R * C; i += stride) {
    if (auto x = ExcessAt(m, i / C, i % C)) residuals.push_back(*x);
  }
  double noise = residuals.empty() ? 0 : kMadToSigma * *Mad(residuals);
  m.job.noise_sigma = residuals.empty() ? std::nullopt : std::optional<double>(noise);
  m.slow_step_threshold = std::max(opt.slow_step_excess, opt.slow_step_sigmas * noise);
}

// Each rank's total time over its steps against its peers' mean time on
// the same steps (RankStepStats::total_excess). Each time is first capped
// at its step's group median + max(5 sigma_noise, 4 flag_threshold) of it:
// one peer's long pause of its own would otherwise raise the peers' mean
// and hide a straggler. Not raised from below: a rank's own short steps
// are what make its total its peers' in lockstep.
void MeasureTotals(StepMetrics& m, size_t groups, const StepDetectorOptions& opt) {
  const size_t R = m.series.size(), C = Steps(m);
  const double band = std::max(5 * m.job.noise_sigma.value_or(0), 4 * opt.flag_threshold);
  auto clamped = [&](float v, size_t gc) {
    double med = m.group_step_median_s[gc];
    return std::min(static_cast<double>(v), med * (1 + band));
  };
  std::vector<double> sum(groups * C, 0);
  std::vector<uint32_t> count(groups * C, 0);
  const unsigned threads = PassThreads(R * C, opt);
  ParallelFor(C, threads, [&](size_t begin, size_t end, unsigned) {
    for (size_t c = begin; c < end; ++c) {
      std::span<const float> column = Column(m, c);
      for (size_t r = 0; r < R; ++r) {
        if (std::isnan(column[r])) continue;
        size_t gc = m.group_of[r] * C + c;
        sum[gc] += clamped(column[r], gc);
        ++count[gc];
      }
    }
  });
  ParallelFor(R, threads, [&](size_t begin, size_t end, unsigned) {
    for (size_t r = begin; r < end; ++r) {
      double own = 0, peers = 0;
      for (size_t c = 0; c < C; ++c) {
        float v = m.seconds_by_rank[r * C + c];
        size_t gc = m.group_of[r] * C + c;
        if (std::isnan(v) || count[gc] < 2) continue;
        double x = clamped(v, gc);
        own += x;
        peers += (sum[gc] - x) / static_cast<double>(count[gc] - 1);
      }
      if (peers > 0) m.ranks[r].total_excess = own / peers - 1;
    }
  });
}

// Peer comparison (by pipeline stage when every rank has one): each rank's
// median against its group's, and in units of the spread of all excesses;
// then each rank's slow steps.
void MeasurePeers(StepMetrics& m, const StepDetectorOptions& opt) {
  const size_t R = m.series.size(), C = Steps(m);
  const size_t groups = m.group_stage.empty() ? 1 : m.group_stage.size();
  m.peer_median_s.assign(R, 0);
  m.group_rank_medians_s.assign(groups, {});
  for (size_t r = 0; r < R; ++r) {
    if (m.ranks[r].seconds)
      m.group_rank_medians_s[m.group_of[r]].push_back(m.ranks[r].seconds->median);
  }
  // Each group's median once (per rank it was quadratic in the ranks: 80 s
  // of a 100,000-rank diagnosis).
  std::vector<double> group_median(groups, 0);
  for (size_t g = 0; g < groups; ++g) {
    group_median[g] = Median(m.group_rank_medians_s[g]).value_or(0);
  }
  std::vector<double> excesses;
  for (size_t r = 0; r < R; ++r) {
    m.peer_median_s[r] = group_median[m.group_of[r]];
    if (m.ranks[r].seconds && m.peer_median_s[r] > 0) {
      m.ranks[r].excess = m.ranks[r].seconds->median / m.peer_median_s[r] - 1;
      excesses.push_back(*m.ranks[r].excess);
    }
  }
  MeasureTotals(m, groups, opt);
  double center = Median(excesses).value_or(0);
  double sigma = std::max(opt.min_peer_spread, kMadToSigma * Mad(excesses).value_or(0));
  for (auto& st : m.ranks) {
    if (st.excess) st.z = (*st.excess - center) / sigma;
  }
  m.slow_steps.assign(R, {});
  m.slow_step_excess.assign(R, {});
  ParallelFor(R, PassThreads(R * C, opt), [&](size_t begin, size_t end, unsigned) {
    for (size_t r = begin; r < end; ++r) {
      for (size_t c = 0; c < C; ++c) {
        auto x = ExcessAt(m, r, c);
        if (x && *x >= m.slow_step_threshold) {
          m.slow_steps[r].push_back(m.step_numbers[c]);
          m.slow_step_excess[r].push_back(*x);
        }
      }
    }
  });
  for (const auto& s : m.slow_steps) m.slow_events += s.size();
}

}  // namespace

StepMetrics MeasureSteps(const Run& run, const StepDetectorOptions& opt) {
  StepMetrics m;
  m.attributed = !run.ranks.empty();
  for (const StepSeries& s : m.attributed ? run.ranks : run.unattributed) m.series.push_back(&s);
  if (m.series.empty()) return m;
  StepMatrix matrix = BuildMatrix(m.series, opt.warmup_steps, opt);
  m.step_numbers = std::move(matrix.step_numbers);
  if (!m.step_numbers.empty()) {
    m.job.first_step = m.step_numbers.front();
    m.job.last_step = m.step_numbers.back();
  }
  m.seconds_by_rank = std::move(matrix.values);
  m.seconds_by_step = std::move(matrix.by_step);
  const size_t R = m.series.size();
  m.job.ranks = m.attributed ? R : 0;
  m.job.steps = Steps(m);
  m.comparable = m.attributed && R >= 2;

  GroupByStage(m, opt);
  std::vector<double> spread = MeasureStepColumns(m, opt);
  MeasureGroupColumns(m, opt);
  MeasureRanks(m, opt);
  if (m.attributed) m.job.profiled_steps = ProfiledLogSteps(run);
  MeasurePace(m, std::move(spread), opt);
  MeasureNoise(m, opt);
  if (m.comparable) MeasurePeers(m, opt);
  return m;
}

namespace {

// How far `seg` of x stands out of the noise (RankOnsets::segment_z).
double SegmentZ(const std::vector<double>& x, const Segment& seg, double noise_sigma) {
  const size_t n = seg.end - seg.begin, rest_n = x.size() - n;
  if (n == 0 || rest_n == 0 || noise_sigma <= 0) return std::numeric_limits<double>::infinity();
  std::vector<double> rest(x.begin(), x.begin() + static_cast<ptrdiff_t>(seg.begin));
  rest.insert(rest.end(), x.begin() + static_cast<ptrdiff_t>(seg.end), x.end());
  double diff = seg.median - *Median(std::move(rest));
  return diff / (noise_sigma *
                 std::sqrt(1.0 / static_cast<double>(n) + 1.0 / static_cast<double>(rest_n)));
}

}  // namespace

void MeasureOnsets(StepMetrics& m, const StepDetectorOptions& opt) {
  const size_t R = m.series.size(), C = Steps(m);
  m.onsets.assign(R, {});
  ParallelFor(R, PassThreads(R * C, opt), [&](size_t begin, size_t end, unsigned) {
    std::vector<double> x;
    std::vector<int64_t> x_steps;
    for (size_t r = begin; r < end; ++r) {
      if (!m.ranks[r].seconds || m.ranks[r].steps_used < 3) continue;
      x.clear();
      x_steps.clear();
      for (size_t c = 0; c < C; ++c) {
        auto xc = ExcessAt(m, r, c);
        if (!xc) continue;
        x.push_back(*xc);
        x_steps.push_back(m.step_numbers[c]);
      }
      ChangePointOptions cp;
      cp.min_segment = std::max<size_t>(5, x.size() / 20);
      cp.min_shift = opt.flag_threshold;
      RankOnsets& o = m.onsets[r];
      o.points = x.size();
      if (!x_steps.empty()) o.first_step = x_steps.front();
      o.segments = Segmentize(x, cp);
      for (const Segment& seg : o.segments) {
        o.segment_first_step.push_back(x_steps[seg.begin]);
        o.segment_last_step.push_back(x_steps[seg.end - 1]);
        o.segment_z.push_back(SegmentZ(x, seg, m.job.noise_sigma.value_or(0)));
      }
    }
  });
}

std::optional<double> ThroughputLost(const StepMetrics& m, const std::vector<RankStepStats>& ranks,
                                     std::span<const double> step_s) {
  if (!m.comparable || std::none_of(ranks.begin(), ranks.end(),
                                    [](const RankStepStats& st) { return st.flagged; })) {
    return std::nullopt;
  }
  const size_t R = m.series.size(), C = Steps(m);
  if (m.seconds_by_step.size() != R * C || (!step_s.empty() && step_s.size() != C))
    return std::nullopt;
  double actual = 0, whatif = 0;
  for (size_t c = 0; c < C; ++c) {
    float all = -1, rest = -1;
    std::span<const float> column = Column(m, c);
    for (size_t r = 0; r < R; ++r) {
      float v = column[r];
      if (std::isnan(v)) continue;
      all = std::max(all, v);
      if (!ranks[r].flagged) rest = std::max(rest, v);
    }
    if (all <= 0 || rest <= 0) continue;
    if (step_s.empty()) {
      actual += all;
      whatif += rest;
    } else if (step_s[c] > 0) {
      actual += step_s[c];
      whatif += step_s[c] - std::min<double>(all - rest, step_s[c]);
    }
  }
  if (actual > 0) return std::clamp(1 - whatif / actual, 0.0, 1.0);
  return std::nullopt;
}

}  // namespace laggard
