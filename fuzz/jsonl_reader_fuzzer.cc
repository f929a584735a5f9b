// Fuzzes the JSON Lines step reader (step_logs/step_log_readers.h: MakeJsonlStepReader) on
// arbitrary bytes, read from memory in uneven chunks, with and without a
// rank implied by the file name.
//
// Invariants, besides those of every Run (fuzz_support.h): every non-blank
// line is accounted for: taken, or counted as jsonl.bad_line,
// step.bad_rank_or_step or step.nonpositive_duration.

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

void ReadAndCheck(const TextReader& reader, std::string_view input,
                  std::optional<int32_t> rank_from_path, size_t max_chunk) {
  ReaderOutcome o = ReadInMemory(reader, input, rank_from_path, max_chunk);
  CheckRunInvariants(o.run);
  FUZZ_CHECK(o.bytes_read == input.size(), "reader stopped after {} of {} bytes", o.bytes_read,
             input.size());
  if (input.size() >= LineReader::kMaxLine) return;
  std::vector<RefLine> lines = ReferenceLines(input);
  CheckExampleLines(o.run, lines.size());
  uint64_t content = 0;
  for (const RefLine& l : lines) content += !Trim(l.text).empty();
  const Run& run = o.run;
  CheckRecordsAccounted(run, o.taken, DiagCode::kJsonlBadLine, content);
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(jsonl_reader) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> reader = MakeJsonlStepReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);
  uint64_t h = Hash(input);
  ReadAndCheck(*reader, input, std::nullopt, 1 + h % 61);
  ReadAndCheck(*reader, input, 7, 4096);
  return 0;
}
