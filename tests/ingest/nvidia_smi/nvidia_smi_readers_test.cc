// The nvidia-smi GPU-metrics readers: `nvidia-smi dmon`, `nvidia-smi
// --query-gpu ... --format=csv` and `nvidia-smi nvlink --status`, on every
// real capture of those formats in the shared corpus, on synthetic variants
// (every -o option, repeated headers, units, aliases) and on damaged input.
// Files go through the standard ingest, so each test also checks that the
// right reader wins the sniffing.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "ingest/common/input_file.h"
#include "ingest/nvidia_smi/nvidia_smi_util.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

const std::string kCorpus = std::string(LAGGARD_CORPUS_DIR) + "/nvidia_smi/";

#define REQUIRE_CORPUS()                                      \
  if (!std::filesystem::exists(kCorpus)) {                    \
    GTEST_SKIP() << "shared corpus not found at " << kCorpus; \
  }

TimeNs At(std::string_view iso) { return *ParseTimestamp(iso); }
constexpr TimeNs kSecond = 1'000'000'000;

uint64_t Count(const Run& run, DiagCode code) { return run.diagnostics.count(code); }

std::vector<uint64_t> Lines(const Run& run, DiagCode code) {
  std::vector<uint64_t> out;
  for (const DiagExample& e : run.diagnostics.examples(code)) out.push_back(e.line);
  return out;
}

const GpuRecord& Gpu(const Run& run, int32_t index) {
  for (const GpuRecord& g : run.hardware.gpus) {
    if (g.index == index) return g;
  }
  static const GpuRecord kNone;
  ADD_FAILURE() << "no GPU " << index;
  return kNone;
}

// Writes `content` as node-07/<name> under a fresh directory and ingests
// the directory: the host comes from the folder.
struct Ingested {
  TempDir dir;
  Run run;
  const InputFileInfo& file() const { return run.files.at(0); }
};
std::unique_ptr<Ingested> IngestText(const std::string& name, const std::string& content) {
  auto out = std::make_unique<Ingested>();
  WriteFile(out->dir.File("node-07/" + name), content);
  out->run = IngestPaths({out->dir.path()});
  return out;
}

int SniffWith(const TextReader& reader, const std::string& path) {
  auto head = ReadHead(path, kSniffBytes);
  EXPECT_TRUE(head.ok()) << path;
  return head.ok() ? reader.Sniff(*head) : -1;
}

struct Readers {
  std::unique_ptr<TextReader> dmon = MakeNvidiaSmiDmonReader();
  std::unique_ptr<TextReader> query = MakeNvidiaSmiQueryCsvReader();
  std::unique_ptr<TextReader> nvlink = MakeNvlinkStatusReader();
};

// ---------------------------------------------------------------- corpus

TEST(NvidiaSmiCorpusTest, DmonOnGb10ReadsDashesAsUnknown) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "dmon_c1_GB10_mclk_dash.txt"});
  EXPECT_EQ(run.files[0].format, "nvidia-smi-dmon");
  EXPECT_EQ(run.files[0].records, 1u);
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  const GpuRecord& g = run.hardware.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_FALSE(g.host.has_value());
  ASSERT_EQ(g.samples.size(), 1u);
  const GpuSample& s = g.samples[0];
  EXPECT_EQ(s.power_w, 3.0);
  EXPECT_EQ(s.temp_c, 38.0);
  EXPECT_FALSE(s.mem_temp_c.has_value());
  EXPECT_EQ(s.util_pct, 0.0);
  EXPECT_EQ(s.mem_util_pct, 0.0);
  EXPECT_FALSE(s.mem_clock_mhz.has_value());  // mclk "-"
  EXPECT_EQ(s.sm_clock_mhz, 208.0);           // pclk
  EXPECT_FALSE(s.clock_events.has_value());
  EXPECT_EQ(s.src.line, 3u);
  EXPECT_TRUE(g.time_is_approximate);
  EXPECT_EQ(s.time_ns, 0);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 1u);
  EXPECT_EQ(Count(run, DiagCode::kHwNoHost), 1u);
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 0u);  // enc/dec/jpg/ofa are known
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiCorpusTest, DmonWithDateAndTimeIsAbsoluteAndSkipsTheBlankLine) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "dmon_s_mutc_o_TD_blog.txt"});
  EXPECT_EQ(run.files[0].format, "nvidia-smi-dmon");
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  const GpuRecord& g = run.hardware.gpus[0];
  EXPECT_FALSE(g.time_is_approximate);
  ASSERT_EQ(g.samples.size(), 6u);
  const GpuSample& first = g.samples[0];
  EXPECT_EQ(first.time_ns, At("2024-01-04T13:54:35Z"));
  EXPECT_EQ(first.util_pct, 6.0);
  EXPECT_EQ(first.mem_util_pct, 1.0);
  EXPECT_EQ(first.pcie_rx_mb_s, 5.0);
  EXPECT_EQ(first.pcie_tx_mb_s, 10.0);
  EXPECT_EQ(first.mem_clock_mhz, 6250.0);
  EXPECT_EQ(first.sm_clock_mhz, 1695.0);
  EXPECT_FALSE(first.power_w.has_value());  // -s mutc has no pwr column
  EXPECT_EQ(g.samples[1].time_ns, At("2024-01-04T13:54:36Z"));
  EXPECT_EQ(g.samples[1].src.line, 5u);  // line 4 is blank
  EXPECT_EQ(g.samples[1].pcie_tx_mb_s, 677.0);
  EXPECT_EQ(g.samples[5].time_ns, At("2024-01-04T13:54:40Z"));
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 0u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiCorpusTest, DmonPucetWithDashedEccAndTwoSecondInterval) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "dmon_s_pucet_o_DT_blog.txt"});
  EXPECT_EQ(run.files[0].format, "nvidia-smi-dmon");
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  const GpuRecord& g = run.hardware.gpus[0];
  ASSERT_EQ(g.samples.size(), 3u);
  EXPECT_EQ(g.samples[0].time_ns, At("2021-01-02T19:12:31Z"));
  EXPECT_EQ(g.samples[1].time_ns - g.samples[0].time_ns, 2 * kSecond);
  EXPECT_EQ(g.samples[2].time_ns - g.samples[1].time_ns, 2 * kSecond);
  EXPECT_EQ(g.samples[0].power_w, 37.0);
  EXPECT_EQ(g.samples[0].temp_c, 19.0);
  EXPECT_FALSE(g.samples[0].mem_temp_c.has_value());
  EXPECT_EQ(g.samples[0].mem_clock_mhz, 4006.0);
  EXPECT_EQ(g.samples[0].sm_clock_mhz, 582.0);
  EXPECT_EQ(g.samples[1].sm_clock_mhz, 1582.0);
  EXPECT_EQ(g.samples[0].pcie_tx_mb_s, 1.0);
  EXPECT_EQ(g.samples[1].pcie_tx_mb_s, 0.0);
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 0u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiCorpusTest, DmonPucmWithoutTimeColumnsIsRowIndexTimed) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "dmon_s_pucm_fb_bar1_ccpm.txt"});
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  const GpuRecord& g = run.hardware.gpus[0];
  ASSERT_EQ(g.samples.size(), 5u);
  EXPECT_TRUE(g.time_is_approximate);
  std::vector<double> util, power;
  for (size_t i = 0; i < g.samples.size(); ++i) {
    EXPECT_EQ(g.samples[i].time_ns, static_cast<TimeNs>(i) * kSecond);
    util.push_back(*g.samples[i].util_pct);
    power.push_back(*g.samples[i].power_w);
  }
  EXPECT_EQ(util, (std::vector<double>{95, 95, 95, 95, 96}));
  EXPECT_EQ(power, (std::vector<double>{218, 411, 365, 362, 365}));
  EXPECT_EQ(g.samples[4].temp_c, 46.0);
  EXPECT_EQ(g.samples[4].mem_clock_mhz, 12481.0);
  EXPECT_EQ(g.samples[4].sm_clock_mhz, 2422.0);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 1u);
}

TEST(NvidiaSmiCorpusTest, QueryGpuCsvWithMillisecondLoop) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "query_gpu_csv_lms_A10_blog.txt"});
  EXPECT_EQ(run.files[0].format, "nvidia-smi-query-gpu");
  EXPECT_EQ(run.files[0].records, 5u);
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  const GpuRecord& g = run.hardware.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_FALSE(g.time_is_approximate);
  ASSERT_EQ(g.samples.size(), 5u);
  std::vector<double> temps;
  for (const GpuSample& s : g.samples) temps.push_back(*s.temp_c);
  EXPECT_EQ(temps, (std::vector<double>{25, 24, 23, 26, 25}));
  EXPECT_EQ(g.samples[0].time_ns, At("2024-01-16T14:44:16.977Z"));
  EXPECT_EQ(g.samples[4].time_ns, At("2024-01-16T14:44:17.095Z"));
  EXPECT_EQ(g.samples[0].util_pct, 0.0);
  EXPECT_EQ(g.samples[0].mem_util_pct, 0.0);
  EXPECT_FALSE(g.samples[0].power_w.has_value());
  // No index/uuid/bus id in the query: one GPU assumed, and said so.
  EXPECT_EQ(Count(run, DiagCode::kHwNoGpuId), 1u);
  EXPECT_EQ(Lines(run, DiagCode::kHwNoGpuId), (std::vector<uint64_t>{2}));
  // pstate and memory.* are nvidia-smi fields laggard does not use: quiet.
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 0u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiCorpusTest, NvlinkStatusOfEightA100s) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "gpud_nvidia-smi.nvlink.status.a100.txt"});
  EXPECT_EQ(run.files[0].format, "nvidia-smi-nvlink");
  EXPECT_EQ(run.files[0].records, 8u);
  ASSERT_EQ(run.hardware.gpus.size(), 8u);
  for (int32_t i = 0; i < 8; ++i) {
    const GpuRecord& g = Gpu(run, i);
    EXPECT_EQ(g.facts.name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(g.facts.nvlink_total, 12);
    EXPECT_EQ(g.facts.nvlink_up, 12);
    EXPECT_EQ(g.facts.nvlink_speed_gb_s, 25.0);
    EXPECT_TRUE(g.samples.empty());
  }
  EXPECT_EQ(Gpu(run, 0).uuid, "GPU-5269b708-678a-b1a8-60f0-c90406537486");
  EXPECT_EQ(Gpu(run, 7).uuid, "GPU-754035b4-4708-efcd-b261-623aea38bcad");
  EXPECT_EQ(Gpu(run, 7).facts.src->line, 92u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 0u);
}

// Each real capture is claimed by its own reader only; -q, -a, the default
// table and topo -m (other readers' formats) and every other corpus file
// are claimed by none of the three.
TEST(NvidiaSmiCorpusTest, SniffingClaimsOnlyOwnFormats) {
  REQUIRE_CORPUS();
  Readers r;
  std::map<std::string, const TextReader*> owner = {
      {"dmon_c1_GB10_mclk_dash.txt", r.dmon.get()},
      {"dmon_s_mutc_o_TD_blog.txt", r.dmon.get()},
      {"dmon_s_pucet_o_DT_blog.txt", r.dmon.get()},
      {"dmon_s_pucm_fb_bar1_ccpm.txt", r.dmon.get()},
      {"query_gpu_csv_lms_A10_blog.txt", r.query.get()},
      {"gpud_nvidia-smi.nvlink.status.a100.txt", r.nvlink.get()},
  };
  int files = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(LAGGARD_CORPUS_DIR))) {
    if (!entry.is_regular_file()) continue;
    std::string path = entry.path().string();
    std::string name = entry.path().filename().string();
    auto it = owner.find(name);
    for (const TextReader* reader : {r.dmon.get(), r.query.get(), r.nvlink.get()}) {
      int score = SniffWith(*reader, path);
      if (it != owner.end() && it->second == reader) {
        EXPECT_GE(score, 90) << reader->name() << " on " << path;
      } else {
        EXPECT_EQ(score, 0) << reader->name() << " on " << path;
      }
    }
    ++files;
  }
  EXPECT_GT(files, 20);
}

TEST(NvidiaSmiCorpusTest, GpudQueryFilesAreQTextNotQueryCsv) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "gpud_nvidia-smi-query.535.183.01.out.0.valid.txt"});
  EXPECT_NE(run.files[0].format, "nvidia-smi-query-gpu");
  EXPECT_NE(run.files[0].format, "nvidia-smi-dmon");
  EXPECT_NE(run.files[0].format, "nvidia-smi-nvlink");
}

// ---------------------------------------------------------------- dmon

const char kDmonDT[] =
    "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk  "
    "pviol  tviol\n"
    "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %    MHz    MHz    "
    "  %   bool\n"
    " 20240301   23:59:59      0    310     71     80     98     40      0      0   1593   1980    "
    "  0      0\n"
    " 20240301   23:59:59      1    250     91     85     97     41      0      0   1593   1410    "
    " 12      1\n"
    " 20240302   00:00:00      0    312     71     80     99     40      0      0   1593   1980    "
    "  0      0\n"
    " 20240302   00:00:00      1    249     92     85     97     41      0      0   1593   1395    "
    "  -      -\n";

TEST(NvidiaSmiDmonTest, DateAndTimeGiveAbsoluteTimesPerGpu) {
  auto in = IngestText("dmon.txt", kDmonDT);
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().format, "nvidia-smi-dmon");
  EXPECT_EQ(in->file().records, 4u);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  const GpuRecord& g1 = Gpu(run, 1);
  EXPECT_EQ(g1.host, "node-07");
  EXPECT_FALSE(g1.time_is_approximate);
  ASSERT_EQ(g1.samples.size(), 2u);
  EXPECT_EQ(g1.samples[0].time_ns, At("2024-03-01T23:59:59Z"));
  EXPECT_EQ(g1.samples[1].time_ns, At("2024-03-02T00:00:00Z"));
  EXPECT_EQ(g1.samples[0].temp_c, 91.0);
  EXPECT_EQ(g1.samples[0].mem_temp_c, 85.0);
  EXPECT_EQ(g1.samples[0].sm_clock_mhz, 1410.0);
  EXPECT_EQ(g1.samples[0].mem_clock_mhz, 1593.0);
  EXPECT_EQ(g1.samples[0].util_pct, 97.0);
  // pviol 12 % and tviol 1: power cap and thermal slowdown were active.
  EXPECT_EQ(g1.samples[0].clock_events, clock_event::kSwPowerCap | clock_event::kSwThermalSlowdown);
  EXPECT_FALSE(g1.samples[1].clock_events.has_value());  // both "-"
  EXPECT_EQ(Gpu(run, 0).samples[0].clock_events, 0u);
  EXPECT_EQ(Count(run, DiagCode::kHwNoHost), 0u);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 0u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiDmonTest, TimeBeforeDateReadsTheSame) {
  auto in = IngestText("dmon.txt",
                       "#Time       Date        gpu    pwr\n"
                       "#HH:MM:SS   YYYYMMDD    Idx      W\n"
                       " 08:00:01   20240301      0    300\n");
  const GpuRecord& g = Gpu(in->run, 0);
  ASSERT_EQ(g.samples.size(), 1u);
  EXPECT_EQ(g.samples[0].time_ns, At("2024-03-01T08:00:01Z"));
  EXPECT_FALSE(g.time_is_approximate);
}

TEST(NvidiaSmiDmonTest, TimeOnlyIsRelativeAndWrapsAtMidnight) {
  auto in = IngestText("dmon.txt",
                       "#Time        gpu    pwr  gtemp\n"
                       "#HH:MM:SS    Idx      W      C\n"
                       " 23:59:58      0    100     50\n"
                       " 23:59:59      0    101     50\n"
                       " 00:00:01      0    102     51\n");
  const laggard::Run& run = in->run;
  const GpuRecord& g = Gpu(run, 0);
  EXPECT_TRUE(g.time_is_approximate);
  ASSERT_EQ(g.samples.size(), 3u);
  EXPECT_EQ(g.samples[0].time_ns, 0);
  EXPECT_EQ(g.samples[1].time_ns, 1 * kSecond);
  EXPECT_EQ(g.samples[2].time_ns, 3 * kSecond);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 1u);
}

TEST(NvidiaSmiDmonTest, DateOnlyIsRowIndexTimed) {
  auto in = IngestText("dmon.txt",
                       "#Date       gpu    pwr\n"
                       "#YYYYMMDD   Idx      W\n"
                       " 20240301     0    100\n"
                       " 20240301     0    101\n");
  const GpuRecord& g = Gpu(in->run, 0);
  EXPECT_TRUE(g.time_is_approximate);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[1].time_ns, kSecond);
}

TEST(NvidiaSmiDmonTest, RepeatedHeadersAndManyGpusGroupRowsIntoSamples) {
  std::string text;
  for (int round = 0; round < 3; ++round) {
    text += "# gpu    pwr  gtemp     sm    mem   mclk   pclk\n";
    text += "# Idx      W      C      %      %    MHz    MHz\n";
    for (int gpu = 0; gpu < 4; ++gpu) {
      text += fmt::format("    {}    {}     {}     90     30   1593   {}\n", gpu, 200 + round,
                          60 + gpu, 1980 - 100 * gpu);
    }
  }
  auto in = IngestText("dmon.txt", text);
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().records, 12u);
  ASSERT_EQ(run.hardware.gpus.size(), 4u);
  for (int32_t gpu = 0; gpu < 4; ++gpu) {
    const GpuRecord& g = Gpu(run, gpu);
    ASSERT_EQ(g.samples.size(), 3u);
    for (int round = 0; round < 3; ++round) {
      EXPECT_EQ(g.samples[static_cast<size_t>(round)].time_ns, round * kSecond);
      EXPECT_EQ(g.samples[static_cast<size_t>(round)].power_w, 200.0 + round);
    }
    EXPECT_EQ(g.samples[0].sm_clock_mhz, 1980.0 - 100 * gpu);
  }
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 1u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiDmonTest, IntervalComesFromTheCapturedCommandLine) {
  auto in = IngestText("dmon.txt",
                       "$ nvidia-smi dmon -s pucvmt -d 5\n"
                       "# gpu    pwr  gtemp\n"
                       "# Idx      W      C\n"
                       "    0    100     50\n"
                       "    1    100     50\n"
                       "    0    100     50\n"
                       "    1    100     50\n");
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().format, "nvidia-smi-dmon");
  EXPECT_EQ(Gpu(run, 1).samples.at(1).time_ns, 5 * kSecond);
  ASSERT_EQ(run.diagnostics.examples(DiagCode::kHwApproximateTime).size(), 1u);
  EXPECT_NE(run.diagnostics.examples(DiagCode::kHwApproximateTime)[0].message.find("-d"),
            std::string::npos);
}

TEST(NvidiaSmiDmonTest, ColumnMeaningFollowsTheUnitLine) {
  // A variant printing SM and memory clocks as "sm"/"mem" under MHz: those
  // are clocks, not utilisation.
  auto in = IngestText("dmon.txt",
                       "# gpu     sm    mem   temp\n"
                       "# Idx    MHz    MHz      C\n"
                       "    0   1410   1215     66\n");
  const GpuSample& s = Gpu(in->run, 0).samples.at(0);
  EXPECT_EQ(s.sm_clock_mhz, 1410.0);
  EXPECT_EQ(s.mem_clock_mhz, 1215.0);
  EXPECT_FALSE(s.util_pct.has_value());
  EXPECT_FALSE(s.mem_util_pct.has_value());
  EXPECT_EQ(s.temp_c, 66.0);  // "temp": drivers before gtemp/mtemp
}

TEST(NvidiaSmiDmonTest, HeaderWithoutUnitLineUsesDefaultMeanings) {
  auto in = IngestText("dmon.txt",
                       "# gpu   pwr  temp    sm   mem\n"
                       "    0   210    68    38    61\n");
  const GpuSample& s = Gpu(in->run, 0).samples.at(0);
  EXPECT_EQ(s.power_w, 210.0);
  EXPECT_EQ(s.util_pct, 38.0);
  EXPECT_EQ(s.mem_util_pct, 61.0);
}

TEST(NvidiaSmiDmonTest, NewerColumnsAreReadOrSkippedQuietly) {
  auto in =
      IngestText("dmon.txt",
                 "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   "
                 "pclk  pviol  tviol     fb   bar1   ccpm  sbecc  dbecc    pci  rxpci  txpci\n"
                 "# Idx      W      C      C      %      %      %      %      %      %    MHz    "
                 "MHz      %   bool     MB     MB     MB   errs   errs   errs   MB/s   MB/s\n"
                 "    0    129     57      -     14      3      0      0      0      0  10501   "
                 "2055      0      0   4580     77      0      -      -      0    900    300\n");
  const laggard::Run& run = in->run;
  const GpuSample& s = Gpu(run, 0).samples.at(0);
  EXPECT_EQ(s.power_w, 129.0);
  EXPECT_EQ(s.pcie_rx_mb_s, 900.0);
  EXPECT_EQ(s.pcie_tx_mb_s, 300.0);
  EXPECT_EQ(s.clock_events, 0u);
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 0u);
}

TEST(NvidiaSmiDmonTest, UnknownColumnIsNotedOncePerFile) {
  std::string text;
  for (int i = 0; i < 3; ++i) {
    text += "# gpu    pwr  nvlrx\n# Idx      W   MB/s\n    0    100     7\n";
  }
  auto in = IngestText("dmon.txt", text);
  const laggard::Run& run = in->run;
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 1u);
  EXPECT_EQ(Lines(run, DiagCode::kHwUnknownField), (std::vector<uint64_t>{1}));
  EXPECT_EQ(Gpu(run, 0).samples.size(), 3u);
}

TEST(NvidiaSmiDmonTest, PmonIsNotDmon) {
  Readers r;
  EXPECT_EQ(r.dmon->Sniff("# gpu         pid   type     sm    mem    enc    dec    command\n"
                          "# Idx           #    C/G      %      %      %      %    name\n"
                          "    0       1234     C     90     40      -      -    python\n"),
            0);
}

TEST(NvidiaSmiDmonCorruptionTest, BadRowsAreCountedWithTheirLinesAndTheRestIsKept) {
  auto in = IngestText("dmon.txt",
                       "# gpu    pwr  gtemp     sm\n"                // 1
                       "# Idx      W      C      %\n"                // 2
                       "    0    100     50     90\n"                // 3
                       "    0    1x0     50     90\n"                // 4 garbled value
                       "    x    100     50     90\n"                // 5 garbled index
                       "    0    100     50\n"                       // 6 a value short
                       "    0    100     50     90     12\n"         // 7 a value too many
                       "Failed to initialize NVML: Unknown Error\n"  // 8
                       "    0    101     51     91\n"                // 9
                       "    0    10");                               // 10 cut
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().records, 2u);
  EXPECT_EQ(Count(run, DiagCode::kHwBadRecord), 6u);
  EXPECT_EQ(Lines(run, DiagCode::kHwBadRecord), (std::vector<uint64_t>{4, 5, 6, 7, 8}));
  const GpuRecord& g = Gpu(run, 0);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[1].power_w, 101.0);
  EXPECT_EQ(g.samples[1].src.line, 9u);
}

TEST(NvidiaSmiDmonCorruptionTest, UnreadableDateAndChangedTimeColumnsAreBadRows) {
  auto in = IngestText("dmon.txt",
                       "#Date       Time        gpu    pwr\n"
                       "#YYYYMMDD   HH:MM:SS    Idx      W\n"
                       " 20241399   10:00:00      0    100\n"  // 3 month 13
                       " 20240301   10:00:00      0    100\n"
                       "# gpu    pwr\n"
                       "# Idx      W\n"
                       "    0    100\n");  // 7 no time now
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().records, 1u);
  EXPECT_EQ(Lines(run, DiagCode::kHwBadRecord), (std::vector<uint64_t>{3, 7}));
  EXPECT_FALSE(Gpu(run, 0).time_is_approximate);
}

TEST(NvidiaSmiDmonCorruptionTest, TruncatedAfterHeaderYieldsNoGpu) {
  auto in = IngestText("dmon.txt", "# gpu    pwr\n# Idx      W\n");
  EXPECT_EQ(in->file().format, "nvidia-smi-dmon");
  EXPECT_EQ(in->file().records, 0u);
  EXPECT_TRUE(in->run.hardware.gpus.empty());
  EXPECT_EQ(Count(in->run, DiagCode::kHwNoHost), 0u);
}

// ---------------------------------------------------------------- --query-gpu

// The straggler article's own field list, as nvidia-smi prints its header.
const char kArticleQuery[] =
    "index, utilization.gpu [%], clocks.current.sm [MHz], temperature.gpu, power.draw [W], "
    "pcie.link.gen.current, pcie.link.width.current\n"
    "0, 98 %, 1980 MHz, 64, 690.12 W, 5, 16\n"
    "1, 97 %, 1980 MHz, 66, 688.40 W, 5, 16\n"
    "2, 71 %, 1305 MHz, 91, 701.55 W, 5, 16\n"
    "3, 98 %, 1980 MHz, 65, 689.00 W, 4, 8\n";

TEST(NvidiaSmiQueryCsvTest, ArticleFieldListWithUnits) {
  auto in = IngestText("query.csv", kArticleQuery);
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().format, "nvidia-smi-query-gpu");
  EXPECT_EQ(in->file().records, 4u);
  ASSERT_EQ(run.hardware.gpus.size(), 4u);
  const GpuRecord& g2 = Gpu(run, 2);
  EXPECT_EQ(g2.host, "node-07");
  ASSERT_EQ(g2.samples.size(), 1u);
  EXPECT_EQ(g2.samples[0].util_pct, 71.0);
  EXPECT_EQ(g2.samples[0].sm_clock_mhz, 1305.0);
  EXPECT_EQ(g2.samples[0].temp_c, 91.0);
  EXPECT_EQ(g2.samples[0].power_w, 701.55);
  EXPECT_EQ(g2.samples[0].pcie_gen, 5);
  EXPECT_EQ(g2.samples[0].pcie_width, 16);
  const GpuRecord& g3 = Gpu(run, 3);
  EXPECT_EQ(g3.facts.pcie_gen_current, 4);
  EXPECT_EQ(g3.facts.pcie_width_current, 8);
  EXPECT_EQ(g3.samples[0].src.line, 5u);
  EXPECT_TRUE(g3.time_is_approximate);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 1u);
  EXPECT_EQ(Count(run, DiagCode::kHwNoGpuId), 0u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQueryCsvTest, ArticleFieldListNounitsAndQueryNamesInHeader) {
  // csv,nounits drops the units from values; a header written with the
  // query's short names (clocks.sm) reads the same.
  auto in = IngestText("query.csv",
                       "index,utilization.gpu,clocks.sm,temperature.gpu,power.draw,"
                       "pcie.link.gen.current,pcie.link.width.current\n"
                       "0, 98, 1980, 64, 690.12, 5, 16\n");
  const GpuSample& s = Gpu(in->run, 0).samples.at(0);
  EXPECT_EQ(s.util_pct, 98.0);
  EXPECT_EQ(s.sm_clock_mhz, 1980.0);
  EXPECT_EQ(s.power_w, 690.12);
  EXPECT_EQ(s.pcie_width, 16);
}

TEST(NvidiaSmiQueryCsvTest, LoopedWithTimestampsAndFacts) {
  auto in = IngestText(
      "query.csv",
      "timestamp, index, name, uuid, pci.bus_id, temperature.gpu, temperature.memory, "
      "clocks.current.sm [MHz], clocks.current.memory [MHz], clocks.max.sm [MHz], "
      "clocks.applications.graphics [MHz], power.draw [W], power.limit [W], "
      "enforced.power.limit [W], power.default_limit [W], power.min_limit [W], "
      "power.max_limit [W], utilization.memory [%], pcie.link.gen.gpucurrent, "
      "pcie.link.gen.max, pcie.link.gen.gpumax, pcie.link.gen.hostmax, pcie.link.width.max, "
      "clocks_event_reasons.active\n"
      "2024/01/31 12:34:56.789, 0, NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:18:00.0, 45, 52, "
      "1980 MHz, 2619 MHz, 1980 MHz, 1755 MHz, 690.12 W, 700.00 W, 500.00 W, 700.00 W, "
      "200.00 W, 700.00 W, 40 %, 5, 4, 5, 4, 16, 0x0000000000000004\n"
      "2024/01/31 12:34:57.790, 0, NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:18:00.0, [N/A], "
      "[Not Supported], 1755 MHz, 2619 MHz, 1980 MHz, 1755 MHz, [Unknown Error], 700.00 W, "
      "500.00 W, 700.00 W, 200.00 W, 700.00 W, 41 %, 5, 4, 5, 4, 16, 0x0000000000000000\n");
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().records, 2u);
  const GpuRecord& g = Gpu(run, 0);
  EXPECT_EQ(g.uuid, "GPU-aaaa");
  EXPECT_EQ(g.bus_id, "00000000:18:00.0");
  EXPECT_EQ(g.facts.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.facts.max_sm_clock_mhz, 1980.0);
  EXPECT_EQ(g.facts.app_sm_clock_mhz, 1755.0);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 500.0);
  EXPECT_EQ(g.facts.default_power_limit_w, 700.0);
  EXPECT_EQ(g.facts.min_power_limit_w, 200.0);
  EXPECT_EQ(g.facts.max_power_limit_w, 700.0);
  EXPECT_EQ(g.facts.pcie_gen_current, 5);
  EXPECT_EQ(g.facts.pcie_gen_max, 5);  // gpumax, not the host-limited max
  EXPECT_EQ(g.facts.pcie_gen_host_max, 4);
  EXPECT_EQ(g.facts.pcie_width_max, 16);
  EXPECT_EQ(g.facts.src->line, 2u);
  EXPECT_FALSE(g.time_is_approximate);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[0].time_ns, At("2024-01-31T12:34:56.789Z"));
  EXPECT_EQ(g.samples[1].time_ns, At("2024-01-31T12:34:57.790Z"));
  EXPECT_EQ(g.samples[0].power_limit_w, 500.0);
  EXPECT_EQ(g.samples[0].clock_events, clock_event::kSwPowerCap);
  EXPECT_EQ(g.samples[1].clock_events, 0u);
  EXPECT_EQ(g.samples[0].mem_temp_c, 52.0);
  EXPECT_FALSE(g.samples[1].temp_c.has_value());
  EXPECT_FALSE(g.samples[1].mem_temp_c.has_value());
  EXPECT_FALSE(g.samples[1].power_w.has_value());
  EXPECT_EQ(g.samples[1].sm_clock_mhz, 1755.0);
  EXPECT_EQ(g.samples[1].mem_util_pct, 41.0);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 0u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQueryCsvTest, IndividualClockEventReasonsBecomeBits) {
  auto in = IngestText("query.csv",
                       "index, clocks_throttle_reasons.sw_power_cap, "
                       "clocks_throttle_reasons.hw_thermal_slowdown, "
                       "clocks_event_reasons.sw_thermal_slowdown\n"
                       "0, Active, Active, Not Active\n"
                       "1, Not Active, Not Active, Not Active\n"
                       "2, [N/A], [N/A], [N/A]\n");
  const laggard::Run& run = in->run;
  EXPECT_EQ(Gpu(run, 0).samples.at(0).clock_events,
            clock_event::kSwPowerCap | clock_event::kHwThermalSlowdown);
  EXPECT_EQ(Gpu(run, 1).samples.at(0).clock_events, 0u);
  EXPECT_FALSE(Gpu(run, 2).samples.at(0).clock_events.has_value());
}

TEST(NvidiaSmiQueryCsvTest, LoopWithoutTimestampUsesTheCapturedInterval) {
  auto in = IngestText("query.csv",
                       "$ nvidia-smi --query-gpu=index,temperature.gpu --format=csv -lms 250\n"
                       "index, temperature.gpu\n"
                       "0, 40\n1, 41\n0, 42\n1, 43\n0, 44\n1, 45\n");
  const laggard::Run& run = in->run;
  const GpuRecord& g1 = Gpu(run, 1);
  ASSERT_EQ(g1.samples.size(), 3u);
  EXPECT_EQ(g1.samples[2].time_ns, 500'000'000);
  EXPECT_EQ(g1.samples[2].temp_c, 45.0);
  EXPECT_TRUE(g1.time_is_approximate);
}

TEST(NvidiaSmiQueryCsvTest, GpusWithoutIndexAreNumberedByUuidInOrder) {
  auto in = IngestText("query.csv",
                       "uuid, temperature.gpu\n"
                       "GPU-bbbb, 50\nGPU-aaaa, 60\nGPU-bbbb, 51\nGPU-aaaa, 61\n");
  const laggard::Run& run = in->run;
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  EXPECT_EQ(Gpu(run, 0).uuid, "GPU-bbbb");
  EXPECT_EQ(Gpu(run, 1).uuid, "GPU-aaaa");
  EXPECT_EQ(Gpu(run, 1).samples.at(1).temp_c, 61.0);
  EXPECT_EQ(Gpu(run, 1).samples.at(1).time_ns, kSecond);
  EXPECT_EQ(Count(run, DiagCode::kHwNoGpuId), 0u);
}

TEST(NvidiaSmiQueryCsvTest, RepeatedAndChangedHeadersStartNewLayouts) {
  auto in = IngestText("query.csv",
                       "index, temperature.gpu\n"
                       "0, 40\n"
                       "index, temperature.gpu\n"
                       "0, 41\n"
                       "index, power.draw [W], temperature.gpu\n"
                       "0, 300.00 W, 42\n");
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().records, 3u);
  const GpuRecord& g = Gpu(run, 0);
  ASSERT_EQ(g.samples.size(), 3u);
  EXPECT_EQ(g.samples[2].temp_c, 42.0);
  EXPECT_EQ(g.samples[2].power_w, 300.0);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQueryCsvTest, IdentityOnlyQueryGivesFactsWithoutSamples) {
  auto in = IngestText("gpus.csv",
                       "index, name, uuid, pcie.link.width.max\n"
                       "0, NVIDIA A100-SXM4-80GB, GPU-aaaa, 16\n"
                       "1, NVIDIA A100-SXM4-80GB, GPU-bbbb, 16\n");
  const laggard::Run& run = in->run;
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  EXPECT_TRUE(Gpu(run, 1).samples.empty());
  EXPECT_EQ(Gpu(run, 1).uuid, "GPU-bbbb");
  EXPECT_EQ(Gpu(run, 1).facts.pcie_width_max, 16);
  EXPECT_EQ(Count(run, DiagCode::kHwApproximateTime), 0u);
}

TEST(NvidiaSmiQueryCsvTest, UnknownFieldIsNotedOnceAndNvidiaSmiFieldsAreQuiet) {
  auto in = IngestText("query.csv",
                       "index, temperature.gpu, fan.speed [%], pstate, my.custom.metric\n"
                       "0, 40, 30 %, P0, 7\n"
                       "index, temperature.gpu, fan.speed [%], pstate, my.custom.metric\n"
                       "0, 41, 30 %, P0, 7\n");
  const laggard::Run& run = in->run;
  EXPECT_EQ(Count(run, DiagCode::kHwUnknownField), 1u);
  ASSERT_EQ(run.diagnostics.examples(DiagCode::kHwUnknownField).size(), 1u);
  EXPECT_NE(run.diagnostics.examples(DiagCode::kHwUnknownField)[0].message.find("my.custom.metric"),
            std::string::npos);
  EXPECT_EQ(Gpu(run, 0).samples.size(), 2u);
}

TEST(NvidiaSmiQueryCsvTest, NoheaderOutputIsSkippedWithTheFix) {
  auto in = IngestText("query.csv",
                       "2024/01/31 12:34:56.789, 0, 45, 1410 MHz, 250.00 W\n"
                       "2024/01/31 12:34:56.790, 1, 47, 1410 MHz, 251.00 W\n");
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().format, "nvidia-smi-query-gpu");
  EXPECT_EQ(in->file().records, 0u);
  EXPECT_TRUE(run.hardware.gpus.empty());
  ASSERT_EQ(Count(run, DiagCode::kCsvNoHeader), 1u);
  const DiagExample& e = run.diagnostics.examples(DiagCode::kCsvNoHeader)[0];
  EXPECT_EQ(e.line, 1u);
  EXPECT_NE(e.message.find("without noheader"), std::string::npos);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQueryCsvTest, OtherQueriesAndStepCsvAreNotClaimed) {
  Readers r;
  EXPECT_EQ(r.query->Sniff("pid, process_name, used_gpu_memory [MiB]\n1234, python, 500 MiB\n"), 0);
  EXPECT_EQ(r.query->Sniff("gpu_uuid, pid, used_memory [MiB]\nGPU-aaaa, 1234, 500 MiB\n"), 0);
  EXPECT_EQ(r.query->Sniff("gpu_name, gpu_bus_id, memory [MHz], graphics [MHz]\n"
                           "NVIDIA A100, 00000000:18:00.0, 1593 MHz, 1410 MHz\n"),
            0);
  EXPECT_EQ(r.query->Sniff("rank,step,step_time_ms\n0,1,812.3\n"), 0);
  EXPECT_EQ(r.query->Sniff("3,100,0.81\n"), 0);  // a plain numeric CSV is not noheader output
  EXPECT_EQ(r.dmon->Sniff(kArticleQuery), 0);
  EXPECT_EQ(r.nvlink->Sniff(kArticleQuery), 0);
}

TEST(NvidiaSmiQueryCsvCorruptionTest, BadRowsAreCountedAndTheRestKept) {
  auto in = IngestText("query.csv",
                       "timestamp, index, temperature.gpu, power.draw [W]\n"   // 1
                       "2024/01/31 12:00:00.000, 0, 45, 250.00 W\n"            // 2
                       "2024/01/31 12:00:01.000, 0, 45\n"                      // 3 short
                       "2024/01/31 12:00:02.000, 0, hot, 250.00 W\n"           // 4 garbled
                       "2024/01/31 12:00:03.000, 0, 45, 250.00 MHz\n"          // 5 wrong unit
                       "yesterday, 0, 45, 250.00 W\n"                          // 6 bad time
                       "2024/01/31 12:00:05.000, [N/A], 45, 250.00 W\n"        // 7 no index
                       "2024/01/31 12:00:06.000, 0, [N/A], [Not Supported]\n"  // 8 fine
                       "2024/01/31 12:00:07.000, 0, 4");                       // 9 cut
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().records, 2u);
  EXPECT_EQ(Count(run, DiagCode::kHwBadRecord), 6u);
  EXPECT_EQ(Lines(run, DiagCode::kHwBadRecord), (std::vector<uint64_t>{3, 4, 5, 6, 7}));
  const GpuRecord& g = Gpu(run, 0);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_FALSE(g.samples[1].temp_c.has_value());
  EXPECT_FALSE(g.samples[1].power_w.has_value());
  EXPECT_EQ(g.samples[1].src.line, 8u);
}

// ---------------------------------------------------------------- nvlink

TEST(NvlinkStatusTest, InactiveAndSlowLinksAreCounted) {
  auto in =
      IngestText("nvlink.txt",
                 "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)\n"
                 "\t Link 0: 26.562 GB/s\n"
                 "\t Link 1: 26.562 GB/s\n"
                 "\t Link 2: <inactive>\n"
                 "\t Link 3: 13.281 GB/s\n"
                 "\t Link 4: 0 GB/s\n"
                 "GPU 1: NVIDIA H100 PCIe\n"
                 "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-2222)\n"
                 "\t Link 0: 26.562 GB/s\n");
  const laggard::Run& run = in->run;
  EXPECT_EQ(in->file().format, "nvidia-smi-nvlink");
  EXPECT_EQ(in->file().records, 3u);
  const GpuRecord& g0 = Gpu(run, 0);
  EXPECT_EQ(g0.host, "node-07");
  EXPECT_EQ(g0.uuid, "GPU-abcdefab-cdef-abdc-abcd-abababababab");
  EXPECT_EQ(g0.facts.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g0.facts.nvlink_total, 5);
  EXPECT_EQ(g0.facts.nvlink_up, 3);
  EXPECT_EQ(g0.facts.nvlink_speed_gb_s, 13.281);  // the slowest active link
  const GpuRecord& g1 = Gpu(run, 1);
  EXPECT_FALSE(g1.uuid.has_value());
  EXPECT_EQ(g1.facts.name, "NVIDIA H100 PCIe");
  EXPECT_EQ(g1.facts.nvlink_total, 0);
  EXPECT_EQ(g1.facts.nvlink_up, 0);
  EXPECT_FALSE(g1.facts.nvlink_speed_gb_s.has_value());
  EXPECT_EQ(Gpu(run, 2).facts.nvlink_up, 1);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvlinkStatusTest, OtherNvlinkSubcommandsAreNotClaimed) {
  Readers r;
  EXPECT_EQ(r.nvlink->Sniff("GPU 0: NVIDIA H100 80GB HBM3\n"
                            "\t Link 0: Replay Errors: 0\n"
                            "\t Link 0: Recovery Errors: 0\n"),
            0);
  EXPECT_EQ(r.nvlink->Sniff("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-aaaa)\n"
                            "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-bbbb)\n"),
            0);  // nvidia-smi -L
  EXPECT_EQ(r.dmon->Sniff("GPU 0: X (UUID: GPU-a)\n\t Link 0: 25 GB/s\n"), 0);
  EXPECT_EQ(r.query->Sniff("GPU 0: X (UUID: GPU-a)\n\t Link 0: 25 GB/s\n"), 0);
}

TEST(NvlinkStatusCorruptionTest, StrayLinesAreBadRecords) {
  auto in = IngestText("nvlink.txt",
                       "\t Link 0: 25 GB/s\n"  // 1 before any GPU
                       "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-a)\n"
                       "\t Link 0: 25 GB/s\n"
                       "\t Link 1: 25 GB/\n"  // 4 cut
                       "\t Link 2: 25 GB/s\n"
                       "\t Link 3: 2");  // 6 cut
  const laggard::Run& run = in->run;
  EXPECT_EQ(Lines(run, DiagCode::kHwBadRecord), (std::vector<uint64_t>{1, 4, 6}));
  EXPECT_EQ(Gpu(run, 0).facts.nvlink_total, 2);
  EXPECT_EQ(Gpu(run, 0).facts.nvlink_up, 2);
}

TEST(NvlinkStatusTest, SameGpuTwiceWithDifferentLinksIsAConflict) {
  auto in = IngestText("nvlink.txt",
                       "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-a)\n"
                       "\t Link 0: 25 GB/s\n"
                       "\t Link 1: 25 GB/s\n"
                       "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-a)\n"
                       "\t Link 0: 25 GB/s\n"
                       "\t Link 1: <inactive>\n");
  const laggard::Run& run = in->run;
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  EXPECT_EQ(Gpu(run, 0).facts.nvlink_up, 2);  // the first capture's value is kept
  EXPECT_EQ(Count(run, DiagCode::kHwConflictingFacts), 1u);
}

TEST(RowGroupClockTest, AGroupEndsWhenAGpuRepeats) {
  RowGroupClock clock;
  EXPECT_EQ(clock.Next(0, kSecond), 0);
  EXPECT_EQ(clock.Next(1, kSecond), 0);
  EXPECT_EQ(clock.Next(0, kSecond), kSecond);
  EXPECT_EQ(clock.Next(1, kSecond), kSecond);
  EXPECT_EQ(clock.Next(1, kSecond), 2 * kSecond);
}

TEST(RowGroupClockTest, ATimePastTheRangeIsNone) {
  RowGroupClock clock;
  EXPECT_EQ(clock.Next(0, INT64_MAX), 0);
  EXPECT_EQ(clock.Next(0, INT64_MAX), INT64_MAX);
  EXPECT_FALSE(clock.Next(0, INT64_MAX).has_value());
}

}  // namespace
}  // namespace laggard
