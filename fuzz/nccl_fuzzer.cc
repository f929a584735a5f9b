// Fuzzes the NCCL-related readers (readers.h: MakeNcclTestsReader,
// MakeNcclDebugReader, MakeNvidiaSmiTopoReader) on arbitrary bytes, each fed
// the same input from memory in uneven chunks, with and without a host
// implied by the path.
//
// Invariants:
//   - sniff scores are in [0, 100]; every reader reads to the end of the
//     input and adds no step records; the diagnostics are consistent
//     (CheckDiagnostics) and every network.bad_record example names a line
//     of the input;
//   - nccl-tests: the count taken is runs + rows + ranks + NCCL processes;
//     rows and runs name input lines, sizes and bandwidths are >= 0, a known
//     root or #wrong is >= 0, the collective is never empty;
//   - NCCL_DEBUG: the count taken is the number of processes; a known rank
//     is in [0, nranks); connection ranks are >= 0; a process has a host
//     exactly when its lines or the path named one (network.no_host once
//     otherwise);
//   - topology: each matrix is square over its devices, the count taken is
//     the number of filled rows, affinities name devices of the matrix.

#include <algorithm>

#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

void CheckCommon(const ReaderOutcome& o, std::string_view input, uint64_t line_count) {
  const Run& run = o.run;
  CheckDiagnostics(run);
  FUZZ_CHECK(run.total_steps() == 0, "a network reader added {} steps", run.total_steps());
  FUZZ_CHECK(o.bytes_read == input.size(), "reader stopped after {} of {} bytes", o.bytes_read,
             input.size());
  for (const DiagExample& e : run.diagnostics.examples(DiagCode::kNetBadRecord)) {
    FUZZ_CHECK(e.line >= 1 && e.line <= line_count, "network.bad_record at line {} of {}: {}",
               e.line, line_count, e.message);
  }
  FUZZ_CHECK(Count(run, DiagCode::kNetNoHost) <= 1, "network.no_host counted {} times",
             Count(run, DiagCode::kNetNoHost));
}

void CheckProcesses(const Run& run, std::optional<std::string> host_from_path) {
  bool hostless = false;
  for (const NcclRankInfo& p : run.network.nccl_ranks) {
    if (p.rank && p.nranks) {
      FUZZ_CHECK(*p.rank >= 0 && *p.rank < *p.nranks, "rank {} of {}", *p.rank, *p.nranks);
    }
    if (p.rank) FUZZ_CHECK(*p.rank >= 0, "negative rank {}", *p.rank);
    for (const NcclConnection& c : p.connections) {
      FUZZ_CHECK(c.from_rank >= 0 && c.to_rank >= 0, "connection {} -> {}", c.from_rank, c.to_rank);
      FUZZ_CHECK(!c.via.empty(), "connection without a transport");
    }
    if (host_from_path) FUZZ_CHECK(p.host.has_value(), "process without host despite the path");
    FUZZ_CHECK(!p.host || !p.host->empty(), "empty host name");
    hostless = hostless || !p.host;
    FUZZ_CHECK(p.src.line >= 1, "process without a source line");
  }
  if (hostless) {
    FUZZ_CHECK(Count(run, DiagCode::kNetNoHost) == 1, "hostless process but no network.no_host");
  }
}

void RunTests(const TextReader& reader, std::string_view input, uint64_t line_count, size_t chunk) {
  ReaderOutcome o = ReadInMemory(reader, input, std::nullopt, chunk);
  CheckCommon(o, input, line_count);
  const NetworkData& net = o.run.network;
  uint64_t expected = net.nccl_tests.size() + net.nccl_ranks.size();
  for (const NcclTestRun& t : net.nccl_tests) {
    FUZZ_CHECK(!t.collective.empty(), "run without a collective name");
    FUZZ_CHECK(t.src.line >= 1 && t.src.line <= line_count, "run at line {}", t.src.line);
    expected += t.rows.size() + t.ranks.size();
    for (const NcclTestRow& r : t.rows) {
      FUZZ_CHECK(r.src.line >= 1 && r.src.line <= line_count, "row at line {}", r.src.line);
      FUZZ_CHECK(r.size_bytes >= 0, "row size {}", r.size_bytes);
      FUZZ_CHECK(r.oop_time_us && r.oop_algbw_gbps && r.oop_busbw_gbps,
                 "row without out-of-place values");
      for (auto v : {r.oop_time_us, r.oop_algbw_gbps, r.oop_busbw_gbps, r.ip_time_us,
                     r.ip_algbw_gbps, r.ip_busbw_gbps}) {
        FUZZ_CHECK(!v || *v >= 0, "negative time or bandwidth {}", *v);
      }
      FUZZ_CHECK(!r.root || *r.root >= 0, "root {}", *r.root);
      FUZZ_CHECK(!r.oop_wrong || *r.oop_wrong >= 0, "#wrong {}", *r.oop_wrong);
      FUZZ_CHECK(!r.ip_wrong || *r.ip_wrong >= 0, "#wrong {}", *r.ip_wrong);
    }
    for (const NcclTestRank& r : t.ranks) FUZZ_CHECK(!r.host.empty(), "rank without host");
    FUZZ_CHECK(!t.avg_busbw_gbps || *t.avg_busbw_gbps >= 0, "avg busbw {}", *t.avg_busbw_gbps);
  }
  FUZZ_CHECK(o.taken == expected, "nccl-tests took {}, holds {}", o.taken, expected);
  CheckProcesses(o.run, std::nullopt);
}

void RunDebug(const TextReader& reader, std::string_view input, uint64_t line_count,
              std::optional<std::string> host, size_t chunk) {
  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = "fuzz-input";
  ctx.host_from_path = host;
  ctx.out = &builder;
  MemorySource source(input, chunk);
  LineReader lines(source);
  ReaderOutcome o;
  o.taken = reader.Read(lines, ctx);
  o.bytes_read = lines.bytes();
  o.run.files.push_back(InputFileInfo{ctx.path, "nccl-debug", lines.bytes(), o.taken, o.taken > 0});
  builder.Finalize(o.run);
  CheckCommon(o, input, line_count);
  FUZZ_CHECK(o.taken == o.run.network.nccl_ranks.size(), "nccl-debug took {}, holds {}", o.taken,
             o.run.network.nccl_ranks.size());
  CheckProcesses(o.run, host);
}

void RunTopo(const TextReader& reader, std::string_view input, uint64_t line_count, size_t chunk) {
  ReaderOutcome o = ReadInMemory(reader, input, std::nullopt, chunk);
  CheckCommon(o, input, line_count);
  uint64_t filled = 0;
  for (const TopologyMatrix& m : o.run.network.topologies) {
    size_t n = m.devices.size();
    FUZZ_CHECK(n > 0 && m.link.size() == n, "{} devices, {} rows", n, m.link.size());
    for (const auto& row : m.link) {
      FUZZ_CHECK(row.size() == n, "row of {} cells in a {}-device matrix", row.size(), n);
      filled += !row[0].empty();
    }
    for (const auto* affinity : {&m.cpu_affinity, &m.numa_affinity}) {
      for (const auto& [dev, value] : *affinity) {
        FUZZ_CHECK(!value.empty() && value != "N/A", "affinity value '{}'", value);
        (void)dev;
      }
    }
    FUZZ_CHECK(m.src.line >= 1 && m.src.line <= line_count, "matrix at line {}", m.src.line);
  }
  FUZZ_CHECK(o.taken == filled, "topology took {} rows, holds {}", o.taken, filled);
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(nccl) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TextReader> tests = MakeNcclTestsReader();
  static const std::unique_ptr<TextReader> debug = MakeNcclDebugReader();
  static const std::unique_ptr<TextReader> topo = MakeNvidiaSmiTopoReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  for (const TextReader* r : {tests.get(), debug.get(), topo.get()}) {
    int score = r->Sniff(head.view());
    FUZZ_CHECK(score >= 0 && score <= 100, "{} sniff score {}", r->name(), score);
  }
  if (input.size() >= LineReader::kMaxLine) return 0;  // over-long lines are skipped
  uint64_t line_count = ReferenceLines(input).size();
  uint64_t h = Hash(input);
  size_t chunk = 1 + h % 61;
  RunTests(*tests, input, line_count, chunk);
  RunDebug(*debug, input, line_count, std::nullopt, chunk);
  RunDebug(*debug, input, line_count, std::string("node-9"), 4096);
  RunTopo(*topo, input, line_count, chunk);
  return 0;
}
