// The key=value step line of python/laggard_step.py and the agent's intake
// (agent/step_intake.h), anywhere in a line (log prefixes are fine):
//
//   laggard-step rank=3 step=120 time_s=0.81 compute_s=0.62 host=node-1 gpu=3
//
// Required: rank, step and the step time as time_s / time_ms / time_us /
// time_ns. Optional: compute_<unit> (the compute-only part of the step), ts
// (the end of the step: epoch seconds or ISO 8601; start = ts - time), host,
// gpu. Other keys (further phases, a newer reporter's) are ignored. A line
// with the marker whose required values are missing or unreadable is
// garbled.

#include <charconv>

#include "base/text.h"
#include "ingest/step_logs/line_matcher.h"

namespace laggard {
namespace {

constexpr std::string_view kMarker = "laggard-step ";

// "time_ms" -> (true, ms) for `prefix` "time"; false when `key` is not
// `prefix` + "_" + a unit.
bool UnitKey(std::string_view key, std::string_view prefix, TimeUnit& unit) {
  if (key.size() <= prefix.size() + 1 || key.substr(0, prefix.size()) != prefix ||
      key[prefix.size()] != '_') {
    return false;
  }
  std::optional<TimeUnit> u = ParseTimeUnit(key.substr(prefix.size() + 1));
  if (!u) return false;
  unit = *u;
  return true;
}

std::optional<DurationNs> Duration(std::string_view value, TimeUnit unit) {
  double v;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return ToDurationNs(v, unit);
}

class KeyValueLineMatcher final : public LineMatcher {
 public:
  std::string_view name() const override { return "laggard-step"; }

  MatchResult Match(std::string_view line, ParsedStep& out, std::string& why) const override {
    size_t at = line.find(kMarker);
    if (at == std::string_view::npos) return MatchResult::kNoMatch;
    std::string_view rest = line.substr(at + kMarker.size());
    bool have_rank = false, have_step = false;
    std::optional<std::string_view> ts;
    while (!rest.empty()) {
      size_t b = rest.find_first_not_of(" \t\r");
      if (b == std::string_view::npos) break;
      rest.remove_prefix(b);
      size_t e = rest.find_first_of(" \t\r");
      std::string_view token = rest.substr(0, e);
      rest.remove_prefix(e == std::string_view::npos ? rest.size() : e);
      size_t eq = token.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = token.substr(0, eq), value = token.substr(eq + 1);
      TimeUnit unit;
      if (key == "rank") {
        std::optional<int64_t> r = ParseInt<int64_t>(value);
        if (!r) {
          why = "rank is not an integer";
          return MatchResult::kGarbled;
        }
        out.rank = *r;
        have_rank = true;
      } else if (key == "step") {
        std::optional<int64_t> s = ParseInt<int64_t>(value);
        if (!s) {
          why = "step is not an integer";
          return MatchResult::kGarbled;
        }
        out.step = *s;
        have_step = true;
      } else if (UnitKey(key, "time", unit)) {
        out.duration = Duration(value, unit);
        out.unit = unit;
        if (!out.duration) {
          why = "step time is not a number";
          return MatchResult::kGarbled;
        }
      } else if (UnitKey(key, "compute", unit)) {
        // A compute time that cannot be read is counted by the reader
        // (step.bad_compute_time); the step stays.
        std::optional<DurationNs> c = Duration(value, unit);
        out.compute = c && *c > 0 ? *c : 0;
        out.compute_bad = out.compute == 0;
      } else if (key == "ts") {
        ts = value;
      } else if (key == "host" && !value.empty()) {
        out.host = value;
      } else if (key == "gpu") {
        out.gpu = ParseInt<int64_t>(value);
      }
    }
    if (!have_rank || !have_step || !out.duration) {
      why = !have_rank   ? "laggard-step line without rank="
            : !have_step ? "laggard-step line without step="
                         : "laggard-step line without time_s= (or _ms, _us, _ns)";
      return MatchResult::kGarbled;
    }
    if (ts) {
      std::optional<TimeNs> end = ParseTimestamp(*ts);
      if (end) out.start = *end - *out.duration;
    }
    return MatchResult::kMatched;
  }
};

}  // namespace

std::unique_ptr<LineMatcher> MakeKeyValueLineMatcher() {
  return std::make_unique<KeyValueLineMatcher>();
}

}  // namespace laggard
