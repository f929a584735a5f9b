// The rank <-> GPU join (RankMap::Build) on hand-made runs: which rule ties
// each rank, the node index taken from the host name's number (never from
// the host's position among the hosts captured), the numbering base decided
// or refused, and what the map says about GPUs it could not tie.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "analysis/common/rank_map.h"

namespace laggard {
namespace {

// `ranks` ranks with step records and no host, and the GPUs 0..gpus-1 of
// each of `gpu_hosts`.
laggard::Run RunOf(int32_t ranks, const std::vector<std::string>& gpu_hosts, int32_t gpus) {
  laggard::Run run;
  for (int32_t r = 0; r < ranks; ++r) {
    StepSeries s;
    s.info.rank = r;
    run.ranks.push_back(s);
  }
  for (const std::string& h : gpu_hosts) {
    for (int32_t g = 0; g < gpus; ++g) {
      GpuRecord rec;
      rec.host = h;
      rec.index = g;
      run.hardware.gpus.push_back(rec);
    }
  }
  return run;
}

std::optional<RankTie> TieOf(const RankMap& m, TieRule rule) {
  for (const RankTie& t : m.Ties()) {
    if (t.rule == rule) return t;
  }
  return std::nullopt;
}

TEST(HostNumberTest, TakesTheTrailingNumberOfTheShortName) {
  EXPECT_EQ(ParseHostNumber("node-01")->number, 1);
  EXPECT_EQ(ParseHostNumber("node-01")->prefix, "node-");
  EXPECT_EQ(ParseHostNumber("gpu-node-3")->number, 3);
  EXPECT_EQ(ParseHostNumber("host12")->number, 12);
  EXPECT_EQ(ParseHostNumber("node-07.cluster.local")->number, 7);
  EXPECT_FALSE(ParseHostNumber("login"));
  EXPECT_FALSE(ParseHostNumber("10.0.0.3"));  // an address, not a numbered name
}

TEST(RankMapTest, NodeIndexComesFromTheHostNumberNotItsPositionAmongHostsCaptured) {
  // 32 ranks, 8 per node; GPU metrics of the suspect node-02 and the healthy
  // node-00 only. node-02 is node index 2 (ranks 16-23), not the second host
  // captured (ranks 8-15).
  laggard::Run run = RunOf(32, {"node-00", "node-02"}, 8);
  RankMap m = RankMap::Build(run, 8);
  EXPECT_EQ(m.RankOf("node-02", 3), 19);
  EXPECT_EQ(m.RankOf("node-00", 3), 3);
  EXPECT_FALSE(m.GpuOf(11));
  std::optional<RankTie> t = TieOf(m, TieRule::kHostNumber);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->ranks.size(), 16u);
  EXPECT_NE(t->how.find("node-00"), std::string::npos) << t->how;  // why numbering starts at 0
  EXPECT_TRUE(m.untied().empty());
}

TEST(RankMapTest, RefusesWhenNumberingMayStartAtZeroOrOne) {
  // 16 ranks on 2 nodes, only node-01 captured: node-01 is the second node
  // (0-based, ranks 8-15) or the first (1-based, ranks 0-7).
  laggard::Run run = RunOf(16, {"node-01"}, 8);
  RankMap m = RankMap::Build(run, 8);
  EXPECT_FALSE(m.RankOf("node-01", 3));
  ASSERT_EQ(m.untied().size(), 1u);
  const UntiedGpus& u = m.untied().front();
  EXPECT_EQ(u.host, "node-01");
  EXPECT_EQ(u.gpus.size(), 8u);
  EXPECT_NE(u.why.find("0 or 1"), std::string::npos) << u.why;
  EXPECT_NE(u.to_tie.find("--first-node"), std::string::npos) << u.to_tie;
  EXPECT_NE(u.to_tie.find("rank,host,gpu"), std::string::npos) << u.to_tie;
}

TEST(RankMapTest, FirstNodeSettlesTheNumbering) {
  laggard::Run run = RunOf(16, {"node-01"}, 8);
  EXPECT_EQ(RankMap::Build(run, 8, 0).RankOf("node-01", 3), 11);
  EXPECT_EQ(RankMap::Build(run, 8, 1).RankOf("node-01", 3), 3);
}

TEST(RankMapTest, TheLargestHostNumberEqualToTheNodeCountMeansNumberingFromOne) {
  // 4 nodes; node-04 exists, so 0-based numbering (node-00..node-03) cannot be.
  laggard::Run run = RunOf(32, {"node-02", "node-04"}, 8);
  RankMap m = RankMap::Build(run, 8);
  EXPECT_EQ(m.RankOf("node-04", 0), 24);
  EXPECT_EQ(m.RankOf("node-02", 5), 13);
}

TEST(RankMapTest, ALoggedHostCalibratesTheNumbering) {
  // Rank 3 names its host node-05 (a job on node-05..node-08): the first
  // node is number 5, so node-07 holds ranks 16-23.
  laggard::Run run = RunOf(32, {"node-07"}, 8);
  run.ranks[3].info.host = "node-05";
  RankMap m = RankMap::Build(run, 8);
  EXPECT_EQ(m.RankOf("node-07", 2), 18);
  EXPECT_EQ(m.GpuOf(3), std::make_pair(std::string("node-05"), 3));
  ASSERT_TRUE(TieOf(m, TieRule::kLoggedHost));
}

TEST(RankMapTest, HostNumbersBeyondTheJobAreRefused) {
  // A cluster's numbering, not the job's: node-12 cannot be one of 3 nodes,
  // and with 2 of the 3 hosts present their order says nothing either.
  laggard::Run run = RunOf(24, {"node-00", "node-12"}, 8);
  RankMap m = RankMap::Build(run, 8);
  EXPECT_FALSE(m.RankOf("node-12", 0));
  EXPECT_FALSE(m.RankOf("node-00", 0));
  ASSERT_EQ(m.untied().size(), 2u);
  EXPECT_NE(m.untied()[1].why.find("node-12"), std::string::npos) << m.untied()[1].why;
}

TEST(RankMapTest, EveryHostOfTheJobPresentUsesNameOrder) {
  // Unnumbered names, but as many hosts as the job has nodes.
  laggard::Run run = RunOf(16, {"alpha", "beta"}, 8);
  RankMap m = RankMap::Build(run, 8);
  EXPECT_EQ(m.RankOf("beta", 1), 9);
  ASSERT_TRUE(TieOf(m, TieRule::kHostPosition));
}

TEST(RankMapTest, WithoutGpusPerNodeUntiedGpusSayWhatWouldTieThem) {
  laggard::Run run = RunOf(16, {"node-01"}, 8);
  RankMap m = RankMap::Build(run, std::nullopt);
  ASSERT_EQ(m.untied().size(), 1u);
  EXPECT_NE(m.untied()[0].why.find("name no host"), std::string::npos) << m.untied()[0].why;
  EXPECT_NE(m.untied()[0].to_tie.find("--gpus-per-node"), std::string::npos);
  EXPECT_NE(m.untied()[0].to_tie.find("node-01/"), std::string::npos);
}

TEST(RankMapTest, StepLogsNamingHostAndGpuNeedNoRule) {
  laggard::Run run = RunOf(16, {"node-01"}, 8);
  for (int32_t r = 8; r < 16; ++r) {
    run.ranks[static_cast<size_t>(r)].info.host = "node-01";
    run.ranks[static_cast<size_t>(r)].info.local_gpu = r - 8;
  }
  RankMap m = RankMap::Build(run, 8);
  EXPECT_EQ(m.RankOf("node-01", 3), 11);
  std::optional<RankTie> t = TieOf(m, TieRule::kLogged);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->ranks.size(), 8u);
  EXPECT_FALSE(TieOf(m, TieRule::kHostNumber));
}

TEST(RankRangesTextTest, RunsOfRanksAreRangesAndLongListsAreCut) {
  EXPECT_EQ(RankRangesText({0, 1, 2, 3, 16, 17, 19}), "0-3, 16-17, 19");
  std::vector<int32_t> many;
  for (int32_t r = 0; r < 4000; r += 2) many.push_back(r);
  std::string s = RankRangesText(many);
  EXPECT_LT(s.size(), 80u) << s;
  EXPECT_NE(s.find("2000 ranks"), std::string::npos) << s;
}

}  // namespace
}  // namespace laggard
