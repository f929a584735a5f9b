#include "ingest/common/field_names.h"

#include <string>

#include "base/text.h"

namespace laggard {
namespace {

bool OneOf(std::string_view s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (s == n) return true;
  }
  return false;
}

}  // namespace

FieldName ClassifyFieldName(std::string_view raw) {
  std::string name = ToLower(Trim(raw));
  while (!name.empty() && (name.front() == '"' || name.front() == '\'')) name.erase(0, 1);
  while (!name.empty() && (name.back() == '"' || name.back() == '\'')) name.pop_back();
  // Unit in brackets or after a blank: "step_time (ms)", "duration[s]", "time ms".
  std::optional<TimeUnit> unit;
  size_t br = name.find_first_of("([");
  if (br != std::string::npos) {
    size_t close = name.find_first_of(")]", br);
    unit = ParseTimeUnit(std::string_view(name).substr(
        br + 1, close == std::string::npos ? std::string::npos : close - br - 1));
    name = std::string(Trim(std::string_view(name).substr(0, br)));
  } else if (size_t sp = name.rfind(' '); sp != std::string::npos) {
    if (auto u = ParseTimeUnit(std::string_view(name).substr(sp + 1))) {
      unit = u;
      name = std::string(Trim(std::string_view(name).substr(0, sp)));
    }
  }
  for (char& c : name) {
    if (c == ' ' || c == '-' || c == '.') c = '_';
  }
  // Unit suffix: "step_time_ms", "duration_s".
  std::string base = name;
  if (!unit) {
    size_t us = name.rfind('_');
    if (us != std::string::npos) {
      if (auto u = ParseTimeUnit(std::string_view(name).substr(us + 1))) {
        unit = u;
        base = name.substr(0, us);
      }
    }
  }
  if (OneOf(name, {"rank", "global_rank", "rank_id", "process_rank", "worker", "world_rank"})) {
    return {StepField::kRank, std::nullopt};
  }
  if (OneOf(name, {"step", "iteration", "iter", "global_step", "step_idx", "step_index",
                   "batch_idx", "step_id"})) {
    return {StepField::kStep, std::nullopt};
  }
  if (OneOf(name, {"start", "start_time", "start_ts", "timestamp", "ts", "wall_time", "datetime",
                   "begin", "time_start", "wallclock"})) {
    return {StepField::kStart, std::nullopt};
  }
  if (OneOf(name, {"host", "hostname", "node", "node_name", "nodename"})) {
    return {StepField::kHost, std::nullopt};
  }
  if (OneOf(name,
            {"gpu", "gpu_index", "gpu_id", "local_rank", "local_gpu", "device", "cuda_device"})) {
    return {StepField::kGpu, std::nullopt};
  }
  if (OneOf(name, {"pipeline_stage", "pp_rank", "stage", "pp_stage", "pipeline_rank"})) {
    return {StepField::kStage, std::nullopt};
  }
  if (OneOf(name, {"dp_rank", "data_parallel_rank", "dp_index", "data_parallel_index"})) {
    return {StepField::kDpRank, std::nullopt};
  }
  if (OneOf(base,
            {"duration", "step_time", "steptime", "elapsed", "elapsed_time", "iteration_time",
             "iter_time", "step_duration", "latency", "dt", "time_per_step", "step_seconds"})) {
    return {StepField::kDuration, unit};
  }
  if (base == "time") return {StepField::kAmbiguousTime, unit};
  if (OneOf(base,
            {"compute", "compute_time", "compute_only", "compute_step_time", "phase_compute"})) {
    return {StepField::kCompute, unit};
  }
  // A bare "cpu" column may be a core number or a utilisation: only with a
  // unit is it a time.
  if (OneOf(base,
            {"cpu_time", "on_cpu", "oncpu", "process_cpu", "process_cpu_time", "phase_cpu"}) ||
      (base == "cpu" && unit)) {
    return {StepField::kCpu, unit};
  }
  if (OneOf(base, {"cpu_wait", "runq_wait", "run_delay", "runqueue_wait", "sched_wait",
                   "phase_cpu_wait", "cpu_wait_time"})) {
    return {StepField::kCpuWait, unit};
  }
  if (OneOf(base, {"cpu_probe", "phase_cpu_probe"})) return {StepField::kCpuProbe, unit};
  return {StepField::kNone, std::nullopt};
}

int CpuFieldOf(StepField f) {
  return f == StepField::kCpuWait    ? kCpuWaitField
         : f == StepField::kCpuProbe ? kCpuProbeField
                                     : kOnCpuField;
}

FieldLayout LayoutFromNames(const std::vector<std::string_view>& names) {
  FieldLayout layout;
  int ambiguous = -1;
  std::optional<TimeUnit> ambiguous_unit;
  for (size_t i = 0; i < names.size(); ++i) {
    FieldName f = ClassifyFieldName(names[i]);
    int idx = static_cast<int>(i);
    auto take = [&](int& slot) {
      if (slot < 0) slot = idx;
    };
    switch (f.field) {
      case StepField::kRank: take(layout.rank); break;
      case StepField::kStep: take(layout.step); break;
      case StepField::kStart: take(layout.start); break;
      case StepField::kHost: take(layout.host); break;
      case StepField::kGpu: take(layout.gpu); break;
      case StepField::kStage: take(layout.stage); break;
      case StepField::kDpRank: take(layout.dp_rank); break;
      case StepField::kDuration:
        if (layout.duration < 0) {
          layout.duration = idx;
          layout.duration_unit = f.unit;
        }
        break;
      case StepField::kCompute:
        if (layout.compute < 0) {
          layout.compute = idx;
          layout.compute_unit = f.unit;
        }
        break;
      case StepField::kCpu:
      case StepField::kCpuWait:
      case StepField::kCpuProbe: {
        int which = CpuFieldOf(f.field);
        if (layout.cpu[which] < 0) {
          layout.cpu[which] = idx;
          layout.cpu_unit[which] = f.unit;
        }
        break;
      }
      case StepField::kAmbiguousTime:
        if (ambiguous < 0) {
          ambiguous = idx;
          ambiguous_unit = f.unit;
        }
        break;
      case StepField::kNone: break;
    }
  }
  if (layout.duration < 0 && ambiguous >= 0) {
    layout.duration = ambiguous;
    layout.duration_unit = ambiguous_unit;
  }
  return layout;
}

std::optional<DurationNs> ParseDurationValue(std::string_view text,
                                             std::optional<TimeUnit> default_unit,
                                             TimeUnit& unit_used) {
  text = Trim(text);
  if (!text.empty() && (text.front() == '"' || text.front() == '\'')) text.remove_prefix(1);
  if (!text.empty() && (text.back() == '"' || text.back() == '\'')) text.remove_suffix(1);
  size_t num_end = 0;
  while (num_end < text.size() &&
         (IsDigit(text[num_end]) || text[num_end] == '.' || text[num_end] == '-' ||
          text[num_end] == '+' ||
          ((text[num_end] == 'e' || text[num_end] == 'E') && num_end > 0 &&
           num_end + 1 < text.size() &&
           (IsDigit(text[num_end + 1]) || text[num_end + 1] == '-' || text[num_end + 1] == '+')))) {
    ++num_end;
  }
  auto value = ParseDouble(text.substr(0, num_end));
  if (!value) return std::nullopt;
  TimeUnit unit = default_unit.value_or(TimeUnit::kSeconds);
  if (num_end < text.size()) {
    auto u = ParseTimeUnit(text.substr(num_end));
    if (!u) return std::nullopt;
    unit = *u;
  }
  unit_used = unit;
  auto d = ToDurationNs(*value, unit);
  if (!d) return std::nullopt;
  return d;
}

char GuessDelimiter(std::string_view header) {
  size_t commas = 0, tabs = 0, semis = 0;
  for (char c : header) {
    commas += c == ',';
    tabs += c == '\t';
    semis += c == ';';
  }
  if (tabs > commas && tabs >= semis) return '\t';
  if (semis > commas) return ';';
  return ',';
}

}  // namespace laggard
