// Shared by the fuzz targets in fuzz/*_fuzzer.cc: the entry-point macro,
// invariant checks that abort (so libFuzzer and the smoke driver both see a
// crash), an in-memory ByteSource, a reference line splitter, temp files and
// gzip helpers, the checks every Run must pass whatever the input, and a
// profiler-trace reader run on a file with the checks every RankTrace must
// pass.
//
// Each target is written once and built two ways:
//   - with -DLAGGARD_LIBFUZZER (clang, LAGGARD_FUZZ=ON): the entry point is
//     LLVMFuzzerTestOneInput and the file is its own libFuzzer binary;
//   - otherwise: the entry point is LaggardFuzz_<name>, and all targets link
//     into one `fuzz_smoke` executable (smoke_main.cc) that replays the seed
//     corpus plus deterministic mutations under ctest, with g++ too.
//
// Thread-safety: single-threaded, like libFuzzer's default mode.

#ifndef LAGGARD_FUZZ_FUZZ_SUPPORT_H_
#define LAGGARD_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "ingest/common/input_file.h"
#include "ingest/common/text_reader.h"
#include "ingest/step_logs/line_matcher.h"
#include "ingest/traces/common/trace_reader.h"
#include "model/run.h"

#if defined(LAGGARD_LIBFUZZER)
#define LAGGARD_FUZZ_TARGET(name) \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
#else
#define LAGGARD_FUZZ_TARGET(name) int LaggardFuzz_##name(const uint8_t* data, size_t size)
#endif

// Aborts with the location, the condition and a formatted message when `cond`
// is false: an invariant of the parser under test was broken.
#define FUZZ_CHECK(cond, ...)                                                                \
  do {                                                                                       \
    if (!(cond)) ::laggard::fuzz::Fail(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)

namespace laggard::fuzz {

[[noreturn]] void Fail(const char* file, int line, const char* cond, const std::string& message);

// 64-bit FNV-1a; used to derive deterministic choices (a cut offset, a file
// name) from the input without consuming input bytes.
uint64_t Hash(std::string_view data, uint64_t salt = 0);

// A ByteSource over memory that hands out data in uneven chunks (1 byte up
// to `max_chunk`, cycling), so line splitting across Read() boundaries gets
// exercised on small inputs.
class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string_view data, size_t max_chunk) : data_(data), max_chunk_(max_chunk) {}
  size_t Read(char* buf, size_t n) override;
  const std::optional<StreamDamage>& damage() const override { return damage_; }
  bool compressed() const override { return false; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  size_t max_chunk_;
  uint64_t calls_ = 0;
  std::optional<StreamDamage> damage_;
};

// The lines LineReader is specified to produce, computed independently:
// split at '\n', drop one trailing '\r', and a last line without '\n' counts
// when it is not empty. `raw_length` is the length before '\r' was dropped.
struct RefLine {
  std::string_view text;
  size_t raw_length;
};
std::vector<RefLine> ReferenceLines(std::string_view data);

// The input copied into a heap block of exactly its size, so that reading
// one byte past the end is caught by AddressSanitizer (std::string keeps
// spare capacity and a terminating NUL).
class ExactBuffer {
 public:
  explicit ExactBuffer(std::string_view data);
  std::string_view view() const { return {buf_.get(), size_}; }

 private:
  std::unique_ptr<char[]> buf_;
  size_t size_;
};

// A per-process scratch directory, removed at exit.
const std::string& ScratchDir();
void WriteFileOrDie(const std::string& path, std::string_view content);

// gzip-wrapped deflate of `data`, as one member or, when `split` is inside
// the data, as two concatenated members cut at `split`.
std::string Gzip(std::string_view data, size_t split = std::string_view::npos);

// Runs one TextReader over in-memory `data` (as Ingest would, minus the file)
// and finalizes the result into `run` (one entry in run.files).
struct ReaderOutcome {
  uint64_t taken = 0;
  uint64_t bytes_read = 0;  // by the LineReader when the reader returned
  Run run;
};
ReaderOutcome ReadInMemory(const TextReader& reader, std::string_view data,
                           std::optional<int32_t> rank_from_path, size_t max_chunk);

// Structural invariants of any finalized Run: ranks sorted and unique, steps
// ascending and unique, every record with step >= 0, duration > 0 and a
// source that names a known file and a line, and no record silently lost:
// the records the readers claimed equal the steps and hang events kept plus
// the counted duplicates.
void CheckRunInvariants(const Run& run);

// Counts and examples of every diagnostic agree: no more examples than the
// count or than Diagnostics::kMaxExamplesPerCode, and a counted code has one.
// Part of CheckRunInvariants; trace runs call it alone.
void CheckDiagnostics(const Run& run);

// Runs one TraceReader on the file at `path` (as Ingest would, minus the
// sniffing) and finalizes the result into `run` (one entry in run.files);
// `step_marker` as --step-marker gives it ("" for none).
struct TraceOutcome {
  uint64_t taken = 0;
  Run run;
  const RankTrace* trace() const { return run.traces.empty() ? nullptr : &run.traces[0]; }
};
TraceOutcome ReadTraceFile(const TraceReader& reader, const std::string& path,
                           std::optional<int32_t> rank_from_path,
                           std::string_view step_marker = "");

// Invariants of any trace read from one file, whatever its bytes: at most
// one RankTrace, naming file 0; the reader's count of what it took equals
// ops + steps; ops and collectives sorted by start, with dur >= 0, an end
// (start + dur) that int64 holds (detectors compute it), name ids inside
// run.names and a device of -1 (none) or more; steps ascending and unique
// with end >= start; rank and world size in range; the diagnostics
// consistent (CheckDiagnostics); a file without a trace counts why
// (trace.unsupported or file.unreadable).
void CheckTraceInvariants(const TraceOutcome& o);

// An op as the multiset comparisons of the trace fuzzers see it: (dur,
// name as text, class, device, stream), its start left out (a cut may lose
// the clock base).
using OpKey = std::tuple<DurationNs, std::string, int, int, int>;
std::vector<OpKey> SortedOpKeys(const Run& run);

// Whether every element of sorted `sub` occurs in sorted `all` (multiset).
bool IsSubMultiset(const std::vector<OpKey>& sub, const std::vector<OpKey>& all);

// Every located example of a per-line diagnostic (step.*, csv.bad_row,
// jsonl.bad_line) names a line in [1, line_count].
void CheckExampleLines(const Run& run, uint64_t line_count);

// Count of one diagnostic, for short expressions.
inline uint64_t Count(const Run& run, DiagCode code) { return run.diagnostics.count(code); }

// Nothing lost: each of `content` records a tabular reader saw was taken,
// counted under `bad` (csv.bad_row, jsonl.bad_line), or rejected for its
// rank/step or duration.
inline void CheckRecordsAccounted(const Run& run, uint64_t taken, DiagCode bad, uint64_t content) {
  uint64_t accounted = taken + Count(run, bad) + Count(run, DiagCode::kStepBadRankOrStep) +
                       Count(run, DiagCode::kStepNonPositiveDuration);
  FUZZ_CHECK(accounted == content,
             "{} records, but {} taken + {} {} + {} bad rank/step + {} non-positive", content,
             taken, Count(run, bad), Describe(bad).name, Count(run, DiagCode::kStepBadRankOrStep),
             Count(run, DiagCode::kStepNonPositiveDuration));
}

// The matchers the CLI uses, plus one user regex with a fixed pattern, in
// the CLI's order (regex first).
inline constexpr const char* kFixedStepPattern =
    R"((?<rank>\d+)\s+(?<step>\d+)\s+(?<time_ms>[\d.]+))";
std::vector<std::unique_ptr<LineMatcher>> StandardMatchers();

// All readers in the CLI's sniffing order: JSONL, CSV, text log.
struct ReaderSet {
  std::vector<std::unique_ptr<TextReader>> owned;
  std::vector<const TextReader*> readers;
};
ReaderSet StandardReaders();

}  // namespace laggard::fuzz

#endif  // LAGGARD_FUZZ_FUZZ_SUPPORT_H_
