// Fuzzes the line matchers (line_matcher.h): the article matcher, the
// step reporter's key=value matcher, the Megatron matcher and two user regexes (the fixed `rank
// step time_ms` pattern and one using every optional group) on one arbitrary line.
//
// Invariants:
//   - kGarbled always says why; kMatched always says which unit was read;
//   - a host view points inside the line; matching is deterministic;
//   - no silent misreading: a well-formed record appended to a prefix that
//     cannot itself look like a record is matched with exactly its values.

#include <cmath>

#include "base/text.h"
#include "fuzz_support.h"

namespace laggard::fuzz {
namespace {

struct Matchers {
  std::unique_ptr<LineMatcher> article = MakeArticleLineMatcher();
  std::unique_ptr<LineMatcher> megatron = MakeMegatronLineMatcher();
  std::unique_ptr<LineMatcher> key_value = MakeKeyValueLineMatcher();
  std::unique_ptr<LineMatcher> fixed_regex;
  std::unique_ptr<LineMatcher> full_regex;
  Matchers() {
    auto a = MakeRegexLineMatcher(kFixedStepPattern);
    auto b =
        MakeRegexLineMatcher(R"(r=(?<rank>\S*) s=(?<step>\S*) t=(?<time>\S*)(?: u=(?<unit>\S*))?)"
                             R"((?: h=(?<host>\S*))?(?: g=(?<gpu>\S*))?(?: at=(?<start>\S*))?)");
    if (!a.ok() || !b.ok()) std::abort();
    fixed_regex = std::move(a.value());
    full_regex = std::move(b.value());
  }
};

const Matchers& GetMatchers() {
  static const Matchers* m = new Matchers();
  return *m;
}

struct Outcome {
  MatchResult result;
  ParsedStep step;
  std::string why;
};

Outcome MatchChecked(const LineMatcher& m, std::string_view line) {
  Outcome o;
  o.result = m.Match(line, o.step, o.why);
  if (o.result == MatchResult::kGarbled) {
    FUZZ_CHECK(!o.why.empty(), "{}: kGarbled without a reason", m.name());
  }
  if (o.result == MatchResult::kMatched) {
    FUZZ_CHECK(o.step.unit.has_value(), "{}: kMatched without a unit", m.name());
    if (o.step.host) {
      FUZZ_CHECK(o.step.host->data() >= line.data() &&
                     o.step.host->data() + o.step.host->size() <= line.data() + line.size(),
                 "{}: host view outside the line", m.name());
    }
  }
  // Deterministic: a second call with fresh outputs agrees.
  ParsedStep again;
  std::string why_again;
  MatchResult r2 = m.Match(line, again, why_again);
  FUZZ_CHECK(r2 == o.result, "{}: result changed between calls", m.name());
  if (r2 == MatchResult::kMatched) {
    FUZZ_CHECK(again.step == o.step.step && again.rank == o.step.rank &&
                   again.duration == o.step.duration && again.start == o.step.start,
               "{}: values changed between calls", m.name());
  }
  return o;
}

// `line` is `prefix` + a well-formed record with these values; the matcher
// must read exactly them.
void ExpectExact(const LineMatcher& m, std::string_view line, std::optional<int64_t> rank,
                 int64_t step, DurationNs duration_ns, DurationNs tolerance_ns) {
  ExactBuffer buf(line);
  Outcome o = MatchChecked(m, buf.view());
  FUZZ_CHECK(o.result == MatchResult::kMatched, "{} did not match well-formed \"{}\" ({})",
             m.name(), Printable(line, 200), o.why);
  FUZZ_CHECK(o.step.step == step, "{} read step {} from \"{}\", want {}", m.name(), o.step.step,
             Printable(line, 200), step);
  if (rank) {
    FUZZ_CHECK(o.step.rank == rank, "{} read rank {} from \"{}\", want {}", m.name(),
               o.step.rank.value_or(-1), Printable(line, 200), *rank);
  }
  FUZZ_CHECK(
      o.step.duration.has_value() && std::llabs(*o.step.duration - duration_ns) <= tolerance_ns,
      "{} read duration {} ns from \"{}\", want {} ns", m.name(), o.step.duration.value_or(-1),
      Printable(line, 200), duration_ns);
}

bool HasDigit(std::string_view s) {
  for (char c : s) {
    if (IsDigit(c)) return true;
  }
  return false;
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(line_matchers) {
  using namespace laggard;
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const Matchers& m = GetMatchers();

  // The whole input as one line (embedded '\n' and NUL included: a matcher
  // must not care), then each line of it.
  ExactBuffer whole(input);
  for (const LineMatcher* matcher : {m.article.get(), m.key_value.get(), m.megatron.get(),
                                     m.fixed_regex.get(), m.full_regex.get()}) {
    MatchChecked(*matcher, whole.view());
    for (const RefLine& l : ReferenceLines(input)) {
      ExactBuffer line(l.text);
      MatchChecked(*matcher, line.view());
    }
  }

  // Well-formed records behind a prefix made from the input.
  std::string prefix(input.substr(0, 512));
  for (char& c : prefix) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  uint64_t h = Hash(input);
  int64_t rank = static_cast<int64_t>(h % 100000);
  int64_t step = static_cast<int64_t>((h >> 17) % 10'000'000);
  int64_t ms = 1 + static_cast<int64_t>((h >> 40) % 9'999'999);
  int64_t frac = static_cast<int64_t>((h >> 7) % 1000);
  if (FindIgnoreCase(prefix, "ank") == std::string::npos) {
    ExpectExact(*m.article, fmt::format("{} rank {}, step {}, time {}ms", prefix, rank, step, ms),
                rank, step, ms * 1'000'000, 0);
    ExpectExact(*m.article,
                fmt::format("{} Rank={}; Step={}; Time={}.{:03d} s", prefix, rank, step, ms, frac),
                rank, step, ms * 1'000'000'000 + frac * 1'000'000, 4);
  }
  if (prefix.find("laggard-step") == std::string::npos) {
    ExpectExact(*m.key_value,
                fmt::format("{} laggard-step rank={} step={} time_ms={} compute_s=0.{:03d} host=n1",
                            prefix, rank, step, ms, frac),
                rank, step, ms * 1'000'000, 0);
  }
  if (prefix.find("iteration") == std::string::npos) {
    ExpectExact(*m.megatron,
                fmt::format("{} iteration {:8d}/  999999 | consumed samples: 1 | elapsed time "
                            "per iteration (ms): {}.{:03d} | loss: 1.0 |",
                            prefix, step, ms, frac),
                std::nullopt, step, ms * 1'000'000 + frac * 1'000, 2);
  }
  if (!HasDigit(prefix)) {
    ExpectExact(*m.fixed_regex, fmt::format("{} {} {} {}", prefix, rank, step, ms), rank, step,
                ms * 1'000'000, 0);
  }
  return 0;
}
