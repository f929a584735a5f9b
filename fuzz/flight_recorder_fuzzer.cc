// Fuzzes the Flight Recorder dump reader (flight_recorder_reader.h) and its
// unpickler (pickle_reader.h) on arbitrary bytes: the unpickler on the bytes
// themselves, and the reader on them written to a file, through the
// TraceReader interface as Ingest calls it (sniffing aside), whole and cut
// at a point chosen from the input's hash.
//
// Invariants:
//   - Sniff scores lie in [0, 100];
//   - the unpickler stops: a value when complete; none when it refuses an
//     opcode; the stop's offset inside the data (or at its end); no value
//     nests deeper than kMaxDepth or expands past kMaxExpandedNodes;
//   - the reader makes at most one dump, naming file 0, with its entries'
//     states in range; what it says it took equals groups + statuses +
//     entries; the diagnostics are consistent (CheckDiagnostics);
//   - a cut never invents entries: the prefix's entries are the first ones
//     of the whole's (same record ids, same ops), or fewer, where the whole
//     pickle's value holds an "entries" list (or the whole is cut too).

#include <string>

#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/traces/flight_recorder/flight_recorder_reader.h"
#include "ingest/traces/flight_recorder/pickle_reader.h"

namespace laggard::fuzz {
namespace {

void CheckValue(const pickle::Value& v) {
  FUZZ_CHECK(v.depth <= pickle::kMaxDepth, "depth {}", v.depth);
  FUZZ_CHECK(v.expanded <= pickle::kMaxExpandedNodes, "expanded {}", v.expanded);
}

struct Outcome {
  uint64_t taken = 0;
  Run run;
};

Outcome ReadAndCheck(const TraceReader& reader, const std::string& name, std::string_view content) {
  std::string path = ScratchDir() + "/flight_recorder/" + name;
  WriteFileOrDie(path, content);
  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = path;
  ctx.out = &builder;
  Outcome o;
  o.taken = reader.Read(path, ctx);
  o.run.files.push_back(InputFileInfo{path, "flight-recorder"});
  builder.Finalize(o.run);
  CheckDiagnostics(o.run);
  const HangData& h = o.run.hang;
  FUZZ_CHECK(h.dumps.size() <= 1, "{} dumps from one file", h.dumps.size());
  uint64_t records = h.groups.size();
  for (const FlightRecorderDump& d : h.dumps) {
    FUZZ_CHECK(d.file == 0, "dump names file {}", d.file);
    FUZZ_CHECK(d.format == "pickle" || d.format == "json", "format {}", d.format);
    records += d.status.size() + d.entries.size();
    for (const CollectiveRecord& r : d.entries) {
      FUZZ_CHECK(r.state <= CollectiveState::kCompleted, "state {}", static_cast<int>(r.state));
    }
  }
  FUZZ_CHECK(records == o.taken, "took {}, holds {}", o.taken, records);
  return o;
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(flight_recorder) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TraceReader> reader = MakeFlightRecorderReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t h = Hash(input);

  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);

  pickle::UnpickleResult u = pickle::Unpickle(input);
  FUZZ_CHECK(u.error_offset <= size, "stop at {} of {}", u.error_offset, size);
  if (u.complete) FUZZ_CHECK(u.value != nullptr, "complete without a value");
  if (u.stop == pickle::UnpickleResult::Stop::kForbidden) {
    FUZZ_CHECK(u.value == nullptr, "a refused pickle gave a value");
  }
  if (u.value) CheckValue(*u.value);

  Outcome whole = ReadAndCheck(*reader, "nccl_trace_rank_0", input);
  if (size > 0 && !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b)) {
    size_t at = static_cast<size_t>((h >> 8) % size);
    Outcome cut = ReadAndCheck(*reader, "nccl_trace_rank_0_cut", input.substr(0, at));
    // A complete pickle whose value holds no "entries" (a mutation made
    // another object the top one) has none to compare with: the cut's come
    // from the dict that was being built when the bytes ran out.
    const bool whole_has_entries =
        !u.complete || (u.value != nullptr && u.value->is_dict() && u.value->Get("entries"));
    if (whole_has_entries && !cut.run.hang.dumps.empty() && !whole.run.hang.dumps.empty()) {
      const auto& c = cut.run.hang.dumps[0].entries;
      const auto& w = whole.run.hang.dumps[0].entries;
      FUZZ_CHECK(c.size() <= w.size(), "cut at {} of {}: {} entries, whole {}", at, size, c.size(),
                 w.size());
      for (size_t i = 0; i < c.size(); ++i) {
        FUZZ_CHECK(c[i].record_id == w[i].record_id && c[i].op == w[i].op,
                   "cut at {} of {}: entry {} differs from the whole's", at, size, i);
      }
    }
  }
  return 0;
}
