// Accuracy benchmark: random simulated runs (src/simulator) with one fault
// each (or none), diagnosed end to end exactly as `laggard diagnose` does,
// scored against the simulator's truth.json.
//
//   accuracy [--scenarios M] [--seed S] [--max-nodes N] [--combined F] [--healthy H] [--keep DIR]
//   [--only I]
//
// Scenarios: every fault kind in turn plus healthy controls (one in
// kinds+1), severity drawn log-uniformly from 3% to 50%, 1 to --max-nodes
// (default 128) nodes of 8 GPUs (8 to 1,024 ranks, log-uniform), seed-dependent targets
// and jitter; a share F (default 0.25) of the faulty runs get a second
// fault of another kind. The truth's primary fault (the one that costs the
// job most) is the one to name first; whether the other is named too is
// counted apart. --healthy H adds H more healthy controls after the draw
// (the false-culprit rate needs ~100 of them to say anything about 1%).
// A fault that never acted (the simulator measured no effect
// at all: a GPU that never heated to its slowdown temperature) has nothing
// to find; it is counted in its own row, not in the severity bands. A
// thermal fault's severity is its clock drop at full heat; one whose GPU
// began to throttle late in the run is banded by the slowdown it reached
// (truth.json effect.compute_slowdown), printed next to the nominal one.
// Scores:
//   culprit top-1   the verdict's first culprit is a truth culprit (same
//                   rank, or a group culprit holding it; or same host, and
//                   NIC when the truth names one)
//   cause class     ... and its cause class is the truth's
//   false culprit   a healthy control whose verdict names a culprit
// Two-fault runs: the first culprit may be either fault's (both are real);
// how often it is the primary's, and how often both are named, is printed.
// printed overall and by severity band; results go in docs/accuracy.md.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/analyze_run.h"
#include "bench_child.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "simulator/run_writer.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  std::string kind;
  double severity = 0;
  int ranks = 0;
  bool healthy = false;
  bool culprit_ok = false;
  bool cause_ok = false;
  bool false_culprit = false;
  std::string got;
  std::string want;
  // What the fault cost the job while active (truth.json effect, simulated
  // against a healthy control): job step time / healthy - 1.
  std::optional<double> job_slowdown;
  bool never_acted = false;
  // A thermal fault's severity is the clock drop at full heat; a GPU that
  // began to throttle near the end of the run reached less (truth.json
  // effect.compute_slowdown, the culprit's compute at the end): the bands
  // use what it reached.
  std::optional<double> reached;
  bool combined = false;
  bool second_named = false;    // combined runs: the other fault is a culprit too
  bool first_is_other = false;  // combined runs: the first culprit is the other fault's
  // Culprits naming no fault's entity (a healthy rank or host named beside
  // the right one), and the ranks of group culprits outside every fault's.
  int extra_culprits = 0;
  int extra_group_ranks = 0;
  std::string extra;  // the first one, described
  // The verdict's cost (impact.throughput_lost) beside what the fault cost
  // the job, measured against the healthy control (CostOver).
  std::optional<double> cost_reported, cost_measured;
  std::string cost_method;
};

bool Matches(const Culprit& c, const nlohmann::json& t) {
  if (t.contains("rank") && t["rank"].is_number()) {
    int want = t["rank"].get<int>();
    // A group culprit (one host's ranks, a block) matches when the rank is
    // one of its ranks.
    return (c.entity.rank && *c.entity.rank == want) ||
           std::find(c.ranks.begin(), c.ranks.end(), want) != c.ranks.end();
  }
  if (!t.contains("host") || !t["host"].is_string() || !c.entity.host) return false;
  if (*c.entity.host != t["host"].get<std::string>()) return false;
  if (t.contains("nic") && t["nic"].is_string() && c.entity.nic) {
    return c.entity.nic->rfind(t["nic"].get<std::string>(), 0) == 0;
  }
  return true;
}

// What the faults cost over steps [first, last] of a single-fault run:
// 1 - sum of the healthy control's step times / sum of the run's (truth.json
// step_s, healthy_step_s). The steps are the verdict's own when it says
// which (a figure measured before and after), else the fault's from its
// injection to its end: a periodic fault's cost is spread over its
// periods, as a user pays it. Falls back to effect.step_time_increase (the
// mean while active) for a truth without per-step times.
std::optional<double> CostOver(const nlohmann::json& truth, const nlohmann::json& fault,
                               const Verdict& v) {
  const nlohmann::json& eff = fault["effect"];
  if (!truth.contains("step_s") || !truth.contains("healthy_step_s")) {
    if (!eff["step_time_increase"].is_number()) return std::nullopt;
    return 1 - 1 / (1 + eff["step_time_increase"].get<double>());
  }
  const nlohmann::json& with = truth["step_s"];
  const nlohmann::json& without = truth["healthy_step_s"];
  const int64_t steps = static_cast<int64_t>(std::min(with.size(), without.size()));
  int64_t first = fault.value("injected_step", int64_t{0});
  int64_t last = fault["end_step"].is_number() ? fault["end_step"].get<int64_t>() : steps - 1;
  if ((v.impact_method == ImpactMethod::kBeforeAfter ||
       v.impact_method == ImpactMethod::kSlowSteps) &&
      v.impact_first_step) {
    first = *v.impact_first_step;
    last = v.impact_last_step.value_or(steps - 1);
  }
  first = std::max<int64_t>(first, 1);  // step 0 is warm-up in both
  double a = 0, b = 0;
  for (int64_t s = first; s <= std::min(last, steps - 1); ++s) {
    if (!with[s].is_number() || !without[s].is_number()) continue;
    a += without[s].get<double>();
    b += with[s].get<double>();
  }
  if (b <= 0) return std::nullopt;
  return 1 - a / b;
}

std::string Describe(const Culprit& c) {
  std::string who = c.entity.rank ? fmt::format("rank {}", *c.entity.rank)
                                  : c.entity.host.value_or(c.entity.job ? "job" : "?");
  return fmt::format("{} {}/{}", who, CauseClassName(c.cause_class), c.cause.value_or("-"));
}

Outcome RunOne(const sim::ClusterScenario& sc, const std::string& dir) {
  Outcome o;
  sim::RunOutputOptions out;
  out.trace_steps = 3;
  out.measure_effects = true;  // truth.json gets the fault's measured effect on the job
  fs::remove_all(dir);
  auto written = sim::WriteClusterRun(sc, out, dir);
  if (!written.ok()) {
    o.got = "simulate failed: " + written.status().message();
    return o;
  }
  std::ifstream tf(dir + "/truth.json");
  nlohmann::json truth = nlohmann::json::parse(tf, nullptr, false);
  const nlohmann::json& expected = truth["expected"];
  o.healthy = expected.value("cause_class", "") == "none";
  o.combined = truth.contains("faults") && truth["faults"].size() > 1;
  if (expected.contains("fault_index") && truth.contains("faults")) {
    const nlohmann::json& eff = truth["faults"][expected["fault_index"].get<size_t>()]["effect"];
    if (eff.contains("step_time_increase") && eff["step_time_increase"].is_number()) {
      o.job_slowdown = eff["step_time_increase"].get<double>();
    }
    auto zero = [&](const char* key) {
      return !eff.contains(key) || !eff[key].is_number() || eff[key] == 0.0;
    };
    o.never_acted = zero("compute_slowdown") && zero("comm_slowdown") && zero("host_stall_s") &&
                    o.job_slowdown.value_or(0) < 0.001;
    const nlohmann::json& fault = truth["faults"][expected["fault_index"].get<size_t>()];
    if (fault.value("kind", "") == "thermal" && !zero("compute_slowdown") &&
        eff["compute_slowdown"].get<double>() < fault.value("severity", 0.0)) {
      o.reached = eff["compute_slowdown"].get<double>();
    }
  }

  auto readers = MakeDefaultTextReaders(std::nullopt);
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions ingest;
  ingest.split_jobs = true;  // as laggard diagnose reads: one simulated run is one job
  auto run = Ingest({dir}, readers->readers, ingest, traces.readers);
  if (!run.ok()) {
    o.got = "ingest failed: " + run.status().message();
    return o;
  }
  if (run->jobs.several()) {
    o.got = fmt::format("read as {} jobs", run->jobs.jobs.size());
    return o;
  }
  Analyses a = AnalyzeRun(*run, AnalysisOptions());
  Verdict v = DecideVerdict(*run, a);
  bool blamed = v.status == VerdictStatus::kStraggler && !v.culprits.empty();
  o.got = blamed ? Describe(v.culprits.front()) : std::string(VerdictStatusName(v.status));
  const bool priced = blamed || (v.status == VerdictStatus::kJobWide && !v.culprits.empty());
  if (priced && v.throughput_lost && expected.contains("fault_index") && !o.combined) {
    // What a verdict's "costs x% of throughput" says, over its steps.
    if (auto measured =
            CostOver(truth, truth["faults"][expected["fault_index"].get<size_t>()], v)) {
      o.cost_reported = *v.throughput_lost;
      o.cost_measured = *measured;
      o.cost_method = ImpactMethodName(v.impact_method);
    }
  }
  o.want = fmt::format("{} {}/{}", expected["culprits"].dump(), expected.value("cause_class", ""),
                       expected.value("cause", ""));
  if (o.healthy) {
    o.false_culprit = blamed;
    o.culprit_ok = o.cause_ok = !blamed;
    return o;
  }
  std::string want_class = expected.value("cause_class", "");
  if (expected.value("status", "") == "job_wide" || expected["culprits"].empty()) {
    // Whole-job causes (imbalance, job-wide interference): the class decides.
    o.culprit_ok = !blamed || v.culprits.front().entity.job;
    for (const Culprit& c : v.culprits) o.cause_ok |= CauseClassName(c.cause_class) == want_class;
    o.culprit_ok = o.culprit_ok || o.cause_ok;
    return o;
  }
  if (!blamed) return o;
  for (const nlohmann::json& t : expected["culprits"])
    o.culprit_ok |= Matches(v.culprits.front(), t);
  o.cause_ok = o.culprit_ok && CauseClassName(v.culprits.front().cause_class) == want_class;
  // The other fault of a combined run: a culprit naming one of its
  // entities, or a job culprit of its class for whole-job kinds. The first
  // culprit may be either fault: both are real, and the truth's primary is
  // the one that costs most while active, so a GC pause costing 40% of one
  // step in 50 outranks a stage costing 12% of every step.
  const nlohmann::json& faults = truth["faults"];
  auto names = [&](const Culprit& c, const nlohmann::json& f) {
    const nlohmann::json& cs = f["culprits"];
    if (cs.value("job_wide", false)) return c.entity.job;
    bool hit = false;
    for (const nlohmann::json& r : cs["ranks"]) hit |= Matches(c, {{"rank", r}});
    for (const nlohmann::json& h : cs["hosts"]) {
      if (cs["ranks"].empty()) hit |= Matches(c, {{"host", h}});
    }
    return hit;
  };
  // Named beside the right culprit: any culprit that names no fault.
  std::set<int> fault_ranks;
  std::set<std::string> fault_hosts;
  for (const nlohmann::json& f : faults) {
    for (const nlohmann::json& r : f["culprits"]["ranks"]) fault_ranks.insert(r.get<int>());
    for (const nlohmann::json& h : f["culprits"]["hosts"]) fault_hosts.insert(h.get<std::string>());
  }
  for (const Culprit& c : v.culprits) {
    bool any = false;
    for (const nlohmann::json& f : faults) any |= names(c, f);
    if (!any && !c.entity.job) {
      ++o.extra_culprits;
      if (o.extra.empty()) o.extra = Describe(c);
    }
    if (!fault_ranks.empty()) {
      for (int r : c.ranks) {
        o.extra_group_ranks += fault_ranks.count(r) == 0 &&
                               fault_hosts.count(sim::HostName(r / sc.gpus_per_node)) == 0;
      }
    }
  }
  for (size_t i = 0; o.combined && i < faults.size(); ++i) {
    if (i == expected["fault_index"].get<size_t>()) continue;
    const nlohmann::json& f = faults[i];
    bool acted = f["effect"].value("step_time_increase", 0.0) >= 0.001;
    for (const Culprit& c : v.culprits) {
      o.second_named |= names(c, f) && CauseClassName(c.cause_class) == f.value("cause_class", "");
    }
    if (!o.cause_ok && acted && names(v.culprits.front(), f)) {
      o.culprit_ok = o.first_is_other = true;
      o.cause_ok = CauseClassName(v.culprits.front().cause_class) == f.value("cause_class", "");
    }
  }
  return o;
}

// Severity bands, in order ("0-3%" first).
constexpr const char* kBands[] = {"0-3%", "3-5%", "5-10%", "10-20%", "20-50%", ">=50%"};

int Band(double s) {
  if (s < 0.03) return 0;
  if (s < 0.05) return 1;
  if (s < 0.10) return 2;
  if (s < 0.20) return 3;
  if (s < 0.50) return 4;
  return 5;
}

}  // namespace
}  // namespace laggard

int main(int argc, char** argv) {
  using namespace laggard;
  int scenarios = 60;
  uint64_t seed = 1;
  int max_nodes = 128;
  double combined_share = 0.25;
  int only = -1;  // run scenario I of the draw only (debugging)
  int extra_healthy = 0;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--scenarios") scenarios = std::atoi(argv[i + 1]);
    else if (a == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--max-nodes") max_nodes = std::atoi(argv[i + 1]);
    else if (a == "--keep") keep = argv[i + 1];
    else if (a == "--combined") combined_share = std::atof(argv[i + 1]);
    else if (a == "--only") only = std::atoi(argv[i + 1]);
    else if (a == "--healthy") extra_healthy = std::atoi(argv[i + 1]);
  }
  std::mt19937_64 rng(seed);
  auto kinds = sim::AllFaultKinds();
  std::string base =
      keep.empty() ? (fs::temp_directory_path() / "laggard-accuracy").string() : keep;
  std::map<std::string, std::array<int, 4>> by_kind;  // n, culprit, cause, false
  std::map<int, std::array<int, 4>> by_band, by_effect;
  int n = 0, culprit = 0, cause = 0, healthy = 0, false_culprits = 0, ge5 = 0, ge5_culprit = 0,
      ge5_cause = 0, eff5 = 0, eff5_culprit = 0, eff5_cause = 0, never_acted = 0,
      never_acted_named = 0, extra_runs = 0, extra_group_runs = 0, reached_lower = 0, combined = 0,
      combined_second = 0, combined_other_first = 0, combined_primary_first = 0;
  // Right culprits with a cost: how many, and within 3 points of the
  // measured cost, by impact method.
  std::map<std::string, std::array<int, 2>> cost_by_method;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < scenarios + extra_healthy; ++i) {
    sim::ClusterScenario sc;
    sc.seed = rng();
    // Log-uniform: as many runs of 8-64 ranks as of 128-1,024.
    std::uniform_real_distribution<double> log_nodes(
        0, std::log(static_cast<double>(std::max(1, max_nodes)) + 1));
    sc.nodes = std::clamp(static_cast<int>(std::exp(log_nodes(rng))), 1, std::max(1, max_nodes));
    sc.gpus_per_node = 8;
    sc.steps = 120;
    // After the draw, --healthy N more healthy controls (k == kinds.size()).
    size_t k = i < scenarios ? static_cast<size_t>(i) % (kinds.size() + 1) : kinds.size();
    double severity =
        std::exp(std::uniform_real_distribution<double>(std::log(0.03), std::log(0.5))(rng));
    bool second = std::uniform_real_distribution<double>(0, 1)(rng) < combined_share;
    size_t k2 =
        static_cast<size_t>(std::uniform_int_distribution<size_t>(0, kinds.size() - 2)(rng));
    double severity2 =
        std::exp(std::uniform_real_distribution<double>(std::log(0.03), std::log(0.5))(rng));
    std::string kind = "none";
    if (k < kinds.size()) {
      sim::Fault f;
      f.kind = kinds[k];
      f.severity = severity;
      f.onset_step = 30;
      kind = std::string(sim::FaultKindName(f.kind));
      sc.faults.push_back(f);
      if (second) {
        f.kind = kinds[k2 >= k ? k2 + 1 : k2];  // another kind
        f.severity = severity2;
        f.onset_step = 50;
        kind += "+" + std::string(sim::FaultKindName(f.kind));
        sc.faults.push_back(f);
      }
    }
    // Faults between hosts need two; two faults may need more targets.
    sim::ClusterScenario resolved = sc;
    while (!sim::ResolveScenario(&resolved).ok() && sc.nodes < max_nodes + 2) {
      ++sc.nodes;
      resolved = sc;
    }
    if (!sim::ResolveScenario(&sc).ok() || (only >= 0 && i != only)) continue;
    Outcome o = RunOne(sc, base + "/" + std::to_string(i));
    o.kind = kind;
    o.severity = severity;
    o.ranks = sc.ranks();
    ++n;
    auto& kk = by_kind[o.never_acted ? "(fault never acted)" : o.combined ? "(two faults)" : kind];
    kk[0]++, kk[1] += o.culprit_ok, kk[2] += o.cause_ok, kk[3] += o.false_culprit;
    if (o.healthy) {
      ++healthy;
      false_culprits += o.false_culprit;
    } else if (o.never_acted) {
      ++never_acted;
      never_acted_named += o.culprit_ok;
    } else {
      if (o.combined) {
        ++combined;
        combined_second += o.second_named;
        combined_other_first += o.first_is_other;
        combined_primary_first += o.culprit_ok && !o.first_is_other;
      }
      culprit += o.culprit_ok;
      cause += o.cause_ok;
      extra_runs += o.culprit_ok && o.extra_culprits > 0;
      extra_group_runs += o.culprit_ok && o.extra_group_ranks > 0;
      double sev = o.reached.value_or(severity);
      reached_lower += o.reached && Band(*o.reached) != Band(severity);
      auto& bb = by_band[Band(sev)];
      bb[0]++, bb[1] += o.culprit_ok, bb[2] += o.cause_ok;
      if (sev >= 0.05) ++ge5, ge5_culprit += o.culprit_ok, ge5_cause += o.cause_ok;
      if (o.culprit_ok && o.cost_reported) {
        auto& c = cost_by_method[o.cost_method];
        c[0]++, c[1] += std::abs(*o.cost_reported - *o.cost_measured) <= 0.03;
      }
      if (o.job_slowdown) {
        auto& eb = by_effect[Band(*o.job_slowdown)];
        eb[0]++, eb[1] += o.culprit_ok, eb[2] += o.cause_ok;
        if (*o.job_slowdown >= 0.05) ++eff5, eff5_culprit += o.culprit_ok, eff5_cause += o.cause_ok;
      }
    }
    std::cout << fmt::format(
                     "{:3} {:26} sev {:5.1f}%{} job {:>6} {:5} ranks  {}  got: {}  want: {}", i,
                     kind, 100 * severity,
                     o.reached ? fmt::format(" (reached {:.1f}%)", 100 * *o.reached) : "",
                     o.job_slowdown ? fmt::format("{:+.1f}%", 100 * *o.job_slowdown) : "-", o.ranks,
                     o.healthy       ? (o.false_culprit ? "FALSE " : "ok    ")
                     : o.never_acted ? "NOEFF "
                                     : (o.cause_ok     ? "ok    "
                                        : o.culprit_ok ? "CLASS "
                                                       : "MISS  "),
                     o.got, o.want)
              << (o.cost_reported
                      ? fmt::format("  cost {:.1f}% ({}), measured {:.1f}%", 100 * *o.cost_reported,
                                    o.cost_method, 100 * *o.cost_measured)
                      : "")
              << (o.extra_culprits > 0 ? fmt::format("  EXTRA: {}", o.extra) : "")
              << (o.extra_group_ranks > 0
                      ? fmt::format("  EXTRA group ranks: {}", o.extra_group_ranks)
                      : "")
              << "\n"
              << std::flush;
    if (keep.empty()) fs::remove_all(base + "/" + std::to_string(i));
  }
  double secs = bench::Seconds(t0, std::chrono::steady_clock::now());
  int faulty = n - healthy - never_acted;
  auto pct = [](int a, int b) {
    return b == 0 ? std::string("-") : fmt::format("{:.1f}%", 100.0 * a / b);
  };
  std::cout << fmt::format(
      "\n{} scenarios in {:.1f} s ({} with a fault that acted, {} of them with a second fault; {} "
      "healthy; "
      "{} with a fault that never acted, {} of those named anyway), peak RSS {} MB\n",
      n, secs, faulty, combined, healthy, never_acted, never_acted_named,
      bench::PeakRssKb() / 1024);
  std::cout << fmt::format(
      "thermal faults banded by the slowdown they reached, below their nominal band: {}\n",
      reached_lower);
  for (const auto& [method, c] : cost_by_method) {
    std::cout << fmt::format("cost within 3 points of the measured: {} of {} right culprits ({})\n",
                             c[1], c[0], method);
  }
  std::cout << fmt::format(
      "culprit top-1: {}   cause class: {}   (faults >= 5%: culprit {}, cause {})\n",
      pct(culprit, faulty), pct(cause, faulty), pct(ge5_culprit, ge5), pct(ge5_cause, ge5));
  std::cout << fmt::format(
      "by the job slowdown the fault caused (measured against a healthy control): "
      ">= 5%: culprit {}, cause {} ({} runs)\n",
      pct(eff5_culprit, eff5), pct(eff5_cause, eff5), eff5);
  std::cout << fmt::format(
      "combined runs: the first culprit is the primary fault's in {}, the other fault's in {}; the "
      "other "
      "fault is named too (anywhere) in {}\n",
      pct(combined_primary_first, combined), pct(combined_other_first, combined),
      pct(combined_second, combined));
  std::cout << fmt::format("healthy runs with a false culprit: {}\n", pct(false_culprits, healthy));
  std::cout << fmt::format(
      "right culprit with a healthy rank / host named beside it: {} of {} runs; with a group "
      "culprit holding a healthy rank: {}\n\n",
      extra_runs, faulty, extra_group_runs);
  std::cout << "| severity | runs | culprit | cause |\n|---|---|---|---|\n";
  for (auto& [band, c] : by_band) {
    std::cout << fmt::format("| {} | {} | {} | {} |\n", kBands[band], c[0], pct(c[1], c[0]),
                             pct(c[2], c[0]));
  }
  std::cout << "\n| job slowdown caused | runs | culprit | cause |\n|---|---|---|---|\n";
  for (auto& [band, c] : by_effect) {
    std::cout << fmt::format("| {} | {} | {} | {} |\n", kBands[band], c[0], pct(c[1], c[0]),
                             pct(c[2], c[0]));
  }
  std::cout << "\n| fault | runs | culprit | cause |\n|---|---|---|---|\n";
  for (auto& [kind, c] : by_kind) {
    std::cout << fmt::format("| {} | {} | {} | {} |\n", kind, c[0], pct(c[1], c[0]),
                             pct(c[2], c[0]));
  }
  return 0;
}
