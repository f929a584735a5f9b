#include "history/history_html.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "analysis/common/rank_map.h"
#include "base/text.h"
#include "model/time.h"

namespace laggard::history {
namespace {

constexpr std::string_view kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; }
th, td { padding: 2px 6px; text-align: left; }
.offenders td, .offenders th { border-bottom: 1px solid #ddd; }
.grid td { width: 9px; height: 14px; padding: 0; border: 1px solid #fff; }
.grid th { font-weight: normal; white-space: nowrap; padding-right: 8px; }
.c { background: #d62728; } .h { background: #9ecf9e; } .u { background: #c8c8c8; }
.chronic { color: #b00; font-weight: bold; } .note { color: #666; }
.key span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: middle; }
)css";

std::string Day(int64_t s) { return FormatDate(s * 1'000'000'000); }

}  // namespace

void RenderHistoryHtml(const std::string& store_path, const std::vector<JobRecord>& jobs,
                       const FleetReport& r, const ReportOptions& o, std::ostream& out) {
  out << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<title>laggard history</title><style>" << kStyle << "</style></head><body>\n";
  out << fmt::format("<h1>laggard history: {}</h1>\n", EscapeHtml(store_path));
  if (jobs.empty()) {
    out << "<p>No recorded jobs match.</p></body></html>\n";
    return;
  }
  out << fmt::format(
      "<p>{} jobs from {} to {}: {} without a straggler, {} undecided. Chronic: the culprit in "
      "&ge; {} and &ge; {:.0f}% of its last {} jobs.</p>\n",
      r.jobs, Day(r.first_s), Day(r.last_s), r.healthy_jobs, r.undecided_jobs, o.chronic_min_jobs,
      100 * o.chronic_share, o.last_jobs);

  out << "<h2>Offenders</h2>\n";
  if (r.offenders.empty()) {
    out << "<p>None: no part was the culprit of a recorded job.</p>\n";
  } else {
    out << "<table class=\"offenders\"><tr><th>standing</th><th>part</th><th>culprit in</th>"
           "<th>in all</th><th>causes</th><th>as ranks</th><th>periodic</th></tr>\n";
    for (const Offender& off : r.offenders) {
      std::string causes;
      for (const auto& [cause, n] : off.causes) {
        causes += fmt::format("{}{} &times;{}", causes.empty() ? "" : ", ", EscapeHtml(cause), n);
      }
      std::string ranks = RankRangesText(off.ranks);
      out << fmt::format(
          "<tr><td class=\"{}\">{}</td><td>{}{}</td><td>{} of last {}</td><td>{} of {}</td>"
          "<td>{}</td><td>{}</td><td>{}</td></tr>\n",
          off.standing == Standing::kChronic ? "chronic" : "", StandingName(off.standing),
          EscapeHtml(off.Name()), off.weak() ? " <span class=\"note\">(by place)</span>" : "",
          off.culprit_last, off.jobs_last, off.culprit_all, off.jobs_all, causes, ranks,
          EscapeHtml(off.periodic.value_or("")));
    }
    out << "</table>\n";
  }
  for (const RankFixed& f : r.rank_fixed) {
    out << fmt::format(
        "<p>Rank-fixed: rank {} was the culprit in {} jobs ({} for imbalance), on {} parts: the "
        "code or the data that rank gets, not one card.</p>\n",
        f.rank, f.culprit_jobs, f.imbalance_jobs, f.parts.size());
  }

  // The grid: hosts that were ever the culprit, jobs in the order they ran.
  size_t first = jobs.size() > kMaxGridJobs ? jobs.size() - kMaxGridJobs : 0;
  const size_t total = std::max<size_t>(static_cast<size_t>(r.jobs), jobs.size());
  std::vector<std::map<std::string, HostState>> states;
  std::map<std::string, int> culprit_jobs;
  std::map<std::string, bool> seen;
  for (size_t j = first; j < jobs.size(); ++j) {
    states.push_back(HostStatesOf(jobs[j], o));
    for (const auto& [host, st] : states.back()) {
      seen[host] = true;
      if (st.kind == HostState::kCulprit) ++culprit_jobs[host];
    }
  }
  std::vector<std::string> hosts;
  for (const auto& [host, n] : culprit_jobs) hosts.push_back(host);
  std::stable_sort(hosts.begin(), hosts.end(), [&](const std::string& a, const std::string& b) {
    return culprit_jobs[a] > culprit_jobs[b];
  });
  size_t hidden_hosts = hosts.size() > kMaxGridHosts ? hosts.size() - kMaxGridHosts : 0;
  hosts.resize(std::min(hosts.size(), kMaxGridHosts));
  out << "<h2>Hosts &times; jobs</h2>\n<p class=\"key\"><span class=\"c\"></span>culprit"
         "<span class=\"h\"></span>seen healthy<span class=\"u\"></span>undecided (or a "
         "low-confidence culprit)</p>\n";
  out << fmt::format(
      "<p class=\"note\">{} jobs drawn{}, oldest on the left; {} hosts that were a culprit "
      "drawn{}, {} never a culprit not drawn.</p>\n",
      states.size(),
      total > states.size() ? fmt::format(" (the last {} of {})", states.size(), total) : "",
      hosts.size(), hidden_hosts > 0 ? fmt::format(" ({} more not drawn)", hidden_hosts) : "",
      seen.size() - culprit_jobs.size());
  out << "<table class=\"grid\">\n";
  for (const std::string& host : hosts) {
    out << fmt::format("<tr><th>{}</th>", EscapeHtml(host));
    for (size_t j = 0; j < states.size(); ++j) {
      auto it = states[j].find(host);
      const JobRecord& job = jobs[first + j];
      if (it == states[j].end()) {
        out << "<td></td>";
        continue;
      }
      const HostState& st = it->second;
      const char* cls = st.kind == HostState::kCulprit   ? "c"
                        : st.kind == HostState::kHealthy ? "h"
                                                         : "u";
      std::string title = fmt::format("{} ({}): {}", job.job_id, Day(job.when_s()),
                                      st.kind == HostState::kCulprit   ? st.what + " " + st.cause
                                      : st.kind == HostState::kHealthy ? "healthy"
                                                                       : "undecided");
      out << fmt::format("<td class=\"{}\" title=\"{}\"></td>", cls, EscapeHtml(title));
    }
    out << "</tr>\n";
  }
  out << "</table>\n</body></html>\n";
}

}  // namespace laggard::history
