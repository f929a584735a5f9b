// Fault specs from the command line and scenario files (JSON), for
// `laggard simulate`. Grammar in run_writer.h; targets are checked against
// the cluster later, by ResolveScenario.

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "simulator/run_writer.h"

namespace laggard::sim {
namespace {

using Json = nlohmann::json;

// "node-07" or "7" -> 7.
std::optional<int> ParseNode(std::string_view s) {
  s = Trim(s);
  if (StartsWith(s, "node-")) s.remove_prefix(5);
  auto v = ParseInt<int>(s);
  if (!v || *v < 0) return std::nullopt;
  return v;
}

// "0.2" or "20%"; a bare integer is not a severity (it would be a GPU index).
std::optional<double> ParseSeverity(std::string_view s) {
  s = Trim(s);
  if (EndsWith(s, "%")) {
    auto v = ParseDouble(s.substr(0, s.size() - 1));
    if (v) return *v / 100;
    return std::nullopt;
  }
  if (s.find('.') == std::string_view::npos) return std::nullopt;
  return ParseDouble(s);
}

StatusOr<FaultTarget> ParseTarget(std::string_view t) {
  FaultTarget target;
  t = Trim(t);
  auto bad = [&](std::string_view why) {
    return Status::Error(fmt::format("target '{}': {}", t, why));
  };
  if (t.empty()) return target;
  if (t == "all" || t == "job") {
    target.kind = FaultTarget::Kind::kJob;
    return target;
  }
  auto number_after = [&](std::string_view prefix) -> std::optional<int> {
    if (!StartsWith(t, prefix)) return std::nullopt;
    auto v = ParseInt<int>(t.substr(prefix.size()));
    if (!v || *v < 0) return std::nullopt;
    return v;
  };
  if (auto r = number_after("rank")) {
    target.kind = FaultTarget::Kind::kRank;
    target.rank = *r;
    return target;
  }
  if (auto r = number_after("r")) {
    target.kind = FaultTarget::Kind::kRank;
    target.rank = *r;
    return target;
  }
  if (auto p = number_after("stage")) {
    target.kind = FaultTarget::Kind::kStage;
    target.stage = *p;
    return target;
  }
  if (size_t dots = t.find(".."); dots != std::string_view::npos) {
    auto a = ParseNode(t.substr(0, dots)), b = ParseNode(t.substr(dots + 2));
    if (!a || !b || *b < *a) return bad("a node range is FIRST..LAST (node-04..node-07 or 4..7)");
    target.kind = FaultTarget::Kind::kNodes;
    for (int n = *a; n <= *b; ++n) target.nodes.push_back(n);
    return target;
  }
  if (t.find('+') != std::string_view::npos) {
    target.kind = FaultTarget::Kind::kNodes;
    for (std::string_view part : Split(t, '+')) {
      auto n = ParseNode(part);
      if (!n) return bad(fmt::format("'{}' is not a host", part));
      target.nodes.push_back(*n);
    }
    return target;
  }
  if (size_t colon = t.find(':'); colon != std::string_view::npos) {
    auto n = ParseNode(t.substr(0, colon));
    if (!n) return bad("expected HOST:GPU or HOST:mlx5_N");
    std::string_view dev = Trim(t.substr(colon + 1));
    target.node = *n;
    if (StartsWith(dev, "mlx5_")) {
      auto i = ParseInt<int>(dev.substr(5));
      if (!i || *i < 0) return bad("expected mlx5_N");
      target.kind = FaultTarget::Kind::kNic;
      target.index = *i;
    } else {
      auto i = ParseInt<int>(dev);
      if (!i || *i < 0) return bad("expected a GPU index after ':'");
      target.kind = FaultTarget::Kind::kGpu;
      target.index = *i;
    }
    return target;
  }
  auto n = ParseNode(t);
  if (!n) return bad("not a host (node-NN), node index, rankN, stageN, range or list");
  target.kind = FaultTarget::Kind::kHost;
  target.node = *n;
  return target;
}

// Reads an int / double / bool / string member when present.
template <typename T>
Status Member(const Json& obj, const char* key, T* out, std::string_view where) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  bool ok;
  if constexpr (std::is_same_v<T, bool>) ok = it->is_boolean();
  else if constexpr (std::is_same_v<T, std::string>) ok = it->is_string();
  else if constexpr (std::is_integral_v<T>) ok = it->is_number_integer();
  else ok = it->is_number();
  if (!ok) return Status::Error(fmt::format("scenario: {}.{} has the wrong type", where, key));
  *out = it->get<T>();
  return Status::Ok();
}

Status CheckKeys(const Json& obj, std::initializer_list<std::string_view> keys,
                 std::string_view where) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
      return Status::Error(fmt::format("scenario: unknown key '{}' in {}", it.key(), where));
    }
  }
  return Status::Ok();
}

Status ParseFaultObject(const Json& j, Fault* out) {
  if (Status st = CheckKeys(j,
                            {"kind", "target", "severity", "onset_step", "end_step", "period_steps",
                             "duration_steps", "cause"},
                            "a fault");
      !st.ok()) {
    return st;
  }
  std::string kind, target, cause;
  if (Status st = Member(j, "kind", &kind, "fault"); !st.ok()) return st;
  if (Status st = Member(j, "target", &target, "fault"); !st.ok()) return st;
  auto f = ParseFaultSpec(target.empty() ? kind : kind + "@" + target);
  if (!f.ok()) return f.status();
  *out = std::move(f.value());
  if (j.contains("severity")) {
    double s = 0;
    if (Status st = Member(j, "severity", &s, "fault"); !st.ok()) return st;
    out->severity = s;
  }
  int v = 0;
  if (j.contains("onset_step")) {
    if (Status st = Member(j, "onset_step", &out->onset_step, "fault"); !st.ok()) return st;
  }
  if (j.contains("end_step")) {
    if (Status st = Member(j, "end_step", &v, "fault"); !st.ok()) return st;
    out->end_step = v;
  }
  if (j.contains("period_steps")) {
    if (Status st = Member(j, "period_steps", &v, "fault"); !st.ok()) return st;
    out->period_steps = v;
  }
  if (Status st = Member(j, "duration_steps", &out->duration_steps, "fault"); !st.ok()) return st;
  if (Status st = Member(j, "cause", &out->cause, "fault"); !st.ok()) return st;
  out->spec = j.dump();
  return Status::Ok();
}

Status ParseScenario(const Json& doc, ClusterScenario* sc, RunOutputOptions* out) {
  if (!doc.is_object()) return Status::Error("scenario: the file must hold one JSON object");
  if (Status st = CheckKeys(doc,
                            {"nodes", "gpus_per_node", "steps", "seed", "compute_ms", "jitter",
                             "collectives_per_step", "bucket_mib", "kernels_per_step", "warmup_s",
                             "max_clock_offset_ms", "start_time_s", "nodes_per_switch",
                             "pipeline_stages", "faults", "outputs"},
                            "the scenario");
      !st.ok()) {
    return st;
  }
  const char* w = "scenario";
  for (Status st :
       {Member(doc, "nodes", &sc->nodes, w), Member(doc, "gpus_per_node", &sc->gpus_per_node, w),
        Member(doc, "steps", &sc->steps, w), Member(doc, "seed", &sc->seed, w),
        Member(doc, "compute_ms", &sc->compute_ms, w), Member(doc, "jitter", &sc->jitter, w),
        Member(doc, "collectives_per_step", &sc->collectives_per_step, w),
        Member(doc, "kernels_per_step", &sc->kernels_per_step, w),
        Member(doc, "warmup_s", &sc->warmup_s, w),
        Member(doc, "max_clock_offset_ms", &sc->max_clock_offset_ms, w),
        Member(doc, "start_time_s", &sc->start_time_s, w),
        Member(doc, "nodes_per_switch", &sc->nodes_per_switch, w),
        Member(doc, "pipeline_stages", &sc->pipeline_stages, w)}) {
    if (!st.ok()) return st;
  }
  if (doc.contains("bucket_mib")) {
    double mib = 0;
    if (Status st = Member(doc, "bucket_mib", &mib, w); !st.ok()) return st;
    if (!(mib > 0 && mib < 1e7)) return Status::Error("scenario: bucket_mib must be positive");
    sc->bucket_bytes = static_cast<int64_t>(mib * (1 << 20));
  }
  if (auto it = doc.find("faults"); it != doc.end()) {
    if (!it->is_array()) return Status::Error("scenario: faults must be an array");
    for (const Json& fj : *it) {
      Fault f;
      if (fj.is_string()) {
        auto parsed = ParseFaultSpec(fj.get<std::string>());
        if (!parsed.ok()) return parsed.status();
        f = std::move(parsed.value());
      } else if (fj.is_object()) {
        if (Status st = ParseFaultObject(fj, &f); !st.ok()) return st;
      } else {
        return Status::Error("scenario: a fault is a spec string or an object");
      }
      sc->faults.push_back(std::move(f));
    }
  }
  if (auto it = doc.find("outputs"); it != doc.end()) {
    const Json& o = *it;
    if (!o.is_object()) return Status::Error("scenario: outputs must be an object");
    if (Status st =
            CheckKeys(o,
                      {"step_format", "step_timing", "traces", "trace_steps", "trace_first_step",
                       "gzip_traces", "hardware", "network", "nccl_tests", "nccl_debug",
                       "measure_effects", "dmon_interval_s", "query_interval_s", "trace_ranks"},
                      "outputs");
        !st.ok()) {
      return st;
    }
    const char* ow = "outputs";
    std::string format, timing, trace_ranks;
    int first = -1;
    for (Status st :
         {Member(o, "step_format", &format, ow), Member(o, "step_timing", &timing, ow),
          Member(o, "traces", &out->traces, ow), Member(o, "trace_steps", &out->trace_steps, ow),
          Member(o, "trace_first_step", &first, ow),
          Member(o, "gzip_traces", &out->gzip_traces, ow),
          Member(o, "hardware", &out->hardware, ow), Member(o, "network", &out->network, ow),
          Member(o, "nccl_tests", &out->nccl_tests, ow),
          Member(o, "nccl_debug", &out->nccl_debug, ow),
          Member(o, "measure_effects", &out->measure_effects, ow),
          Member(o, "dmon_interval_s", &out->dmon_interval_s, ow),
          Member(o, "query_interval_s", &out->query_interval_s, ow),
          Member(o, "trace_ranks", &trace_ranks, ow)}) {
      if (!st.ok()) return st;
    }
    if (o.contains("trace_first_step")) out->trace_first_step = first;
    if (!trace_ranks.empty()) {
      auto ranks = ParseRankList(trace_ranks, sc->nodes * sc->gpus_per_node);
      if (!ranks.ok())
        return Status::Error("scenario: outputs.trace_ranks: " + ranks.status().message());
      out->trace_ranks = std::move(ranks.value());
    }
    if (!format.empty()) {
      if (format == "article") out->step_format = StepLogFormat::kArticle;
      else if (format == "csv") out->step_format = StepLogFormat::kCsv;
      else if (format == "jsonl") out->step_format = StepLogFormat::kJsonl;
      else if (format == "none") out->step_format.reset();
      else return Status::Error("scenario: outputs.step_format is article, csv, jsonl or none");
    }
    if (!timing.empty()) {
      if (timing == "end_to_end") out->step_timing = StepTiming::kEndToEnd;
      else if (timing == "compute") out->step_timing = StepTiming::kCompute;
      else if (timing == "both") out->step_timing = StepTiming::kBoth;
      else return Status::Error("scenario: outputs.step_timing is end_to_end, compute or both");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<int>> ParseNodeSet(std::string_view text) {
  auto t = ParseTarget(text);
  if (!t.ok()) return t.status();
  std::vector<int> nodes = t->nodes;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (t->kind != FaultTarget::Kind::kNodes || nodes.size() < 2) {
    return Status::Error(fmt::format(
        "'{}': a group test runs on two nodes or more: node-00..node-07 or node-01+node-05", text));
  }
  return nodes;
}

StatusOr<Fault> ParseFaultSpec(std::string_view spec_in) {
  std::string_view spec = Trim(spec_in);
  Fault f;
  f.spec = std::string(spec);
  auto bad = [&](std::string_view why) {
    return Status::Error(fmt::format("fault '{}': {}", spec, why));
  };
  std::string_view head = spec, opts;
  if (size_t comma = spec.find(','); comma != std::string_view::npos) {
    head = spec.substr(0, comma);
    opts = spec.substr(comma + 1);
  }
  std::string_view kind_s, rest;
  if (size_t at = head.find('@'); at != std::string_view::npos) {
    kind_s = head.substr(0, at);
    rest = head.substr(at + 1);
  } else if (size_t colon = head.find(':'); colon != std::string_view::npos) {
    kind_s = head.substr(0, colon);
    rest = head.substr(colon);  // ":SEVERITY"
  } else {
    kind_s = head;
  }
  auto kind = ParseFaultKind(Trim(kind_s));
  if (!kind) {
    std::vector<std::string_view> names;
    for (FaultKind k : AllFaultKinds()) names.push_back(FaultKindName(k));
    return bad(fmt::format("unknown kind '{}'; kinds: {}, none", kind_s, fmt::join(names, ", ")));
  }
  f.kind = *kind;
  if (Trim(kind_s) == "checkpoint_stall") f.cause = "checkpoint";
  // Severity: the last ':' field when it reads as one.
  if (size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    if (auto sev = ParseSeverity(rest.substr(colon + 1))) {
      f.severity = *sev;
      rest = rest.substr(0, colon);
    } else if (colon == 0) {
      return bad(fmt::format("'{}' is not a severity (write 0.2 or 20%)", rest.substr(1)));
    }
  }
  auto target = ParseTarget(rest);
  if (!target.ok()) return bad(target.status().message());
  f.target = std::move(target.value());
  if (!opts.empty()) {
    for (std::string_view opt : Split(opts, ',')) {
      size_t eq = opt.find('=');
      if (eq == std::string_view::npos)
        return bad(fmt::format("option '{}' is not key=value", opt));
      std::string_view key = Trim(opt.substr(0, eq)), value = Trim(opt.substr(eq + 1));
      if (key == "cause") {
        f.cause = std::string(value);
        continue;
      }
      auto v = ParseInt<int>(value);
      if (!v) return bad(fmt::format("option {} needs an integer", key));
      if (key == "onset") f.onset_step = *v;
      else if (key == "end") f.end_step = *v;
      else if (key == "period") f.period_steps = *v;
      else if (key == "duration") f.duration_steps = *v;
      else
        return bad(fmt::format("unknown option '{}' (onset, end, period, duration, cause)", key));
    }
  }
  return f;
}

Status ParseScenarioJson(std::string_view text, ClusterScenario* scenario,
                         RunOutputOptions* outputs) {
  Json doc = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Error("scenario: not valid JSON");
  try {
    return ParseScenario(doc, scenario, outputs);
  } catch (const Json::exception& e) {
    return Status::Error(fmt::format("scenario: {}", e.what()));
  }
}

}  // namespace laggard::sim
