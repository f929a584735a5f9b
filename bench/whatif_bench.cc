// What-if replay of a 1,024-worker x 32-step Megatron timeline (dp 128 x
// pp 8, 8 microbatches, non-interleaved 1F1B; ~1.8 M ops). Target: < 5 s
// on one core. Each row runs in a forked child (its own peak RSS), min /
// median / max over --rounds rounds, with the machine's steal time while
// the rows ran.
//
//   (a) graph + measured + ideal replays (WhatIfOptions::decompose false)
//   (b) the whole what-if: (a) plus one replay per group (8 stages, 128 DP
//       ranks, the op types, 64 workers) and one more for the 3 largest of
//       each decomposition ("recovered")
//   (c) one replay's cost: ((b) - (a)) / the number of extra replays
//
// Usage: whatif_bench [--dp 128] [--pp 8] [--microbatches 8] [--steps 32]
//                     [--rounds 3]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/pipelines/pipeline_replay.h"
#include "analysis/pipelines/pipeline_timeline_fixture.h"
#include "bench_child.h"

namespace laggard {
namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  bool ok = false;
  double wall_s = 0;
  double cpu_s = 0;
  long peak_rss_kb = 0;
  double slowdown = 0;
  uint64_t ops = 0;
  uint64_t replays = 0;
  char note[128] = "";
};

struct Args {
  int dp = 128, pp = 8, microbatches = 8, steps = 32, rounds = 3;
};

// Durations with a little deterministic noise and one heavy stage, so the
// replays do real work.
DurationNs NoisyDuration(TimelineOpKind k, int32_t dp, int32_t pp, int64_t step, int32_t mb) {
  uint64_t h = static_cast<uint64_t>(dp) * 1000003u ^ static_cast<uint64_t>(pp) * 7919u ^
               static_cast<uint64_t>(step) * 104729u ^ static_cast<uint64_t>(mb + 2) * 31u ^
               static_cast<uint64_t>(k) * 2654435761u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  double noise = 1 + 0.02 * (static_cast<double>(h % 1000) / 1000.0 - 0.5);
  double heavy =
      pp == 7 && (k == TimelineOpKind::kForwardCompute || k == TimelineOpKind::kBackwardCompute)
          ? 1.2
          : 1;
  return static_cast<DurationNs>(static_cast<double>(testing::BaseDuration(k)) * noise * heavy);
}

Sample RunRow(const OpTimeline& t, bool decompose) {
  Sample s;
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = Clock::now();
  WhatIfOptions o;
  o.decompose = decompose;
  auto w = RunWhatIf(t, std::nullopt, o);
  s.wall_s = bench::Seconds(t0, Clock::now());
  s.cpu_s = bench::CpuSeconds() - cpu0;
  if (!w.ok()) {
    std::snprintf(s.note, sizeof s.note, "%s", w.status().message().c_str());
    return s;
  }
  s.ok = true;
  s.slowdown = w.value().slowdown;
  s.ops = w.value().fit.ops;
  s.replays = 2;
  for (const auto* v :
       {&w.value().by_stage, &w.value().by_dp_rank, &w.value().by_op_type, &w.value().by_worker}) {
    for (const WhatIfGroup& g : *v) s.replays += g.recovered ? 2 : 1;
  }
  return s;
}

std::string Spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return "-";
  return fmt::format("{:.3f} / {:.3f} / {:.3f}", v.front(), v[v.size() / 2], v.back());
}

int Main(const Args& a) {
  std::printf("whatif_bench: dp %d x pp %d (%d workers), %d microbatches, %d steps, %d rounds\n",
              a.dp, a.pp, a.dp * a.pp, a.microbatches, a.steps, a.rounds);
  std::printf("machine: %s, load %s\n", bench::CpuModel().c_str(), bench::LoadAverage().c_str());
  const auto g0 = Clock::now();
  OpTimeline t = testing::OneFOneBTimeline(a.dp, a.pp, a.microbatches, a.steps, NoisyDuration);
  std::printf("timeline: %zu ops, generated in %.2f s\n", t.ops.size(),
              bench::Seconds(g0, Clock::now()));
  struct Row {
    const char* name;
    bool decompose;
    std::vector<double> wall, cpu;
    long rss = 0;
    Sample last;
  } rows[] = {{"(a) graph + measured + ideal", false, {}, {}, 0, {}},
              {"(b) whole what-if", true, {}, {}, 0, {}}};
  const double steal0 = bench::StealSeconds();
  const auto r0 = Clock::now();
  for (int round = 0; round < a.rounds; ++round) {
    for (Row& row : rows) {
      Sample s = bench::RunInChild<Sample>([&] { return RunRow(t, row.decompose); });
      if (!s.ok) {
        std::printf("%s: failed: %s\n", row.name, s.note);
        return 1;
      }
      row.wall.push_back(s.wall_s);
      row.cpu.push_back(s.cpu_s);
      row.rss = std::max(row.rss, s.peak_rss_kb);
      row.last = s;
    }
  }
  const double steal = bench::StealSeconds() - steal0;
  const double ran = bench::Seconds(r0, Clock::now());
  std::printf("\n%-30s %26s %26s %9s %8s %9s\n", "row", "wall s (min/med/max)",
              "CPU s (min/med/max)", "replays", "RSS MB", "slowdown");
  for (const Row& row : rows) {
    std::printf("%-30s %26s %26s %9lu %8.0f %9.4f\n", row.name, Spread(row.wall).c_str(),
                Spread(row.cpu).c_str(), static_cast<unsigned long>(row.last.replays),
                static_cast<double>(row.rss) / 1024, row.last.slowdown);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double extra = static_cast<double>(rows[1].last.replays - rows[0].last.replays);
  double per = extra > 0 ? (median(rows[1].cpu) - median(rows[0].cpu)) / extra : 0;
  std::printf("(c) one replay of %lu ops: %.1f ms CPU (%.0f M ops/s)\n",
              static_cast<unsigned long>(rows[1].last.ops), 1e3 * per,
              per > 0 ? static_cast<double>(rows[1].last.ops) / per / 1e6 : 0);
  std::printf("steal while the rows ran: %.2f s of %.1f s wall\n", steal, ran);
  std::printf("target: the whole what-if < 5 s on one core: %s (median %.2f s CPU)\n",
              median(rows[1].cpu) < 5 ? "met" : "NOT met", median(rows[1].cpu));
  return 0;
}

}  // namespace
}  // namespace laggard

int main(int argc, char** argv) {
  laggard::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (k == "--dp") a.dp = v;
    else if (k == "--pp") a.pp = v;
    else if (k == "--microbatches") a.microbatches = v;
    else if (k == "--steps") a.steps = v;
    else if (k == "--rounds") a.rounds = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (a.dp < 1 || a.pp < 1 || a.microbatches < a.pp || a.steps < 1 || a.rounds < 1) {
    std::fprintf(stderr, "need dp, pp, steps, rounds >= 1 and microbatches >= pp\n");
    return 2;
  }
  return laggard::Main(a);
}
