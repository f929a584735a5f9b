// Node-pair bandwidth tables (ingest/network/pair_table.cc) and the node
// or fabric decision on them and on two-host nccl-tests runs
// (analysis/network/pair_bandwidth.h): the real tables of
// tests/data/node_pairs/ as their README expects, negative controls, and
// bad rows counted.

#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "analysis/analyze_run.h"
#include "analysis/network/pair_bandwidth.h"
#include "test_util.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::TestData;
using testing_util::WriteFile;

std::vector<Finding> Findings(const laggard::Run& run) {
  return AnalyzeNetwork(run, RankMap::Build(laggard::Run(), std::nullopt), {},
                        NetworkDetectorOptions())
      .findings;
}

size_t Count(const std::vector<Finding>& fs, FindingCode code) {
  return static_cast<size_t>(
      std::count_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.code == code; }));
}

const Finding* Find(const std::vector<Finding>& fs, FindingCode code) {
  for (const Finding& f : fs) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

TEST(PairTableTest, Issue106NamesTheNodeSlowWithEveryPartner) {
  laggard::Run run = IngestPaths({TestData("node_pairs", "issue106_node_pairs.txt")});
  ASSERT_EQ(run.network.pair_bandwidths.size(), 5u);
  const PairBandwidth& p = run.network.pair_bandwidths[2];
  EXPECT_EQ(p.host_a, "se02gn284");
  EXPECT_EQ(p.host_b, "se02gn678");
  EXPECT_DOUBLE_EQ(p.gbps, 49.28);
  EXPECT_EQ(p.note, "crossing TOR");
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  std::vector<Finding> fs = Findings(run);
  ASSERT_EQ(fs.size(), 2u);
  const Finding* node = Find(fs, FindingCode::kNetBandwidthLow);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->entity.host, "se02gn644");
  EXPECT_NEAR(*node->slowdown, 1 - 49.33 / 87.585, 0.002);
  // 284 with 678: neither node tested with another, so neither is named.
  const Finding* open = Find(fs, FindingCode::kNetPairSlow);
  ASSERT_NE(open, nullptr);
  EXPECT_FALSE(open->entity.host);
  EXPECT_NE(open->message.find("se02gn284 and se02gn678"), std::string::npos);
}

TEST(PairTableTest, ClusterSummaryIsReadPerTestAndSplitsIntoTwoGroups) {
  laggard::Run run = IngestPaths({TestData("node_pairs", "cluster00_8node_summary.md")});
  ASSERT_EQ(run.network.pair_bandwidths.size(), 224u);
  EXPECT_EQ(run.network.pair_bandwidths[0].group, "test alltoall_perf, N 2, G 1");
  EXPECT_EQ(run.network.pair_bandwidths[0].host_a, "cnode4-005");
  EXPECT_EQ(run.network.pair_bandwidths[0].host_b, "cnode4-006");
  EXPECT_DOUBLE_EQ(run.network.pair_bandwidths[0].gbps, 27.102);  // the average, not the peak

  std::vector<Finding> fs = Findings(run);
  // Only alltoall at 8 GPUs per node is below 0.7x; no node is named.
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, FindingCode::kNetPairFabric);
  EXPECT_FALSE(fs[0].entity.host);
  EXPECT_TRUE(fs[0].ranks.empty());
  EXPECT_NE(fs[0].message.find("G 8"), std::string::npos);
  EXPECT_NE(fs[0].message.find(
                "(cnode4-005, cnode4-006, cnode4-007, cnode4-008, cnode4-013) and (cnode4-009, "
                "cnode4-011, cnode4-012)"),
            std::string::npos)
      << fs[0].message;
}

TEST(PairTableTest, ScatteredSlowPairsAreTheFabricAndFailedRunsAreCounted) {
  laggard::Run run = IngestPaths({TestData("node_pairs", "cluster01_17node_alltoall_excerpt.md")});
  EXPECT_EQ(run.network.pair_bandwidths.size(), 134u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kPairBadRow), 2u);  // two failed pairs
  std::vector<Finding> fs = Findings(run);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, FindingCode::kNetPairFabric);
  EXPECT_NE(fs[0].message.find("8 slow node pairs"), std::string::npos) << fs[0].message;
  // The Slurm host list "cnode2-[002-003]" is two hosts, not one.
  EXPECT_NE(fs[0].evidence.size(), 0u);
  bool has_range = false;
  for (const PairBandwidth& p : run.network.pair_bandwidths)
    has_range = has_range || (p.host_a == "cnode2-002" && p.host_b == "cnode2-003");
  EXPECT_TRUE(has_range);
}

TEST(PairTableTest, HealthyClusterGivesNothing) {
  laggard::Run run = IngestPaths({TestData("node_pairs", "cluster02_10node_healthy_excerpt.md")});
  EXPECT_EQ(run.network.pair_bandwidths.size(), 45u);
  EXPECT_TRUE(Findings(run).empty());
}

TEST(PairTableTest, TwoRawLogsAreTooFewForThePairRules) {
  laggard::Run run = IngestPaths({TestData("node_pairs", "nccl_tests_two_logs")});
  std::vector<Finding> fs = Findings(run);
  EXPECT_EQ(Count(fs, FindingCode::kNetPairFabric) + Count(fs, FindingCode::kNetPairSlow), 0u);
  const Finding* low = Find(fs, FindingCode::kNetBandwidthLow);
  ASSERT_NE(low, nullptr);
  EXPECT_FALSE(low->entity.host);  // one low run does not name a host
}

PairMeasure M(std::string a, std::string b, double gbps) { return {a, b, gbps, {}, std::nullopt}; }

TEST(PairDecisionTest, SlowPairsSharingNoNodeNameNoNode) {
  // A-B and C-D slow; A-C, A-D, B-C, B-D fast: the nccl #325 routing case.
  PairDecision d = DecidePairs({M("A", "B", 25), M("C", "D", 24), M("A", "C", 39), M("A", "D", 40),
                                M("B", "C", 39), M("B", "D", 38)},
                               0.7);
  EXPECT_TRUE(d.decided);
  EXPECT_TRUE(d.bad_nodes.empty());
  EXPECT_EQ(d.fabric.size(), 2u);
  EXPECT_TRUE(d.open.empty());
}

TEST(PairDecisionTest, NoOutlierNoSlowPair) {
  PairDecision d = DecidePairs({M("a", "b", 80), M("a", "c", 78), M("b", "c", 81), M("c", "d", 79),
                                M("a", "d", 77), M("b", "d", 80)},
                               0.7);
  EXPECT_TRUE(d.decided);
  EXPECT_TRUE(d.bad_nodes.empty());
  EXPECT_TRUE(d.fabric.empty());
  EXPECT_TRUE(d.open.empty());
}

TEST(PairDecisionTest, ANodeWhosePartnersAreNotShownFastIsNotNamed) {
  // x slow with y and z, and y, z tested with nobody else: x, or y and z?
  PairDecision d =
      DecidePairs({M("x", "y", 40), M("x", "z", 41), M("p", "q", 80), M("q", "r", 79)}, 0.7);
  EXPECT_TRUE(d.decided);
  EXPECT_TRUE(d.bad_nodes.empty());
  EXPECT_EQ(d.open.size(), 2u);
}

TEST(PairDecisionTest, RepeatedPairsTakeTheirMedianAndSmallSetsDecideNothing) {
  PairDecision d = DecidePairs({M("a", "b", 40), M("b", "a", 80), M("a", "b", 82)}, 0.7);
  ASSERT_EQ(d.pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(d.pairs[0].gbps, 80);
  EXPECT_EQ(d.pairs[0].measurements, 3u);
  EXPECT_FALSE(d.decided);
  PairDecision two = DecidePairs({M("a", "b", 40), M("a", "c", 80)}, 0.7);
  EXPECT_FALSE(two.decided);
  ASSERT_EQ(two.open.size(), 1u);  // said, as too few to decide
}

TEST(PairDecisionTest, TwoBadNodesAreBothNamed) {
  std::vector<PairMeasure> ms;
  const std::vector<std::string> hosts = {"n1", "n2", "n3", "n4", "n5", "n6"};
  for (size_t i = 0; i < hosts.size(); ++i) {
    for (size_t j = i + 1; j < hosts.size(); ++j) {
      bool slow = hosts[i] == "n2" || hosts[j] == "n2" || hosts[i] == "n5" || hosts[j] == "n5";
      ms.push_back(M(hosts[i], hosts[j], slow ? 30 : 90));
    }
  }
  PairDecision d = DecidePairs(ms, 0.7);
  EXPECT_EQ(d.bad_nodes, (std::vector<std::string>{"n2", "n5"}));
  EXPECT_TRUE(d.fabric.empty());
  EXPECT_TRUE(d.open.empty());
}

TEST(PairTableTest, BadRowsUnitsAndASinglePairAreCounted) {
  TempDir dir;
  // Truncated rows, a host with itself, a zero, then mixed units.
  std::string path = WriteFile(dir.File("pairs.txt"),
                               "a1,a2 40.0\n"
                               "a1,a3 41.0\n"
                               "a2,a3\n"
                               "a2,a2 40\n"
                               "a3,a4 0\n"
                               "a4,a5 320 Gb/s\n"
                               "a1,a5 40 GB/s\n"
                               "a2,a4 38000 MB/s\n"
                               "a1,a4 39 GB/s\n"
                               "a3,a5 41 GB/s\n"
                               "b1,b2 40 GB/s\n");
  laggard::Run run = IngestPaths({path});
  EXPECT_EQ(run.diagnostics.count(DiagCode::kPairBadRow), 3u + 2u);  // + 2 rows without a unit
  EXPECT_EQ(run.diagnostics.count(DiagCode::kPairMixedUnits), 1u);
  ASSERT_EQ(run.network.pair_bandwidths.size(), 6u);
  EXPECT_DOUBLE_EQ(run.network.pair_bandwidths[0].gbps, 40);  // 320 Gb/s
  EXPECT_DOUBLE_EQ(run.network.pair_bandwidths[2].gbps, 38);

  std::string one = WriteFile(dir.File("one.csv"), "host1,host2,busbw\nnode-a,node-b,80.5\n");
  laggard::Run single = IngestPaths({one});
  ASSERT_EQ(single.network.pair_bandwidths.size(), 1u);
  EXPECT_EQ(single.diagnostics.count(DiagCode::kPairTooFew), 1u);
  EXPECT_TRUE(Findings(single).empty());
}

TEST(PairTableTest, OtherThreeColumnTextIsNotATable) {
  TempDir dir;
  // Numbers first, or a host list with words after: not this format.
  std::string a = WriteFile(dir.File("a.txt"), "1,2 3\n4,5 6\n7,8 9\n");
  std::string b = WriteFile(dir.File("b.txt"), "node1 node2 ok\nnode3 node4 ok\nnode5 node6 ok\n");
  laggard::Run run = IngestPaths({a, b});
  EXPECT_TRUE(run.network.pair_bandwidths.empty());
}

}  // namespace
}  // namespace laggard

namespace laggard {
namespace {

// From an independent review: inputs that named a healthy node or claimed
// another file.
TEST(PairReviewTest, ATypoDoesNotLiftTheFastLevel) {
  PairDecision d = DecidePairs({M("n1", "n2", 8836), M("n1", "n3", 88.1), M("n1", "n4", 88.4),
                                M("n2", "n3", 88.0), M("n2", "n4", 87.9), M("n3", "n4", 88.3)},
                               0.7);
  EXPECT_NEAR(d.reference_gbps, 88.3, 0.2);
  EXPECT_TRUE(d.bad_nodes.empty());
  EXPECT_TRUE(d.open.empty());
}

TEST(PairReviewTest, PairsJustAboveTheCutClearNoNode) {
  // e at 0.695x with a and b, who are "fast" only at 0.71x elsewhere.
  PairDecision d = DecidePairs({M("c", "d", 100), M("f", "g", 100), M("e", "a", 69.5),
                                M("e", "b", 69.5), M("a", "c", 71), M("b", "d", 71)},
                               0.7);
  EXPECT_TRUE(d.bad_nodes.empty());
  EXPECT_TRUE(d.fabric.empty());
}

TEST(PairReviewTest, NodesTheDataCannotPinDownAreNotNamed) {
  // x3's partners cleared by one pair only.
  PairDecision tri = DecidePairs({M("x1", "x2", 90), M("x1", "x3", 62), M("x2", "x3", 61)}, 0.7);
  EXPECT_TRUE(tri.bad_nodes.empty());
  ASSERT_EQ(tri.suspects.size(), 1u);
  // e1 and e2 slow with everyone, never tested together: one slow link?
  PairDecision far =
      DecidePairs({M("a1", "a2", 90), M("a3", "a4", 90), M("a1", "a3", 90), M("e1", "a1", 40),
                   M("e1", "a2", 41), M("e2", "a3", 40), M("e2", "a4", 39)},
                  0.7);
  EXPECT_TRUE(far.bad_nodes.empty());
  EXPECT_EQ(far.suspects.size(), 2u);
}

TEST(PairReviewTest, WordsOfOtherTablesAreNotHostPairs) {
  TempDir dir;
  std::string steps = WriteFile(
      dir.File("steps.log"), "rank0 it1 1.019\nrank1 it1 1.021\nrank2 it1 1.5\nrank3 it1 1.02\n");
  std::string csv = WriteFile(dir.File("t.csv"),
                              "hostname,gpu,avg_step_time_s\nnode1,gpu0,1.0\nnode2,gpu0,0.9\n"
                              "node3,gpu0,1.0\n");
  laggard::Run run = IngestPaths({steps, csv});
  EXPECT_TRUE(run.network.pair_bandwidths.empty());
}

}  // namespace
}  // namespace laggard

namespace laggard {
namespace {

TEST(PairReviewTest, QuotedCsvCellsRead) {
  TempDir dir;
  std::string csv = WriteFile(dir.File("pairs.csv"),
                              "\"host1\",\"host2\",\"busbw\"\n\"n1\",\"n2\",\"88.1\"\n"
                              "\"n1\",\"n3\",\"87.9\"\n\"n2\",\"n3\",\"88.3\"\n");
  laggard::Run run = IngestPaths({csv});
  ASSERT_EQ(run.network.pair_bandwidths.size(), 3u);
  EXPECT_EQ(run.network.pair_bandwidths[0].host_a, "n1");
  EXPECT_DOUBLE_EQ(run.network.pair_bandwidths[2].gbps, 88.3);
}

TEST(PairReviewTest, TheSameTableTwiceNamesItsNodeOnce) {
  TempDir dir;
  const std::string rows = "h1,h2 75\nh1,h3 74\nh2,h3 76\nh1,h4 30\nh2,h4 31\nh3,h4 29\n";
  std::string a = WriteFile(dir.File("a/pairs.txt"), rows);
  std::string b = WriteFile(dir.File("b/pairs.txt"), rows);
  std::vector<Finding> fs = Findings(IngestPaths({a, b}));
  ASSERT_EQ(Count(fs, FindingCode::kNetBandwidthLow), 1u);
  EXPECT_EQ(Find(fs, FindingCode::kNetBandwidthLow)->entity.host, "h4");
}

TEST(PairReviewTest, AHostOutsideTheJobIsNotItsCulprit) {
  auto culprits = [](const std::vector<std::string>& paths) {
    laggard::Run run = IngestPaths(paths);
    Analyses a = AnalyzeRun(run, AnalysisOptions());
    return DecideVerdict(run, a).culprits;
  };
  // The table alone: its bad node is the answer.
  std::vector<Culprit> alone = culprits({TestData("node_pairs", "issue106_node_pairs.txt")});
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].entity.host, "se02gn644");
  // With a healthy job on other hosts: a sweep of other nodes, no culprit.
  TempDir dir;
  std::string steps = "rank,step,duration,host\n";
  for (int step = 1; step <= 30; ++step) {
    for (int rank = 0; rank < 4; ++rank) {
      steps += fmt::format("{},{},{:.4f},job-node{}\n", rank, step,
                           1.0 + 0.001 * ((rank + step) % 3), rank / 2 + 1);
    }
  }
  std::string csv = WriteFile(dir.File("steps.csv"), steps);
  EXPECT_TRUE(culprits({csv, TestData("node_pairs", "issue106_node_pairs.txt")}).empty());
}

}  // namespace
}  // namespace laggard
