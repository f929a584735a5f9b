// Fuzzes the reader of Megatron-style op timelines
// (megatron_timeline_reader.h) on arbitrary bytes written to a file,
// through the TraceReader interface as Ingest calls it (sniffing aside).
// Each input is read as it is, cut at a point chosen from its hash, (one
// input in four) gzipped as one or two members, and (one in sixteen) behind
// leading blanks that end the reader's first 1 MiB chunk inside it.
//
// Invariants:
//   - Sniff scores lie in [0, 100];
//   - at most one OpTimeline, naming file 0, with at least one op; the
//     reader's count of what it took is at least its ops, and 0 without a
//     timeline, which then counts why (trace.no_events, trace.unsupported);
//   - every op names a worker of the timeline, with dur >= 0, an end that
//     int64 holds, step >= 0, microbatch and chunk >= -1 and seq >= 0;
//   - a layout is given only when every worker is placed, and holds them
//     all (dp, pp, tp inside its sizes), each sized at least 1;
//   - the diagnostics are consistent (CheckDiagnostics);
//   - gzip and chunk boundaries are transparent: the same ops, workers,
//     layout and diagnostic counts;
//   - a cut never invents an op: the prefix's ops are a sub-multiset of the
//     whole's (an event is taken only once its closing '}' is read).

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/traces/megatron/megatron_timeline_reader.h"

namespace laggard::fuzz {
namespace {

// The reader's read size (megatron_timeline_reader.cc: kChunkBytes).
constexpr size_t kReaderChunkBytes = 1 << 20;

const OpTimeline* TimelineOf(const TraceOutcome& o) {
  return o.run.op_timelines.empty() ? nullptr : &o.run.op_timelines[0];
}

// Everything the reader produced, as text, to compare reads of one input.
// Diagnostics enter as counts only.
std::string Summary(const TraceOutcome& o) {
  std::string s = fmt::format("taken {}\n", o.taken);
  if (const OpTimeline* t = TimelineOf(o)) {
    if (t->layout) {
      s += fmt::format("layout {} {} {} {}\n", t->layout->dp, t->layout->pp, t->layout->tp,
                       t->layout->vpp);
    }
    for (const TimelineWorker& w : t->workers) {
      s += fmt::format("worker {} {} {} {} {}\n", w.coord_known, w.coord.dp, w.coord.pp, w.coord.tp,
                       w.rank.value_or(-1));
    }
    for (const TimelineOp& op : t->ops) {
      s += fmt::format("op {} {} {} {} {} {} {} {}\n", static_cast<int>(op.kind), op.worker,
                       op.start_ns, op.dur_ns, op.step, op.microbatch, op.chunk, op.seq);
    }
  }
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    if (uint64_t n = o.run.diagnostics.count(static_cast<DiagCode>(c))) {
      s += fmt::format("diag {} {}\n", Describe(static_cast<DiagCode>(c)).name, n);
    }
  }
  return s;
}

void CheckTimeline(const TraceOutcome& o) {
  const Run& run = o.run;
  CheckDiagnostics(run);
  FUZZ_CHECK(run.op_timelines.size() <= 1, "{} timelines from one file", run.op_timelines.size());
  FUZZ_CHECK(run.traces.empty(), "a timeline reader made a RankTrace");
  const OpTimeline* t = TimelineOf(o);
  if (t == nullptr) {
    FUZZ_CHECK(o.taken == 0, "no timeline, but {} events taken", o.taken);
    FUZZ_CHECK(Count(run, DiagCode::kTraceNoEvents) + Count(run, DiagCode::kTraceUnsupported) +
                       Count(run, DiagCode::kFileUnreadable) >
                   0,
               "no timeline and no reason counted");
    return;
  }
  FUZZ_CHECK(t->file == 0, "timeline names file {}", t->file);
  FUZZ_CHECK(!t->ops.empty(), "a timeline without ops");
  FUZZ_CHECK(o.taken >= t->ops.size(), "taken {} < {} ops", o.taken, t->ops.size());
  for (const TimelineOp& op : t->ops) {
    FUZZ_CHECK(op.worker >= 0 && static_cast<size_t>(op.worker) < t->workers.size(),
               "op names worker {} of {}", op.worker, t->workers.size());
    TimeNs end;
    FUZZ_CHECK(op.dur_ns >= 0 && !__builtin_add_overflow(op.start_ns, op.dur_ns, &end),
               "op at {} with dur {}", op.start_ns, op.dur_ns);
    FUZZ_CHECK(op.step >= 0 && op.microbatch >= -1 && op.chunk >= -1 && op.seq >= 0,
               "op step {} microbatch {} chunk {} seq {}", op.step, op.microbatch, op.chunk,
               op.seq);
    FUZZ_CHECK(op.src.file == 0, "op names file {}", op.src.file);
  }
  if (!t->layout) return;
  const ParallelLayout& l = *t->layout;
  FUZZ_CHECK(l.dp >= 1 && l.pp >= 1 && l.tp >= 1 && l.vpp >= 1, "layout {} {} {} {}", l.dp, l.pp,
             l.tp, l.vpp);
  for (const TimelineWorker& w : t->workers) {
    FUZZ_CHECK(w.coord_known, "a layout with an unplaced worker");
    FUZZ_CHECK(w.coord.dp >= 0 && w.coord.dp < l.dp && w.coord.pp >= 0 && w.coord.pp < l.pp &&
                   w.coord.tp >= 0 && w.coord.tp < l.tp,
               "worker {} {} {} outside layout {} {} {}", w.coord.dp, w.coord.pp, w.coord.tp, l.dp,
               l.pp, l.tp);
  }
  for (const TimelineOp& op : t->ops) {
    FUZZ_CHECK(op.chunk < l.vpp, "chunk {} of vpp {}", op.chunk, l.vpp);
  }
}

TraceOutcome ReadAndCheck(const TraceReader& reader, const std::string& name,
                          std::string_view content) {
  std::string path = ScratchDir() + "/megatron_timeline/" + name;
  WriteFileOrDie(path, content);
  TraceOutcome o = ReadTraceFile(reader, path, std::nullopt);
  CheckTimeline(o);
  return o;
}

// An op as the prefix comparison sees it: worker and seq left out (the
// prefix may lack the metadata that places threads, and numbers ops whose
// seq_id is missing among fewer of them).
using OpKey = std::tuple<int, TimeNs, DurationNs, int64_t, int32_t, int32_t>;

std::vector<OpKey> SortedKeys(const TraceOutcome& o) {
  std::vector<OpKey> keys;
  if (const OpTimeline* t = TimelineOf(o)) {
    for (const TimelineOp& op : t->ops) {
      keys.emplace_back(static_cast<int>(op.kind), op.start_ns, op.dur_ns, op.step, op.microbatch,
                        op.chunk);
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

void CheckPrefix(const TraceOutcome& whole, const TraceOutcome& cut, size_t at, size_t size) {
  std::vector<OpKey> c = SortedKeys(cut), w = SortedKeys(whole);
  FUZZ_CHECK(std::includes(w.begin(), w.end(), c.begin(), c.end()),
             "cut at byte {} of {} gives ops the whole does not have ({} vs {})", at, size,
             c.size(), w.size());
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(megatron_timeline_reader) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TraceReader> reader = MakeMegatronTimelineReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t h = Hash(input);

  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);

  TraceOutcome plain = ReadAndCheck(*reader, "plain.json", input);
  std::string summary = Summary(plain);
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return 0;  // itself (damaged) gzip

  if (size > 0) {
    size_t at = static_cast<size_t>((h >> 8) % size);
    TraceOutcome cut = ReadAndCheck(*reader, "cut.json", input.substr(0, at));
    CheckPrefix(plain, cut, at, size);
  }

  if ((h >> 36) % 16 == 0 && size < kReaderChunkBytes && input.substr(0, 3) != "\xEF\xBB\xBF") {
    size_t boundary = size == 0 ? 0 : static_cast<size_t>((h >> 52) % size);
    std::string shifted(kReaderChunkBytes - boundary, ' ');
    shifted.append(input);
    TraceOutcome o = ReadAndCheck(*reader, "shifted.json", shifted);
    std::string shifted_summary = Summary(o);
    FUZZ_CHECK(shifted_summary == summary,
               "with the first chunk ending at input byte {}, differs:\n{}\nplain:\n{}", boundary,
               shifted_summary, summary);
  }

  if ((h >> 40) % 4 == 0) {
    size_t split = static_cast<size_t>((h >> 44) % (size + 1));
    TraceOutcome zipped = ReadAndCheck(*reader, "timeline.json.gz", Gzip(input, split));
    std::string zipped_summary = Summary(zipped);
    FUZZ_CHECK(zipped_summary == summary, "gzip (members split at {}) differs:\n{}\nplain:\n{}",
               split, zipped_summary, summary);
  }
  return 0;
}
