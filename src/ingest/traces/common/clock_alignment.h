// Clock alignment of traces timed from their own start
// (TraceOrigin::kFileStart: torch's legacy autograd profiler counts "ts"
// from the moment profiling began in each process, so each rank has its own
// origin). Ingest() calls AlignTraceClocks() once, after every file is read
// and merged, so that a rank's arrival at a collective compares with its
// peers'; traces on a host clock are never moved.
//
// The rule: a synchronous collective ends at nearly the same instant on
// every rank (once the last one has arrived and the transfer is done);
// arrivals differ, and they are the evidence, so only ends are used.
//   reference  the trace whose clock the others move onto: among traces
//              with a rank and collective calls, the lowest rank on a host
//              clock, else the lowest kFileStart rank (the first in file
//              order of a rank traced twice)
//   matching   each collective call, in start order, is keyed (step, kind,
//              n-th call of that kind in that step): its step is the
//              ProfilerStep#N (or --step-marker) range that holds its start
//              (the last one to start before it) when both traces have
//              steps, else the whole trace is one step. A call lost at the
//              edge of one trace (a gloo range still open when the profiler
//              stopped) then shifts no match of a later step. Calls with the
//              same key on the reference and the trace form a pair.
//   offset     the median over pairs of (reference end - own end);
//              spread: the median of |pair offset - offset|
//   shift      every op, collective and step of the trace moves by the
//              offset; RankTrace::alignment records offset, spread, pairs
//              and the reference rank (the reference itself: its own rank,
//              shift 0, 0 pairs), and a trace.clock_aligned note says so
// A kFileStart trace without a rank, or with fewer than kMinAlignPairs
// pairs, stays where it was, with a trace.clock_unaligned note (none when
// the run has no other trace to compare it with).
//
// Example: the reference (rank 0) ends its all-reduces at 100, 200 and
// 300 us, rank 1 at 40, 141 and 239 us of its own clock: offsets 60, 59
// and 61 us, so rank 1 moves by +60 us, spread 1 us.
//
// Thread-safety: a pure function of the run it modifies.

#ifndef LAGGARD_INGEST_TRACES_COMMON_CLOCK_ALIGNMENT_H_
#define LAGGARD_INGEST_TRACES_COMMON_CLOCK_ALIGNMENT_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "model/run.h"

namespace laggard {

// One mismatched pair among two could not be outvoted; among three the
// median ignores it.
inline constexpr size_t kMinAlignPairs = 3;

// Moves every kFileStart trace of `run` onto the reference's clock (see
// above) and notes what it did in run.diagnostics.
void AlignTraceClocks(Run& run);

// The pairs of `trace`'s collective calls with `reference`'s (see
// "matching"), as reference end - own end, in ns, in the trace's call order.
std::vector<DurationNs> CollectiveEndOffsets(const RankTrace& reference, const RankTrace& trace);

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_COMMON_CLOCK_ALIGNMENT_H_
