#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "base/parallel.h"
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

TEST(ParallelTest, EveryIndexIsVisitedOnceInContiguousChunks) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{1000}}) {
    for (unsigned threads : {1u, 2u, 3u, 8u}) {
      std::vector<std::atomic<int>> seen(n);
      std::vector<std::atomic<int>> by_worker(threads);
      ParallelFor(n, threads, [&](size_t begin, size_t end, unsigned worker) {
        EXPECT_LT(begin, end);
        EXPECT_EQ(begin, n * worker / std::min<size_t>(threads, std::max<size_t>(n, 1)));
        by_worker[worker]++;
        for (size_t i = begin; i < end; ++i) seen[i]++;
      });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << "n " << n << " threads " << threads;
      for (unsigned w = 0; w < threads; ++w) EXPECT_LE(by_worker[w], 1);
    }
  }
}

TEST(ParallelTest, SmallInputsGetOneThread) {
  EXPECT_EQ(ParallelThreads(4, 100, 1000), 1u);
  EXPECT_EQ(ParallelThreads(4, 2500, 1000), 2u);
  EXPECT_EQ(ParallelThreads(4, 1'000'000, 1000), 4u);
  EXPECT_EQ(ParallelThreads(1, 1'000'000, 1000), 1u);
  EXPECT_GE(ParallelThreads(0, 1'000'000, 1), 1u);
}

}  // namespace
}  // namespace laggard
