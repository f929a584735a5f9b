// The merged trace's op timelines: per DP rank a measured and an ideal
// (what-if) process with a thread per (pp, tp) worker, every op on both,
// the ideal step as long as the replay's ideal step, pids after the hosts',
// and the bound on big timelines.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "report/pipeline_report_fixture.h"
#include "report/trace_writer.h"
#include "report_fixture.h"
#include "simulator/pipeline/pipeline_sim.h"

namespace laggard {
namespace {

using Json = nlohmann::json;
using testing_util::PipelineFault;
using testing_util::PipelineRun;

Json MergedTrace(const ReportInput& in) {
  std::ostringstream out;
  WriteMergedTrace(in, out);
  return Json::parse(out.str());
}

std::map<int, std::string> Processes(const Json& trace) {
  std::map<int, std::string> p;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      EXPECT_FALSE(p.count(e["pid"].get<int>())) << "pid named twice: " << e.dump();
      p[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    }
  }
  return p;
}
int PidOf(const std::map<int, std::string>& processes, const std::string& name) {
  for (auto& [pid, n] : processes) {
    if (n == name) return pid;
  }
  return -1;
}
// Per pid, its threads' names (lane 0 and overlap lanes).
std::map<int, std::set<std::string>> Threads(const Json& trace) {
  std::map<int, std::set<std::string>> t;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      t[e["pid"].get<int>()].insert(e["args"]["name"].get<std::string>());
  }
  return t;
}
std::string Measured(int dp) { return fmt::format("op timeline: DP rank {} (measured)", dp); }
std::string Ideal(int dp) { return fmt::format("op timeline: DP rank {} (ideal, what-if)", dp); }

TEST(MergedTraceOpTimelineTest, EachDpRankHasAMeasuredAndAnIdealProcessWithEveryOp) {
  auto d = PipelineRun(2, 4, PipelineFault::kSlowWorker);
  Json trace = MergedTrace(d->input());
  std::map<int, std::string> processes = Processes(trace);
  EXPECT_EQ(processes.size(), 5u);  // job + 2 DP ranks x (measured, ideal)
  std::map<int, std::set<std::string>> threads = Threads(trace);
  std::map<int, size_t> ops_of_dp;
  const OpTimeline& t = d->run.op_timelines[0];
  for (const TimelineOp& op : t.ops) ++ops_of_dp[t.workers[op.worker].coord.dp];
  std::map<int, size_t> events;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++events[e["pid"].get<int>()];
    ASSERT_TRUE(e["args"]["step"].is_number() && e["args"]["seq"].is_number()) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0) << e.dump();
  }
  for (int dp = 0; dp < 2; ++dp) {
    int measured = PidOf(processes, Measured(dp)), ideal = PidOf(processes, Ideal(dp));
    ASSERT_NE(measured, -1) << Measured(dp);
    ASSERT_NE(ideal, -1) << Ideal(dp);
    EXPECT_EQ(ideal, measured + 1) << "the ideal process sits beside the measured one";
    for (int pp = 0; pp < 4; ++pp) {
      std::string worker = fmt::format("pp {} tp 0 (rank {})", pp, dp + 2 * pp);
      EXPECT_TRUE(threads[measured].count(worker)) << worker;
      EXPECT_TRUE(threads[ideal].count(worker)) << worker;
    }
    // Every op of the DP rank, once measured and once ideal (all replayed).
    EXPECT_EQ(events[measured], ops_of_dp[dp]);
    EXPECT_EQ(events[ideal], ops_of_dp[dp]);
  }
  const Json& other = trace["otherData"]["op_timelines"];
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0]["file"], "timeline.json.gz");
  EXPECT_EQ(other[0]["ops_written"], t.ops.size());
  EXPECT_EQ(other[0]["ideal_ops_written"], t.ops.size());
  EXPECT_EQ(other[0]["steps_written"], 4);
  EXPECT_EQ(other[0]["steps_omitted"], 0);
}

TEST(MergedTraceOpTimelineTest, IdealStepEndsAtTheReplaysIdealStepTime) {
  auto d = PipelineRun(2, 4, PipelineFault::kHeavyStage);
  Json trace = MergedTrace(d->input());
  std::map<int, std::string> processes = Processes(trace);
  std::set<int> ideal_pids = {PidOf(processes, Ideal(0)), PidOf(processes, Ideal(1))};
  std::map<int64_t, double> start, ideal_end;  // per step, us
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    int64_t step = e["args"]["step"].get<int64_t>();
    double ts = e["ts"].get<double>();
    if (ideal_pids.count(e["pid"].get<int>())) {
      EXPECT_EQ(e["cat"], "op_ideal");
      ideal_end[step] = std::max(ideal_end[step], ts + e["dur"].get<double>());
    } else {
      EXPECT_EQ(e["cat"], "op");
      start[step] = start.count(step) ? std::min(start[step], ts) : ts;
    }
  }
  const WhatIf& w = d->whatif();
  ASSERT_EQ(w.per_step.size(), 4u);
  for (const WhatIfStep& s : w.per_step) {
    ASSERT_TRUE(start.count(s.step) && ideal_end.count(s.step)) << "step " << s.step;
    // The replay's times are floats: 1 us covers their rounding at 0.3 s.
    EXPECT_NEAR((ideal_end[s.step] - start[s.step]) * 1e3, s.ideal_ns, 1e3) << "step " << s.step;
    EXPECT_LT(s.ideal_ns, s.measured_ns);
  }
}

TEST(MergedTraceOpTimelineTest, MeasuredOpsCompareWithTheirTypicalDuration) {
  // Worker dp 1 pp 1 (rank 3) computes 30% longer: its forward computes are
  // 1.3 / 1.0375 of the mean over the 8 workers, everyone else's 1 / 1.0375.
  auto d = PipelineRun(2, 4, PipelineFault::kSlowWorker);
  Json trace = MergedTrace(d->input());
  int dp1 = PidOf(Processes(trace), Measured(1));
  std::map<int, std::string> thread_name;  // tid -> name, of DP rank 1's measured process
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == dp1)
      thread_name[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
  }
  size_t slow = 0, other = 0;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "op" || e["name"] != "forward-compute") continue;
    ASSERT_TRUE(e["args"].contains("microbatch")) << e.dump();
    EXPECT_NEAR(e["args"]["typical_ms"].get<double>(), 10 * 1.0375, 1e-3) << e.dump();
    double ratio = e["args"]["vs_typical"].get<double>();
    bool is_slow = e["pid"] == dp1 && thread_name[e["tid"].get<int>()].rfind("pp 1 tp 0", 0) == 0;
    EXPECT_NEAR(ratio, is_slow ? 1.3 / 1.0375 : 1 / 1.0375, 1e-3) << e.dump();
    ++(is_slow ? slow : other);
  }
  EXPECT_EQ(slow, 4u * 8u);  // steps x microbatches
  EXPECT_EQ(other, 7u * 4u * 8u);
}

TEST(MergedTraceOpTimelineTest, ProcessesComeAfterTheHostsAndKeepTidsGlobal) {
  testing_util::TempDir dir;
  auto d = testing_util::SimulatedRun(dir.path(), testing_util::FixtureOptions{.traces = false});
  auto p = PipelineRun(2, 2, PipelineFault::kNone);
  d->run.op_timelines = p->run.op_timelines;
  d->analyses.pipelines = p->analyses.pipelines;
  ReportInput in = d->input();
  Json trace = MergedTrace(in);
  std::map<int, std::string> processes = Processes(trace);
  int last_host = PidOf(processes, "node-01");
  ASSERT_NE(last_host, -1);
  for (int dp = 0; dp < 2; ++dp) {
    EXPECT_GT(PidOf(processes, Measured(dp)), last_host + 1) << "pid of the unknown host taken";
    EXPECT_GT(PidOf(processes, Ideal(dp)), last_host + 1);
  }
  // A tid belongs to one process and is never a pid.
  std::map<int, int> pid_of_tid;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "M" || e["name"] != "thread_name") continue;
    int tid = e["tid"].get<int>(), pid = e["pid"].get<int>();
    EXPECT_FALSE(processes.count(tid)) << e.dump();
    auto [it, fresh] = pid_of_tid.emplace(tid, pid);
    EXPECT_TRUE(fresh) << "tid " << tid << " named twice";
  }
}

TEST(MergedTraceOpTimelineTest, BigTimelineWritesItsFirstStepsAndSaysSo) {
  auto d = PipelineRun(2, 2, PipelineFault::kNone);
  const OpTimeline& t = d->run.op_timelines[0];
  size_t per_step = 0;
  for (const TimelineOp& op : t.ops) per_step += op.step == 0;
  std::ostringstream out;
  report_trace::TraceWriter w(out);
  int next_tid = 1'000'000;
  Json other = report_trace::WriteOpTimelines(d->input(), 0, 10, next_tid, w, 2 * per_step + 1);
  w.Finish(other);
  Json trace = Json::parse(out.str());
  size_t ops = 0;
  std::set<int64_t> steps;
  std::vector<Json> instants;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++ops;
      steps.insert(e["args"]["step"].get<int64_t>());
    }
    if (e["ph"] == "i") instants.push_back(e);
  }
  EXPECT_EQ(steps, (std::set<int64_t>{0, 1}));
  EXPECT_EQ(ops, 2 * 2 * per_step);  // measured and ideal
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]["name"], "op timeline: first 2 of 4 steps written (at most " +
                                     std::to_string(2 * per_step + 1) + " ops)");
  EXPECT_EQ(instants[0]["pid"], 10);
  EXPECT_EQ(trace["otherData"][0]["steps_omitted"], 2);
  EXPECT_EQ(trace["otherData"][0]["ops_written"], 2 * per_step);
}

TEST(MergedTraceOpTimelineTest, TimelineWithoutLayoutIsListedNotDrawn) {
  auto d = PipelineRun(2, 2, PipelineFault::kNone);
  OpTimeline& t = d->run.op_timelines[0];
  t.layout.reset();
  for (TimelineWorker& w : t.workers) w.coord_known = false;
  d->analyses = AnalyzeRun(d->run, AnalysisOptions{});
  Json trace = MergedTrace(d->input());
  EXPECT_EQ(Processes(trace).size(), 1u);  // the job's
  const Json& entry = trace["otherData"]["op_timelines"][0];
  EXPECT_NE(entry["error"].get<std::string>().find("--layout"), std::string::npos) << entry;
  EXPECT_EQ(entry["ops_written"], 0);
}

// A 3D-parallel job of the simulator (the times a Megatron job has), as
// the op timeline the reader makes of its file.
OpTimeline SimulatedTimeline(int dp, int pp, int tp, const std::string& fault, int steps) {
  sim::PipelineScenario sc;
  sc.layout = {dp, pp, tp};
  sc.steps = steps;
  sc.seed = 7;
  if (!fault.empty()) sc.fault = sim::ParsePipelineFault(fault).value();
  EXPECT_TRUE(sim::ResolvePipelineScenario(&sc).ok());
  OpTimeline t;
  t.layout = ParallelLayout{dp, pp, tp, 1};
  for (int r = 0; r < sc.layout.world(); ++r) {
    sim::WorkerCoord c = sim::CoordOfRank(sc.layout, r);
    TimelineWorker w;
    w.coord = {c.dp, c.pp, c.tp};
    w.rank = r;
    t.workers.push_back(w);
  }
  auto r = sim::SimulatePipeline(sc, [&](int step, std::span<const sim::PipelineEvent> events) {
    for (const sim::PipelineEvent& e : events) {
      TimelineOp op;
      op.kind = static_cast<TimelineOpKind>(e.kind);
      op.worker = e.rank;
      op.step = step;
      op.microbatch = e.mb;
      op.seq = e.seq;
      op.start_ns = static_cast<TimeNs>(std::llround(e.ts_us * 1e3));
      op.dur_ns = static_cast<DurationNs>(std::llround(e.dur_us * 1e3));
      t.ops.push_back(op);
    }
    return Status::Ok();
  });
  EXPECT_TRUE(r.ok());
  return t;
}

TEST(MergedTraceOpTimelineTest, SimulatedJobKeepsItsOpsOnFewLanesAndTheIdealStepInItsGap) {
  // The simulator's Megatron job (dp 2 x pp 4 x tp 2, one slow worker) has
  // real times: compute one op at a time, transfers beside it, steps apart.
  laggard::Run run;
  run.files.push_back({"timeline.json.gz", "megatron_timeline", 0, 0, true});
  run.op_timelines.push_back(SimulatedTimeline(2, 4, 2, "slow_worker@dp=1,pp=2,tp=1:1.4", 6));
  Analyses a = AnalyzeRun(run, AnalysisOptions{});
  Verdict v = DecideVerdict(run, a);
  ReportInput in{run, a, v};
  Json trace = MergedTrace(in);
  // A compute lane and one for the transfers that overlap it, at most.
  for (auto& [pid, names] : Threads(trace)) {
    for (const std::string& n : names) EXPECT_EQ(n.find("(overlap 3)"), std::string::npos) << n;
  }
  // Each ideal step is shorter than the measured one: it ends before the
  // next measured step starts.
  std::map<int64_t, double> measured_start, ideal_end;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    int64_t step = e["args"]["step"].get<int64_t>();
    double ts = e["ts"].get<double>();
    if (e["cat"] == "op_ideal") {
      ideal_end[step] = std::max(ideal_end[step], ts + e["dur"].get<double>());
    } else {
      measured_start[step] = measured_start.count(step) ? std::min(measured_start[step], ts) : ts;
    }
  }
  ASSERT_EQ(ideal_end.size(), 6u);
  const WhatIf& w = *a.pipelines.timelines[0].whatif;
  for (const WhatIfStep& s : w.per_step) {
    EXPECT_NEAR((ideal_end[s.step] - measured_start[s.step]) * 1e3, s.ideal_ns, 1e3);
    if (measured_start.count(s.step + 1)) {
      EXPECT_LT(ideal_end[s.step], measured_start[s.step + 1]);
    }
  }
}

}  // namespace
}  // namespace laggard
