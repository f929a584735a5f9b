// Fuzzes the reader of torch's legacy autograd-profiler trace
// (torch_legacy_reader.h) on arbitrary bytes written to a file, through the
// TraceReader interface as Ingest calls it (sniffing aside), with and
// without a rank implied by the path. Each input is read as it is, cut at a
// point chosen from its hash, (one input in four) gzipped as one or two
// members, and (one in sixteen) behind leading blanks that end the reader's
// first 1 MiB chunk inside it.
//
// Invariants, besides those of every trace (fuzz_support.h:
// CheckTraceInvariants):
//   - Sniff scores lie in [0, 100];
//   - every trace the reader makes is CPU-only and timed from its own start;
//   - gzip is transparent: the gzipped file gives the same trace and the
//     same diagnostic counts;
//   - so are chunk boundaries: the shifted file gives the same trace (its
//     collective offsets shifted) and the same diagnostic counts;
//   - a cut never invents data: the prefix's ops are a sub-multiset of the
//     whole's, its steps are steps of the whole, and each of its
//     collectives is an op of the whole (an event is taken only once its
//     closing '}' is read; the prefix may count c10d:: ops as collectives
//     where the whole has backend ranges further on).

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/traces/torch_legacy/torch_legacy_reader.h"

namespace laggard::fuzz {
namespace {

// The reader's read size (torch_legacy_reader.cc: kChunkBytes).
constexpr size_t kReaderChunkBytes = 1 << 20;

// Everything the reader produced, as text, to compare reads of one input.
// Diagnostics enter as counts only; collective offsets less `offset_shift`.
std::string Summary(const TraceOutcome& o, uint64_t offset_shift = 0) {
  const Run& run = o.run;
  std::string s = fmt::format("taken {}\n", o.taken);
  for (const RankTrace& t : run.traces) {
    s += fmt::format("rank {} truncated {} events {} lost {}\n", t.rank.value_or(-1), t.truncated,
                     t.events_total, t.events_lost);
    for (const TraceOp& op : t.ops) {
      s += fmt::format("op {} {} {} {} {}\n", op.start_ns, op.dur_ns, run.names.Get(op.name),
                       op.stream, static_cast<int>(op.cls));
    }
    for (const CollectiveCall& c : t.collectives) {
      s += fmt::format("coll {} {} {} {} {}\n", c.start_ns, c.dur_ns, run.names.Get(c.kernel),
                       run.names.Get(c.collective), c.offset - offset_shift);
    }
    for (const TraceStep& st : t.steps) {
      s += fmt::format("step {} {} {}\n", st.step, st.start_ns, st.end_ns);
    }
  }
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    if (uint64_t n = run.diagnostics.count(static_cast<DiagCode>(c))) {
      s += fmt::format("diag {} {}\n", Describe(static_cast<DiagCode>(c)).name, n);
    }
  }
  return s;
}

TraceOutcome ReadAndCheck(const TraceReader& reader, const std::string& name,
                          std::string_view content, std::optional<int32_t> rank_from_path,
                          std::string_view step_marker = "") {
  std::string path = ScratchDir() + "/torch_legacy/" + name;
  WriteFileOrDie(path, content);
  TraceOutcome o = ReadTraceFile(reader, path, rank_from_path, step_marker);
  CheckTraceInvariants(o);
  for (const RankTrace& t : o.run.traces) {
    FUZZ_CHECK(t.cpu_only && t.origin == TraceOrigin::kFileStart,
               "a legacy trace is CPU-only and timed from its start");
  }
  return o;
}

void CheckPrefix(const TraceOutcome& whole, const TraceOutcome& cut, size_t at, size_t size) {
  const RankTrace* c = cut.trace();
  if (c == nullptr) return;
  const RankTrace* w = whole.trace();
  FUZZ_CHECK(w != nullptr, "cut at byte {} of {} gives a trace, the whole none", at, size);
  std::vector<int64_t> whole_steps;
  for (const TraceStep& s : w->steps) whole_steps.push_back(s.step);
  for (const TraceStep& s : c->steps) {
    FUZZ_CHECK(std::binary_search(whole_steps.begin(), whole_steps.end(), s.step),
               "cut at byte {} of {} invented step {}", at, size, s.step);
  }
  std::multiset<std::tuple<TimeNs, DurationNs, std::string_view>> whole_ops;
  for (const TraceOp& op : w->ops) {
    whole_ops.emplace(op.start_ns, op.dur_ns, whole.run.names.Get(op.name));
  }
  for (const CollectiveCall& coll : c->collectives) {
    FUZZ_CHECK(whole_ops.count({coll.start_ns, coll.dur_ns, cut.run.names.Get(coll.kernel)}) > 0,
               "cut at byte {} of {} gives a collective {} at {} ns that is no op of the whole", at,
               size, cut.run.names.Get(coll.kernel), coll.start_ns);
  }
  FUZZ_CHECK(IsSubMultiset(SortedOpKeys(cut.run), SortedOpKeys(whole.run)),
             "cut at byte {} of {} gives ops the whole does not have", at, size);
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(torch_legacy_reader) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TraceReader> reader = MakeTorchLegacyTraceReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t h = Hash(input);

  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);

  std::optional<int32_t> rank_from_path;
  if (h & 1) rank_from_path = 3;
  TraceOutcome plain = ReadAndCheck(*reader, "plain.json", input, rank_from_path);
  std::string summary = Summary(plain);
  // One input in four again with a --step-marker the seeds' labels match
  // (its ranges replace ProfilerStep#N only where there are any, so a cut
  // is compared without it).
  if ((h >> 24) % 4 == 0) ReadAndCheck(*reader, "marked.json", input, rank_from_path, "train_step");
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return 0;  // itself (damaged) gzip

  if (size > 0) {
    size_t at = static_cast<size_t>((h >> 8) % size);
    TraceOutcome cut = ReadAndCheck(*reader, "cut.json", input.substr(0, at), rank_from_path);
    CheckPrefix(plain, cut, at, size);
  }

  if ((h >> 36) % 16 == 0 && size < kReaderChunkBytes && input.substr(0, 3) != "\xEF\xBB\xBF") {
    size_t boundary = size == 0 ? 0 : static_cast<size_t>((h >> 52) % size);
    size_t pad = kReaderChunkBytes - boundary;
    std::string shifted(pad, ' ');
    shifted.append(input);
    TraceOutcome o = ReadAndCheck(*reader, "shifted.json", shifted, rank_from_path);
    std::string shifted_summary = Summary(o, pad);
    FUZZ_CHECK(shifted_summary == summary,
               "with the first chunk ending at input byte {}, differs:\n{}\nplain:\n{}", boundary,
               shifted_summary, summary);
  }

  if ((h >> 40) % 4 == 0) {
    size_t split = static_cast<size_t>((h >> 44) % (size + 1));
    TraceOutcome zipped =
        ReadAndCheck(*reader, "trace.json.gz", Gzip(input, split), rank_from_path);
    std::string zipped_summary = Summary(zipped);
    FUZZ_CHECK(zipped_summary == summary, "gzip (members split at {}) differs:\n{}\nplain:\n{}",
               split, zipped_summary, summary);
  }
  return 0;
}
