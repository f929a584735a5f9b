// The key=value step line of python/laggard_step.py and the agent's intake
// (agent/step_intake.h), anywhere in a line (log prefixes are fine):
//
//   laggard-step rank=3 step=120 time_s=0.81 compute_s=0.62 host=node-1 gpu=3
//
// Required: rank, step and the step time as time_s / time_ms / time_us /
// time_ns. Optional: compute_<unit> (the compute-only part of the step),
// cpu_<unit>, cpu_wait_<unit> and cpu_probe_<unit> (the thread's time on a
// CPU, waiting for one, and running the reporter's fixed probe;
// step.bad_cpu_time when unreadable), ts
// (the end of the step: epoch seconds or ISO 8601; start = ts - time), host,
// gpu. Other keys (further phases, a newer reporter's) are ignored. A line
// with the marker whose required values are missing or unreadable is
// garbled.

#include <fmt/format.h>

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

// A number of `unit`s; nullopt unless the whole value is a finite number.
std::optional<DurationNs> Duration(std::string_view value, TimeUnit unit) {
  std::optional<double> v = ParseDouble(value);
  if (!v) return std::nullopt;
  return ToDurationNs(*v, unit);
}

class KeyValueLineMatcher final : public LineMatcher {
 public:
  std::string_view name() const override { return "laggard-step"; }

  MatchResult Match(std::string_view line, ParsedStep& out, std::string& why) const override {
    size_t at = line.find(kMarker);
    if (at == std::string_view::npos) return MatchResult::kNoMatch;
    bool have_rank = false, have_step = false;
    std::optional<std::string_view> ts;
    // rank= and step=: an integer, else the line is garbled.
    auto integer = [&](std::string_view value, const char* what, auto& field, bool& have) {
      std::optional<int64_t> v = ParseInt<int64_t>(value);
      if (!v) {
        why = fmt::format("{} is not an integer", what);
        return false;
      }
      field = *v;
      have = true;
      return true;
    };
    for (std::string_view token : SplitBlanks(line.substr(at + kMarker.size()))) {
      size_t eq = token.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = token.substr(0, eq), value = token.substr(eq + 1);
      TimeUnit unit;
      if (key == "rank") {
        if (!integer(value, "rank", out.rank, have_rank)) return MatchResult::kGarbled;
      } else if (key == "step") {
        if (!integer(value, "step", out.step, have_step)) return MatchResult::kGarbled;
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
      } else if (UnitKey(key, "cpu_wait", unit)) {
        out.cpu.text[kCpuWaitField] = value;
        out.cpu.unit[kCpuWaitField] = unit;
      } else if (UnitKey(key, "cpu_probe", unit)) {
        out.cpu.text[kCpuProbeField] = value;
        out.cpu.unit[kCpuProbeField] = unit;
      } else if (UnitKey(key, "cpu", unit)) {
        out.cpu.text[kOnCpuField] = value;
        out.cpu.unit[kOnCpuField] = unit;
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
