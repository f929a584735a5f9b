// A GPU suspect's health checks read back: real nvidia-smi -q pages and
// dcgmi diag tables, as confirm saves them.

#include "confirm/gpu_health.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "test_paths.h"
#include "test_util.h"

namespace laggard::confirm {
namespace {

// `dcgmi diag -r 2 -i 2` (DCGM 3.3) on a GPU with double-bit ECC errors.
constexpr const char* kDiagGpuMemoryFail = R"(Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.3.5                                          |
| Driver Version Detected   | 535.161.08                                     |
| GPU Device IDs Detected   | 2330                                           |
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
| Persistence Mode          | Pass                                           |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Fail - GPU: 2                                  |
| Warning                   | GPU 2 Detected 4 double bit ECC errors on the  |
|                           |  GPU. Drain the GPU and reset it or reboot th  |
|                           | e node.                                        |
+---------------------------+------------------------------------------------+
)";

class GpuHealthTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_.File(name)) << text;
    return dir_.File(name);
  }
  testing_util::TempDir dir_;
};

// A real GTX 1650 page (driver 575), idle: no reason active, its default
// power limit, x8 of x16 while idle (a link drops when idle): nothing
// against it. Expected before the first run: inconclusive.
TEST_F(GpuHealthTest, ARealIdlePageShowsNothingAgainstItsGpu) {
  std::string page =
      std::string(LAGGARD_SOURCE_DIR) + "/tests/data/nvidia_smi_q/gtx1650_575_counters.txt";
  GpuHealth h = JudgeGpuHealth({page}, {});
  EXPECT_EQ(h.records, 1u);
  EXPECT_EQ(h.verdict, "inconclusive") << h.figures;
  EXPECT_TRUE(h.faults.empty()) << h.faults.front();
}

TEST_F(GpuHealthTest, AFailedHardwareTestConfirmsUnlessTheControlFailsToo) {
  std::string diag =
      Write("test-2.txt", std::string("dcgmi diag -r 2 -i 2\n") + kDiagGpuMemoryFail);
  GpuHealth h = JudgeGpuHealth({diag}, {});
  EXPECT_EQ(h.verdict, "confirmed") << h.figures;
  EXPECT_NE(h.figures.find("dcgmi diag failed: GPU Memory: Fail"), std::string::npos) << h.figures;
  std::string control = Write("test-3.txt", kDiagGpuMemoryFail);
  EXPECT_EQ(JudgeGpuHealth({diag}, {control}).verdict, "inconclusive");
  EXPECT_EQ(JudgeGpuHealth({}, {}).verdict, "not judged");
}

// A DCGM 2.x table whose Blacklist (Deployment) test failed: the
// diagnostic never ran on the card.
TEST_F(GpuHealthTest, ADeploymentFailureOfAnyDcgmGenerationIsNoEvidence) {
  std::string diag =
      Write("test-2.txt",
            R"(+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
| Blacklist                 | Fail                                           |
| Error                     | Found blacklisted driver: nouveau              |
+---------------------------+------------------------------------------------+
)");
  GpuHealth h = JudgeGpuHealth({diag}, {});
  EXPECT_NE(h.verdict, "confirmed") << h.figures;
}

// gpud's real 8xH100 page (driver 535.183.01): every GPU idle at 0%, one
// with power and thermal reasons flagged. Expected before the run: nothing
// against GPU 0 (an idle card's flags are not held against it, and another
// GPU's never are).
TEST_F(GpuHealthTest, AnIdlePageOfSeveralGpusJudgesOnlyTheOneAsked) {
  std::string page = std::string(LAGGARD_CORPUS_DIR) +
                     "/nvidia_smi/gpud_nvidia-smi-query.535.183.01.out.0.valid.txt";
  if (!std::filesystem::exists(page)) GTEST_SKIP() << page << " not found (the shared corpus)";
  for (int32_t gpu : {0, 2}) {
    GpuHealth h = JudgeGpuHealth({page}, {}, gpu);
    EXPECT_EQ(h.records, 1u) << gpu;
    EXPECT_NE(h.verdict, "confirmed") << gpu << ": " << h.figures;
  }
}

// Azure's 8xH100 run with persistence mode off: a Deployment test failed,
// so the diagnostic never tested the GPUs. Expected: inconclusive, said.
TEST_F(GpuHealthTest, ADiagnosticThatCouldNotRunIsNoEvidence) {
  std::string file =
      std::string(LAGGARD_CORPUS_DIR) + "/dcgm/dcgmi_diag_r1_8xH100_persistence_fail_azure.txt";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not found (the shared corpus)";
  GpuHealth h = JudgeGpuHealth({file}, {});
  EXPECT_EQ(h.verdict, "inconclusive") << h.figures;
  EXPECT_NE(h.figures.find("could not test it: Persistence Mode"), std::string::npos) << h.figures;
}

}  // namespace
}  // namespace laggard::confirm
