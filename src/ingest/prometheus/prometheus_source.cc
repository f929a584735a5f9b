#include "ingest/prometheus/prometheus_source.h"

#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "net/http.h"

namespace laggard {
namespace {

// GPU sample fields by metric name: the agent's and dcgm-exporter's.
using SampleField = std::optional<double> GpuSample::*;
struct SampleMetric {
  std::string_view agent;
  std::string_view dcgm;
  SampleField field;
};
constexpr SampleMetric kSampleMetrics[] = {
    {"laggard_gpu_temp_celsius", "DCGM_FI_DEV_GPU_TEMP", &GpuSample::temp_c},
    {"laggard_gpu_sm_clock_mhz", "DCGM_FI_DEV_SM_CLOCK", &GpuSample::sm_clock_mhz},
    {"laggard_gpu_mem_clock_mhz", "DCGM_FI_DEV_MEM_CLOCK", &GpuSample::mem_clock_mhz},
    {"laggard_gpu_power_watts", "DCGM_FI_DEV_POWER_USAGE", &GpuSample::power_w},
    {"laggard_gpu_power_limit_watts", "DCGM_FI_DEV_POWER_MGMT_LIMIT", &GpuSample::power_limit_w},
    {"laggard_gpu_utilization_percent", "DCGM_FI_DEV_GPU_UTIL", &GpuSample::util_pct},
    {"laggard_gpu_mem_utilization_percent", "DCGM_FI_DEV_MEM_COPY_UTIL", &GpuSample::mem_util_pct},
};

using FactField = std::optional<double> GpuFacts::*;
constexpr std::pair<std::string_view, FactField> kFactMetrics[] = {
    {"laggard_gpu_sm_clock_max_mhz", &GpuFacts::max_sm_clock_mhz},
    {"laggard_gpu_mem_clock_max_mhz", &GpuFacts::max_mem_clock_mhz},
    {"laggard_gpu_power_limit_default_watts", &GpuFacts::default_power_limit_w},
    {"laggard_gpu_power_limit_watts", &GpuFacts::enforced_power_limit_w},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", &GpuFacts::default_power_limit_w},
};

using IntFactField = std::optional<int32_t> GpuFacts::*;
constexpr std::pair<std::string_view, IntFactField> kIntFactMetrics[] = {
    {"laggard_gpu_pcie_link_gen_max", &GpuFacts::pcie_gen_max},
    {"laggard_gpu_pcie_link_width_max", &GpuFacts::pcie_width_max},
    {"laggard_gpu_pcie_link_gen", &GpuFacts::pcie_gen_current},
    {"laggard_gpu_pcie_link_width", &GpuFacts::pcie_width_current},
    {"DCGM_FI_DEV_PCIE_LINK_GEN", &GpuFacts::pcie_gen_current},
    {"DCGM_FI_DEV_PCIE_LINK_WIDTH", &GpuFacts::pcie_width_current},
    {"laggard_gpu_nvlinks_active", &GpuFacts::nvlink_up},
    {"laggard_gpu_nvlinks", &GpuFacts::nvlink_total},
};

std::optional<std::string> Label(const PromSeries& s, std::string_view a, std::string_view b = {}) {
  auto it = s.labels.find(std::string(a));
  if (it != s.labels.end() && !it->second.empty()) return it->second;
  if (!b.empty()) {
    it = s.labels.find(std::string(b));
    if (it != s.labels.end() && !it->second.empty()) return it->second;
  }
  return std::nullopt;
}

TimeNs FromSeconds(double s) { return static_cast<TimeNs>(std::llround(s * 1e9)); }

}  // namespace

StatusOr<std::vector<PromSeries>> ParsePrometheusResponse(std::string_view body) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Status::Error("Prometheus answer is not JSON");
  if (doc.value("status", "") != "success") {
    return Status::Error(
        fmt::format("Prometheus error: {} {}", doc.value("errorType", ""), doc.value("error", "")));
  }
  const nlohmann::json& data = doc["data"];
  if (!data.is_object() || !data["result"].is_array()) {
    return Status::Error("Prometheus answer without data.result");
  }
  std::vector<PromSeries> out;
  auto point = [](const nlohmann::json& p) -> std::optional<std::pair<TimeNs, double>> {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string())
      return std::nullopt;
    auto v = ParseDouble(p[1].get<std::string>());
    if (!v || !std::isfinite(*v)) return std::nullopt;
    return std::make_pair(FromSeconds(p[0].get<double>()), *v);
  };
  for (const nlohmann::json& r : data["result"]) {
    if (!r.is_object()) continue;
    PromSeries s;
    if (r.contains("metric") && r["metric"].is_object()) {
      for (auto it = r["metric"].begin(); it != r["metric"].end(); ++it) {
        if (it.value().is_string()) s.labels[it.key()] = it.value().get<std::string>();
      }
    }
    if (r.contains("values") && r["values"].is_array()) {
      for (const nlohmann::json& p : r["values"]) {
        if (auto x = point(p)) s.points.push_back(*x);
      }
    } else if (r.contains("value")) {
      if (auto x = point(r["value"])) s.points.push_back(*x);
    }
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<std::vector<PromSeries>> QueryRange(const PrometheusQuery& q, const std::string& expr) {
  net::HttpGetRequest request;
  request.url = q.url;
  request.path = "/api/v1/query_range";
  request.timeout_s = q.timeout_s;
  request.params = {{"query", expr},
                    {"start", fmt::format("{:.3f}", ToSeconds(q.start_ns))},
                    {"end", fmt::format("{:.3f}", ToSeconds(q.end_ns))},
                    {"step", fmt::format("{:.3f}", ToSeconds(q.step_ns))}};
  StatusOr<net::HttpGetResult> res = net::HttpGet(request);
  if (!res.ok()) return res.status();
  if (!res->answered) {
    return Status::Error(fmt::format("cannot reach Prometheus at {}: {}", q.url, res->error));
  }
  if (res->status != 200 && res->status != 400 && res->status != 422) {
    return Status::Error(fmt::format("Prometheus at {} answered HTTP {}", q.url, res->status));
  }
  return ParsePrometheusResponse(res->body);
}

namespace {

using SeriesByMetric = std::map<std::string, std::vector<PromSeries>>;

const std::vector<PromSeries>& SeriesOf(const SeriesByMetric& by_metric, std::string_view name) {
  static const std::vector<PromSeries> kNone;
  auto it = by_metric.find(std::string(name));
  return it == by_metric.end() ? kNone : it->second;
}

// The phases a step reporter sends for its thread's CPU (laggard_step.py:
// cpu_s, cpu_wait_s, cpu_probe_s; the agent exports them as phases), in
// StepCpu's order: time on a CPU, waiting for one, a fixed probe's time.
constexpr std::string_view kCpuPhases[] = {"cpu", "cpu_wait", "cpu_probe"};
constexpr size_t kProbePhase = 2;  // kCpuPhases' "cpu_probe": a time of 0 is no probe

// Each rank's steps: laggard_step_duration_seconds, numbered by
// laggard_step_last, with laggard_step_phase_seconds{phase="compute"} and
// the CPU phases (kCpuPhases) of the same scrape as the step's StepCpu.
void AddStepSeries(const SeriesByMetric& by_metric, RunBuilder& b) {
  auto metric = [&](std::string_view name) -> const std::vector<PromSeries>& {
    return SeriesOf(by_metric, name);
  };
  // Steps: pair the duration gauge with the step-number gauge per series.
  using Key = std::pair<std::string, std::string>;  // (host, rank)
  std::map<Key, const PromSeries*> last_step;
  for (const PromSeries& s : metric("laggard_step_last")) {
    last_step[{Label(s, "host").value_or(""), Label(s, "rank").value_or("")}] = &s;
  }
  // The compute-only part of the same step, when the rank reports it.
  std::map<Key, const PromSeries*> compute_of;
  std::map<Key, const PromSeries*> cpu_of[std::size(kCpuPhases)];
  for (const PromSeries& s : metric("laggard_step_phase_seconds")) {
    const std::optional<std::string> phase = Label(s, "phase");
    const Key key{Label(s, "host").value_or(""), Label(s, "rank").value_or("")};
    if (phase == "compute") compute_of[key] = &s;
    for (size_t i = 0; i < std::size(kCpuPhases); ++i) {
      if (phase == kCpuPhases[i]) cpu_of[i][key] = &s;
    }
  }
  for (const PromSeries& s : metric("laggard_step_duration_seconds")) {
    auto rank = ParseInt<int32_t>(Label(s, "rank").value_or(""));
    if (!rank || *rank < 0 || *rank > kMaxRank) continue;
    std::optional<std::string> host = Label(s, "host");
    auto gpu = ParseInt<int32_t>(Label(s, "gpu").value_or(""));
    if (host) b.SetHost(*rank, *host, "prometheus", 0);
    if (gpu) b.SetLocalGpu(*rank, *gpu, "prometheus", 0);
    auto it = last_step.find({host.value_or(""), Label(s, "rank").value_or("")});
    std::map<TimeNs, double> step_at;
    if (it != last_step.end()) {
      for (auto [t, v] : it->second->points) step_at[t] = v;
    }
    std::map<TimeNs, double> compute_at;
    if (auto c = compute_of.find({host.value_or(""), Label(s, "rank").value_or("")});
        c != compute_of.end()) {
      for (auto [t, v] : c->second->points) compute_at[t] = v;
    }
    std::map<TimeNs, double> cpu_at[std::size(kCpuPhases)];
    for (size_t i = 0; i < std::size(kCpuPhases); ++i) {
      if (auto c = cpu_of[i].find({host.value_or(""), Label(s, "rank").value_or("")});
          c != cpu_of[i].end()) {
        for (auto [t, v] : c->second->points) cpu_at[i][t] = v;
      }
    }
    // A phase's value at scrape time t: a time of zero or more (a probe's
    // over zero), else none.
    auto cpu_value = [&](size_t i, TimeNs t) -> std::optional<DurationNs> {
      auto c = cpu_at[i].find(t);
      if (c == cpu_at[i].end() || !(c->second >= 0) || (i == kProbePhase && c->second == 0))
        return std::nullopt;
      return FromSeconds(c->second);
    };
    std::set<int64_t> seen;
    int64_t pseudo = 0;
    for (auto [t, seconds] : s.points) {
      if (seconds <= 0) continue;
      int64_t step;
      if (auto st = step_at.find(t); st != step_at.end()) {
        step = static_cast<int64_t>(st->second);
      } else if (step_at.empty()) {
        step = pseudo++;  // no step numbers exported: one record per sample
      } else {
        continue;
      }
      if (!seen.insert(step).second) continue;
      DurationNs d = FromSeconds(seconds);
      DurationNs compute = 0;
      if (auto c = compute_at.find(t); c != compute_at.end() && c->second > 0) {
        compute = FromSeconds(c->second);
      }
      b.AddStep(*rank, step, d, t - d, SourceRef{0, 0}, compute);
      StepCpu cpu{step, cpu_value(0, t), cpu_value(1, t), cpu_value(kProbePhase, t)};
      if (cpu.on_cpu_ns || cpu.runq_wait_ns || cpu.probe_ns) b.AddStepCpu(*rank, cpu);
    }
  }
}

// Each GPU's samples (the agent's metrics, then DCGM's) and facts.
void AddGpuSeries(const SeriesByMetric& by_metric, RunBuilder& b) {
  auto metric = [&](std::string_view name) -> const std::vector<PromSeries>& {
    return SeriesOf(by_metric, name);
  };
  // GPUs: one sample per (host, gpu, time) across all metrics.
  std::map<std::pair<std::string, int32_t>, GpuRecord> gpus;
  std::map<std::pair<std::string, int32_t>, std::map<TimeNs, GpuSample>> samples;
  auto gpu_key = [](const PromSeries& s) -> std::optional<std::pair<std::string, int32_t>> {
    auto gpu = ParseInt<int32_t>(Label(s, "gpu").value_or(""));
    if (!gpu) return std::nullopt;
    return std::make_pair(Label(s, "host", "Hostname").value_or(""), *gpu);
  };
  auto record = [&](const std::pair<std::string, int32_t>& key, const PromSeries& s) -> GpuRecord& {
    GpuRecord& g = gpus[key];
    if (!key.first.empty()) g.host = key.first;
    g.index = key.second;
    if (!g.uuid) {
      if (auto u = Label(s, "uuid", "UUID")) g.uuid = *u;
    }
    if (!g.facts.name) {
      if (auto n = Label(s, "modelName", "name")) g.facts.name = *n;
    }
    g.files = {0};
    return g;
  };
  for (bool dcgm : {false, true}) {
    for (const SampleMetric& m : kSampleMetrics) {
      for (const PromSeries& s : metric(dcgm ? m.dcgm : m.agent)) {
        auto key = gpu_key(s);
        if (!key) continue;
        record(*key, s);
        for (auto [t, v] : s.points) {
          GpuSample& x = samples[*key][t];
          x.time_ns = t;
          if (!(x.*m.field)) x.*m.field = v;
        }
      }
    }
    for (const PromSeries& s :
         metric(dcgm ? "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" : "laggard_gpu_clock_event_reasons")) {
      auto key = gpu_key(s);
      if (!key) continue;
      record(*key, s);
      for (auto [t, v] : s.points) {
        GpuSample& x = samples[*key][t];
        x.time_ns = t;
        if (!x.clock_events && v >= 0) x.clock_events = static_cast<uint64_t>(v);
      }
    }
  }
  for (auto [name, field] : kFactMetrics) {
    for (const PromSeries& s : metric(name)) {
      auto key = gpu_key(s);
      if (!key || s.points.empty()) continue;
      GpuRecord& g = record(*key, s);
      if (!(g.facts.*field)) g.facts.*field = s.points.back().second;
    }
  }
  for (auto [name, field] : kIntFactMetrics) {
    for (const PromSeries& s : metric(name)) {
      auto key = gpu_key(s);
      if (!key || s.points.empty()) continue;
      GpuRecord& g = record(*key, s);
      if (!(g.facts.*field)) g.facts.*field = static_cast<int32_t>(s.points.back().second);
    }
  }
  for (auto& [key, g] : gpus) {
    for (auto& [t, x] : samples[key]) g.samples.push_back(x);
    b.AddGpu(std::move(g));
  }
}

}  // namespace

Run RunFromSeries(const std::map<std::string, std::vector<PromSeries>>& by_metric) {
  RunBuilder b;
  AddStepSeries(by_metric, b);
  AddGpuSeries(by_metric, b);

  Run run;
  run.files.push_back(InputFileInfo{"prometheus", "prometheus", 0, 0, true});
  b.Finalize(run);
  run.files[0].records = run.total_steps() + run.hardware.gpus.size();
  return run;
}

StatusOr<Run> LoadFromPrometheus(const PrometheusQuery& q) {
  std::string selector = R"(__name__=~"laggard_(gpu|step)_.*|DCGM_FI_DEV_.*")";
  if (!q.selector.empty()) selector += "," + q.selector;
  auto series = QueryRange(q, "{" + selector + "}");
  if (!series.ok()) return series.status();
  std::map<std::string, std::vector<PromSeries>> by_metric;
  for (PromSeries& s : *series) {
    auto it = s.labels.find("__name__");
    if (it == s.labels.end()) continue;
    std::string name = it->second;
    by_metric[name].push_back(std::move(s));
  }
  Run run = RunFromSeries(by_metric);
  run.files[0].path = "prometheus:" + q.url;
  return run;
}

}  // namespace laggard
