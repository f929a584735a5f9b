// A diagnosed, simulated run for the report tests (HTML page, merged trace):
// 16 ranks (or FixtureOptions::ranks) on 8-GPU nodes, 200 steps of 0.8 s, rank 5 (node-00 GPU 5)
// computing 21% slower from step 60; optionally torch.profiler traces of steps 150-152 with host
// clocks up to 4 ms apart, and GPU samples every second in which rank 5's GPU runs hot and slow
// from its onset.

#ifndef LAGGARD_TESTS_REPORT_FIXTURE_H_
#define LAGGARD_TESTS_REPORT_FIXTURE_H_

#include <cmath>
#include <memory>
#include <string>

#include "analysis/steps/step_time_detector.h"
#include "analysis/traces/trace_detector.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "report/report.h"
#include "simulator/writers/kineto_traces.h"
#include "simulator/writers/step_logs.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard::testing_util {

struct Diagnosed {
  Run run;
  Analyses analyses;  // the step and trace detectors' only
  Verdict verdict;
  ReportInput input() const { return ReportInput{run, analyses, verdict}; }
};

struct FixtureOptions {
  bool step_logs = true;
  sim::StepLogFormat format = sim::StepLogFormat::kCsv;  // kArticle: no timestamps
  bool traces = true;
  bool hardware = true;
  int ranks = 16;  // 8 per node
};

inline constexpr int kFixtureCulprit = 5;
inline constexpr int kFixtureOnsetStep = 60;
inline constexpr int64_t kFixtureStartS = 1'764'000'000;

inline void Diagnose(Diagnosed& d) {
  d.analyses.steps = AnalyzeStepTimes(d.run, StepDetectorOptions{});
  d.analyses.traces = AnalyzeTraces(d.run);
  d.verdict = DecideVerdict(d.run, d.analyses.steps, d.analyses.traces);
}

// GPU samples of every GPU of the fixture, one per second over the run.
inline void AddGpuSamples(Run& run, int ranks) {
  for (int node = 0; node < ranks / 8; ++node) {
    for (int gpu = 0; gpu < 8; ++gpu) {
      GpuRecord g;
      g.host = sim::HostName(node);
      g.index = gpu;
      int rank = node * 8 + gpu;
      for (int s = 0; s < 165; ++s) {
        GpuSample x;
        x.time_ns = (kFixtureStartS + s) * 1'000'000'000LL;
        bool hot = rank == kFixtureCulprit && s >= kFixtureOnsetStep * 0.8;
        double wobble = std::sin(0.37 * s + rank);
        x.temp_c = hot ? 91 + wobble : 64 + 2 * wobble;
        x.sm_clock_mhz = hot ? 1590 + 20 * wobble : 1980;
        x.power_w = hot ? 520 + 10 * wobble : 610 + 15 * wobble;
        // A reading the tool could not take ("[N/A]"): no counter value, never 0.
        if (rank == 0 && s == 10) x.temp_c.reset();
        x.src = SourceRef{0, static_cast<uint32_t>(s + 1)};
        g.samples.push_back(x);
      }
      run.hardware.gpus.push_back(std::move(g));
    }
  }
}

inline std::unique_ptr<Diagnosed> SimulatedRun(const std::string& dir,
                                               const FixtureOptions& o = {}) {
  std::vector<std::string> paths;
  if (o.step_logs) {
    sim::StepLogScenario sc;
    sc.ranks = o.ranks;
    sc.gpus_per_node = 8;
    sc.steps = 200;
    sc.base_step_s = 0.8;
    sc.jitter = 0.015;
    sc.seed = 11;
    sc.start_time_s = kFixtureStartS;
    sc.rank_slowdowns.push_back(sim::RankSlowdown{kFixtureCulprit, 0.21, kFixtureOnsetStep});
    Status st = sim::WriteStepLogs(sc, o.format, dir + "/step_logs");
    EXPECT_TRUE(st.ok()) << st.message();
    paths.push_back(dir + "/step_logs");
  }
  if (o.traces) {
    sim::TraceScenario tc;
    tc.ranks = o.ranks;
    tc.gpus_per_node = 8;
    tc.steps = 3;
    tc.first_step = 150;
    tc.kernels_per_step = 24;
    tc.seed = 11;
    tc.compute_slow = sim::ComputeSlowFault{kFixtureCulprit, 1.21};
    tc.max_clock_offset_ms = 4;
    tc.start_time_s = kFixtureStartS + 119;  // step 149 on the step logs' clock
    Status st = sim::WriteKinetoTraces(tc, dir + "/traces", /*gzip=*/false);
    EXPECT_TRUE(st.ok()) << st.message();
    paths.push_back(dir + "/traces");
  }
  auto d = std::make_unique<Diagnosed>();
  auto readers = MakeDefaultTextReaders(std::nullopt);
  EXPECT_TRUE(readers.ok());
  if (!readers.ok()) return d;
  TraceReaderSet trace_readers = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 2;
  if (!paths.empty()) {
    auto run = Ingest(paths, readers->readers, options, trace_readers.readers);
    EXPECT_TRUE(run.ok()) << run.status().message();
    if (run.ok()) d->run = std::move(run.value());
  }
  if (o.hardware) AddGpuSamples(d->run, o.ranks);
  Diagnose(*d);
  return d;
}

}  // namespace laggard::testing_util

#endif  // LAGGARD_TESTS_REPORT_FIXTURE_H_
