// Fuzzes the three DCGM readers (readers.h: MakeDcgmiDmonReader,
// MakeDcgmiDiagReader, MakeDcgmExporterReader) on arbitrary bytes read from
// memory in uneven chunks.
//
// Invariants, for each reader:
//   - Sniff() answers 0..100 and the diagnostics are consistent
//     (fuzz_support.h: CheckDiagnostics);
//   - the reader reads the whole input, and how the input is cut into
//     chunks changes nothing (same records taken, same GPU records, same
//     diagnostics counts);
//   - every GPU record comes from file 0, has an index in [0, 1024), a
//     sample list sorted by time, and sources (samples, facts) that name a
//     line of the input;
//   - every located diagnostic names a line of the input (or 0: the file);
//   - nothing is lost silently: the dmon and exporter readers take at most
//     one record per value line, and each exporter line the exposition
//     parser rejects is counted as hardware.bad_record.

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/common/prometheus_text.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

void CheckGpus(const Run& run, uint64_t line_count) {
  for (const GpuRecord& g : run.hardware.gpus) {
    FUZZ_CHECK(g.index >= 0 && g.index < 1024, "GPU index {}", g.index);
    FUZZ_CHECK(!g.files.empty(), "GPU {} without a file", g.index);
    for (uint32_t f : g.files) FUZZ_CHECK(f == 0, "GPU {} names file {}", g.index, f);
    for (size_t i = 0; i < g.samples.size(); ++i) {
      const GpuSample& s = g.samples[i];
      FUZZ_CHECK(s.src.file == 0 && s.src.line >= 1 && s.src.line <= line_count,
                 "GPU {} sample {} from line {} of {}", g.index, i, s.src.line, line_count);
      if (i > 0) {
        FUZZ_CHECK(g.samples[i - 1].time_ns <= s.time_ns, "GPU {} samples not sorted", g.index);
      }
      if (s.clock_events)
        FUZZ_CHECK(*s.clock_events < (1ull << 53), "clock events {}", *s.clock_events);
    }
    if (g.facts.src) {
      FUZZ_CHECK(g.facts.src->line <= line_count, "GPU {} facts from line {} of {}", g.index,
                 g.facts.src->line, line_count);
    }
  }
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    for (const DiagExample& e : run.diagnostics.examples(static_cast<DiagCode>(c))) {
      FUZZ_CHECK(e.line <= line_count, "{} at line {} of {}",
                 Describe(static_cast<DiagCode>(c)).name, e.line, line_count);
    }
  }
}

struct Summary {
  uint64_t taken = 0;
  size_t gpus = 0;
  size_t samples = 0;
  std::vector<uint64_t> counts;
  bool operator==(const Summary&) const = default;
};

Summary ReadAndCheck(const TextReader& reader, std::string_view input, size_t max_chunk) {
  ReaderOutcome o = ReadInMemory(reader, input, std::nullopt, max_chunk);
  CheckDiagnostics(o.run);
  FUZZ_CHECK(o.bytes_read == input.size(), "{} stopped after {} of {} bytes", reader.name(),
             o.bytes_read, input.size());
  Summary s;
  s.taken = o.taken;
  s.gpus = o.run.hardware.gpus.size();
  for (const GpuRecord& g : o.run.hardware.gpus) s.samples += g.samples.size();
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c)
    s.counts.push_back(o.run.diagnostics.count(static_cast<DiagCode>(c)));
  if (input.size() >= LineReader::kMaxLine) return s;  // over-long lines are skipped
  std::vector<RefLine> lines = ReferenceLines(input);
  CheckGpus(o.run, lines.size());
  uint64_t content = 0, unparsable = 0;
  prom::Line l;
  std::string error;
  for (const RefLine& line : lines) {
    if (Trim(line.text).empty()) continue;
    ++content;
    unparsable += !prom::ParseLine(line.text, l, error);
  }
  std::string_view name = reader.name();
  if (name == "dcgmi-dmon" || name == "dcgm-exporter") {
    FUZZ_CHECK(o.taken <= content, "{} took {} records from {} lines", name, o.taken, content);
  }
  if (name == "dcgm-exporter") {
    FUZZ_CHECK(Count(o.run, DiagCode::kHwBadRecord) >= unparsable,
               "{} unparsable lines, {} counted as hardware.bad_record", unparsable,
               Count(o.run, DiagCode::kHwBadRecord));
  }
  return s;
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(dcgm) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> readers[] = {
      MakeDcgmiDmonReader(), MakeDcgmiDiagReader(), MakeDcgmExporterReader()};
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  uint64_t h = Hash(input);
  for (const auto& reader : readers) {
    int score = reader->Sniff(head.view());
    FUZZ_CHECK(score >= 0 && score <= 100, "{} sniff score {}", reader->name(), score);
    Summary small = ReadAndCheck(*reader, input, 1 + h % 61);
    Summary large = ReadAndCheck(*reader, input, 1 << 16);
    FUZZ_CHECK(small == large, "{}: reading in chunks changed the result ({} vs {} taken)",
               reader->name(), small.taken, large.taken);
  }
  return 0;
}
