// The hang verdict with the network beside it: network findings on the
// hosts a hang names join its evidence, timed against the first hang line.

#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/analyze_run.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

constexpr TimeNs kT0 = 1'714'564'800'000'000'000;  // 2024-05-01T12:00:00Z
constexpr DurationNs kSecond = 1'000'000'000;

Finding Net(const std::string& host, TimeNs at) {
  Finding n;
  n.code = FindingCode::kNetPortDown;
  n.severity = Severity::kCritical;
  n.entity.host = host;
  n.entity.nic = "mlx5_1 port 1";
  n.message = host + " mlx5_1 port 1 is Down";
  n.onset_time = at;
  n.next_steps.push_back("reseat or replace the cable of " + host + " mlx5_1");
  return n;
}

struct HangCase {
  laggard::Run run;
  Analyses a;
};

HangCase TransportErrorOn(const std::string& host) {
  HangCase h;
  HangEvent e;
  e.kind = HangEventKind::kTransportError;
  e.rank = 3;
  e.time_ns = kT0 + 30 * kSecond;
  h.run.hang.events.push_back(e);
  h.a.hang.hang = true;
  Finding f;
  f.code = FindingCode::kHangTransportError;
  f.severity = Severity::kCritical;
  f.entity.rank = 3;
  f.entity.host = host;
  f.message = "rank 3 on " + host + ": NET/IB completion error 12";
  f.confidence = 0.5;
  f.next_steps.push_back("check the NIC of " + host);
  h.a.hang.findings.push_back(f);
  return h;
}

TEST(HangVerdictTest, NetworkFindingsOnTheHangsHostAreEvidenceOnOneTimeline) {
  HangCase h = TransportErrorOn("node-1");
  h.a.network.findings.push_back(Net("node-1", kT0));
  h.a.network.findings.push_back(Net("node-7", kT0));
  Verdict v = DecideVerdict(h.run, h.a);
  ASSERT_EQ(v.status, VerdictStatus::kHang);
  ASSERT_EQ(v.culprits.size(), 1u);
  const Culprit& c = v.culprits[0];
  int beside = 0;
  for (const std::string& e : c.evidence) {
    if (e.rfind("network beside the hang: ", 0) != 0) continue;
    ++beside;
    EXPECT_EQ(e,
              "network beside the hang: node-1 mlx5_1 port 1 is Down (30 s before the first hang "
              "line)");
  }
  EXPECT_EQ(beside, 1);  // node-7's port is not this hang's
  EXPECT_NEAR(c.confidence, 0.6, 1e-9);
  ASSERT_FALSE(v.next_steps.empty());
  EXPECT_EQ(v.next_steps.front(), "reseat or replace the cable of node-1 mlx5_1");
}

TEST(HangVerdictTest, NoNetworkFindingLeavesTheHangAsItWas) {
  HangCase h = TransportErrorOn("node-1");
  h.a.network.findings.push_back(Net("node-7", kT0));
  Verdict v = DecideVerdict(h.run, h.a);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].confidence, 0.5);
  EXPECT_EQ(v.next_steps.front(), "check the NIC of node-1");
}

TEST(HangVerdictTest, AGpuErrorBesideACollectiveNoneCompletedIsItsGpuSide) {
  HangCase h;
  h.a.hang.hang = true;
  Finding f;
  f.code = FindingCode::kHangStuckCollective;
  f.severity = Severity::kCritical;
  f.entity.job = true;
  f.ranks = {6, 7};
  f.message = "process group 3 (TENSOR_MODEL_PARALLEL_GROUP, ranks 6, 7): none completed #45255";
  f.confidence = 0.85;
  f.next_steps.push_back("on the hosts of ranks 6, 7: `nvidia-smi -q -d ECC,ROW_REMAPPER`");
  h.a.hang.findings.push_back(f);
  Finding xid;
  xid.code = FindingCode::kGpuErrors;
  xid.severity = Severity::kCritical;
  xid.entity.host = "node-3";
  xid.entity.gpu = 6;
  xid.message = "node-3 GPU 6: Xid 79 (fallen off the bus)";
  xid.next_steps.push_back("drain node-3 and reseat GPU 6");
  h.a.hardware.findings.push_back(xid);
  Verdict v = DecideVerdict(h.run, h.a);
  ASSERT_EQ(v.status, VerdictStatus::kHang);
  ASSERT_EQ(v.culprits.size(), 1u);
  const Culprit& c = v.culprits[0];
  EXPECT_EQ(c.cause_class, CauseClass::kCommunication);
  EXPECT_EQ(c.ranks, (std::vector<int32_t>{6, 7}));
  EXPECT_NE(std::find(c.evidence.begin(), c.evidence.end(),
                      "GPU beside the hang: node-3 GPU 6: Xid 79 (fallen off the bus)"),
            c.evidence.end());
  EXPECT_NEAR(c.confidence, 0.95, 1e-9);
  ASSERT_FALSE(v.next_steps.empty());
  EXPECT_EQ(v.next_steps.front(), "drain node-3 and reseat GPU 6");
}

}  // namespace
}  // namespace laggard
