// Reports: the terminal text, the versioned JSON document, the self-contained
// HTML page and the merged Chrome/Perfetto trace, all rendered from the same
// ReportInput. Documented in docs/json-report.md, docs/html-report.md and
// docs/merged-trace.md.
//
// Reports only format; they decide nothing.

#ifndef LAGGARD_REPORT_REPORT_H_
#define LAGGARD_REPORT_REPORT_H_

#include <ostream>
#include <string>
#include <vector>

#include "analysis/analyze_run.h"
#include "model/run.h"
#include "verdict/verdict.h"

namespace laggard {

inline constexpr std::string_view kReportSchema = "laggard.report/1";
inline constexpr std::string_view kLaggardVersion = "0.1.0";

// What every report renders: the run, every detector's output and the
// verdict. Its findings are analyses.AllFindings().
// One confirmation folded into the verdict (laggard diagnose RUN_DIR
// CONFIRM_DIR, confirm/fold.h): the report's `confirmation` section.
struct ConfirmationLine {
  std::string culprit;  // the culprit it was about ("host node-05", "the job's network")
  std::string verdict;  // confirmed | refuted | inconclusive | not run | not judged
  std::string locus;
  std::string figures;
  std::string host;  // the host it confirms, when it names one
  // Why it was not folded into the verdict ("" when it was): it was about
  // another job (model/job_span.h).
  std::string not_folded;
};

struct ReportInput {
  const Run& run;
  const Analyses& analyses;
  const Verdict& verdict;
  std::vector<ConfirmationLine> confirmations = {};

  // The rank <-> GPU join when the reports show it: the run has GPU metrics
  // and ranks were tied to GPUs, or some host's GPUs could not be.
  const RankMap* RankMapShown() const {
    const RankMap& ranks = analyses.ranks;
    if (run.hardware.gpus.empty()) return nullptr;
    return ranks.Ties().empty() && ranks.untied().empty() ? nullptr : &ranks;
  }
};

struct TextOptions {
  bool color = false;
  bool quiet = false;        // only the verdict line
  size_t max_findings = 20;  // then "... and N more"
};

void RenderText(const ReportInput& in, const TextOptions& options, std::ostream& out);
std::string RenderJson(const ReportInput& in);
// One HTML file that opens offline: the JSON report plus Chart.js, both
// embedded (Chart.js at build time).
std::string RenderHtml(const ReportInput& in);
// Chrome trace JSON (object format) with steps, collectives, GPU counters and
// findings of every rank on one timeline.
void WriteMergedTrace(const ReportInput& in, std::ostream& out);

}  // namespace laggard

#endif  // LAGGARD_REPORT_REPORT_H_
