// Fuzzes the three nvidia-smi readers (readers.h: MakeNvidiaSmiDmonReader,
// MakeNvidiaSmiQueryCsvReader, MakeNvlinkStatusReader) with the same bytes:
// each sniffs the head and reads the whole input from memory in uneven
// chunks.
//
// Invariants, for every reader:
//   - Sniff() is in [0, 100] and reads nothing past the head;
//   - the reader reads to the end (unless it rejects the file as a
//     headerless query CSV), adds no steps, and its diagnostics are
//     consistent (fuzz_support.h: CheckDiagnostics);
//   - every line-located diagnostic names a line of the input;
//   - every GPU record names only file 0, an index in [0, kMaxGpuIndex], no host
//     (none is given), samples sorted by time, every sample and fact source
//     on a line of the input, finite values; a record without samples is
//     not marked approximate;
//   - at most one hardware.no_host (exactly one when a GPU was added),
//     hardware.approximate_time and hardware.no_gpu_id per file;
//   - nothing lost: rows taken plus rows counted as hardware.bad_record
//     never exceed the input's content lines, and samples never exceed rows
//     taken.
// Per reader:
//   - dmon: every line after the first header that is not blank and not a
//     '#' line is a row: taken, or counted as hardware.bad_record;
//   - query CSV: a file rejected for its missing header counts one
//     csv.no_header and takes nothing;
//   - nvlink: each content line is a GPU line (taken), a link line (counted
//     in its GPU's nvlink_total) or a hardware.bad_record.

#include <algorithm>
#include <cmath>
#include <set>

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

constexpr int32_t kMaxGpuIndex = 1023;  // ingest/nvidia_smi/nvidia_smi_util.h

bool Finite(const std::optional<double>& v) { return !v || std::isfinite(*v); }

void Tokens(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && IsSpace(line[pos])) ++pos;
    size_t start = pos;
    while (pos < line.size() && !IsSpace(line[pos])) ++pos;
    if (pos > start) out.push_back(line.substr(start, pos - start));
  }
}

// Rows of a dmon file per the format's rule: after the first '#' line naming
// a "gpu" column (and no pid/command column, which is pmon), every line
// that is not blank and does not start with '#'.
uint64_t DmonRows(const std::vector<RefLine>& lines) {
  bool header = false;
  uint64_t rows = 0;
  std::vector<std::string_view> tokens;
  for (const RefLine& l : lines) {
    std::string_view t = Trim(l.text);
    if (t.empty()) continue;
    if (t.front() == '#') {
      t.remove_prefix(1);
      Tokens(t, tokens);
      bool gpu = false, pmon = false;
      for (std::string_view tok : tokens) {
        gpu = gpu || EqualsIgnoreCase(tok, "gpu");
        pmon = pmon || EqualsIgnoreCase(tok, "pid") || EqualsIgnoreCase(tok, "command");
      }
      header = header || (gpu && !pmon);
      continue;
    }
    rows += header;
  }
  return rows;
}

void CheckGpus(const ReaderOutcome& o, uint64_t line_count) {
  const Run& run = o.run;
  uint64_t samples = 0;
  for (const GpuRecord& g : run.hardware.gpus) {
    // Several records of one GPU (a GPU listed twice) merge: file 0 repeats.
    FUZZ_CHECK(!g.files.empty() &&
                   std::all_of(g.files.begin(), g.files.end(), [](uint32_t f) { return f == 0; }),
               "GPU {} names files other than the input", g.index);
    FUZZ_CHECK(g.index >= 0 && g.index <= kMaxGpuIndex, "GPU index {}", g.index);
    FUZZ_CHECK(!g.host.has_value(), "GPU {} has host '{}' though none was given", g.index, *g.host);
    FUZZ_CHECK(!g.samples.empty() || !g.time_is_approximate,
               "GPU {} without samples is approximate", g.index);
    if (g.facts.src) {
      FUZZ_CHECK(
          g.facts.src->file == 0 && g.facts.src->line >= 1 && g.facts.src->line <= line_count,
          "GPU {} facts from line {} of {}", g.index, g.facts.src->line, line_count);
    }
    FUZZ_CHECK(Finite(g.facts.nvlink_speed_gb_s) && Finite(g.facts.max_sm_clock_mhz) &&
                   Finite(g.facts.enforced_power_limit_w),
               "GPU {} has a fact that is not finite", g.index);
    for (size_t i = 0; i < g.samples.size(); ++i) {
      const GpuSample& s = g.samples[i];
      FUZZ_CHECK(s.src.file == 0 && s.src.line >= 1 && s.src.line <= line_count,
                 "sample of GPU {} from line {} of {}", g.index, s.src.line, line_count);
      FUZZ_CHECK(i == 0 || g.samples[i - 1].time_ns <= s.time_ns, "samples of GPU {} out of order",
                 g.index);
      FUZZ_CHECK(Finite(s.temp_c) && Finite(s.mem_temp_c) && Finite(s.sm_clock_mhz) &&
                     Finite(s.mem_clock_mhz) && Finite(s.power_w) && Finite(s.power_limit_w) &&
                     Finite(s.util_pct) && Finite(s.mem_util_pct) && Finite(s.pcie_rx_mb_s) &&
                     Finite(s.pcie_tx_mb_s),
                 "sample of GPU {} at line {} has a value that is not finite", g.index, s.src.line);
    }
    samples += g.samples.size();
  }
  FUZZ_CHECK(samples <= o.taken, "{} samples from {} rows taken", samples, o.taken);
  uint64_t no_host = Count(run, DiagCode::kHwNoHost);
  FUZZ_CHECK(no_host == (run.hardware.gpus.empty() ? 0u : 1u),
             "hardware.no_host counted {} for {} GPUs", no_host, run.hardware.gpus.size());
  FUZZ_CHECK(Count(run, DiagCode::kHwApproximateTime) <= 1 && Count(run, DiagCode::kHwNoGpuId) <= 1,
             "per-file notes counted more than once");
  FUZZ_CHECK(run.ranks.empty() && run.unattributed.empty(), "a GPU reader added steps");
  for (DiagCode code : {DiagCode::kHwBadRecord, DiagCode::kHwUnknownField, DiagCode::kHwNoGpuId,
                        DiagCode::kCsvNoHeader}) {
    for (const DiagExample& e : run.diagnostics.examples(code)) {
      FUZZ_CHECK(e.line >= 1 && e.line <= line_count, "{} at line {} of {}", Describe(code).name,
                 e.line, line_count);
    }
  }
}

enum class Kind { kDmon, kQuery, kNvlink };

void ReadAndCheck(const TextReader& reader, Kind kind, std::string_view input, size_t max_chunk) {
  ReaderOutcome o = ReadInMemory(reader, input, std::nullopt, max_chunk);
  CheckDiagnostics(o.run);
  if (input.size() >= LineReader::kMaxLine) return;  // over-long lines are skipped
  // A query CSV without header is rejected at its first line.
  FUZZ_CHECK(o.bytes_read == input.size() || Count(o.run, DiagCode::kCsvNoHeader) == 1,
             "{} stopped after {} of {} bytes", reader.name(), o.bytes_read, input.size());
  std::vector<RefLine> lines = ReferenceLines(input);
  CheckExampleLines(o.run, lines.size());
  CheckGpus(o, lines.size());
  uint64_t content = 0;
  for (const RefLine& l : lines) content += !Trim(l.text).empty();
  const Run& run = o.run;
  uint64_t bad = Count(run, DiagCode::kHwBadRecord);
  FUZZ_CHECK(o.taken + bad <= content, "{}: {} taken + {} bad of {} content lines", reader.name(),
             o.taken, bad, content);
  switch (kind) {
    case Kind::kDmon: {
      uint64_t rows = DmonRows(lines);
      FUZZ_CHECK(o.taken + bad == rows, "dmon: {} rows, {} taken + {} bad", rows, o.taken, bad);
      break;
    }
    case Kind::kQuery:
      if (Count(run, DiagCode::kCsvNoHeader) > 0) {
        FUZZ_CHECK(Count(run, DiagCode::kCsvNoHeader) == 1 && o.taken == 0 && bad == 0 &&
                       run.hardware.gpus.empty(),
                   "query CSV without header: {} taken, {} bad", o.taken, bad);
      }
      break;
    case Kind::kNvlink: {
      if (run.hardware.gpus.size() != o.taken) break;  // same GPU twice: facts were merged
      uint64_t links = 0;
      for (const GpuRecord& g : run.hardware.gpus) {
        FUZZ_CHECK(g.facts.nvlink_total && g.facts.nvlink_up && *g.facts.nvlink_up >= 0 &&
                       *g.facts.nvlink_up <= *g.facts.nvlink_total,
                   "GPU {}: {} of {} links up", g.index, g.facts.nvlink_up.value_or(-1),
                   g.facts.nvlink_total.value_or(-1));
        links += static_cast<uint64_t>(*g.facts.nvlink_total);
      }
      FUZZ_CHECK(o.taken + links + bad == content,
                 "nvlink: {} GPUs + {} links + {} bad != {} lines", o.taken, links, bad, content);
      break;
    }
  }
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(nvidia_smi) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> dmon = MakeNvidiaSmiDmonReader();
  static const std::unique_ptr<TextReader> query = MakeNvidiaSmiQueryCsvReader();
  static const std::unique_ptr<TextReader> nvlink = MakeNvlinkStatusReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  uint64_t h = Hash(input);
  const std::pair<const TextReader*, Kind> readers[] = {
      {dmon.get(), Kind::kDmon}, {query.get(), Kind::kQuery}, {nvlink.get(), Kind::kNvlink}};
  for (const auto& [reader, kind] : readers) {
    int score = reader->Sniff(head.view());
    FUZZ_CHECK(score >= 0 && score <= 100, "{} sniff score {}", reader->name(), score);
    ReadAndCheck(*reader, kind, input, 1 + h % 61);
  }
  return 0;
}
