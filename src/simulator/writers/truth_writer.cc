// truth.json: what the simulator injected and what it did, measured against
// the same seed without faults. Schema "laggard.sim.truth/1", documented in
// docs/simulator.md. Written by the simulator alone: nothing in it comes from
// laggard's detectors.

#include <cmath>

#include <nlohmann/json.hpp>

#include "formats/sim_truth.h"
#include "simulator/writers/writers.h"

namespace laggard::sim {
namespace {

using Json = nlohmann::ordered_json;

std::string Cause(const Fault& f) {
  if (f.kind == FaultKind::kPeriodicInterference)
    return f.cause == "checkpoint" ? "checkpoint" : "gc_pause";
  return std::string(FaultKindName(f.kind));
}

Json NumberOrNull(double v) {
  return std::isfinite(v) ? Json(std::round(v * 1e4) / 1e4) : Json(nullptr);
}

template <typename T>
Json OptionalOrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// The fault whose effect on the job is largest.
std::optional<size_t> Primary(const ClusterRun& run) {
  std::optional<size_t> best;
  const auto& faults = run.scenario().faults;
  for (size_t i = 0; i < faults.size(); ++i) {
    if (faults[i].kind == FaultKind::kNone) continue;
    if (!best ||
        run.effects()[i].step_time_increase > run.effects()[*best].step_time_increase + 1e-9)
      best = i;
  }
  return best;
}

Json Culprits(const ClusterRun& run, const Fault& f) {
  const ClusterScenario& sc = run.scenario();
  FaultEntities e = EntitiesOf(sc, f);
  Json out = Json::array();
  int g = sc.gpus_per_node;
  if (!e.ranks.empty()) {
    for (int r : e.ranks) {
      out.push_back({{"rank", r}, {"host", HostName(r / g)}, {"gpu", r % g}, {"nic", nullptr}});
    }
  } else if (!e.nics.empty()) {
    for (auto [n, i] : e.nics) {
      out.push_back({{"rank", nullptr},
                     {"host", HostName(n)},
                     {"gpu", nullptr},
                     {"nic", fmt::format("mlx5_{}", i)}});
    }
  } else {
    for (int n : e.nodes)
      out.push_back({{"rank", nullptr}, {"host", HostName(n)}, {"gpu", nullptr}, {"nic", nullptr}});
  }
  return out;
}

}  // namespace

std::string Headline(const ClusterRun& run) {
  const ClusterScenario& sc = run.scenario();
  std::vector<std::string> parts;
  for (const Fault& f : sc.faults) {
    if (f.kind == FaultKind::kNone) continue;
    parts.push_back(fmt::format("{}@{}:{}", FaultKindName(f.kind), DescribeTarget(sc, f.target),
                                f.severity.value_or(DefaultSeverity(f.kind))));
  }
  if (parts.empty()) return "no fault (healthy control)";
  return fmt::format("{}", fmt::join(parts, ", "));
}

namespace {

// truth.json's entry for fault `i` of the run's scenario: what was injected,
// on which entities, and the effect it had.
Json FaultJson(const ClusterRun& run, size_t i) {
  const ClusterScenario& sc = run.scenario();
  const int g = sc.gpus_per_node;
  const Fault& f = sc.faults[i];
  const FaultEffect& eff = run.effects()[i];
  FaultEntities e = EntitiesOf(sc, f);
  Json j;
  j["kind"] = std::string(FaultKindName(f.kind));
  j["spec"] = f.spec;
  j["target"] = DescribeTarget(sc, f.target);
  j["cause_class"] = std::string(CauseClassWord(f.kind));
  j["cause"] = f.kind == FaultKind::kNone ? "none" : Cause(f);
  j["severity"] = f.kind == FaultKind::kNone ? 0.0 : f.severity.value_or(DefaultSeverity(f.kind));
  Json ent;
  ent["ranks"] = e.ranks;
  Json hosts = Json::array();
  for (int n : e.nodes) hosts.push_back(HostName(n));
  ent["hosts"] = hosts;
  Json gpus = Json::array();
  for (auto [n, gi] : e.gpus) {
    gpus.push_back({{"host", HostName(n)},
                    {"gpu", gi},
                    {"uuid", run.gpu_uuids()[static_cast<size_t>(n * g + gi)]}});
  }
  ent["gpus"] = gpus;
  Json nics = Json::array();
  for (auto [n, ni] : e.nics)
    nics.push_back({{"host", HostName(n)}, {"nic", fmt::format("mlx5_{}", ni)}});
  ent["nics"] = nics;
  if (f.kind == FaultKind::kSharedSwitchCongestion) {
    const auto& sw = run.switches();
    for (size_t s = 0; s < sw.size(); ++s) {
      if (!e.nodes.empty() &&
          std::find(sw[s].begin(), sw[s].end(), e.nodes.front()) != sw[s].end()) {
        ent["switch"] = fmt::format("leaf-{:02d}", s);
      }
    }
  } else {
    ent["switch"] = nullptr;
  }
  ent["job_wide"] = e.job_wide;
  j["culprits"] = ent;
  j["injected_step"] = f.onset_step;
  j["onset_step"] = OptionalOrNull(eff.effect_onset_step);
  if (eff.effect_onset_step && run.has_steps()) {
    j["onset_time_ns"] = run.step_start_ns(0, *eff.effect_onset_step);
  } else {
    j["onset_time_ns"] = nullptr;
  }
  j["end_step"] = OptionalOrNull(f.end_step);
  j["period_steps"] = OptionalOrNull(f.period_steps);
  j["duration_steps"] = f.period_steps ? Json(f.duration_steps) : Json(nullptr);
  j["effect"] = {{"compute_slowdown", NumberOrNull(eff.compute_slowdown)},
                 {"comm_slowdown", NumberOrNull(eff.comm_slowdown)},
                 {"host_stall_s", NumberOrNull(eff.host_stall_s)},
                 {"step_time_increase", NumberOrNull(eff.step_time_increase)}};
  j["hardware"] = {
      {"temp_c", NumberOrNull(eff.temp_c)},
      {"sm_clock_mhz", NumberOrNull(eff.sm_clock_mhz)},
      {"power_limit_w", NumberOrNull(eff.power_limit_w)},
      {"pcie_width", eff.pcie_width > 0 ? Json(eff.pcie_width) : Json(nullptr)},
      {"nvlinks_active", eff.nvlinks_active >= 0 ? Json(eff.nvlinks_active) : Json(nullptr)},
      {"nic_rate_gbps", NumberOrNull(eff.nic_rate_gbps)}};
  return j;
}

}  // namespace

Status WriteTruth(const RunContext& ctx, uint64_t* bytes, int* files) {
  const ClusterRun& run = ctx.run;
  const ClusterScenario& sc = run.scenario();
  int g = sc.gpus_per_node;
  Json t;
  t["schema"] = formats::kSimTruthSchema;
  t["seed"] = sc.seed;
  t["nodes"] = sc.nodes;
  t["gpus_per_node"] = g;
  t["ranks"] = sc.ranks();
  t["steps"] = sc.steps;
  t["start_time_ns"] = ctx.job_start_ns;
  t["end_time_ns"] = ctx.job_end_ns;
  t["mean_step_s"] = NumberOrNull(run.mean_step_s());
  t["healthy_mean_step_s"] = NumberOrNull(run.healthy_mean_step_s());
  t["step_time_increase"] = NumberOrNull(
      run.healthy_mean_step_s() > 0 ? run.mean_step_s() / run.healthy_mean_step_s() - 1 : 0);
  if (!run.step_s().empty() && run.step_s().size() == run.healthy_step_s().size()) {
    Json with = Json::array(), without = Json::array();
    for (size_t i = 0; i < run.step_s().size(); ++i) {
      with.push_back(NumberOrNull(run.step_s()[i]));
      without.push_back(NumberOrNull(run.healthy_step_s()[i]));
    }
    t["step_s"] = std::move(with);
    t["healthy_step_s"] = std::move(without);
  }
  t["step_timing"] = ctx.opt.step_timing == StepTiming::kCompute ? "compute" : "end_to_end";
  if (run.trace_first_step()) {
    t["trace_window"] = {{"first_step", *run.trace_first_step()}, {"steps", run.trace_steps()}};
    // Which ranks wrote a trace, when not all (absent: every rank).
    if (!ctx.opt.trace_ranks.empty()) t["trace_window"]["ranks"] = ctx.opt.trace_ranks;
  } else {
    t["trace_window"] = nullptr;
  }
  t["clock_offset_convention"] = "host_time = true_time + offset";
  Json offsets = Json::object();
  for (int n = 0; n < sc.nodes; ++n)
    offsets[HostName(n)] = run.clock_offsets_ns()[static_cast<size_t>(n)];
  t["clock_offsets_ns"] = offsets;

  Json expected;
  std::optional<size_t> primary = Primary(run);
  if (!primary) {
    expected = {{"status", "no_straggler"},
                {"culprits", Json::array()},
                {"cause_class", "none"},
                {"cause", "none"}};
  } else {
    const Fault& f = sc.faults[*primary];
    FaultEntities e = EntitiesOf(sc, f);
    expected["status"] = e.job_wide ? "job_wide" : "straggler";
    expected["culprits"] = e.job_wide ? Json::array() : Culprits(run, f);
    expected["cause_class"] = std::string(CauseClassWord(f.kind));
    expected["cause"] = Cause(f);
    expected["fault_index"] = *primary;
  }
  t["expected"] = expected;

  Json faults = Json::array();
  for (size_t i = 0; i < sc.faults.size(); ++i) faults.push_back(FaultJson(run, i));
  t["faults"] = faults;
  Json sw = Json::object();
  for (size_t s = 0; s < run.switches().size(); ++s) {
    Json hosts = Json::array();
    for (int n : run.switches()[s]) hosts.push_back(HostName(n));
    sw[fmt::format("leaf-{:02d}", s)] = hosts;
  }
  t["switches"] = sw;

  OutFile f(ctx.dir + "/truth.json");
  f.Raw(t.dump(2));
  f.Raw("\n");
  if (Status st = f.Close(bytes); !st.ok()) return st;
  ++*files;
  return Status::Ok();
}

}  // namespace laggard::sim
