// Tests of the 3D-parallel simulator (src/simulator/pipeline/pipeline_sim.h): the
// 1F1B schedule keeps its invariants (one op at a time on a worker's compute
// thread, a receive never ends before its send starts, the grad-norm
// all-reduce starts together everywhere, a step ends after every
// optimizer), the what-if truth is 1 for a healthy job and grows with a
// fault's factor, a seed gives the same files, and timeline.json.gz has the
// shape of the exporter's real file (compared event by event with the
// corpus copy when /work/shared/corpus is present). Files are read back with
// nlohmann::json, independent of laggard's readers.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cli/run_cli.h"
#include "formats/megatron_timeline.h"
#include "simulator/pipeline/pipeline_sim.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
namespace mt = megatron_timeline;
using nlohmann::json;
using testing_util::ReadFile;
using testing_util::ReadGzip;
using testing_util::TempDir;

struct Simulated {
  sim::PipelineResult result;
  std::vector<std::vector<sim::PipelineEvent>> steps;  // every step's events
};

sim::PipelineScenario Scenario(int dp, int pp, int tp, int microbatches = 8, int steps = 6,
                               const std::string& fault = "") {
  sim::PipelineScenario sc;
  sc.layout = {dp, pp, tp};
  sc.microbatches = microbatches;
  sc.steps = steps;
  sc.seed = 7;
  if (!fault.empty()) {
    auto f = sim::ParsePipelineFault(fault);
    EXPECT_TRUE(f.ok()) << f.status().message();
    if (f.ok()) sc.fault = f.value();
  }
  return sc;
}

Simulated SimulateJob(sim::PipelineScenario sc) {
  Simulated s;
  Status st = sim::ResolvePipelineScenario(&sc);
  EXPECT_TRUE(st.ok()) << st.message();
  auto r = sim::SimulatePipeline(sc, [&](int, std::span<const sim::PipelineEvent> events) {
    s.steps.emplace_back(events.begin(), events.end());
    return Status::Ok();
  });
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (r.ok()) s.result = r.value();
  return s;
}

std::string_view Name(const sim::PipelineEvent& e) { return mt::kOpTypes[e.kind]; }
double End(const sim::PipelineEvent& e) { return e.ts_us + e.dur_us; }
bool IsComputeThread(std::string_view n) {
  return n == mt::kForwardCompute || n == mt::kBackwardCompute || n == mt::kGc ||
         n == mt::kOptimizer;
}

// (rank, op name, seq_id) -> event, of one step.
using EventIndex = std::map<std::tuple<int, std::string_view, int>, sim::PipelineEvent>;
EventIndex Index(const std::vector<sim::PipelineEvent>& events) {
  EventIndex out;
  for (const auto& e : events) out[{e.rank, Name(e), e.seq}] = e;
  return out;
}

constexpr double kEps = 1e-6;

TEST(PipelineScheduleTest, ComputeThreadRunsOneOpAtATime) {
  Simulated s = SimulateJob(Scenario(2, 4, 2, 8, 3, "slow_worker@dp=1,pp=2,tp=1:1.4"));
  ASSERT_EQ(s.steps.size(), 3u);
  for (const auto& events : s.steps) {
    std::map<int, std::vector<sim::PipelineEvent>> by_rank;
    for (const auto& e : events) {
      if (IsComputeThread(Name(e))) by_rank[e.rank].push_back(e);
    }
    ASSERT_EQ(by_rank.size(), 16u);
    for (auto& [rank, ops] : by_rank) {
      EXPECT_EQ(ops.size(), 2u * 8 + 2) << "forward and backward per microbatch, gc, optimizer";
      std::sort(ops.begin(), ops.end(),
                [](const auto& a, const auto& b) { return a.ts_us < b.ts_us; });
      for (size_t i = 1; i < ops.size(); ++i) {
        EXPECT_LE(End(ops[i - 1]), ops[i].ts_us + kEps)
            << "rank " << rank << ": " << Name(ops[i - 1]) << " overlaps " << Name(ops[i]);
      }
    }
  }
}

// The k-th forward-send of stage s is the k-th forward-recv of stage s + 1
// (same replica and tp rank), likewise backward-send (s + 1) and
// backward-recv (s); each carries microbatch k.
TEST(PipelineScheduleTest, RecvEndsNoEarlierThanItsSendStarts) {
  const sim::PipelineLayout l{2, 4, 2};
  const int m = 8;
  Simulated s = SimulateJob(Scenario(l.dp, l.pp, l.tp, m, 2, "slow_link@dp=0,pp=1:4"));
  for (const auto& events : s.steps) {
    EventIndex ix = Index(events);
    int pairs = 0;
    for (int d = 0; d < l.dp; ++d) {
      for (int t = 0; t < l.tp; ++t) {
        for (int st = 0; st + 1 < l.pp; ++st) {
          int lo = sim::GlobalRank(l, {d, st, t}), hi = sim::GlobalRank(l, {d, st + 1, t});
          for (int k = 0; k < m; ++k) {
            const auto& fs = ix.at({lo, mt::kForwardSend, k});
            const auto& fr = ix.at({hi, mt::kForwardRecv, k});
            const auto& bs = ix.at({hi, mt::kBackwardSend, k});
            const auto& br = ix.at({lo, mt::kBackwardRecv, k});
            EXPECT_GE(End(fr), fs.ts_us);
            EXPECT_GE(End(br), bs.ts_us);
            EXPECT_DOUBLE_EQ(fr.ts_us, fs.ts_us) << "one rendezvous: the last peer's arrival";
            EXPECT_DOUBLE_EQ(br.ts_us, bs.ts_us);
            // Data flow: send after the compute that made it, compute after its recv.
            EXPECT_GE(fs.ts_us + kEps, End(ix.at({lo, mt::kForwardCompute, k})));
            EXPECT_GE(ix.at({hi, mt::kForwardCompute, k}).ts_us + kEps, End(fr));
            EXPECT_GE(bs.ts_us + kEps, End(ix.at({hi, mt::kBackwardCompute, k})));
            EXPECT_GE(ix.at({lo, mt::kBackwardCompute, k}).ts_us + kEps, End(br));
            pairs += 2;
          }
        }
      }
    }
    EXPECT_EQ(pairs, l.dp * l.tp * (l.pp - 1) * m * 2);
  }
}

TEST(PipelineScheduleTest, ClipStartsTogetherAndTheStepEndsAfterEveryOptimizer) {
  Simulated s = SimulateJob(Scenario(2, 4, 1, 8, 4, "seqlen:0.2"));
  const auto& steps = s.result.steps;
  ASSERT_EQ(steps.size(), 4u);
  for (size_t k = 0; k < s.steps.size(); ++k) {
    std::set<double> clip_starts;
    double last_optimizer_end = 0, first_ts = 1e300;
    int optimizers = 0;
    for (const auto& e : s.steps[k]) {
      first_ts = std::min(first_ts, e.ts_us);
      if (Name(e) == mt::kOptimizerClipMainGrad) clip_starts.insert(e.ts_us);
      if (Name(e) == mt::kOptimizer) {
        ++optimizers;
        last_optimizer_end = std::max(last_optimizer_end, End(e));
      }
    }
    EXPECT_EQ(clip_starts.size(), 1u) << "step " << k;
    EXPECT_EQ(optimizers, 8);
    EXPECT_GE(first_ts, steps[k].start_us);
    EXPECT_NEAR(steps[k].start_us + steps[k].actual_us, last_optimizer_end, 1e-6);
    for (const auto& e : s.steps[k]) EXPECT_LE(End(e), last_optimizer_end + kEps);
    if (k + 1 < steps.size()) {
      EXPECT_GT(steps[k + 1].start_us, last_optimizer_end);
    }
    ASSERT_TRUE(steps[k].heaviest_dp.has_value());
  }
}

TEST(PipelineTruthTest, HealthyJobSlowsDownByLessThanOnePercent) {
  for (auto [dp, pp, tp] : {std::tuple{2, 4, 1}, std::tuple{4, 4, 2}, std::tuple{1, 1, 1}}) {
    Simulated s = SimulateJob(Scenario(dp, pp, tp, 8, 8));
    EXPECT_NEAR(s.result.slowdown, 1.0, 0.01) << dp << "x" << pp << "x" << tp;
    EXPECT_GE(s.result.slowdown, 0.99);
  }
}

TEST(PipelineTruthTest, SlowdownGrowsWithTheFactor) {
  for (std::string kind : {"heavy_stage@pp=3", "slow_worker@dp=1,pp=1,tp=0"}) {
    double previous = 1.005;
    for (std::string factor : {"1.1", "1.3", "1.6"}) {
      Simulated s = SimulateJob(Scenario(2, 4, 1, 8, 6, kind + ":" + factor));
      EXPECT_GT(s.result.slowdown, previous) << kind << ":" << factor;
      previous = s.result.slowdown;
    }
  }
}

TEST(PipelineTruthTest, EveryFaultClassSlowsTheJob) {
  for (std::string spec : {"seqlen:0.3", "slow_link@dp=0,pp=1:20", "slow_link@pp=0:3"}) {
    Simulated s = SimulateJob(Scenario(2, 4, 1, 8, 6, spec));
    EXPECT_GT(s.result.slowdown, 1.01) << spec;
  }
}

// Stage 2 of 4 ends its backwards two microbatches before stage 0 and has
// no embedding all-reduce: a slower data-parallel group there waits in that
// slack, and the truth says it costs (almost) nothing.
TEST(PipelineTruthTest, SlackHidesASlowGroupOffTheCriticalPath) {
  Simulated s = SimulateJob(Scenario(2, 4, 1, 8, 6, "slow_link@pp=2:3"));
  EXPECT_LT(s.result.slowdown, 1.01);
}

TEST(PipelineTruthTest, AFaultActsFromOnsetToEnd) {
  Simulated s = SimulateJob(Scenario(2, 4, 1, 8, 8, "heavy_stage@pp=0:1.5,onset=3,end=5"));
  const auto& st = s.result.steps;
  for (size_t k = 0; k < st.size(); ++k) {
    bool active = k >= 3 && k <= 5;
    double per_step = st[k].actual_us / st[k].ideal_us;
    if (active) {
      EXPECT_GT(per_step, 1.1) << k;
    } else {
      EXPECT_LT(per_step, 1.05) << k;
    }
  }
}

sim::PipelineRunSummary Write(const std::string& dir, const sim::PipelineScenario& sc) {
  auto summary = sim::WritePipelineRun(sc, dir);
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return summary.ok() ? summary.value() : sim::PipelineRunSummary{};
}

TEST(PipelineWriterTest, SameSeedWritesIdenticalFiles) {
  TempDir a, b, c;
  auto sc = Scenario(2, 2, 2, 4, 3, "slow_worker:1.2");
  Write(a.path(), sc);
  Write(b.path(), sc);
  EXPECT_EQ(ReadGzip(a.File("timeline.json.gz")), ReadGzip(b.File("timeline.json.gz")));
  EXPECT_EQ(ReadFile(a.File("truth.json")), ReadFile(b.File("truth.json")));
  sc.seed = 8;
  Write(c.path(), sc);
  EXPECT_NE(ReadGzip(a.File("timeline.json.gz")), ReadGzip(c.File("timeline.json.gz")));
}

TEST(PipelineWriterTest, TruthNamesTheCulpritOfEachClass) {
  struct Case {
    std::string spec, cls;
    json culprit;
  };
  const std::vector<Case> cases = {
      {"",
       "none",
       {{"dp", nullptr},
        {"pp", nullptr},
        {"tp", nullptr},
        {"link", nullptr},
        {"peer_pp", nullptr}}},
      {"slow_worker@dp=1,pp=2,tp=1:1.3",
       "worker",
       {{"dp", 1}, {"pp", 2}, {"tp", 1}, {"link", nullptr}, {"peer_pp", nullptr}}},
      {"heavy_stage@pp=3:1.25",
       "stage",
       {{"dp", nullptr}, {"pp", 3}, {"tp", nullptr}, {"link", nullptr}, {"peer_pp", nullptr}}},
      {"seqlen:15%",
       "workload",
       {{"dp", nullptr},
        {"pp", nullptr},
        {"tp", nullptr},
        {"link", nullptr},
        {"peer_pp", nullptr}}},
      {"slow_link@dp=0,pp=1:3",
       "communication",
       {{"dp", 0}, {"pp", 1}, {"tp", nullptr}, {"link", "p2p"}, {"peer_pp", 2}}},
      {"slow_link@pp=2,tp=0:3",
       "communication",
       {{"dp", nullptr}, {"pp", 2}, {"tp", 0}, {"link", "dp_group"}, {"peer_pp", nullptr}}},
  };
  for (const Case& c : cases) {
    TempDir dir;
    Write(dir.path(), Scenario(2, 4, 2, 4, 2, c.spec));
    json truth = json::parse(ReadFile(dir.File("truth.json")));
    EXPECT_EQ(truth["schema"], "laggard.sim.truth/pipeline-1");
    EXPECT_EQ(truth["class"], c.cls) << c.spec;
    EXPECT_EQ(truth["culprit"], c.culprit) << c.spec;
    EXPECT_EQ(truth["layout"], json({{"dp", 2}, {"pp", 4}, {"tp", 2}, {"world", 16}}));
    EXPECT_EQ(truth["per_step"].size(), 2u);
    double sum_actual = 0, sum_ideal = 0;
    for (const json& s : truth["per_step"]) {
      sum_actual += s["actual_s"].get<double>();
      sum_ideal += s["ideal_s"].get<double>();
    }
    EXPECT_NEAR(truth["slowdown"].get<double>(), sum_actual / sum_ideal, 1e-4);
  }
}

TEST(PipelineParseTest, FaultSpecs) {
  auto f = sim::ParsePipelineFault("slow_worker@dp=1,pp=2:1.3,onset=5,end=9");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->kind, sim::PipelineFaultKind::kSlowWorker);
  EXPECT_EQ(f->dp, 1);
  EXPECT_EQ(f->pp, 2);
  EXPECT_FALSE(f->tp.has_value());
  EXPECT_DOUBLE_EQ(*f->factor, 1.3);
  EXPECT_EQ(f->onset_step, 5);
  EXPECT_EQ(f->end_step, 9);
  auto seq = sim::ParsePipelineFault("seqlen:15%");
  ASSERT_TRUE(seq.ok());
  EXPECT_DOUBLE_EQ(*seq->factor, 0.15);
  auto link = sim::ParsePipelineFault("slow_link@dp=0,pp=1:3");
  ASSERT_TRUE(link.ok());
  EXPECT_DOUBLE_EQ(*link->factor, 3);
  EXPECT_TRUE(sim::ParsePipelineFault("none").ok());
  for (const char* bad :
       {"slow_gpu@dp=1", "heavy_stage@dp=1", "slow_worker@1", "seqlen@pp=1", "slow_worker:fast",
        "heavy_stage@pp=1:1.2:1.3", "slow_worker,onset=4,end=2"}) {
    EXPECT_FALSE(sim::ParsePipelineFault(bad).ok()) << bad;
  }
  auto l = sim::ParsePipelineLayout("pp=8,dp=32,tp=4");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->world(), 1024);
  EXPECT_FALSE(sim::ParsePipelineLayout("dp=0").ok());
  EXPECT_FALSE(sim::ParsePipelineLayout("ep=2").ok());
}

TEST(PipelineParseTest, TargetsAreCheckedAgainstTheLayout) {
  for (const char* bad : {"slow_worker@dp=2", "heavy_stage@pp=4", "slow_link@dp=0,pp=3"}) {
    auto sc = Scenario(2, 4, 1, 8, 2, bad);
    EXPECT_FALSE(sim::ResolvePipelineScenario(&sc).ok()) << bad;
  }
  auto few = Scenario(2, 4, 1, 3, 2);
  EXPECT_FALSE(sim::ResolvePipelineScenario(&few).ok()) << "fewer microbatches than stages";
  auto drawn = Scenario(2, 4, 2, 8, 2, "slow_worker");
  ASSERT_TRUE(sim::ResolvePipelineScenario(&drawn).ok());
  EXPECT_TRUE(drawn.fault.dp && drawn.fault.pp && drawn.fault.tp);
}

TEST(PipelineCliTest, LayoutWritesTimelineAndTruth) {
  TempDir dir;
  auto r = testing_util::RunCli({"simulate", "--layout", "dp=2,pp=2,tp=1", "--microbatches", "4",
                                 "--steps", "3", "--seed", "3", "--fault",
                                 "slow_worker@dp=1,pp=0:1.5", "-o", dir.path()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("what-if slowdown"), std::string::npos) << r.out;
  json truth = json::parse(ReadFile(dir.File("truth.json")));
  EXPECT_EQ(truth["class"], "worker");
  EXPECT_EQ(truth["steps"], 3);
  EXPECT_EQ(truth["seed"], 3);
  EXPECT_GT(truth["slowdown"].get<double>(), 1.1);
  EXPECT_TRUE(json::accept(ReadGzip(dir.File("timeline.json.gz"))));
  auto bad = testing_util::RunCli(
      {"simulate", "--layout", "dp=2,pp=2", "--fault", "slow_worker@dp=5", "-o", dir.path()});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("outside the layout"), std::string::npos) << bad.err;
  auto mixed =
      testing_util::RunCli({"simulate", "--layout", "dp=2,pp=2", "--nodes", "4", "-o", dir.path()});
  EXPECT_EQ(mixed.rc, 2);
  auto no_layout = testing_util::RunCli({"simulate", "--microbatches", "4", "-o", dir.path()});
  EXPECT_EQ(no_layout.rc, 2);
}

TEST(PipelineCliTest, HelpListsTheLayoutAndItsFaultKinds) {
  auto r = testing_util::RunCli({"simulate", "--help"});
  EXPECT_EQ(r.rc, 0);
  for (const char* want : {"--layout", "--microbatches", "3D-parallel jobs", "slow_worker",
                           "heavy_stage", "seqlen", "slow_link", "slow_link@dp=0,pp=1:3"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
}

// What one X event says, without its times.
using Shape = std::tuple<int, int, std::string, std::string, int, int, int>;
Shape ShapeOf(const json& e) {
  const json& a = e["args"];
  return {e["pid"].get<int>(),         e["tid"].get<int>(),         e["name"].get<std::string>(),
          e["cat"].get<std::string>(), a["model_chunk"].get<int>(), a["mb_id"].get<int>(),
          a["seq_id"].get<int>()};
}

// The X events of one step, in file order, and the batched p2p calls (the
// events of one thread that share ts), as (tid, name, seq_id) pairs.
struct StepShape {
  std::vector<Shape> events;
  std::set<std::vector<std::tuple<int, std::string, int>>> batched;
};
StepShape StepOf(const json& doc, int step) {
  StepShape s;
  std::map<std::pair<int, double>, std::vector<std::tuple<int, std::string, int>>> same_ts;
  for (const json& e : doc) {
    if (e["ph"] != "X" || e["args"]["step"] != step) continue;
    s.events.push_back(ShapeOf(e));
    if (e["tid"].get<int>() % 5 == 1) {
      same_ts[{e["tid"].get<int>(), e["ts"].get<double>()}].push_back(
          {e["tid"].get<int>(), e["name"].get<std::string>(), e["args"]["seq_id"].get<int>()});
    }
  }
  for (auto& [key, events] : same_ts) {
    std::sort(events.begin(), events.end());
    if (events.size() > 1) s.batched.insert(events);
  }
  return s;
}

json WriteCorpusLayout(const TempDir& dir) {
  // The corpus job's layout: dp 2 × pp 4 × tp 1, 4 microbatches per step.
  Write(dir.path(), Scenario(2, 4, 1, 4, 2));
  return json::parse(ReadGzip(dir.File("timeline.json.gz")));
}

TEST(PipelineWriterTest, TimelineIsAChromeTraceOfTheExportersShape) {
  TempDir dir;
  json doc = WriteCorpusLayout(dir);
  ASSERT_TRUE(doc.is_array());
  size_t first_meta = doc.size();
  for (size_t i = 0; i < doc.size(); ++i) {
    const json& e = doc[i];
    if (e["ph"] == "M") {
      first_meta = std::min(first_meta, i);
      continue;
    }
    EXPECT_LT(i, first_meta) << "metadata come after every X event";
    EXPECT_EQ(e.size(), 8u);
    EXPECT_EQ(e["name"], e["cat"]);
    EXPECT_TRUE(e["ts"].is_number_float() && e["dur"].is_number_float());
    EXPECT_GE(e["dur"].get<double>(), 0);
    EXPECT_EQ(e["args"].size(), 4u);
  }
  EXPECT_EQ(doc.size() - first_meta, 8u * 5 * 2 + 2) << "thread_name, sort index; process_name";
  EXPECT_EQ(doc.back(), json({{"name", "process_name"},
                              {"pid", 1},
                              {"ph", "M"},
                              {"args", {{"name", "DP rank [1]"}}}}));
}

// Event by event, the simulated job's step has the real file's shape: the
// same ops on the same threads, with the same args, in the same order, the
// same p2p calls batched, and the same metadata.
TEST(PipelineWriterTest, TimelineMatchesTheCorpusFileOpForOp) {
  fs::path real = fs::path(LAGGARD_CORPUS_DIR) / "megatron_timeline" /
                  "bytedance_StragglerAnalysis_timeline-ST.json.gz";
  if (!fs::exists(real)) {
    GTEST_SKIP() << "shared corpus not found at " << real
                 << "; the shape is still checked by TimelineIsAChromeTraceOfTheExportersShape";
  }
  json want = json::parse(ReadGzip(real.string()));
  TempDir dir;
  json got = WriteCorpusLayout(dir);
  int first_step = want[0]["args"]["step"].get<int>();
  StepShape w = StepOf(want, first_step), g = StepOf(got, 0);
  ASSERT_EQ(g.events.size(), w.events.size());
  for (size_t i = 0; i < w.events.size(); ++i) {
    ASSERT_EQ(g.events[i], w.events[i]) << "X event " << i << " of the step";
  }
  EXPECT_EQ(g.batched, w.batched);
  EXPECT_EQ(g.batched.size(), 24u);
  json want_meta = json::array(), got_meta = json::array();
  for (const json& e : want) {
    if (e["ph"] == "M") want_meta.push_back(e);
  }
  for (const json& e : got) {
    if (e["ph"] == "M") got_meta.push_back(e);
  }
  EXPECT_EQ(got_meta, want_meta);
  std::set<std::vector<std::string>> want_keys, got_keys;
  for (const json* doc : {&want, &got}) {
    for (const json& e : *doc) {
      std::vector<std::string> keys;
      for (auto it = e.begin(); it != e.end(); ++it) keys.push_back(it.key());
      for (auto it = e["args"].begin(); it != e["args"].end(); ++it) keys.push_back(it.key());
      (doc == &want ? want_keys : got_keys).insert(keys);
    }
  }
  EXPECT_EQ(got_keys, want_keys);
}

}  // namespace
}  // namespace laggard
