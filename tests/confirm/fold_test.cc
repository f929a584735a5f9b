// A confirmation folded into a verdict: confirmed raises the culprit's
// confidence, refuted halves it, each with its evidence line; a bisection's
// host becomes the culprit of a communication-bound verdict.

#include "confirm/fold.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace laggard::confirm {
namespace {

Verdict HostVerdict(double confidence) {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity.host = "node-05";
  c.entity.nic = "mlx5_2 port 1";
  c.cause_class = CauseClass::kCommunication;
  c.confidence = confidence;
  v.culprits.push_back(c);
  v.summary = fmt::format(
      "verdict: node-05 (mlx5_2 port 1) is the straggler — communication, "
      "confidence {}",
      ConfidenceWord(confidence));
  return v;
}

ConfirmationEntry Entry(std::string verdict, std::string host = "node-05") {
  ConfirmationEntry e;
  e.host = std::move(host);
  e.verdict = std::move(verdict);
  e.locus = "nic";
  e.figures = "node-05 with node-04 91.8 GB/s (0.50x)";
  return e;
}

TEST(FoldConfirmationTest, ConfirmedRaisesRefutedHalvesEachWithItsEvidence) {
  Verdict v = HostVerdict(0.6);
  EXPECT_EQ(FoldConfirmation({Entry("confirmed")}, v), 1u);
  EXPECT_DOUBLE_EQ(v.culprits[0].confidence, 0.8);
  ASSERT_EQ(v.culprits[0].evidence.size(), 1u);
  EXPECT_EQ(v.culprits[0].evidence[0].rfind("confirm: confirmed (nic) — node-05 with", 0), 0u);

  Verdict r = HostVerdict(0.85);
  EXPECT_EQ(FoldConfirmation({Entry("refuted")}, r), 1u);
  EXPECT_DOUBLE_EQ(r.culprits[0].confidence, 0.425);
  EXPECT_NE(r.summary.find(fmt::format("confidence {}", ConfidenceWord(0.425))), std::string::npos)
      << r.summary;

  Verdict other = HostVerdict(0.6);  // another host's confirmation changes nothing
  EXPECT_EQ(FoldConfirmation({Entry("confirmed", "node-01")}, other), 0u);
  EXPECT_DOUBLE_EQ(other.culprits[0].confidence, 0.6);
  EXPECT_TRUE(other.culprits[0].evidence.empty());

  // Another identity on the same host: a GPU culprit, or a shared switch's.
  Verdict gpu = HostVerdict(0.6);
  gpu.culprits[0].entity.nic.reset();
  gpu.culprits[0].entity.gpu = 2;
  gpu.culprits[0].cause_class = CauseClass::kComputeSlow;
  ConfirmationEntry nic = Entry("refuted");
  nic.nic = "mlx5_2 port 1";
  nic.cause_class = "communication";
  EXPECT_EQ(FoldConfirmation({nic}, gpu), 0u);
  EXPECT_DOUBLE_EQ(gpu.culprits[0].confidence, 0.6);
  Verdict sw = HostVerdict(0.6);
  sw.culprits[0].cause_class = CauseClass::kExternal;
  EXPECT_EQ(FoldConfirmation({nic}, sw), 0u);

  Verdict open = HostVerdict(0.6);  // inconclusive: evidence only
  EXPECT_EQ(FoldConfirmation({Entry("inconclusive")}, open), 1u);
  EXPECT_DOUBLE_EQ(open.culprits[0].confidence, 0.6);
  EXPECT_EQ(open.culprits[0].evidence.size(), 1u);
}

TEST(FoldConfirmationTest, ABisectionsHostBecomesTheCulpritOfACommunicationBoundVerdict) {
  Verdict v;
  v.status = VerdictStatus::kCommBound;
  v.summary = "verdict: communication-bound";
  Culprit job;  // its culprit: the job as a whole
  job.entity.job = true;
  job.cause_class = CauseClass::kCommunication;
  job.confidence = 0.6;
  v.culprits.push_back(job);
  ConfirmationEntry e;
  e.verdict = "confirmed";
  e.locus = "node";
  e.confirmed_host = "node-09";
  e.figures = "bisection, 8 runs: ...";
  EXPECT_EQ(FoldConfirmation({e}, v), 1u);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].entity.host, "node-09");
  EXPECT_EQ(v.status, VerdictStatus::kStraggler);
  EXPECT_NE(v.summary.find("found by bisection"), std::string::npos);
  // Refuted, or a verdict that already names someone: no new culprit.
  Verdict named = HostVerdict(0.6);
  EXPECT_EQ(FoldConfirmation({e}, named), 0u);
  EXPECT_EQ(named.culprits.size(), 1u);
}

TEST(FoldConfirmationTest, OnlyConfirmsOwnFileIsAConfirmation) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("laggard_fold_{}", getpid());
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(IsConfirmation(dir.string()));
  std::ofstream(dir / "confirmation.json") << R"({"schema": "laggard.report/1"})";
  EXPECT_TRUE(IsConfirmation(dir.string()));
  auto bad = ReadConfirmation(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a confirmation"), std::string::npos);
  std::ofstream(dir / "confirmation.json")
      << R"({"schema": "laggard.confirm/1", "culprits": [{"host": "node-05", "nic": "mlx5_2 port 1"}],
             "confirmation": [{"culprit": 0, "verdict": "confirmed", "locus": "nic",
                               "figures": "f", "host": "node-05"}, {"culprit": 7}, 3]})";
  auto ok = ReadConfirmation(dir.string());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].host, "node-05");
  EXPECT_EQ((*ok)[0].nic, "mlx5_2 port 1");
  std::filesystem::remove_all(dir);
}

TEST(FoldConfirmationTest, ADocumentNestedTooDeepIsRefusedBeforeParsing) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = ParseConfirmation(deep, "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("c.json: not a confirmation"), std::string::npos);
  EXPECT_FALSE(
      ParseConfirmation("{\"schema\": \"laggard.confirm/1\", \"confirmation\": 3}", "c")->size());
}

TEST(FoldConfirmationTest, AnotherJobsConfirmationIsToldApart) {
  auto doc = ParseConfirmation(R"({"schema": "laggard.confirm/1",
    "job": {"first_time": "2026-12-01T10:00:00.000Z", "last_time": "2026-12-01T11:00:00.000Z"},
    "confirmed_at": "2026-12-01T11:20:00.000Z",
    "culprits": [{"host": "node-05", "cause_class": "communication"}],
    "confirmation": [{"culprit": 0, "name": "node-05", "verdict": "confirmed"}]})",
                               "c.json");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ(doc->size(), 1u);
  const ConfirmationEntry& e = (*doc)[0];
  ASSERT_TRUE(e.job.known());
  ASSERT_TRUE(e.confirmed_at.has_value());
  auto at = [](const char* t) { return ParseTimestamp(t); };
  // The same job, seen again later with more steps: folded.
  EXPECT_EQ(OfAnotherJob(e, {at("2026-12-01T10:00:00Z"), at("2026-12-01T12:00:00Z")}), "");
  // Unknown on this side: folded.
  EXPECT_EQ(OfAnotherJob(e, {}), "");
  // A later job on the same hosts: not folded, and why.
  EXPECT_EQ(OfAnotherJob(e, {at("2026-12-03T08:00:00Z"), at("2026-12-03T09:00:00Z")}),
            "it is about another job (that job ran 2026-12-01T10:00:00.000Z to "
            "2026-12-01T11:00:00.000Z; this one 2026-12-03T08:00:00.000Z to "
            "2026-12-03T09:00:00.000Z)");
  // Tests run before the job began are not about it, even without the
  // report's span (a suspect named by hand).
  ConfirmationEntry by_hand = e;
  by_hand.job = {};
  EXPECT_NE(OfAnotherJob(by_hand, {at("2026-12-03T00:00:00Z"), at("2026-12-03T01:00:00Z")})
                .find("before this job began"),
            std::string::npos);
  // Within 15 hours it may be the zone of the job's log times (read as UTC
  // when they carry none), not an earlier day: folded.
  EXPECT_EQ(OfAnotherJob(by_hand, {at("2026-12-02T00:00:00Z"), at("2026-12-02T01:00:00Z")}), "");
  // Clocks a few seconds apart are the same job.
  EXPECT_EQ(OfAnotherJob(e, {at("2026-12-01T11:00:30Z"), at("2026-12-01T11:30:00Z")}), "");
}

TEST(FoldConfirmationTest, ARefutedFirstCulpritWeakerThanAnotherIsSaidNotReordered) {
  // node-05 at 0.8 first, node-07 at 0.6; confirm refutes node-05 (0.4):
  // the order (and the cost priced by it) stays, the summary says node-07
  // is now the stronger suspect.
  Verdict v = HostVerdict(0.8);
  Culprit second;
  second.entity.host = "node-07";
  second.cause_class = CauseClass::kCommunication;
  second.confidence = 0.6;
  v.culprits.push_back(second);
  std::string before = v.summary;
  EXPECT_EQ(FoldConfirmation({Entry("refuted")}, v), 1u);
  ASSERT_EQ(v.culprits.size(), 2u);
  EXPECT_EQ(v.culprits[0].entity.host, "node-05");
  EXPECT_DOUBLE_EQ(v.culprits[0].confidence, 0.4);
  EXPECT_NE(v.summary.find("; confirm refuted node-05 (mlx5_2 port 1): node-07 is now the "
                           "stronger suspect (confidence medium)"),
            std::string::npos)
      << v.summary;
  // Refuted but still the strongest: nothing is added.
  Verdict w = HostVerdict(0.9);
  Culprit weak = second;
  weak.confidence = 0.3;
  w.culprits.push_back(weak);
  EXPECT_EQ(FoldConfirmation({Entry("refuted")}, w), 1u);
  EXPECT_EQ(w.summary.find("stronger suspect"), std::string::npos) << w.summary;
  // A confirmation that matches no culprit changes neither order nor words.
  Verdict x = HostVerdict(0.5);
  Culprit strong = second;
  strong.confidence = 0.9;
  x.culprits.push_back(strong);
  std::string words = x.summary;
  EXPECT_EQ(FoldConfirmation({Entry("refuted", "node-99")}, x), 0u);
  EXPECT_EQ(x.culprits[0].entity.host, "node-05");
  EXPECT_EQ(x.summary, words);
}

}  // namespace
}  // namespace laggard::confirm
