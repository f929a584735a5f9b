// The JSON report (schema laggard.report/1, docs/json-report.md). Field
// names are stable; numbers are rounded to 6 significant digits so reports
// compare byte for byte across machines.

#include <algorithm>

#include "model/job_span.h"
#include "report/hang_view.h"
#include "report/json_document.h"
#include "report/report.h"

namespace laggard {
namespace report_json {
namespace {

Json EntityJson(const Entity& e) {
  Json j;
  j["rank"] = Opt(e.rank);
  j["host"] = Opt(e.host);
  j["gpu"] = Opt(e.gpu);
  if (e.nic) j["nic"] = *e.nic;
  if (e.switch_name) j["switch"] = *e.switch_name;
  if (e.dp_rank || e.pp_stage || e.tp_rank) {
    j["dp_rank"] = Opt(e.dp_rank);
    j["pp_stage"] = Opt(e.pp_stage);
    j["tp_rank"] = Opt(e.tp_rank);
  }
  if (e.job) j["job"] = true;
  return j;
}

Json WhatIfGroupsJson(const std::vector<WhatIfGroup>& groups, const char* key) {
  Json out = Json::array();
  for (const WhatIfGroup& g : groups) {
    Json j;
    if (std::string_view(key) == "op_type") {
      j["op_type"] = g.label;
    } else {
      if (g.dp || std::string_view(key) == "dp_rank") j["dp_rank"] = Opt(g.dp);
      if (g.pp || std::string_view(key) == "pp_stage") j["pp_stage"] = Opt(g.pp);
      if (g.tp) j["tp_rank"] = Opt(g.tp);
    }
    j["slowdown"] = Num(g.slowdown);
    j["recovered"] = g.recovered ? Num(*g.recovered) : Json(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

// The what-if replay (docs/json-report.md, "verdict.impact.whatif").
Json WhatIfJson(const WhatIf& w) {
  Json j;
  j["slowdown"] = Num(w.slowdown);
  j["measured_step_s"] = Num(w.measured_step_ns / 1e9);
  j["ideal_step_s"] = Num(w.ideal_step_ns / 1e9);
  j["layout"] = {
      {"dp", w.layout.dp}, {"pp", w.layout.pp}, {"tp", w.layout.tp}, {"vpp", w.layout.vpp}};
  j["by_stage"] = WhatIfGroupsJson(w.by_stage, "pp_stage");
  j["by_dp_rank"] = WhatIfGroupsJson(w.by_dp_rank, "dp_rank");
  j["by_op_type"] = WhatIfGroupsJson(w.by_op_type, "op_type");
  j["by_worker"] = WhatIfGroupsJson(w.by_worker, "worker");
  j["workers_replayed"] = w.workers_replayed;
  Json steps = Json::array();
  for (const WhatIfStep& s : w.per_step) {
    Json by_stage = Json::array();
    for (double x : s.by_stage) by_stage.push_back(Num(x));
    steps.push_back({{"step", s.step},
                     {"measured_s", Num(s.measured_ns / 1e9)},
                     {"ideal_s", Num(s.ideal_ns / 1e9)},
                     {"slowdown", Num(s.slowdown)},
                     {"by_stage", std::move(by_stage)}});
  }
  j["per_step"] = std::move(steps);
  j["unfit"] = {{"ops", w.fit.ops},
                {"duplicates", w.fit.duplicates},
                {"missing_compute", w.fit.missing_compute},
                {"unpaired", w.fit.unpaired},
                {"incomplete_group", w.fit.incomplete_group},
                {"cyclic", w.fit.cyclic},
                {"steps_dropped", w.fit.steps_dropped}};
  return j;
}

// A trace's own busy / idle fields, ranked or not, into `j`.
void TraceBusyJson(const Run& run, const TraceBusyStats& t, Json& j) {
  j["host"] = Opt(t.host);
  j["file"] = t.file < run.files.size() ? Json(run.files[t.file].path) : Json(nullptr);
  j["cpu_only"] = t.cpu_only;
  j["steps"] = t.steps;
  j["window_s"] = Num(ToSeconds(t.window_ns));
  j["busy_s"] = Num(ToSeconds(t.busy_ns));
  j["compute_busy_s"] = Num(ToSeconds(t.compute_busy_ns));
  j["comm_busy_s"] = Num(ToSeconds(t.comm_busy_ns));
  j["idle_s"] = Num(ToSeconds(t.idle_ns));
  Json by_class = Json::object();
  for (size_t c = 0; c < t.busy_by_class_ns.size(); ++c) {
    by_class[std::string(OpClassName(static_cast<OpClass>(c)))] =
        Num(ToSeconds(t.busy_by_class_ns[c]));
  }
  j["busy_by_class_s"] = std::move(by_class);
  j["gaps"] = t.gaps;
  j["largest_gap_s"] = Num(ToSeconds(t.largest_gap_ns));
  j["collectives"] = t.collectives;
  j["collective_s"] = Num(ToSeconds(t.collective_ns));
}

template <typename Enum>
Json NameJson(const std::optional<Enum>& v, std::string_view (*name)(Enum)) {
  return v ? Json(name(*v)) : Json(nullptr);
}

Json CulpritJson(const Culprit& c) {
  Json j;
  j["rank"] = Opt(c.entity.rank);
  j["host"] = Opt(c.entity.host);
  j["gpu"] = Opt(c.entity.gpu);
  j["cause_class"] = CauseClassName(c.cause_class);
  j["cause"] = Opt(c.cause);
  j["confidence"] = Num(c.confidence);
  j["slowdown"] = Opt(c.slowdown);
  j["onset_step"] = Opt(c.onset_step);
  j["pattern"] = NameJson(c.pattern, PatternName);
  if (c.entity.nic) j["nic"] = *c.entity.nic;
  if (c.entity.switch_name) j["switch"] = *c.entity.switch_name;
  if (c.entity.dp_rank || c.entity.pp_stage || c.entity.tp_rank) {
    j["dp_rank"] = Opt(c.entity.dp_rank);
    j["pp_stage"] = Opt(c.entity.pp_stage);
    j["tp_rank"] = Opt(c.entity.tp_rank);
  }
  if (!c.ranks.empty()) j["ranks"] = c.ranks;
  j["evidence"] = c.evidence;
  return j;
}

Json VerdictJson(const Verdict& v) {
  Json verdict;
  verdict["status"] = VerdictStatusName(v.status);
  verdict["summary"] = v.summary;
  Json culprits = Json::array();
  for (const Culprit& c : v.culprits) culprits.push_back(CulpritJson(c));
  verdict["culprits"] = std::move(culprits);
  verdict["impact"] = {
      {"throughput_lost", Opt(v.throughput_lost)},
      {"method", v.throughput_lost ? Json(ImpactMethodName(v.impact_method)) : Json(nullptr)},
      {"gpu_hours_per_day", Opt(v.gpu_hours_per_day)}};
  if (v.throughput_lost && (v.impact_method == ImpactMethod::kBeforeAfter ||
                            v.impact_method == ImpactMethod::kSlowSteps)) {
    verdict["impact"]["first_step"] = Opt(v.impact_first_step);
    verdict["impact"]["last_step"] = Opt(v.impact_last_step);
  }
  if (v.whatif) verdict["impact"]["whatif"] = WhatIfJson(*v.whatif);
  verdict["next_steps"] = v.next_steps;
  return verdict;
}

Json FindingJson(const Run& run, const Finding& f) {
  Json j;
  j["code"] = Describe(f.code).name;
  j["severity"] = SeverityName(f.severity);
  j["entity"] = EntityJson(f.entity);
  j["message"] = f.message;
  j["confidence"] = Num(f.confidence);
  j["slowdown"] = Opt(f.slowdown);
  j["spike"] = Opt(f.spike);
  if (f.recovered) j["recovered"] = Num(*f.recovered);
  j["band"] = NameJson(f.band, SlowdownBandName);
  j["pattern"] = NameJson(f.pattern, PatternName);
  j["onset_step"] = Opt(f.onset_step);
  j["onset_time"] = TimeJson(f.onset_time);
  j["end_step"] = Opt(f.end_step);
  j["period_steps"] = Opt(f.period_steps);
  j["period_s"] = Opt(f.period_s);
  if (f.cause) j["cause"] = *f.cause;
  if (f.overlaps_slow_steps) j["overlaps_slow_steps"] = *f.overlaps_slow_steps;
  if (!f.ranks.empty()) j["ranks"] = f.ranks;
  Json ev = Json::array();
  for (const Evidence& e : f.evidence) {
    Json ej;
    ej["text"] = e.text;
    ej["source"] = e.source ? SourceJson(run, *e.source) : Json(nullptr);
    ev.push_back(std::move(ej));
  }
  j["evidence"] = std::move(ev);
  j["next_steps"] = f.next_steps;
  return j;
}

Json RanksJson(const StepAnalysis& steps) {
  Json ranks = Json::array();
  for (const RankStepStats& r : steps.ranks) {
    if (r.info.rank < 0) continue;
    Json j;
    j["rank"] = r.info.rank;
    j["host"] = Opt(r.info.host);
    j["gpu"] = Opt(r.info.local_gpu);
    j["pipeline_stage"] = Opt(r.info.pipeline_stage);
    j["data_parallel_index"] = Opt(r.info.data_parallel_index);
    j["steps"] = r.steps_total;
    j["steps_used"] = r.steps_used;
    j["median_step_s"] = r.seconds ? Num(r.seconds->median) : Json(nullptr);
    j["mean_step_s"] = r.seconds ? Num(r.seconds->mean) : Json(nullptr);
    j["p90_step_s"] = r.seconds ? Num(r.seconds->p90) : Json(nullptr);
    j["mad_step_s"] = r.seconds ? Num(r.seconds->mad) : Json(nullptr);
    j["min_step_s"] = r.seconds ? Num(r.seconds->min) : Json(nullptr);
    j["max_step_s"] = r.seconds ? Num(r.seconds->max) : Json(nullptr);
    j["excess"] = Opt(r.excess);
    j["total_excess"] = Opt(r.total_excess);
    j["z"] = Opt(r.z);
    j["slowest_share"] = Num(r.slowest_share);
    j["flagged"] = r.flagged;
    ranks.push_back(std::move(j));
  }
  return ranks;
}

Json JobJson(const JobStepStats& job) {
  Json jj;
  jj["ranks"] = job.ranks;
  jj["steps"] = job.steps;
  jj["first_step"] = Opt(job.first_step);
  jj["median_step_s"] = Opt(job.median_step_s);
  jj["baseline_step_s"] = Opt(job.baseline_step_s);
  jj["sync_spread"] = Opt(job.sync_spread);
  jj["sync_rank_offset"] = Opt(job.sync_rank_offset);
  jj["synchronised"] = job.synchronised;
  jj["compared_on"] = StepBasisName(job.basis);
  jj["step_times_synchronised"] =
      job.basis == StepBasis::kComputeTime ? job.step_times_synchronised : job.synchronised;
  jj["noise_sigma"] = Opt(job.noise_sigma);
  jj["throughput_lost"] = Opt(job.throughput_lost);
  Json eps = Json::array();
  for (const Episode& e : job.episodes) {
    eps.push_back({{"start_step", e.start_step},
                   {"end_step", e.end_step},
                   {"steps", e.steps},
                   {"start_time", TimeJson(e.start_time)},
                   {"median_step_s", Num(e.median_step_s)},
                   {"baseline_step_s", Num(e.baseline_step_s)},
                   {"slowest_rank", Opt(e.slowest_rank)},
                   {"slowest_share", Num(e.slowest_share)}});
  }
  jj["episodes"] = std::move(eps);
  if (const std::optional<LevelShift>& ls = job.level_shift) {
    jj["level_shift"] = {{"first_step", ls->first_step},
                         {"last_step", Opt(ls->last_step)},
                         {"steps", ls->steps},
                         {"before_s", Num(ls->before_s)},
                         {"during_s", Num(ls->during_s)}};
  } else {
    jj["level_shift"] = nullptr;
  }
  return jj;
}

Json MsJson(const std::optional<DurationNs>& ns) {
  return ns ? Num(static_cast<double>(*ns) / 1e6) : Json(nullptr);
}

Json TracesJson(const Run& run, const TraceAnalysis& a) {
  Json traces = Json::array();
  for (const RankTraceStats& t : a.ranks) {
    Json j;
    j["rank"] = t.rank;
    TraceBusyJson(run, t, j);
    // The rank's host from its step records (or the agent, model/run.cc
    // HostsFromAgent) where its trace names none, as the text table shows.
    if (const StepSeries* s = run.FindRank(t.rank); !t.host && s != nullptr && s->info.host)
      j["host"] = *s->info.host;
    j["clock_offset_ms"] = MsJson(t.clock_offset_ns);
    j["instances"] = t.instances;
    j["share_last"] = Num(t.share_last);
    j["median_lateness_ms"] = MsJson(t.median_lateness_ns);
    j["delay_caused_ms"] = Num(static_cast<double>(t.delay_caused_ns) / 1e6);
    j["median_wait_ms"] = MsJson(t.median_wait_ns);
    traces.push_back(std::move(j));
  }
  Json unranked = Json::array();
  for (const TraceBusyStats& t : a.unranked) {
    Json j;
    TraceBusyJson(run, t, j);
    unranked.push_back(std::move(j));
  }
  return {{"ranks", std::move(traces)},
          {"unranked", std::move(unranked)},
          {"world_size", Opt(a.world_size)},
          {"instances", a.instances},
          {"median_transfer_ms", MsJson(a.median_transfer_ns)},
          {"culprit", Opt(a.culprit)},
          {"peer", Opt(a.peer)},
          {"throughput_lost", Opt(a.throughput_lost)}};
}

// The jobs the files hold, when several (model/jobs.h).
Json JobsJson(const JobSplit& split) {
  Json list = Json::array();
  for (size_t i = 0; i < split.jobs.size(); ++i) {
    const JobInfo& j = split.jobs[i];
    list.push_back({{"job", i + 1},
                    {"what", j.what},
                    {"files", j.files},
                    {"first_file", j.first_file},
                    {"world_size", Opt(j.world_size)},
                    {"ranks", j.ranks},
                    {"first_time", TimeJson(j.first_ns)},
                    {"last_time", TimeJson(j.last_ns)},
                    {"hosts", j.hosts}});
  }
  return {{"found", split.jobs.size()},
          {"diagnosed", split.chosen + 1},
          {"chosen_by", split.chosen_by_flag ? "flag" : "largest"},
          {"unplaced_files", split.unplaced},
          {"list", std::move(list)}};
}

Json DataQualityJson(const Run& run) {
  const Diagnostics& d = run.diagnostics;
  Json dq;
  size_t read = 0, skipped = 0;
  Json files = Json::array();
  for (const InputFileInfo& f : run.files) {
    (f.format.empty() ? skipped : read) += 1;
    files.push_back({{"path", f.path},
                     {"format", f.format.empty() ? Json(nullptr) : Json(f.format)},
                     {"bytes", f.bytes},
                     {"records", f.records}});
  }
  dq["files_read"] = read;
  dq["files_skipped"] = skipped;
  dq["records"] = run.total_steps();
  Json bad = Json::object(), notes = Json::object(), skipped_files = Json::object(),
       examples = Json::array();
  for (size_t i = 0; i < static_cast<size_t>(DiagCode::kCount); ++i) {
    auto code = static_cast<DiagCode>(i);
    uint64_t n = d.count(code);
    if (n == 0) continue;
    const DiagInfo& info = Describe(code);
    Json& bucket = info.kind == DiagKind::kBadRecord     ? bad
                   : info.kind == DiagKind::kSkippedFile ? skipped_files
                                                         : notes;
    bucket[std::string(info.name)] = n;
    for (const DiagExample& e : d.examples(code)) {
      examples.push_back({{"code", info.name},
                          {"file", e.file.empty() ? Json(nullptr) : Json(e.file)},
                          {"line", e.line > 0 ? Json(e.line) : Json(nullptr)},
                          {"offset", e.line == 0 && e.offset > 0 ? Json(e.offset) : Json(nullptr)},
                          {"message", e.message}});
    }
  }
  dq["bad_records"] = std::move(bad);
  dq["skipped_files"] = std::move(skipped_files);
  dq["notes"] = std::move(notes);
  dq["examples"] = std::move(examples);
  dq["files"] = std::move(files);
  return dq;
}

// How ranks were tied to GPUs (docs/json-report.md, "rank_map").
Json RankMapJson(const RankMap& map) {
  Json ties = Json::array();
  for (const RankTie& t : map.Ties()) {
    Json ranges = Json::array();
    for (const auto& [first, last] : RankRanges(t.ranks)) ranges.push_back({first, last});
    ties.push_back({{"rule", TieRuleName(t.rule)},
                    {"how", t.how},
                    {"ranks", t.ranks.size()},
                    {"rank_ranges", std::move(ranges)},
                    {"hosts", t.hosts}});
  }
  Json untied = Json::array();
  for (const UntiedGpus& u : map.untied()) {
    untied.push_back({{"host", u.host}, {"gpus", u.gpus}, {"why", u.why}, {"to_tie", u.to_tie}});
  }
  return {{"ties", std::move(ties)}, {"untied", std::move(untied)}};
}

}  // namespace

Json SourceJson(const Run& run, const SourceRef& src) {
  Json j;
  j["file"] = src.file < run.files.size() ? Json(run.files[src.file].path) : Json(nullptr);
  j["line"] = src.line > 0 ? Json(src.line) : Json(nullptr);
  return j;
}

Json TimeJson(const std::optional<TimeNs>& t) {
  return t ? Json(FormatTimestamp(*t)) : Json(nullptr);
}

namespace {

// The run's parallel layout: {dp, pp, tp, cp, vpp, source, file, line} or
// null, and the statements not used.
Json LayoutJson(const Run& run, const RunLayoutResult& r) {
  Json j;
  if (r.layout) {
    const ParallelLayout& l = r.layout->layout;
    j = {{"dp", l.dp}, {"pp", l.pp},   {"tp", l.tp},
         {"cp", l.cp}, {"vpp", l.vpp}, {"source", LayoutSourceName(r.layout->source)}};
    Json src = r.layout->src ? SourceJson(run, *r.layout->src) : Json(nullptr);
    j["source_file"] = src.is_null() ? Json(nullptr) : src["file"];
    j["source_line"] = src.is_null() ? Json(nullptr) : src["line"];
  } else {
    j = nullptr;
  }
  Json out;
  out["layout"] = std::move(j);
  out["not_used"] = r.conflicts;
  return out;
}

}  // namespace

Json HangJson(const HangAnalysis& hang) {
  Json groups = Json::array();
  for (const HangGroupState& g : hang.groups) {
    Json ranks = Json::array();
    for (const HangRankState& s : g.ranks) {
      ranks.push_back({{"rank", s.rank},
                       {"enqueued", Opt(s.enqueued)},
                       {"completed", Opt(s.completed)},
                       {"waiting_in", Opt(report_hang::WaitingIn(s))},
                       {"op", s.op_waiting.empty() ? Json(nullptr) : Json(s.op_waiting)},
                       {"from_dump", s.from_dump}});
    }
    groups.push_back({{"pg_id", g.pg_id},
                      {"desc", g.pg_desc.empty() ? Json(nullptr) : Json(g.pg_desc)},
                      {"matched_by_config", g.matched},
                      {"members", g.members},
                      {"stuck_seq", Opt(g.stuck_seq)},
                      {"ranks", std::move(ranks)}});
  }
  return {{"world", Opt(hang.world)},
          {"stops", hang.episodes},
          {"lines_left_out", hang.events_left_out},
          {"dumps_without_config", hang.dumps_without_config},
          {"statuses_unplaced", hang.statuses_unplaced},
          {"dump_jobs", hang.dump_jobs},
          {"groups", std::move(groups)}};
}

Json BuildReport(const ReportInput& in) {
  Json root;
  root["schema"] = kReportSchema;
  root["tool"] = {{"name", "laggard"}, {"version", kLaggardVersion}};
  root["verdict"] = VerdictJson(in.verdict);
  if (in.run.jobs.several()) root["jobs"] = JobsJson(in.run.jobs);
  Json findings = Json::array();
  for (const Finding* f : in.analyses.AllFindings()) findings.push_back(FindingJson(in.run, *f));
  root["findings"] = std::move(findings);
  root["ranks"] = RanksJson(in.analyses.steps);
  root["job"] = JobJson(in.analyses.steps.job);
  WallSpan span = JobWallSpan(in.run);
  root["job"]["first_time"] = TimeJson(span.first_ns);
  root["job"]["last_time"] = TimeJson(span.last_ns);
  root["traces"] = TracesJson(in.run, in.analyses.traces);
  root["hardware"] = HardwareJson(in.run, in.analyses.hardware);
  if (const RankMap* map = in.RankMapShown()) root["rank_map"] = RankMapJson(*map);
  root["network"] = NetworkJson(in.run, in.analyses.network);
  if (in.analyses.layout.layout || !in.analyses.layout.conflicts.empty()) {
    root["parallel_layout"] = LayoutJson(in.run, in.analyses.layout);
  }
  if (in.analyses.hang.hang) root["hang"] = HangJson(in.analyses.hang);
  if (!in.confirmations.empty()) {
    Json confirmation = Json::array();
    for (const ConfirmationLine& c : in.confirmations) {
      confirmation.push_back(
          {{"culprit", c.culprit},
           {"verdict", c.verdict},
           {"locus", c.locus.empty() ? Json(nullptr) : Json(c.locus)},
           {"host", c.host.empty() ? Json(nullptr) : Json(c.host)},
           {"figures", c.figures},
           {"folded", c.not_folded.empty()},
           {"not_folded", c.not_folded.empty() ? Json(nullptr) : Json(c.not_folded)}});
    }
    root["confirmation"] = std::move(confirmation);
  }
  root["data_quality"] = DataQualityJson(in.run);
  root["series"] = BuildSeries(in);
  return root;
}

namespace {

// nlohmann's dump(2), except that an array of numbers (and nulls) stays on
// one line: the series section holds thousands of them.
void Pretty(const Json& j, int indent, std::string& out) {
  auto scalar = [&](const Json& v) {
    out += v.dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  auto pad = [&](int n) { out.append(static_cast<size_t>(n), ' '); };
  if (j.is_object()) {
    if (j.empty()) return out += "{}", void();
    out += "{\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      pad(indent + 2);
      scalar(Json(it.key()));
      out += ": ";
      Pretty(it.value(), indent + 2, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    pad(indent);
    out += "}";
  } else if (j.is_array()) {
    if (j.empty()) return out += "[]", void();
    bool flat =
        std::all_of(j.begin(), j.end(), [](const Json& v) { return v.is_number() || v.is_null(); });
    out += flat ? "[" : "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      if (flat) {
        if (i > 0) out += ", ";
        scalar(j[i]);
        continue;
      }
      pad(indent + 2);
      Pretty(j[i], indent + 2, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    if (!flat) pad(indent);
    out += "]";
  } else {
    scalar(j);
  }
}

}  // namespace
}  // namespace report_json

std::string RenderJson(const ReportInput& in) {
  std::string out;
  report_json::Pretty(report_json::BuildReport(in), 0, out);
  return out + "\n";
}

}  // namespace laggard
