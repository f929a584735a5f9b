// The merged trace: every signal of the run on one timeline, as Chrome trace
// JSON (object format) for Perfetto UI and chrome://tracing.
// Layout and conventions in docs/merged-trace.md.
//
//   pid 1            "job": job-level findings
//   pid 2..          one process per host (sorted by name), then "unknown host"
//     tid            per rank: "rank N" (steps), "rank N collectives"
//                    (ProfilerStep ranges and collective calls of its trace);
//                    a slice that would overlap its track's previous one
//                    without nesting goes to an extra "(overlap k)" track
//     counters       per GPU: "GPU i temp_c", "GPU i sm_clock_mhz", "GPU i power_w",
//                    "GPU i power_limit_w"
//   instants         findings at their onset, on the rank's track, the
//                    host's process or the job process
//   hangs            per rank that dumped: "rank N collectives (Flight
//                    Recorder)"; dated hang lines and the decided hang
//                    finding as instants (perfetto_hang.cc)
//   pid last+1..     per op timeline and DP rank: "op timeline: DP rank d
//                    (measured)" and "... (ideal, what-if)", a thread per
//                    (pp, tp) worker (perfetto_op_timeline.cc)
//
// Clocks: a trace's times have its rank's clock offset (as the trace detector
// estimated it) removed; step starts and GPU samples of a host have the
// median offset of that host's traced ranks removed (the same host clock).
// ts is microseconds since the earliest instant written (`otherData.origin`).
// Steps whose start was not logged are laid end to end from 0, and GPU
// samples without a date from 0; otherData says which.

#include <algorithm>
#include <map>
#include <set>

#include "report/hang_view.h"
#include "report/json_document.h"
#include "report/report.h"
#include "report/trace_writer.h"

namespace laggard {
namespace {

using report_json::Json;
using report_trace::AssignLanes;
using report_trace::Micros;
using report_trace::TraceStr;
using report_trace::TraceWriter;

// Step slices written per track at most; the rest is counted in otherData.
constexpr size_t kMaxStepEventsTotal = 2'000'000;
constexpr size_t kMinStepEventsPerTrack = 2'000;
constexpr int kFirstTid = 1'000'000;

std::optional<int64_t> MedianOf(std::vector<int64_t> v) {
  if (v.empty()) return std::nullopt;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// start: absolute, or relative to the origin when !anchored.
using Slice = report_trace::TraceSlice;

// Logged times are rounded (a CSV with millisecond timestamps and
// durations), so step N often "ends" a fraction of a millisecond after step
// N+1 starts. Such a slice is cut at the next one's start, when the overlap
// is at most 1 ms + 1% of its duration, rather than moved to an overlap
// track; its args keep the logged duration.
void TrimRoundingOverlaps(std::vector<Slice>& slices) {
  for (size_t i = 0; i + 1 < slices.size(); ++i) {
    Slice& a = slices[i];
    const Slice& b = slices[i + 1];
    TimeNs a_end = a.start + a.dur, b_end = b.start + b.dur;
    if (b.start >= a_end || b_end <= a_end) continue;  // disjoint, or nested
    if (a_end - b.start <= 1'000'000 + a.dur / 100) a.dur = b.start - a.start;
  }
}

// Where a rank's step slices were put: the track, and the ts of each step.
struct RankTrack {
  int pid = 0;
  int tid = 0;
  std::map<int64_t, int64_t> step_ts;  // step -> ts in ns since the origin
};

bool AllLogged(const StepSeries& s) {
  return !s.steps.empty() && std::all_of(s.steps.begin(), s.steps.end(), [](const StepRecord& r) {
    return r.start_ns.has_value();
  });
}

// Everything decided before the first event is written: which process each
// host gets, each host's clock offset, where each rank's profiled window
// starts, and the origin of ts.
struct Layout {
  std::map<int32_t, std::optional<std::string>> host_of_rank;
  std::map<std::string, int> pid_of;  // pid 1 is the job
  int unknown_pid = 0;
  std::map<std::string, int64_t> host_offset;  // ns, removed from the host's times
  Json offsets_ms = Json::object();
  std::vector<bool> rank_logged;  // per Run::ranks: every step has a start time
  // Where each rank's profiled window starts on the aligned clock: trace
  // findings have no onset of their own and are placed there.
  std::map<int32_t, TimeNs> trace_start;
  std::optional<TimeNs> first_trace_start;
  std::optional<TimeNs> origin;  // the earliest absolute instant written

  int64_t HostShift(const std::optional<std::string>& host) const {
    if (!host) return 0;
    auto it = host_offset.find(*host);
    return it == host_offset.end() ? 0 : it->second;
  }
  TimeNs t0() const { return origin.value_or(0); }
};

// Hosts -> pids, in name order from 2.
void AssignPids(const ReportInput& in, Layout& l) {
  std::set<std::string> host_set;
  for (const StepSeries& s : in.run.ranks) {
    l.host_of_rank[s.info.rank] = s.info.host;
    if (s.info.host) host_set.insert(*s.info.host);
  }
  for (const RankTraceStats& st : in.analyses.traces.ranks) {
    auto& h = l.host_of_rank[st.rank];
    if (!h) h = st.host;
    if (st.host) host_set.insert(*st.host);
  }
  for (const GpuRecord& g : in.run.hardware.gpus) {
    if (g.host) host_set.insert(*g.host);
  }
  // Ranks known only from Flight Recorder dumps and hang lines get tracks
  // too (on the unknown host: neither says which host it ran on).
  for (int32_t rank : report_trace::HangRanks(in.run)) l.host_of_rank.try_emplace(rank);
  int next_pid = 2;
  for (const std::string& h : host_set) l.pid_of[h] = next_pid++;
  l.unknown_pid = next_pid;
}

// Host clock offsets: the median of its traced ranks' offsets.
void AssignHostOffsets(const ReportInput& in, Layout& l) {
  std::map<std::string, std::vector<int64_t>> host_offsets;
  for (const RankTraceStats& st : in.analyses.traces.ranks) {
    const std::optional<std::string>& host = l.host_of_rank[st.rank];
    if (host && st.clock_offset_ns) host_offsets[*host].push_back(*st.clock_offset_ns);
  }
  for (auto& [h, v] : host_offsets) {
    l.host_offset[h] = *MedianOf(v);
    l.offsets_ms[h] = report_json::Num(static_cast<double>(l.host_offset[h]) / 1e6);
  }
}

// The origin: the earliest absolute instant that will be written.
void FindOrigin(const ReportInput& in, const std::vector<const Finding*>& findings,
                const report_trace::HangTimeline& hang, Layout& l) {
  const Run& run = in.run;
  auto see = [&](TimeNs t) { l.origin = l.origin ? std::min(*l.origin, t) : t; };
  l.rank_logged.assign(run.ranks.size(), false);
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    const StepSeries& s = run.ranks[i];
    l.rank_logged[i] = AllLogged(s);
    if (!l.rank_logged[i]) continue;
    for (const StepRecord& r : s.steps) see(*r.start_ns - l.HostShift(s.info.host));
  }
  for (const StepSeries& s : run.unattributed) {
    if (!AllLogged(s)) continue;
    for (const StepRecord& r : s.steps) see(*r.start_ns);
  }
  for (const RankTraceStats& st : in.analyses.traces.ranks) {
    if (st.trace >= run.traces.size()) continue;
    const RankTrace& t = run.traces[st.trace];
    int64_t off = st.clock_offset_ns.value_or(0);
    std::optional<TimeNs> start;
    if (!t.steps.empty()) start = t.steps.front().start_ns - off;
    if (!t.collectives.empty()) {
      TimeNs c = t.collectives.front().start_ns - off;
      start = start ? std::min(*start, c) : c;
    }
    if (!start) continue;
    see(*start);
    l.trace_start[st.rank] = *start;
    l.first_trace_start = l.first_trace_start ? std::min(*l.first_trace_start, *start) : *start;
  }
  for (const GpuRecord& g : run.hardware.gpus) {
    if (g.time_is_approximate) continue;
    for (const GpuSample& x : g.samples) see(x.time_ns - l.HostShift(g.host));
  }
  for (const Finding* f : findings) {
    if (f->onset_time) see(*f->onset_time - l.HostShift(f->entity.host));
  }
  if (std::optional<TimeNs> ops = report_trace::OpTimelinesStart(run)) see(*ops);
  for (const auto& [rank, slices] : hang.entries) {
    for (const Slice& sl : slices) see(sl.start);
  }
  for (const report_trace::HangInstant& i : hang.instants) see(i.time);
  if (hang.decided) see(hang.decided->time);
}

// Writes the tracks in order: the job process, per host its ranks' steps
// and collectives, step series without a rank, GPU counters, findings,
// then process names and otherData.
class MergedTraceWriter {
 public:
  MergedTraceWriter(const ReportInput& in, const Layout& layout,
                    const report_trace::HangTimeline& hang, std::ostream& os)
      : in_(in), run_(in.run), l_(layout), hang_(hang), t0_(layout.t0()), w_(os) {
    size_t track_count = run_.ranks.size() + run_.unattributed.size();
    per_track_ =
        std::max(kMinStepEventsPerTrack, kMaxStepEventsTotal / std::max<size_t>(1, track_count));
    w_.ProcessName(1, "job", 0);
    // Perfetto keeps tids global (a tid seen in another pid is a new thread)
    // and gives process-level events tid = pid: rank tracks get tids far
    // above any pid.
    w_.ThreadName(1, next_tid_, "findings", 0);
    job_tid_ = next_tid_++;
  }

  void WriteRanks();
  void WriteUnattributedSteps();
  void WriteGpuCounters();
  void WriteFindings(const std::vector<const Finding*>& findings);
  void WriteHangInstants();
  // After every host process: pids from the unknown host's + 1.
  void WriteOpTimelines() {
    if (run_.op_timelines.empty()) return;
    op_timelines_ = report_trace::WriteOpTimelines(in_, t0_, l_.unknown_pid + 1, next_tid_, w_);
  }
  void Finish();

 private:
  int PidFor(const std::optional<std::string>& host) {
    if (host) {
      auto it = l_.pid_of.find(*host);
      if (it != l_.pid_of.end()) return it->second;
    }
    unknown_used_ = true;
    return l_.unknown_pid;
  }
  int WriteSlices(int pid, const std::string& label, int sort, std::vector<Slice> slices,
                  bool anchored, bool trim = true);
  std::string TrackOf(std::optional<int32_t> rank) const;
  std::vector<Slice> StepSlices(const StepSeries& s, bool logged,
                                std::map<int64_t, int64_t>& step_ts);
  std::vector<Slice> TraceSlices(const RankTraceStats& st) const;
  std::optional<int64_t> FindingTs(const Finding& f, bool from_traces,
                                   const RankTrack* track) const;

  const ReportInput& in_;
  const Run& run_;
  const Layout& l_;
  const report_trace::HangTimeline& hang_;
  const TimeNs t0_;
  TraceWriter w_;
  int next_tid_ = kFirstTid;
  int job_tid_ = 0;
  bool unknown_used_ = false;
  size_t per_track_ = 0;
  size_t omitted_ = 0;
  size_t ranks_with_steps_ = 0;
  size_t counters_ = 0;
  Json laid_out_ = Json::array();
  Json approximate_ = Json::array();
  Json untimed_ = Json::array();
  Json notes_ = Json::array();
  Json op_timelines_;  // otherData's "op_timelines", when the run has any
  std::map<int32_t, RankTrack> rank_tracks_;
};

// Writes `slices` (absolute times when anchored) on the track `label`, lanes
// as needed; returns the first lane's tid. `trim`: logged times, whose
// rounding overlaps are cut (TrimRoundingOverlaps).
int MergedTraceWriter::WriteSlices(int pid, const std::string& label, int sort,
                                   std::vector<Slice> slices, bool anchored, bool trim) {
  std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return a.start != b.start ? a.start < b.start : a.dur > b.dur;
  });
  if (trim) TrimRoundingOverlaps(slices);
  std::vector<std::pair<TimeNs, TimeNs>> spans;
  spans.reserve(slices.size());
  for (const Slice& s : slices) spans.emplace_back(s.start, s.start + s.dur);
  std::vector<size_t> lane = AssignLanes(spans);
  size_t lanes = slices.empty() ? 1 : *std::max_element(lane.begin(), lane.end()) + 1;
  int first_tid = next_tid_;
  for (size_t i = 0; i < lanes; ++i) {
    w_.ThreadName(pid, next_tid_ + static_cast<int>(i),
                  i == 0 ? label : fmt::format("{} (overlap {})", label, i + 1),
                  sort + static_cast<int>(i));
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    int64_t ts = anchored ? s.start - t0_ : s.start;
    std::string body = fmt::format(
        "\"ph\":\"X\",\"name\":{},\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{}",
        TraceStr(s.name), s.cat, pid, first_tid + static_cast<int>(lane[i]), Micros(ts),
        Micros(std::max<int64_t>(0, s.dur)));
    if (!s.args.empty()) body += ",\"args\":" + s.args;
    w_.Event(body);
  }
  next_tid_ += static_cast<int>(lanes);
  return first_tid;
}

// A series' steps (at most per_track_ of them), laid end to end from 0 when
// their starts were not logged; records each step's ts in `step_ts`.
std::vector<Slice> MergedTraceWriter::StepSlices(const StepSeries& s, bool logged,
                                                 std::map<int64_t, int64_t>& step_ts) {
  std::vector<Slice> slices;
  int64_t shift = l_.HostShift(s.info.host);
  int64_t cursor = 0;
  size_t n = std::min(s.steps.size(), per_track_);
  omitted_ += s.steps.size() - n;
  for (size_t i = 0; i < n; ++i) {
    const StepRecord& r = s.steps[i];
    Slice sl;
    sl.start = logged ? *r.start_ns - shift : cursor;
    sl.dur = r.duration_ns;
    cursor += r.duration_ns;
    sl.name = fmt::format("step {}", r.step);
    sl.cat = "step";
    sl.args = fmt::format("{{\"step\":{},\"duration_ms\":{}}}", r.step,
                          report_json::Num(static_cast<double>(r.duration_ns) / 1e6).dump());
    step_ts[r.step] = logged ? sl.start - t0_ : sl.start;
    slices.push_back(std::move(sl));
  }
  return slices;
}

// A rank's ProfilerStep ranges and collective calls, its clock offset removed.
std::vector<Slice> MergedTraceWriter::TraceSlices(const RankTraceStats& st) const {
  const RankTrace& t = run_.traces[st.trace];
  int64_t off = st.clock_offset_ns.value_or(0);
  std::vector<Slice> slices;
  for (const TraceStep& s : t.steps) {
    slices.push_back(Slice{s.start_ns - off, s.end_ns - s.start_ns,
                           fmt::format("ProfilerStep#{}", s.step), "profiler_step",
                           fmt::format("{{\"step\":{}}}", s.step)});
  }
  for (size_t i = 0; i < t.collectives.size(); ++i) {
    const CollectiveCall& c = t.collectives[i];
    std::string_view coll = run_.names.Get(c.collective);
    std::string_view kernel = run_.names.Get(c.kernel);
    Json args = Json::object();
    if (i < st.call_lateness_ns.size() && st.call_lateness_ns[i]) {
      args["lateness_ms"] = report_json::Num(static_cast<double>(*st.call_lateness_ns[i]) / 1e6);
    }
    args["seq"] = report_json::Opt(c.seq);
    if (c.group) args["group"] = std::string(run_.names.Get(*c.group));
    args["nelems"] = report_json::Opt(c.nelems);
    args["kernel"] = std::string(kernel);
    slices.push_back(Slice{c.start_ns - off, c.dur_ns, std::string(coll.empty() ? kernel : coll),
                           "collective",
                           args.dump(-1, ' ', false, Json::error_handler_t::replace)});
  }
  return slices;
}

// Per host, ranks in order: steps track, then collectives track.
void MergedTraceWriter::WriteRanks() {
  std::map<int, std::vector<int32_t>> ranks_of_pid;
  for (auto& [rank, host] : l_.host_of_rank) ranks_of_pid[PidFor(host)].push_back(rank);
  std::map<int32_t, const RankTraceStats*> trace_of_rank;
  for (const RankTraceStats& st : in_.analyses.traces.ranks) trace_of_rank[st.rank] = &st;

  for (auto& [pid, ranks] : ranks_of_pid) {
    for (int32_t rank : ranks) {
      RankTrack track;
      track.pid = pid;
      const StepSeries* series = run_.FindRank(rank);
      std::vector<Slice> steps;
      bool logged = false;
      if (series != nullptr && !series->steps.empty()) {
        ++ranks_with_steps_;
        logged = l_.rank_logged[static_cast<size_t>(series - run_.ranks.data())];
        if (!logged) laid_out_.push_back(rank);
        steps = StepSlices(*series, logged, track.step_ts);
      }
      track.tid =
          WriteSlices(pid, fmt::format("rank {}", rank), rank * 8, std::move(steps), logged);
      auto it = trace_of_rank.find(rank);
      if (it != trace_of_rank.end() && it->second->trace < run_.traces.size()) {
        WriteSlices(pid, fmt::format("rank {} collectives", rank), rank * 8 + 4,
                    TraceSlices(*it->second), true);
      }
      auto fr = hang_.entries.find(rank);
      if (fr != hang_.entries.end()) {
        WriteSlices(pid, fmt::format("rank {} collectives (Flight Recorder)", rank), rank * 8 + 6,
                    fr->second, true, false);
      }
      rank_tracks_[rank] = std::move(track);
    }
  }
}

// Step series without a rank: one track each on the unknown host.
void MergedTraceWriter::WriteUnattributedSteps() {
  for (const StepSeries& s : run_.unattributed) {
    if (s.steps.empty()) continue;
    bool logged = AllLogged(s);
    std::string file = s.file && *s.file < run_.files.size() ? run_.files[*s.file].path : "?";
    std::map<int64_t, int64_t> ignored;
    if (!logged) {
      notes_.push_back(fmt::format("steps of {} (rank unknown) laid end to end from 0", file));
    }
    WriteSlices(PidFor(std::nullopt), fmt::format("rank unknown: {}", file), 1 << 28,
                StepSlices(s, logged, ignored), logged);
  }
}

// GPU metrics as counters on the host's process.
void MergedTraceWriter::WriteGpuCounters() {
  for (const GpuRecord& g : run_.hardware.gpus) {
    if (g.samples.empty()) continue;
    int pid = PidFor(g.host);
    int64_t shift = l_.HostShift(g.host);
    std::vector<const GpuSample*> samples;
    for (const GpuSample& s : g.samples) samples.push_back(&s);
    std::stable_sort(samples.begin(), samples.end(), [](const GpuSample* a, const GpuSample* b) {
      return a->time_ns < b->time_ns;
    });
    std::string suffix = g.time_is_approximate ? " (time approximate)" : "";
    if (g.time_is_approximate) {
      approximate_.push_back(fmt::format("{} GPU {}", g.host.value_or("unknown host"), g.index));
    }
    struct Metric {
      const char* key;
      std::optional<double> GpuSample::*field;
    };
    for (Metric m :
         {Metric{"temp_c", &GpuSample::temp_c}, Metric{"sm_clock_mhz", &GpuSample::sm_clock_mhz},
          Metric{"power_w", &GpuSample::power_w},
          Metric{"power_limit_w", &GpuSample::power_limit_w}}) {
      // Perfetto names a counter track "<name> <arg>", chrome://tracing
      // "<name>" with one series per arg: one arg, "value".
      std::string name = TraceStr(fmt::format("GPU {} {}{}", g.index, m.key, suffix));
      for (const GpuSample* s : samples) {
        const std::optional<double>& v = s->*m.field;
        if (!v) continue;
        int64_t ts = g.time_is_approximate ? s->time_ns : s->time_ns - shift - t0_;
        w_.Event(
            fmt::format("\"ph\":\"C\",\"name\":{},\"cat\":\"gpu\",\"pid\":{},\"ts\":{},"
                        "\"args\":{{\"value\":{}}}",
                        name, pid, Micros(ts), report_json::Num(*v).dump()));
        ++counters_;
      }
    }
  }
}

// A finding's ts: its onset time; for a trace finding without one, where its
// rank's (or the first) profiled window starts; else where its onset step
// starts on its rank's track, or for a job-level finding the median over
// the tracks that have that step.
std::optional<int64_t> MergedTraceWriter::FindingTs(const Finding& f, bool from_traces,
                                                    const RankTrack* track) const {
  std::optional<int64_t> ts;
  if (f.onset_time) ts = *f.onset_time - l_.HostShift(f.entity.host) - t0_;
  if (!ts && from_traces) {
    auto it = f.entity.rank ? l_.trace_start.find(*f.entity.rank) : l_.trace_start.end();
    if (it != l_.trace_start.end()) {
      ts = it->second - t0_;
    } else if (l_.first_trace_start) {
      ts = *l_.first_trace_start - t0_;
    }
  }
  if (!ts && f.onset_step) {
    if (track != nullptr) {
      auto s = track->step_ts.find(*f.onset_step);
      if (s != track->step_ts.end()) ts = s->second;
    } else {
      std::vector<int64_t> at;
      for (auto& [r, tr] : rank_tracks_) {
        auto s = tr.step_ts.find(*f.onset_step);
        if (s != tr.step_ts.end()) at.push_back(s->second);
      }
      ts = MedianOf(at);
    }
  }
  return ts;
}

// Findings at their onset: on the rank's track, the host's process or the
// job process; those without a time are listed in otherData.
void MergedTraceWriter::WriteFindings(const std::vector<const Finding*>& findings) {
  std::set<const Finding*> from_traces;
  for (const Finding& f : in_.analyses.traces.findings) from_traces.insert(&f);
  // The decided hang finding, when it has a time, is WriteHangInstants()'s.
  const Finding* hang_decided =
      hang_.decided ? report_hang::DecidedFinding(in_.analyses.hang) : nullptr;
  for (const Finding* fp : findings) {
    if (fp == hang_decided) continue;
    const Finding& f = *fp;
    const RankTrack* track = nullptr;
    if (f.entity.rank) {
      auto it = rank_tracks_.find(*f.entity.rank);
      if (it != rank_tracks_.end()) track = &it->second;
    }
    std::optional<int64_t> ts = FindingTs(f, from_traces.count(fp) > 0, track);
    std::string code(Describe(f.code).name);
    if (!ts) {
      untimed_.push_back(code);
      continue;
    }
    Json args = {{"severity", SeverityName(f.severity)},
                 {"message", f.message},
                 {"confidence", report_json::Num(f.confidence)}};
    if (f.onset_step) args["onset_step"] = *f.onset_step;
    std::string where;
    if (track != nullptr) {
      where = fmt::format("\"s\":\"t\",\"pid\":{},\"tid\":{}", track->pid, track->tid);
    } else if (f.entity.host && l_.pid_of.count(*f.entity.host)) {
      where = fmt::format("\"s\":\"p\",\"pid\":{0},\"tid\":{0}", l_.pid_of.at(*f.entity.host));
    } else {
      where = fmt::format("\"s\":\"t\",\"pid\":1,\"tid\":{}", job_tid_);
    }
    w_.Event(fmt::format("\"ph\":\"i\",\"name\":{},\"cat\":\"finding\",{},\"ts\":{},\"args\":{}",
                         TraceStr(code), where, Micros(std::max<int64_t>(0, *ts)),
                         args.dump(-1, ' ', false, Json::error_handler_t::replace)));
  }
}

// "pid, tid" of a rank's steps track, else of the job's findings track.
std::string MergedTraceWriter::TrackOf(std::optional<int32_t> rank) const {
  auto it = rank ? rank_tracks_.find(*rank) : rank_tracks_.end();
  if (it != rank_tracks_.end()) {
    return fmt::format("\"pid\":{},\"tid\":{}", it->second.pid, it->second.tid);
  }
  return fmt::format("\"pid\":1,\"tid\":{}", job_tid_);
}

// Dated hang lines on their rank's track, and the decided hang finding at
// its stuck collective on the culprit's track (both on the aligned clock).
void MergedTraceWriter::WriteHangInstants() {
  auto write = [&](const report_trace::HangInstant& i, std::string_view cat) {
    w_.Event(fmt::format(
        "\"ph\":\"i\",\"name\":{},\"cat\":\"{}\",\"s\":\"t\",{},\"ts\":{},"
        "\"args\":{}",
        TraceStr(i.name), cat, TrackOf(i.rank), Micros(std::max<int64_t>(0, i.time - t0_)),
        i.args.dump(-1, ' ', false, Json::error_handler_t::replace)));
  };
  for (const report_trace::HangInstant& i : hang_.instants) write(i, "hang_line");
  if (hang_.decided) write(*hang_.decided, "finding");
}

void MergedTraceWriter::Finish() {
  for (auto& [host, pid] : l_.pid_of) w_.ProcessName(pid, host, pid);
  if (unknown_used_) w_.ProcessName(l_.unknown_pid, "unknown host", l_.unknown_pid);

  Json other;
  other["producer"] = fmt::format("laggard {}", kLaggardVersion);
  other["schema"] = "laggard.trace/1";
  other["origin"] = l_.origin ? Json(FormatTimestamp(*l_.origin)) : Json(nullptr);
  other["origin_ns"] = l_.origin ? Json(*l_.origin) : Json(nullptr);
  other["verdict"] = in_.verdict.summary;
  other["steps_timing"] = laid_out_.empty()                       ? "logged"
                          : laid_out_.size() == ranks_with_steps_ ? "laid_end_to_end"
                                                                  : "mixed";
  other["ranks_laid_end_to_end"] = std::move(laid_out_);
  other["steps_omitted"] = omitted_;
  other["clock_offsets_ms"] = l_.offsets_ms;
  other["gpus_time_approximate"] = std::move(approximate_);
  other["counter_events"] = counters_;
  other["findings_without_time"] = std::move(untimed_);
  other["notes"] = std::move(notes_);
  if (!in_.run.hang.dumps.empty() || !in_.run.hang.events.empty()) other["hang"] = hang_.other;
  if (!op_timelines_.is_null()) {
    other["op_timelines"] = std::move(op_timelines_);
    other["op_timeline_ops_limit"] = report_trace::kMaxOpTimelineOps;
  }
  w_.Finish(other);
}

}  // namespace

void WriteMergedTrace(const ReportInput& in, std::ostream& os) {
  std::vector<const Finding*> findings = in.analyses.AllFindings();
  Layout layout;
  AssignPids(in, layout);
  AssignHostOffsets(in, layout);
  report_trace::HangTimeline hang =
      report_trace::BuildHangTimeline(in, [&layout](std::optional<int32_t> rank) -> int64_t {
        if (!rank) return 0;
        auto it = layout.host_of_rank.find(*rank);
        return it == layout.host_of_rank.end() ? 0 : layout.HostShift(it->second);
      });
  FindOrigin(in, findings, hang, layout);
  MergedTraceWriter w(in, layout, hang, os);
  w.WriteRanks();
  w.WriteUnattributedSteps();
  w.WriteGpuCounters();
  w.WriteFindings(findings);
  w.WriteHangInstants();
  w.WriteOpTimelines();
  w.Finish();
}

}  // namespace laggard
