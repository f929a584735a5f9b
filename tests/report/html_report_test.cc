// The HTML report: one self-contained file (the JSON report and Chart.js
// embedded, no URL loaded) that renders in a real browser without errors.
//
// The browser tests run Debian's headless chromium on generated reports and
// read the page's own verdict from the DOM (#laggard-status data-state="ok",
// no #laggard-errors entries); screenshots go to
// <build>/tests/output/html_report/. They skip when chromium is absent
// (scripts/dev.sh test installs it).

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "report/json_document.h"
#include "report_fixture.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using report_json::Json;
using testing_util::Diagnosed;
using testing_util::FixtureOptions;
using testing_util::ReadFile;
using testing_util::SimulatedRun;
using testing_util::TempDir;
using testing_util::WriteFile;

// The text of the n-th <script ...>...</script> element (0-based), or "".
std::string ScriptElement(const std::string& html, size_t n, std::string* open_tag = nullptr) {
  size_t pos = 0;
  for (size_t i = 0;; ++i) {
    size_t open = html.find("<script", pos);
    if (open == std::string::npos) return "";
    size_t body = html.find('>', open);
    size_t close = html.find("</script>", body);
    if (body == std::string::npos || close == std::string::npos) return "";
    if (i == n) {
      if (open_tag) *open_tag = html.substr(open, body + 1 - open);
      return html.substr(body + 1, close - body - 1);
    }
    pos = close + 9;
  }
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The page's scripts: error capture, report document, Chart.js, page script.
constexpr size_t kDocumentScript = 1, kChartScript = 2, kPageScript = 3;

TEST(HtmlReportTest, EmbedsTheJsonReportDocument) {
  TempDir dir;
  auto d = SimulatedRun(dir.path());
  std::string html = RenderHtml(d->input());
  std::string tag;
  std::string doc = ScriptElement(html, kDocumentScript, &tag);
  EXPECT_NE(tag.find("type=\"application/json\""), std::string::npos) << tag;
  EXPECT_NE(tag.find("id=\"laggard-report\""), std::string::npos) << tag;
  Json embedded = Json::parse(doc);
  Json report = Json::parse(RenderJson(d->input()));
  EXPECT_EQ(embedded, report);
  EXPECT_EQ(embedded["verdict"]["culprits"][0]["rank"], testing_util::kFixtureCulprit);
  // The series the charts draw: 16 ranks x 200 steps, the GPU metrics, the
  // collectives of every traced rank.
  EXPECT_EQ(embedded["series"]["ranks"].size(), 16u);
  EXPECT_EQ(embedded["series"]["steps"].size(), 200u);
  EXPECT_EQ(embedded["series"]["gpus"].size(), 16u);
  EXPECT_EQ(embedded["series"]["collectives"].size(), 16u);
}

TEST(HtmlReportTest, EmbedsChartJsFromTheDebianPackageAndLoadsNoUrl) {
  TempDir dir;
  auto d = SimulatedRun(dir.path());
  std::string html = RenderHtml(d->input());
  std::string chart = ScriptElement(html, kChartScript);
  EXPECT_NE(chart.find("Chart.js v"), std::string::npos) << "Chart.js is not the third script";
  EXPECT_GT(chart.size(), 100'000u);
  EXPECT_FALSE(ScriptElement(html, kPageScript).empty());
  // Nothing is fetched: no src/href attributes with a scheme or a
  // protocol-relative URL, no CSS url() or @import, no fetch / XHR.
  std::regex remote(R"re((src|href)\s*=\s*["']?\s*(https?:|//))re", std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, remote));
  EXPECT_EQ(Count(html, "url("), 0u);
  EXPECT_EQ(Count(html, "@import"), 0u);
  std::string page = ScriptElement(html, kPageScript);
  EXPECT_EQ(Count(page, "fetch("), 0u);
  EXPECT_EQ(Count(page, "XMLHttpRequest"), 0u);
  // The only http(s):// texts are in Chart.js's licence header and helpers.
  std::string rest = html;
  rest.erase(rest.find(chart), chart.size());
  EXPECT_EQ(Count(rest, "http://"), 0u);
  EXPECT_EQ(Count(rest, "https://"), 0u);
}

TEST(HtmlReportTest, TextFromTheInputCannotEndTheScriptElement) {
  TempDir dir;
  auto d = SimulatedRun(dir.path(), FixtureOptions{.traces = false, .hardware = false});
  Json doc = report_json::BuildReport(d->input());
  doc["verdict"]["summary"] = "verdict: </script><script>alert(1)</script> & <b>";
  std::string html = report_json::RenderHtmlDocument(doc);
  EXPECT_EQ(Count(html, "</script>"), 4u);
  EXPECT_NE(html.find("<title>verdict: &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; "
                      "&lt;b&gt;</title>"),
            std::string::npos);
  EXPECT_EQ(Json::parse(ScriptElement(html, kDocumentScript))["verdict"]["summary"],
            doc["verdict"]["summary"]);
}

// --- headless Chromium -------------------------------------------------------

std::string FindChromium() {
  if (const char* env = getenv("LAGGARD_CHROMIUM")) return env;
  for (const char* p :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

fs::path OutputDir() {
  fs::path p = fs::path(LAGGARD_TEST_OUTPUT_DIR) / "html_report";
  fs::create_directories(p);
  return p;
}

struct BrowserResult {
  int rc = -1;
  std::string dom;
  std::string log;
};

// Runs chromium headless on `html` with `mode` ("--dump-dom" or
// "--screenshot=PATH") and returns its stdout (the DOM) and stderr.
BrowserResult RunChromium(const std::string& chromium, const fs::path& html,
                          const std::string& name, const std::string& mode) {
  fs::path out = OutputDir();
  fs::path profile = out / ("profile-" + name);
  fs::path dom = out / (name + ".dom.html"), log = out / (name + ".chromium.log");
  std::string cmd =
      "timeout 120 '" + chromium +
      "' --headless --disable-gpu --no-sandbox --no-first-run --disable-dev-shm-usage "
      "--hide-scrollbars --enable-logging=stderr --v=0 --window-size=1400,3200 "
      "--user-data-dir='" +
      profile.string() + "' " + mode + " 'file://" + fs::absolute(html).string() + "' > '" +
      dom.string() + "' 2> '" + log.string() + "'";
  BrowserResult r;
  int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.dom = ReadFile(dom.string());
  r.log = ReadFile(log.string());
  std::error_code ec;
  fs::remove_all(profile, ec);
  return r;
}

// Lines where the page's JavaScript failed, as Chromium logs them.
std::vector<std::string> ConsoleErrors(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("CONSOLE") != std::string::npos &&
        (line.find("Uncaught") != std::string::npos || line.find("rror") != std::string::npos)) {
      out.push_back(line);
    }
  }
  return out;
}

struct PageCase {
  std::string name;
  FixtureOptions fixture;
  bool add_network = false;
  size_t min_charts = 0;  // canvases drawn (heatmap + Chart.js charts)
};

void CheckPageRenders(const PageCase& c) {
  std::string chromium = FindChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not found (apt-get install chromium, or set LAGGARD_CHROMIUM): "
                    "browser test of the HTML report skipped";
  }
  TempDir dir;
  auto d = SimulatedRun(dir.path(), c.fixture);
  Json doc = report_json::BuildReport(d->input());
  if (c.add_network) {
    // The network section as the network detector will add it: any shape of
    // objects and arrays renders as tables.
    doc["network"] = {
        {"ib_ports", Json::array({{{"host", "node-00"},
                                   {"ca", "mlx5_0"},
                                   {"port", 1},
                                   {"state", "Active"},
                                   {"rate_gbps", 400}},
                                  {{"host", "node-01"},
                                   {"ca", "mlx5_0"},
                                   {"port", 1},
                                   {"state", "Down"},
                                   {"rate_gbps", nullptr}}})},
        {"nccl_tests",
         Json::array({{{"collective", "all_reduce"}, {"avg_busbw_gbps", 41.7}, {"ranks", 16}}})},
        {"switch_of", {{"node-00", "leaf-1"}, {"node-01", "leaf-2"}}}};
  }
  fs::path html = OutputDir() / (c.name + ".html");
  WriteFile(html.string(), report_json::RenderHtmlDocument(doc));

  BrowserResult r = RunChromium(chromium, html, c.name, "--dump-dom");
  ASSERT_EQ(r.rc, 0) << "chromium failed; log in " << OutputDir() / (c.name + ".chromium.log");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.dom, m, std::regex(R"re(id="laggard-status" data-state="(\w+)" data-charts="(\d+)")re")))
      << "no status marker: the page script did not finish\n"
      << r.dom.substr(0, 2000);
  EXPECT_EQ(m[1].str(), "ok") << "page reported an error";
  EXPECT_GE(std::stoul(m[2].str()), c.min_charts);
  EXPECT_EQ(Count(r.dom, "class=\"laggard-error\""), 0u) << r.dom.substr(0, 4000);
  EXPECT_TRUE(ConsoleErrors(r.log).empty()) << ConsoleErrors(r.log).front();
  // What a reader sees first: the verdict with the culprit, then the charts.
  if (!d->verdict.culprits.empty()) {
    EXPECT_NE(r.dom.find("class=\"card verdict straggler\""), std::string::npos);
    EXPECT_LT(r.dom.find("class=\"card verdict"), r.dom.find("Step time by rank and step"));
  }
  EXPECT_NE(r.dom.find("id=\"data-quality\""), std::string::npos);
  if (c.add_network) {
    size_t net = r.dom.find("id=\"section-network\"");
    ASSERT_NE(net, std::string::npos);
    EXPECT_NE(r.dom.find("mlx5_0", net), std::string::npos);
    EXPECT_NE(r.dom.find("leaf-2", net), std::string::npos);
  }

  fs::path png = OutputDir() / (c.name + ".png");
  fs::remove(png);
  BrowserResult shot =
      RunChromium(chromium, html, c.name + "-shot", "--screenshot='" + png.string() + "'");
  EXPECT_EQ(shot.rc, 0);
  ASSERT_TRUE(fs::exists(png)) << "no screenshot at " << png;
  EXPECT_GT(fs::file_size(png), 50'000u) << "screenshot looks empty: " << png;
}

TEST(HtmlReportBrowserTest, FullReportRendersEveryChartWithoutErrors) {
  // heatmap, step time per rank, compute vs communication, and the timeline:
  // step time, collective lateness, temperature, SM clock, power.
  CheckPageRenders(PageCase{"full", FixtureOptions{}, /*add_network=*/true, 8});
}

TEST(HtmlReportBrowserTest, StepLogsOnlyReportSkipsAbsentSignals) {
  CheckPageRenders(
      PageCase{"steps_only", FixtureOptions{.traces = false, .hardware = false}, false, 3});
}

TEST(HtmlReportBrowserTest, TracesOnlyReportRenders) {
  CheckPageRenders(
      PageCase{"traces_only", FixtureOptions{.step_logs = false, .hardware = false}, false, 2});
}

TEST(HtmlReportBrowserTest, ManyRanksRender) {
  // 512 ranks: thin heatmap rows, 512 bars, GPU series of 512 GPUs.
  CheckPageRenders(PageCase{"many_ranks", FixtureOptions{.traces = false, .ranks = 512}, false, 6});
}

TEST(HtmlReportBrowserTest, EmptyRunRendersTheVerdictAndDataQuality) {
  CheckPageRenders(PageCase{
      "empty", FixtureOptions{.step_logs = false, .traces = false, .hardware = false}, false, 0});
}

// --- the CLI -----------------------------------------------------------------

int RunCli(std::vector<std::string> args, std::string* out = nullptr, std::string* err = nullptr) {
  args.insert(args.begin(), "laggard");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream o, e;
  int rc = RunLaggard(static_cast<int>(argv.size()), argv.data(), o, e);
  if (out) *out = o.str();
  if (err) *err = e.str();
  return rc;
}

TEST(HtmlReportCliTest, DiagnoseWritesTheHtmlReportAndTheMergedTrace) {
  TempDir dir;
  SimulatedRun(dir.path(), FixtureOptions{.hardware = false});
  std::string out, err;
  int rc =
      RunCli({"diagnose", "--html", dir.File("r.html"), "--trace", dir.File("t.json"), dir.path()},
             &out, &err);
  EXPECT_EQ(rc, kExitOk) << err;
  EXPECT_EQ(out.rfind("verdict: rank 5", 0), 0u) << out;
  std::string html = ReadFile(dir.File("r.html"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("id=\"laggard-report\""), std::string::npos);
  Json trace = Json::parse(ReadFile(dir.File("t.json")));
  EXPECT_TRUE(trace["traceEvents"].is_array());
  EXPECT_GT(trace["traceEvents"].size(), 16u * 200u);
}

TEST(HtmlReportCliTest, UnwritableReportPathIsAnError) {
  TempDir dir;
  SimulatedRun(dir.path(), FixtureOptions{.traces = false, .hardware = false});
  std::string out, err;
  // An output failure has its own exit code, and the verdict is still printed.
  int rc = RunCli({"diagnose", "--html", dir.File("missing/dir/r.html"), dir.path()}, &out, &err);
  EXPECT_EQ(rc, kExitOutputFailed);
  EXPECT_NE(err.find("cannot write"), std::string::npos) << err;
  EXPECT_EQ(out.rfind("verdict:", 0), 0u) << out;
  rc = RunCli({"diagnose", "--trace", dir.File("missing/dir/t.json"), dir.path()}, &out, &err);
  EXPECT_EQ(rc, kExitOutputFailed);
  EXPECT_NE(err.find("cannot write"), std::string::npos) << err;
}

}  // namespace
}  // namespace laggard
