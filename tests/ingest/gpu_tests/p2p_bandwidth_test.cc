// p2pBandwidthLatencyTest outputs (ingest/gpu_tests/p2p_bandwidth.cc) and the
// GPU links read from them (analysis/hardware/p2p_links.h): the real
// outputs of tests/data/p2p_bandwidth/ as their README expects, negative
// controls, and bad rows counted.

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/hardware/p2p_links.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::TestData;
using testing_util::WriteFile;

const P2pMatrix* Matrix(const P2pBandwidthTest& t, P2pMatrixKind k) {
  for (const P2pMatrix& m : t.matrices) {
    if (m.kind == k) return &m;
  }
  return nullptr;
}

TEST(P2pBandwidthTest, ReadsEveryMatrixOfAFullOutput) {
  laggard::Run run = IngestPaths({TestData("p2p_bandwidth", "a100_8gpu_gpu0_low.txt")});
  ASSERT_EQ(run.network.p2p_tests.size(), 1u);
  const P2pBandwidthTest& t = run.network.p2p_tests[0];
  EXPECT_EQ(t.n, 8);
  EXPECT_EQ(t.gpu_names[7], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(t.can_access[0 * 8 + 1], 1);
  // The five bandwidth matrices (one header without its rows) and two GPU
  // latency matrices; the CPU-timed halves are not kept.
  EXPECT_EQ(t.matrices.size(), 6u);
  const P2pMatrix* bi = Matrix(t, P2pMatrixKind::kBiEnabled);
  ASSERT_NE(bi, nullptr);
  EXPECT_DOUBLE_EQ(bi->cells[0 * 8 + 1], 424.90);
  EXPECT_DOUBLE_EQ(bi->cells[7 * 8 + 0], 427.34);
  EXPECT_DOUBLE_EQ(bi->cells[0], 1551.64);  // a diagonal over 1000: wider than its column
  const P2pMatrix* lat = Matrix(t, P2pMatrixKind::kLatencyEnabled);
  ASSERT_NE(lat, nullptr);
  EXPECT_DOUBLE_EQ(lat->cells[0 * 8 + 3], 3.33);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(P2pBandwidthTest, PeerAccessAndCutRowsOfPastedCopies) {
  laggard::Run two = IngestPaths({TestData("p2p_bandwidth", "rtx2080ti_2gpu_no_p2p.txt")});
  ASSERT_EQ(two.network.p2p_tests.size(), 1u);
  EXPECT_EQ(two.network.p2p_tests[0].can_access, (std::vector<int8_t>{1, 0, 0, 1}));
  laggard::Run dgx1 = IngestPaths({TestData("p2p_bandwidth", "dgx1_8xv100_topology_partial.txt")});
  ASSERT_EQ(dgx1.network.p2p_tests.size(), 1u);
  const P2pBandwidthTest& t = dgx1.network.p2p_tests[0];
  EXPECT_EQ(t.can_access[0 * 8 + 4], 0);
  EXPECT_EQ(t.can_access[0 * 8 + 6], 1);
  EXPECT_EQ(dgx1.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

std::vector<Finding> FindingsOf(const std::string& path) {
  return P2pLinkFindings(IngestPaths({path}));
}

TEST(P2pLinksTest, OneGpuLowAgainstAllOthersIsAWarning) {
  std::vector<Finding> f = FindingsOf(TestData("p2p_bandwidth", "a100_8gpu_gpu0_low.txt"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, FindingCode::kGpuP2pBandwidthLow);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].entity.gpu, 0);
  EXPECT_NE(f[0].message.find("18% below"), std::string::npos) << f[0].message;
  bool latency = false;
  for (const Evidence& e : f[0].evidence) latency |= e.text.find("latency") != std::string::npos;
  EXPECT_TRUE(latency);
}

TEST(P2pLinksTest, ACrossSocketPathIsInformationOnly) {
  std::vector<Finding> f =
      FindingsOf(TestData("p2p_bandwidth", "rtxpro6000_6gpu_gpu3_crossnuma_partial.txt"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].entity.gpu, 3);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
}

TEST(P2pLinksTest, UniformTopologyAndTwoGpusGiveNothing) {
  EXPECT_TRUE(FindingsOf(TestData("p2p_bandwidth", "rtx2080ti_2gpu_no_p2p.txt")).empty());
  EXPECT_TRUE(FindingsOf(TestData("p2p_bandwidth", "dgxstation_4xv100_partial.txt")).empty());
  EXPECT_TRUE(FindingsOf(TestData("p2p_bandwidth", "dgx1_8xv100_topology_partial.txt")).empty());
}

// A 4-GPU matrix, symmetric, every cell `base` but the listed pairs.
std::string Bidirectional(double base, std::vector<std::pair<int, int>> low, double low_value) {
  std::string s =
      "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n   D\\D     0      1      2      3\n";
  for (int i = 0; i < 4; ++i) {
    s += "     " + std::to_string(i);
    for (int j = 0; j < 4; ++j) {
      double v = i == j ? 700 : base;
      for (auto [a, b] : low) {
        if ((i == a && j == b) || (i == b && j == a)) v = low_value;
      }
      s += " " + std::to_string(v);
    }
    s += "\n";
  }
  return s;
}

TEST(P2pLinksTest, OneSlowPairBlamesNoGpu) {
  TempDir dir;
  // Only the 0-1 pair is slow: GPU 0 and GPU 1 each have one slow link of
  // three, the others none.
  WriteFile(dir.File("node-1/p2p.txt"), Bidirectional(100, {{0, 1}}, 50));
  std::vector<Finding> f = P2pLinkFindings(IngestPaths({dir.path()}));
  for (const Finding& x : f) EXPECT_EQ(x.severity, Severity::kInfo) << x.message;
}

// An n-GPU bidirectional matrix whose cell (i, j) is link(i, j).
template <typename Link>
std::string Matrix(int n, Link link) {
  std::string s = "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n   D\\D";
  for (int j = 0; j < n; ++j) s += " " + std::to_string(j);
  s += "\n";
  for (int i = 0; i < n; ++i) {
    s += "     " + std::to_string(i);
    for (int j = 0; j < n; ++j) s += " " + std::to_string(i == j ? 700.0 : link(i, j));
    s += "\n";
  }
  return s;
}

// Boxes whose wiring makes one GPU's links slower: no warning.
TEST(P2pLinksTest, WiringIsNotAFault) {
  auto warnings = [](const std::string& text) {
    TempDir dir;
    WriteFile(dir.File("node-1/p2p.txt"), text);
    size_t n = 0;
    for (const Finding& f : P2pLinkFindings(IngestPaths({dir.path()})))
      n += f.severity == Severity::kWarning;
    return n;
  };
  // Three GPUs, an NVLink bridge between 0 and 1 only.
  EXPECT_EQ(warnings(Matrix(3, [](int i, int j) { return i + j == 1 ? 500.0 : 28.0; })), 0u);
  // Four GPUs in two NVLink pairs, one bridge faster.
  EXPECT_EQ(warnings(Matrix(4,
                            [](int i, int j) {
                              if (i / 2 != j / 2) return 28.0;
                              return i < 2 ? 516.0 : 450.0;
                            })),
            0u);
  // Eight PCIe GPUs, six on one socket, two on the other (26% slower across).
  EXPECT_EQ(warnings(Matrix(8, [](int i, int j) { return (i < 6) == (j < 6) ? 50.0 : 37.0; })), 0u);
  // The same eight with GPU 0's links all 18% low: a warning.
  EXPECT_EQ(warnings(Matrix(8, [](int i, int j) { return i == 0 || j == 0 ? 41.0 : 50.0; })), 1u);
}

TEST(P2pBandwidthTest, BadRowsAreCountedWithTheirLine) {
  TempDir dir;
  WriteFile(dir.File("p2p.txt"),
            "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n"
            "   D\\D     0      1      2\n"
            "     0 700.00 100.00 100.00\n"
            "     1 100.00 700.00\n"        // cut short
            "     2 100.00 abc 700.00\n");  // not a number
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.network.p2p_tests.size(), 1u);
  const P2pMatrix& m = run.network.p2p_tests[0].matrices[0];
  EXPECT_DOUBLE_EQ(m.cells[1], 100);
  EXPECT_TRUE(std::isnan(m.cells[1 * 3 + 0]));
  EXPECT_EQ(run.diagnostics.count(DiagCode::kP2pBadRow), 2u);
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kP2pBadRow)[0].line, 4u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetNoHost), 1u);
}

}  // namespace
}  // namespace laggard
