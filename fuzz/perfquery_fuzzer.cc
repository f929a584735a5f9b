// Fuzzes the perfquery reader (readers.h: MakePerfqueryReader) on arbitrary
// bytes: read from memory in uneven chunks and in large ones, with and
// without a host implied by the path.
//
// Invariants:
//   - the sniff score is in [0, 100];
//   - what the reader says it took is what the run holds (port counters);
//   - every record names file 0 and a line of the input, a port in 0..255,
//     a LID in 0..65535 when one is known, no negative counter, data bytes
//     a multiple of 4, and no saturated counter that also has a value;
//   - every host is non-empty; with a host from the path nothing is counted
//     as network.no_host, without one at most once per file;
//   - every network.bad_record example names a line of the input;
//   - the chunk size changes nothing (records and diagnostics counts);
//   - diagnostics counts and examples agree (CheckDiagnostics).

#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

struct Outcome {
  uint64_t taken = 0;
  Run run;
};

Outcome ReadPq(const TextReader& reader, std::string_view data,
               std::optional<std::string> host_from_path, size_t max_chunk) {
  Outcome o;
  RunBuilder builder;
  ReaderContext ctx;
  ctx.file_index = 0;
  ctx.path = "fuzz-input";
  ctx.host_from_path = std::move(host_from_path);
  ctx.out = &builder;
  MemorySource source(data, max_chunk);
  LineReader lines(source);
  o.taken = reader.Read(lines, ctx);
  InputFileInfo info;
  info.path = ctx.path;
  info.format = std::string(reader.name());
  info.records = o.taken;
  info.used = o.taken > 0;
  o.run.files.push_back(std::move(info));
  builder.Finalize(o.run);
  return o;
}

void Check(const Outcome& o, uint64_t line_count, bool path_host) {
  const Run& run = o.run;
  CheckDiagnostics(run);
  FUZZ_CHECK(run.total_steps() == 0, "perfquery made {} step records", run.total_steps());
  FUZZ_CHECK(o.taken == run.network.port_counters.size(), "took {}, the run holds {}", o.taken,
             run.network.port_counters.size());
  for (const IbPortCounters& c : run.network.port_counters) {
    FUZZ_CHECK(c.src.file == 0, "record names file {}", c.src.file);
    FUZZ_CHECK(c.src.line >= 1 && c.src.line <= line_count, "record at line {} of {}", c.src.line,
               line_count);
    FUZZ_CHECK(!c.host || !c.host->empty(), "empty host at line {}", c.src.line);
    FUZZ_CHECK(c.port >= 0 && c.port <= 255, "port {}", c.port);
    FUZZ_CHECK(!c.lid || (*c.lid >= 0 && *c.lid <= 0xFFFF), "lid {}", c.lid.value_or(0));
    for (const auto* v : {&c.xmit_data_bytes, &c.rcv_data_bytes, &c.xmit_pkts, &c.rcv_pkts,
                          &c.xmit_wait_ticks, &c.xmit_discards, &c.symbol_errors,
                          &c.link_error_recoveries, &c.link_downed, &c.rcv_errors}) {
      FUZZ_CHECK(!*v || **v >= 0, "negative counter {} at line {}", v->value_or(0), c.src.line);
    }
    FUZZ_CHECK(!c.xmit_data_bytes || *c.xmit_data_bytes % 4 == 0, "xmit bytes {}",
               c.xmit_data_bytes.value_or(0));
    FUZZ_CHECK(!c.rcv_data_bytes || *c.rcv_data_bytes % 4 == 0, "rcv bytes {}",
               c.rcv_data_bytes.value_or(0));
    for (const std::string& s : c.saturated) {
      FUZZ_CHECK(!(s == "PortXmitData" && c.xmit_data_bytes) &&
                     !(s == "PortXmitWait" && c.xmit_wait_ticks),
                 "{} saturated and kept", s);
    }
  }
  uint64_t no_host = run.diagnostics.count(DiagCode::kNetNoHost);
  FUZZ_CHECK(no_host <= (path_host ? 0u : 1u), "{} network.no_host notes (host from path: {})",
             no_host, path_host);
  for (const DiagExample& e : run.diagnostics.examples(DiagCode::kNetBadRecord)) {
    FUZZ_CHECK(e.line >= 1 && e.line <= line_count, "network.bad_record at line {} of {}: {}",
               e.line, line_count, e.message);
  }
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(perfquery) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const TextReader* reader = MakePerfqueryReader().release();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);
  bool long_lines = input.size() >= LineReader::kMaxLine;
  uint64_t line_count = ReferenceLines(input).size();
  uint64_t h = Hash(input);
  Outcome small = ReadPq(*reader, input, std::nullopt, 1 + h % 61);
  Outcome large = ReadPq(*reader, input, std::nullopt, 1 << 16);
  Outcome hosted = ReadPq(*reader, input, std::string("node-from-path"), 4096);
  if (long_lines) return 0;  // over-long lines are skipped: line counts differ
  Check(small, line_count, false);
  Check(hosted, line_count, true);
  FUZZ_CHECK(small.taken == large.taken, "{} records in small chunks, {} in large ones",
             small.taken, large.taken);
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    auto code = static_cast<DiagCode>(c);
    FUZZ_CHECK(small.run.diagnostics.count(code) == large.run.diagnostics.count(code),
               "{} counted {} times in small chunks, {} in large ones", Describe(code).name,
               small.run.diagnostics.count(code), large.run.diagnostics.count(code));
  }
  return 0;
}
