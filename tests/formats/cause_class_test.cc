// One CauseClass (formats/cause_class.h) for the verdict and the simulator:
// bench/accuracy scores a verdict by comparing its culprits' CauseClassName()
// with the word the simulator writes into truth.json. Every fault the
// simulator injects has a class, and its truth word parses back to it.

#include "formats/cause_class.h"

#include <gtest/gtest.h>

#include <string>

#include "simulator/cluster/cluster.h"

namespace laggard {
namespace {

TEST(CauseClassTest, EverySimulatedFaultHasAClassWhoseWordParsesBack) {
  EXPECT_EQ(sim::CauseClassOf(sim::FaultKind::kNone), std::nullopt);
  EXPECT_EQ(sim::CauseClassWord(sim::FaultKind::kNone), "none");
  EXPECT_EQ(ParseCauseClass("none"), std::nullopt);  // the healthy control: no culprit at all
  for (sim::FaultKind kind : sim::AllFaultKinds()) {
    std::optional<CauseClass> c = sim::CauseClassOf(kind);
    ASSERT_TRUE(c.has_value()) << sim::FaultKindName(kind);
    EXPECT_NE(*c, CauseClass::kUnknown) << sim::FaultKindName(kind);
    std::string word(sim::CauseClassWord(kind));
    EXPECT_EQ(ParseCauseClass(word), c) << word;
  }
  EXPECT_EQ(sim::CauseClassOf(sim::FaultKind::kThermal), CauseClass::kComputeSlow);
  EXPECT_EQ(sim::CauseClassWord(sim::FaultKind::kNicDegraded), "communication");
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
