// The wire form of a RunBuilder: how `laggard diagnose --mpi` moves the
// per-file ingest results of each MPI process to rank 0, which merges them
// with RunBuilder::MergeFrom() in file order.
//
// A frame is self-delimiting, so several builders can be sent in one buffer:
//
//   "LGWB"  uint32 version  uint64 payload bytes  payload
//
// The payload is cereal's binary archive (native byte order: every process of
// a job runs the same binary on the same architecture) of every field of the
// builder's model state, series in their order of first appearance. The
// builder's lookup tables (rank slots, name index) are not sent: decoding
// rebuilds them the way the builder itself does, so a decoded builder takes
// AddStep(), MergeFrom() and Finalize() exactly like the original.
//
// Decoding trusts nothing: a damaged or hostile frame gives an error Status
// ("wire: ..."), never a crash and never an allocation out of proportion to
// the frame. It checks what MergeFrom() and Finalize() rely on: ranks of the
// step series in [0, kMaxRank] and unique, trace name ids inside the name
// table, enum values in range. File indexes (SourceRef::file,
// RankTrace::file, ...) are not checked: the frame does not know the run's
// file table.
//
// Thread-safety: both functions are reentrant; a builder belongs to one
// thread.

#ifndef LAGGARD_MODEL_WIRE_H_
#define LAGGARD_MODEL_WIRE_H_

#include <string>
#include <string_view>

#include "base/status.h"
#include "model/run.h"

namespace laggard {

// Appends the binary form of `builder` to `out`. Flushes its buffered steps first.
void EncodeBuilder(RunBuilder& builder, std::string& out);

// Reads one builder written by EncodeBuilder from the front of `in` and advances `in` past it.
// Never crashes on damaged bytes: returns an error Status (base/status.h) saying what is wrong,
// and leaves `in` where it was.
StatusOr<RunBuilder> DecodeBuilder(std::string_view& in);

}  // namespace laggard

#endif  // LAGGARD_MODEL_WIRE_H_
