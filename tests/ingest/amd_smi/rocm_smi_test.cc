// rocm-smi outputs (ingest/amd_smi/rocm_smi.cc): the real outputs of
// tests/data/rocm_smi/ as their README expects, a crafted slow GCD, and cut
// rows counted.

#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "analysis/analyze_run.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::TestData;
using testing_util::WriteFile;

const GpuRecord& Gpu(const laggard::Run& run, int32_t index) {
  for (const GpuRecord& g : run.hardware.gpus) {
    if (g.index == index) return g;
  }
  ADD_FAILURE() << "no GPU " << index;
  static GpuRecord none;
  return none;
}

std::vector<Finding> GpuFindings(const laggard::Run& run) {
  return AnalyzeRun(run, AnalysisOptions()).hardware.findings;
}

TEST(RocmSmiTest, ConciseTablesOfEveryGenerationRead) {
  laggard::Run b = IngestPaths({TestData("rocm_smi", "mi300x_x4_concise.txt")});
  ASSERT_EQ(b.hardware.gpus.size(), 4u);
  const GpuRecord& g3 = Gpu(b, 3);
  EXPECT_EQ(g3.facts.name, "AMD Instinct MI300X");
  ASSERT_EQ(g3.samples.size(), 1u);
  EXPECT_EQ(g3.samples[0].temp_c, std::nullopt);  // the junction sensor: not kept
  EXPECT_EQ(g3.samples[0].power_w, 137.0);
  EXPECT_EQ(g3.samples[0].sm_clock_mhz, 131.0);
  EXPECT_EQ(g3.samples[0].mem_clock_mhz, 900.0);
  EXPECT_EQ(g3.samples[0].util_pct, 0.0);
  EXPECT_EQ(g3.facts.enforced_power_limit_w, 750.0);
  EXPECT_EQ(b.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  laggard::Run a = IngestPaths({TestData("rocm_smi", "mi250x_8gcd_one_idle_concise.txt")});
  ASSERT_EQ(a.hardware.gpus.size(), 8u);
  EXPECT_EQ(Gpu(a, 4).samples[0].sm_clock_mhz, 800.0);
  EXPECT_EQ(Gpu(a, 4).samples[0].util_pct, 0.0);
  EXPECT_EQ(Gpu(a, 0).samples[0].power_w, 128.0);
  EXPECT_EQ(Gpu(a, 1).samples[0].power_w, std::nullopt);            // N/A: one per package
  EXPECT_EQ(Gpu(a, 1).facts.enforced_power_limit_w, std::nullopt);  // 0.0W is no cap
  // GCD 4 is idle, not slow: nothing under load to call its clock low.
  for (const Finding& f : GpuFindings(a)) EXPECT_NE(f.code, FindingCode::kGpuClocksLow);

  laggard::Run c = IngestPaths({TestData("rocm_smi", "mi300x_sclk_59mhz_concise_partial.txt")});
  EXPECT_EQ(c.hardware.gpus.size(), 3u);  // the 4th row is cut
  EXPECT_EQ(c.diagnostics.count(DiagCode::kHwBadRecord), 1u);
  EXPECT_EQ(Gpu(c, 0).samples[0].sm_clock_mhz, 59.0);
  EXPECT_EQ(Gpu(c, 0).samples[0].temp_c, std::nullopt);  // junction

  laggard::Run cpx = IngestPaths({TestData("rocm_smi", "mi300x_cpx_na_row_concise.txt")});
  ASSERT_EQ(cpx.hardware.gpus.size(), 2u);
  EXPECT_EQ(Gpu(cpx, 1).samples[0].temp_c, std::nullopt);
  EXPECT_EQ(cpx.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  laggard::Run v = IngestPaths({TestData("rocm_smi", "vega64_x2_concise.txt")});
  ASSERT_EQ(v.hardware.gpus.size(), 2u);
  EXPECT_EQ(Gpu(v, 1).samples[0].temp_c, 56.0);
  EXPECT_EQ(Gpu(v, 1).samples[0].power_w, 130.0);
  EXPECT_TRUE(GpuFindings(v).empty());
}

TEST(RocmSmiTest, ShowAllInfoFillsFactsAndASample) {
  laggard::Run m = IngestPaths({TestData("rocm_smi", "mi300x_x4_showallinfo.txt")});
  ASSERT_EQ(m.hardware.gpus.size(), 4u);
  const GpuRecord& g = Gpu(m, 3);
  EXPECT_EQ(g.facts.name, "AMD Instinct MI300X OAM");
  EXPECT_EQ(g.facts.driver_version, "6.7.0");
  EXPECT_EQ(g.facts.enforced_power_limit_w, 750.0);
  ASSERT_TRUE(g.facts.max_sm_clock_mhz);
  EXPECT_EQ(*g.facts.max_sm_clock_mhz, 2100.0);
  ASSERT_EQ(g.samples.size(), 1u);
  EXPECT_EQ(g.samples[0].temp_c, std::nullopt);  // junction only: MI300X has no edge sensor
  EXPECT_EQ(g.samples[0].mem_temp_c, 36.0);
  EXPECT_EQ(g.samples[0].sm_clock_mhz, 132.0);
  EXPECT_TRUE(g.bus_id.has_value());

  laggard::Run mixed = IngestPaths({TestData("rocm_smi", "mi210_mi50_mi100_showallinfo.txt")});
  ASSERT_EQ(mixed.hardware.gpus.size(), 5u);
  EXPECT_EQ(Gpu(mixed, 1).facts.name, "Radeon Instinct MI50 16GB");
  // Idle: its link level says nothing of the link (DPM), its maximum does.
  EXPECT_EQ(Gpu(mixed, 1).samples[0].pcie_gen, std::nullopt);
  EXPECT_EQ(Gpu(mixed, 1).facts.pcie_gen_max, 4);
  // The MI210s print no series: named by their device id, so the MI50's
  // 225 W cap is not compared with the MI210s' 300 W.
  EXPECT_EQ(Gpu(mixed, 0).facts.name, "AMD GPU 0x740f");
  EXPECT_EQ(Gpu(mixed, 0).samples[0].temp_c, 30.0);
  EXPECT_EQ(Gpu(mixed, 0).samples[0].power_w, 40.0);
  EXPECT_EQ(Gpu(mixed, 2).facts.enforced_power_limit_w, 290.0);
  EXPECT_TRUE(GpuFindings(mixed).empty());

  laggard::Run vega = IngestPaths({TestData("rocm_smi", "vega64_x2_showallinfo.txt")});
  ASSERT_EQ(vega.hardware.gpus.size(), 2u);
  EXPECT_EQ(Gpu(vega, 0).samples[0].temp_c, 58.0);  // edge
  EXPECT_EQ(Gpu(vega, 0).samples[0].pcie_width, 1);
  EXPECT_EQ(Gpu(vega, 0).facts.pcie_width_max, 1);  // the riser: no downgrade
  for (const Finding& f : GpuFindings(vega)) EXPECT_NE(f.code, FindingCode::kGpuPcieDowngrade);
}

TEST(RocmSmiTest, ReviewCasesBlameNoHealthyGpu) {
  // The real mixed box: no power cap or clock finding from other models.
  for (const Finding& f :
       GpuFindings(IngestPaths({TestData("rocm_smi", "mi210_mi50_mi100_showallinfo.txt")}))) {
    EXPECT_NE(f.code, FindingCode::kGpuPowerCap) << f.message;
    EXPECT_NE(f.code, FindingCode::kGpuClocksLow) << f.message;
  }
  TempDir dir;
  // An idle GPU at its lowest PCIe DPM level (x1): no downgrade.
  std::string idle =
      "GPU[0]\t\t: pcie clock level: 0 (2.5GT/s x1)\nGPU[0]\t\t: GPU use (%): 0\n"
      "GPU[0]\t\t: Supported PCIe frequencies on GPU0\nGPU[0]\t\t: 0: 2.5GT/s x1 *\n"
      "GPU[0]\t\t: 1: 16.0GT/s x16\n";
  laggard::Run run = IngestPaths({WriteFile(dir.File("node-01/rocm-smi-a.txt"), idle)});
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  EXPECT_EQ(run.hardware.gpus[0].samples[0].pcie_width, std::nullopt);
  for (const Finding& f : GpuFindings(run)) EXPECT_NE(f.code, FindingCode::kGpuPcieDowngrade);
  // A training log whose job script ran rocm-smi first keeps its steps.
  std::string log;
  for (int i = 1; i <= 8; ++i) {
    log += fmt::format(" iteration {:8d}/    1000 | elapsed time per iteration (ms): 812.3 |\n", i);
  }
  log +=
      "======================= ROCm System Management Interface =======================\n"
      "================================= Concise Info =================================\n"
      "GPU  Temp   AvgPwr  SCLK     MCLK     Fan  Perf    PwrCap  VRAM%  GPU%\n"
      "0    42.0c  128.0W  1650Mhz  1600Mhz  0%   manual  500.0W   78%   100%\n";
  for (int i = 9; i <= 40; ++i) {
    log += fmt::format(" iteration {:8d}/    1000 | elapsed time per iteration (ms): 812.3 |\n", i);
  }
  laggard::Run mixed_log = IngestPaths({WriteFile(dir.File("logs/rank-0.log"), log)});
  ASSERT_EQ(mixed_log.ranks.size(), 1u);
  EXPECT_EQ(mixed_log.ranks[0].steps.size(), 40u);
}

TEST(RocmSmiTest, ABusyGcdAtLowClockIsNamed) {
  TempDir dir;
  std::string t =
      "======================= ROCm System Management Interface =======================\n"
      "================================= Concise Info =================================\n"
      "GPU  Temp   AvgPwr  SCLK     MCLK     Fan  Perf    PwrCap  VRAM%  GPU%\n";
  for (int i = 0; i < 8; ++i) {
    t += fmt::format("{}    45.0c  300.0W  {}Mhz  1600Mhz  0%   auto    500.0W   78%   100%\n", i,
                     i == 5 ? 800 : 1650);
  }
  t += "================================================================================\n";
  laggard::Run run = IngestPaths({WriteFile(dir.File("node-01/rocm-smi.txt"), t)});
  ASSERT_EQ(run.hardware.gpus.size(), 8u);
  std::vector<Finding> fs = GpuFindings(run);
  auto low = std::find_if(fs.begin(), fs.end(),
                          [](const Finding& f) { return f.code == FindingCode::kGpuClocksLow; });
  ASSERT_NE(low, fs.end());
  EXPECT_EQ(low->entity.gpu, 5);
  // AMD's tools in the next steps, not nvidia-smi.
  ASSERT_FALSE(low->next_steps.empty());
  EXPECT_NE(low->next_steps[0].find("rocm-smi -d 5 --resetclocks"), std::string::npos)
      << low->next_steps[0];
  EXPECT_EQ(low->next_steps[0].find("nvidia-smi"), std::string::npos);
}

}  // namespace
}  // namespace laggard

namespace laggard {
namespace {

TEST(AmdSmiMetricTest, RealOutputsReadAsTheirReadmeExpects) {
  laggard::Run apu = IngestPaths({TestData("amd_smi", "metric_radeon890m_apu.txt")});
  ASSERT_EQ(apu.hardware.gpus.size(), 1u);
  ASSERT_EQ(apu.hardware.gpus[0].samples.size(), 1u);
  EXPECT_EQ(apu.hardware.gpus[0].samples[0].temp_c, 28.0);
  EXPECT_EQ(apu.hardware.gpus[0].samples[0].power_w, std::nullopt);
  EXPECT_EQ(apu.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  laggard::Run mi = IngestPaths({TestData("amd_smi", "metric_mi300x_truncated.txt")});
  ASSERT_EQ(mi.hardware.gpus.size(), 1u);
  const GpuSample& s = mi.hardware.gpus[0].samples[0];
  EXPECT_EQ(s.util_pct, 100.0);
  EXPECT_EQ(s.power_w, 234.0);
  EXPECT_EQ(s.sm_clock_mhz, 2102.0);
  EXPECT_EQ(mi.hardware.gpus[0].facts.max_sm_clock_mhz, 2102.0);
  EXPECT_EQ(mi.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  laggard::Run rdna = IngestPaths({TestData("amd_smi", "metric_rdna3_partial.txt")});
  ASSERT_EQ(rdna.hardware.gpus.size(), 1u);
  EXPECT_EQ(rdna.hardware.gpus[0].samples[0].util_pct, 0.0);
  EXPECT_EQ(rdna.hardware.gpus[0].samples[0].power_w, 20.0);
  EXPECT_EQ(rdna.hardware.gpus[0].samples[0].sm_clock_mhz, 14.0);
  EXPECT_EQ(rdna.hardware.gpus[0].facts.max_sm_clock_mhz, 2482.0);
  EXPECT_EQ(rdna.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  laggard::Run clk = IngestPaths({TestData("amd_smi", "metric_clock_mi300_changelog.txt")});
  ASSERT_EQ(clk.hardware.gpus.size(), 1u);
  // `--clock` alone prints no utilisation: the (sleeping) clocks are not
  // kept as a sample's, the maxima are.
  EXPECT_EQ(clk.hardware.gpus[0].samples[0].sm_clock_mhz, std::nullopt);
  EXPECT_EQ(clk.hardware.gpus[0].facts.max_sm_clock_mhz, 1800.0);
  EXPECT_EQ(clk.hardware.gpus[0].facts.max_mem_clock_mhz, 1200.0);

  laggard::Run pcie = IngestPaths({TestData("amd_smi", "metric_pcie_2gpu_changelog.txt")});
  ASSERT_EQ(pcie.hardware.gpus.size(), 2u);
  // `--pcie` alone: no utilisation, so the link (which idles at a lower
  // DPM level) is not kept as the current one.
  for (const GpuRecord& g : pcie.hardware.gpus) EXPECT_EQ(g.samples[0].pcie_gen, std::nullopt);
}

TEST(AmdSmiMetricTest, GarbledValuesAreCountedAndRepeatsAreSnapshots) {
  TempDir dir;
  std::string t =
      "GPU: 0\n    USAGE:\n        GFX_ACTIVITY: lots\n    POWER:\n        SOCKET_POWER: 300 W\n"
      "GPU: 0\n    USAGE:\n        GFX_ACTIVITY: 99 %\n    POWER:\n        SOCKET_POWER: 310 W\n";
  laggard::Run run = IngestPaths({WriteFile(dir.File("node-1/amd-smi.txt"), t)});
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  EXPECT_EQ(run.hardware.gpus[0].samples.size(), 2u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwBadRecord), 1u);
}

}  // namespace
}  // namespace laggard
