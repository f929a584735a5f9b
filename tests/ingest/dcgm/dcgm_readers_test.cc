// The DCGM readers (dcgmi dmon, dcgmi diag, dcgm-exporter) and the
// Prometheus exposition line parser under the exporter reader: the real
// outputs of the shared corpus with their concrete values, synthetic
// variants of each format, and damaged input with the diagnostics it must
// produce.
//
// Corpus values were read off the files by hand, e.g. in
// dcgm/dcgm_exporter_metrics_A100_MIG_nvidia_docs.txt line 5:
//   DCGM_FI_DEV_POWER_USAGE{gpu="0",...,Hostname="ub20-a100-k8s"} 409.692000

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ingest/common/prometheus_text.h"
#include "ingest/dcgm/dcgm_fields.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::ReadFile;
using testing_util::TempDir;
using testing_util::WriteFile;

std::string CorpusFile(const std::string& name) {
  return std::string(LAGGARD_CORPUS_DIR) + "/" + name;
}

#define REQUIRE_CORPUS_FILE(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared corpus not found: " << path

// Ingests one file written as <tmp>/<host>/<name> (the directory names the
// host) or <tmp>/<name> when host is empty.
laggard::Run IngestText(const TempDir& dir, const std::string& name, const std::string& content,
                        const std::string& host = "node-a") {
  std::string path =
      WriteFile(host.empty() ? dir.File(name) : dir.File(host + "/" + name), content);
  return IngestPaths({dir.path()});
}

const GpuRecord* FindGpu(const Run& run, std::string_view host, int32_t index,
                         std::optional<std::string> mig = std::nullopt) {
  for (const GpuRecord& g : run.hardware.gpus) {
    if (g.index == index && g.host.value_or("") == host && g.mig_instance == mig) return &g;
  }
  return nullptr;
}

uint64_t Count(const Run& run, DiagCode code) { return run.diagnostics.count(code); }

std::vector<uint64_t> Lines(const Run& run, DiagCode code) {
  std::vector<uint64_t> out;
  for (const DiagExample& e : run.diagnostics.examples(code)) out.push_back(e.line);
  return out;
}

// Which of the standard readers claims `content`, by name.
std::string Winner(std::string_view content) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  std::string best;
  int best_score = 0;
  for (const TextReader* r : readers->readers) {
    int s = r->Sniff(content.substr(0, kSniffBytes));
    if (s > best_score) best = std::string(r->name()), best_score = s;
  }
  return best;
}

// The Prometheus exposition line parser.

prom::Line Parse(std::string_view text) {
  prom::Line l;
  std::string error;
  EXPECT_TRUE(prom::ParseLine(text, l, error)) << text << ": " << error;
  return l;
}

std::string ParseError(std::string_view text) {
  prom::Line l;
  std::string error;
  EXPECT_FALSE(prom::ParseLine(text, l, error)) << text;
  return error;
}

TEST(PrometheusTextTest, ReadsNameLabelsValueAndTimestamp) {
  prom::Line l =
      Parse(R"(DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1",Hostname="node-1"} 45 1700000000123)");
  EXPECT_EQ(l.kind, prom::LineKind::kSample);
  EXPECT_EQ(l.metric, "DCGM_FI_DEV_GPU_TEMP");
  ASSERT_EQ(l.labels.size(), 3u);
  EXPECT_EQ(l.labels[1].name, "UUID");
  EXPECT_EQ(*l.FindLabel("Hostname"), "node-1");
  EXPECT_EQ(l.FindLabel("pod"), nullptr);
  EXPECT_EQ(l.value, 45);
  EXPECT_EQ(l.timestamp_ms, 1700000000123);
  prom::Line bare = Parse("up 1");
  EXPECT_TRUE(bare.labels.empty());
  EXPECT_FALSE(bare.timestamp_ms.has_value());
}

TEST(PrometheusTextTest, UnescapesQuoteBackslashAndNewlineInLabelValues) {
  prom::Line l = Parse(R"(m{a="say \"hi\"",b="C:\\dir",c="two\nlines"} 1)");
  EXPECT_EQ(*l.FindLabel("a"), "say \"hi\"");
  EXPECT_EQ(*l.FindLabel("b"), "C:\\dir");
  EXPECT_EQ(*l.FindLabel("c"), "two\nlines");
  EXPECT_NE(ParseError(R"(m{a="\t"} 1)").find("escape"), std::string::npos);
}

TEST(PrometheusTextTest, ReadsNaNAndInfinities) {
  EXPECT_TRUE(std::isnan(Parse("m NaN").value));
  EXPECT_EQ(Parse("m +Inf").value, INFINITY);
  EXPECT_EQ(Parse("m -Inf").value, -INFINITY);
  EXPECT_EQ(Parse("m inf").value, INFINITY);
  EXPECT_EQ(Parse("m -1.5e3").value, -1500);
  EXPECT_EQ(Parse("m .5").value, 0.5);
  ParseError("m +NaN");
  ParseError("m abc");
  ParseError("m 0x10");
  ParseError("m nan(1)");
}

TEST(PrometheusTextTest, ReadsHelpTypeCommentsAndEof) {
  prom::Line help = Parse(R"(# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\nSecond \\ line)");
  EXPECT_EQ(help.kind, prom::LineKind::kHelp);
  EXPECT_EQ(help.metric, "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(help.text, "GPU temperature (in C).\nSecond \\ line");
  prom::Line type = Parse("# TYPE DCGM_FI_DEV_GPU_TEMP gauge");
  EXPECT_EQ(type.kind, prom::LineKind::kType);
  EXPECT_EQ(type.text, "gauge");
  EXPECT_EQ(Parse("# just a comment").kind, prom::LineKind::kComment);
  EXPECT_EQ(Parse("# HELP").kind, prom::LineKind::kComment);
  EXPECT_EQ(Parse("# HELP m    padded").text, "padded");
  EXPECT_EQ(Parse("# EOF").kind, prom::LineKind::kEof);
  EXPECT_EQ(Parse("   ").kind, prom::LineKind::kBlank);
}

TEST(PrometheusTextTest, ToleratesBlanksTrailingCommaAndCarriageReturn) {
  prom::Line l = Parse("  m { a = \"1\" ,\tb=\"2\", }\t7   123 \r");
  EXPECT_EQ(l.metric, "m");
  ASSERT_EQ(l.labels.size(), 2u);
  EXPECT_EQ(l.labels[1].value, "2");
  EXPECT_EQ(l.value, 7);
  EXPECT_EQ(l.timestamp_ms, 123);
}

TEST(PrometheusTextTest, RejectsMalformedLinesWithAReason) {
  EXPECT_NE(ParseError(R"(m{a="1" 5)").find("','"), std::string::npos);
  EXPECT_NE(ParseError(R"(m{a="1} 5)").find("unterminated"), std::string::npos);
  EXPECT_NE(ParseError("m{a=\"1\"}").find("no value"), std::string::npos);
  EXPECT_NE(ParseError(R"(m{a="1",a="2"} 5)").find("duplicate"), std::string::npos);
  EXPECT_NE(ParseError("m 5 123 extra").find("after the timestamp"), std::string::npos);
  EXPECT_NE(ParseError("m 5 12x").find("timestamp"), std::string::npos);
  ParseError(R"(m{1a="x"} 5)");
  ParseError("9metric 5");
  ParseError("m-dash 5");
  ParseError(R"({a="1"} 5)");
}

TEST(PrometheusTextTest, ReadsQuotedUtf8Names) {
  prom::Line l = Parse(R"({"gpu.temp", "host.name"="n1", gpu="0"} 3)");
  EXPECT_EQ(l.metric, "gpu.temp");
  EXPECT_EQ(*l.FindLabel("host.name"), "n1");
  ParseError(R"({a="1", "late.name"} 3)");
}

TEST(PrometheusTextTest, ReadsOpenMetricsSecondsAndSkipsExemplars) {
  EXPECT_EQ(Parse("m 1 1700000000.25").timestamp_ms, 1700000000250);
  prom::Line l = Parse(R"(m_total 5 # {trace_id="abc"} 1.0)");
  EXPECT_EQ(l.value, 5);
  EXPECT_FALSE(l.timestamp_ms.has_value());
}

TEST(PrometheusTextTest, FormattedSamplesReadBackUnchanged) {
  std::vector<prom::Label> labels = {{"gpu", "0"}, {"msg", "a \"b\" \\ c\nd"}, {"odd.name", "x"}};
  for (double v :
       std::vector<double>{0.0, -0.0, 1.5, -2e-300, 409.692, 1e21, NAN, INFINITY, -INFINITY}) {
    std::string text = prom::FormatSample("DCGM_FI_DEV_POWER_USAGE", labels, v, 1700000000000);
    prom::Line l = Parse(text);
    EXPECT_EQ(l.metric, "DCGM_FI_DEV_POWER_USAGE");
    ASSERT_EQ(l.labels.size(), 3u) << text;
    EXPECT_EQ(l.labels[1].value, labels[1].value);
    EXPECT_EQ(l.labels[2].name, "odd.name");
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(l.value)) << text;
    } else {
      EXPECT_EQ(l.value, v) << text;
      EXPECT_EQ(std::signbit(l.value), std::signbit(v)) << text;
    }
    EXPECT_EQ(l.timestamp_ms, 1700000000000);
  }
  EXPECT_EQ(prom::FormatSample("up", {}, 1), "up 1");
  EXPECT_EQ(Parse(prom::FormatSample("a.b", {}, 2)).metric, "a.b");
}

// The DCGM field catalogue.

TEST(DcgmFieldsTest, FindsFieldsByIdNameAndShortName) {
  EXPECT_EQ(DcgmFieldById(150)->short_name, "TMPTR");
  EXPECT_EQ(DcgmFieldById(112)->name, "DEV_CLOCK_THROTTLE_REASONS");
  EXPECT_EQ(DcgmFieldByName("DCGM_FI_DEV_CLOCKS_EVENT_REASONS")->id, 112);
  EXPECT_EQ(DcgmFieldByName("DEV_POWER_USAGE")->id, 155);
  EXPECT_EQ(DcgmFieldByShortName("smact")->id, 1002);
  EXPECT_EQ(DcgmFieldByShortName("DVCCTR")->id, 112);
  EXPECT_EQ(DcgmFieldById(99999), nullptr);
  EXPECT_EQ(DcgmFieldByName("DCGM_FI_NOT_A_FIELD"), nullptr);
}

TEST(DcgmFieldsTest, ConvertsUnitsAndKeepsBlanksUnknown) {
  GpuSample s;
  GpuFacts f;
  std::string why;
  auto apply = [&](std::string_view name, double v) {
    return ApplyDcgmValue(*DcgmFieldByName(name), v, s, f, why);
  };
  EXPECT_EQ(apply("DEV_PCIE_TX_THROUGHPUT", 2500), DcgmApply::kApplied);  // KB/s
  EXPECT_DOUBLE_EQ(*s.pcie_tx_mb_s, 2.5);
  EXPECT_EQ(apply("PROF_PCIE_TX_BYTES", 33011804), DcgmApply::kApplied);  // bytes/s wins
  EXPECT_DOUBLE_EQ(*s.pcie_tx_mb_s, 33.011804);
  apply("DEV_PCIE_TX_THROUGHPUT", 100);
  EXPECT_DOUBLE_EQ(*s.pcie_tx_mb_s, 33.011804);
  apply("PROF_SM_ACTIVE", 0.5);
  EXPECT_DOUBLE_EQ(*s.sm_active_pct, 50);
  apply("DEV_ENFORCED_POWER_LIMIT", 300);
  apply("DEV_POWER_MGMT_LIMIT", 350);  // the enforced limit stays the sample's limit
  EXPECT_EQ(s.power_limit_w, 300);
  EXPECT_EQ(f.enforced_power_limit_w, 300);
  EXPECT_EQ(apply("DEV_POWER_USAGE", 140737488355328.0), DcgmApply::kNoValue);  // DCGM_FP64_BLANK
  EXPECT_EQ(apply("DEV_GPU_TEMP", NAN), DcgmApply::kNoValue);
  EXPECT_FALSE(s.power_w.has_value());
  EXPECT_EQ(apply("DEV_CLOCK_THROTTLE_REASONS", 4.5), DcgmApply::kBadValue);
  EXPECT_EQ(apply("DEV_SM_CLOCK", -1), DcgmApply::kBadValue);
  EXPECT_EQ(apply("DEV_FB_USED", 10), DcgmApply::kUnused);
  apply("DEV_XID_ERRORS", 79);
  apply("DEV_XID_ERRORS", 79);
  apply("DEV_XID_ERRORS", 0);
  EXPECT_EQ(f.xids, std::vector<int64_t>{79});
}

// dcgm-exporter.

TEST(DcgmExporterTest, CorpusA100MigScrapeGivesGpuAndMigInstanceSamples) {
  std::string path = CorpusFile("dcgm/dcgm_exporter_metrics_A100_MIG_nvidia_docs.txt");
  REQUIRE_CORPUS_FILE(path);
  laggard::Run run = IngestPaths({path});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "dcgm-exporter");
  // 17 values of the GPU (5 of them fields laggard does not use) + 4 of the MIG instance.
  EXPECT_EQ(run.files[0].records, 16u);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  const GpuRecord* gpu = FindGpu(run, "ub20-a100-k8s", 0);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->uuid, "GPU-34319582-d595-d1c7-d1d2-179bcfa61660");
  EXPECT_TRUE(gpu->time_is_approximate);
  ASSERT_EQ(gpu->samples.size(), 1u);
  const GpuSample& s = gpu->samples[0];
  EXPECT_EQ(s.time_ns, 0);
  EXPECT_EQ(s.sm_clock_mhz, 1215);
  EXPECT_EQ(s.mem_clock_mhz, 1215);
  EXPECT_EQ(s.mem_temp_c, 69);
  EXPECT_EQ(s.temp_c, 61);
  EXPECT_DOUBLE_EQ(*s.power_w, 409.692);
  EXPECT_DOUBLE_EQ(*s.gr_engine_active_pct, 99.563);
  EXPECT_DOUBLE_EQ(*s.tensor_active_pct, 92.926);
  EXPECT_DOUBLE_EQ(*s.dram_active_pct, 69.0789);
  EXPECT_DOUBLE_EQ(*s.pcie_tx_mb_s, 33.011804);
  EXPECT_DOUBLE_EQ(*s.pcie_rx_mb_s, 97.863601);
  EXPECT_EQ(s.nvlink_total_mb_s, 0);
  EXPECT_EQ(s.src.line, 1u);
  EXPECT_TRUE(gpu->facts.xids.empty());
  const GpuRecord* mig = FindGpu(run, "ub20-a100-k8s", 0, "13");
  ASSERT_NE(mig, nullptr);
  ASSERT_EQ(mig->samples.size(), 1u);
  EXPECT_DOUBLE_EQ(*mig->samples[0].gr_engine_active_pct, 99.5687);
  EXPECT_DOUBLE_EQ(*mig->samples[0].tensor_active_pct, 93.0433);
  EXPECT_DOUBLE_EQ(*mig->samples[0].dram_active_pct, 80.0339);
  EXPECT_FALSE(mig->samples[0].temp_c.has_value());
  EXPECT_EQ(mig->samples[0].src.line, 20u);
  // TOTAL_ENERGY_CONSUMPTION, PCIE_REPLAY_COUNTER, FB_FREE, FB_USED and
  // VGPU_LICENSE_STATUS are DCGM fields laggard does not use.
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 5u);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 1u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

constexpr const char* kTwoScrapes = R"(# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15"} 1980 1700000000000
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-b",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15"} 1410 1700000000000
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15"} 55 1700000000000
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15"} 91 1700000000000
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15"} 1980 1700000015000
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-b",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15"} 1095 1700000015000
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15"} 56 1700000015000
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15"} 93 1700000015000
)";

TEST(DcgmExporterTest, TimestampedScrapesGiveAbsoluteSamples) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "metrics.prom", kTwoScrapes);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  const GpuRecord* g1 = FindGpu(run, "node-7", 1);  // Hostname label beats the path's node-a
  ASSERT_NE(g1, nullptr);
  EXPECT_FALSE(g1->time_is_approximate);
  EXPECT_EQ(g1->facts.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g1->facts.driver_version, "550.54.15");
  EXPECT_EQ(g1->uuid, "GPU-b");
  ASSERT_EQ(g1->samples.size(), 2u);
  EXPECT_EQ(g1->samples[0].time_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(g1->samples[0].sm_clock_mhz, 1410);
  EXPECT_EQ(g1->samples[0].temp_c, 91);
  EXPECT_EQ(g1->samples[1].time_ns, 1'700'000'015'000'000'000);
  EXPECT_EQ(g1->samples[1].sm_clock_mhz, 1095);
  EXPECT_EQ(g1->samples[1].temp_c, 93);
  EXPECT_EQ(g1->samples[1].src.line, 12u);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 0u);
  EXPECT_EQ(run.files[0].records, 8u);
}

TEST(DcgmExporterTest, UntimedScrapesAreSplitWhereASeriesRepeats) {
  std::string text;
  for (int scrape = 0; scrape < 3; ++scrape) {
    for (int gpu = 0; gpu < 2; ++gpu) {
      text += fmt::format("DCGM_FI_DEV_POWER_USAGE{{gpu=\"{}\",Hostname=\"n1\"}} {}\n", gpu,
                          100 + 10 * scrape + gpu);
    }
    text += "\n";
  }
  TempDir dir;
  laggard::Run run = IngestText(dir, "scrapes.txt", text);
  const GpuRecord* g0 = FindGpu(run, "n1", 0);
  ASSERT_NE(g0, nullptr);
  EXPECT_TRUE(g0->time_is_approximate);
  ASSERT_EQ(g0->samples.size(), 3u);
  EXPECT_EQ(g0->samples[2].time_ns, 2'000'000'000);
  EXPECT_EQ(g0->samples[2].power_w, 120);
  EXPECT_EQ(FindGpu(run, "n1", 1)->samples[1].power_w, 111);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 1u);
}

TEST(DcgmExporterTest, HealthCountersBecomeFactsAndViolationsSamples) {
  std::string text = R"(DCGM_FI_DEV_XID_ERRORS{gpu="3",Hostname="n1"} 79
DCGM_EXP_XID_ERRORS_COUNT{gpu="3",xid="48",Hostname="n1"} 2
DCGM_EXP_XID_ERRORS_COUNT{gpu="3",xid="13",Hostname="n1"} 0
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="3",Hostname="n1"} 2
DCGM_FI_DEV_RETIRED_DBE{gpu="3",Hostname="n1"} 1
DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="3",Hostname="n1"} 1
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu="3",Hostname="n1"} 4
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="3",Hostname="n1"} 68
DCGM_FI_DEV_POWER_VIOLATION{gpu="3",Hostname="n1"} 123456789
DCGM_FI_DEV_THERMAL_VIOLATION{gpu="3",Hostname="n1"} 5000
DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu="3",Hostname="n1"} 500
DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF{gpu="3",Hostname="n1"} 700
DCGM_FI_DEV_ENFORCED_POWER_LIMIT{gpu="3",Hostname="n1"} 450
DCGM_FI_DEV_PCIE_LINK_GEN{gpu="3",Hostname="n1"} 3
DCGM_FI_DEV_PCIE_LINK_WIDTH{gpu="3",Hostname="n1"} 8
DCGM_FI_DEV_GPU_UTIL{gpu="3",Hostname="n1"} 100
DCGM_FI_DEV_MEM_COPY_UTIL{gpu="3",Hostname="n1"} 37
DCGM_FI_PROF_SM_ACTIVE{gpu="3",Hostname="n1"} 0.42
DCGM_FI_PROF_NVLINK_TX_BYTES{gpu="3",Hostname="n1"} 2500000000
)";
  TempDir dir;
  laggard::Run run = IngestText(dir, "health.txt", text);
  const GpuRecord* g = FindGpu(run, "n1", 3);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->facts.xids, (std::vector<int64_t>{79, 48}));  // in the order seen; xid 13 counted 0
  EXPECT_EQ(g->facts.ecc_uncorrected_volatile, 2);
  EXPECT_EQ(g->facts.retired_pages_dbe, 1);
  EXPECT_EQ(g->facts.remapping_failure, true);
  EXPECT_EQ(g->facts.remapped_rows_uncorrectable, 4);
  EXPECT_EQ(g->facts.default_power_limit_w, 700);
  EXPECT_EQ(g->facts.enforced_power_limit_w, 450);
  EXPECT_EQ(g->facts.pcie_gen_current, 3);
  ASSERT_EQ(g->samples.size(), 1u);
  const GpuSample& s = g->samples[0];
  EXPECT_EQ(s.clock_events, clock_event::kSwPowerCap | clock_event::kHwThermalSlowdown);
  EXPECT_EQ(s.power_violation_ns, 123456789);
  EXPECT_EQ(s.thermal_violation_ns, 5000);
  EXPECT_EQ(s.power_limit_w, 450);
  EXPECT_EQ(s.pcie_gen, 3);
  EXPECT_EQ(s.pcie_width, 8);
  EXPECT_EQ(s.util_pct, 100);
  EXPECT_EQ(s.mem_util_pct, 37);
  EXPECT_DOUBLE_EQ(*s.sm_active_pct, 42);
  EXPECT_DOUBLE_EQ(*s.nvlink_tx_mb_s, 2500);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(DcgmExporterTest, HostComesFromThePathWithoutAHostnameLabel) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "m.txt", "DCGM_FI_DEV_GPU_TEMP{gpu=\"2\"} 40\n", "gpu-node-3");
  EXPECT_NE(FindGpu(run, "gpu-node-3", 2), nullptr);
  EXPECT_EQ(Count(run, DiagCode::kHwNoHost), 0u);
  TempDir flat;
  laggard::Run nohost = IngestText(flat, "m.txt", "DCGM_FI_DEV_GPU_TEMP{gpu=\"2\"} 40\n", "");
  ASSERT_EQ(nohost.hardware.gpus.size(), 1u);
  EXPECT_FALSE(nohost.hardware.gpus[0].host.has_value());
  EXPECT_EQ(Count(nohost, DiagCode::kHwNoHost), 1u);
}

TEST(DcgmExporterTest, DamagedLinesAreCountedAndTheRestKept) {
  std::string text = R"(DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n1"} 50 1000
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n1" 51 2000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="n1"} -5 1000
DCGM_FI_DEV_GPU_TEMP{gpu="zero",Hostname="n1"} 50 1000
DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="n1"} 52
DCGM_FI_NVSWITCH_TEMP{nvswitch="0",Hostname="n1"} 40 1000
DCGM_FI_DEV_NEW_FIELD{gpu="0",Hostname="n1"} 1 1000
go_goroutines 12 1000
DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="n1"} 53 2000
DCGM_FI_DEV_POWER_USAGE{gpu="1",Hostname="n1",UUID="GPU-x)";
  TempDir dir;
  laggard::Run run = IngestText(dir, "damaged.txt", text);
  EXPECT_EQ(Count(run, DiagCode::kHwBadRecord), 5u);
  EXPECT_EQ(Lines(run, DiagCode::kHwBadRecord), (std::vector<uint64_t>{2, 3, 4, 5, 10}));
  // DEV_NEW_FIELD, go_goroutines and NVSWITCH_TEMP (not a field laggard knows).
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 3u);
  const GpuRecord* g0 = FindGpu(run, "n1", 0);
  ASSERT_NE(g0, nullptr);
  ASSERT_EQ(g0->samples.size(), 1u);
  EXPECT_EQ(g0->samples[0].temp_c, 50);
  EXPECT_FALSE(g0->samples[0].sm_clock_mhz.has_value());
  const GpuRecord* g1 = FindGpu(run, "n1", 1);
  ASSERT_NE(g1, nullptr);
  ASSERT_EQ(g1->samples.size(), 1u);
  EXPECT_EQ(g1->samples[0].temp_c, 53);
  EXPECT_EQ(run.files[0].records, 2u);
}

// dcgmi dmon.

constexpr const char* kDmon = R"($ dcgmi dmon -e 150,155,100,203,1002 -d 500
#Entity   TMPTR        POWER            SMCLK        GPUTL            SMACT
ID        C            W
GPU 0     45           250.123          1410         98               0.812
GPU 1     N/A          248.001          1410         97               0.805
GPU 0     46           251.500          1395         99               0.820
GPU 1     88           180.250          1005         97               0.610
#Entity   TMPTR        POWER            SMCLK        GPUTL            SMACT
ID        C            W
GPU 0     47           252.000          1410         99               0.830
GPU 1     90           170.000          960          96               0.590

dmon was stopped do to receiving a signal
)";

TEST(DcgmiDmonTest, RowsBecomeSamplesAtTheCommandsInterval) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "dmon.txt", kDmon);
  EXPECT_EQ(run.files[0].format, "dcgmi-dmon");
  EXPECT_EQ(run.files[0].records, 6u);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  const GpuRecord* g1 = FindGpu(run, "node-a", 1);
  ASSERT_NE(g1, nullptr);
  EXPECT_TRUE(g1->time_is_approximate);
  ASSERT_EQ(g1->samples.size(), 3u);
  EXPECT_FALSE(g1->samples[0].temp_c.has_value());  // N/A
  EXPECT_DOUBLE_EQ(*g1->samples[0].power_w, 248.001);
  EXPECT_EQ(g1->samples[1].time_ns, 500'000'000);
  EXPECT_EQ(g1->samples[1].temp_c, 88);
  EXPECT_EQ(g1->samples[1].sm_clock_mhz, 1005);
  EXPECT_DOUBLE_EQ(*g1->samples[1].sm_active_pct, 61);
  EXPECT_EQ(g1->samples[2].time_ns, 1'000'000'000);
  EXPECT_EQ(g1->samples[2].sm_clock_mhz, 960);
  EXPECT_EQ(g1->samples[2].src.line, 11u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 1u);
}

TEST(DcgmiDmonTest, WithoutACommandLineSamplesAreOneSecondApart) {
  std::string text =
      "#Entity   TMPTR        SMCLK\nID        C\nGPU 0     45           1410\n"
      "GPU 0     46           1400\n";
  TempDir dir;
  laggard::Run run = IngestText(dir, "dmon.txt", text);
  const GpuRecord* g0 = FindGpu(run, "node-a", 0);
  ASSERT_NE(g0, nullptr);
  ASSERT_EQ(g0->samples.size(), 2u);
  EXPECT_EQ(g0->samples[1].time_ns, 1'000'000'000);
}

TEST(DcgmiDmonTest, MigRowsBelongToTheGpuAboveThem) {
  std::string text = R"(#Entity   SMACT        DRAMA
ID
GPU 0     0.900        0.500
GPU-I 1   0.800        0.400
GPU-CI 2  0.700        N/A
GPU 0     0.910        0.510
GPU-I 1   0.810        0.410
)";
  TempDir dir;
  laggard::Run run = IngestText(dir, "dmon.txt", text);
  const GpuRecord* gi = FindGpu(run, "node-a", 0, "GPU-I 1");
  ASSERT_NE(gi, nullptr);
  ASSERT_EQ(gi->samples.size(), 2u);
  EXPECT_DOUBLE_EQ(*gi->samples[1].sm_active_pct, 81);
  const GpuRecord* ci = FindGpu(run, "node-a", 0, "GPU-CI 2");
  ASSERT_NE(ci, nullptr);
  EXPECT_FALSE(ci->samples[0].dram_active_pct.has_value());
  EXPECT_EQ(FindGpu(run, "node-a", 0)->samples.size(), 2u);
}

TEST(DcgmiDmonTest, StringColumnsWithBlanksAreCutAtTheHeaderPositions) {
  // DVNAM (width 20 + 6 + 2): the name has blanks; dcgmi pads columns.
  std::string text =
      "#Entity   DVNAM                       TMPTR        POWER\n"
      "ID                                    C            W\n"
      "GPU 0     NVIDIA H100 80GB HBM3       41           120.500\n";
  TempDir dir;
  laggard::Run run = IngestText(dir, "dmon.txt", text);
  const GpuRecord* g0 = FindGpu(run, "node-a", 0);
  ASSERT_NE(g0, nullptr);
  ASSERT_EQ(g0->samples.size(), 1u);
  EXPECT_EQ(g0->samples[0].temp_c, 41);
  EXPECT_DOUBLE_EQ(*g0->samples[0].power_w, 120.5);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(DcgmiDmonTest, FieldIdsOfTheCommandLineNameUnknownColumns) {
  std::string text =
      "dcgmi dmon -e 150,240\n#Entity   TEMPX        PWVIO\nID\n"
      "GPU 0     70           1000\n";
  TempDir dir;
  laggard::Run run = IngestText(dir, "dmon.txt", text);
  const GpuRecord* g0 = FindGpu(run, "node-a", 0);
  ASSERT_NE(g0, nullptr);
  EXPECT_EQ(g0->samples[0].temp_c, 70);
  EXPECT_EQ(g0->samples[0].power_violation_ns, 1000);
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 0u);
}

TEST(DcgmiDmonTest, DamagedRowsAreCountedAndTheRestKept) {
  std::string text = R"(#Entity   TMPTR        SMCLK        FBUSD
ID        C
GPU 0     45           1410         1000
GPU 1     44
garbage in the middle
GPU 1     43           -3           1000
Switch 0  30           0            0
GPU x     1            1            1
GPU 0     46           1400         10)";
  TempDir dir;
  laggard::Run run = IngestText(dir, "dmon.txt", text);
  EXPECT_EQ(Count(run, DiagCode::kHwBadRecord), 4u);
  EXPECT_EQ(Lines(run, DiagCode::kHwBadRecord), (std::vector<uint64_t>{4, 5, 6, 8}));
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 2u);  // FBUSD column, Switch rows
  const GpuRecord* g1 = FindGpu(run, "node-a", 1);
  ASSERT_NE(g1, nullptr);  // the row with a bad clock keeps its temperature
  EXPECT_EQ(g1->samples[0].temp_c, 43);
  EXPECT_FALSE(g1->samples[0].sm_clock_mhz.has_value());
  EXPECT_EQ(FindGpu(run, "node-a", 0)->samples.size(), 2u);
  EXPECT_EQ(run.files[0].records, 3u);
}

// dcgmi diag.

TEST(DcgmiDiagTest, CorpusPersistenceFailureIsGivenToEveryGpuWithItsOwnMessage) {
  std::string path = CorpusFile("dcgm/dcgmi_diag_r1_8xH100_persistence_fail_azure.txt");
  REQUIRE_CORPUS_FILE(path);
  TempDir dir;
  laggard::Run run = IngestText(dir, "diag.txt", ReadFile(path), "nd-h100-7");
  EXPECT_EQ(run.files[0].format, "dcgmi-diag");
  ASSERT_EQ(run.hardware.gpus.size(), 8u);  // "GPU Device IDs Detected": 8 x 2335
  for (const GpuRecord& g : run.hardware.gpus) {
    EXPECT_EQ(g.host, "nd-h100-7");
    EXPECT_EQ(g.facts.diag_failed, true) << g.index;
    EXPECT_EQ(g.facts.driver_version, "550.127.08");
    ASSERT_EQ(g.facts.diag_messages.size(), 1u) << g.index;
  }
  EXPECT_EQ(FindGpu(run, "nd-h100-7", 0)->facts.diag_messages[0],
            "Persistence Mode: Fail: Persistence mode for GPU 0 is currently disabled. The DCGM "
            "diagnostic requires peristence mode to be enabled. Enable persistence mode by "
            "running \"nvidia-smi -i <gpuId> -pm 1 \" as root.");
  EXPECT_EQ(FindGpu(run, "nd-h100-7", 4)->facts.diag_messages[0],
            "Persistence Mode: Fail: Persistence mode for GPU 4 is currently disabled. The DCGM "
            "diagnostic requires peristence mode to be enabled. Enable persistence mode by "
            "running \"nvidia-smi -i <gpuId> -pm 1 \" as root.");
  // DCGM cut the message (512 bytes) inside GPU 5's error; 6 and 7 are not named.
  EXPECT_EQ(FindGpu(run, "nd-h100-7", 5)->facts.diag_messages[0],
            "Persistence Mode: Fail: Persistence mode for GPU 5 is currently disabled. The DCGM "
            "diagnostic requires peristence mod");
  EXPECT_EQ(FindGpu(run, "nd-h100-7", 7)->facts.diag_messages[0], "Persistence Mode: Fail");
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(Count(run, DiagCode::kHwNoHost), 0u);
}

constexpr const char* kDcgm3PerGpu = R"(Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.3.5                                          |
| Driver Version Detected   | 535.161.08                                     |
| GPU Device IDs Detected   | 2330,2330,2330                                 |
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
| Persistence Mode          | Pass                                           |
+-----  Integration  -------+------------------------------------------------+
| PCIe                      | Pass - All                                     |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPUs: 0, 1                              |
|                           | Fail - GPU: 2                                  |
| Warning                   | GPU 2 Detected 4 double bit ECC errors on the  |
|                           |  GPU. Drain the GPU and reset it or reboot th  |
|                           | e node.                                        |
+-----  Stress  ------------+------------------------------------------------+
| Targeted Stress           | Pass - GPUs: 0, 2                              |
|                           | Warn - GPU: 1                                  |
| Warning                   | GPU 1 clocks throttled (HW slowdown)           |
+---------------------------+------------------------------------------------+
)";

TEST(DcgmiDiagTest, PerGpuResultsFailOnlyTheNamedGpu) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "diag.txt", kDcgm3PerGpu);
  ASSERT_EQ(run.hardware.gpus.size(), 3u);
  const GpuRecord* g2 = FindGpu(run, "node-a", 2);
  EXPECT_EQ(g2->facts.diag_failed, true);
  ASSERT_EQ(g2->facts.diag_messages.size(), 1u);
  EXPECT_EQ(g2->facts.diag_messages[0],
            "GPU Memory: Fail: GPU 2 Detected 4 double bit ECC errors on the GPU. Drain the GPU "
            "and reset it or reboot the node.");
  const GpuRecord* g1 = FindGpu(run, "node-a", 1);
  EXPECT_EQ(g1->facts.diag_failed, false);  // a warning is not a failure
  EXPECT_EQ(
      g1->facts.diag_messages,
      std::vector<std::string>{"Targeted Stress: Warn: GPU 1 clocks throttled (HW slowdown)"});
  EXPECT_EQ(FindGpu(run, "node-a", 0)->facts.diag_failed, false);
  EXPECT_TRUE(FindGpu(run, "node-a", 0)->facts.diag_messages.empty());
  EXPECT_EQ(g1->facts.driver_version, "535.161.08");
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

constexpr const char* kDcgm4 = R"(Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 4.2.3                                          |
| Driver Version Detected   | 570.148.08                                     |
| GPU Device IDs Detected   | 26b9, 26b9                                     |
|-----  Deployment  --------+------------------------------------------------|
| software                  | Pass                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Pass                                     |
+-----  Hardware  ----------+------------------------------------------------+
| memory                    | Fail                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Fail                                     |
| Warning: GPU1             | Detected a double bit ECC error.               |
+---------------------------+------------------------------------------------+
)";

TEST(DcgmiDiagTest, Dcgm4RowsPerGpuAreRead) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "diag.txt", kDcgm4);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  EXPECT_EQ(FindGpu(run, "node-a", 0)->facts.diag_failed, false);
  const GpuRecord* g1 = FindGpu(run, "node-a", 1);
  EXPECT_EQ(g1->facts.diag_failed, true);
  EXPECT_EQ(g1->facts.diag_messages,
            std::vector<std::string>{"memory: Fail: Detected a double bit ECC error."});
  EXPECT_EQ(g1->facts.driver_version, "570.148.08");
}

constexpr const char* kDiagJson = R"({
  "DCGM GPU Diagnostic" : {
    "test_categories" : [
      {
        "category" : "Deployment",
        "tests" : [
          { "name" : "Denylist", "results" : [ { "status" : "Pass" } ] },
          { "name" : "Persistence Mode",
            "results" : [ { "gpu_id" : 1, "status" : "Fail",
              "warnings" : [ { "warning" : "Persistence mode for GPU 1 is currently disabled.", "error_id" : 11 } ] } ] }
        ]
      },
      {
        "category" : "Hardware",
        "tests" : [
          { "name" : "GPU Memory",
            "results" : [ { "gpu_id" : "0", "status" : "Pass" },
                          { "gpu_id" : "1", "status" : "Fail",
                            "warnings" : [ { "warning" : "Detected 2 double bit ECC errors.", "error_id" : 95 } ] } ] }
        ]
      }
    ],
    "version" : "3.1.8",
    "Driver Version Detected" : "535.104.05",
    "GPU Device IDs" : [ "2330", "2330" ]
  }
}
)";

TEST(DcgmiDiagTest, JsonResultsAreReadLikeTheTable) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "diag.json", kDiagJson);
  EXPECT_EQ(run.files[0].format, "dcgmi-diag");
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  const GpuRecord* g0 = FindGpu(run, "node-a", 0);
  // Persistence Mode failed for the group; its message names GPU 1 only.
  EXPECT_EQ(g0->facts.diag_failed, true);
  EXPECT_EQ(g0->facts.diag_messages, std::vector<std::string>{"Persistence Mode: Fail"});
  const GpuRecord* g1 = FindGpu(run, "node-a", 1);
  EXPECT_EQ(g1->facts.diag_failed, true);
  EXPECT_EQ(g1->facts.diag_messages,
            (std::vector<std::string>{
                "Persistence Mode: Fail: Persistence mode for GPU 1 is currently disabled.",
                "GPU Memory: Fail: Detected 2 double bit ECC errors."}));
  EXPECT_EQ(g1->facts.driver_version, "535.104.05");
}

TEST(DcgmiDiagTest, Dcgm4JsonEntitiesGiveGpusAndSerials) {
  std::string text = R"({"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
  {"name": "memory", "results": [
    {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"},
    {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 3, "status": "Fail",
     "warnings": [{"warning": "row remapping failed", "error_id": 77}]}]}]}]},
 "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1,
   "entities": [{"entity_id": 0, "serial_num": "1650123000001"}, {"entity_id": 3, "serial_num": "1650123000004"}]}],
 "metadata": {"version": "4.1.1", "Driver Version Detected": "570.86.15"}}
)";
  TempDir dir;
  laggard::Run run = IngestText(dir, "diag4.json", text);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  const GpuRecord* g3 = FindGpu(run, "node-a", 3);
  ASSERT_NE(g3, nullptr);
  EXPECT_EQ(g3->facts.diag_failed, true);
  EXPECT_EQ(g3->facts.serial, "1650123000004");
  EXPECT_EQ(g3->facts.diag_messages,
            std::vector<std::string>{"memory: Fail: row remapping failed"});
  EXPECT_EQ(FindGpu(run, "node-a", 0)->facts.diag_failed, false);
  EXPECT_EQ(g3->facts.driver_version, "570.86.15");
}

TEST(DcgmiDiagTest, RepeatedRunsAccumulate) {
  // dcgmi diag --iterations prints one table per run.
  std::string pass = kDcgm4;
  std::string text = "Running iteration 1 of 2...\n";
  std::string first = pass;
  first.replace(first.find("GPU1: Fail"), 10, "GPU1: Pass");
  first.replace(first.find("| Warning: GPU1"), 79, "");
  text += first + "\nRunning iteration 2 of 2...\n" + pass;
  TempDir dir;
  laggard::Run run = IngestText(dir, "diag.txt", text);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  EXPECT_EQ(FindGpu(run, "node-a", 1)->facts.diag_failed, true);
  EXPECT_EQ(FindGpu(run, "node-a", 1)->facts.diag_messages.size(), 1u);
  EXPECT_EQ(FindGpu(run, "node-a", 0)->facts.diag_failed, false);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(DcgmiDiagTest, DamagedTableRowsAndTruncatedJsonAreCounted) {
  std::string table = kDcgm3PerGpu;
  table.replace(table.find("|                           | Fail - GPU: 2"), 62,
                "|                           | Fial - GPU: 2                                  |");
  table.insert(table.find("+-----  Stress"), "| Targeted Power\n");
  TempDir dir;
  laggard::Run run = IngestText(dir, "diag.txt", table);
  EXPECT_EQ(Count(run, DiagCode::kHwBadRecord), 2u);
  EXPECT_EQ(Lines(run, DiagCode::kHwBadRecord), (std::vector<uint64_t>{16, 20}));
  ASSERT_EQ(run.hardware.gpus.size(), 3u);  // the rest of the table is kept
  EXPECT_EQ(FindGpu(run, "node-a", 1)->facts.diag_messages.size(), 1u);

  TempDir jdir;
  std::string json = kDiagJson;
  laggard::Run cut = IngestText(jdir, "diag.json", json.substr(0, json.size() / 2));
  EXPECT_EQ(Count(cut, DiagCode::kHwBadRecord), 1u);
  EXPECT_TRUE(cut.hardware.gpus.empty());
}

// Sniffing.

TEST(DcgmSniffTest, EachCorpusFileGoesToItsReader) {
  std::string exporter = CorpusFile("dcgm/dcgm_exporter_metrics_A100_MIG_nvidia_docs.txt");
  std::string diag = CorpusFile("dcgm/dcgmi_diag_r1_8xH100_persistence_fail_azure.txt");
  REQUIRE_CORPUS_FILE(exporter);
  EXPECT_EQ(Winner(ReadFile(exporter)), "dcgm-exporter");
  EXPECT_EQ(Winner(ReadFile(diag)), "dcgmi-diag");
  EXPECT_EQ(Winner(kDmon), "dcgmi-dmon");
  EXPECT_EQ(Winner(kDcgm4), "dcgmi-diag");
  EXPECT_EQ(Winner(kDiagJson), "dcgmi-diag");
  EXPECT_EQ(Winner(kTwoScrapes), "dcgm-exporter");
}

TEST(DcgmSniffTest, NvidiaSmiOutputsAreNotClaimed) {
  std::string dir = CorpusFile("nvidia_smi");
  REQUIRE_CORPUS_FILE(dir);
  std::vector<std::unique_ptr<TextReader>> readers;
  readers.push_back(MakeDcgmiDmonReader());
  readers.push_back(MakeDcgmiDiagReader());
  readers.push_back(MakeDcgmExporterReader());
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string head = ReadFile(entry.path().string()).substr(0, kSniffBytes);
    for (const auto& r : readers) EXPECT_EQ(r->Sniff(head), 0) << r->name() << " " << entry.path();
    ++files;
  }
  EXPECT_GT(files, 10);
  for (const auto& r : readers) {
    EXPECT_EQ(r->Sniff("rank 3, step 7, time 0.8s\n"), 0);
    EXPECT_EQ(r->Sniff("rank,step,step_time_ms\n0,1,800\n"), 0);
  }
}

}  // namespace
}  // namespace laggard
