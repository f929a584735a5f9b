// The JSON report as a document (nlohmann::ordered_json), for the renderers
// inside src/report/ that need it as data rather than text: RenderJson()
// prints it, the HTML report embeds it. Not part of the public report API
// (report.h), so nlohmann stays a private dependency of laggard_report.
//
// Numbers go through Num(): rounded to 6 significant digits, non-finite
// values become null, so documents compare byte for byte across machines.

#ifndef LAGGARD_REPORT_JSON_DOCUMENT_H_
#define LAGGARD_REPORT_JSON_DOCUMENT_H_

#include <cmath>
#include <cstdlib>
#include <optional>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "report/report.h"

namespace laggard::report_json {

using Json = nlohmann::ordered_json;

inline Json Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return std::strtod(fmt::format("{:.6g}", v).c_str(), nullptr);
}

template <typename T>
Json Opt(const std::optional<T>& v) {
  if (!v) return nullptr;
  if constexpr (std::is_floating_point_v<T>) return Num(*v);
  else return *v;
}

// The whole report (schema laggard.report/1, docs/json-report.md).
Json BuildReport(const ReportInput& in);

// The `series` section: per-rank step times on a shared (downsampled) step
// axis, and when present collective lateness per rank and GPU metric series,
// all on one time origin. Layout in docs/json-report.md.
Json BuildSeries(const ReportInput& in);

// A source line as {"file", "line"} (null where unknown); an instant as
// RFC 3339 text, null when absent (json_report.cc).
Json SourceJson(const Run& run, const SourceRef& src);
Json TimeJson(const std::optional<TimeNs>& t);

// The `hardware` and `network` sections (json_evidence.cc).
Json HardwareJson(const Run& run, const HardwareAnalysis& hardware);
Json NetworkJson(const Run& run, const NetworkAnalysis& network);

// The `hang` section: per process group of the hang detector its members,
// stuck collective and per reporting rank its progress (json_report.cc).
Json HangJson(const HangAnalysis& hang);

// The HTML page for a report document (html_report.cc). Takes the document
// so tests can add sections (e.g. `network`) the run does not have yet.
// `whatifs` (OpTimelineWhatIfs()), when not empty, is embedded beside it
// for the page's "What-if (op timeline)" section; `hang_html`
// (HangSectionHtml()), when not empty, in a <template id="laggard-hang">
// that the page script puts after the next steps.
std::string RenderHtmlDocument(const Json& report, const Json& whatifs = Json::array(),
                               std::string_view hang_html = {});

// The page's "Hang" section as HTML (html_hang.cc), "" when the hang
// detector did not run or found no hang: the decided finding and its next
// steps, and per process group (the decided finding's first, at most
// kMaxHangGroups) a table of at most kMaxHangRows members (the culprits and
// the ranks ahead kept first), each with its progress and a state cell:
// culprit, ahead, stuck, waiting, reported, or no evidence.
inline constexpr size_t kMaxHangGroups = 8;
inline constexpr size_t kMaxHangRows = 256;
std::string HangSectionHtml(const ReportInput& in);

// The page's "What-if (op timeline)" section (html_whatif.cc): per op
// timeline with a what-if replay, its headline numbers, findings, grid and
// top groups (docs/html-report.md).
Json OpTimelineWhatIfs(const ReportInput& in);
// The grid: rows are pipeline stages, columns DP ranks; a cell is the
// by_worker slowdown of that (dp, pp) worker (with tp > 1 the largest of
// its tp ranks'), null when the replay did not decompose it. Past 4,096
// cells only the DP ranks with a replayed worker are columns.
Json WhatIfHeatmap(const WhatIf& w, const std::vector<TimelineWorker>& workers);

}  // namespace laggard::report_json

#endif  // LAGGARD_REPORT_JSON_DOCUMENT_H_
