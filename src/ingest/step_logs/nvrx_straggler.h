// NVIDIA Resiliency Extension's straggler reports (NVRx), as the NeMo and
// Megatron-Bridge callbacks print them on rank 0 (ptl_resiliency/
// straggler_det_callback.py, megatron/bridge/training/nvrx_straggler.py):
//
//   STRAGGLER DETECTION WARNING: Some GPUs have worse relative performance. Affected ranks:
//   {StragglerId(rank=3, node='host-a')} GPU relative performance:
//    Worst performing 5/512 ranks:
//     Rank=76 Node=h100-001-253-012 Score=0.94
//     ...
//    Best performing 5/512 ranks:
//     Rank=432 Node=h100-004-141-026 Score=0.99
//   GPU individual performance:
//     Rank=0 Node=c032f989068c Score=1.00
//
// Whatever the logger and launcher print goes in front of each line (NeMo
// indents the lines under its header). With few ranks every rank is listed,
// worst first, without the Worst/Best headers. "Affected ranks" is a
// Python set of StragglerId (or, in some docs, a list of numbers). A
// warning comes before the score tables of its report; a section already
// read starts the next report.
//
// Node= is kept with the rank's score (the host NVRx names). An entry line
// that does not read is tool.report_bad_field. The TextLogReader offers every line no
// step matcher took; one scanner per file, not thread-safe.

#ifndef LAGGARD_INGEST_STEP_LOGS_NVRX_STRAGGLER_H_
#define LAGGARD_INGEST_STEP_LOGS_NVRX_STRAGGLER_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "ingest/common/text_reader.h"
#include "model/tool_report.h"

namespace laggard {

class NvrxReportScanner {
 public:
  // A line of the log; true when it was a report line (taken or counted).
  bool Offer(std::string_view line, uint64_t line_number, ReaderContext& ctx);
  // Adds the file's reports to ctx.out; returns how many.
  uint64_t Finish(ReaderContext& ctx);
  // Inside a score table: every line must be offered (one that is no entry
  // ends the table).
  bool reading() const { return section_ != Section::kNone; }

 private:
  enum class Section { kNone, kRelative, kIndividual };
  NvrxReport& Current(uint64_t line_number, ReaderContext& ctx);
  void Entry(std::string_view line, size_t at, uint64_t line_number, ReaderContext& ctx);
  void Warning(std::string_view line, size_t at, bool relative, uint64_t line_number,
               ReaderContext& ctx);

  std::vector<NvrxReport> reports_;
  bool open_ = false;  // reports_.back() takes more sections
  Section section_ = Section::kNone;
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_STEP_LOGS_NVRX_STRAGGLER_H_
