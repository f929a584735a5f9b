// The hang family: evidence of a stopped job, appended to
// RunBuilder::hang() (model/hang.h). Registered by ingest/readers.cc.

#ifndef LAGGARD_INGEST_HANGS_HANG_READERS_H_
#define LAGGARD_INGEST_HANGS_HANG_READERS_H_

#include <memory>

#include "ingest/common/text_reader.h"

namespace laggard {

// Rank and launcher logs that hold hang lines (ingest/common/hang_lines.h) and no
// step line in their head: a torchrun stderr that ends in a watchdog
// timeout and the failure table. `step_lines` (a text-log reader, which
// reads hang lines too) reads the file, so step records further down are
// kept; without it only hang lines are read.
std::unique_ptr<TextReader> MakeHangLogReader(std::unique_ptr<TextReader> step_lines = nullptr);

// NCCL RAS status reports (`ncclras`, `echo status | nc localhost 28028`;
// NCCL 2.24 and later), one file holding one or more: the job summary, the
// communicators' table and what its Errors and Warnings sections name
// (missing and dead processes, ranks behind in their operation counts),
// into RunBuilder::hang().ras.
std::unique_ptr<TextReader> MakeNcclRasReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_HANGS_HANG_READERS_H_
