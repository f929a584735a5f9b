// When the diagnosed job ran, on the wall clock: what tells one job from
// another on the same hosts (history records it; a confirmation carries
// its report's, and `diagnose RUN CONFIRM` folds none of another job).

#ifndef LAGGARD_MODEL_JOB_SPAN_H_
#define LAGGARD_MODEL_JOB_SPAN_H_

#include <optional>

#include "model/run.h"
#include "model/time.h"

namespace laggard {

struct WallSpan {
  std::optional<TimeNs> first_ns, last_ns;
  bool known() const { return first_ns.has_value() && last_ns.has_value(); }
};

// The chosen job's span when the files hold several jobs, else the span of
// the step records' wall-clock times (each step's start to its end); unset
// when no record has a wall-clock time.
WallSpan JobWallSpan(const Run& run);

// Whether two spans can be one job: false only when both are known and
// they are more than `slack_ns` apart.
bool SpansMeet(const WallSpan& a, const WallSpan& b, TimeNs slack_ns);

}  // namespace laggard

#endif  // LAGGARD_MODEL_JOB_SPAN_H_
