// How DecideVerdict() combines findings it is handed (no detector runs
// here): a host.pause finding names the culprit only when nothing else
// names one, with the finding's evidence and next step first; the
// confidence rule's caps and gains (verdict.h) on a trace culprit that the
// step times confirm or contradict.

#include <gtest/gtest.h>

#include <string>

#include "verdict/verdict.h"

namespace laggard {
namespace {

Finding PauseFinding() {
  Finding f;
  f.code = FindingCode::kHostPause;
  f.severity = Describe(f.code).severity;
  f.entity.host = "node-01";
  f.entity.gpu = 3;
  f.entity.rank = 11;
  f.cause = "pause";
  f.confidence = 0.5;
  f.slowdown = 0.4;
  f.evidence.push_back(Evidence{"GPU: it dips", std::nullopt});
  f.evidence.push_back(Evidence{"step times: the job spikes", std::nullopt});
  f.next_steps.push_back("find what pauses rank 11");
  return f;
}

Finding StepFinding(FindingCode code, std::vector<std::string> next_steps) {
  Finding f;
  f.code = code;
  f.severity = Describe(code).severity;
  f.entity.job = true;
  f.message = std::string(Describe(code).title);
  f.confidence = 0.9;
  f.next_steps = std::move(next_steps);
  return f;
}

TEST(VerdictCombineTest, APauseFindingNamesTheCulpritWhenTheStepTimesCannot) {
  laggard::Run run;
  Analyses a;
  a.steps.job.ranks = 16;
  a.steps.job.synchronised = true;
  a.steps.findings.push_back(StepFinding(FindingCode::kStepsSynchronised, {"add traces"}));
  a.pauses.findings.push_back(PauseFinding());
  Verdict v = DecideVerdict(run, a);
  ASSERT_EQ(v.status, VerdictStatus::kStraggler) << v.summary;
  ASSERT_EQ(v.culprits.size(), 1u);
  const Culprit& c = v.culprits.front();
  EXPECT_EQ(c.entity.rank, 11);
  EXPECT_EQ(c.cause_class, CauseClass::kHostStall);
  EXPECT_EQ(c.cause, "pause");
  EXPECT_DOUBLE_EQ(c.confidence, 0.5);
  EXPECT_EQ(c.evidence, (std::vector<std::string>{"GPU: it dips", "step times: the job spikes"}));
  EXPECT_EQ(v.next_steps, (std::vector<std::string>{"find what pauses rank 11", "add traces"}));
  EXPECT_EQ(v.summary,
            "verdict: rank 11 (node-01 GPU 3) is the straggler — host stall: pause (+40%), "
            "confidence medium");
}

TEST(VerdictCombineTest, APauseFindingDoesNotOverrideAStepStraggler) {
  laggard::Run run;
  Analyses a;
  a.steps.job.ranks = 16;
  Finding s;
  s.code = FindingCode::kStepStraggler;
  s.entity.rank = 4;
  s.confidence = 0.9;
  s.slowdown = 0.2;
  a.steps.findings.push_back(s);
  a.pauses.findings.push_back(PauseFinding());
  Verdict v = DecideVerdict(run, a);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].entity.rank, 4);
  EXPECT_DOUBLE_EQ(v.culprits[0].confidence, kSingleSourceCap);
}

// A trace culprit (late arrival, no cause) with step times naming `step_rank`.
Verdict LateRankVerdict(int32_t step_rank) {
  laggard::Run run;
  StepAnalysis steps;
  steps.job.ranks = 8;
  Finding s;
  s.code = FindingCode::kStepStraggler;
  s.entity.rank = step_rank;
  s.confidence = 0.9;
  steps.findings.push_back(s);
  TraceAnalysis traces;
  traces.culprit = 2;
  Finding late;
  late.code = FindingCode::kTraceLateArrival;
  late.entity.rank = 2;
  late.confidence = 0.9;
  traces.findings.push_back(late);
  return DecideVerdict(run, steps, traces);
}

TEST(VerdictCombineTest, StepTimesAgreeingWithTheTracesAddTheAgreeingSignalGain) {
  Verdict v = LateRankVerdict(2);
  ASSERT_FALSE(v.culprits.empty());
  EXPECT_DOUBLE_EQ(v.culprits[0].confidence, kSingleSourceCap + kAgreeingSignalGain);
  EXPECT_EQ(
      v.next_steps.back(),
      "compare rank 2's trace with a healthy rank's around the late collectives: longer kernels "
      "mean the GPU is slow, idle gaps mean it waits for the host");
}

TEST(VerdictCombineTest, StepTimesNamingAnotherRankCapTheTraceCulprit) {
  Verdict v = LateRankVerdict(6);
  ASSERT_EQ(v.culprits.size(), 2u);
  EXPECT_EQ(v.culprits[0].entity.rank, 2);
  EXPECT_DOUBLE_EQ(v.culprits[0].confidence, kContradictedCap);
  EXPECT_EQ(v.culprits[1].entity.rank, 6);
  EXPECT_DOUBLE_EQ(v.culprits[1].confidence, kContradictedCap);
}

}  // namespace
}  // namespace laggard
