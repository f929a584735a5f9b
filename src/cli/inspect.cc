#include "cli/inspect.h"

#include <algorithm>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "ingest/ingest.h"
#include "report/report.h"

namespace laggard {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json Opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string_view KindName(DiagKind kind) {
  switch (kind) {
    case DiagKind::kBadRecord: return "bad_record";
    case DiagKind::kSkippedFile: return "skipped_file";
    case DiagKind::kNote: return "note";
  }
  return "note";
}

// The codes `d` counted, in catalogue order.
std::vector<DiagCode> CodesOf(const Diagnostics& d) {
  std::vector<DiagCode> codes;
  for (size_t i = 0; i < static_cast<size_t>(DiagCode::kCount); ++i) {
    if (d.count(static_cast<DiagCode>(i)) > 0) codes.push_back(static_cast<DiagCode>(i));
  }
  return codes;
}

const DiagExample* FirstExample(const Diagnostics& d, DiagCode code) {
  const auto& examples = d.examples(code);
  return examples.empty() ? nullptr : &examples.front();
}

// Why a file no reader took was skipped: its first skipped-file diagnostic
// in catalogue order, else its first diagnostic of any kind (a gzip stream
// damaged before its first line).
std::optional<DiagCode> SkipReason(const Diagnostics& d) {
  std::vector<DiagCode> codes = CodesOf(d);
  for (DiagCode c : codes) {
    if (Describe(c).kind == DiagKind::kSkippedFile) return c;
  }
  if (!codes.empty()) return codes.front();
  return std::nullopt;
}

// One data-quality entry: code, kind, count and where it was first seen.
// `with_file`: the run-level list names the file, a file's own list does not.
Json DiagnosticsJson(const Diagnostics& d, bool with_file) {
  Json list = Json::array();
  for (DiagCode code : CodesOf(d)) {
    const DiagInfo& info = Describe(code);
    Json j;
    j["code"] = info.name;
    j["kind"] = KindName(info.kind);
    j["count"] = d.count(code);
    const DiagExample* e = FirstExample(d, code);
    if (with_file) j["file"] = e && !e->file.empty() ? Json(e->file) : Json(nullptr);
    j["line"] = e && e->line > 0 ? Json(e->line) : Json(nullptr);
    j["offset"] = e && e->line == 0 && e->offset > 0 ? Json(e->offset) : Json(nullptr);
    j["message"] = e ? Json(e->message) : Json(nullptr);
    list.push_back(std::move(j));
  }
  return list;
}

Json TraceJson(const TraceFacts& t) {
  Json by_class;
  for (size_t c = 0; c < t.ops_by_class.size(); ++c) {
    by_class[std::string(OpClassName(static_cast<OpClass>(c)))] = t.ops_by_class[c];
  }
  return {{"producer", t.producer},
          {"rank", Opt(t.rank)},
          {"world_size", Opt(t.world_size)},
          {"host", Opt(t.host)},
          {"device", Opt(t.device)},
          {"cpu_only", t.cpu_only},
          {"truncated", t.truncated},
          {"steps", t.steps},
          {"events", t.events},
          {"events_lost", t.events_lost},
          {"ops", t.ops},
          {"kernels", t.kernels},
          {"collectives", t.collectives},
          {"ops_by_class", std::move(by_class)}};
}

Json LayoutJson(const std::optional<ParallelLayout>& l) {
  if (!l) return nullptr;
  return {{"dp", l->dp}, {"pp", l->pp}, {"tp", l->tp}, {"vpp", l->vpp}};
}

Json TimelineJson(const TimelineFacts& t) {
  Json by_kind;
  for (size_t k = 0; k < t.ops_by_kind.size(); ++k) {
    by_kind[std::string(TimelineOpName(static_cast<TimelineOpKind>(k)))] = t.ops_by_kind[k];
  }
  return {{"workers", t.workers},
          {"workers_placed", t.workers_placed},
          {"first_rank", Opt(t.first_rank)},
          {"last_rank", Opt(t.last_rank)},
          {"layout", LayoutJson(t.layout)},
          {"ops", t.ops},
          {"steps", t.steps},
          {"first_step", Opt(t.first_step)},
          {"last_step", Opt(t.last_step)},
          {"ops_by_kind", std::move(by_kind)}};
}

Json EntryJson(const CollectiveRecord& r) {
  return {{"record_id", r.record_id},
          {"pg_id", r.pg_id},
          {"collective_seq", Opt(r.collective_seq)},
          {"p2p_seq", Opt(r.p2p_seq)},
          {"op", r.op},
          {"state", CollectiveStateName(r.state)},
          {"duration_ms", Opt(r.duration_ms)}};
}

Json DumpJson(const DumpFacts& d) {
  Json status = Json::array();
  for (const GroupProgress& p : d.status) {
    status.push_back({{"pg_id", p.pg_id},
                      {"last_enqueued", Opt(p.last_enqueued)},
                      {"last_started", Opt(p.last_started)},
                      {"last_completed", Opt(p.last_completed)}});
  }
  Json last = Json::array();
  for (const CollectiveRecord& r : d.last_entries) last.push_back(EntryJson(r));
  return {
      {"rank", Opt(d.rank)},
      {"version", d.version.empty() ? Json(nullptr) : Json(d.version)},
      {"format", d.format},
      {"comm_lib_version", d.comm_lib_version.empty() ? Json(nullptr) : Json(d.comm_lib_version)},
      {"truncated", d.truncated},
      {"entries", d.entries},
      {"groups", std::move(status)},
      {"last_entries", std::move(last)}};
}

Json NetworkJson(const NetworkFacts& n) {
  Json j = {{"records", n.records()},
            {"ib_ports", n.ib_ports},
            {"eth_links", n.eth_links},
            {"nccl_tests", n.nccl_tests},
            {"nccl_test_rows", n.nccl_test_rows},
            {"nccl_ranks", n.nccl_ranks},
            {"topologies", n.topologies},
            {"port_counters", n.port_counters},
            {"switch_map_hosts", n.switch_map_hosts}};
  // Only where there are some, so that other inputs' output is as it was.
  if (n.p2p_tests > 0) j["p2p_tests"] = n.p2p_tests;
  if (n.node_pairs > 0) j["node_pairs"] = n.node_pairs;
  return j;
}

Json HangEventJson(const HangEvent& e) {
  auto str = [](const std::string& v) { return v.empty() ? Json(nullptr) : Json(v); };
  return {{"kind", HangEventKindName(e.kind)},
          {"line", e.src.line},
          {"rank", Opt(e.rank)},
          {"group_rank", Opt(e.group_rank)},
          {"pg_id", str(e.pg_id)},
          {"pg_desc", str(e.pg_desc)},
          {"pg_guid", str(e.pg_guid)},
          {"seq", Opt(e.seq)},
          {"last_enqueued", Opt(e.last_enqueued)},
          {"last_completed", Opt(e.last_completed)},
          {"op", str(e.op)},
          {"timeout_ms", Opt(e.timeout_ms)},
          {"ran_for_ms", Opt(e.ran_for_ms)},
          {"ranks_named", e.ranks_named},
          {"local_rank", Opt(e.local_rank)},
          {"exit_code", Opt(e.exit_code)},
          {"error_code", Opt(e.error_code)},
          {"host", str(e.host)},
          {"peer", str(e.peer)},
          {"time", e.time_ns ? Json(FormatTimestamp(*e.time_ns)) : Json(nullptr)},
          {"yearless_time_ns", Opt(e.yearless_time_ns)}};
}

Json HangJson(const HangFacts& h) {
  Json by_kind;
  for (size_t k = 0; k < h.by_kind.size(); ++k) {
    if (h.by_kind[k] > 0)
      by_kind[std::string(HangEventKindName(static_cast<HangEventKind>(k)))] = h.by_kind[k];
  }
  Json shown = Json::array();
  for (const HangEvent& e : h.shown) shown.push_back(HangEventJson(e));
  return {{"events", h.events},
          {"by_kind", std::move(by_kind)},
          {"groups", h.groups},
          {"truncated", h.truncated},
          {"truncation", h.truncation.empty() ? Json(nullptr) : Json(h.truncation)},
          {"first_events", std::move(shown)}};
}

Json FileJson(const InputFileInfo& info, const FileFacts& f) {
  Json j;
  j["path"] = info.path;
  j["format"] = info.format.empty() ? Json(nullptr) : Json(info.format);
  std::optional<DiagCode> reason = info.format.empty() ? SkipReason(f.diagnostics) : std::nullopt;
  if (reason) {
    const DiagExample* e = FirstExample(f.diagnostics, *reason);
    j["skipped"] = {{"code", Describe(*reason).name},
                    {"message", e ? e->message : std::string(Describe(*reason).description)}};
  } else {
    j["skipped"] = nullptr;
  }
  j["bytes"] = info.bytes;
  j["records"] = info.records;
  if (f.step_records > 0 || f.ranks > 0) {
    j["steps"] = {{"records", f.step_records},
                  {"unattributed", f.unattributed_steps},
                  {"ranks", f.ranks},
                  {"first_rank", Opt(f.first_rank)},
                  {"last_rank", Opt(f.last_rank)},
                  {"distinct_steps", f.distinct_steps},
                  {"first_step", Opt(f.first_step)},
                  {"last_step", Opt(f.last_step)}};
  } else {
    j["steps"] = nullptr;
  }
  Json traces = Json::array();
  for (const TraceFacts& t : f.traces) traces.push_back(TraceJson(t));
  j["traces"] = std::move(traces);
  Json timelines = Json::array();
  for (const TimelineFacts& t : f.op_timelines) timelines.push_back(TimelineJson(t));
  j["op_timelines"] = std::move(timelines);
  // Only for files that hold dumps, so that other files' output is as it was.
  if (!f.dumps.empty()) {
    Json dumps = Json::array();
    for (const DumpFacts& d : f.dumps) dumps.push_back(DumpJson(d));
    j["flight_recorder"] = std::move(dumps);
  }
  j["gpus"] = f.gpus > 0 ? Json{{"gpus", f.gpus}, {"samples", f.gpu_samples}} : Json(nullptr);
  j["network"] = f.network.records() > 0 || f.network.nccl_test_rows > 0 ? NetworkJson(f.network)
                                                                         : Json(nullptr);
  if (f.hang.events > 0) j["hang"] = HangJson(f.hang);
  // Only for files that hold them, as "hang".
  if (f.tool_reports > 0) j["straggler_reports"] = f.tool_reports;
  if (f.nvrx_reports > 0) j["nvrx_reports"] = f.nvrx_reports;
  j["hosts"] = f.hosts;
  j["data_quality"] = DiagnosticsJson(f.diagnostics, false);
  return j;
}

// The run the files merged into: what diagnose would analyse.
struct RunTotals {
  size_t files = 0, files_read = 0, files_skipped = 0;
  uint64_t records = 0;
  uint64_t ranks = 0, step_records = 0, unattributed_steps = 0;
  std::optional<int64_t> first_step, last_step;
  uint64_t traces = 0, trace_events = 0, trace_ops = 0, trace_kernels = 0, trace_collectives = 0;
  uint64_t op_timelines = 0, timeline_workers = 0, timeline_ops = 0;
  uint64_t fr_dumps = 0, fr_entries = 0, process_groups = 0;
  uint64_t gpus = 0, gpu_samples = 0;
  NetworkFacts network;
  uint64_t hang_events = 0, hang_groups = 0, hang_logs_truncated = 0;
};

RunTotals TotalsOf(const Run& run) {
  RunTotals t;
  t.files = run.files.size();
  for (const InputFileInfo& f : run.files) {
    (f.format.empty() ? t.files_skipped : t.files_read) += 1;
    t.records += f.records;
  }
  t.ranks = run.ranks.size();
  auto steps_of = [&](const StepSeries& s) {
    t.step_records += s.steps.size();
    if (s.steps.empty()) return;
    // Series are sorted by step after Finalize().
    if (!t.first_step || s.steps.front().step < *t.first_step) t.first_step = s.steps.front().step;
    if (!t.last_step || s.steps.back().step > *t.last_step) t.last_step = s.steps.back().step;
  };
  for (const StepSeries& s : run.ranks) steps_of(s);
  for (const StepSeries& s : run.unattributed) {
    steps_of(s);
    t.unattributed_steps += s.steps.size();
  }
  t.traces = run.traces.size();
  for (const RankTrace& trace : run.traces) {
    TraceFacts f = FactsOfTrace(trace);
    t.trace_events += f.events;
    t.trace_ops += f.ops;
    t.trace_kernels += f.kernels;
    t.trace_collectives += f.collectives;
  }
  t.op_timelines = run.op_timelines.size();
  for (const OpTimeline& timeline : run.op_timelines) {
    t.timeline_workers += timeline.workers.size();
    t.timeline_ops += timeline.ops.size();
  }
  t.fr_dumps = run.hang.dumps.size();
  for (const FlightRecorderDump& d : run.hang.dumps) t.fr_entries += d.entries.size();
  t.process_groups = run.hang.groups.size();
  t.gpus = run.hardware.gpus.size();
  for (const GpuRecord& g : run.hardware.gpus) t.gpu_samples += g.samples.size();
  t.network = CountNetwork(run.network);
  t.hang_events = run.hang.events.size();
  t.hang_groups = run.hang.groups.size();
  for (const HangLogInfo& log : run.hang.logs) t.hang_logs_truncated += log.truncated;
  return t;
}

Json TotalsJson(const RunTotals& t, const Diagnostics& d) {
  Json j = {{"files", t.files},
            {"files_read", t.files_read},
            {"files_skipped", t.files_skipped},
            {"records", t.records},
            {"ranks", t.ranks},
            {"step_records", t.step_records},
            {"unattributed_steps", t.unattributed_steps},
            {"first_step", Opt(t.first_step)},
            {"last_step", Opt(t.last_step)},
            {"traces", t.traces},
            {"trace_events", t.trace_events},
            {"trace_ops", t.trace_ops},
            {"trace_kernels", t.trace_kernels},
            {"trace_collectives", t.trace_collectives},
            {"op_timelines", t.op_timelines},
            {"timeline_workers", t.timeline_workers},
            {"timeline_ops", t.timeline_ops},
            {"gpus", t.gpus},
            {"gpu_samples", t.gpu_samples},
            {"network", NetworkJson(t.network)},
            {"bad_records", d.TotalOfKind(DiagKind::kBadRecord)},
            {"skipped_files", d.TotalOfKind(DiagKind::kSkippedFile)},
            {"notes", d.TotalOfKind(DiagKind::kNote)}};
  // Only for runs with hang evidence, as FileJson's "flight_recorder" and
  // "hang": other runs' output is as it was.
  if (t.fr_dumps > 0 || t.process_groups > 0) {
    j["flight_recorder_dumps"] = t.fr_dumps;
    j["flight_recorder_entries"] = t.fr_entries;
    j["process_groups"] = t.process_groups;
  }
  if (t.hang_events > 0 || t.hang_logs_truncated > 0) {
    j["hang_events"] = t.hang_events;
    j["hang_logs_truncated"] = t.hang_logs_truncated;
  }
  return j;
}

std::string InspectJson(const Run& run, const std::vector<FileFacts>& facts) {
  Json root;
  root["schema"] = "laggard.inspect/1";
  root["tool"] = {{"name", "laggard"}, {"version", std::string(kLaggardVersion)}};
  Json files = Json::array();
  for (size_t i = 0; i < run.files.size(); ++i) files.push_back(FileJson(run.files[i], facts[i]));
  root["files"] = std::move(files);
  root["totals"] = TotalsJson(TotalsOf(run), run.diagnostics);
  root["data_quality"] = DiagnosticsJson(run.diagnostics, true);
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string Plural(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string Range(std::optional<int64_t> first, std::optional<int64_t> last) {
  if (!first || !last) return "";
  return *first == *last ? fmt::format("{}", *first) : fmt::format("{}-{}", *first, *last);
}

std::string NetworkText(const NetworkFacts& n) {
  std::vector<std::string> parts;
  if (n.ib_ports > 0) parts.push_back(Plural(n.ib_ports, "IB port", "IB ports"));
  if (n.eth_links > 0) parts.push_back(Plural(n.eth_links, "Ethernet link", "Ethernet links"));
  if (n.nccl_tests > 0) {
    parts.push_back(fmt::format("{} ({})",
                                Plural(n.nccl_tests, "nccl-tests run", "nccl-tests runs"),
                                Plural(n.nccl_test_rows, "row", "rows")));
  }
  if (n.nccl_ranks > 0) parts.push_back(Plural(n.nccl_ranks, "NCCL process", "NCCL processes"));
  if (n.topologies > 0) parts.push_back(Plural(n.topologies, "topology", "topologies"));
  if (n.p2p_tests > 0) {
    parts.push_back(
        Plural(n.p2p_tests, "p2pBandwidthLatencyTest run", "p2pBandwidthLatencyTest runs"));
  }
  if (n.node_pairs > 0) parts.push_back(Plural(n.node_pairs, "node pair", "node pairs"));
  if (n.port_counters > 0) {
    parts.push_back(Plural(n.port_counters, "port counter block", "port counter blocks"));
  }
  if (n.switch_map_hosts > 0) {
    parts.push_back(Plural(n.switch_map_hosts, "host on a switch", "hosts on switches"));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string TraceText(const TraceFacts& t) {
  std::string who = t.rank ? fmt::format("rank {}", *t.rank) : "no rank";
  if (t.world_size) who += fmt::format(" of {}", *t.world_size);
  std::string s = fmt::format(
      "{} trace, {}{}: {}, {} events, {} ({}), {}", t.producer, who, t.cpu_only ? ", CPU only" : "",
      Plural(t.steps, "step", "steps"), t.events, Plural(t.ops, "op", "ops"),
      Plural(t.kernels, "kernel", "kernels"), Plural(t.collectives, "collective", "collectives"));
  if (t.truncated) s += fmt::format(", truncated (~{} events lost)", t.events_lost);
  return s;
}

std::string LayoutWords(const ParallelLayout& l) {
  std::string s = fmt::format("dp {} x pp {} x tp {}", l.dp, l.pp, l.tp);
  if (l.vpp > 1) s += fmt::format(", vpp {}", l.vpp);
  return s;
}

std::string TimelineText(const TimelineFacts& t) {
  std::string workers = Plural(t.workers, "worker", "workers");
  if (t.first_rank) workers += fmt::format(" (ranks {})", Range(t.first_rank, t.last_rank));
  std::string layout = t.layout ? "layout " + LayoutWords(*t.layout)
                                : fmt::format("layout unknown ({} of {} workers placed)",
                                              t.workers_placed, t.workers);
  std::string s =
      fmt::format("op timeline, {}, {}: {}", workers, layout, Plural(t.ops, "op", "ops"));
  if (t.first_step) {
    s += fmt::format(", {} ({})", Plural(t.steps, "step", "steps"),
                     Range(t.first_step, t.last_step));
  }
  return s;
}

// "Flight Recorder dump, rank 3, version 2.10 (pickle), truncated: 5
// entries, last #4 nccl:all_reduce completed; pg 0 enqueued 6 started 6
// completed 5".
std::string DumpText(const DumpFacts& d) {
  auto seq = [](const std::optional<int64_t>& v) { return v ? fmt::format("{}", *v) : "?"; };
  std::string s = fmt::format("Flight Recorder dump, {}, version {} ({})",
                              d.rank ? fmt::format("rank {}", *d.rank) : "no rank",
                              d.version.empty() ? "?" : d.version, d.format);
  if (d.truncated) s += ", truncated";
  s += ": " + Plural(d.entries, "entry", "entries");
  if (!d.last_entries.empty()) {
    const CollectiveRecord& r = d.last_entries.back();
    s += fmt::format(", last #{} {} {}", r.record_id, r.op, CollectiveStateName(r.state));
  }
  for (const GroupProgress& p : d.status) {
    s += fmt::format("; pg {} enqueued {} started {} completed {}", p.pg_id, seq(p.last_enqueued),
                     seq(p.last_started), seq(p.last_completed));
  }
  return s;
}

std::string HangText(const HangFacts& h) {
  std::vector<std::string> kinds;
  for (size_t k = 0; k < h.by_kind.size(); ++k) {
    if (h.by_kind[k] == 0) continue;
    kinds.push_back(
        fmt::format("{} {}", h.by_kind[k], HangEventKindName(static_cast<HangEventKind>(k))));
  }
  std::string s =
      fmt::format("{} ({})", Plural(h.events, "hang event", "hang events"), fmt::join(kinds, ", "));
  if (h.truncated) s += fmt::format(", log truncated: {}", h.truncation);
  return s;
}

// The "gave" column of a file: what its records are, in words.
std::string GaveText(const InputFileInfo& info, const FileFacts& f) {
  if (info.format.empty()) {
    std::optional<DiagCode> reason = SkipReason(f.diagnostics);
    if (!reason) return "";
    const DiagExample* e = FirstExample(f.diagnostics, *reason);
    return fmt::format("{}: {}", Describe(*reason).name,
                       e ? e->message : std::string(Describe(*reason).description));
  }
  std::vector<std::string> parts;
  if (f.step_records > 0 || f.ranks > 0) {
    std::string s = Plural(f.step_records, "step record", "step records");
    if (f.ranks > 0) {
      s += fmt::format(", {} ({})", Plural(f.ranks, "rank", "ranks"),
                       Range(f.first_rank, f.last_rank));
    }
    if (f.first_step) s += fmt::format(", steps {}", Range(f.first_step, f.last_step));
    if (f.unattributed_steps > 0) s += fmt::format(", {} without a rank", f.unattributed_steps);
    parts.push_back(std::move(s));
  }
  for (const TraceFacts& t : f.traces) parts.push_back(TraceText(t));
  for (const TimelineFacts& t : f.op_timelines) parts.push_back(TimelineText(t));
  for (const DumpFacts& d : f.dumps) parts.push_back(DumpText(d));
  if (f.groups > 0) parts.push_back(Plural(f.groups, "process group", "process groups"));
  if (f.gpus > 0) {
    parts.push_back(fmt::format("{}, {}", Plural(f.gpus, "GPU", "GPUs"),
                                Plural(f.gpu_samples, "sample", "samples")));
  }
  if (f.network.records() > 0) parts.push_back(NetworkText(f.network));
  if (f.hang.events > 0) parts.push_back(HangText(f.hang));
  if (f.tool_reports > 0) {
    parts.push_back(
        Plural(f.tool_reports, "StragglerDetector report", "StragglerDetector reports"));
  }
  if (f.nvrx_reports > 0) {
    parts.push_back(Plural(f.nvrx_reports, "NVRx straggler report", "NVRx straggler reports"));
  }
  if (!f.hosts.empty()) {
    constexpr size_t kShownHosts = 3;
    std::vector<std::string> shown(f.hosts.begin(),
                                   f.hosts.begin() + std::min(f.hosts.size(), kShownHosts));
    std::string h =
        fmt::format("{} {}", f.hosts.size() == 1 ? "host" : "hosts", fmt::join(shown, ", "));
    if (f.hosts.size() > kShownHosts) h += fmt::format(" +{} more", f.hosts.size() - kShownHosts);
    parts.push_back(std::move(h));
  }
  if (parts.empty()) return "nothing";
  return fmt::format("{}", fmt::join(parts, "; "));
}

// "path:12" / "path @4096" with the file, "line 12" / "offset 4096" without.
std::string Where(const DiagExample& e, bool with_file) {
  if (!with_file || e.file.empty()) {
    if (e.line > 0) return fmt::format("line {}", e.line);
    if (e.offset > 0) return fmt::format("offset {}", e.offset);
    return "";
  }
  if (e.line > 0) return fmt::format("{}:{}", e.file, e.line);
  if (e.offset > 0) return fmt::format("{} @{}", e.file, e.offset);
  return e.file;
}

// One line per code: count and first location. `except`: a code already
// shown (a skipped file's reason).
void DiagnosticsText(const Diagnostics& d, bool with_file, std::string_view indent,
                     std::ostream& out, std::optional<DiagCode> except = std::nullopt) {
  for (DiagCode code : CodesOf(d)) {
    if (code == except) continue;
    const DiagInfo& info = Describe(code);
    out << fmt::format("{}{:<26} {:>8}  ", indent, info.name, d.count(code));
    const DiagExample* e = FirstExample(d, code);
    if (e == nullptr) {
      out << info.description << "\n";
      continue;
    }
    std::string where = Where(*e, with_file);
    out << (where.empty() ? "" : "first at " + where + ": ") << e->message << "\n";
  }
}

void InspectText(const Run& run, const std::vector<FileFacts>& facts, std::ostream& out) {
  RunTotals t = TotalsOf(run);
  out << fmt::format(
      "laggard inspect: {}, {} read, {} skipped (what ingest made of them; no "
      "diagnosis)\n\n",
      Plural(t.files, "file", "files"), t.files_read, t.files_skipped);
  // A path longer than the column sits on its own line, the row below it.
  constexpr size_t kMaxPathWidth = 60;
  size_t path_w = 4, format_w = 7;
  for (const InputFileInfo& f : run.files) {
    if (f.path.size() <= kMaxPathWidth) path_w = std::max(path_w, f.path.size());
    format_w = std::max(format_w, f.format.size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:>9}  {}\n", "FILE", path_w, "FORMAT", format_w, "RECORDS",
                     "GAVE");
  for (size_t i = 0; i < run.files.size(); ++i) {
    const InputFileInfo& info = run.files[i];
    std::string path = info.path;
    if (path.size() > path_w) {
      out << path << "\n";
      path.clear();
    }
    out << fmt::format("{:<{}}  {:<{}}  {:>9}  {}\n", path, path_w,
                       info.format.empty() ? "skipped" : info.format, format_w, info.records,
                       GaveText(info, facts[i]));
    const Diagnostics& d = facts[i].diagnostics;
    DiagnosticsText(d, false, "    ", out,
                    info.format.empty() ? SkipReason(d) : std::optional<DiagCode>());
  }

  out << fmt::format("\nrun after merging: {} from {}\n", Plural(t.records, "record", "records"),
                     Plural(t.files_read, "file", "files"));
  out << fmt::format("  steps    {} of {}", Plural(t.step_records, "step record", "step records"),
                     Plural(t.ranks, "rank", "ranks"));
  if (t.first_step) out << fmt::format(", steps {}", Range(t.first_step, t.last_step));
  if (t.unattributed_steps > 0) out << fmt::format(", {} without a rank", t.unattributed_steps);
  out << fmt::format("\n  traces   {}", t.traces);
  if (t.traces > 0) {
    out << fmt::format(": {} events, {} ({}), {}", t.trace_events, Plural(t.trace_ops, "op", "ops"),
                       Plural(t.trace_kernels, "kernel", "kernels"),
                       Plural(t.trace_collectives, "collective", "collectives"));
  }
  if (t.op_timelines > 0) {
    out << fmt::format("\n  timelines {}: {} of {}", t.op_timelines,
                       Plural(t.timeline_ops, "op", "ops"),
                       Plural(t.timeline_workers, "worker", "workers"));
  }
  if (t.fr_dumps > 0 || t.process_groups > 0) {
    out << fmt::format("\n  hangs    {}: {}, {}",
                       Plural(t.fr_dumps, "Flight Recorder dump", "Flight Recorder dumps"),
                       Plural(t.fr_entries, "entry", "entries"),
                       Plural(t.process_groups, "process group record", "process group records"));
  }
  out << fmt::format("\n  GPUs     {}, {}\n", t.gpus, Plural(t.gpu_samples, "sample", "samples"));
  out << fmt::format("  network  {}", Plural(t.network.records(), "record", "records"));
  if (t.network.records() > 0) out << ": " << NetworkText(t.network);
  if (t.hang_events > 0) {
    out << fmt::format("\n  hang     {}", Plural(t.hang_events, "event", "events"));
    if (t.hang_groups > 0) {
      out << fmt::format(", {}", Plural(t.hang_groups, "process group", "process groups"));
    }
    if (t.hang_logs_truncated > 0) {
      out << fmt::format(", {} truncated", Plural(t.hang_logs_truncated, "log", "logs"));
    }
  }
  out << "\n";

  const Diagnostics& d = run.diagnostics;
  out << fmt::format("\ndata quality: {}, {}, {}\n",
                     Plural(d.TotalOfKind(DiagKind::kBadRecord), "bad record", "bad records"),
                     Plural(d.TotalOfKind(DiagKind::kSkippedFile), "skipped file", "skipped files"),
                     Plural(d.TotalOfKind(DiagKind::kNote), "note", "notes"));
  DiagnosticsText(d, true, "  ", out);
}

}  // namespace

void AddInspectFlags(CLI::App* cmd, InspectOptions& o) {
  cmd->add_option("paths", o.paths, "files or directories (walked recursively)")->required();
  cmd->add_option("--json", o.json_out,
                  "write the inspection as JSON to FILE ('-' for stdout, instead of the text)");
  AddIngestFlags(cmd, o.input);
}

int Inspect(const InspectOptions& o, std::ostream& out, std::ostream& err) {
  std::vector<FileFacts> facts;
  auto run = IngestWithFlags(o.paths, o.input, {}, &facts);
  if (!run.ok()) {
    err << "laggard: " << run.status().message() << "\n";
    return kExitNoInput;
  }
  if (!o.json_out.empty()) {
    std::string json = InspectJson(*run, facts);
    if (o.json_out == "-") {
      out << json;
    } else {
      std::ofstream f(o.json_out, std::ios::binary);
      f << json;
      f.close();
      if (!f) {
        err << "laggard: cannot write " << o.json_out << "\n";
        return kExitNoInput;
      }
    }
  }
  if (o.json_out != "-") InspectText(*run, facts, out);
  // As diagnose: nothing to analyse is a failure, whatever was recognised.
  if (run->NothingUsable() && run->hang.empty()) {
    err << fmt::format(
        "laggard: no usable step times, traces, op timelines, GPU metrics, network data, hang "
        "evidence or StragglerDetector reports in {} ({} skipped)\n",
        Plural(run->files.size(), "file", "files"),
        std::count_if(run->files.begin(), run->files.end(),
                      [](const InputFileInfo& f) { return f.format.empty(); }));
    return kExitNoInput;
  }
  return kExitOk;
}

}  // namespace laggard
