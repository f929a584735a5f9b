// Fuzzes the agent-log reader (readers.h: MakeAgentLogReader) on arbitrary
// bytes, read from memory in uneven chunks.
//
// Invariants:
//   - the sniff score is in [0, 100]; the reader consumes the whole input;
//   - no step records appear (this reader produces hardware and network
//     data only) and the diagnostics are consistent (CheckDiagnostics);
//   - every non-blank line is accounted for: taken, counted as
//     hardware.bad_record / network.bad_record, or (unknown record kinds)
//     noted as hardware.unknown_field;
//   - every GPU record names file 0, an index in [0, 1023], samples sorted
//     by time with source lines inside the input; every port and link
//     points at a line inside the input;
//   - every host CPU reading and host process passes the model's checks
//     (CoreReadingProblem, HostProcReadingProblem) and a process points at
//     a line inside the input; one log per host.

#include <set>
#include <string>

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

void ReadAndCheck(const TextReader& reader, std::string_view input, size_t max_chunk) {
  ReaderOutcome o = ReadInMemory(reader, input, std::nullopt, max_chunk);
  const Run& run = o.run;
  CheckDiagnostics(run);
  FUZZ_CHECK(o.bytes_read == input.size(), "reader stopped after {} of {} bytes", o.bytes_read,
             input.size());
  FUZZ_CHECK(run.total_steps() == 0 && run.unattributed.empty(), "agent log produced step records");
  if (input.size() >= LineReader::kMaxLine) return;
  std::vector<RefLine> lines = ReferenceLines(input);
  uint64_t content = 0;
  for (const RefLine& l : lines) content += !Trim(l.text).empty();
  uint64_t bad = Count(run, DiagCode::kHwBadRecord) + Count(run, DiagCode::kNetBadRecord);
  uint64_t noted = Count(run, DiagCode::kHwUnknownField);
  FUZZ_CHECK(o.taken + bad <= content && content <= o.taken + bad + noted,
             "{} lines, {} taken, {} bad, {} noted", content, o.taken, bad, noted);
  auto line_ok = [&](const SourceRef& s) {
    return s.file == 0 && s.line >= 1 && s.line <= lines.size();
  };
  for (const GpuRecord& g : run.hardware.gpus) {
    FUZZ_CHECK(g.files == std::vector<uint32_t>{0}, "GPU record names files other than 0");
    FUZZ_CHECK(g.index >= 0 && g.index <= 1023, "GPU index {}", g.index);
    FUZZ_CHECK(!g.time_is_approximate, "agent log times are absolute");
    for (size_t i = 0; i < g.samples.size(); ++i) {
      FUZZ_CHECK(line_ok(g.samples[i].src), "sample line {} outside the input",
                 g.samples[i].src.line);
      if (i > 0) FUZZ_CHECK(g.samples[i - 1].time_ns <= g.samples[i].time_ns, "samples not sorted");
    }
  }
  for (const IbPort& p : run.network.ib_ports)
    FUZZ_CHECK(line_ok(p.src), "ib port line {}", p.src.line);
  for (const EthLink& e : run.network.eth_links)
    FUZZ_CHECK(line_ok(e.src), "eth link line {}", e.src.line);
  std::set<std::string> hosts;
  for (const HostCpuLog& log : run.hardware.host_cpu) {
    FUZZ_CHECK(hosts.insert(log.host).second, "two host CPU logs of host '{}'",
               Printable(log.host, 40));
    for (const HostCpuRound& r : log.rounds) {
      for (const CoreReading& c : r.cores) {
        std::string problem = CoreReadingProblem(c);
        FUZZ_CHECK(problem.empty(), "core reading taken: {}", problem);
      }
    }
    for (const HostProcReading& p : log.procs) {
      std::string problem = HostProcReadingProblem(p);
      FUZZ_CHECK(problem.empty(), "host process taken: {}", problem);
      FUZZ_CHECK(line_ok(p.src), "host process line {}", p.src.line);
    }
  }
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(agent_log) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> reader = MakeAgentLogReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);
  ReadAndCheck(*reader, input, 1 + Hash(input) % 61);
  return 0;
}
