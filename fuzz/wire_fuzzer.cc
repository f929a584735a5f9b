// Fuzzes DecodeBuilder (model/wire.h): the frames `diagnose --mpi` sends
// between processes, damaged any way. Seeds (fuzz/corpus/wire/) are frames of
// tests/model/wire_test.cc's builders.
//
// Invariants:
//   - decoding never crashes; an error says "wire: ..." and consumes nothing;
//   - a decoded builder holds what MergeFrom() and Finalize() rely on: step
//     series of unique ranks in [0, kMaxRank], trace name ids inside its name
//     table, enum values in range, at most kMaxExamplesPerCode examples;
//   - its encoding decodes again, to a builder with the same encoding;
//   - the frames of one input merge, and the merge finalizes (with a file
//     table that covers its traces' files) into ranks sorted and unique.

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "model/wire.h"

namespace laggard::fuzz {
namespace {

void CheckDecoded(RunBuilder& b) {  // names() has no const overload
  std::set<int32_t> ranks;
  for (const StepSeries& s : b.series()) {
    FUZZ_CHECK(s.info.rank >= 0 && s.info.rank <= kMaxRank, "series of rank {}", s.info.rank);
    FUZZ_CHECK(ranks.insert(s.info.rank).second, "two series of rank {}", s.info.rank);
  }
  for (const StepSeries& s : b.unattributed()) {
    FUZZ_CHECK(s.info.rank == -1 && s.file, "unattributed series of rank {}", s.info.rank);
  }
  const size_t names = b.names().size();
  for (const RankTrace& t : b.traces()) {
    for (const TraceOp& op : t.ops) {
      FUZZ_CHECK(op.name < names && (op.shape == kNoShape || op.shape < names),
                 "op name {} shape {} of {} names", op.name, op.shape, names);
      FUZZ_CHECK(op.cls < OpClass::kCount, "op class {}", static_cast<int>(op.cls));
    }
    for (const CollectiveCall& c : t.collectives) {
      FUZZ_CHECK(c.kernel < names && c.collective < names && (!c.group || *c.group < names),
                 "collective names {} {} of {}", c.kernel, c.collective, names);
    }
  }
  for (const HangEvent& e : b.hang().events) {
    FUZZ_CHECK(e.kind < HangEventKind::kCount, "hang event kind {}", static_cast<int>(e.kind));
  }
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    size_t examples = b.diagnostics().examples(static_cast<DiagCode>(c)).size();
    FUZZ_CHECK(examples <= Diagnostics::kMaxExamplesPerCode, "{} examples", examples);
  }
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(wire) {
  using namespace laggard;
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer exact(input);
  std::string_view in = exact.view();

  RunBuilder merged;
  for (int frame = 0; frame < 8 && !in.empty(); ++frame) {
    const size_t before = in.size();
    StatusOr<RunBuilder> b = DecodeBuilder(in);
    if (!b.ok()) {
      FUZZ_CHECK(in.size() == before, "an error consumed {} bytes", before - in.size());
      FUZZ_CHECK(b.status().message().rfind("wire: ", 0) == 0, "error '{}'", b.status().message());
      break;
    }
    FUZZ_CHECK(in.size() < before, "a frame of no bytes");
    CheckDecoded(b.value());
    std::string again;
    EncodeBuilder(b.value(), again);
    std::string_view view = again;
    StatusOr<RunBuilder> c = DecodeBuilder(view);
    FUZZ_CHECK(c.ok(), "its own encoding does not decode: {}", c.status().message());
    FUZZ_CHECK(view.empty(), "{} bytes after the re-encoded frame", view.size());
    std::string third;
    EncodeBuilder(c.value(), third);
    FUZZ_CHECK(third == again, "encoding not canonical: {} then {} bytes", again.size(),
               third.size());
    merged.MergeFrom(std::move(c.value()));
  }

  // Finalize() indexes Run::files by trace file: give it the files named.
  uint64_t files = 1;
  for (const RankTrace& t : merged.traces())
    files = std::max<uint64_t>(files, uint64_t{t.file} + 1);
  if (files > 4096) return 0;  // a damaged file index: the caller's table would catch it
  Run run;
  run.files.resize(files);
  merged.Finalize(run);
  for (size_t i = 1; i < run.ranks.size(); ++i) {
    FUZZ_CHECK(run.ranks[i - 1].info.rank < run.ranks[i].info.rank, "ranks {} then {}",
               run.ranks[i - 1].info.rank, run.ranks[i].info.rank);
  }
  return 0;
}
