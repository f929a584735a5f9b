// End-to-end verdicts on simulated runs (src/simulator) for the faults that
// no single rank shows: a host whose CPUs are contended (all its ranks late
// together), a pipeline stage with more work (a block of ranks late
// together), per-step variable work (sequence lengths), and healthy
// controls that must blame no one. Each run is written in the real formats
// (end-to-end step logs, traces of 3 steps, nvidia-smi, network outputs)
// and diagnosed as `laggard diagnose` does.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "simulator/cluster/cluster.h"
#include "simulator/run_writer.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::TempDir;

struct Diagnosis {
  laggard::Run run;
  Analyses a;
  Verdict v;
};

Diagnosis Simulate(const sim::ClusterScenario& in, const TempDir& dir,
                   sim::StepLogFormat steps = sim::StepLogFormat::kArticle) {
  sim::ClusterScenario sc = in;
  EXPECT_TRUE(sim::ResolveScenario(&sc).ok());
  sim::RunOutputOptions out;
  out.step_format = steps;
  out.trace_steps = 3;
  out.measure_effects = false;
  auto written = sim::WriteClusterRun(sc, out, dir.path());
  EXPECT_TRUE(written.ok()) << written.status().message();
  auto readers = MakeDefaultTextReaders(std::nullopt);
  TraceReaderSet traces = MakeDefaultTraceReaders();
  auto run = Ingest({dir.path()}, readers->readers, IngestOptions(), traces.readers);
  EXPECT_TRUE(run.ok());
  Diagnosis d;
  d.run = std::move(run).value();
  d.a = AnalyzeRun(d.run, AnalysisOptions());
  d.v = DecideVerdict(d.run, d.a);
  return d;
}

sim::ClusterScenario Scenario(uint64_t seed, int nodes, sim::FaultKind kind, double severity) {
  sim::ClusterScenario sc;
  sc.seed = seed;
  sc.nodes = nodes;
  sc.gpus_per_node = 8;
  sc.steps = 60;
  if (kind != sim::FaultKind::kNone) {
    sim::Fault f;
    f.kind = kind;
    f.severity = severity;
    f.onset_step = 10;
    sc.faults.push_back(f);
  }
  return sc;
}

const Finding* Find(const std::vector<Finding>& fs, FindingCode code) {
  for (const Finding& f : fs) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

TEST(VerdictScenarioTest, ContendedHostIsNamedWithAllItsRanksAsAHostStall) {
  sim::ClusterScenario sc = Scenario(7, 4, sim::FaultKind::kHostCpuContention, 0.15);
  sc.faults[0].target.kind = sim::FaultTarget::Kind::kHost;
  sc.faults[0].target.node = 2;
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  const Finding* g = Find(d.a.traces.findings, FindingCode::kTraceLateGroup);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->entity.host, "node-02");
  EXPECT_EQ(g->pattern, Pattern::kHost);
  EXPECT_EQ(g->cause, "host_stall");
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  const Culprit& c = d.v.culprits.front();
  EXPECT_EQ(c.cause_class, CauseClass::kHostStall) << d.v.summary;
  EXPECT_EQ(c.entity.host, "node-02");
  EXPECT_EQ(c.ranks, (std::vector<int32_t>{16, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_NE(d.v.summary.find("node-02 (ranks 16-23) are the stragglers"), std::string::npos)
      << d.v.summary;
}

TEST(VerdictScenarioTest, ContendedHostAmongManyIsNamedByItsIdleGpusEvenWhenOneRankIsLast) {
  // 23 hosts: a 9.5% contention makes node-22's ranks idle ~50 ms per step
  // each, but they catch up at different collectives, so by lateness one of
  // them looks like a lone late rank. Every rank of that host idles, no
  // other host's does: the host is the culprit.
  sim::ClusterScenario sc = Scenario(21, 23, sim::FaultKind::kHostCpuContention, 0.095);
  sc.faults[0].target.kind = sim::FaultTarget::Kind::kHost;
  sc.faults[0].target.node = 22;
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  const Finding* g = Find(d.a.traces.findings, FindingCode::kTraceLateGroup);
  ASSERT_NE(g, nullptr) << d.v.summary;
  EXPECT_EQ(g->entity.host, "node-22");
  EXPECT_EQ(g->cause, "host_stall");
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  EXPECT_EQ(d.v.culprits.front().entity.host, "node-22") << d.v.summary;
  EXPECT_EQ(d.v.culprits.front().cause_class, CauseClass::kHostStall) << d.v.summary;
}

TEST(VerdictScenarioTest, SlowerPipelineStageIsABlockWithImbalance) {
  // 2 nodes x 8 GPUs in 4 stages: stage 1 is ranks 4-7, half of node-00.
  sim::ClusterScenario sc = Scenario(11, 2, sim::FaultKind::kPipelineStageImbalance, 0.2);
  sc.faults[0].target.kind = sim::FaultTarget::Kind::kStage;
  sc.faults[0].target.stage = 1;
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  const Finding* g = Find(d.a.traces.findings, FindingCode::kTraceLateGroup);
  ASSERT_NE(g, nullptr) << d.v.summary;
  EXPECT_EQ(g->ranks, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(g->pattern, Pattern::kBlock);
  EXPECT_EQ(g->cause, "slow_kernels");
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  EXPECT_EQ(d.v.culprits.front().cause_class, CauseClass::kImbalance) << d.v.summary;
  EXPECT_LE(d.v.culprits.front().confidence, 0.6);
}

TEST(VerdictScenarioTest, SlightlyHeavierStageAmongHundredsOfRanksIsFoundByItsCompute) {
  // 25 nodes x 8 GPUs in 4 stages of 50 ranks: stage 1 (ranks 50-99) does
  // ~6% more work. Its ranks arrive ~9 ms late, inside the +-4 ms jitter of
  // 200 ranks' arrivals, but their compute per step splits from the rest.
  sim::ClusterScenario sc = Scenario(13, 25, sim::FaultKind::kPipelineStageImbalance, 0.063);
  sc.faults[0].target.kind = sim::FaultTarget::Kind::kStage;
  sc.faults[0].target.stage = 1;
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  const Finding* g = Find(d.a.traces.findings, FindingCode::kTraceLateGroup);
  ASSERT_NE(g, nullptr) << d.v.summary;
  ASSERT_FALSE(g->ranks.empty());
  EXPECT_GE(g->ranks.front(), 48);
  EXPECT_LE(g->ranks.front(), 52);
  EXPECT_GE(g->ranks.back(), 97);
  EXPECT_LE(g->ranks.back(), 101);
  EXPECT_EQ(g->pattern, Pattern::kBlock);
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  EXPECT_EQ(d.v.culprits.front().cause_class, CauseClass::kImbalance) << d.v.summary;
}

TEST(VerdictScenarioTest, PerStepVariableWorkIsJobWideImbalance) {
  TempDir dir;
  Diagnosis d = Simulate(Scenario(5, 4, sim::FaultKind::kSequenceLengthImbalance, 0.2), dir);
  const Finding* vw = Find(d.a.traces.findings, FindingCode::kTraceVariableWork);
  ASSERT_NE(vw, nullptr) << d.v.summary;
  EXPECT_EQ(d.v.status, VerdictStatus::kJobWide) << d.v.summary;
  ASSERT_FALSE(d.v.culprits.empty());
  EXPECT_TRUE(d.v.culprits.front().entity.job);
  EXPECT_EQ(d.v.culprits.front().cause_class, CauseClass::kImbalance);
}

TEST(VerdictScenarioTest, DegradedNicAndVariableWorkAreBothNamed) {
  // Two problems at once: sequence lengths varying 20% and a NIC at a
  // quarter of its rate. The NIC is a host culprit; the variable work stays
  // as a job-wide imbalance culprit instead of being dropped.
  sim::ClusterScenario sc = Scenario(8, 6, sim::FaultKind::kSequenceLengthImbalance, 0.2);
  sim::Fault nic;
  nic.kind = sim::FaultKind::kNicDegraded;
  nic.severity = 0.3;
  nic.onset_step = 10;
  nic.target.kind = sim::FaultTarget::Kind::kNic;
  nic.target.node = 3;
  nic.target.index = 0;
  sc.faults.push_back(nic);
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  ASSERT_NE(Find(d.a.traces.findings, FindingCode::kTraceVariableWork), nullptr) << d.v.summary;
  bool host = false, job = false;
  for (const Culprit& c : d.v.culprits) {
    host |= c.entity.host == "node-03" && c.cause_class == CauseClass::kCommunication;
    job |= c.entity.job && c.cause_class == CauseClass::kImbalance;
  }
  EXPECT_TRUE(host) << d.v.summary;
  EXPECT_TRUE(job) << d.v.summary;
}

// A NIC that lost half its rate at step 30 of 100: ibstat names it, no
// step time or trace does, and the job's own step times price it: the
// level they rose to at step 30 against the one before.
TEST(VerdictScenarioTest, ALinkThatDegradedMidRunIsPricedByTheStepsBeforeAndAfter) {
  sim::ClusterScenario sc = Scenario(21, 5, sim::FaultKind::kNone, 0);
  sc.steps = 100;
  sim::Fault nic;
  nic.kind = sim::FaultKind::kNicDegraded;
  nic.severity = 0.3;
  nic.onset_step = 30;
  nic.target.kind = sim::FaultTarget::Kind::kNic;
  nic.target.node = 4;
  nic.target.index = 0;
  sc.faults.push_back(nic);
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  EXPECT_EQ(d.v.culprits.front().entity.host, "node-04") << d.v.summary;
  ASSERT_TRUE(d.a.steps.job.level_shift.has_value()) << d.v.summary;
  const LevelShift& shift = *d.a.steps.job.level_shift;
  EXPECT_NEAR(static_cast<double>(shift.first_step), 30, 2);
  ASSERT_TRUE(d.v.throughput_lost.has_value()) << d.v.summary;
  EXPECT_EQ(d.v.impact_method, ImpactMethod::kBeforeAfter);
  EXPECT_NEAR(*d.v.throughput_lost, 1 - shift.before_s / shift.during_s, 1e-9);
  EXPECT_GT(*d.v.throughput_lost, 0.02);
  EXPECT_NE(d.v.summary.find(fmt::format("since step {}", shift.first_step)), std::string::npos)
      << d.v.summary;
}

TEST(VerdictScenarioTest, ADegradedNicOfASingleHostJobIsNoCulpritButTheHeavierStageIs) {
  // Eight ranks on one host: NCCL never crosses its NICs, so a NIC at half
  // rate slows nothing (it stays a finding); the first pipeline stage
  // computing 40% more holds the job up. With two hosts the same NIC is a culprit.
  auto scenario = [](int nodes) {
    sim::ClusterScenario sc = Scenario(93, nodes, sim::FaultKind::kPipelineStageImbalance, 0.4);
    sc.faults[0].target.kind = sim::FaultTarget::Kind::kStage;
    sc.faults[0].target.stage = 0;
    sim::Fault nic;
    nic.kind = sim::FaultKind::kNicDegraded;
    nic.severity = 0.5;
    nic.onset_step = 10;
    nic.target.kind = sim::FaultTarget::Kind::kNic;
    nic.target.node = 0;
    nic.target.index = 1;
    sc.faults.push_back(nic);
    return sc;
  };
  TempDir dir;
  Diagnosis d = Simulate(scenario(1), dir);
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  ASSERT_NE(Find(d.a.network.findings, FindingCode::kNetLinkDegraded), nullptr) << d.v.summary;
  for (const Culprit& c : d.v.culprits)
    EXPECT_NE(c.cause_class, CauseClass::kCommunication) << d.v.summary;
  EXPECT_EQ(d.v.culprits.front().cause_class, CauseClass::kImbalance) << d.v.summary;
  TempDir dir2;
  Diagnosis two = Simulate(scenario(2), dir2);
  bool nic_named = false;
  for (const Culprit& c : two.v.culprits)
    nic_named |= c.cause_class == CauseClass::kCommunication && c.entity.host == "node-00";
  EXPECT_TRUE(nic_named) << two.v.summary;
}

TEST(VerdictScenarioTest, SmallComputeSlowdownAmongManyRanksIsFoundByComputeTime) {
  // +6% work on one GPU of 64: late by less than the arrival jitter of 64
  // ranks, but its compute per step stands out in every profiled step.
  sim::ClusterScenario sc = Scenario(3, 8, sim::FaultKind::kSlowKernel, 0.06);
  sc.faults[0].target.kind = sim::FaultTarget::Kind::kGpu;
  sc.faults[0].target.node = 5;
  sc.faults[0].target.index = 2;
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  EXPECT_EQ(d.v.culprits.front().entity.rank, 42) << d.v.summary;
  EXPECT_EQ(d.v.culprits.front().cause_class, CauseClass::kComputeSlow) << d.v.summary;
  const Finding* slow = Find(d.a.traces.findings, FindingCode::kTraceComputeSlow);
  ASSERT_NE(slow, nullptr);
  EXPECT_NEAR(*slow->slowdown, 0.06, 0.02);
}

TEST(VerdictScenarioTest, PeriodicPauseOutsideTheTracesIsNamedByItsLoneUtilisationDips) {
  // A GC-like pause on rank 13 every 20 steps; the traces (the last 3
  // steps) miss every pause and step times are synchronised. Its GPU alone
  // drops in utilisation at the pauses while the others spin in NCCL.
  sim::ClusterScenario sc = Scenario(9, 4, sim::FaultKind::kPeriodicInterference, 0.3);
  sc.faults[0].target.kind = sim::FaultTarget::Kind::kRank;
  sc.faults[0].target.rank = 13;
  sc.faults[0].period_steps = 20;
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  EXPECT_EQ(d.a.steps.job.spike_steps, (std::vector<int64_t>{10, 30, 50}));
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  const Culprit& c = d.v.culprits.front();
  EXPECT_EQ(c.entity.rank, 13) << d.v.summary;
  EXPECT_EQ(c.cause_class, CauseClass::kHostStall);
  EXPECT_LE(c.confidence, 0.5);
  ASSERT_EQ(c.evidence.size(), 2u);
  EXPECT_NE(c.evidence[1].find("3 isolated steps (10, 30, 50)"), std::string::npos)
      << c.evidence[1];
  // Priced by its pauses: their extra seconds over all the job's since the
  // first pause, against the spikes' own excess over the median step.
  ASSERT_TRUE(d.v.throughput_lost.has_value()) << d.v.summary;
  EXPECT_EQ(d.v.impact_method, ImpactMethod::kSlowSteps);
  EXPECT_EQ(d.v.impact_first_step, 10);
  const double base = *d.a.steps.job.median_step_s;
  double extra = 0;
  for (double x : d.a.steps.job.spike_excess) extra += x * base;
  // Steps 10-54 at about the median each: Scenario() runs 60, and the
  // profiled steps 57-59 with their 2 warm-up steps are left out.
  EXPECT_NEAR(*d.v.throughput_lost, extra / (45 * base + extra), 0.001);
  EXPECT_NE(d.v.summary.find("of job throughput since step 10 (its slow steps' extra time)"),
            std::string::npos)
      << d.v.summary;
}

// A power cap set at step 15 and lifted after step 35: the traces (the
// last 3 steps) see a healthy job and step times are synchronised. The job's
// slowdown began when GPU 5 of node-01's limit was lowered: with timestamped
// step logs that names rank 13; without times, the verdict says what to log.
TEST(VerdictScenarioTest, ACapLiftedBeforeTheTracesIsNamedByTheSlowdownItsOnsetStarted) {
  sim::ClusterScenario sc = Scenario(4, 4, sim::FaultKind::kPowerCap, 0.5);
  sc.faults[0].target.kind = sim::FaultTarget::Kind::kRank;
  sc.faults[0].target.rank = 13;
  sc.faults[0].onset_step = 15;
  sc.faults[0].end_step = 35;
  TempDir dir;
  Diagnosis d = Simulate(sc, dir, sim::StepLogFormat::kCsv);
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  const Culprit& c = d.v.culprits.front();
  EXPECT_EQ(c.entity.rank, 13) << d.v.summary;
  EXPECT_EQ(c.cause, "power_cap");
  EXPECT_EQ(c.cause_class, CauseClass::kComputeSlow);
  EXPECT_NEAR(c.confidence, kSingleSourceCap, 1e-9);
  ASSERT_GE(c.evidence.size(), 3u);
  EXPECT_NE(c.evidence[0].find("lowered from 700 W to"), std::string::npos) << c.evidence[0];
  EXPECT_NE(c.evidence[1].find("the whole job slowed in steps 15-"), std::string::npos)
      << c.evidence[1];
  EXPECT_NE(c.evidence[2].find("outside that slowdown"), std::string::npos) << c.evidence[2];
  EXPECT_EQ(d.run.diagnostics.count(DiagCode::kHwConflictingFacts), 0u);

  TempDir untimed_dir;
  Diagnosis untimed = Simulate(sc, untimed_dir, sim::StepLogFormat::kArticle);
  EXPECT_EQ(untimed.v.status, VerdictStatus::kInconclusive) << untimed.v.summary;
  EXPECT_NE(untimed.v.summary.find("outside the slowdown"), std::string::npos) << untimed.v.summary;
  bool asks = std::any_of(untimed.v.next_steps.begin(), untimed.v.next_steps.end(),
                          [](const std::string& s) {
                            return s.find("log a timestamp with each step") != std::string::npos &&
                                   s.find("GPU 5 of node-01's power_cap") != std::string::npos;
                          });
  EXPECT_TRUE(asks) << fmt::format("{}", fmt::join(untimed.v.next_steps, "\n"));
}

TEST(VerdictScenarioTest, ShortPauseIsNamedOncePerPauseAcrossDmonAndQueryLogs) {
  // A pause of 7% of a step: the job's step grows ~5%, within the article's
  // noise band, and its GPU's 1 s sample reads ~94% instead of 100%. dmon
  // and --query-gpu both see the same moment: one pause, not two.
  sim::ClusterScenario sc = Scenario(11, 6, sim::FaultKind::kPeriodicInterference, 0.07);
  sc.faults[0].target.kind = sim::FaultTarget::Kind::kRank;
  sc.faults[0].target.rank = 21;
  sc.faults[0].period_steps = 20;
  TempDir dir;
  Diagnosis d = Simulate(sc, dir);
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  const Culprit& c = d.v.culprits.front();
  EXPECT_EQ(c.entity.rank, 21) << d.v.summary;
  EXPECT_EQ(c.cause_class, CauseClass::kHostStall);
  ASSERT_EQ(c.evidence.size(), 2u);
  size_t spikes = d.a.steps.job.spike_steps.size();
  EXPECT_GE(spikes, 2u);
  EXPECT_NE(c.evidence[0].find(fmt::format("utilisation {} times", spikes)), std::string::npos)
      << c.evidence[0];
}

TEST(VerdictScenarioTest, SmallPerStepVariableWorkIsStillImbalance) {
  // Sequence lengths varying by a few percent: above fixed-shape jitter.
  TempDir dir;
  Diagnosis d = Simulate(Scenario(6, 8, sim::FaultKind::kSequenceLengthImbalance, 0.04), dir);
  const Finding* vw = Find(d.a.traces.findings, FindingCode::kTraceVariableWork);
  ASSERT_NE(vw, nullptr) << d.v.summary;
  EXPECT_EQ(d.v.status, VerdictStatus::kJobWide) << d.v.summary;
}

TEST(VerdictScenarioTest, CongestedSwitchIsNamedByItsHostsPortCounters) {
  TempDir dir;
  sim::ClusterScenario sc = Scenario(7, 12, sim::FaultKind::kSharedSwitchCongestion, 0.3);
  Diagnosis d = Simulate(sc, dir);
  const Finding* f = Find(d.a.network.findings, FindingCode::kNetSharedSwitch);
  ASSERT_NE(f, nullptr) << d.v.summary;
  EXPECT_EQ(f->pattern, Pattern::kPortCounters);
  ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << d.v.summary;
  const Culprit& top = d.v.culprits.front();
  EXPECT_EQ(top.cause_class, CauseClass::kExternal);
  EXPECT_EQ(top.cause, "shared_switch");
  ASSERT_TRUE(top.entity.switch_name.has_value());
  // The truth's switch: the fault's nodes are one leaf of switch-map.csv.
  sc.faults.front().target = {};
  ASSERT_TRUE(sim::ResolveScenario(&sc).ok());
  const auto& nodes = sc.faults.front().target.nodes;
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(top.entity.host, fmt::format("node-{:02d}", nodes.front()));
}

TEST(VerdictScenarioTest, LateRankTooLittleToBlameAloneIsNamedByItsGpuClocks) {
  // Clocks locked 5% low on GPU 1 of node-02 (rank 17). In some draws its
  // rank is last by a margin too small to blame on arrival order alone
  // (< 3% of the profile, kernels within the 1.05 ratio): then its GPU's
  // SM clock names it. Over 16 seeds at least one such draw must occur.
  int unexplained = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    sim::ClusterScenario sc = Scenario(seed, 4, sim::FaultKind::kClocksLocked, 0.05);
    sc.faults[0].target.kind = sim::FaultTarget::Kind::kGpu;
    sc.faults[0].target.node = 2;
    sc.faults[0].target.index = 1;
    TempDir dir;
    Diagnosis d = Simulate(sc, dir);
    const Finding* late = Find(d.a.traces.findings, FindingCode::kTraceLateArrival);
    if (late == nullptr || late->severity != Severity::kInfo || late->entity.rank != 17) continue;
    ++unexplained;
    ASSERT_EQ(d.v.status, VerdictStatus::kStraggler) << "seed " << seed << ": " << d.v.summary;
    EXPECT_EQ(d.v.culprits.front().entity.rank, 17) << "seed " << seed << ": " << d.v.summary;
    EXPECT_EQ(d.v.culprits.front().cause_class, CauseClass::kComputeSlow)
        << "seed " << seed << ": " << d.v.summary;
  }
  EXPECT_GE(unexplained, 1);
}

TEST(VerdictScenarioTest, HealthyRunsBlameNoGroupAndNoRank) {
  for (uint64_t seed : {1u, 2u, 3u, 4u}) {
    TempDir dir;
    Diagnosis d =
        Simulate(Scenario(seed, 2 + static_cast<int>(seed % 3), sim::FaultKind::kNone, 0), dir);
    EXPECT_EQ(Find(d.a.traces.findings, FindingCode::kTraceLateGroup), nullptr) << "seed " << seed;
    EXPECT_EQ(Find(d.a.traces.findings, FindingCode::kTraceVariableWork), nullptr)
        << "seed " << seed;
    EXPECT_NE(d.v.status, VerdictStatus::kStraggler) << "seed " << seed << ": " << d.v.summary;
    EXPECT_EQ(Find(d.a.network.findings, FindingCode::kNetSharedSwitch), nullptr)
        << "seed " << seed;
  }
}

}  // namespace
}  // namespace laggard
