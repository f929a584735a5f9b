// Fuzzes the network link readers (readers.h: MakeIbstatReader,
// MakeIbstatusReader, MakeIbvDevinfoReader, MakeEthtoolReader,
// MakeSwitchMapReader) on arbitrary bytes: each reader reads every input,
// from memory in uneven chunks and in large ones, with and without a host
// implied by the path.
//
// Invariants, for every reader:
//   - the sniff score is in [0, 100];
//   - what the reader says it took is what the run holds: IB ports + Ethernet
//     links + switch-map entries;
//   - every record names file 0 and a line of the input, has an adapter or
//     interface name where the model requires one, and no negative rate,
//     speed, LID, MTU or counter;
//   - every host is non-empty; with a host from the path nothing is counted
//     as network.no_host, without one at most once per file;
//   - every network.bad_record example names a line of the input;
//   - the chunk size changes nothing (records and diagnostics counts);
//   - diagnostics counts and examples agree (CheckDiagnostics).

#include <cmath>

#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::fuzz {
namespace {

struct NetOutcome {
  uint64_t taken = 0;
  Run run;
};

NetOutcome ReadNet(const TextReader& reader, std::string_view data,
                   std::optional<std::string> host_from_path, size_t max_chunk) {
  NetOutcome o;
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

void CheckLine(const SourceRef& src, uint64_t line_count, std::string_view what) {
  FUZZ_CHECK(src.file == 0, "{} names file {}", what, src.file);
  FUZZ_CHECK(src.line >= 1 && src.line <= line_count, "{} at line {} of {}", what, src.line,
             line_count);
}

void CheckHost(const std::optional<std::string>& host, std::string_view what) {
  FUZZ_CHECK(!host || !host->empty(), "{} has an empty host", what);
}

void CheckNet(std::string_view reader, const NetOutcome& o, uint64_t line_count, bool path_host) {
  const Run& run = o.run;
  const NetworkData& net = run.network;
  CheckDiagnostics(run);
  FUZZ_CHECK(run.total_steps() == 0, "{} made {} step records", reader, run.total_steps());
  uint64_t held = net.ib_ports.size() + net.eth_links.size() + net.switch_of.size();
  FUZZ_CHECK(o.taken == held, "{} says it took {}, the run holds {}", reader, o.taken, held);
  for (const IbPort& p : net.ib_ports) {
    CheckLine(p.src, line_count, "IB port");
    CheckHost(p.host, "IB port");
    FUZZ_CHECK(!p.ca.empty(), "IB port without adapter at line {}", p.src.line);
    FUZZ_CHECK(p.port >= 0 && p.port <= 255, "port number {}", p.port);
    FUZZ_CHECK(!p.rate_gbps || (std::isfinite(*p.rate_gbps) && *p.rate_gbps >= 0), "rate {}",
               p.rate_gbps.value_or(0));
    FUZZ_CHECK(!p.width || *p.width > 0, "width {}", p.width.value_or(0));
    FUZZ_CHECK(!p.base_lid || *p.base_lid >= 0, "base lid {}", p.base_lid.value_or(0));
    FUZZ_CHECK(!p.sm_lid || *p.sm_lid >= 0, "sm lid {}", p.sm_lid.value_or(0));
    FUZZ_CHECK(!p.active_mtu_bytes || *p.active_mtu_bytes > 0, "mtu {}",
               p.active_mtu_bytes.value_or(0));
    for (const auto* guid : {&p.port_guid, &p.node_guid}) {
      FUZZ_CHECK(!*guid || ((*guid)->size() == 18 && (*guid)->substr(0, 2) == "0x"),
                 "GUID '{}' not normalised", guid->value_or(""));
    }
  }
  for (const EthLink& e : net.eth_links) {
    CheckLine(e.src, line_count, "Ethernet link");
    CheckHost(e.host, "Ethernet link");
    FUZZ_CHECK(!e.speed_mbps || *e.speed_mbps >= 0, "speed {}", e.speed_mbps.value_or(0));
    for (const auto& [name, value] : e.counters) {
      FUZZ_CHECK(!name.empty() && value >= 0, "counter '{}' = {}", name, value);
    }
  }
  for (const auto& [host, sw] : net.switch_of) {
    FUZZ_CHECK(!host.empty() && !sw.empty(), "switch map entry '{}' -> '{}'", host, sw);
    auto src = net.switch_src.find(host);
    FUZZ_CHECK(src != net.switch_src.end(), "host '{}' mapped without a source", host);
    CheckLine(src->second, line_count, "switch map entry");
  }
  uint64_t no_host = run.diagnostics.count(DiagCode::kNetNoHost);
  FUZZ_CHECK(no_host <= (path_host ? 0u : 1u), "{} network.no_host notes (host from path: {})",
             no_host, path_host);
  for (const DiagExample& e : run.diagnostics.examples(DiagCode::kNetBadRecord)) {
    FUZZ_CHECK(e.line >= 1 && e.line <= line_count, "network.bad_record at line {} of {}: {}",
               e.line, line_count, e.message);
  }
}

void CheckSameOutcome(std::string_view reader, const NetOutcome& a, const NetOutcome& b) {
  FUZZ_CHECK(a.taken == b.taken, "{}: {} records in small chunks, {} in large ones", reader,
             a.taken, b.taken);
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    auto code = static_cast<DiagCode>(c);
    FUZZ_CHECK(a.run.diagnostics.count(code) == b.run.diagnostics.count(code),
               "{}: {} counted {} times in small chunks, {} in large ones", reader,
               Describe(code).name, a.run.diagnostics.count(code), b.run.diagnostics.count(code));
  }
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(network_links) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const auto* readers = [] {
    auto* v = new std::vector<std::unique_ptr<TextReader>>();
    v->push_back(MakeIbstatReader());
    v->push_back(MakeIbstatusReader());
    v->push_back(MakeIbvDevinfoReader());
    v->push_back(MakeEthtoolReader());
    v->push_back(MakeSwitchMapReader());
    return v;
  }();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer head(input.substr(0, kSniffBytes));
  bool long_lines = input.size() >= LineReader::kMaxLine;
  uint64_t line_count = ReferenceLines(input).size();
  uint64_t h = Hash(input);
  for (const auto& reader : *readers) {
    int score = reader->Sniff(head.view());
    FUZZ_CHECK(score >= 0 && score <= 100, "{} sniff score {}", reader->name(), score);
    NetOutcome small = ReadNet(*reader, input, std::nullopt, 1 + h % 61);
    NetOutcome large = ReadNet(*reader, input, std::nullopt, 1 << 16);
    NetOutcome hosted = ReadNet(*reader, input, std::string("node-from-path"), 4096);
    if (long_lines) continue;  // over-long lines are skipped: line counts differ
    CheckNet(reader->name(), small, line_count, false);
    CheckNet(reader->name(), hosted, line_count, true);
    CheckSameOutcome(reader->name(), small, large);
  }
  return 0;
}
