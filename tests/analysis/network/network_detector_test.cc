// The network detector's two halves on their own: DecideNetwork on link
// metrics made by hand (a degraded port, a clean control, the rate edge),
// MeasureNetwork on a tiny Run.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/network/network_detector.h"

namespace laggard {
namespace {

std::string Host(int h) { return fmt::format("node-{:02d}", h); }

// One Active 4X port per host at `rates[h]` Gb/s.
NetworkData Ports(const std::vector<double>& rates) {
  NetworkData net;
  for (size_t h = 0; h < rates.size(); ++h) {
    IbPort p;
    p.host = Host(static_cast<int>(h));
    p.ca = "mlx5_0";
    p.state = "Active";
    p.phys_state = "LinkUp";
    p.rate_gbps = rates[h];
    p.width = 4;
    p.link_layer = "InfiniBand";
    net.ib_ports.push_back(p);
  }
  return net;
}

// Every port's peers: 4 ports of one kind, at a median of 400 Gb/s and 4X.
NetworkMetrics PeersAt400(const NetworkData& net) {
  NetworkMetrics m;
  m.net = &net;
  for (size_t i = 0; i < net.ib_ports.size(); ++i) {
    IbPortMetrics pm;
    pm.peer_rate_gbps = 400;
    pm.peer_rates = net.ib_ports.size();
    pm.peer_width = 4;
    pm.peer_widths = net.ib_ports.size();
    pm.active_elsewhere = net.ib_ports.size();
    m.ib_ports.push_back(pm);
  }
  return m;
}

RankMap NoRanks() { return RankMap::Build(laggard::Run(), std::nullopt); }

TEST(NetworkDecisionTest, APortAtHalfItsPeersRateIsDegraded) {
  NetworkData net = Ports({400, 400, 200, 400});
  NetworkAnalysis a = DecideNetwork(PeersAt400(net), NoRanks(), {}, NetworkDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kNetLinkDegraded);
  EXPECT_EQ(a.findings[0].entity.host, "node-02");
  EXPECT_EQ(a.findings[0].entity.nic, "mlx5_0 port 1");
  EXPECT_EQ(a.findings[0].message,
            "mlx5_0 port 1 on node-02: rate 200 Gb/s vs 400 Gb/s on its peers");
}

TEST(NetworkDecisionTest, PortsAtTheirPeersRateGiveNoFinding) {
  NetworkData net = Ports({400, 400, 400, 400});
  EXPECT_TRUE(
      DecideNetwork(PeersAt400(net), NoRanks(), {}, NetworkDetectorOptions()).findings.empty());
}

TEST(NetworkDecisionTest, TheRateRatioIsExclusive) {
  NetworkDetectorOptions opt;
  NetworkData at = Ports({400, 400, opt.rate_ratio * 400, 400});
  EXPECT_TRUE(DecideNetwork(PeersAt400(at), NoRanks(), {}, opt).findings.empty());
  NetworkData below = Ports({400, 400, opt.rate_ratio * 400 - 1, 400});
  EXPECT_EQ(DecideNetwork(PeersAt400(below), NoRanks(), {}, opt).findings.size(), 1u);
  // With fewer than min_link_peers peers a rate says nothing.
  NetworkMetrics few = PeersAt400(below);
  for (IbPortMetrics& pm : few.ib_ports) pm.peer_rates = opt.min_link_peers - 1;
  EXPECT_TRUE(DecideNetwork(few, NoRanks(), {}, opt).findings.empty());
}

TEST(NetworkDecisionTest, APortDownWhereItsPeersAreActiveIsPortDown) {
  NetworkData net = Ports({400, 400, 400, 400});
  net.ib_ports[1].state = "Down";
  net.ib_ports[1].phys_state = "Disabled";
  NetworkMetrics m = PeersAt400(net);
  for (IbPortMetrics& pm : m.ib_ports) pm.active_elsewhere = 3;
  NetworkAnalysis a = DecideNetwork(m, NoRanks(), {}, NetworkDetectorOptions());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kNetPortDown);
  EXPECT_EQ(a.findings[0].confidence, 0.85);
  EXPECT_NE(a.findings[0].message.find("the same port is Active on 3 other hosts"),
            std::string::npos);
}

NcclTestRun AllReduce(const std::vector<int>& hosts, double busbw_gbps) {
  NcclTestRun r;
  r.collective = "all_reduce";
  for (int h : hosts) {
    NcclTestRank k;
    k.rank = static_cast<int32_t>(r.ranks.size());
    k.host = Host(h);
    r.ranks.push_back(k);
  }
  for (int64_t size : {int64_t{1} << 20, int64_t{1} << 30, int64_t{1} << 32}) {
    NcclTestRow row;
    row.size_bytes = size;
    row.oop_busbw_gbps = size == (int64_t{1} << 20) ? 1.0 : busbw_gbps;
    r.rows.push_back(row);
  }
  return r;
}

TEST(NetworkMetricsTest, LinksAndNcclTestsAreComparedWithTheirPeers) {
  laggard::Run run;
  run.network = Ports({400, 400, 200, 400});
  run.network.nccl_tests.push_back(AllReduce({0, 1}, 100));
  run.network.nccl_tests.push_back(AllReduce({2, 3}, 50));
  run.network.nccl_tests.push_back(AllReduce({0, 2}, 96));
  NetworkMetrics m = MeasureNetwork(run, NetworkDetectorOptions());
  ASSERT_EQ(m.ib_ports.size(), 4u);
  EXPECT_EQ(m.ib_ports[2].peer_rate_gbps, 400);
  EXPECT_EQ(m.ib_ports[2].peer_rates, 4u);
  EXPECT_EQ(m.ib_ports[2].active_elsewhere, 4u);
  ASSERT_EQ(m.nccl_tests.size(), 3u);
  // The large sizes (>= 1/4 of the largest) only.
  EXPECT_EQ(m.nccl_tests[1].large_busbw_gbps, 50);
  EXPECT_EQ(m.nccl_tests[1].peer_busbw_gbps, 98);
  EXPECT_EQ(m.nccl_tests[0].peer_busbw_gbps, 73);
  ASSERT_EQ(m.nccl_test_groups.size(), 1u);
  EXPECT_EQ(m.nccl_test_groups[0].runs.size(), 3u);
  // Each host's best run: node-02 at 96 / 75 in its pair with node-00.
  EXPECT_DOUBLE_EQ(m.best_busbw_ratio.at("node-02"), 96.0 / 75);
  EXPECT_DOUBLE_EQ(m.best_busbw_ratio.at("node-03"), 50.0 / 98);

  NetworkAnalysis a = DecideNetwork(m, NoRanks(), {}, NetworkDetectorOptions());
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[0].code, FindingCode::kNetLinkDegraded);
  // The pair node-02 + node-03 at 0.50x of the best pair, 4 hosts in 3
  // pairs: node-02 is fast with node-00, node-03 tested with no one else:
  // node-03 or the path, named by neither finding's host.
  EXPECT_EQ(a.findings[1].code, FindingCode::kNetPairSlow);
  EXPECT_EQ(a.findings[1].entity.host, std::nullopt);
  EXPECT_NE(a.findings[1].message.find("node-03, or the path"), std::string::npos)
      << a.findings[1].message;
  EXPECT_EQ(AnalyzeNetwork(run, NoRanks(), {}, NetworkDetectorOptions()).findings.size(), 2u);
}

}  // namespace
}  // namespace laggard
