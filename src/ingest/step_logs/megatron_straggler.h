// Megatron-LM's StragglerDetector reports (megatron/core/utils.py,
// StragglerDetector.report()), which rank 0 logs once per logging interval
// when the job runs with --log-straggler:
//
//   [2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 |
//   MnPwr/Rnk: 601796W/8 | ... | MnEtpt/Rnk: 296.02TF/0 | MxEtpt/Rnk: 297.32TF/8
//
// (one line; whatever the logger prints goes in front), and with
// --straggler-minmax-count N, two more lines:
//
//   ^^^^ Bottom 4 Ranks with lowest  Etpt(TF): 296.02/0, 296.17/2, ...,
//   ^^^^ Top    4 Ranks with highest Etpt(TF): 297.28/15, ..., 297.32/8,
//
// Each field is `<value><unit>/<rank>`: two decimals in today's source,
// integers in the sample of its README, so both are read. Power is printed
// with a "W" but is NVML's milliwatts: a report with a value no GPU draws in
// watts (> 5,000) is read as mW, both values. get_batch times written in
// "us" (the unit the detector's defaults name) are converted to ms. A field
// given twice keeps the first (the second is counted).
//
// The TextLogReader offers every line no step matcher took. A report with a
// field that does not read keeps the fields that do; the bad field is
// counted (tool.report_bad_field). One scanner per file; not thread-safe.

#ifndef LAGGARD_INGEST_STEP_LOGS_MEGATRON_STRAGGLER_H_
#define LAGGARD_INGEST_STEP_LOGS_MEGATRON_STRAGGLER_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "ingest/common/text_reader.h"
#include "model/tool_report.h"

namespace laggard {

class StragglerReportScanner {
 public:
  // A line of the log, `line_number` 1-based. Returns true when the line was
  // a report line (taken or counted). Cheap for other lines.
  bool Offer(std::string_view line, uint64_t line_number, ReaderContext& ctx);

  // Adds the file's reports to ctx.out; returns how many.
  uint64_t Finish(ReaderContext& ctx);

 private:
  void MainLine(std::string_view line, size_t at, uint64_t line_number, ReaderContext& ctx);
  void RankList(std::string_view line, size_t at, uint64_t line_number, ReaderContext& ctx);

  std::vector<ToolReport> reports_;
  bool last_read_ = false;  // the last report line read (a list may follow it)
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_STEP_LOGS_MEGATRON_STRAGGLER_H_
