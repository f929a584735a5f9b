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
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "report/hang_report_fixture.h"
#include "report/json_document.h"
#include "report/pipeline_report_fixture.h"
#include "report_fixture.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using report_json::Json;
using testing_util::Diagnosed;
using testing_util::FixtureOptions;
using testing_util::PipelineFault;
using testing_util::PipelineRun;
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

// Runs the laggard CLI in-process, as a user would from a shell.
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

// --- the what-if section of op timelines ------------------------------------

// The what-if grid's cells: (pp, dp) -> slowdown, NaN for "not replayed".
std::map<std::pair<int, int>, double> HeatmapCells(const Json& view) {
  std::map<std::pair<int, int>, double> cells;
  const Json& h = view["heatmap"];
  for (size_t pp = 0; pp < h["cells"].size(); ++pp) {
    for (size_t i = 0; i < h["cells"][pp].size(); ++i) {
      const Json& c = h["cells"][pp][i];
      cells[{static_cast<int>(pp), h["dp_ranks"][i].get<int>()}] =
          c.is_null() ? std::nan("") : c["slowdown"].get<double>();
    }
  }
  return cells;
}

TEST(HtmlWhatIfTest, SlowWorkerLightsItsOwnCellOnly) {
  auto d = PipelineRun(4, 2, PipelineFault::kSlowWorker);  // dp 1 pp 1 computes 30% longer
  Json views = report_json::OpTimelineWhatIfs(d->input());
  ASSERT_EQ(views.size(), 1u);
  std::map<std::pair<int, int>, double> cells = HeatmapCells(views[0]);
  ASSERT_EQ(cells.size(), 8u);  // 2 stages x 4 DP ranks
  for (auto [at, slowdown] : cells) {
    if (at == std::pair(1, 1)) {
      EXPECT_GT(slowdown, 1.1) << "the slow worker's cell";
    } else {
      EXPECT_LT(slowdown, 1.02) << "stage " << at.first << " DP rank " << at.second;
    }
  }
  EXPECT_EQ(views[0]["heatmap"]["cells"][1][1]["rank"], 5);  // Megatron order: dp + 4 x pp
  EXPECT_EQ(views[0]["findings"][0]["code"], "pipeline.slow_worker");
  EXPECT_NEAR(views[0]["slowdown"].get<double>(), d->whatif().slowdown, 1e-5);
}

TEST(HtmlWhatIfTest, HeavyStageLightsEveryDpRankOfThatStage) {
  auto d = PipelineRun(2, 4, PipelineFault::kHeavyStage);  // stage 3 computes 25% longer
  Json views = report_json::OpTimelineWhatIfs(d->input());
  ASSERT_EQ(views.size(), 1u);
  std::map<std::pair<int, int>, double> cells = HeatmapCells(views[0]);
  ASSERT_EQ(cells.size(), 8u);
  for (auto [at, slowdown] : cells) {
    if (at.first == 3) {
      EXPECT_GT(slowdown, 1.05) << "DP rank " << at.second << " of the heavy stage";
    } else {
      EXPECT_LT(slowdown, 1.02) << "stage " << at.first << " DP rank " << at.second;
    }
  }
  // The top of the stage decomposition is stage 3.
  EXPECT_EQ(views[0]["by_stage"]["top"][0]["group"], "stage 3");
  EXPECT_EQ(views[0]["by_op_type"]["top"].size(),
            std::min<size_t>(6, d->whatif().by_op_type.size()));
}

TEST(HtmlWhatIfTest, WorkloadThatMovesBetweenReplicasLightsEveryCell) {
  // DP rank step % 4 computes 20% longer: every worker is slow in some steps.
  auto d = PipelineRun(4, 2, PipelineFault::kWorkload, 8);
  Json views = report_json::OpTimelineWhatIfs(d->input());
  ASSERT_EQ(views.size(), 1u);
  std::map<std::pair<int, int>, double> cells = HeatmapCells(views[0]);
  ASSERT_EQ(cells.size(), 8u);
  for (auto [at, slowdown] : cells) {
    EXPECT_GT(slowdown, 1.02) << "stage " << at.first << " DP rank " << at.second;
    EXPECT_LT(slowdown, views[0]["slowdown"].get<double>()) << "no cell holds it all";
  }
}

TEST(HtmlWhatIfTest, BalancedJobLightsNothing) {
  auto d = PipelineRun(2, 2, PipelineFault::kNone);
  Json views = report_json::OpTimelineWhatIfs(d->input());
  ASSERT_EQ(views.size(), 1u);
  for (auto [at, slowdown] : HeatmapCells(views[0])) EXPECT_NEAR(slowdown, 1.0, 0.005);
  EXPECT_TRUE(views[0]["findings"].empty());
}

TEST(HtmlWhatIfTest, CellIsTheSlowestTpRankAndUnreplayedWorkersAreNull) {
  WhatIf w;
  w.layout = ParallelLayout{2, 1, 2, 1};
  auto worker = [](int32_t dp, int32_t tp, double slowdown) {
    WhatIfGroup g;
    g.label = fmt::format("dp{} pp0 tp{}", dp, tp);
    g.dp = dp;
    g.pp = 0;
    g.tp = tp;
    g.worker = dp * 2 + tp;
    g.slowdown = slowdown;
    return g;
  };
  w.by_worker = {worker(0, 1, 1.3), worker(0, 0, 1.1)};  // DP rank 1 was not replayed
  std::vector<TimelineWorker> workers(4);
  workers[1].rank = 1;
  Json h = report_json::WhatIfHeatmap(w, workers);
  ASSERT_EQ(h["cells"].size(), 1u);
  EXPECT_EQ(h["cells"][0][0]["slowdown"], 1.3);
  EXPECT_EQ(h["cells"][0][0]["worker"], "dp0 pp0 tp1");
  EXPECT_EQ(h["cells"][0][0]["rank"], 1);
  EXPECT_EQ(h["cells"][0][0]["tp_replayed"], 2);
  EXPECT_TRUE(h["cells"][0][1].is_null());
}

TEST(HtmlWhatIfTest, PageEmbedsTheSectionDataBesideTheUnchangedReportDocument) {
  auto d = PipelineRun(4, 2, PipelineFault::kSlowWorker);
  std::string html = RenderHtml(d->input());
  EXPECT_EQ(Json::parse(ScriptElement(html, kDocumentScript)), Json::parse(RenderJson(d->input())));
  std::string tag;
  std::string data = ScriptElement(html, kPageScript + 1, &tag);
  EXPECT_NE(tag.find("id=\"laggard-op-timelines\""), std::string::npos) << tag;
  EXPECT_EQ(Json::parse(data), report_json::OpTimelineWhatIfs(d->input()));
  EXPECT_NE(ScriptElement(html, kPageScript + 2).find("laggardPage"), std::string::npos);
  // A run without op timelines gets neither.
  TempDir dir;
  auto plain = SimulatedRun(dir.path(), FixtureOptions{.traces = false, .hardware = false});
  EXPECT_EQ(Count(RenderHtml(plain->input()), "laggard-op-timelines"), 0u);
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
  // No section heading over nothing: what has no data is one line.
  EXPECT_EQ(Count(r.dom, ">none<"), 0u);
  if (!c.fixture.hardware) {
    EXPECT_EQ(r.dom.find("id=\"section-hardware\""), std::string::npos);
    size_t not_given = r.dom.find("id=\"not-given\"");
    ASSERT_NE(not_given, std::string::npos);
    EXPECT_NE(r.dom.find("GPU metrics (nvidia-smi", not_given), std::string::npos);
  }
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

// --- the common synchronised case, as a user meets it --------------------------
//
// `laggard simulate` writes a run as real loops log it: every rank prints the
// same end-to-end step time, because each step waits for the slowest rank in
// the all-reduce. `laggard diagnose --json --html` reports it, and the page
// is opened in headless Chromium with a probe script appended (test-only, not
// part of the report) that reads what the page drew: the Chart.js charts (card,
// heading, y-scale, bar labels, values and colours) and the heights of the
// hardware table's rows. The probe writes them as JSON into <pre id=test-probe>.

constexpr std::string_view kProbeScript = R"js(
<script>
(function () {
  var out = {charts: [], hardware_rows: 0, hardware_row_px: 0, hardware_titles: []};
  document.querySelectorAll('#section-hardware tbody tr').forEach(function (tr) {
    out.hardware_rows++;
    out.hardware_row_px = Math.max(out.hardware_row_px, tr.getBoundingClientRect().height);
  });
  document.querySelectorAll('#section-hardware td[title]').forEach(function (td) {
    out.hardware_titles.push(td.getAttribute('title'));
  });
  document.querySelectorAll('canvas').forEach(function (c) {
    var ch = window.Chart && Chart.getChart(c);
    if (!ch) return;
    var card = c.closest('section'), h2 = card && card.querySelector('h2');
    var before = c.parentNode.previousElementSibling;
    out.charts.push({
      card: h2 ? h2.textContent : '',
      heading: before && before.tagName === 'H3' ? before.textContent : '',
      y_min: ch.scales.y.min, y_max: ch.scales.y.max,
      labels: (ch.data.labels || []).map(String),
      datasets: ch.data.datasets.map(function (d) {
        return {label: String(d.label),
                colors: Array.isArray(d.backgroundColor) ? d.backgroundColor : [d.backgroundColor],
                values: d.data.map(function (v) { return v && typeof v === 'object' ? v.y : v; })};
      })
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'test-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
)js";

constexpr std::string_view kCulpritColor = "#d1372b";  // COLORS.culprit of html_report.js

struct SimulatedPage {
  Json report;  // what --json wrote
  std::string dom;
  Json probe;
};

// Text as Chromium serialises it into the dumped DOM, back to the text.
std::string Unescape(std::string s) {
  const std::pair<std::string, std::string> entities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&nbsp;", "\u00a0"}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  }
  return s;
}

// Up to 160 characters of `dom` from `what`, for a failure message.
std::string Around(const std::string& dom, const std::string& what) {
  size_t at = dom.find(what);
  return at == std::string::npos ? "(no " + what + ")" : dom.substr(at, 160);
}

// `laggard simulate` (2 nodes x 4 GPUs, 40 steps, with nvidia-smi files, with
// `args`), `laggard diagnose --json --html`, and the page in Chromium. Pages
// are rendered once per name and shared by the tests that read them.
const SimulatedPage& RenderSimulated(const std::string& name, std::vector<std::string> args) {
  static std::map<std::string, SimulatedPage> pages;
  static TempDir dir;
  if (auto it = pages.find(name); it != pages.end()) return it->second;
  SimulatedPage& page = pages[name];
  std::string run = dir.File(name);
  // ctest runs each test in a process of its own, two at a time: the files
  // of the page and Chromium's profile are the test's own.
  const std::string file =
      name + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::vector<std::string> sim = {"simulate",
                                  "-o",
                                  run,
                                  "--nodes",
                                  "2",
                                  "--gpus-per-node",
                                  "4",
                                  "--steps",
                                  "40",
                                  "--no-effects",
                                  "--no-network",
                                  "--no-nccl-tests",
                                  "--no-nccl-debug",
                                  "-q"};
  sim.insert(sim.end(), args.begin(), args.end());
  std::string out, err;
  EXPECT_EQ(RunCli(sim, &out, &err), kExitOk) << err;
  fs::path html = OutputDir() / (file + ".html");
  EXPECT_EQ(RunCli({"diagnose", "--quiet", "--json", dir.File(name + ".json"), "--html",
                    html.string(), run},
                   &out, &err),
            kExitOk)
      << err;
  page.report = Json::parse(ReadFile(dir.File(name + ".json")));
  std::string text = ReadFile(html.string());
  size_t body = text.rfind("</body>");
  EXPECT_NE(body, std::string::npos);
  if (body == std::string::npos) return page;
  text.insert(body, kProbeScript);
  fs::path probed = OutputDir() / (file + ".probed.html");
  WriteFile(probed.string(), text);
  BrowserResult r = RunChromium(FindChromium(), probed, file, "--dump-dom");
  EXPECT_EQ(r.rc, 0) << "chromium failed; log in " << OutputDir() / (file + ".chromium.log");
  page.dom = r.dom;
  EXPECT_NE(r.dom.find("data-state=\"ok\""), std::string::npos) << "the page reported an error";
  EXPECT_EQ(Count(r.dom, "class=\"laggard-error\""), 0u);
  std::smatch m;
  if (std::regex_search(r.dom, m, std::regex(R"re(<pre id="test-probe">([^<]*)</pre>)re")))
    page.probe = Json::parse(Unescape(m[1].str()));
  EXPECT_TRUE(page.probe.is_object()) << "the probe script did not run";
  return page;
}

const std::vector<std::string> kSlowKernelRank5 = {"--fault", "slow_kernel@r5"};
const std::vector<std::string> kSlowKernelRank5NoTraces = {"--fault", "slow_kernel@r5",
                                                           "--no-traces"};

bool NoChromium() { return FindChromium().empty(); }
constexpr const char* kNoChromium =
    "chromium not found (apt-get install chromium, or set LAGGARD_CHROMIUM): browser test of the "
    "HTML report skipped";

// The chart of the card titled `card` (and, in the timeline, under the
// heading starting with `heading`), or null.
const Json* ChartOf(const Json& probe, const std::string& card, const std::string& heading = "") {
  for (const Json& c : probe["charts"]) {
    if (c["card"].get<std::string>().find(card) == std::string::npos) continue;
    if (!heading.empty() && c["heading"].get<std::string>().rfind(heading, 0) != 0) continue;
    return &c;
  }
  return nullptr;
}

// A card of the page: its DOM from its id to the end of the section.
std::string CardDom(const std::string& dom, const std::string& id) {
  size_t at = dom.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  return dom.substr(at, dom.find("</section>", at) - at);
}

// A bar chart that names every rank, the culprit in the culprit's colour and
// no other rank in it, and the culprit's bar the tallest.
void ExpectCulpritBarStandsOut(const Json& chart, int culprit) {
  const Json& labels = chart["labels"];
  const Json& ds = chart["datasets"][0];
  ASSERT_EQ(labels.size(), 8u) << chart.dump();
  size_t at = labels.size();
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == std::to_string(culprit)) at = i;
  }
  ASSERT_LT(at, labels.size()) << chart.dump();
  ASSERT_EQ(ds["colors"].size(), labels.size()) << chart.dump();
  for (size_t i = 0; i < labels.size(); ++i) {
    EXPECT_EQ(ds["colors"][i].get<std::string>() == kCulpritColor, i == at)
        << "rank " << labels[i] << chart.dump();
    ASSERT_TRUE(ds["values"][i].is_number()) << chart.dump();
    if (i != at) {
      EXPECT_LT(ds["values"][i].get<double>(), ds["values"][at].get<double>());
    }
  }
}

TEST(HtmlReportSynchronisedTest, ChartsShowLatenessAndComputePerRankWithTheCulpritHighlighted) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  const SimulatedPage& p = RenderSimulated("sync_slow_kernel", kSlowKernelRank5);
  ASSERT_TRUE(p.report["job"]["synchronised"].get<bool>())
      << "the simulated steps are not synchronised";
  ASSERT_EQ(p.report["verdict"]["culprits"][0]["rank"], 5);
  // Flat step times are not what the page charts per rank: it says why, and
  // shows who arrives last at the collectives and who computes longest.
  EXPECT_EQ(ChartOf(p.probe, "Median step time per rank"), nullptr);
  const Json* late = ChartOf(p.probe, "Lateness at collectives per rank");
  ASSERT_NE(late, nullptr) << p.probe["charts"].dump();
  ExpectCulpritBarStandsOut(*late, 5);
  const Json* compute = ChartOf(p.probe, "Compute per rank");
  ASSERT_NE(compute, nullptr) << p.probe["charts"].dump();
  ExpectCulpritBarStandsOut(*compute, 5);
  std::string card = CardDom(p.dom, "step-time-by-rank-and-step");
  EXPECT_NE(card.find("Step times are synchronised"), std::string::npos) << card;
  EXPECT_NE(card.find("from the profiler traces"), std::string::npos) << card;
}

TEST(HtmlReportSynchronisedTest, WithoutTracesTheFlatChartsSayWhyAndWhatToAdd) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  const SimulatedPage& p = RenderSimulated("sync_no_traces", kSlowKernelRank5NoTraces);
  ASSERT_TRUE(p.report["job"]["synchronised"].get<bool>());
  for (const char* id : {"step-time-by-rank-and-step", "median-step-time-per-rank"}) {
    std::string card = CardDom(p.dom, id);
    ASSERT_FALSE(card.empty()) << "no card " << id;
    EXPECT_NE(card.find("Step times are synchronised"), std::string::npos) << card;
    EXPECT_NE(card.find("add profiler traces"), std::string::npos) << card;
  }
}

TEST(HtmlReportSynchronisedTest, StepChartScaleLeavesOutWarmUpSteps) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  // The simulator's first step takes 2 s longer (--warmup-s), as a real
  // job's first steps do; the detector skips the first 5 (--warmup).
  const SimulatedPage& p = RenderSimulated("sync_no_traces", kSlowKernelRank5NoTraces);
  double median = p.report["job"]["median_step_s"].get<double>();
  double warmup = p.report["series"]["ranks"][0]["step_s"][0].get<double>();
  ASSERT_GT(warmup, 2 * median);
  const Json* chart = ChartOf(p.probe, "Timeline", "step time");
  ASSERT_NE(chart, nullptr) << p.probe["charts"].dump();
  EXPECT_LT((*chart)["y_max"].get<double>(), 1.2 * median) << chart->dump();
  EXPECT_GT((*chart)["y_min"].get<double>(), 0.8 * median) << chart->dump();
  EXPECT_NE((*chart)["heading"].get<std::string>().find("warm-up"), std::string::npos)
      << (*chart)["heading"];
}

// The healthy rank the terminal and the JSON findings compare the culprit
// with ("... on healthy rank N").
int HealthyRankOfTheFindings(const Json& report) {
  std::smatch m;
  for (const Json& f : report["findings"]) {
    std::string msg = f["message"].get<std::string>();
    if (f["code"] == "trace.late_arrival" &&
        std::regex_search(msg, m, std::regex(R"(healthy rank (\d+))")))
      return std::stoi(m[1].str());
  }
  return -1;
}

// The timeline's title: "Timeline: culprit rank C vs healthy peer rank P".
std::pair<int, int> TimelineRanks(const std::string& dom) {
  std::smatch m;
  if (!std::regex_search(
          dom, m,
          std::regex(
              R"re(<h2>Timeline: culprit rank (\d+)[^<]* vs healthy peer rank (\d+)</h2>)re")))
    return {-1, -1};
  return {std::stoi(m[1].str()), std::stoi(m[2].str())};
}

TEST(HtmlReportSynchronisedTest, TimelineComparesWithTheHealthyPeerTheFindingsName) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  for (auto [name, args] :
       {std::pair{"sync_slow_kernel", kSlowKernelRank5},
        std::pair{"sync_data_loader",
                  std::vector<std::string>{"--fault", "data_loader_stall@r3"}}}) {
    SCOPED_TRACE(name);
    const SimulatedPage& p = RenderSimulated(name, args);
    int culprit = p.report["verdict"]["culprits"][0]["rank"].get<int>();
    int healthy = HealthyRankOfTheFindings(p.report);
    ASSERT_GE(healthy, 0) << "no healthy rank named in the findings";
    ASSERT_NE(healthy, culprit);
    EXPECT_EQ(p.report["traces"]["peer"], healthy);
    EXPECT_EQ(TimelineRanks(p.dom), std::make_pair(culprit, healthy)) << Around(p.dom, "Timeline");
  }
}

TEST(HtmlReportSynchronisedTest, TimelineNeverComparesWithARankOfTheCulpritGroup) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  // A host whose 4 ranks are all slow: the culprit is the group.
  const SimulatedPage& p =
      RenderSimulated("sync_host_contention", {"--fault", "host_cpu_contention@node-01"});
  const Json& culprit = p.report["verdict"]["culprits"][0];
  ASSERT_EQ(culprit["ranks"], Json::array({4, 5, 6, 7})) << culprit.dump();
  auto [focus, peer] = TimelineRanks(p.dom);
  EXPECT_GE(focus, 4) << Around(p.dom, "Timeline");
  EXPECT_LE(focus, 7);
  EXPECT_LT(peer, 4) << "the healthy peer is a culprit";
  EXPECT_GE(peer, 0);
  EXPECT_EQ(p.report["traces"]["peer"], peer);
}

TEST(HtmlReportSynchronisedTest, HardwareTableRowsStayOneLineHigh) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  const SimulatedPage& p = RenderSimulated("sync_no_traces", kSlowKernelRank5NoTraces);
  EXPECT_EQ(p.probe["hardware_rows"], 8) << p.probe.dump();
  // One line of 13 px text with its padding; long cells are cut, not wrapped.
  EXPECT_LE(p.probe["hardware_row_px"].get<double>(), 40) << p.probe.dump();
  // A cut cell keeps its whole value in its title: the files that described the GPU.
  bool files = false;
  for (const Json& t : p.probe["hardware_titles"]) {
    std::string s = t.get<std::string>();
    files = files || (s.find("nvidia-smi-q.txt") != std::string::npos &&
                      s.find("nvidia-smi-dmon.txt") != std::string::npos);
  }
  EXPECT_TRUE(files) << p.probe["hardware_titles"].dump();
}

// The what-if section in Chromium: a probe reads the drawn grid's cells
// (place, value, computed background) and the order of the cards.
constexpr std::string_view kWhatIfProbe = R"js(
<script>
(function () {
  var out = {cards: [], cells: [], tables: 0};
  document.querySelectorAll('#app > section').forEach(function (s) { out.cards.push(s.id || s.className); });
  document.querySelectorAll('#whatif-op-timeline-0 table.whatif-heatmap td').forEach(function (td) {
    out.cells.push({dp: +td.getAttribute('data-dp'), pp: +td.getAttribute('data-pp'),
                    slowdown: td.hasAttribute('data-slowdown') ? +td.getAttribute('data-slowdown') : null,
                    bg: getComputedStyle(td).backgroundColor, text: td.textContent});
  });
  out.tables = document.querySelectorAll('#whatif-op-timeline-0 .whatif-groups table').length;
  var pre = document.createElement('pre');
  pre.id = 'test-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
)js";

// The smallest of a CSS "rgb(r, g, b)" colour's channels: near 255 for the
// grid's white (1.00x), lower the redder the cell.
int MinChannel(const std::string& rgb) {
  std::smatch m;
  if (!std::regex_search(rgb, m, std::regex(R"(rgba?\((\d+), (\d+), (\d+))"))) return -1;
  return std::min({std::stoi(m[1].str()), std::stoi(m[2].str()), std::stoi(m[3].str())});
}

TEST(HtmlReportBrowserTest, WhatIfGridLightsTheSlowWorkersCellAfterTheVerdict) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  auto d = PipelineRun(4, 2, PipelineFault::kSlowWorker);
  std::string text = RenderHtml(d->input());
  text.insert(text.rfind("</body>"), kWhatIfProbe);
  fs::path html = OutputDir() / "whatif.html";
  WriteFile(html.string(), text);
  BrowserResult r = RunChromium(FindChromium(), html, "whatif", "--dump-dom");
  ASSERT_EQ(r.rc, 0) << "chromium failed; log in " << OutputDir() / "whatif.chromium.log";
  EXPECT_NE(r.dom.find("data-state=\"ok\""), std::string::npos) << "the page reported an error";
  EXPECT_NE(r.dom.find("data-whatif=\"1\""), std::string::npos)
      << "the what-if script did not finish";
  EXPECT_EQ(Count(r.dom, "class=\"laggard-error\""), 0u) << r.dom.substr(0, 4000);
  EXPECT_TRUE(ConsoleErrors(r.log).empty()) << ConsoleErrors(r.log).front();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.dom, m, std::regex(R"re(<pre id="test-probe">([^<]*)</pre>)re")));
  Json probe = Json::parse(Unescape(m[1].str()));
  // Verdict, next steps, then the what-if, before the evidence.
  const Json& cards = probe["cards"];
  auto at = [&](const std::string& id) {
    return std::find(cards.begin(), cards.end(), id) - cards.begin();
  };
  ASSERT_LT(at("whatif-op-timeline-0"), static_cast<long>(cards.size())) << cards;
  EXPECT_EQ(cards[0], "card verdict straggler") << cards;
  EXPECT_EQ(at("whatif-op-timeline-0"), at("next-steps") + 1) << cards;
  EXPECT_LT(at("whatif-op-timeline-0"), at("evidence")) << cards;
  ASSERT_EQ(probe["cells"].size(), 8u) << probe;
  for (const Json& c : probe["cells"]) {
    bool slow = c["dp"] == 1 && c["pp"] == 1;
    int channel = MinChannel(c["bg"].get<std::string>());
    if (slow) {
      EXPECT_LT(channel, 160) << "the slow worker's cell is not lit: " << c;
    } else {
      EXPECT_GT(channel, 200) << "a healthy worker's cell is lit: " << c;
    }
  }
  EXPECT_EQ(probe["tables"], 3) << "by stage, by DP rank, by op type";
  fs::path png = OutputDir() / "whatif.png";
  fs::remove(png);
  BrowserResult shot =
      RunChromium(FindChromium(), html, "whatif-shot", "--screenshot='" + png.string() + "'");
  EXPECT_EQ(shot.rc, 0);
  EXPECT_TRUE(fs::exists(png)) << "no screenshot at " << png;
}

// Two real runs in one folder: the verdict card says which job it is about,
// and the jobs are listed in a section of their own.
TEST(HtmlReportBrowserTest, SeveralJobsAreListedAndTheVerdictSaysWhichOne) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  TempDir dir;
  for (const char* job : {"w2_compute_1.2", "w4_healthy"}) {
    fs::create_directories(dir.File("runs"));
    fs::copy(testing_util::TestData("realjobs", job), dir.File("runs/" + std::string(job)),
             fs::copy_options::recursive);
  }
  fs::path html = OutputDir() / "jobs.html";
  std::string err;
  ASSERT_EQ(
      RunCli({"diagnose", "--quiet", "--html", html.string(), dir.File("runs")}, nullptr, &err),
      kExitOk)
      << err;
  BrowserResult r = RunChromium(FindChromium(), html, "jobs", "--dump-dom");
  ASSERT_EQ(r.rc, 0) << "chromium failed; log in " << OutputDir() / "jobs.chromium.log";
  EXPECT_TRUE(ConsoleErrors(r.log).empty()) << ConsoleErrors(r.log).front();
  EXPECT_EQ(Count(r.dom, "class=\"laggard-error\""), 0u) << r.dom.substr(0, 4000);
  EXPECT_NE(r.dom.find("job 2 of 2 (listed under Jobs): no straggler found"), std::string::npos)
      << r.dom.substr(0, 4000);
  EXPECT_NE(r.dom.find("id=\"section-jobs\""), std::string::npos) << "no Jobs section";
}

// A NIC that degraded at step 30: the verdict card's cost says it was
// measured, over which steps.
TEST(HtmlReportBrowserTest, AMeasuredCostSaysItsSteps) {
  if (NoChromium()) GTEST_SKIP() << kNoChromium;
  TempDir dir;
  std::string err;
  ASSERT_EQ(RunCli({"simulate", "--quiet", "-o", dir.File("run"), "--nodes", "5", "--steps", "100",
                    "--seed", "21", "--fault", "nic_degraded@node-04:mlx5_0:0.3,onset=30",
                    "--no-effects"},
                   nullptr, &err),
            kExitOk)
      << err;
  fs::path html = OutputDir() / "measured_cost.html";
  ASSERT_EQ(
      RunCli({"diagnose", "--quiet", "--html", html.string(), dir.File("run")}, nullptr, &err),
      kExitOk)
      << err;
  BrowserResult r = RunChromium(FindChromium(), html, "measured_cost", "--dump-dom");
  ASSERT_EQ(r.rc, 0) << "chromium failed; log in " << OutputDir() / "measured_cost.chromium.log";
  EXPECT_TRUE(ConsoleErrors(r.log).empty()) << ConsoleErrors(r.log).front();
  EXPECT_TRUE(
      std::regex_search(r.dom, std::regex("whole job, measured: steps (29|30|31)–end vs before")))
      << r.dom.substr(0, 4000);
  EXPECT_NE(r.dom.find("(step times before and after)"), std::string::npos)
      << r.dom.substr(0, 4000);
}

// --- the CLI -----------------------------------------------------------------

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

// --- the Hang section ----------------------------------------------------------

// The <tr> of `rank` in the first table of process group `pg`.
std::string RowOf(const std::string& html, const std::string& pg, int rank) {
  size_t table = html.find("data-pg=\"" + pg + "\"");
  if (table == std::string::npos) return "";
  size_t at = html.find(fmt::format("data-rank=\"{}\"", rank), table);
  if (at == std::string::npos) return "";
  size_t start = html.rfind("<tr", at), end = html.find("</tr>", at);
  return html.substr(start, end - start);
}

TEST(HtmlHangTest, CulpritIsMarkedAndASilentMemberIsNoEvidence) {
  testing_util::HangDiagnosed h;
  testing_util::NotJoinedHang(h);
  ASSERT_EQ(h.hang.findings.front().code, FindingCode::kHangHostStopped);
  std::string html = report_json::HangSectionHtml(h.input());
  ASSERT_NE(html.find("<h2>Hang</h2>"), std::string::npos);
  EXPECT_NE(html.find(EscapeHtml(h.hang.findings.front().message)), std::string::npos);
  EXPECT_NE(html.find("<li>see where rank 2 is"), std::string::npos) << "its next steps";
  std::string r2 = RowOf(html, "0", 2);
  EXPECT_NE(r2.find("class=\"culprit\""), std::string::npos) << r2;
  EXPECT_NE(r2.find("data-state=\"culprit\""), std::string::npos) << r2;
  EXPECT_NE(r2.find("never reached #6 (its host stopped issuing)"), std::string::npos) << r2;
  for (int waiting : {0, 1}) {
    std::string r = RowOf(html, "0", waiting);
    EXPECT_NE(r.find("data-state=\"waiting\""), std::string::npos) << r;
    EXPECT_NE(r.find("nccl:all_reduce #6 [[1024]]"), std::string::npos) << r;
    EXPECT_NE(r.find("Flight Recorder dump"), std::string::npos) << r;
  }
  // Rank 3 gave no dump and no line: listed, never guilty.
  std::string r3 = RowOf(html, "0", 3);
  EXPECT_NE(r3.find("data-state=\"no_evidence\""), std::string::npos) << r3;
  EXPECT_NE(r3.find("no evidence"), std::string::npos) << r3;
  EXPECT_EQ(r3.find("culprit"), std::string::npos) << r3;
}

TEST(HtmlHangTest, RanksAheadAreMarkedAndTheOnesBehindAreTheCulprits) {
  testing_util::HangDiagnosed h;
  laggard::Run& run = h.d.run;
  run.hang.groups.push_back(ProcessGroupInfo{"0", "default_pg", {0, 1}, 2, false, {}});
  // Rank 0 completed #9 and waits in #10; rank 1 is still in #7.
  run.hang.dumps.push_back(testing_util::FrDump(
      0, 10, 9, {testing_util::Entry(9, 1.0, 1.1), testing_util::Entry(10, 2.0, std::nullopt)}));
  run.hang.dumps.push_back(
      testing_util::FrDump(1, 7, 6, {testing_util::Entry(7, 1.5, std::nullopt)}));
  h.hang = AnalyzeHang(run);
  ASSERT_EQ(h.hang.findings.front().code, FindingCode::kHangDesync)
      << h.hang.findings.front().message;
  std::string html = report_json::HangSectionHtml(h.input());
  EXPECT_NE(RowOf(html, "0", 0).find("data-state=\"ahead\""), std::string::npos) << html;
  EXPECT_NE(RowOf(html, "0", 0).find("ahead: completed #9"), std::string::npos) << html;
  EXPECT_NE(RowOf(html, "0", 1).find("data-state=\"culprit\""), std::string::npos) << html;
}

TEST(HtmlHangTest, InputTextIsEscapedAndNoHangWritesNoSection) {
  testing_util::HangDiagnosed h;
  testing_util::NotJoinedHang(h, "<img src=x onerror=alert(1)></template>");
  std::string html = report_json::HangSectionHtml(h.input());
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("</template>"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);

  testing_util::HangDiagnosed none;
  testing_util::Diagnose(none.d);
  none.hang = AnalyzeHang(none.d.run);
  EXPECT_EQ(report_json::HangSectionHtml(none.input()), "");
  EXPECT_EQ(RenderHtml(none.input()).find("<template id=\"laggard-hang\">"), std::string::npos);
}

TEST(HtmlHangBrowserTest, TheHangSectionFollowsTheNextStepsWithTheCulpritMarked) {
  std::string chromium = FindChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium not found: browser test skipped";
  TempDir dir;
  std::string out, err;
  fs::path html = OutputDir() / "hang.html";
  int rc = RunCli({"diagnose", "--html", html.string(),
                   std::string(LAGGARD_SOURCE_DIR) + "/tests/data/hangs/fr_v2.10"},
                  &out, &err);
  ASSERT_EQ(rc, kExitOk) << err;
  BrowserResult r = RunChromium(chromium, html, "hang", "--dump-dom");
  ASSERT_EQ(r.rc, 0);
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.dom, m, std::regex(R"re(id="laggard-status" data-state="(\w+)")re")))
      << r.dom.substr(0, 2000);
  EXPECT_EQ(m[1].str(), "ok");
  EXPECT_EQ(Count(r.dom, "class=\"laggard-error\""), 0u);
  EXPECT_TRUE(ConsoleErrors(r.log).empty()) << ConsoleErrors(r.log).front();
  size_t main = r.dom.find("<main id=\"app\"");
  size_t next = r.dom.find("id=\"next-steps\"", main);
  size_t hang = r.dom.find("id=\"hang\"", main);
  ASSERT_NE(next, std::string::npos);
  ASSERT_NE(hang, std::string::npos) << "the section was not moved into the page";
  EXPECT_LT(next, hang);
  EXPECT_LT(hang, r.dom.find("id=\"evidence\"", main));
  EXPECT_NE(RowOf(r.dom.substr(hang), "0", 2).find("data-state=\"culprit\""), std::string::npos);
  EXPECT_EQ(r.dom.find("id=\"section-hang\""), std::string::npos) << "not rendered twice";
  fs::path png = OutputDir() / "hang.png";
  fs::remove(png);
  RunChromium(chromium, html, "hang-shot", "--screenshot='" + png.string() + "'");
  EXPECT_TRUE(fs::exists(png));
}

}  // namespace
}  // namespace laggard
