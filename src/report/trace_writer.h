// Building blocks of the merged Chrome/Perfetto trace (docs/merged-trace.md),
// shared by its writers inside src/report/: perfetto_trace.cc (steps,
// collectives, GPU counters, findings) and perfetto_op_timeline.cc (the ops
// of op timelines, measured and ideal). Not part of the public report API
// (report.h).
//
// TraceWriter streams the JSON object one event at a time; nothing is kept
// but a count. Not thread-safe: one writer per output stream.

#ifndef LAGGARD_REPORT_TRACE_WRITER_H_
#define LAGGARD_REPORT_TRACE_WRITER_H_

#include <cstdint>
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

}  // namespace laggard::report_trace

#endif  // LAGGARD_REPORT_TRACE_WRITER_H_
