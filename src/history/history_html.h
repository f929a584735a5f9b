// The fleet history as one self-contained HTML page (`laggard history
// --html FILE`): the offenders, then a grid of hosts x jobs in the order
// they ran, each cell the host's state in that job (culprit, with its part
// and cause; seen healthy; undecided; not in the job). Hosts that were
// never a culprit are counted, not drawn; past kMaxGridJobs jobs, the last
// ones are drawn and the page says so. No script, no network.

#ifndef LAGGARD_HISTORY_HISTORY_HTML_H_
#define LAGGARD_HISTORY_HISTORY_HTML_H_

#include <ostream>
#include <string>
#include <vector>

#include "history/fleet_report.h"

namespace laggard::history {

inline constexpr size_t kMaxGridJobs = 200;
inline constexpr size_t kMaxGridHosts = 100;

// `jobs`: the last of the report's jobs (at least kMaxGridJobs of them, or
// all), oldest first.
void RenderHistoryHtml(const std::string& store_path, const std::vector<JobRecord>& jobs,
                       const FleetReport& report, const ReportOptions& options, std::ostream& out);

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_HISTORY_HTML_H_
