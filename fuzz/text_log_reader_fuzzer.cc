// Fuzzes the free-text log reader (readers.h: MakeTextLogReader) with the
// CLI's matchers plus the fixed user regex, on arbitrary bytes read from
// memory in uneven chunks, with and without a rank implied by the file name.
//
// Invariants, besides those of every Run (fuzz_support.h): the lines the
// matchers claim, judged line by line on an independent split, are all
// accounted for: a line some matcher reads is taken (as a step; the
// reader's hang events and StragglerDetector / NVRx reports are taken besides) or
// counted as step.bad_rank_or_step / step.nonpositive_duration; a line none reads but
// one calls garbled is counted as step.garbled; other lines count nothing.

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

void ReadAndCheck(const TextReader& reader,
                  const std::vector<std::unique_ptr<LineMatcher>>& matchers, std::string_view input,
                  std::optional<int32_t> rank_from_path, size_t max_chunk) {
  ReaderOutcome o = ReadInMemory(reader, input, rank_from_path, max_chunk);
  CheckRunInvariants(o.run);
  FUZZ_CHECK(o.bytes_read == input.size(), "reader stopped after {} of {} bytes", o.bytes_read,
             input.size());
  if (input.size() >= LineReader::kMaxLine) return;
  std::vector<RefLine> lines = ReferenceLines(input);
  CheckExampleLines(o.run, lines.size());
  uint64_t matched = 0, garbled = 0;
  ParsedStep parsed;
  std::string why;
  for (const RefLine& l : lines) {
    bool any_garbled = false, any_matched = false;
    for (const auto& m : matchers) {
      parsed = ParsedStep();
      MatchResult r = m->Match(l.text, parsed, why);
      if (r == MatchResult::kMatched) {
        any_matched = true;
        break;
      }
      any_garbled |= r == MatchResult::kGarbled;
    }
    matched += any_matched;
    garbled += !any_matched && any_garbled;
  }
  const Run& run = o.run;
  FUZZ_CHECK(Count(run, DiagCode::kStepGarbled) == garbled,
             "{} garbled lines, {} counted as step.garbled", garbled,
             Count(run, DiagCode::kStepGarbled));
  // What the reader took: its steps, and the hang lines and StragglerDetector
  // reports it read besides.
  const uint64_t steps_taken =
      o.taken - run.hang.events.size() - run.tool_reports.size() - run.nvrx_reports.size();
  uint64_t accounted = steps_taken + Count(run, DiagCode::kStepBadRankOrStep) +
                       Count(run, DiagCode::kStepNonPositiveDuration);
  FUZZ_CHECK(accounted == matched,
             "{} matched lines, but {} taken + {} bad rank/step + {} non-positive", matched,
             steps_taken, Count(run, DiagCode::kStepBadRankOrStep),
             Count(run, DiagCode::kStepNonPositiveDuration));
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(text_log_reader) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> reader = MakeTextLogReader(StandardMatchers());
  static const auto* matchers = new std::vector<std::unique_ptr<LineMatcher>>(StandardMatchers());
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);
  uint64_t h = Hash(input);
  ReadAndCheck(*reader, *matchers, input, std::nullopt, 1 + h % 61);
  ReadAndCheck(*reader, *matchers, input, 7, 4096);
  return 0;
}
