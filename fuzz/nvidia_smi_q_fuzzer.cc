// Fuzzes the two nvidia-smi text readers (readers.h: MakeNvidiaSmiQReader,
// MakeNvidiaSmiTableReader) on arbitrary bytes, each read from memory in two
// different chunkings.
//
// Invariants, for each reader:
//   - the sniff score is in 0..100;
//   - the whole input is read;
//   - every GPU record names file 0, has an index >= 0 and no host (the
//     in-memory path names none), and then hardware.no_host is counted once;
//     nothing is taken <=> no GPU record;
//   - samples are sorted by time, name file 0 and a line of the input;
//     approximate times are whole seconds from 0; values are finite, clock
//     events use known bits only, performance states are P0..P15, PCIe
//     generation and width are in range;
//   - every located hardware.bad_record / unknown_field / approximate_time
//     example names a line of the input; diagnostics are consistent;
//   - the result does not depend on how the input was chunked.

#include <cmath>

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

constexpr uint64_t kKnownClockEvents = 0x1ff;

void CheckValue(const std::optional<double>& v, const char* what) {
  FUZZ_CHECK(!v || std::isfinite(*v), "{} is {}", what, *v);
}

std::string Summary(const Run& run) {
  std::string out;
  for (const GpuRecord& g : run.hardware.gpus) {
    out += fmt::format("gpu {} bus={} uuid={} name={} approx={} facts@{}\n", g.index,
                       g.bus_id.value_or("-"), g.uuid.value_or("-"), g.facts.name.value_or("-"),
                       g.time_is_approximate, g.facts.src ? g.facts.src->line : 0);
    for (const GpuSample& s : g.samples) {
      out += fmt::format("  t={} temp={} power={} limit={} util={} ev={} p={} line={}\n", s.time_ns,
                         s.temp_c.value_or(-1), s.power_w.value_or(-1),
                         s.power_limit_w.value_or(-1), s.util_pct.value_or(-1),
                         s.clock_events.value_or(9999), s.perf_state.value_or(-1), s.src.line);
    }
  }
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    uint64_t n = run.diagnostics.count(static_cast<DiagCode>(c));
    if (n > 0) out += fmt::format("{}={}\n", Describe(static_cast<DiagCode>(c)).name, n);
  }
  return out;
}

std::string ReadAndCheck(const TextReader& reader, std::string_view input, size_t max_chunk) {
  ReaderOutcome o = ReadInMemory(reader, input, std::nullopt, max_chunk);
  const Run& run = o.run;
  CheckDiagnostics(run);
  if (input.size() >= LineReader::kMaxLine) return Summary(run);  // over-long lines are skipped
  FUZZ_CHECK(o.bytes_read == input.size(), "reader stopped after {} of {} bytes", o.bytes_read,
             input.size());
  const uint64_t line_count = ReferenceLines(input).size();
  const auto& gpus = run.hardware.gpus;
  FUZZ_CHECK((o.taken == 0) == gpus.empty(), "{} taken, {} GPU records", o.taken, gpus.size());
  FUZZ_CHECK(o.taken >= gpus.size(), "{} taken for {} GPU records", o.taken, gpus.size());
  FUZZ_CHECK(Count(run, DiagCode::kHwNoHost) == (gpus.empty() ? 0u : 1u),
             "hardware.no_host counted {} times for {} GPUs", Count(run, DiagCode::kHwNoHost),
             gpus.size());
  FUZZ_CHECK(Count(run, DiagCode::kHwApproximateTime) <= 1, "approximate_time counted {} times",
             Count(run, DiagCode::kHwApproximateTime));
  for (const GpuRecord& g : gpus) {
    FUZZ_CHECK(g.index >= 0, "GPU index {}", g.index);
    FUZZ_CHECK(g.files == std::vector<uint32_t>{0}, "GPU {} from {} files", g.index,
               g.files.size());
    FUZZ_CHECK(!g.host, "GPU {} has host '{}'", g.index, *g.host);
    FUZZ_CHECK(g.facts.src && g.facts.src->file == 0 && g.facts.src->line >= 1 &&
                   g.facts.src->line <= line_count,
               "GPU {} facts without a source line", g.index);
    const GpuFacts& f = g.facts;
    for (const auto* v :
         {&f.max_sm_clock_mhz, &f.max_mem_clock_mhz, &f.app_sm_clock_mhz, &f.default_power_limit_w,
          &f.enforced_power_limit_w, &f.min_power_limit_w, &f.max_power_limit_w, &f.slowdown_temp_c,
          &f.shutdown_temp_c, &f.max_operating_temp_c}) {
      CheckValue(*v, "a fact");
    }
    for (const auto* v : {&f.ecc_uncorrected_volatile, &f.ecc_uncorrected_aggregate,
                          &f.retired_pages_dbe, &f.remapped_rows_uncorrectable}) {
      FUZZ_CHECK(!*v || **v >= 0, "GPU {} negative count {}", g.index, **v);
    }
    for (size_t i = 0; i < g.samples.size(); ++i) {
      const GpuSample& s = g.samples[i];
      FUZZ_CHECK(i == 0 || g.samples[i - 1].time_ns <= s.time_ns, "GPU {} samples unsorted",
                 g.index);
      FUZZ_CHECK(s.src.file == 0 && s.src.line >= 1 && s.src.line <= line_count,
                 "GPU {} sample at file {} line {} of {}", g.index, s.src.file, s.src.line,
                 line_count);
      if (g.time_is_approximate) {
        FUZZ_CHECK(s.time_ns >= 0 && s.time_ns % 1'000'000'000 == 0,
                   "approximate time {} is not whole seconds from 0", s.time_ns);
      }
      for (const auto* v :
           {&s.temp_c, &s.mem_temp_c, &s.sm_clock_mhz, &s.mem_clock_mhz, &s.power_w,
            &s.power_limit_w, &s.util_pct, &s.mem_util_pct, &s.pcie_rx_mb_s, &s.pcie_tx_mb_s}) {
        CheckValue(*v, "a sample value");
      }
      FUZZ_CHECK(!s.clock_events || (*s.clock_events & ~kKnownClockEvents) == 0,
                 "unknown clock event bits {:#x}", *s.clock_events);
      FUZZ_CHECK(!s.perf_state || (*s.perf_state >= 0 && *s.perf_state <= 15), "P{}",
                 *s.perf_state);
      FUZZ_CHECK(!s.pcie_gen || (*s.pcie_gen >= 0 && *s.pcie_gen <= 16), "PCIe gen {}",
                 *s.pcie_gen);
      FUZZ_CHECK(!s.pcie_width || (*s.pcie_width >= 0 && *s.pcie_width <= 64), "PCIe x{}",
                 *s.pcie_width);
    }
  }
  for (DiagCode code :
       {DiagCode::kHwBadRecord, DiagCode::kHwUnknownField, DiagCode::kHwApproximateTime}) {
    for (const DiagExample& e : run.diagnostics.examples(code)) {
      FUZZ_CHECK(e.line >= 1 && e.line <= line_count, "{} example at line {} of {}: {}",
                 Describe(code).name, e.line, line_count, e.message);
    }
  }
  return Summary(run);
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(nvidia_smi_q) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> q = MakeNvidiaSmiQReader();
  static const std::unique_ptr<TextReader> table = MakeNvidiaSmiTableReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  uint64_t h = Hash(input);
  for (const TextReader* reader : {q.get(), table.get()}) {
    int score = reader->Sniff(head.view());
    FUZZ_CHECK(score >= 0 && score <= 100, "{} sniff score {}", reader->name(), score);
    std::string a = ReadAndCheck(*reader, input, 1 + h % 61);
    std::string b = ReadAndCheck(*reader, input, 4096);
    FUZZ_CHECK(a == b, "{} depends on chunking:\n{}\nvs\n{}", reader->name(), a, b);
  }
  return 0;
}
