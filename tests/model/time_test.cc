#include <gtest/gtest.h>

#include "model/time.h"

namespace laggard {
namespace {

TEST(TimeTest, UnitsConvertInOnePlace) {
  EXPECT_EQ(ToDurationNs(0.8123, TimeUnit::kSeconds), 812'300'000);
  EXPECT_EQ(ToDurationNs(812.3, TimeUnit::kMilliseconds), 812'300'000);
  EXPECT_EQ(ToDurationNs(5, TimeUnit::kMicroseconds), 5'000);
  EXPECT_FALSE(ToDurationNs(1e300, TimeUnit::kSeconds));
  EXPECT_DOUBLE_EQ(ToSeconds(1'500'000'000), 1.5);
}

TEST(TimeTest, ParseTimeUnitKnowsCommonSpellings) {
  EXPECT_EQ(ParseTimeUnit("s"), TimeUnit::kSeconds);
  EXPECT_EQ(ParseTimeUnit("Seconds"), TimeUnit::kSeconds);
  EXPECT_EQ(ParseTimeUnit("ms"), TimeUnit::kMilliseconds);
  EXPECT_EQ(ParseTimeUnit("\xc2\xb5s"), TimeUnit::kMicroseconds);
  EXPECT_EQ(ParseTimeUnit("ns"), TimeUnit::kNanoseconds);
  EXPECT_FALSE(ParseTimeUnit("parsecs"));
  EXPECT_FALSE(ParseTimeUnit(""));
}

TEST(TimeTest, ParsesIso8601WithFractionAndOffset) {
  auto t = ParseTimestamp("2024-02-02T15:50:01.350Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, 1706889001'350'000'000);
  EXPECT_EQ(ParseTimestamp("2024-02-02 16:50:01.350+01:00"), t);
  EXPECT_EQ(FormatTimestamp(*t), "2024-02-02T15:50:01.350Z");
}

TEST(TimeTest, ParsesEpochSecondsAndScaledEpochs) {
  EXPECT_EQ(ParseTimestamp("1706860208.35"), 1706860208'350'000'000);
  EXPECT_EQ(ParseTimestamp("1706860208350"), 1706860208'350'000'000);  // ms
  EXPECT_FALSE(ParseTimestamp("yesterday"));
  EXPECT_FALSE(ParseTimestamp("2024-13-01T00:00:00"));
  EXPECT_FALSE(ParseTimestamp("2024-02-30T00:00:00"));
}

}  // namespace
}  // namespace laggard
