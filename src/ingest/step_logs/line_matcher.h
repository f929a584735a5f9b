// Line matchers: one per free-text step-log format (the article's
// `rank R, step S, time Ts`, Megatron iteration lines, a user regex). The
// TextLogReader (text_log_reader.h) runs them over every line of a text log.
//
// A matcher answers kMatched with the fields it found, kNoMatch for lines that
// are not step records (most lines of a real log), or kGarbled for lines that
// clearly are step records but whose values cannot be read (counted as
// step.garbled). Matchers are immutable and shared across threads.

#ifndef LAGGARD_INGEST_STEP_LOGS_LINE_MATCHER_H_
#define LAGGARD_INGEST_STEP_LOGS_LINE_MATCHER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "ingest/common/field_names.h"
#include "model/time.h"

namespace laggard {

struct ParsedStep {
  std::optional<int64_t> rank;
  int64_t step = 0;
  std::optional<DurationNs> duration;  // nullopt: value out of range
  std::optional<TimeUnit> unit;        // unit the duration was written in
  std::optional<TimeNs> start;
  std::optional<std::string_view> host;  // views into the line
  std::optional<int64_t> gpu;
  DurationNs compute = 0;    // the step's compute-only time; 0: none given
  bool compute_bad = false;  // a compute time was given but is not a positive time
  // The thread's CPU time, run-queue wait and probe time in the step, as
  // written (views into the line), with the units of their keys.
  StepCpuText cpu;
};

enum class MatchResult { kNoMatch, kGarbled, kMatched };

class LineMatcher {
 public:
  virtual ~LineMatcher() = default;
  virtual std::string_view name() const = 0;
  // On kGarbled, `why` says what was wrong.
  virtual MatchResult Match(std::string_view line, ParsedStep& out, std::string& why) const = 0;
};

// `rank 3, step 120, time 0.8123s` anywhere in a line. Also accepts `=` or
// `:` after the keywords, `;` between fields, any capitalisation of the
// keywords and any unit ParseTimeUnit() knows (seconds when none).
std::unique_ptr<LineMatcher> MakeArticleLineMatcher();

// The key=value line of python/laggard_step.py and the agent's intake:
// `laggard-step rank=3 step=120 time_s=0.81 compute_s=0.62 host=node-1 gpu=3`
// (key_value_line.cc).
std::unique_ptr<LineMatcher> MakeKeyValueLineMatcher();

// Megatron-LM / Megatron-DeepSpeed:
// ` iteration      120/   1000 | ... | elapsed time per iteration (ms): 812.3 | ...`
// with an optional `current time: <epoch s>` field (then start = current - elapsed).
std::unique_ptr<LineMatcher> MakeMegatronLineMatcher();

// A user regex (PCRE2 syntax) with named groups: `step` and one duration
// group (`time` or `duration`, optionally suffixed `_s`, `_ms`, `_us`, `_ns`
// to give the unit; or a separate `unit` group), optionally `rank`, `start`,
// `host`, `gpu`. Fails when the pattern does not compile or lacks the
// required groups.
StatusOr<std::unique_ptr<LineMatcher>> MakeRegexLineMatcher(const std::string& pattern);

}  // namespace laggard

#endif  // LAGGARD_INGEST_STEP_LOGS_LINE_MATCHER_H_
