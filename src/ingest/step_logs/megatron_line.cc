// Megatron-LM / Megatron-DeepSpeed training-log iteration lines:
//
//  iteration      120/    1000 | consumed samples: 122880 | elapsed time per
//  iteration (ms): 812.3 | learning rate: ... |
//
// Newer Megatron adds `current time: 1706860208.35 |` (epoch seconds, taken at
// the end of the logging interval). The elapsed time is the mean over the
// log interval (`--log-interval`), so consecutive records may be several
// iterations apart; each record is the iteration it names.

#include <charconv>

#include "base/text.h"
#include "ingest/step_logs/line_matcher.h"

namespace laggard {
namespace {

constexpr std::string_view kIteration = "iteration";
constexpr std::string_view kElapsed = "elapsed time per iteration (ms):";
constexpr std::string_view kCurrentTime = "current time:";

std::optional<double> NumberAfter(std::string_view line, size_t p) {
  while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
  double v;
  auto [end, ec] = std::from_chars(line.data() + p, line.data() + line.size(), v);
  if (ec != std::errc()) return std::nullopt;
  return v;
}

class MegatronLineMatcher final : public LineMatcher {
 public:
  std::string_view name() const override { return "megatron"; }

  MatchResult Match(std::string_view line, ParsedStep& out, std::string& why) const override {
    size_t at = line.find(kIteration);
    if (at == std::string_view::npos) return MatchResult::kNoMatch;
    size_t p = at + kIteration.size();
    if (p >= line.size() || (line[p] != ' ' && line[p] != '\t')) return MatchResult::kNoMatch;
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
    int64_t iteration;
    auto [end, ec] = std::from_chars(line.data() + p, line.data() + line.size(), iteration);
    if (ec != std::errc()) return MatchResult::kNoMatch;
    p = static_cast<size_t>(end - line.data());
    while (p < line.size() && line[p] == ' ') ++p;
    if (p >= line.size() || line[p] != '/') return MatchResult::kNoMatch;  // "at iteration 5 |"
    size_t e = line.find(kElapsed, p);
    if (e == std::string_view::npos) {
      why = "iteration line without 'elapsed time per iteration (ms)'";
      return MatchResult::kGarbled;
    }
    auto ms = NumberAfter(line, e + kElapsed.size());
    if (!ms) {
      why = "no number after 'elapsed time per iteration (ms):'";
      return MatchResult::kGarbled;
    }
    out.step = iteration;
    out.unit = TimeUnit::kMilliseconds;
    out.duration = ToDurationNs(*ms, TimeUnit::kMilliseconds);
    size_t c = line.find(kCurrentTime, p);
    if (c != std::string_view::npos && out.duration) {
      size_t q = c + kCurrentTime.size();
      while (q < line.size() && line[q] == ' ') ++q;
      size_t r = q;
      while (r < line.size() && (IsDigit(line[r]) || line[r] == '.')) ++r;
      auto end_time = ParseTimestamp(line.substr(q, r - q));
      TimeNs start;  // a garbage (negative) duration must not overflow this
      if (end_time && !__builtin_sub_overflow(*end_time, *out.duration, &start)) {
        out.start = start;
      }
    }
    return MatchResult::kMatched;
  }
};

}  // namespace

std::unique_ptr<LineMatcher> MakeMegatronLineMatcher() {
  return std::make_unique<MegatronLineMatcher>();
}

}  // namespace laggard
