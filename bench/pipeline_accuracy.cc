// Accuracy of the pipeline detector and the what-if replay on simulated
// 3D-parallel jobs (`laggard simulate --layout`, src/simulator/pipeline_*):
// random layouts and faults, each written as a Megatron-style op timeline,
// diagnosed end to end exactly as `laggard diagnose` does (ingest, every
// detector, the verdict), scored against the simulator's truth.json.
//
//   pipeline_accuracy [--scenarios N] [--seed S] [--keep DIR]
//
// Scenarios: the five classes in turn (none, worker, stage, workload,
// communication), dp 2-8, pp 2-8, tp 1-2, microbatches pp to 2 pp, 8-16
// steps; severities drawn uniformly: slow worker and heavy stage x1.1-1.5,
// sequence-length cv 0.1-0.3, slow link x3-10 (half a stage's DP group,
// half a p2p link between two stages of one replica).
// Scores:
//   class      the verdict's class is the truth's: worker (a rank culprit
//              at the truth's dp and pp; with tp > 1 the TP ranks of one
//              worker move in lockstep, so tp is not asked), stage (a stage
//              culprit at the truth's pp, no rank blamed), workload (a
//              job-wide imbalance culprit), communication (a communication
//              culprit), none (no pipeline finding). A fault whose truth
//              slowdown is < 1.03, the detector's gate, has nothing to find:
//              its expected class is none (counted apart as "below gate").
//              Faults whose truth slowdown is in [1.03, 1.045), just above
//              the gate, are also scored apart: the replay's 1-3% modelling
//              difference from the simulator decides which side they fall.
//   slowdown   |replay slowdown / truth slowdown - 1| <= 5%
// Results go in docs/accuracy.md.

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/analyze_run.h"
#include "bench_child.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "simulator/pipeline/pipeline_sim.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  std::string want_class, got_class;
  std::string spec;
  bool class_ok = false;
  bool below_gate = false;
  bool at_gate = false;  // truth within 1.5 points above the gate: replay noise decides
  double truth_slowdown = 1, replay_slowdown = 0;
  bool slowdown_ok = false;
  std::string got;
};

// The class of a verdict, and whether it names the truth's place.
std::string ClassOf(const Analyses& a, const Verdict& v, const nlohmann::json& culprit,
                    bool* place_ok) {
  *place_ok = false;
  const Finding* f = nullptr;
  for (const Finding& x : a.pipelines.findings) {
    if (x.code != FindingCode::kPipelineNoLayout) f = &x;
  }
  if (f == nullptr) {
    *place_ok = true;
    return "none";
  }
  auto num = [&](const char* k) -> std::optional<int32_t> {
    if (!culprit.contains(k) || !culprit[k].is_number_integer()) return std::nullopt;
    return culprit[k].get<int32_t>();
  };
  const Culprit* c = v.culprits.empty() ? nullptr : &v.culprits.front();
  switch (f->code) {
    case FindingCode::kPipelineSlowWorker:
      *place_ok = c && c->entity.dp_rank == num("dp") && c->entity.pp_stage == num("pp");
      return "worker";
    case FindingCode::kPipelineStageImbalance:
      *place_ok = c && c->entity.pp_stage == num("pp") && !c->entity.rank;
      return "stage";
    case FindingCode::kPipelineWorkloadImbalance:
      *place_ok = c && c->cause_class == CauseClass::kImbalance;
      return "workload";
    case FindingCode::kPipelineSlowCommunication:
      *place_ok = c && c->cause_class == CauseClass::kCommunication;
      return "communication";
    default: return "?";
  }
}

Outcome RunOne(uint64_t seed, int index, const fs::path& dir) {
  std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(index));
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  sim::PipelineScenario sc;
  sc.layout.dp = pick({2, 4, 8});
  sc.layout.pp = pick({2, 4, 8});
  sc.layout.tp = pick({1, 1, 2});
  sc.microbatches = sc.layout.pp + std::uniform_int_distribution<int>(0, sc.layout.pp)(rng);
  sc.steps = pick({8, 12, 16});
  sc.seed = seed * 1000 + static_cast<uint64_t>(index);
  std::string spec;
  switch (index % 5) {
    case 0: spec = "none"; break;
    case 1: spec = fmt::format("slow_worker:{:.3f}", uniform(1.1, 1.5)); break;
    case 2: spec = fmt::format("heavy_stage:{:.3f}", uniform(1.1, 1.5)); break;
    case 3: spec = fmt::format("seqlen:{:.3f}", uniform(0.1, 0.3)); break;
    default: {
      // Half a stage's DP group, half a p2p link between two stages.
      int pp = std::uniform_int_distribution<int>(0, sc.layout.pp - 2)(rng);
      int dp = std::uniform_int_distribution<int>(0, sc.layout.dp - 1)(rng);
      spec = rng() % 2 ? fmt::format("slow_link@pp={}:{:.3f}", pp, uniform(3, 10))
                       : fmt::format("slow_link@dp={},pp={}:{:.3f}", dp, pp, uniform(3, 10));
      break;
    }
  }
  Outcome o;
  o.spec = fmt::format("dp{} pp{} tp{} m{} s{} {}", sc.layout.dp, sc.layout.pp, sc.layout.tp,
                       sc.microbatches, sc.steps, spec);
  auto fault = sim::ParsePipelineFault(spec);
  if (!fault.ok()) {
    o.got = "bad spec: " + fault.status().message();
    return o;
  }
  sc.fault = fault.value();
  fs::remove_all(dir);
  auto written = sim::WritePipelineRun(sc, dir.string());
  if (!written.ok()) {
    o.got = "simulate failed: " + written.status().message();
    return o;
  }
  nlohmann::json truth = nlohmann::json::parse(std::ifstream(dir / "truth.json"));
  o.truth_slowdown = truth.value("slowdown", 1.0);
  o.want_class = truth.value("class", "none");
  if (o.truth_slowdown < 1.03 && o.want_class != "none") {
    o.below_gate = true;
    o.want_class = "none";
  }
  o.at_gate = o.want_class != "none" && o.truth_slowdown < 1.045;
  auto readers = MakeDefaultTextReaders(std::nullopt);
  TraceReaderSet traces = MakeDefaultTraceReaders();
  auto run = Ingest({dir.string()}, readers->readers, IngestOptions(), traces.readers);
  if (!run.ok()) {
    o.got = "ingest failed: " + run.status().message();
    return o;
  }
  Analyses a = AnalyzeRun(*run, AnalysisOptions());
  Verdict v = DecideVerdict(*run, a);
  bool place_ok = false;
  o.got_class = ClassOf(a, v, truth["culprit"], &place_ok);
  o.class_ok = o.got_class == o.want_class && place_ok;
  o.got = v.summary;
  for (const PipelineMetrics& m : a.pipelines.timelines) {
    if (m.whatif) o.replay_slowdown = m.whatif->slowdown;
  }
  o.slowdown_ok =
      o.replay_slowdown > 0 && std::abs(o.replay_slowdown / o.truth_slowdown - 1) <= 0.05;
  return o;
}

int Main(int scenarios, uint64_t seed, const std::string& keep) {
  fs::path base = keep.empty()
                      ? fs::temp_directory_path() / fmt::format("pipeline_acc_{}", getpid())
                      : fs::path(keep);
  fs::create_directories(base);
  std::map<std::string, std::pair<int, int>> by_class;  // want -> (ok, n)
  int ok = 0, slow_ok = 0, below = 0, clear = 0, clear_ok = 0;
  double worst_err = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < scenarios; ++i) {
    Outcome o = RunOne(seed, i, base / fmt::format("run{:03d}", i));
    auto& [c_ok, c_n] = by_class[o.want_class];
    ++c_n;
    c_ok += o.class_ok;
    ok += o.class_ok;
    slow_ok += o.slowdown_ok;
    below += o.below_gate;
    clear += !o.at_gate;
    clear_ok += !o.at_gate && o.class_ok;
    double err = o.replay_slowdown > 0 ? std::abs(o.replay_slowdown / o.truth_slowdown - 1) : 1;
    worst_err = std::max(worst_err, err);
    if (!o.class_ok || !o.slowdown_ok) {
      std::printf(
          "  MISS %3d %-38s want %-13s got %-13s slowdown truth %.4f replay %.4f\n     %s\n", i,
          o.spec.c_str(), o.want_class.c_str(), o.got_class.c_str(), o.truth_slowdown,
          o.replay_slowdown, o.got.c_str());
    }
    if (keep.empty()) fs::remove_all(base / fmt::format("run{:03d}", i));
  }
  if (keep.empty()) fs::remove_all(base);
  double wall = bench::Seconds(t0, std::chrono::steady_clock::now());
  std::printf("\npipeline_accuracy: %d scenarios, seed %lu, %.0f s, peak RSS %ld MB\n", scenarios,
              static_cast<unsigned long>(seed), wall, bench::PeakRssKb() / 1024);
  std::printf("%-14s %8s %8s\n", "class", "right", "runs");
  for (const auto& [cls, r] : by_class) {
    std::printf("%-14s %8d %8d  (%.1f%%)\n", cls.c_str(), r.first, r.second,
                100.0 * r.first / r.second);
  }
  std::printf("class right: %d / %d = %.1f%% (%d faults below the 1.03 gate expected as none)\n",
              ok, scenarios, 100.0 * ok / scenarios, below);
  std::printf(
      "class right away from the gate (truth slowdown not in [1.03, 1.045)): %d / %d = "
      "%.1f%%\n",
      clear_ok, clear, 100.0 * clear_ok / std::max(clear, 1));
  std::printf("slowdown within 5%% of truth: %d / %d = %.1f%%, worst error %.2f%%\n", slow_ok,
              scenarios, 100.0 * slow_ok / scenarios, 100 * worst_err);
  return 0;
}

}  // namespace
}  // namespace laggard

int main(int argc, char** argv) {
  int scenarios = 50;
  uint64_t seed = 1;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--scenarios") scenarios = std::atoi(argv[i + 1]);
    else if (k == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--keep") keep = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (scenarios < 1) return 2;
  return laggard::Main(scenarios, seed, keep);
}
