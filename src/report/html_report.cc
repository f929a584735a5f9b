// The HTML report: one self-contained page (docs/html-report.md).
//
//   <style>                    html_report.css, embedded at build time
//   <script id=laggard-report> the JSON report document (application/json)
//   <script>                   Chart.js from Debian's libjs-chart.js, embedded
//                              at build time (cmake/embed_file.cmake)
//   <script>                   html_report.js: renders the document
//   <template id=laggard-hang> only for a run the hang detector found a hang
//                              in: the Hang section as HTML (html_hang.cc),
//                              which the page script moves after the next
//                              steps
//   <script id=laggard-op-timelines>, <script> html_whatif.js: only for a run
//                              with an op timeline's what-if replay, the
//                              data of its section and the script that
//                              draws it there (html_whatif.cc)
//
// No URL is loaded: the page opens offline from a file. The page reports its
// own state in #laggard-status (data-state "pending", "ok" or "error") and
// JavaScript errors in #laggard-errors, which the browser test reads.

#include <string>
#include <string_view>

#include "report/json_document.h"
#include "report/report.h"

namespace laggard {
namespace report_json {

// Generated at build time (src/CMakeLists.txt).
std::string_view ChartJsSource();
std::string_view ChartJsSource_version();
std::string_view HtmlAppJs();
std::string_view HtmlWhatIfJs();
std::string_view HtmlStyleCss();

namespace {

// JSON inside <script>: the only sequence that could end the element early
// is "</script" (or "<!--"); '<' appears in JSON only inside strings, where
// \u003c means the same character.
std::string JsonForScript(const Json& doc) {
  std::string json = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

// What the page's first script does: catch errors into the DOM, before any
// other script can throw.
constexpr std::string_view kErrorCapture = R"js(
(function () {
  function show(msg) {
    var box = document.getElementById('laggard-errors');
    var li = document.createElement('div');
    li.className = 'laggard-error';
    li.textContent = 'report error: ' + msg;
    box.appendChild(li);
    box.hidden = false;
    document.getElementById('laggard-status').setAttribute('data-state', 'error');
  }
  window.laggardReportError = show;
  window.addEventListener('error', function (e) {
    show((e.message || 'error') + (e.filename ? ' at ' + e.filename + ':' + e.lineno : ''));
  });
  window.addEventListener('unhandledrejection', function (e) { show('unhandled rejection: ' + e.reason); });
  var original = console.error;
  console.error = function () {
    show(Array.prototype.map.call(arguments, String).join(' '));
    return original.apply(console, arguments);
  };
})();
)js";

}  // namespace

std::string RenderHtmlDocument(const Json& report, const Json& whatifs,
                               std::string_view hang_html) {
  std::string summary = "laggard report";
  if (report.contains("verdict") && report["verdict"].contains("summary") &&
      report["verdict"]["summary"].is_string()) {
    summary = report["verdict"]["summary"].get<std::string>();
  }
  std::string tool = "laggard";
  if (report.contains("tool") && report["tool"].contains("version") &&
      report["tool"]["version"].is_string()) {
    tool += " " + report["tool"]["version"].get<std::string>();
  }
  std::string schema = report.contains("schema") && report["schema"].is_string()
                           ? report["schema"].get<std::string>()
                           : std::string();
  std::string_view chart_version = ChartJsSource_version();

  std::string html;
  html.reserve(ChartJsSource().size() + 64 * 1024);
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<meta name=\"generator\" content=\"" + EscapeHtml(tool) + "\">\n";
  html += "<title>" + EscapeHtml(summary) + "</title>\n<style>\n";
  html += HtmlStyleCss();
  html += "</style>\n</head>\n<body>\n";
  html +=
      "<header class=\"top\"><span class=\"brand\">laggard</span><span class=\"meta\">straggler "
      "report";
  if (!schema.empty()) html += " · " + EscapeHtml(schema);
  html += "</span></header>\n";
  html += "<div id=\"laggard-status\" data-state=\"pending\"></div>\n";
  html += "<div id=\"laggard-errors\" hidden></div>\n";
  html += "<script>" + std::string(kErrorCapture) + "</script>\n";
  html += "<main id=\"app\"><noscript><p>" + EscapeHtml(summary) +
          "</p><p>This report draws its charts with JavaScript; the data is in the "
          "laggard-report element of this file.</p></noscript></main>\n";
  html += "<footer>" + EscapeHtml(tool) + " · charts drawn with Chart.js";
  if (!chart_version.empty()) html += " " + EscapeHtml(chart_version);
  html += " (embedded) · self-contained, no network access</footer>\n";
  // Its text is escaped (html_hang.cc): nothing in it can end the element.
  if (!hang_html.empty()) {
    html += "<template id=\"laggard-hang\">";
    html += hang_html;
    html += "</template>\n";
  }
  html += "<script type=\"application/json\" id=\"laggard-report\">";
  html += JsonForScript(report);
  html += "</script>\n<script>\n";
  html += ChartJsSource();
  html += "\n</script>\n<script>\n";
  html += HtmlAppJs();
  html += "\n</script>\n";
  if (whatifs.is_array() && !whatifs.empty()) {
    html += "<script type=\"application/json\" id=\"laggard-op-timelines\">";
    html += JsonForScript(whatifs);
    html += "</script>\n<script>\n";
    html += HtmlWhatIfJs();
    html += "\n</script>\n";
  }
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace report_json

std::string RenderHtml(const ReportInput& in) {
  return report_json::RenderHtmlDocument(report_json::BuildReport(in),
                                         report_json::OpTimelineWhatIfs(in),
                                         report_json::HangSectionHtml(in));
}

}  // namespace laggard
