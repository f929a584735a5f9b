#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ingest/common/sniff.h"

namespace laggard {
namespace {

std::vector<std::string> HeadLinesOf(std::string_view head, HeadLines which = {}) {
  std::vector<std::string> out;
  ForEachHeadLine(head, which, [&](std::string_view line) {
    out.emplace_back(line);
    return true;
  });
  return out;
}

TEST(SniffTest, HeadLinesLeaveOutTheCutLastLineAndTakeOffCrlf) {
  EXPECT_EQ(HeadLinesOf("a\r\n\nb\ncut"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(HeadLinesOf("a\nb\n"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(HeadLinesOf("only a cut line").empty());
}

TEST(SniffTest, HeadLinesWithLastHandOutTheUnterminatedLine) {
  EXPECT_EQ(HeadLinesOf("a\nlast\r", {.with_last = true}), (std::vector<std::string>{"a", "last"}));
  EXPECT_EQ(HeadLinesOf("a\n", {.with_last = true}), (std::vector<std::string>{"a"}));
}

TEST(SniffTest, HeadLinesKeepCrWhenAsked) {
  EXPECT_EQ(HeadLinesOf("a\r\nb\n", {.keep_cr = true}), (std::vector<std::string>{"a\r", "b"}));
}

TEST(SniffTest, HeadLinesStopWhenTheCallbackSaysSo) {
  std::vector<std::string> seen;
  ForEachHeadLine("one\ntwo\nthree\n", [&](std::string_view line) {
    seen.emplace_back(line);
    return seen.size() < 2;
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two"}));
}

}  // namespace
}  // namespace laggard
