// User-supplied step pattern (`--step-pattern`), compiled once with PCRE2
// (JIT when available) and shared by all threads; each Match() call uses its
// own match data.

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/step_logs/line_matcher.h"

namespace laggard {
namespace {

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

// Group number of `name`, or -1.
int GroupNumber(const pcre2_code* code, const char* name) {
  int n = pcre2_substring_number_from_name(code, reinterpret_cast<PCRE2_SPTR>(name));
  return n > 0 ? n : -1;
}

class RegexLineMatcher final : public LineMatcher {
 public:
  std::string_view name() const override { return "regex"; }

  static StatusOr<std::unique_ptr<LineMatcher>> Create(const std::string& pattern) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    pcre2_code* raw = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                    PCRE2_DUPNAMES, &err, &err_offset, nullptr);
    if (raw == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      return Status::Error(fmt::format("--step-pattern does not compile at offset {}: {}",
                                       err_offset, reinterpret_cast<char*>(msg)));
    }
    auto m = std::unique_ptr<RegexLineMatcher>(new RegexLineMatcher());
    m->code_.reset(raw);
    pcre2_jit_compile(raw, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
    m->rank_ = GroupNumber(raw, "rank");
    m->step_ = GroupNumber(raw, "step");
    m->start_ = GroupNumber(raw, "start");
    m->host_ = GroupNumber(raw, "host");
    m->gpu_ = GroupNumber(raw, "gpu");
    m->unit_group_ = GroupNumber(raw, "unit");
    static constexpr struct {
      const char* name;
      std::optional<TimeUnit> unit;
    } kDurationGroups[] = {
        {"time", std::nullopt},
        {"duration", std::nullopt},
        {"time_s", TimeUnit::kSeconds},
        {"duration_s", TimeUnit::kSeconds},
        {"time_ms", TimeUnit::kMilliseconds},
        {"duration_ms", TimeUnit::kMilliseconds},
        {"time_us", TimeUnit::kMicroseconds},
        {"duration_us", TimeUnit::kMicroseconds},
        {"time_ns", TimeUnit::kNanoseconds},
        {"duration_ns", TimeUnit::kNanoseconds},
    };
    for (const auto& g : kDurationGroups) {
      int n = GroupNumber(raw, g.name);
      if (n > 0) {
        m->duration_ = n;
        m->duration_unit_ = g.unit;
        break;
      }
    }
    if (m->step_ < 0 || m->duration_ < 0) {
      return Status::Error(
          "--step-pattern needs named groups (?<step>...) and (?<time>...) (or duration, "
          "time_ms, time_s, ...); optional: rank, unit, start, host, gpu");
    }
    return std::unique_ptr<LineMatcher>(std::move(m));
  }

  MatchResult Match(std::string_view line, ParsedStep& out, std::string& why) const override {
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
        pcre2_match_data_create_from_pattern(code_.get(), nullptr));
    int rc = pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(line.data()), line.size(), 0, 0,
                         md.get(), nullptr);
    if (rc < 0) return MatchResult::kNoMatch;
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    auto group = [&](int n) -> std::optional<std::string_view> {
      if (n < 0 || n >= rc || ov[2 * n] == PCRE2_UNSET) return std::nullopt;
      return line.substr(ov[2 * n], ov[2 * n + 1] - ov[2 * n]);
    };
    auto step = group(step_);
    auto step_v = step ? ParseInt<int64_t>(*step) : std::nullopt;
    if (!step_v) {
      why = "step group is not an integer";
      return MatchResult::kGarbled;
    }
    out.step = *step_v;
    if (auto r = group(rank_)) {
      auto v = ParseInt<int64_t>(*r);
      if (!v) {
        why = "rank group is not an integer";
        return MatchResult::kGarbled;
      }
      out.rank = *v;
    }
    auto dur = group(duration_);
    if (!dur) {
      why = "duration group did not match";
      return MatchResult::kGarbled;
    }
    // The value may carry its own unit ("812ms").
    std::string_view text = Trim(*dur);
    size_t num_end = 0;
    while (num_end < text.size() &&
           (IsDigit(text[num_end]) || text[num_end] == '.' || text[num_end] == '-' ||
            text[num_end] == 'e' || text[num_end] == 'E' || text[num_end] == '+')) {
      ++num_end;
    }
    auto value = ParseDouble(text.substr(0, num_end));
    if (!value) {
      why = "duration is not a number";
      return MatchResult::kGarbled;
    }
    // Unit: the value's own suffix, else the unit group, else the group's
    // name (time_ms), else seconds.
    std::optional<TimeUnit> unit = duration_unit_.value_or(TimeUnit::kSeconds);
    if (num_end < text.size()) {
      unit = ParseTimeUnit(text.substr(num_end));
    } else if (auto u = group(unit_group_)) {
      unit = ParseTimeUnit(*u);
    }
    if (!unit) {
      why = "unknown time unit";
      return MatchResult::kGarbled;
    }
    out.unit = *unit;
    out.duration = ToDurationNs(*value, *unit);
    if (auto s = group(start_)) out.start = ParseTimestamp(*s);
    if (auto h = group(host_)) out.host = *h;
    if (auto g = group(gpu_)) out.gpu = ParseInt<int64_t>(*g);
    return MatchResult::kMatched;
  }

 private:
  RegexLineMatcher() = default;
  std::unique_ptr<pcre2_code, CodeDeleter> code_;
  int rank_ = -1, step_ = -1, duration_ = -1, start_ = -1, host_ = -1, gpu_ = -1, unit_group_ = -1;
  std::optional<TimeUnit> duration_unit_;
};

}  // namespace

StatusOr<std::unique_ptr<LineMatcher>> MakeRegexLineMatcher(const std::string& pattern) {
  return RegexLineMatcher::Create(pattern);
}

}  // namespace laggard
