#include "model/job_span.h"

#include <algorithm>

namespace laggard {

WallSpan JobWallSpan(const Run& run) {
  WallSpan s;
  auto widen = [&](TimeNs from, TimeNs to) {
    if (!IsWallClockTime(from) || !IsWallClockTime(to)) return;
    s.first_ns = s.first_ns ? std::min(*s.first_ns, from) : from;
    s.last_ns = s.last_ns ? std::max(*s.last_ns, to) : to;
  };
  if (run.jobs.several() && run.jobs.chosen < run.jobs.jobs.size()) {
    const JobInfo& j = run.jobs.jobs[run.jobs.chosen];
    if (j.first_ns && j.last_ns) widen(*j.first_ns, *j.last_ns);
    return s;
  }
  for (const StepSeries& series : run.ranks) {
    for (const StepRecord& st : series.steps) {
      if (st.start_ns) widen(*st.start_ns, *st.start_ns + st.duration_ns);
    }
  }
  return s;
}

bool SpansMeet(const WallSpan& a, const WallSpan& b, TimeNs slack_ns) {
  if (!a.known() || !b.known()) return true;
  return *a.first_ns <= *b.last_ns + slack_ns && *b.first_ns <= *a.last_ns + slack_ns;
}

}  // namespace laggard
