#include <gtest/gtest.h>

#include "base/text.h"

namespace laggard {
namespace {

TEST(TextTest, TrimRemovesBlanksOnBothSides) { EXPECT_EQ(Trim(" \tabc\r\n"), "abc"); }

TEST(TextTest, ParseIntRejectsTrailingGarbage) {
  EXPECT_EQ(ParseInt<int>("42"), 42);
  EXPECT_EQ(ParseInt<int>(" +7 "), 7);
  EXPECT_FALSE(ParseInt<int>("4x"));
  EXPECT_FALSE(ParseInt<int>(""));
  EXPECT_FALSE(ParseInt<int>("99999999999"));
}

TEST(TextTest, ParseDoubleRejectsNonFinite) {
  EXPECT_DOUBLE_EQ(*ParseDouble("0.8123"), 0.8123);
  EXPECT_FALSE(ParseDouble("nan"));
  EXPECT_FALSE(ParseDouble("inf"));
  EXPECT_FALSE(ParseDouble("1e999"));
}

TEST(TextTest, PrintableMasksControlBytesAndCuts) {
  EXPECT_EQ(Printable(std::string("a\0b", 3)), "a?b");
  EXPECT_EQ(Printable("abcdef", 3), "abc...");
}

TEST(TextTest, FindIgnoreCase) {
  EXPECT_EQ(FindIgnoreCase("xxRANKyy", "rank"), 2u);
  EXPECT_EQ(FindIgnoreCase("abc", "d"), std::string_view::npos);
}

}  // namespace
}  // namespace laggard
