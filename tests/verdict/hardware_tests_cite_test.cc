// Other tools' tests of the hardware beside laggard's culprit (issue 48,
// "reconcile"): nvidia-smi's throttle counters, p2pBandwidthLatencyTest and
// nccl-tests naming the culprit's GPU or host agree; naming another place
// they disagree, with why the culprit stands; another culprit's place is
// neither.

#include <gtest/gtest.h>

#include "verdict/verdict.h"
#include "verdict/verdict_internal.h"

namespace laggard {
namespace {

Finding At(FindingCode code, const std::string& host, std::optional<int32_t> gpu,
           const std::string& message) {
  Entity e;
  e.host = host;
  e.gpu = gpu;
  Finding f = MakeFinding(code, e);
  f.message = message;
  f.severity = Severity::kWarning;
  return f;
}

bool Has(const Culprit& c, const std::string& part) {
  for (const std::string& e : c.evidence) {
    if (e.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(HardwareTestsCiteTest, TheCulpritsOwnPlaceAgreesAnotherDisagrees) {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity.rank = 3;
  c.entity.host = "node-01";
  c.entity.gpu = 3;
  c.cause_class = CauseClass::kComputeSlow;
  c.confidence = 0.8;
  v.culprits.push_back(c);
  Analyses a;
  a.hardware.findings.push_back(At(FindingCode::kGpuThrottleHistory, "node-01", 3,
                                   "node-01 GPU 3 was throttled 41% of the time since load"));
  a.hardware.findings.push_back(At(FindingCode::kGpuP2pBandwidthLow, "node-02", 5,
                                   "node-02 GPU 5: its links at 0.1x its peers'"));
  a.network.findings.push_back(At(FindingCode::kNetBandwidthLow, "node-01", std::nullopt,
                                  "node-01 slow with every partner"));
  a.network.findings.push_back(At(FindingCode::kNetBandwidthLow, "node-07", std::nullopt,
                                  "node-07 slow with every partner"));
  laggard::Run run;
  std::vector<std::string> next;
  verdict_internal::CiteToolReports(v, run, a, next);
  const Culprit& got = v.culprits[0];
  EXPECT_TRUE(Has(got,
                  "the driver's throttle counters (nvidia-smi -q): node-01 GPU 3 was "
                  "throttled 41% of the time since load (agrees)"));
  EXPECT_TRUE(Has(got, "the node bandwidth tests: node-01 slow with every partner (agrees)"));
  EXPECT_TRUE(Has(got,
                  "the GPU link test (p2pBandwidthLatencyTest) names node-02 GPU 5, not this "
                  "culprit's node-01 GPU 3"));
  EXPECT_TRUE(Has(got, "names node-07, not this culprit's node-01"));
  EXPECT_TRUE(Has(got, "it disagrees: this culprit was named from the job's own evidence above"));

  // A second culprit on node-07: its host's test is its own evidence, not
  // against the first.
  Verdict two = v;
  two.culprits[0].evidence.clear();
  Culprit other;
  other.entity.rank = 9;
  other.entity.host = "node-07";
  other.cause_class = CauseClass::kCommunication;
  other.confidence = 0.6;
  two.culprits.push_back(other);
  verdict_internal::CiteToolReports(two, run, a, next);
  EXPECT_FALSE(Has(two.culprits[0], "names node-07"));
  EXPECT_TRUE(Has(two.culprits[1], "node-07 slow with every partner (agrees)"));

  // Info-level findings (a test that could not tell), a GPU of the
  // culprit's own host under another number, and hosts outside the job say
  // nothing.
  Verdict quiet = v;
  quiet.culprits[0].evidence.clear();
  Analyses b;
  Finding info = At(FindingCode::kGpuP2pBandwidthLow, "node-02", 1, "cannot be told apart");
  info.severity = Severity::kInfo;
  b.hardware.findings.push_back(info);
  b.hardware.findings.push_back(
      At(FindingCode::kGpuThrottleHistory, "node-01", 0, "node-01 GPU 0 throttled"));
  verdict_internal::CiteToolReports(quiet, run, b, next);
  EXPECT_TRUE(quiet.culprits[0].evidence.empty()) << quiet.culprits[0].evidence.front();

  // Said once: what the culprit's evidence already holds is not repeated.
  verdict_internal::CiteToolReports(v, run, a, next);
  int agrees = 0;
  for (const std::string& e : v.culprits[0].evidence) agrees += e.find("(agrees)") != e.npos;
  EXPECT_EQ(agrees, 2);
}

}  // namespace
}  // namespace laggard
