// Fuzzes the hang-line matcher (ingest/common/hang_lines.h) on each line
// of an arbitrary input, and the hang-line collector over the whole input.
//
// Invariants:
//   - MaybeHangLine() is a true pre-check: a line ParseHangLine() reads
//     passes it;
//   - parsing is deterministic, and `text` is a prefix of the line of at
//     most kHangTextBytes bytes;
//   - ranks are in [0, kMaxRank]; a desync / mismatch names only such ranks;
//   - the collector adds exactly the events it counts, each at a line of
//     the input, and one HangLogInfo when it counted any.

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/common/hang_lines.h"

namespace laggard::fuzz {
namespace {

void CheckRank(const std::optional<int32_t>& r, std::string_view what) {
  FUZZ_CHECK(!r || (*r >= 0 && *r <= kMaxRank), "{} {}", what, *r);
}

void CheckLine(std::string_view line) {
  bool cut = false;
  std::optional<HangEvent> e = ParseHangLine(line, &cut);
  if (!e) {
    FUZZ_CHECK(!cut, "a line that is not a hang line was called cut");
    return;
  }
  FUZZ_CHECK(MaybeHangLine(line), "parsed line fails the pre-check: \"{}\"", Printable(line));
  FUZZ_CHECK(e->text.size() <= kHangTextBytes, "text of {} bytes", e->text.size());
  FUZZ_CHECK(StartsWith(line, e->text), "text is not a prefix of the line");
  FUZZ_CHECK(e->kind < HangEventKind::kCount, "kind {}", static_cast<int>(e->kind));
  CheckRank(e->rank, "rank");
  CheckRank(e->group_rank, "group rank");
  CheckRank(e->local_rank, "local rank");
  for (int32_t r : e->ranks_named) CheckRank(r, "named rank");
  bool cut_again = false;
  std::optional<HangEvent> again = ParseHangLine(line, &cut_again);
  FUZZ_CHECK(again && again->kind == e->kind && again->seq == e->seq && again->rank == e->rank &&
                 again->group_rank == e->group_rank && again->text == e->text && cut_again == cut,
             "parsing is not deterministic");
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(watchdog_lines) {
  using namespace laggard;
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.size() >= LineReader::kMaxLine) return 0;  // over-long lines are skipped
  std::vector<RefLine> ref = ReferenceLines(input);
  for (const RefLine& l : ref) CheckLine(l.text);

  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = "rank-1.log";
  ctx.rank_from_path = 1;
  ctx.out = &builder;
  MemorySource source(input, 1 + Hash(input) % 61);
  LineReader lines(source);
  HangLineCollector collector;
  std::string_view line;
  while (lines.Next(line)) collector.Offer(line, lines.line_number(), ctx);
  uint64_t n = collector.Finish(lines.line_number(), ctx);
  const HangData& hang = builder.hang();
  FUZZ_CHECK(hang.events.size() == n, "collector counted {}, added {}", n, hang.events.size());
  FUZZ_CHECK(hang.logs.size() == (n > 0 ? 1u : 0u), "{} log infos for {} events", hang.logs.size(),
             n);
  for (const HangEvent& e : hang.events) {
    FUZZ_CHECK(e.src.line >= 1 && e.src.line <= ref.size(), "event at line {} of {}", e.src.line,
               ref.size());
  }
  return 0;
}
