// The step-log family: per-step times as training loops print them. Free
// text (the article's `rank R, step S, time Ts` lines, Megatron iteration
// lines, a user's regex: line_matcher.h), CSV with a header and JSON Lines
// (column and key names: common/field_names.h), and the `rank,host,gpu`
// placement table. Registered by ingest/readers.cc.

#ifndef LAGGARD_INGEST_STEP_LOGS_STEP_LOG_READERS_H_
#define LAGGARD_INGEST_STEP_LOGS_STEP_LOG_READERS_H_

#include <memory>
#include <vector>

#include "ingest/common/text_reader.h"
#include "ingest/step_logs/line_matcher.h"

namespace laggard {

// Free-text logs, scanned line by line with `matchers` (tried in order; the
// first that matches wins). Claims any text file, with low confidence unless
// a matcher recognises a line of the head, so a log whose first step line is
// far down still gets read.
std::unique_ptr<TextReader> MakeTextLogReader(std::vector<std::unique_ptr<LineMatcher>> matchers);

// CSV (or TSV / semicolon-separated) with a header naming the columns
// (common/field_names.h).
std::unique_ptr<TextReader> MakeCsvStepReader();

// A `rank,host,gpu` table (no step or duration column): places ranks on hosts
// and GPUs, so GPU metrics join ranks whose step logs do not say where they
// ran. Sits in csv_reader.cc, sharing its CSV splitting.
std::unique_ptr<TextReader> MakeRankMapReader();

// JSON Lines: one object per line with the same field names as CSV.
std::unique_ptr<TextReader> MakeJsonlStepReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_STEP_LOGS_STEP_LOG_READERS_H_
