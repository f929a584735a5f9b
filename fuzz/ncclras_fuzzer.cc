// Fuzzes the NCCL RAS status-report reader (hang_readers.h:
// MakeNcclRasReader) on arbitrary bytes, fed from memory in uneven chunks.
//
// Invariants:
//   - the sniff score is in [0, 100]; the reader reads to the end of the
//     input and adds no step records; the diagnostics are consistent
//     (CheckDiagnostics);
//   - every hang.ras_bad_line / hang.ras_truncated example names a line of
//     the input; a file that gave nothing says so (file.unrecognised);
//   - every report, table row, communicator, rank and process names file 0
//     and a line of the input; counts are >= 0; a communicator's id is
//     "#g-c" and its group g >= 0; a rank with an operation count has its op; a
//     lost process names its node and at least one GPU.

#include "fuzz_support.h"
#include "ingest/hangs/hang_readers.h"
#include "ingest/ingest.h"

namespace laggard::fuzz {
namespace {

void CheckLine(const SourceRef& src, uint64_t line_count, std::string_view what) {
  FUZZ_CHECK(src.file == 0 && src.line >= 1 && src.line <= line_count, "{} at {}:{} of {} lines",
             what, src.file, src.line, line_count);
}

void CheckReport(const RasReport& r, uint64_t line_count) {
  CheckLine(r.src, line_count, "report");
  for (auto n : {r.nodes, r.processes, r.gpus, r.processes_missing, r.processes_dead, r.timeouts}) {
    FUZZ_CHECK(!n || *n >= 0, "negative count {}", *n);
  }
  for (const RasCommGroup& g : r.comm_groups) {
    CheckLine(g.src, line_count, "table row");
    FUZZ_CHECK(g.index >= 0 && g.comms >= 0 && g.nodes >= 0 && g.ranks_per_comm >= 0 &&
                   g.ranks_in_group >= 0,
               "negative table cell in row {}", g.index);
    FUZZ_CHECK(!g.status.empty() && !g.errors.empty(), "row without status or errors");
  }
  for (const RasCommunicator& c : r.comms) {
    CheckLine(c.src, line_count, "communicator");
    FUZZ_CHECK(c.id.size() >= 4 && c.id[0] == '#' && c.id.find('-') != std::string::npos,
               "communicator id '{}'", c.id);
    FUZZ_CHECK(c.group >= 0, "communicator {} in group {}", c.id, c.group);
    FUZZ_CHECK(!c.problems.empty(), "communicator {} detailed without a problem", c.id);
    FUZZ_CHECK(!c.ranks_missing || *c.ranks_missing >= 0, "missing ranks {}", *c.ranks_missing);
    for (const RasOpCount& oc : c.op_counts) {
      CheckLine(oc.src, line_count, "op count");
      FUZZ_CHECK(oc.ops_launched >= 0 && oc.ranks >= 0 && !oc.op.empty(), "op count {} x {}",
                 oc.ranks, oc.ops_launched);
    }
    for (const RasRank& k : c.ranks) {
      CheckLine(k.src, line_count, "rank");
      FUZZ_CHECK(k.comm_rank >= 0, "rank {}", k.comm_rank);
      if (k.issue == RasRankIssue::kOpCount) {
        FUZZ_CHECK(k.ops_launched && *k.ops_launched >= 0 && !k.op.empty(),
                   "op-count rank {} without its count", k.comm_rank);
      }
      FUZZ_CHECK(!k.gpu || *k.gpu >= 0, "gpu {}", *k.gpu);
      FUZZ_CHECK(!k.pid || *k.pid >= 0, "pid {}", *k.pid);
    }
  }
  for (const RasProcess& p : r.processes_lost) {
    CheckLine(p.src, line_count, "process");
    FUZZ_CHECK(!p.node.empty() && !p.gpus.empty() && p.pid >= 0, "process {} on '{}'", p.pid,
               p.node);
  }
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(ncclras) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> reader = MakeNcclRasReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);
  if (input.size() >= LineReader::kMaxLine) return 0;  // over-long lines are skipped
  uint64_t line_count = ReferenceLines(input).size();
  ReaderOutcome o = ReadInMemory(*reader, input, std::nullopt, 1 + Hash(input) % 61);
  CheckDiagnostics(o.run);
  FUZZ_CHECK(o.run.total_steps() == 0, "the RAS reader added {} steps", o.run.total_steps());
  FUZZ_CHECK(o.bytes_read == input.size(), "reader stopped after {} of {} bytes", o.bytes_read,
             input.size());
  for (DiagCode c : {DiagCode::kHangRasBadLine, DiagCode::kHangRasTruncated}) {
    for (const DiagExample& e : o.run.diagnostics.examples(c)) {
      FUZZ_CHECK(e.line <= line_count, "{} at line {} of {}: {}", Describe(c).name, e.line,
                 line_count, e.message);
    }
  }
  if (o.taken == 0) {
    FUZZ_CHECK(o.run.diagnostics.count(DiagCode::kFileUnrecognised) == 1,
               "nothing taken and nothing said");
  }
  for (const RasReport& r : o.run.hang.ras) CheckReport(r, line_count);
  return 0;
}
