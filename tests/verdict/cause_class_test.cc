// The verdict's cause classes against the simulator's: bench/accuracy
// scores a verdict by comparing its CauseClassName() with the word the
// simulator writes into truth.json, so every word the simulator can write
// must be one the verdict can give, or be listed here as not diagnosable.
// The simulator keeps its own enum (it never includes analysis code).

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "simulator/cluster/cluster.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

// Truth words no culprit carries: "none" is the healthy control's, scored
// by the verdict naming no culprit at all.
const std::set<std::string> kNotDiagnosable = {"none"};

TEST(CauseClassTest, EverySimulatorCauseWordIsAVerdictCauseClass) {
  std::set<std::string> words = {
      std::string(sim::CauseClassName(sim::CauseClassOf(sim::FaultKind::kNone)))};
  for (sim::FaultKind kind : sim::AllFaultKinds()) {
    words.insert(std::string(sim::CauseClassName(sim::CauseClassOf(kind))));
  }
  for (const std::string& word : words) {
    if (kNotDiagnosable.count(word)) {
      EXPECT_EQ(ParseCauseClass(word), std::nullopt) << word;
      continue;
    }
    std::optional<CauseClass> c = ParseCauseClass(word);
    ASSERT_TRUE(c.has_value()) << "the simulator writes cause class '" << word
                               << "', the verdict has none";
    EXPECT_EQ(CauseClassName(*c), word);
  }
}

TEST(CauseClassTest, NamesAreTheReportsWordsAndParseBack) {
  EXPECT_EQ(CauseClassName(CauseClass::kUnknown), "unknown");
  EXPECT_EQ(CauseClassName(CauseClass::kComputeSlow), "compute_slow");
  EXPECT_EQ(CauseClassName(CauseClass::kCommunication), "communication");
  EXPECT_EQ(CauseClassName(CauseClass::kHostStall), "host_stall");
  EXPECT_EQ(CauseClassName(CauseClass::kExternal), "external");
  EXPECT_EQ(CauseClassName(CauseClass::kImbalance), "imbalance");
  for (size_t i = 0; i < static_cast<size_t>(CauseClass::kCount); ++i) {
    auto c = static_cast<CauseClass>(i);
    EXPECT_EQ(ParseCauseClass(CauseClassName(c)), c) << CauseClassName(c);
  }
  EXPECT_EQ(ParseCauseClass("compute-slow"), std::nullopt);
}

}  // namespace
}  // namespace laggard
