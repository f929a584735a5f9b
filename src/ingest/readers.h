// Factories for the step-time readers. The CLI builds the list it wants and
// hands it to Ingest(); nothing registers itself.

#ifndef LAGGARD_INGEST_READERS_H_
#define LAGGARD_INGEST_READERS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ingest/line_matcher.h"
#include "ingest/step_reader.h"
#include "ingest/trace_reader.h"

namespace laggard {

// Free-text logs, scanned line by line with `matchers` (tried in order; the
// first that matches wins). Claims any text file, with low confidence unless
// a matcher recognises a line of the head, so a log whose first step line is
// far down still gets read.
std::unique_ptr<StepReader> MakeTextLogReader(std::vector<std::unique_ptr<LineMatcher>> matchers);

// CSV (or TSV / semicolon-separated) with a header naming the columns
// (field_names.h).
std::unique_ptr<StepReader> MakeCsvStepReader();

// JSON Lines: one object per line with the same field names as CSV.
std::unique_ptr<StepReader> MakeJsonlStepReader();

// DCGM outputs (GPU metrics and health, into RunBuilder::AddGpu):
// `dcgmi dmon` tables, `dcgmi diag` results (table or -j JSON), and
// dcgm-exporter's Prometheus text (/metrics, one or more scrapes).
std::unique_ptr<StepReader> MakeDcgmiDmonReader();
std::unique_ptr<StepReader> MakeDcgmiDiagReader();
std::unique_ptr<StepReader> MakeDcgmExporterReader();

// The standard reader set in sniffing order: JSONL, CSV, then text logs with
// the user pattern (if any), the article's line and Megatron lines.
struct StepReaderSet {
  std::vector<std::unique_ptr<StepReader>> owned;
  std::vector<const StepReader*> readers;  // views of `owned`, for Ingest()
};
StatusOr<StepReaderSet> MakeDefaultStepReaders(const std::optional<std::string>& step_pattern);

// The standard trace readers: Kineto / Chrome trace JSON, Nsight Systems SQLite.
struct TraceReaderSet {
  std::vector<std::unique_ptr<TraceReader>> owned;
  std::vector<const TraceReader*> readers;
};
TraceReaderSet MakeDefaultTraceReaders();

}  // namespace laggard

#endif  // LAGGARD_INGEST_READERS_H_
