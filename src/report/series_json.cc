// The `series` section of the JSON report: what the HTML charts draw.
//
// Sizes are bounded so a 4096-rank run still gives a report of a few MB:
//   steps        at most kMaxCells cells (ranks x columns), 20..200 columns;
//                a column averages `bucket_steps` consecutive step numbers
//   collectives  at most kMaxCollectivePoints in all, 50..500 per rank
//   gpus         at most kMaxGpuPoints samples in all, 50..500 per GPU; a
//                point averages consecutive samples
// Times are seconds since `origin`, the earliest absolute instant among step
// starts, aligned collective starts and GPU samples.

#include <algorithm>
#include <limits>
#include <map>

#include "base/stats/robust_stats.h"
#include "report/json_document.h"

namespace laggard::report_json {
namespace {

constexpr size_t kMaxCells = 100'000;
constexpr size_t kMaxColumns = 200;
constexpr size_t kMinColumns = 20;
constexpr size_t kMaxCollectivePoints = 50'000;
constexpr size_t kMaxGpuPoints = 100'000;

size_t PerItemCap(size_t total, size_t items, size_t lo, size_t hi) {
  if (items == 0) return hi;
  return std::clamp(total / items, lo, hi);
}

std::optional<TimeNs> MedianTime(std::vector<TimeNs> v) {
  if (v.empty()) return std::nullopt;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

Json Seconds(std::optional<TimeNs> t, std::optional<TimeNs> origin) {
  if (!t || !origin) return nullptr;
  return Num(ToSeconds(*t - *origin));
}

// Where each collective call of a rank's trace lies on the aligned clock.
struct AlignedCall {
  TimeNs start;
  DurationNs lateness;
};

std::vector<AlignedCall> AlignedCalls(const Run& run, const RankTraceStats& st) {
  std::vector<AlignedCall> out;
  if (st.trace >= run.traces.size()) return out;
  const RankTrace& t = run.traces[st.trace];
  DurationNs offset = st.clock_offset_ns.value_or(0);
  for (size_t i = 0; i < t.collectives.size() && i < st.call_lateness_ns.size(); ++i) {
    if (!st.call_lateness_ns[i]) continue;
    out.push_back(AlignedCall{t.collectives[i].start_ns - offset, *st.call_lateness_ns[i]});
  }
  return out;
}

// Mean of the present values of metric `get` over samples [a, b).
template <typename Get>
Json MeanOf(const std::vector<GpuSample>& s, size_t a, size_t b, Get get) {
  double sum = 0;
  size_t n = 0;
  for (size_t i = a; i < b; ++i) {
    if (std::optional<double> v = get(s[i])) sum += *v, ++n;
  }
  return n ? Num(sum / static_cast<double>(n)) : Json(nullptr);
}

// Per traced rank, its collectives' lateness over time, thinned to at most
// kMaxCollectivePoints in all.
Json CollectivesJson(const std::vector<std::pair<int32_t, std::vector<AlignedCall>>>& calls,
                     size_t traced_ranks, std::optional<TimeNs> origin) {
  Json collectives = Json::array();
  size_t per_rank = PerItemCap(kMaxCollectivePoints, traced_ranks, 50, 500);
  for (auto& [rank, c] : calls) {
    size_t stride = (c.size() + per_rank - 1) / per_rank;
    Json t_s = Json::array(), lateness = Json::array();
    for (size_t i = 0; i < c.size(); i += stride) {
      // The latest arrival of each group of `stride` calls: lateness is what
      // the chart is for, and a mean would hide the one late call.
      size_t pick = i;
      for (size_t j = i; j < std::min(c.size(), i + stride); ++j) {
        if (c[j].lateness > c[pick].lateness) pick = j;
      }
      t_s.push_back(Seconds(c[pick].start, origin));
      lateness.push_back(Num(static_cast<double>(c[pick].lateness) / 1e6));
    }
    collectives.push_back(
        {{"rank", rank}, {"t_s", std::move(t_s)}, {"lateness_ms", std::move(lateness)}});
  }

  return collectives;
}

// The GPUs' sampled temperature, SM clock and power on the time axis from
// `origin`, at most kMaxGpuPoints in all, each with the rank that used it
// when the step logs or traces say.
Json GpusJson(const ReportInput& in, const std::optional<TimeNs>& origin) {
  const Run& run = in.run;
  const size_t gpus_with_samples =
      static_cast<size_t>(std::count_if(run.hardware.gpus.begin(), run.hardware.gpus.end(),
                                        [](const GpuRecord& g) { return !g.samples.empty(); }));
  // GPUs: which rank used each (host, index), when the step logs or traces say.
  std::map<std::pair<std::string, int32_t>, int32_t> rank_of_gpu;
  for (const StepSeries& s : run.ranks) {
    if (s.info.host && s.info.local_gpu)
      rank_of_gpu.emplace(std::make_pair(*s.info.host, *s.info.local_gpu), s.info.rank);
  }
  for (const RankTraceStats& st : in.analyses.traces.ranks) {
    if (st.trace >= run.traces.size()) continue;
    const RankTrace& t = run.traces[st.trace];
    if (t.host && t.device) rank_of_gpu.emplace(std::make_pair(*t.host, *t.device), st.rank);
  }

  Json gpus = Json::array();
  size_t per_gpu = PerItemCap(kMaxGpuPoints, gpus_with_samples, 50, 500);
  for (const GpuRecord& g : run.hardware.gpus) {
    if (g.samples.empty()) continue;
    const std::vector<GpuSample>& s = g.samples;
    size_t stride = (s.size() + per_gpu - 1) / per_gpu;
    Json t_s = Json::array(), temp = Json::array(), clock = Json::array(), power = Json::array();
    for (size_t i = 0; i < s.size(); i += stride) {
      size_t end = std::min(s.size(), i + stride);
      t_s.push_back(g.time_is_approximate ? Num(ToSeconds(s[i].time_ns))
                                          : Seconds(s[i].time_ns, origin));
      temp.push_back(MeanOf(s, i, end, [](const GpuSample& x) { return x.temp_c; }));
      clock.push_back(MeanOf(s, i, end, [](const GpuSample& x) { return x.sm_clock_mhz; }));
      power.push_back(MeanOf(s, i, end, [](const GpuSample& x) { return x.power_w; }));
    }
    std::optional<int32_t> rank;
    if (g.host) {
      auto it = rank_of_gpu.find({*g.host, g.index});
      if (it != rank_of_gpu.end()) rank = it->second;
    }
    gpus.push_back({{"host", Opt(g.host)},
                    {"gpu", g.index},
                    {"rank", Opt(rank)},
                    {"time_approximate", g.time_is_approximate},
                    {"t_s", std::move(t_s)},
                    {"temp_c", std::move(temp)},
                    {"sm_clock_mhz", std::move(clock)},
                    {"power_w", std::move(power)}});
  }
  return gpus;
}

}  // namespace

Json BuildSeries(const ReportInput& in) {
  const Run& run = in.run;

  // The shared step axis.
  std::vector<int64_t> all_steps;
  size_t rank_count = 0;
  for (const StepSeries& s : run.ranks) {
    if (s.info.rank < 0 || s.steps.empty()) continue;
    ++rank_count;
    for (const StepRecord& r : s.steps) all_steps.push_back(r.step);
  }
  std::sort(all_steps.begin(), all_steps.end());
  all_steps.erase(std::unique(all_steps.begin(), all_steps.end()), all_steps.end());
  size_t max_columns = PerItemCap(kMaxCells, rank_count, kMinColumns, kMaxColumns);
  size_t bucket = std::max<size_t>(1, (all_steps.size() + max_columns - 1) / max_columns);
  size_t columns = (all_steps.size() + bucket - 1) / bucket;
  auto column_of = [&](int64_t step) {
    return static_cast<size_t>(std::lower_bound(all_steps.begin(), all_steps.end(), step) -
                               all_steps.begin()) /
           bucket;
  };

  std::vector<std::vector<TimeNs>> column_starts(columns);
  std::vector<std::vector<double>> column_values(columns);
  Json ranks = Json::array();
  for (const StepSeries& s : run.ranks) {
    if (s.info.rank < 0 || s.steps.empty()) continue;
    std::vector<double> sum(columns, 0);
    std::vector<size_t> n(columns, 0);
    for (const StepRecord& r : s.steps) {
      size_t c = column_of(r.step);
      sum[c] += ToSeconds(r.duration_ns);
      ++n[c];
      if (r.start_ns && r.step == all_steps[c * bucket]) column_starts[c].push_back(*r.start_ns);
    }
    Json values = Json::array();
    for (size_t c = 0; c < columns; ++c) {
      if (n[c] == 0) {
        values.push_back(nullptr);
        continue;
      }
      double mean = sum[c] / static_cast<double>(n[c]);
      column_values[c].push_back(mean);
      values.push_back(Num(mean));
    }
    ranks.push_back({{"rank", s.info.rank}, {"step_s", std::move(values)}});
  }

  std::vector<std::optional<TimeNs>> column_start(columns);
  std::optional<TimeNs> origin;
  auto see = [&](TimeNs t) { origin = origin ? std::min(*origin, t) : t; };
  for (size_t c = 0; c < columns; ++c) {
    column_start[c] = MedianTime(column_starts[c]);
    if (column_start[c]) see(*column_start[c]);
  }

  std::vector<std::pair<int32_t, std::vector<AlignedCall>>> calls;
  size_t traced_ranks = 0;
  for (const RankTraceStats& st : in.analyses.traces.ranks) {
    std::vector<AlignedCall> c = AlignedCalls(run, st);
    if (c.empty()) continue;
    ++traced_ranks;
    for (const AlignedCall& a : c) see(a.start);
    calls.emplace_back(st.rank, std::move(c));
  }

  for (const GpuRecord& g : run.hardware.gpus) {
    if (!g.samples.empty() && !g.time_is_approximate) see(g.samples.front().time_ns);
  }

  Json steps_axis = Json::array(), starts = Json::array(), medians = Json::array();
  for (size_t c = 0; c < columns; ++c) {
    steps_axis.push_back(all_steps[c * bucket]);
    starts.push_back(Seconds(column_start[c], origin));
    medians.push_back(Opt(Median(column_values[c])));
  }

  Json collectives = CollectivesJson(calls, traced_ranks, origin);

  Json gpus = GpusJson(in, origin);

  Json out;
  out["origin"] = origin ? Json(FormatTimestamp(*origin)) : Json(nullptr);
  out["bucket_steps"] = bucket;
  out["steps"] = std::move(steps_axis);
  out["start_s"] = std::move(starts);
  out["median_s"] = std::move(medians);
  out["ranks"] = std::move(ranks);
  out["collectives"] = std::move(collectives);
  out["gpus"] = std::move(gpus);
  return out;
}

}  // namespace laggard::report_json
