// The nvidia-smi text readers: `nvidia-smi -q` / `-a` (MakeNvidiaSmiQReader)
// and the default table (MakeNvidiaSmiTableReader). Every corpus file of
// both formats with values read off the files by hand, synthetic old-driver
// and repeated (-l) outputs, and a corruption suite.
//
// Corpus dates as epoch seconds (UTC), from Python's calendar.timegm:
//   Fri Feb 23 11:51:29 2024 -> 1708689089   Fri Feb 23 11:51:11 2024 -> 1708689071
//   Thu Nov 14 10:45:47 2024 -> 1731581147   Thu Nov 14 07:00:14 2024 -> 1731567614
//   Thu Nov 14 10:19:08 2024 -> 1731579548   Wed Sep 25 10:40:24 2024 -> 1727260824
//   Sat Jul  6 15:09:26 2024 -> 1720278566   Fri Jun 21 02:03:08 2024 -> 1718935388
//   Sun Oct 27 22:56:23 2019 -> 1572216983   Mon Jan 20 10:18:26 2025 -> 1737368306
//   Mon Nov  5 14:50:59 2018 -> 1541429459

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/analyze_run.h"
#include "base/text.h"
#include "ingest/common/input_file.h"
#include "ingest/nvidia_smi/nvidia_smi_text.h"
#include "ingest/readers.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadFile;
using testing_util::TempDir;
using testing_util::WriteFile;

constexpr int64_t kSec = 1'000'000'000;

std::string Corpus(const std::string& name) {
  return std::string(LAGGARD_CORPUS_DIR) + "/nvidia_smi/" + name;
}

#define REQUIRE_CORPUS_FILE(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared corpus not found: " << path

struct ReadResult {
  Run run;
  uint64_t taken = 0;
  const GpuRecord& gpu(int32_t index) const {
    for (const GpuRecord& g : run.hardware.gpus) {
      if (g.index == index) return g;
    }
    ADD_FAILURE() << "no GPU " << index;
    static const GpuRecord kNone;
    return kNone;
  }
  uint64_t count(DiagCode code) const { return run.diagnostics.count(code); }
  std::vector<uint64_t> lines(DiagCode code) const {
    std::vector<uint64_t> out;
    for (const DiagExample& e : run.diagnostics.examples(code)) out.push_back(e.line);
    return out;
  }
};

// Reads one file with `reader` alone, as Ingest would after sniffing.
ReadResult ReadWith(const TextReader& reader, const std::string& path,
                    std::optional<std::string> host = "node-a") {
  ReadResult result;
  auto source = OpenByteSource(path);
  EXPECT_TRUE(source.ok()) << path;
  if (!source.ok()) return result;
  LineReader lines(**source);
  RunBuilder builder;
  ReaderContext ctx;
  ctx.file_index = 0;
  ctx.path = path;
  ctx.host_from_path = host;
  ctx.out = &builder;
  result.taken = reader.Read(lines, ctx);
  result.run.files.push_back(InputFileInfo{path, std::string(reader.name()), lines.bytes(),
                                           result.taken, result.taken > 0});
  builder.Finalize(result.run);
  return result;
}

ReadResult ReadQ(const std::string& path, std::optional<std::string> host = "node-a") {
  return ReadWith(*MakeNvidiaSmiQReader(), path, host);
}
ReadResult ReadTable(const std::string& path, std::optional<std::string> host = "node-a") {
  return ReadWith(*MakeNvidiaSmiTableReader(), path, host);
}

// Writes `text` to a temporary file and reads it.
class Text {
 public:
  explicit Text(const std::string& text) : path_(WriteFile(dir_.File("smi.txt"), text)) {}
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_;
};
ReadResult ReadQText(const std::string& text) { return ReadQ(Text(text).path()); }
ReadResult ReadTableText(const std::string& text) { return ReadTable(Text(text).path()); }

// 1-based number of the first line of `text` containing `needle`.
uint64_t LineOf(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<uint64_t>(std::count(text.begin(), text.begin() + at, '\n'));
}

// Everything up to (not including) the line containing `needle`, plus
// `tail` (a cut line, or nothing).
std::string CutBefore(const std::string& text, const std::string& needle,
                      const std::string& tail = "") {
  size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return text.substr(0, text.rfind('\n', at) + 1) + tail;
}

// An old-driver (410-era) `nvidia-smi -q`: Clocks Throttle Reasons, Power
// Readings with an Enforced Power Limit below the Power Limit, Double Bit
// ECC totals, absolute thermal thresholds, and a throttled, narrowed link.
const std::string kOldQ = R"(
==============NVSMI LOG==============

Timestamp                           : Mon Nov  5 14:50:59 2018
Driver Version                      : 410.48

Attached GPUs                       : 2
GPU 00000000:3B:00.0
    Product Name                    : Tesla V100-SXM2-16GB
    Serial Number                   : 0323017001234
    GPU UUID                        : GPU-00000000-1111-2222-3333-444444444444
    Minor Number                    : 1
    PCI
        Bus Id                      : 00000000:3B:00.0
        GPU Link Info
            PCIe Generation
                Max                 : 3
                Current             : 1
            Link Width
                Max                 : 16x
                Current             : 8x
        Tx Throughput               : 2000 KB/s
        Rx Throughput               : 12000 KB/s
    Performance State               : P0
    Clocks Throttle Reasons
        Idle                        : Not Active
        Applications Clocks Setting : Not Active
        SW Power Cap                : Active
        HW Slowdown                 : Active
            HW Thermal Slowdown     : Active
            HW Power Brake Slowdown : Not Active
        Sync Boost                  : Not Active
        SW Thermal Slowdown         : Not Active
        Display Clock Setting       : Not Active
    Utilization
        Gpu                         : 97 %
        Memory                      : 41 %
    ECC Errors
        Volatile
            Single Bit            
                Device Memory       : 7
                Total               : 7
            Double Bit            
                Device Memory       : 2
                Register File       : 0
                Total               : 2
        Aggregate
            Single Bit            
                Total               : 30
            Double Bit            
                Total               : 5
    Retired Pages
        Single Bit ECC              : 1
        Double Bit ECC              : 3
        Pending                     : Yes
    Temperature
        GPU Current Temp            : 84 C
        GPU Shutdown Temp           : 90 C
        GPU Slowdown Temp           : 87 C
        GPU Max Operating Temp      : 83 C
        Memory Current Temp         : 80 C
        Memory Max Operating Temp   : 85 C
    Power Readings
        Power Management            : Supported
        Power Draw                  : 199.50 W
        Power Limit                 : 300.00 W
        Default Power Limit         : 300.00 W
        Enforced Power Limit        : 200.00 W
        Min Power Limit             : 150.00 W
        Max Power Limit             : 300.00 W
    Clocks
        Graphics                    : 1245 MHz
        SM                          : 1245 MHz
        Memory                      : 877 MHz
        Video                       : 1117 MHz
    Applications Clocks
        Graphics                    : 1312 MHz
        Memory                      : 877 MHz
    Max Clocks
        Graphics                    : 1530 MHz
        SM                          : 1530 MHz
        Memory                      : 877 MHz
        Video                       : 1372 MHz
    Processes
        Process ID                  : 4242
            Type                    : C
            Name                    : python
            Used GPU Memory         : 15000 MiB
GPU 00000000:3C:00.0
    Product Name                    : Tesla V100-SXM2-16GB
    Minor Number                    : 0
    Temperature
        GPU Current Temp            : 50 C
    Processes                       : None
)";

// A new-layout table (545+) with a date, two GPUs and a process.
const std::string kTable = R"(Mon Jan 29 10:41:38 2024       
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.54.03              Driver Version: 535.54.03    CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |
| N/A   32C    P0              69W / 700W |      4MiB / 81559MiB |      0%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  | 00000000:2A:00.0 Off |                    2 |
| N/A   71C    P2             512W / 600W |  70012MiB / 81559MiB |     98%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+
                                                                                         
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    1   N/A  N/A     12345      C   python                                    70000MiB |
+---------------------------------------------------------------------------------------+
)";

// ---------------------------------------------------------------------------
// Sniffing

struct SniffCase {
  const char* file;
  const char* format;  // "q", "table" or "" (neither)
};

TEST(NvidiaSmiSniff, EachCorpusFileGoesToItsReaderOnly) {
  const SniffCase kCases[] = {
      {"nvidia_smi_a_H100_della_pli.txt", "q"},
      {"thamada_A100SXMx4_nvidia_smi_a.txt", "q"},
      {"thamada_H100SXMx8_nvidia_smi_a.txt", "q"},
      {"thamada_RTX6000Ada_x8_nvidia_smi_a.txt", "q"},
      {"gpud_nvidia-smi-query.535.129.03.out.0.valid.a10.txt", "q"},
      {"gpud_nvidia-smi-query.535.154.05.out.0.valid.txt", "q"},
      {"gpud_nvidia-smi-query.535.183.01.out.0.valid.txt", "q"},
      {"gpud_nvidia-smi-query.535.183.01.out.0.invalid.txt", "q"},
      {"nvidia_smi_default_4xP100_tiger_418.txt", "table"},
      {"nvidia_smi_default_H100_della_pli.txt", "table"},
      {"thamada_A100SXMx4_nvidia_smi.txt", "table"},
      {"thamada_A40x10_nvidia_smi.txt", "table"},
      {"thamada_H100SXMx8_nvidia_smi.txt", "table"},
      {"thamada_RTX6000Ada_x8_nvidia_smi.txt", "table"},
      {"gpud_nvidia-smi.525.125.06.out.0.valid.txt", "table"},
      {"gpud_nvidia-smi.550.90.07.out.0.valid.txt", "table"},
      {"gpud_nvidia-smi.nvlink.status.a100.txt", ""},
      {"dmon_c1_GB10_mclk_dash.txt", ""},
      {"dmon_s_mutc_o_TD_blog.txt", ""},
      {"dmon_s_pucet_o_DT_blog.txt", ""},
      {"dmon_s_pucm_fb_bar1_ccpm.txt", ""},
      {"query_gpu_csv_lms_A10_blog.txt", ""},
      {"topo_m_2x1080ti_blog.txt", ""},
      {"topo_m_4xA10_2nic_blog.txt", ""},
      {"topo_m_8xH100_della_pli_tabs.txt", ""},
  };
  REQUIRE_CORPUS_FILE(Corpus(kCases[0].file));
  auto q = MakeNvidiaSmiQReader();
  auto table = MakeNvidiaSmiTableReader();
  auto defaults = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(defaults.ok());
  for (const SniffCase& c : kCases) {
    SCOPED_TRACE(c.file);
    auto head = ReadHead(Corpus(c.file), kSniffBytes);
    ASSERT_TRUE(head.ok());
    std::string_view format = c.format;
    EXPECT_EQ(q->Sniff(*head) > 0, format == "q");
    EXPECT_EQ(table->Sniff(*head) > 0, format == "table");
    if (format.empty()) continue;
    // Ours beats every other default reader (the text-log reader claims
    // any text).
    const TextReader* best = nullptr;
    int best_score = 0;
    for (const TextReader* r : defaults->readers) {
      int score = r->Sniff(*head);
      if (score > best_score) best = r, best_score = score;
    }
    ASSERT_NE(best, nullptr);
    EXPECT_EQ(best->name(), format == "q" ? "nvidia-smi-q" : "nvidia-smi-table");
  }
}

TEST(NvidiaSmiSniff, OtherCorpusTextIsNotClaimed) {
  const std::string root = std::string(LAGGARD_CORPUS_DIR);
  REQUIRE_CORPUS_FILE(root + "/dcgm");
  auto q = MakeNvidiaSmiQReader();
  auto table = MakeNvidiaSmiTableReader();
  int files = 0;
  for (const char* dir :
       {"dcgm", "ib_eth", "nccl_debug", "nccl_tests", "training_logs", "kineto", "nsys_sqlite"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root + "/" + dir)) {
      SCOPED_TRACE(entry.path().string());
      auto head = ReadHead(entry.path().string(), kSniffBytes);
      ASSERT_TRUE(head.ok());
      EXPECT_EQ(q->Sniff(*head), 0);
      EXPECT_EQ(table->Sniff(*head), 0);
      ++files;
    }
  }
  EXPECT_GT(files, 10);
}

TEST(NvidiaSmiSniff, GpuHeadingWithoutBannerIsQ) {
  auto q = MakeNvidiaSmiQReader();
  EXPECT_EQ(q->Sniff("GPU 00000000:19:00.0\n    Temperature\n        GPU Current Temp : 33 C\n"),
            90);
  // `nvidia-smi nvlink --status` and `-L` name GPUs by index, not bus id.
  EXPECT_EQ(q->Sniff("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708)\n"
                     "         Link 0: 25 GB/s\n"),
            0);
  EXPECT_EQ(q->Sniff("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708)\n"), 0);
}

// ---------------------------------------------------------------------------
// nvidia-smi -q: corpus

TEST(NvidiaSmiQCorpus, H100DellaNewWordingGivesFactsAndOneSample) {
  const std::string path = Corpus("nvidia_smi_a_H100_della_pli.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadQ(path);
  EXPECT_EQ(r.taken, 1u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.host, "node-a");
  EXPECT_EQ(g.bus_id, "00000000:19:00.0");
  EXPECT_EQ(g.uuid, "GPU-10f35015-e921-bfab-2eb8-4e9b6664d5f1");
  EXPECT_FALSE(g.time_is_approximate);
  const GpuFacts& f = g.facts;
  EXPECT_EQ(f.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(f.serial, "1654123038646");
  EXPECT_EQ(f.driver_version, "545.23.08");
  EXPECT_EQ(f.enforced_power_limit_w, 700.0);  // "Current Power Limit" in this wording
  EXPECT_EQ(f.default_power_limit_w, 700.0);
  EXPECT_EQ(f.min_power_limit_w, 200.0);
  EXPECT_EQ(f.max_power_limit_w, 700.0);
  EXPECT_EQ(f.max_sm_clock_mhz, 1980.0);
  EXPECT_EQ(f.max_mem_clock_mhz, 2619.0);
  EXPECT_EQ(f.app_sm_clock_mhz, 1980.0);
  EXPECT_EQ(f.pcie_gen_current, 5);
  EXPECT_EQ(f.pcie_gen_max, 5);
  EXPECT_EQ(f.pcie_gen_host_max, 5);
  EXPECT_EQ(f.pcie_width_current, 16);
  EXPECT_EQ(f.pcie_width_max, 16);
  EXPECT_EQ(f.ecc_uncorrected_volatile, 0);
  EXPECT_EQ(f.ecc_uncorrected_aggregate, 0);
  EXPECT_EQ(f.retired_pages_dbe, std::nullopt);  // "N/A" on Hopper (row remapping instead)
  EXPECT_EQ(f.retired_pages_pending, std::nullopt);
  EXPECT_EQ(f.remapped_rows_uncorrectable, 0);
  EXPECT_EQ(f.remapped_rows_pending, false);
  EXPECT_EQ(f.remapping_failure, false);
  // T.Limit offsets ("GPU Slowdown T.Limit Temp : -2 C") are not temperatures.
  EXPECT_EQ(f.slowdown_temp_c, std::nullopt);
  EXPECT_EQ(f.shutdown_temp_c, std::nullopt);
  EXPECT_EQ(f.max_operating_temp_c, std::nullopt);
  ASSERT_TRUE(f.src.has_value());
  EXPECT_EQ(f.src->line, 7u);
  ASSERT_EQ(g.samples.size(), 1u);
  const GpuSample& s = g.samples[0];
  EXPECT_EQ(s.time_ns, 1708689089 * kSec);
  EXPECT_EQ(s.temp_c, 33.0);
  EXPECT_EQ(s.mem_temp_c, 41.0);
  EXPECT_EQ(s.power_w, 72.02);  // GPU Power Readings, not GPU Memory Power Readings (47.78)
  EXPECT_EQ(s.power_limit_w, 700.0);
  EXPECT_EQ(s.sm_clock_mhz, 345.0);
  EXPECT_EQ(s.mem_clock_mhz, 2619.0);
  EXPECT_EQ(s.util_pct, 0.0);
  EXPECT_EQ(s.mem_util_pct, 0.0);
  EXPECT_DOUBLE_EQ(s.pcie_tx_mb_s.value_or(-1), 0.464);
  EXPECT_DOUBLE_EQ(s.pcie_rx_mb_s.value_or(-1), 2.593);
  EXPECT_EQ(s.pcie_gen, 5);
  EXPECT_EQ(s.pcie_width, 16);
  EXPECT_EQ(s.clock_events, clock_event::kGpuIdle);
  EXPECT_EQ(s.perf_state, 0);
  EXPECT_EQ(s.src.line, 7u);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(r.count(DiagCode::kHwUnknownField), 0u);
  EXPECT_EQ(r.count(DiagCode::kHwNoHost), 0u);
}

TEST(NvidiaSmiQCorpus, A100x4IndexIsBlockOrderNotMinorNumber) {
  const std::string path = Corpus("thamada_A100SXMx4_nvidia_smi_a.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadQ(path);
  EXPECT_EQ(r.taken, 4u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 4u);
  // Minor numbers are 3, 4, 5, 6; the table of the same machine numbers
  // these GPUs 0..3 in this order.
  EXPECT_EQ(r.gpu(0).bus_id, "00000000:68:00.0");
  EXPECT_EQ(r.gpu(1).bus_id, "00000000:9E:00.0");
  EXPECT_EQ(r.gpu(2).bus_id, "00000000:C2:00.0");
  EXPECT_EQ(r.gpu(3).bus_id, "00000000:D4:00.0");
  const GpuFacts& f = r.gpu(0).facts;
  EXPECT_EQ(f.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(f.driver_version, "555.42.02");
  EXPECT_EQ(f.enforced_power_limit_w, 500.0);
  EXPECT_EQ(f.max_sm_clock_mhz, 1410.0);
  EXPECT_EQ(f.pcie_gen_max, 4);       // Device Max
  EXPECT_EQ(f.pcie_gen_host_max, 5);  // a Gen5 host slot
  EXPECT_EQ(f.pcie_gen_current, 4);
  // GPU 1 has 353 correctable DRAM errors and no uncorrectable one.
  EXPECT_EQ(r.gpu(1).facts.ecc_uncorrected_volatile, 0);
  EXPECT_EQ(r.gpu(1).facts.ecc_uncorrected_aggregate, 0);
  const GpuSample& s = r.gpu(0).samples.at(0);
  EXPECT_EQ(s.time_ns, 1731581147 * kSec);
  EXPECT_EQ(s.power_w, 59.77);
  EXPECT_EQ(s.temp_c, 25.0);
  EXPECT_EQ(s.mem_temp_c, 43.0);
  EXPECT_EQ(s.sm_clock_mhz, 210.0);
  EXPECT_EQ(r.gpu(1).samples.at(0).power_w, 60.31);
  EXPECT_EQ(r.gpu(1).samples.at(0).temp_c, 22.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQCorpus, H100x8GivesEightGpusWithGen5Links) {
  const std::string path = Corpus("thamada_H100SXMx8_nvidia_smi_a.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadQ(path);
  EXPECT_EQ(r.taken, 8u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 8u);
  for (const GpuRecord& g : r.run.hardware.gpus) {
    SCOPED_TRACE(g.index);
    EXPECT_EQ(g.facts.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.facts.driver_version, "565.57.01");
    EXPECT_EQ(g.facts.enforced_power_limit_w, 700.0);
    EXPECT_EQ(g.facts.max_sm_clock_mhz, 1980.0);
    EXPECT_EQ(g.facts.pcie_gen_current, 5);
    EXPECT_EQ(g.facts.pcie_gen_max, 5);
    EXPECT_EQ(g.facts.pcie_width_current, 16);
    ASSERT_EQ(g.samples.size(), 1u);
    EXPECT_EQ(g.samples[0].time_ns, 1731567614 * kSec);
    EXPECT_EQ(g.samples[0].clock_events, clock_event::kGpuIdle);
  }
  EXPECT_EQ(r.gpu(0).bus_id, "00000000:18:00.0");
  EXPECT_EQ(r.gpu(7).bus_id, "00000000:DB:00.0");
  EXPECT_EQ(r.gpu(0).samples[0].power_w, 100.89);
  EXPECT_EQ(r.gpu(1).samples[0].power_w, 82.81);
  EXPECT_DOUBLE_EQ(r.gpu(1).samples[0].pcie_rx_mb_s.value_or(-1), 3.874);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQCorpus, RtxAdaIdleLinkAtGen1AndEccNotSupported) {
  const std::string path = Corpus("thamada_RTX6000Ada_x8_nvidia_smi_a.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadQ(path);
  EXPECT_EQ(r.taken, 8u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 8u);
  // Minor numbers run 3, 2, 1, 0, 7, 6, 5, 4: the index is the block order.
  EXPECT_EQ(r.gpu(0).bus_id, "00000000:01:00.0");
  EXPECT_EQ(r.gpu(7).bus_id, "00000000:E1:00.0");
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.facts.name, "NVIDIA RTX 6000 Ada Generation");
  EXPECT_EQ(g.facts.pcie_gen_current, 1);
  EXPECT_EQ(g.facts.pcie_gen_max, 4);
  EXPECT_EQ(g.facts.max_sm_clock_mhz, 3105.0);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 300.0);
  EXPECT_EQ(g.facts.ecc_uncorrected_volatile, std::nullopt);  // all "N/A"
  EXPECT_EQ(g.facts.ecc_uncorrected_aggregate, std::nullopt);
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.perf_state, 8);
  EXPECT_EQ(s.pcie_gen, 1);
  EXPECT_EQ(s.mem_temp_c, std::nullopt);
  EXPECT_EQ(s.power_w, 23.83);
  EXPECT_EQ(r.gpu(7).samples.at(0).power_w, 21.62);
  EXPECT_EQ(r.gpu(7).samples.at(0).temp_c, 29.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQCorpus, A10RemappedRowsPending) {
  const std::string path = Corpus("gpud_nvidia-smi-query.535.129.03.out.0.valid.a10.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadQ(path);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.facts.name, "NVIDIA A10");
  EXPECT_EQ(g.facts.remapped_rows_uncorrectable, 4);
  EXPECT_EQ(g.facts.remapped_rows_pending, true);
  EXPECT_EQ(g.facts.remapping_failure, false);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 150.0);
  EXPECT_EQ(g.facts.pcie_gen_host_max, std::nullopt);  // "N/A"
  EXPECT_EQ(g.facts.shutdown_temp_c, 101.0);
  EXPECT_EQ(g.facts.slowdown_temp_c, 98.0);
  EXPECT_EQ(g.facts.max_operating_temp_c, 91.0);
  EXPECT_EQ(g.facts.max_sm_clock_mhz, 1695.0);
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.time_ns, 1727260824 * kSec);
  EXPECT_EQ(s.perf_state, 8);
  EXPECT_EQ(s.power_w, 43.89);
  EXPECT_EQ(s.temp_c, 33.0);
  EXPECT_EQ(s.sm_clock_mhz, 225.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQCorpus, Rtx4090x8WithProcessesAndSpacePaddedDate) {
  const std::string path = Corpus("gpud_nvidia-smi-query.535.154.05.out.0.valid.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadQ(path);
  EXPECT_EQ(r.taken, 8u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 8u);
  const GpuSample& s0 = r.gpu(0).samples.at(0);
  EXPECT_EQ(s0.time_ns, 1720278566 * kSec);  // "Sat Jul  6 15:09:26 2024"
  EXPECT_EQ(s0.perf_state, 2);
  EXPECT_EQ(s0.clock_events, 0u);  // every reason "Not Active"
  EXPECT_EQ(s0.sm_clock_mhz, 2520.0);
  const GpuSample& s1 = r.gpu(1).samples.at(0);
  EXPECT_EQ(r.gpu(1).bus_id, "00000000:23:00.0");
  EXPECT_EQ(s1.util_pct, 100.0);
  EXPECT_EQ(s1.temp_c, 58.0);
  EXPECT_EQ(s1.power_w, 157.70);
  EXPECT_DOUBLE_EQ(s1.pcie_tx_mb_s.value_or(-1), 1.0);
  EXPECT_DOUBLE_EQ(s1.pcie_rx_mb_s.value_or(-1), 10.0);
  EXPECT_EQ(r.gpu(0).facts.name, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(r.gpu(0).facts.serial, std::nullopt);  // "N/A"
  EXPECT_EQ(r.gpu(0).facts.enforced_power_limit_w, 450.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQCorpus, H100x8ThrottledGpuHasItsClockEventBits) {
  const std::string path = Corpus("gpud_nvidia-smi-query.535.183.01.out.0.valid.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadQ(path);
  EXPECT_EQ(r.taken, 8u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 8u);
  const GpuRecord& g = r.gpu(2);
  EXPECT_EQ(g.bus_id, "00000000:75:00.0");
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.time_ns, 1718935388 * kSec);
  EXPECT_EQ(s.clock_events, clock_event::kSwPowerCap | clock_event::kHwPowerBrakeSlowdown |
                                clock_event::kSwThermalSlowdown);
  EXPECT_EQ(ClockEventNames(*s.clock_events),
            "sw_power_cap,sw_thermal_slowdown,hw_power_brake_slowdown");
  EXPECT_EQ(s.sm_clock_mhz, 1980.0);
  EXPECT_EQ(s.power_w, 118.01);
  EXPECT_EQ(s.temp_c, 39.0);
  EXPECT_DOUBLE_EQ(s.pcie_tx_mb_s.value_or(-1), 4.113);
  EXPECT_EQ(g.facts.pcie_gen_host_max, std::nullopt);
  EXPECT_EQ(g.facts.pcie_gen_max, 5);
  EXPECT_EQ(r.gpu(0).samples.at(0).clock_events, clock_event::kGpuIdle);
  EXPECT_EQ(r.gpu(7).bus_id, "00000000:CA:00.0");
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(r.count(DiagCode::kHwUnknownField), 0u);
}

TEST(NvidiaSmiQCorpus, InvalidFileKeepsItsOneBlockAndCountsTheDamage) {
  const std::string path = Corpus("gpud_nvidia-smi-query.535.183.01.out.0.invalid.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadQ(path);
  // Header says 8 GPUs; the output stops inside the first block's Clocks
  // Event Reasons, whose three HW lines carry a garbled "Invalid " prefix.
  EXPECT_EQ(r.taken, 1u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord), std::vector<uint64_t>{91});
  EXPECT_EQ(r.count(DiagCode::kHwUnknownField), 3u);
  EXPECT_EQ(r.lines(DiagCode::kHwUnknownField), (std::vector<uint64_t>{86, 87, 88}));
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.bus_id, "00000000:53:00.0");
  EXPECT_EQ(g.facts.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.facts.pcie_gen_current, 5);
  EXPECT_EQ(g.facts.pcie_width_max, 16);
  EXPECT_EQ(g.facts.enforced_power_limit_w, std::nullopt);  // cut before Power Readings
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.clock_events, clock_event::kGpuIdle);
  EXPECT_EQ(s.perf_state, 0);
  EXPECT_DOUBLE_EQ(s.pcie_tx_mb_s.value_or(-1), 0.632);
  EXPECT_EQ(s.temp_c, std::nullopt);
}

// -q and the table of the same machine, 18 s apart, in one host folder:
// one GPU record with both samples and no conflicting facts.
TEST(NvidiaSmiQCorpus, QAndTableOfOneHostMergeIntoOneGpu) {
  REQUIRE_CORPUS_FILE(Corpus("nvidia_smi_a_H100_della_pli.txt"));
  TempDir dir;
  WriteFile(dir.File("della-h100/nvidia-smi-a.txt"),
            ReadFile(Corpus("nvidia_smi_a_H100_della_pli.txt")));
  WriteFile(dir.File("della-h100/nvidia-smi.txt"),
            ReadFile(Corpus("nvidia_smi_default_H100_della_pli.txt")));
  laggard::Run run = testing_util::IngestPaths({dir.path()});
  ASSERT_EQ(run.files.size(), 2u);
  for (const InputFileInfo& f : run.files) {
    EXPECT_TRUE(f.used) << f.path;
    EXPECT_EQ(f.format, EndsWith(f.path, "-a.txt") ? "nvidia-smi-q" : "nvidia-smi-table");
  }
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  const GpuRecord& g = run.hardware.gpus[0];
  EXPECT_EQ(g.host, "della-h100");
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.files.size(), 2u);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[0].time_ns, 1708689071 * kSec);  // the table
  EXPECT_EQ(g.samples[1].time_ns, 1708689089 * kSec);  // -a
  EXPECT_EQ(g.samples[0].power_w, 72.0);
  EXPECT_EQ(g.samples[1].power_w, 72.02);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 700.0);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwConflictingFacts), 0u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwNoHost), 0u);
}

// The -q block order and the table's GPU numbers agree on a machine whose
// minor numbers do not (3, 2, 1, 0, 7, 6, 5, 4).
TEST(NvidiaSmiQCorpus, QIndexMatchesTableIndex) {
  REQUIRE_CORPUS_FILE(Corpus("thamada_RTX6000Ada_x8_nvidia_smi_a.txt"));
  ReadResult q = ReadQ(Corpus("thamada_RTX6000Ada_x8_nvidia_smi_a.txt"));
  ReadResult table = ReadTable(Corpus("thamada_RTX6000Ada_x8_nvidia_smi.txt"));
  ASSERT_EQ(q.run.hardware.gpus.size(), 8u);
  ASSERT_EQ(table.run.hardware.gpus.size(), 8u);
  for (int32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(q.gpu(i).bus_id, table.gpu(i).bus_id) << "GPU " << i;
  }
}

// ---------------------------------------------------------------------------
// nvidia-smi -q: synthetic variants

TEST(NvidiaSmiQ, OldDriverWordingReadsThrottleReasonsEnforcedLimitAndDoubleBitEcc) {
  ReadResult r = ReadQText(kOldQ);
  EXPECT_EQ(r.taken, 2u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 2u);
  const GpuRecord& g = r.gpu(0);  // minor number 1, first block
  EXPECT_EQ(g.bus_id, "00000000:3B:00.0");
  EXPECT_EQ(g.uuid, "GPU-00000000-1111-2222-3333-444444444444");
  const GpuFacts& f = g.facts;
  EXPECT_EQ(f.name, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(f.driver_version, "410.48");
  EXPECT_EQ(f.enforced_power_limit_w, 200.0);  // Enforced, not Power Limit (300)
  EXPECT_EQ(f.default_power_limit_w, 300.0);
  EXPECT_EQ(f.min_power_limit_w, 150.0);
  EXPECT_EQ(f.ecc_uncorrected_volatile, 2);
  EXPECT_EQ(f.ecc_uncorrected_aggregate, 5);
  EXPECT_EQ(f.retired_pages_dbe, 3);
  EXPECT_EQ(f.retired_pages_pending, true);
  EXPECT_EQ(f.shutdown_temp_c, 90.0);
  EXPECT_EQ(f.slowdown_temp_c, 87.0);
  EXPECT_EQ(f.max_operating_temp_c, 83.0);
  EXPECT_EQ(f.app_sm_clock_mhz, 1312.0);
  EXPECT_EQ(f.max_sm_clock_mhz, 1530.0);
  EXPECT_EQ(f.pcie_gen_max, 3);  // no Device Max in this wording: Max
  EXPECT_EQ(f.pcie_gen_host_max, std::nullopt);
  EXPECT_EQ(f.pcie_gen_current, 1);
  EXPECT_EQ(f.pcie_width_current, 8);
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.time_ns, 1541429459 * kSec);
  EXPECT_EQ(s.clock_events,
            clock_event::kSwPowerCap | clock_event::kHwSlowdown | clock_event::kHwThermalSlowdown);
  EXPECT_EQ(s.power_w, 199.5);
  EXPECT_EQ(s.power_limit_w, 200.0);
  EXPECT_EQ(s.temp_c, 84.0);
  EXPECT_EQ(s.mem_temp_c, 80.0);
  EXPECT_EQ(s.util_pct, 97.0);
  EXPECT_EQ(s.mem_util_pct, 41.0);
  EXPECT_EQ(s.sm_clock_mhz, 1245.0);
  EXPECT_EQ(s.mem_clock_mhz, 877.0);
  EXPECT_EQ(s.pcie_width, 8);
  EXPECT_DOUBLE_EQ(s.pcie_rx_mb_s.value_or(-1), 12.0);
  EXPECT_EQ(r.gpu(1).bus_id, "00000000:3C:00.0");
  EXPECT_EQ(r.gpu(1).samples.at(0).temp_c, 50.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kNote), 0u);
}

TEST(NvidiaSmiQ, NewestWordingAveragePowerDrawAndPendingPageRetirement) {
  const std::string text = R"(==============NVSMI LOG==============
Timestamp                                 : Mon Jan 20 10:18:26 2025
Driver Version                            : 570.86.10
Attached GPUs                             : 1
GPU 00000000:19:00.0
    GPU Power Readings
        Average Power Draw                : 650.12 W
        Instantaneous Power Draw          : 689.90 W
        Current Power Limit               : 700.00 W
        Requested Power Limit             : 700.00 W
    Retired Pages
        Double Bit ECC                    : 0
        Pending Page Retirement           : No
    Clocks Event Reasons
        HW Slowdown                       : Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Active
)";
  ReadResult r = ReadQText(text);
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.samples.at(0).power_w, 650.12);
  EXPECT_EQ(g.samples.at(0).clock_events,
            clock_event::kHwSlowdown | clock_event::kHwPowerBrakeSlowdown);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 700.0);
  EXPECT_EQ(g.facts.retired_pages_dbe, 0);
  EXPECT_EQ(g.facts.retired_pages_pending, false);
  // A filtered (-d) block has no Product Name: not expected to end with Processes.
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQ, VeryOldDriverPowerStateAndGpuTemperature) {
  const std::string text = R"(==============NVSMI LOG==============

Timestamp                       : Mon Dec  5 22:32:00 2011

Driver Version                  : 270.41.19

Attached GPUs                   : 1

GPU 0:2:0
    Product Name                : Tesla M2070
    Temperature
        Gpu                     : 61 C
    Power Readings
        Power State             : P12
        Power Management        : Supported
        Power Draw              : 31.57 W
        Power Limit             : 225 W
    Clocks
        Graphics                : 50 MHz
        SM                      : 100 MHz
        Memory                  : 135 MHz
)";
  ReadResult r = ReadQText(text);
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.bus_id, "0:2:0");
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.temp_c, 61.0);
  EXPECT_EQ(s.perf_state, 12);
  EXPECT_EQ(s.power_w, 31.57);
  EXPECT_EQ(s.sm_clock_mhz, 100.0);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 225.0);
  EXPECT_EQ(g.facts.name, "Tesla M2070");
  // R270 printed no Processes entry: the full block is not taken for cut.
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQ, SingleGpuOfSeveralUsesMinorNumberAsIndex) {
  // `nvidia-smi -q -i 5`: Attached GPUs counts every GPU, one block follows.
  const std::string text = R"(==============NVSMI LOG==============
Timestamp                                 : Mon Jan 29 10:41:38 2024
Attached GPUs                             : 8
GPU 00000000:9A:00.0
    Minor Number                          : 5
    Temperature
        GPU Current Temp                  : 44 C
)";
  ReadResult r = ReadQText(text);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  EXPECT_EQ(r.run.hardware.gpus[0].index, 5);
  EXPECT_EQ(r.run.hardware.gpus[0].samples.at(0).temp_c, 44.0);
}

TEST(NvidiaSmiQ, LoopOutputGivesOneSamplePerSnapshotAndLatestFacts) {
  auto snapshot = [](const char* date, int temp, int limit) {
    return fmt::format(R"(==============NVSMI LOG==============
Timestamp                                 : {}
Attached GPUs                             : 1
GPU 00000000:19:00.0
    Temperature
        GPU Current Temp                  : {} C
    GPU Power Readings
        Current Power Limit               : {}.00 W
)",
                       date, temp, limit);
  };
  ReadResult r = ReadQText(snapshot("Mon Jan 29 10:41:38 2024", 40, 700) +
                           snapshot("Mon Jan 29 10:41:43 2024", 55, 500));
  EXPECT_EQ(r.taken, 2u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  const GpuRecord& g = r.gpu(0);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[0].time_ns, 1706524898 * kSec);
  EXPECT_EQ(g.samples[1].time_ns, (1706524898 + 5) * kSec);
  EXPECT_EQ(g.samples[0].temp_c, 40.0);
  EXPECT_EQ(g.samples[1].temp_c, 55.0);
  EXPECT_EQ(g.samples[0].power_limit_w, 700.0);
  EXPECT_EQ(g.samples[1].power_limit_w, 500.0);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 500.0);  // the latest snapshot
  EXPECT_EQ(g.samples[1].src.line, 12u);
}

// nvidia-smi -q: "Clocks Event Reasons Counters" (tests/data/nvidia_smi_q/,
// real pages, README there: the readings were written before the reader ran).
std::string Data(const std::string& name) {
  return std::string(LAGGARD_SOURCE_DIR) + "/tests/data/nvidia_smi_q/" + name;
}

TEST(NvidiaSmiQCounters, TwoDriversCountersAreReadAsTheirTimesSinceLoad) {
  ReadResult a = ReadQ(Data("rtx3090ti_580_counters.txt"));
  ASSERT_EQ(a.run.hardware.gpus.size(), 1u);
  ASSERT_EQ(a.gpu(0).samples.size(), 1u);
  const GpuSample& s = a.gpu(0).samples[0];
  EXPECT_EQ(s.power_violation_ns, int64_t{85'032'867} * 1000);
  EXPECT_EQ(s.sync_boost_violation_ns, 0);
  EXPECT_EQ(s.thermal_violation_ns, 0);  // SW 0 + HW 0
  EXPECT_EQ(s.power_brake_violation_ns, 0);
  EXPECT_EQ(s.clock_events.value_or(0) & clock_event::kSwPowerCap, 0u);  // not active now
  // The page stops after FB Memory Usage: a cut block, counted, kept.
  EXPECT_EQ(a.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(a.count(DiagCode::kHwUnknownField), 0u);

  ReadResult b = ReadQ(Data("gtx1650_575_counters.txt"));
  ASSERT_EQ(b.run.hardware.gpus.size(), 1u);
  const GpuSample& t = b.gpu(0).samples.at(0);
  EXPECT_EQ(t.power_violation_ns, int64_t{4'957'032'508} * 1000);
  EXPECT_EQ(t.thermal_violation_ns, int64_t{3'893'592} * 1000);
  EXPECT_EQ(t.power_brake_violation_ns, 0);
  EXPECT_EQ(b.count(DiagCode::kHwUnknownField), 0u);
}

// The same pages through the analysis: the GTX 1650's 1.4 h of power
// capping is a lone GPU's history (info); the RTX 3090 Ti's 85 s is none.
TEST(NvidiaSmiQCounters, ALongHistoryIsSaidAndAShortOneIsNot) {
  for (auto [file, want] : {std::pair<const char*, bool>{"gtx1650_575_counters.txt", true},
                            std::pair<const char*, bool>{"rtx3090ti_580_counters.txt", false}}) {
    laggard::Run run = testing_util::IngestPaths({Data(file)});
    Analyses a = AnalyzeRun(run, AnalysisOptions());
    const Finding* history = nullptr;
    for (const Finding& f : a.hardware.findings) {
      if (f.code == FindingCode::kGpuThrottleHistory) history = &f;
    }
    ASSERT_EQ(history != nullptr, want) << file;
    if (history == nullptr) continue;
    EXPECT_EQ(history->severity, Severity::kInfo);
    EXPECT_NE(history->message.find("held down for power 1.4 h in all since its driver loaded"),
              std::string::npos)
        << history->message;
  }
}

TEST(NvidiaSmiQCounters, SwAndHwThermalAddUpAndBadCountersAreCounted) {
  const std::string text = R"(==============NVSMI LOG==============
Timestamp                                 : Mon Jan 29 10:41:38 2024
Attached GPUs                             : 1
GPU 00000000:19:00.0
    Clocks Event Reasons Counters
        SW Power Capping                  : 12 us
        SW Thermal Slowdown               : 2000 us
        HW Thermal Slowdown               : 500 us
        HW Power Braking                  : N/A
        Sync Boost                        : 7 ms
        Warp Drive Braking                : 5 us
)";
  ReadResult r = ReadQText(text);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  const GpuSample& s = r.gpu(0).samples.at(0);
  EXPECT_EQ(s.power_violation_ns, 12'000);
  EXPECT_EQ(s.thermal_violation_ns, 2'500'000);
  EXPECT_FALSE(s.power_brake_violation_ns.has_value());  // N/A: unknown, not 0
  EXPECT_FALSE(s.sync_boost_violation_ns.has_value());   // "7 ms": not us
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord), std::vector<uint64_t>{LineOf(text, "Sync Boost")});
  EXPECT_EQ(r.lines(DiagCode::kHwUnknownField), std::vector<uint64_t>{LineOf(text, "Warp Drive")});
}

TEST(NvidiaSmiQ, WithoutDatesSamplesAreOneSecondApartAndApproximate) {
  const std::string block = R"(GPU 00000000:19:00.0
    Temperature
        GPU Current Temp                  : 40 C
)";
  ReadResult r = ReadQText("==============NVSMI LOG==============\n" + block +
                           "==============NVSMI LOG==============\n" + block);
  const GpuRecord& g = r.gpu(0);
  EXPECT_TRUE(g.time_is_approximate);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[0].time_ns, 0);
  EXPECT_EQ(g.samples[1].time_ns, kSec);
  EXPECT_EQ(r.count(DiagCode::kHwApproximateTime), 1u);
}

TEST(NvidiaSmiQ, ShellPromptBeforeTheBannerIsIgnored) {
  ReadResult r = ReadQText("$ nvidia-smi -q\n" + kOldQ);
  EXPECT_EQ(r.taken, 2u);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kNote), 0u);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQ, HostComesFromTheFolderElseANote) {
  ReadResult alone = ReadQ(Text(kOldQ).path(), std::nullopt);
  EXPECT_EQ(alone.gpu(0).host, std::nullopt);
  EXPECT_EQ(alone.count(DiagCode::kHwNoHost), 1u);  // once per file, not per GPU

  TempDir dir;
  WriteFile(dir.File("node-07/nvidia-smi-q.txt"), kOldQ);
  laggard::Run run = testing_util::IngestPaths({dir.path()});
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  EXPECT_EQ(run.hardware.gpus[0].host, "node-07");
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwNoHost), 0u);
}

// ---------------------------------------------------------------------------
// nvidia-smi -q: corruption

TEST(NvidiaSmiQCorruption, TruncatedMidBlockKeepsWhatWasRead) {
  std::string text = CutBefore(kOldQ, "Power Limit                 : 300.00 W");
  ReadResult r = ReadQText(text);
  EXPECT_EQ(r.taken, 1u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.samples.at(0).power_w, 199.5);
  EXPECT_EQ(g.samples.at(0).temp_c, 84.0);
  EXPECT_EQ(g.facts.enforced_power_limit_w, std::nullopt);
  EXPECT_EQ(g.facts.max_sm_clock_mhz, std::nullopt);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord),
            std::vector<uint64_t>{LineOf(kOldQ, "Power Draw                  : 199.50 W")});
}

TEST(NvidiaSmiQCorruption, LineCutMidKeyIsCountedToo) {
  std::string text = CutBefore(kOldQ, "Power Limit                 : 300.00 W", "        Power Li");
  ReadResult r = ReadQText(text);
  uint64_t cut = LineOf(kOldQ, "Power Limit                 : 300.00 W");
  // The cut line is neither "Key : Value" nor a heading, and the block ends
  // there without its Processes entry.
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 2u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord), (std::vector<uint64_t>{cut, cut}));
  EXPECT_EQ(r.gpu(0).samples.at(0).power_w, 199.5);
}

TEST(NvidiaSmiQCorruption, GarbledValuesAreCountedAtTheirLinesAndOthersKept) {
  std::string text = kOldQ;
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("Power Draw                  : 199.50 W", "Power Draw                  : 1#9.50 W");
  replace("GPU Current Temp            : 84 C", "GPU Current Temp            : 84 F");
  replace("Current             : 8x", "Current             : eight");
  replace("SW Power Cap                : Active", "SW Power Cap                : Maybe");
  replace("Pending                     : Yes", "Pending                     : Perhaps");
  ReadResult r = ReadQText(text);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 5u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord),
            (std::vector<uint64_t>{LineOf(text, "Current             : eight"),
                                   LineOf(text, "SW Power Cap"), LineOf(text, "Pending      "),
                                   LineOf(text, "GPU Current Temp"), LineOf(text, "1#9.50 W")}));
  const GpuRecord& g = r.gpu(0);
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.power_w, std::nullopt);
  EXPECT_EQ(s.temp_c, std::nullopt);
  EXPECT_EQ(s.pcie_width, std::nullopt);
  EXPECT_EQ(g.facts.retired_pages_pending, std::nullopt);
  // The garbled reason is unknown; the others still read.
  EXPECT_EQ(s.clock_events, clock_event::kHwSlowdown | clock_event::kHwThermalSlowdown);
  EXPECT_EQ(s.mem_temp_c, 80.0);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 200.0);
  EXPECT_EQ(g.facts.pcie_width_max, 16);
}

TEST(NvidiaSmiQCorruption, UnavailableMarkersAreUnknownNotZero) {
  const std::string text = R"(==============NVSMI LOG==============
Timestamp                                 : Mon Jan 29 10:41:38 2024
Attached GPUs                             : 1
GPU 00000000:19:00.0
    Product Name                          : [Unknown Error]
    Performance State                     : [Not Supported]
    Temperature
        GPU Current Temp                  : [N/A]
        GPU Shutdown Temp                 : N/A
        Memory Current Temp               : [Not Supported]
    GPU Power Readings
        Power Draw                        : Unknown Error
        Current Power Limit               : [GPU requires reset]
    Clocks
        SM                                : ERR!
        Memory                            : 1593 MHz
    Remapped Rows                         : N/A
    Processes                             : None
)";
  ReadResult r = ReadQText(text);
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.facts.name, std::nullopt);
  EXPECT_EQ(g.facts.shutdown_temp_c, std::nullopt);
  EXPECT_EQ(g.facts.enforced_power_limit_w, std::nullopt);
  EXPECT_EQ(g.facts.remapped_rows_uncorrectable, std::nullopt);
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.temp_c, std::nullopt);
  EXPECT_EQ(s.mem_temp_c, std::nullopt);
  EXPECT_EQ(s.power_w, std::nullopt);
  EXPECT_EQ(s.sm_clock_mhz, std::nullopt);
  EXPECT_EQ(s.perf_state, std::nullopt);
  EXPECT_EQ(s.mem_clock_mhz, 1593.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiQCorruption, GarbledGpuHeadingSkipsItsBlockWithANote) {
  std::string text = kOldQ;
  text.replace(text.find("GPU 00000000:3C:00.0"), 20, "GPU 0000?000:3C:00.0");
  ReadResult r = ReadQText(text);
  EXPECT_EQ(r.taken, 1u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  EXPECT_EQ(r.count(DiagCode::kHwUnknownField), 1u);
  EXPECT_EQ(r.lines(DiagCode::kHwUnknownField),
            std::vector<uint64_t>{LineOf(text, "GPU 0000?000")});
}

TEST(NvidiaSmiQCorruption, GarbledTimestampIsCountedAndTimesBecomeApproximate) {
  std::string text = kOldQ;
  text.replace(text.find("Mon Nov  5"), 10, "Mon Nov 35");
  ReadResult r = ReadQText(text);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord), std::vector<uint64_t>{LineOf(text, "Timestamp")});
  EXPECT_TRUE(r.gpu(0).time_is_approximate);
  EXPECT_EQ(r.gpu(0).samples.at(0).time_ns, 0);
  EXPECT_EQ(r.count(DiagCode::kHwApproximateTime), 1u);
}

TEST(NvidiaSmiQCorruption, EmptyBlockAtTheEndIsCounted) {
  std::string text = kOldQ + "GPU 00000000:3D:00.0\n";
  ReadResult r = ReadQText(text);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord),
            std::vector<uint64_t>{LineOf(text, "GPU 00000000:3D:00.0")});
  EXPECT_EQ(r.run.hardware.gpus.size(), 3u);
}

TEST(NvidiaSmiQCorruption, BinaryJunkLineInsideABlockIsCounted) {
  std::string text = kOldQ;
  size_t at = text.find("    Utilization");
  text.insert(at, std::string("    \x01\x02\xff\xfe junk\n"));
  ReadResult r = ReadQText(text);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord), std::vector<uint64_t>{LineOf(text, "junk")});
  EXPECT_EQ(r.gpu(0).samples.at(0).util_pct, 97.0);
}

// ---------------------------------------------------------------------------
// The nvidia-smi table: corpus

TEST(NvidiaSmiTableCorpus, P100x4Driver418OldLayoutWithProcesses) {
  const std::string path = Corpus("nvidia_smi_default_4xP100_tiger_418.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadTable(path);
  EXPECT_EQ(r.taken, 4u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 4u);
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.bus_id, "00000000:03:00.0");
  EXPECT_EQ(g.facts.name, std::nullopt);  // "Tesla P100-PCIE..." is cut by the column
  EXPECT_EQ(g.facts.driver_version, "418.67");
  EXPECT_EQ(g.facts.ecc_uncorrected_volatile, 0);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 250.0);
  ASSERT_EQ(g.samples.size(), 1u);
  const GpuSample& s = g.samples[0];
  EXPECT_EQ(s.time_ns, 1572216983 * kSec);
  EXPECT_EQ(s.temp_c, 48.0);
  EXPECT_EQ(s.perf_state, 0);
  EXPECT_EQ(s.power_w, 80.0);
  EXPECT_EQ(s.power_limit_w, 250.0);
  EXPECT_EQ(s.util_pct, 74.0);
  EXPECT_EQ(s.src.line, 9u);
  EXPECT_EQ(r.gpu(1).samples.at(0).util_pct, 9.0);
  EXPECT_EQ(r.gpu(1).samples.at(0).power_w, 34.0);
  EXPECT_EQ(r.gpu(3).bus_id, "00000000:83:00.0");
  EXPECT_EQ(r.gpu(3).samples.at(0).temp_c, 49.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kNote), 0u);
}

TEST(NvidiaSmiTableCorpus, H100Driver545Layout) {
  const std::string path = Corpus("nvidia_smi_default_H100_della_pli.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadTable(path);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  const GpuRecord& g = r.gpu(0);
  EXPECT_EQ(g.facts.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.facts.driver_version, "545.23.08");
  EXPECT_EQ(g.bus_id, "00000000:19:00.0");
  EXPECT_EQ(g.facts.enforced_power_limit_w, 700.0);
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.time_ns, 1708689071 * kSec);
  EXPECT_EQ(s.temp_c, 33.0);
  EXPECT_EQ(s.power_w, 72.0);
  EXPECT_EQ(s.util_pct, 0.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiTableCorpus, UndatedTablesGiveApproximateTimes) {
  struct Case {
    const char* file;
    size_t gpus;
    int32_t last;
    const char* last_bus;
    double last_power_w;
    double last_temp_c;
    double cap_w;
    int32_t perf;
    std::optional<int64_t> ecc;
    const char* name;  // nullptr: cut by the column
    const char* driver;
  };
  const Case kCases[] = {
      {"thamada_A100SXMx4_nvidia_smi.txt", 4, 3, "00000000:D4:00.0", 58, 23, 500, 0, 0,
       "NVIDIA A100-SXM4-80GB", "555.42.02"},
      {"thamada_A40x10_nvidia_smi.txt", 10, 9, "00000000:D6:00.0", 16, 29, 300, 8, 0, "NVIDIA A40",
       "550.127.05"},
      {"thamada_H100SXMx8_nvidia_smi.txt", 8, 7, "00000000:DB:00.0", 75, 29, 700, 0, 0,
       "NVIDIA H100 80GB HBM3", "565.57.01"},
      {"thamada_RTX6000Ada_x8_nvidia_smi.txt", 8, 7, "00000000:E1:00.0", 21, 29, 300, 8,
       std::nullopt, nullptr, "550.127.05"},
      {"gpud_nvidia-smi.525.125.06.out.0.valid.txt", 1, 0, "00000000:01:00.0", 49, 38, 450, 5, 0,
       nullptr, "525.125.06"},
  };
  REQUIRE_CORPUS_FILE(Corpus(kCases[0].file));
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.file);
    ReadResult r = ReadTable(Corpus(c.file));
    EXPECT_EQ(r.taken, c.gpus);
    ASSERT_EQ(r.run.hardware.gpus.size(), c.gpus);
    const GpuRecord& g = r.gpu(c.last);
    EXPECT_EQ(g.bus_id, c.last_bus);
    EXPECT_TRUE(g.time_is_approximate);
    ASSERT_EQ(g.samples.size(), 1u);
    EXPECT_EQ(g.samples[0].time_ns, 0);
    EXPECT_EQ(g.samples[0].power_w, c.last_power_w);
    EXPECT_EQ(g.samples[0].temp_c, c.last_temp_c);
    EXPECT_EQ(g.samples[0].perf_state, c.perf);
    EXPECT_EQ(g.facts.enforced_power_limit_w, c.cap_w);
    EXPECT_EQ(g.facts.ecc_uncorrected_volatile, c.ecc);
    EXPECT_EQ(g.facts.name, c.name ? std::optional<std::string>(c.name) : std::nullopt);
    EXPECT_EQ(g.facts.driver_version, c.driver);
    EXPECT_EQ(r.count(DiagCode::kHwApproximateTime), 1u);
    EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  }
}

TEST(NvidiaSmiTableCorpus, H100x8Driver550Dated) {
  const std::string path = Corpus("gpud_nvidia-smi.550.90.07.out.0.valid.txt");
  REQUIRE_CORPUS_FILE(path);
  ReadResult r = ReadTable(path);
  EXPECT_EQ(r.taken, 8u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 8u);
  EXPECT_EQ(r.gpu(0).bus_id, "00000000:19:00.0");
  EXPECT_EQ(r.gpu(0).samples.at(0).time_ns, 1737368306 * kSec);
  EXPECT_EQ(r.gpu(0).samples.at(0).power_w, 72.0);
  EXPECT_EQ(r.gpu(7).bus_id, "00000000:DB:00.0");
  EXPECT_EQ(r.gpu(7).samples.at(0).temp_c, 23.0);
  EXPECT_EQ(r.gpu(7).facts.driver_version, "550.90.07");
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(r.count(DiagCode::kHwApproximateTime), 0u);
}

// ---------------------------------------------------------------------------
// The nvidia-smi table: synthetic variants and corruption

TEST(NvidiaSmiTable, TwoGpusAndAProcessRow) {
  ReadResult r = ReadTableText(kTable);
  EXPECT_EQ(r.taken, 2u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 2u);
  const GpuRecord& g = r.gpu(1);
  EXPECT_EQ(g.bus_id, "00000000:2A:00.0");
  EXPECT_EQ(g.facts.ecc_uncorrected_volatile, 2);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 600.0);
  EXPECT_EQ(g.facts.driver_version, "535.54.03");
  const GpuSample& s = g.samples.at(0);
  EXPECT_EQ(s.time_ns, 1706524898 * kSec);
  EXPECT_EQ(s.temp_c, 71.0);
  EXPECT_EQ(s.perf_state, 2);
  EXPECT_EQ(s.power_w, 512.0);
  EXPECT_EQ(s.util_pct, 98.0);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiTable, LoopOutputGivesOneSamplePerTable) {
  std::string second = kTable;
  second.replace(second.find("10:41:38"), 8, "10:41:43");
  second.replace(second.find("71C"), 3, "83C");
  ReadResult r = ReadTableText(kTable + second);
  EXPECT_EQ(r.taken, 4u);
  ASSERT_EQ(r.run.hardware.gpus.size(), 2u);
  const GpuRecord& g = r.gpu(1);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[0].time_ns, 1706524898 * kSec);
  EXPECT_EQ(g.samples[1].time_ns, (1706524898 + 5) * kSec);
  EXPECT_EQ(g.samples[0].temp_c, 71.0);
  EXPECT_EQ(g.samples[1].temp_c, 83.0);
  EXPECT_FALSE(g.time_is_approximate);
}

TEST(NvidiaSmiTableCorruption, TruncatedTableKeepsCompleteRows) {
  std::string text = CutBefore(kTable, "| N/A   71C");
  ReadResult r = ReadTableText(text);
  ASSERT_EQ(r.run.hardware.gpus.size(), 2u);
  EXPECT_EQ(r.gpu(0).samples.at(0).power_w, 69.0);
  EXPECT_EQ(r.gpu(1).bus_id, "00000000:2A:00.0");  // its first row was complete
  EXPECT_TRUE(r.gpu(1).samples.empty());
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord),
            std::vector<uint64_t>{LineOf(kTable, "|   1  NVIDIA")});
}

TEST(NvidiaSmiTableCorruption, RowCutMidLineIsCounted) {
  std::string text = CutBefore(kTable, "| N/A   71C", "| N/A   71C    P2             512W / 6");
  ReadResult r = ReadTableText(text);
  uint64_t cut = LineOf(kTable, "| N/A   71C");
  // The cut row, and GPU 1 left with only its first row.
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 2u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord),
            (std::vector<uint64_t>{cut, LineOf(kTable, "|   1  NVIDIA")}));
}

TEST(NvidiaSmiTableCorruption, GarbledValuesAreCountedAndTheRestKept) {
  std::string text = kTable;
  text.replace(text.find("71C"), 3, "7?C");
  text.replace(text.find("   2 |"), 6, "   x |");
  ReadResult r = ReadTableText(text);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 2u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord),
            (std::vector<uint64_t>{LineOf(text, "|   1  NVIDIA"), LineOf(text, "7?C")}));
  const GpuRecord& g = r.gpu(1);
  EXPECT_EQ(g.facts.ecc_uncorrected_volatile, std::nullopt);
  EXPECT_EQ(g.samples.at(0).temp_c, std::nullopt);
  EXPECT_EQ(g.samples.at(0).power_w, 512.0);
  EXPECT_EQ(g.samples.at(0).util_pct, 98.0);
}

TEST(NvidiaSmiTableCorruption, UnreadableFirstRowLosesItsGpuCounted) {
  std::string text = kTable;
  text.replace(text.find("|   1  NVIDIA"), 6, "|  one");
  ReadResult r = ReadTableText(text);
  ASSERT_EQ(r.run.hardware.gpus.size(), 1u);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 2u);  // the first row and the row it orphans
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord),
            (std::vector<uint64_t>{LineOf(text, "|  one"), LineOf(text, "| N/A   71C")}));
}

TEST(NvidiaSmiTableCorruption, UnavailableValuesAreUnknown) {
  std::string text = kTable;
  const std::string row = "| N/A   71C    P2             512W / 600W";
  text.replace(text.find(row), row.size(), "|ERR!  ERR!   ERR!           ERR! / ERR!");
  text.replace(text.find("98%"), 3, "N/A");
  ReadResult r = ReadTableText(text);
  const GpuSample& s = r.gpu(1).samples.at(0);
  EXPECT_EQ(s.temp_c, std::nullopt);
  EXPECT_EQ(s.perf_state, std::nullopt);
  EXPECT_EQ(s.power_w, std::nullopt);
  EXPECT_EQ(s.power_limit_w, std::nullopt);
  EXPECT_EQ(s.util_pct, std::nullopt);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NvidiaSmiTableCorruption, UnreachableGpuMessageIsCounted) {
  std::string text =
      "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n" + kTable;
  ReadResult r = ReadTableText(text);
  EXPECT_EQ(r.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(r.lines(DiagCode::kHwBadRecord), std::vector<uint64_t>{1});
  EXPECT_EQ(r.run.hardware.gpus.size(), 2u);
}

// ---------------------------------------------------------------------------
// Shared value parsing

TEST(NvidiaSmiText, CtimeDates) {
  EXPECT_EQ(ParseCtime("Mon Jan 29 10:41:38 2024"), 1706524898 * kSec);
  EXPECT_EQ(ParseCtime("  Sat Jul  6 15:09:26 2024   "), 1720278566 * kSec);
  EXPECT_EQ(ParseCtime("Sat Jul 06 15:09:26 2024"), 1720278566 * kSec);
  EXPECT_EQ(ParseCtime("Sun Jul  6 15:09:26 2024"), std::nullopt);  // wrong weekday
  EXPECT_EQ(ParseCtime("Fri Feb 30 10:00:00 2024"), std::nullopt);
  EXPECT_EQ(ParseCtime("Mon Jan 29 24:41:38 2024"), std::nullopt);
  EXPECT_EQ(ParseCtime("Mon Jan 29 10:41:38"), std::nullopt);
  EXPECT_EQ(ParseCtime("Mon Jan 29 10:41:38 2024 UTC"), std::nullopt);
  EXPECT_EQ(ParseCtime("| NVIDIA-SMI 535.54.03 |"), std::nullopt);
}

TEST(NvidiaSmiText, NumbersWithUnits) {
  using nvsmi::Number;
  EXPECT_EQ(nvsmi::ParseNumber("250.00 W", "W").get(), 250.0);
  EXPECT_EQ(nvsmi::ParseNumber("45C", "C").get(), 45.0);
  EXPECT_EQ(nvsmi::ParseNumber("-8 C", "C").get(), -8.0);
  EXPECT_EQ(nvsmi::ParseNumber("1410 mhz", "MHz").get(), 1410.0);
  EXPECT_EQ(nvsmi::ParseNumber("12", "%").get(), 12.0);
  EXPECT_EQ(nvsmi::ParseNumber("45 F", "C").kind, Number::kGarbled);
  EXPECT_EQ(nvsmi::ParseNumber("W", "W").kind, Number::kGarbled);
  EXPECT_EQ(nvsmi::ParseNumber("1.2.3 W", "W").kind, Number::kGarbled);
  EXPECT_EQ(nvsmi::ParseNumber("[N/A]", "W").kind, Number::kUnavailable);
  EXPECT_EQ(nvsmi::ParseNumber("[Not Supported]", "W").kind, Number::kUnavailable);
  EXPECT_EQ(nvsmi::ParseNumber("N/A", "W").kind, Number::kUnavailable);
  EXPECT_EQ(nvsmi::ParsePerfState("P12").get(), 12.0);
  EXPECT_EQ(nvsmi::ParsePerfState("P16").kind, Number::kGarbled);
  EXPECT_EQ(nvsmi::ParsePerfState("Q1").kind, Number::kGarbled);
}

}  // namespace
}  // namespace laggard
