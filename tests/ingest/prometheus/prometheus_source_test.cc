// The Prometheus input of `laggard watch`: API answers (as Prometheus 2.x
// writes them) parsed into series, and series mapped into a Run.

#include <gtest/gtest.h>

#include "ingest/prometheus/prometheus_source.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

TEST(PrometheusSourceTest, ParsesAMatrixAnswer) {
  auto series =
      ParsePrometheusResponse(R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"__name__":"laggard_gpu_temp_celsius","host":"node-1","gpu":"0","instance":"127.0.0.1:9400"},
     "values":[[1700000000,"71"],[1700000001.5,"72.5"],[1700000002,"NaN"]]}]}})");
  ASSERT_TRUE(series.ok()) << series.status().message();
  ASSERT_EQ(series->size(), 1u);
  const PromSeries& s = (*series)[0];
  EXPECT_EQ(s.labels.at("host"), "node-1");
  ASSERT_EQ(s.points.size(), 2u) << "NaN is not a value";
  EXPECT_EQ(s.points[1].first, 1'700'000'001'500'000'000);
  EXPECT_DOUBLE_EQ(s.points[1].second, 72.5);
}

TEST(PrometheusSourceTest, ErrorAnswersAreErrors) {
  auto bad = ParsePrometheusResponse(
      R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("parse error"), std::string::npos);
  EXPECT_FALSE(ParsePrometheusResponse("<html>502</html>").ok());
  EXPECT_FALSE(ParsePrometheusResponse(R"({"status":"success"})").ok());
}

TEST(PrometheusSourceTest, UnreachableServerIsAClearError) {
  PrometheusQuery q;
  q.url = "http://127.0.0.1:1";  // nothing listens on port 1
  q.timeout_s = 2;
  q.end_ns = 1'700'000'060'000'000'000;
  q.start_ns = q.end_ns - 60'000'000'000;
  auto run = LoadFromPrometheus(q);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("cannot reach Prometheus"), std::string::npos);
}

PromSeries Series(std::map<std::string, std::string> labels,
                  std::vector<std::pair<TimeNs, double>> points) {
  PromSeries s;
  s.labels = std::move(labels);
  s.points = std::move(points);
  return s;
}

constexpr TimeNs kT0 = 1'700'000'000'000'000'000;
constexpr TimeNs kSec = 1'000'000'000;

// Rank 3 of node-1: its step durations and step numbers, and one phase.
using Points = std::vector<std::pair<TimeNs, double>>;
const std::map<std::string, std::string> kRank3{{"host", "node-1"}, {"rank", "3"}};
void AddRankSteps(std::map<std::string, std::vector<PromSeries>>& m, Points dur, Points last) {
  m["laggard_step_duration_seconds"].push_back(Series(kRank3, std::move(dur)));
  m["laggard_step_last"].push_back(Series(kRank3, std::move(last)));
}
void AddPhase(std::map<std::string, std::vector<PromSeries>>& m, std::string phase, Points p) {
  auto labels = kRank3;
  labels["phase"] = std::move(phase);
  m["laggard_step_phase_seconds"].push_back(Series(std::move(labels), std::move(p)));
}

TEST(PrometheusSourceTest, StepGaugesBecomeOneRecordPerNewStep) {
  std::map<std::string, std::vector<PromSeries>> m;
  // Scraped every second, a step every ~2 s: each step number seen twice.
  std::vector<std::pair<TimeNs, double>> dur, last;
  for (int i = 0; i < 10; ++i) {
    dur.push_back({kT0 + i * kSec, 2.0 + 0.01 * (i / 2)});
    last.push_back({kT0 + i * kSec, 100 + i / 2});
  }
  m["laggard_step_duration_seconds"].push_back(
      Series({{"host", "node-1"}, {"rank", "3"}, {"gpu", "1"}}, dur));
  m["laggard_step_last"].push_back(Series({{"host", "node-1"}, {"rank", "3"}, {"gpu", "1"}}, last));
  laggard::Run run = RunFromSeries(m);
  ASSERT_EQ(run.ranks.size(), 1u);
  const StepSeries& s = run.ranks[0];
  EXPECT_EQ(s.info.rank, 3);
  EXPECT_EQ(s.info.host, "node-1");
  EXPECT_EQ(s.info.local_gpu, 1);
  ASSERT_EQ(s.steps.size(), 5u);
  EXPECT_EQ(s.steps[0].step, 100);
  EXPECT_EQ(s.steps[4].step, 104);
  EXPECT_EQ(s.steps[1].duration_ns, 2'010'000'000);
  EXPECT_EQ(*s.steps[1].start_ns, kT0 + 2 * kSec - 2'010'000'000);
}

TEST(PrometheusSourceTest, ComputePhaseGaugeIsTheStepsComputeTime) {
  std::map<std::string, std::vector<PromSeries>> m;
  std::vector<std::pair<TimeNs, double>> dur, last, compute, data;
  for (int i = 0; i < 4; ++i) {
    dur.push_back({kT0 + i * kSec, 1.0});
    last.push_back({kT0 + i * kSec, 10 + i});
    if (i != 2) compute.push_back({kT0 + i * kSec, 0.6 + 0.1 * i});  // step 12 did not report it
    data.push_back({kT0 + i * kSec, 0.05});
  }
  AddRankSteps(m, dur, last);
  AddPhase(m, "data", data);
  AddPhase(m, "compute", compute);
  laggard::Run run = RunFromSeries(m);
  ASSERT_EQ(run.ranks.size(), 1u);
  const std::vector<StepRecord>& steps = run.ranks[0].steps;
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].compute_ns, 600'000'000);
  EXPECT_EQ(steps[1].compute_ns, 700'000'000);
  EXPECT_EQ(steps[2].compute_ns, 0);  // no compute sample: none, not the data phase's
  EXPECT_EQ(steps[3].compute_ns, 900'000'000);
  EXPECT_EQ(steps[3].duration_ns, 1'000'000'000);
}

// The reporter's CPU phases (cpu_s, cpu_wait_s, cpu_probe_s, exported by
// the agent as phases) become each step's StepCpu, from the same scrape;
// a step without them has none, a probe of 0 is no probe.
TEST(PrometheusSourceTest, CpuPhaseGaugesAreTheStepsCpuTimes) {
  std::map<std::string, std::vector<PromSeries>> m;
  std::vector<std::pair<TimeNs, double>> dur, last, cpu, wait, probe;
  for (int i = 0; i < 3; ++i) {
    dur.push_back({kT0 + i * kSec, 1.0});
    last.push_back({kT0 + i * kSec, 10 + i});
    if (i != 1) cpu.push_back({kT0 + i * kSec, 0.5 + 0.1 * i});  // step 11 sent none
    if (i != 1) wait.push_back({kT0 + i * kSec, 0.002});
    if (i != 1) probe.push_back({kT0 + i * kSec, i == 2 ? 0.0 : 0.00014});
  }
  AddRankSteps(m, dur, last);
  AddPhase(m, "cpu", cpu);
  AddPhase(m, "cpu_wait", wait);
  AddPhase(m, "cpu_probe", probe);
  laggard::Run run = RunFromSeries(m);
  ASSERT_EQ(run.ranks.size(), 1u);
  const std::vector<StepCpu>& c = run.ranks[0].cpu;
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].step, 10);
  EXPECT_EQ(c[0].on_cpu_ns, 500'000'000);
  EXPECT_EQ(c[0].runq_wait_ns, 2'000'000);
  EXPECT_EQ(c[0].probe_ns, 140'000);
  EXPECT_EQ(c[1].step, 12);
  EXPECT_EQ(c[1].on_cpu_ns, 700'000'000);
  EXPECT_FALSE(c[1].probe_ns.has_value());
  EXPECT_EQ(run.ranks[0].steps.size(), 3u);
}

TEST(PrometheusSourceTest, AgentAndDcgmGpuSeriesMergePerGpuAndTime) {
  std::map<std::string, std::vector<PromSeries>> m;
  m["laggard_gpu_temp_celsius"].push_back(Series(
      {{"host", "node-1"}, {"gpu", "0"}, {"uuid", "GPU-abc"}}, {{kT0, 70}, {kT0 + kSec, 93}}));
  m["laggard_gpu_sm_clock_mhz"].push_back(
      Series({{"host", "node-1"}, {"gpu", "0"}}, {{kT0, 1980}, {kT0 + kSec, 1500}}));
  m["laggard_gpu_clock_event_reasons"].push_back(
      Series({{"host", "node-1"}, {"gpu", "0"}}, {{kT0 + kSec, 64}}));
  m["laggard_gpu_sm_clock_max_mhz"].push_back(
      Series({{"host", "node-1"}, {"gpu", "0"}}, {{kT0, 1980}}));
  m["DCGM_FI_DEV_POWER_USAGE"].push_back(
      Series({{"Hostname", "node-1"}, {"gpu", "0"}, {"modelName", "NVIDIA H100"}}, {{kT0, 650}}));
  m["DCGM_FI_DEV_GPU_TEMP"].push_back(Series({{"Hostname", "node-2"}, {"gpu", "3"}}, {{kT0, 60}}));
  laggard::Run run = RunFromSeries(m);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  const GpuRecord* g = run.hardware.Find("node-1", 0);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->uuid, "GPU-abc");
  EXPECT_EQ(g->facts.name, "NVIDIA H100");
  EXPECT_EQ(g->facts.max_sm_clock_mhz, 1980);
  ASSERT_EQ(g->samples.size(), 2u);
  EXPECT_EQ(g->samples[0].power_w, 650);
  EXPECT_EQ(g->samples[1].temp_c, 93);
  EXPECT_EQ(g->samples[1].clock_events, clock_event::kHwThermalSlowdown);
  ASSERT_NE(run.hardware.Find("node-2", 3), nullptr);
}

}  // namespace
}  // namespace laggard
