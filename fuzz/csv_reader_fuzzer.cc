// Fuzzes the CSV step reader (step_logs/step_log_readers.h: MakeCsvStepReader) on arbitrary
// bytes, read from memory in uneven chunks, with and without a rank implied
// by the file name.
//
// Invariants, besides those of every Run (fuzz_support.h):
//   - a file without a usable header counts one csv.no_header and nothing
//     else;
//   - otherwise every content row after the header (not blank, not '#') is
//     accounted for: taken, or counted as csv.bad_row,
//     step.bad_rank_or_step or step.nonpositive_duration.

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
  if (input.size() >= LineReader::kMaxLine) return;  // over-long lines are skipped
  std::vector<RefLine> lines = ReferenceLines(input);
  CheckExampleLines(o.run, lines.size());

  uint64_t content = 0;
  uint64_t header_line = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view t = Trim(lines[i].text);
    if (t.empty() || t.front() == '#') continue;
    if (header_line == 0) {
      header_line = i + 1;
      continue;
    }
    ++content;
  }
  const Run& run = o.run;
  if (Count(run, DiagCode::kCsvNoHeader) > 0) {
    FUZZ_CHECK(Count(run, DiagCode::kCsvNoHeader) == 1, "csv.no_header counted {} times",
               Count(run, DiagCode::kCsvNoHeader));
    FUZZ_CHECK(run.diagnostics.examples(DiagCode::kCsvNoHeader)[0].line == header_line,
               "csv.no_header at line {}, header is line {}",
               run.diagnostics.examples(DiagCode::kCsvNoHeader)[0].line, header_line);
    FUZZ_CHECK(o.taken == 0 && run.diagnostics.TotalOfKind(DiagKind::kBadRecord) == 0,
               "rows read ({}) or counted after a rejected header", o.taken);
    return;
  }
  FUZZ_CHECK(o.bytes_read == input.size(), "reader stopped after {} of {} bytes", o.bytes_read,
             input.size());
  CheckRecordsAccounted(run, o.taken, DiagCode::kCsvBadRow, content);
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(csv_reader) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> reader = MakeCsvStepReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);
  uint64_t h = Hash(input);
  ReadAndCheck(*reader, input, std::nullopt, 1 + h % 61);
  ReadAndCheck(*reader, input, 7, 4096);
  return 0;
}
