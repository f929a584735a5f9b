// Megatron-LM / Megatron-DeepSpeed training-log iteration lines:
//
//  iteration      120/    1000 | consumed samples: 122880 | elapsed time per
//  iteration (ms): 812.3 | learning rate: ... |
//
// Newer Megatron adds `current time: 1706860208.35 |` (epoch seconds, taken at
// the end of the logging interval). The elapsed time is the mean over the
// log interval (`--log-interval`), so consecutive records may be several
// iterations apart; each record is the iteration it names.
//
// NeMo 2's progress lines (nemo/lightning/pytorch/callbacks/progress_printer.py)
// have the same "iteration N/M" and time each step in seconds:
//
//   Training epoch 0, iteration 15/19 | lr: 2.399e-06 | global_batch_size: 512 |
//   global_step: 15 | reduced_train_loss: 11.03 | train_step_timing in s: 5.603 | ...
//
// The record is the `global_step` (the iteration restarts each epoch), else
// the iteration.

#include <charconv>

#include "base/text.h"
#include "ingest/step_logs/line_matcher.h"

namespace laggard {
namespace {

constexpr std::string_view kIteration = "iteration";
constexpr std::string_view kElapsed = "elapsed time per iteration (ms):";
constexpr std::string_view kCurrentTime = "current time:";
constexpr std::string_view kNemoTiming = "train_step_timing in s:";
constexpr std::string_view kGlobalStep = "global_step:";

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
    if (e == std::string_view::npos) return NemoLine(line, p, iteration, out, why);
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

 private:
  // NeMo 2's progress line, from `p` after "iteration N".
  static MatchResult NemoLine(std::string_view line, size_t p, int64_t iteration, ParsedStep& out,
                              std::string& why) {
    size_t t = line.find(kNemoTiming, p);
    if (t == std::string_view::npos) {
      why = "iteration line without 'elapsed time per iteration (ms)' or 'train_step_timing in s'";
      return MatchResult::kGarbled;
    }
    auto s = NumberAfter(line, t + kNemoTiming.size());
    if (!s) {
      why = "no number after 'train_step_timing in s:'";
      return MatchResult::kGarbled;
    }
    out.step = iteration;
    size_t g = line.find(kGlobalStep, p);
    if (g != std::string_view::npos) {
      if (auto step = NumberAfter(line, g + kGlobalStep.size()); step && *step >= 0 && *step < 9e15)
        out.step = static_cast<int64_t>(*step);
    }
    out.unit = TimeUnit::kSeconds;
    out.duration = ToDurationNs(*s, TimeUnit::kSeconds);
    return MatchResult::kMatched;
  }
};

}  // namespace

std::unique_ptr<LineMatcher> MakeMegatronLineMatcher() {
  return std::make_unique<MegatronLineMatcher>();
}

}  // namespace laggard
