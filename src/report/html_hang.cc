// The HTML report's "Hang" section (docs/html-report.md): when the hang
// detector found a hang, its decided finding and next steps, and per
// process group one row per member with its progress and how it reads
// against the finding (report_hang::MarkOf). Written here as HTML, every
// input text escaped; html_report.cc puts it into a <template> that the
// page script moves after the verdict and the next steps.

#include <map>
#include <set>

#include "report/hang_view.h"
#include "report/json_document.h"

namespace laggard::report_json {
namespace {

using report_hang::RankMark;

std::string SeqText(const std::optional<int64_t>& v) {
  return v ? fmt::format("#{}", *v) : std::string("–");
}

// The state cell's words: what the finding says of that rank.
std::string MarkText(RankMark m, const HangGroupState& g, const HangRankState* s,
                     const Finding* decided) {
  std::string n = g.stuck_seq ? fmt::format("#{}", *g.stuck_seq) : std::string("the collective");
  switch (m) {
    case RankMark::kCulprit:
      switch (decided->code) {
        case FindingCode::kHangNotJoined: return "culprit: never reached " + n;
        case FindingCode::kHangHostStopped:
          return "culprit: never reached " + n + " (its host stopped issuing)";
        case FindingCode::kHangDesync: return "culprit: out of step at " + n;
        case FindingCode::kHangProcessMissing: return "culprit: its process exited";
        case FindingCode::kHangTransportError: return "culprit: transport error";
        default: return "culprit";
      }
    case RankMark::kAhead: return fmt::format("ahead: completed {}", SeqText(s->completed));
    case RankMark::kStuck: return "stuck in " + n + " with every member";
    case RankMark::kWaiting:
      return fmt::format("waiting in {}", SeqText(report_hang::WaitingIn(*s)));
    case RankMark::kReported: return "reported, not waiting";
    case RankMark::kNoEvidence: return "no evidence (no dump, no hang line)";
  }
  return "";
}

std::string Cell(std::string_view cls, std::string_view text) {
  return fmt::format("<td{}>{}</td>", cls.empty() ? "" : fmt::format(" class=\"{}\"", cls),
                     EscapeHtml(text));
}

std::string GroupTitle(const HangGroupState& g) {
  std::string t = g.pg_id == "?" ? std::string("process group not named by the lines")
                                 : "process group " + g.pg_id;
  if (!g.pg_desc.empty()) t += " (" + g.pg_desc + ")";
  if (g.stuck_seq) t += fmt::format(" · stuck collective #{}", *g.stuck_seq);
  return t;
}

// One group's table: its members (the reporting ranks where members are
// unknown), at most kMaxHangRows rows, the marked ones first to be kept.
std::string GroupTable(const HangGroupState& g, const Finding* decided, bool decided_group) {
  std::map<int32_t, const HangRankState*> state;
  for (const HangRankState& s : g.ranks) state[s.rank] = &s;
  std::set<int32_t> rows(g.members.begin(), g.members.end());
  for (const HangRankState& s : g.ranks) rows.insert(s.rank);
  std::map<int32_t, RankMark> marks;
  for (int32_t r : rows) {
    auto it = state.find(r);
    marks[r] =
        report_hang::MarkOf(g, r, it == state.end() ? nullptr : it->second, decided, decided_group);
  }
  std::set<int32_t> shown;
  for (auto [r, m] : marks) {
    if ((m == RankMark::kCulprit || m == RankMark::kAhead) && shown.size() < kMaxHangRows) {
      shown.insert(r);
    }
  }
  for (auto [r, m] : marks) {
    if (shown.size() >= kMaxHangRows) break;
    shown.insert(r);
  }
  std::map<RankMark, size_t> hidden;
  for (auto [r, m] : marks) {
    if (!shown.count(r)) ++hidden[m];
  }

  std::string h = "<h3 class=\"hang-group\">" + EscapeHtml(GroupTitle(g)) + "</h3>\n";
  h += fmt::format(
      "<div class=\"scroll\"><table class=\"hang-ranks\" data-pg=\"{}\">"
      "<thead><tr><th class=\"num\">rank</th><th class=\"num\">last enqueued</th>"
      "<th class=\"num\">last completed</th><th>waiting in</th><th>from</th><th>state</th>"
      "</tr></thead><tbody>\n",
      EscapeHtml(g.pg_id));
  for (int32_t r : shown) {
    const HangRankState* s = state.count(r) ? state.at(r) : nullptr;
    RankMark m = marks.at(r);
    std::string_view cls = m == RankMark::kCulprit ? "culprit"
                           : m == RankMark::kAhead ? "flagged"
                                                   : "";
    h += fmt::format("<tr{} data-rank=\"{}\" data-state=\"{}\">",
                     cls.empty() ? "" : fmt::format(" class=\"{}\"", cls), r,
                     report_hang::RankMarkName(m));
    h += Cell("num", std::to_string(r));
    if (s == nullptr) {
      h += Cell("num", "–") + Cell("num", "–") + Cell("", "–") + Cell("", "–");
    } else {
      h += Cell("num", SeqText(s->enqueued));
      h += Cell("num", SeqText(s->completed) + (s->completed_inferred ? " (inferred)" : ""));
      std::optional<int64_t> in = report_hang::WaitingIn(*s);
      std::string waiting = in ? SeqText(in) : std::string("–");
      if (in && !s->op_waiting.empty()) waiting = s->op_waiting + " " + waiting;
      if (in && !s->sizes_waiting.empty() && s->sizes_waiting != "[]") {
        waiting += " " + s->sizes_waiting;
      }
      h += Cell("mono", waiting);
      h += Cell("", s->from_dump ? "Flight Recorder dump" : "log");
    }
    h += fmt::format("<td><span class=\"hang-state {}\">{}</span></td></tr>\n",
                     report_hang::RankMarkName(m), EscapeHtml(MarkText(m, g, s, decided)));
  }
  h += "</tbody></table></div>\n";
  if (!hidden.empty()) {
    std::vector<std::string> parts;
    for (auto [m, n] : hidden)
      parts.push_back(fmt::format("{} {}", n, report_hang::RankMarkName(m)));
    h += "<p class=\"sub\">" +
         EscapeHtml(fmt::format("{} more members not listed: {}", rows.size() - shown.size(),
                                fmt::join(parts, ", "))) +
         "</p>\n";
  }
  return h;
}

}  // namespace

std::string HangSectionHtml(const ReportInput& in) {
  const Finding* f = report_hang::DecidedFinding(in.analyses.hang);
  if (f == nullptr) return "";
  const HangGroupState* decided_group = report_hang::DecidedGroup(in.analyses.hang, *f);
  std::string h = "<section class=\"card hang\" id=\"hang\">\n<h2>Hang</h2>\n";
  size_t dumps = in.run.hang.dumps.size(), lines = in.run.hang.events.size();
  h += "<p class=\"sub\">" +
       EscapeHtml(fmt::format("the job stopped: the hang detector read {} Flight Recorder dump{} "
                              "and {} hang line{}",
                              dumps, dumps == 1 ? "" : "s", lines, lines == 1 ? "" : "s")) +
       "</p>\n";
  std::string severity(SeverityName(f->severity));
  h += fmt::format(
      "<div class=\"finding hang-decided\" data-code=\"{0}\"><div class=\"head\">"
      "<span class=\"badge {1}\">{1}</span><span class=\"code\">{0}</span>"
      "<span class=\"code\">confidence {2:.2f}</span></div>\n<p>{3}</p></div>\n",
      EscapeHtml(Describe(f->code).name), EscapeHtml(severity), f->confidence,
      EscapeHtml(f->message));
  if (!f->next_steps.empty()) {
    h += "<h3>Next steps</h3>\n<ol class=\"steps\">";
    for (const std::string& s : f->next_steps) h += "<li>" + EscapeHtml(s) + "</li>";
    h += "</ol>\n";
  }
  // The decided group first, then the others in the detector's order.
  std::vector<const HangGroupState*> groups;
  if (decided_group != nullptr) groups.push_back(decided_group);
  for (const HangGroupState& g : in.analyses.hang.groups) {
    if (&g != decided_group) groups.push_back(&g);
  }
  for (size_t i = 0; i < groups.size() && i < kMaxHangGroups; ++i) {
    h += GroupTable(*groups[i], f, groups[i] == decided_group);
  }
  if (groups.size() > kMaxHangGroups) {
    h += "<p class=\"sub\">" +
         EscapeHtml(fmt::format("{} more process groups not listed (the JSON report's `hang` "
                                "section has them all)",
                                groups.size() - kMaxHangGroups)) +
         "</p>\n";
  }
  h += "<p class=\"sub\">culprit: a rank the finding names · ahead: it completed the stuck "
       "collective and went on · no evidence: a member that said nothing, which a missing dump "
       "or a cut log looks like, never blamed</p>\n</section>\n";
  return h;
}

}  // namespace laggard::report_json
