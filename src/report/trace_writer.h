// Building blocks of the merged Chrome/Perfetto trace (docs/merged-trace.md),
// shared by its writers inside src/report/: perfetto_trace.cc (steps,
// collectives, GPU counters, findings), perfetto_op_timeline.cc (the ops
// of op timelines, measured and ideal) and perfetto_hang.cc (Flight
// Recorder entries and hang lines). Not part of the public report API
// (report.h).
//
// TraceWriter streams the JSON object one event at a time; nothing is kept
// but a count. Not thread-safe: one writer per output stream.

#ifndef LAGGARD_REPORT_TRACE_WRITER_H_
#define LAGGARD_REPORT_TRACE_WRITER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/json_document.h"

namespace laggard::report_trace {

using report_json::Json;

// `s` as a JSON string literal (quoted, escaped).
inline std::string TraceStr(std::string_view s) {
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Microseconds with nanosecond precision: 1234567 ns -> "1234.567".
inline std::string Micros(int64_t ns) {
  bool neg = ns < 0;
  uint64_t a = neg ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
}

// One "X" event before it is written: `start` absolute (or relative to the
// origin where the writer says so), `args` a JSON object's text or "".
struct TraceSlice {
  TimeNs start = 0;
  DurationNs dur = 0;
  std::string name;
  std::string cat;
  std::string args;
};

// Assigns each span [start, end) (sorted by start, longer first on ties)
// the first lane where it nests properly: it starts after every open span
// ended, or lies inside the innermost open one. Perfetto rejects partial
// overlaps on one track, so overlapping spans get their own lanes. Cost:
// O(spans x lanes).
inline std::vector<size_t> AssignLanes(const std::vector<std::pair<int64_t, int64_t>>& spans) {
  std::vector<std::vector<int64_t>> open;  // per lane: ends of open spans, innermost last
  std::vector<size_t> lane(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    auto [s, e] = spans[i];
    size_t l = 0;
    for (; l < open.size(); ++l) {
      std::vector<int64_t>& stack = open[l];
      while (!stack.empty() && stack.back() <= s) stack.pop_back();
      if (stack.empty() || e <= stack.back()) break;
    }
    if (l == open.size()) open.emplace_back();
    open[l].push_back(e);
    lane[i] = l;
  }
  return lane;
}

class TraceWriter {
 public:
  // Perfetto reads the top-level keys in order and stops at one it does not
  // know: displayTimeUnit first (it counts one found after the first chunk
  // as "too late"), then traceEvents, then otherData.
  explicit TraceWriter(std::ostream& out) : out_(out) {
    out_ << "{\"displayTimeUnit\":\"ms\",\n\"traceEvents\":[\n";
  }

  // One event: `body` is the object's members without the braces.
  void Event(const std::string& body) {
    out_ << (first_ ? "" : ",\n") << "{" << body << "}";
    first_ = false;
    ++events_;
  }
  void ProcessName(int pid, std::string_view name, int sort) {
    Event(fmt::format(
        "\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{0},\"tid\":{0},\"args\":{{\"name\":{1}}}",
        pid, TraceStr(name)));
    Event(
        fmt::format("\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{0},\"tid\":{0},\"args\":"
                    "{{\"sort_index\":{1}}}",
                    pid, sort));
  }
  void ThreadName(int pid, int tid, std::string_view name, int sort) {
    Event(fmt::format(
        "\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}", pid,
        tid, TraceStr(name)));
    Event(
        fmt::format("\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{"
                    "\"sort_index\":{}}}",
                    pid, tid, sort));
  }
  void Finish(const Json& other) {
    out_ << "\n],\n\"otherData\":" << other.dump(-1, ' ', false, Json::error_handler_t::replace)
         << "\n}\n";
  }
  size_t events() const { return events_; }

 private:
  std::ostream& out_;
  bool first_ = true;
  size_t events_ = 0;
};

// The ops of the run's op timelines (perfetto_op_timeline.cc), as
// docs/merged-trace.md ("Op timelines") lays them out: per timeline and DP
// rank a process "op timeline: DP rank d (measured)" and beside it "...
// (ideal, what-if)", one thread per (pp, tp) worker, lanes for overlapping
// ops. Pids from `first_pid` up, tids from `next_tid` (advanced past the
// ones used); ts relative to `t0`. At most `max_ops` ops in all are
// written (each twice, measured and ideal), whole steps from the first (a
// timeline's first step even when it alone is larger); a timeline cut short
// gets an instant event on its first process saying so. Returns otherData's
// "op_timelines": per timeline what was written and why anything was not.
//
// The bound: 1,000,000 ops are 2,000,000 events, as many as the step slices
// of perfetto_trace.cc may be: about 170 bytes each, 340 MB of JSON, which
// Perfetto UI still opens in a browser tab.
inline constexpr size_t kMaxOpTimelineOps = 1'000'000;
Json WriteOpTimelines(const ReportInput& in, TimeNs t0, int first_pid, int& next_tid,
                      TraceWriter& w, size_t max_ops = kMaxOpTimelineOps);

// The earliest op start of the run's op timelines (part of the trace's origin).
std::optional<TimeNs> OpTimelinesStart(const Run& run);

// What a stopped job's hang evidence puts on the timeline (perfetto_hang.cc,
// docs/merged-trace.md "Hangs"), with every time on the aligned clock
// (absolute ns, the rank's host offset removed) and not yet relative to
// the origin:
//   entries    per rank with a Flight Recorder dump, its entries as slices
//              from started (else created) to completed; one never
//              completed runs to the last time any dump or hang line shows
//              and is named "... (never completed)"; args pg, seq, state,
//              sizes, and the stack of the rank's last entry
//   instants   hang lines with a dated timestamp (HangEvent::time_ns,
//              never the yearless glog time), on their global rank's track
//              or the job's
//   decided    the hang detector's decided finding at the time its group's
//              stuck collective was first started (else created) on any
//              rank, else at a hang line's time about that collective, else
//              its onset_time; on its rank's track or the job's. nullopt:
//              no time, it stays with the other findings
// At most `max_entries` entries in all (the last ones of each rank's ring
// buffer, at least kMinHangEntriesPerRank each) and `max_instants` lines;
// `other` (otherData.hang) counts what was written and left out.
inline constexpr size_t kMaxHangEntries = 1'000'000;
inline constexpr size_t kMinHangEntriesPerRank = 200;
inline constexpr size_t kMaxHangInstants = 100'000;

struct HangInstant {
  TimeNs time = 0;
  std::optional<int32_t> rank;  // its track; nullopt: the job's
  std::string name;
  Json args;
};

struct HangTimeline {
  std::map<int32_t, std::vector<TraceSlice>> entries;
  std::vector<HangInstant> instants;
  std::optional<HangInstant> decided;
  Json other;
};

// `shift(rank)`: the ns to remove from that rank's wall-clock times (its
// host's clock offset; 0 for an unknown rank).
HangTimeline BuildHangTimeline(const ReportInput& in,
                               const std::function<int64_t(std::optional<int32_t>)>& shift,
                               size_t max_entries = kMaxHangEntries,
                               size_t max_instants = kMaxHangInstants);

// The global ranks the run's hang data name (dumps' and hang lines'): they
// get tracks even without steps or traces.
std::vector<int32_t> HangRanks(const Run& run);

}  // namespace laggard::report_trace

#endif  // LAGGARD_REPORT_TRACE_WRITER_H_
