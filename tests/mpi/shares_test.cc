#include "mpi/shares.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace laggard {
namespace {

uint64_t Load(const std::vector<uint32_t>& share, const std::vector<uint64_t>& bytes) {
  uint64_t sum = 0;
  for (uint32_t f : share) sum += bytes[f];
  return sum;
}

TEST(AssignSharesTest, EveryFileOnceInAscendingOrder) {
  std::vector<uint64_t> bytes = {5, 9, 1, 7, 3, 3, 8, 2};
  std::vector<std::optional<int32_t>> rank(bytes.size());
  auto shares = AssignShares(bytes, rank, 3);
  ASSERT_EQ(shares.size(), 3u);
  std::vector<uint32_t> all;
  for (const auto& s : shares) {
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    all.insert(all.end(), s.begin(), s.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<uint32_t> want(bytes.size());
  std::iota(want.begin(), want.end(), 0u);
  EXPECT_EQ(all, want);
}

TEST(AssignSharesTest, BalancedByBytesWithinTheLargestFile) {
  std::vector<uint64_t> bytes;
  for (int i = 0; i < 40; ++i) bytes.push_back(100 + (i * 37) % 91);
  std::vector<std::optional<int32_t>> rank(bytes.size());
  auto shares = AssignShares(bytes, rank, 4);
  uint64_t total = std::accumulate(bytes.begin(), bytes.end(), uint64_t{0});
  uint64_t largest = *std::max_element(bytes.begin(), bytes.end());
  for (const auto& s : shares) EXPECT_LE(Load(s, bytes), total / 4 + largest);
}

TEST(AssignSharesTest, OneRanksFilesStayTogether) {
  // Files 0, 3 and 5 name rank 7 (a step log, a trace, a second trace).
  std::vector<uint64_t> bytes = {10, 50, 50, 10, 50, 10};
  std::vector<std::optional<int32_t>> rank = {7, 1, 2, 7, 3, 7};
  auto shares = AssignShares(bytes, rank, 2);
  int holding = 0;
  for (const auto& s : shares) {
    int n = static_cast<int>(
        std::count_if(s.begin(), s.end(), [](uint32_t f) { return f == 0 || f == 3 || f == 5; }));
    EXPECT_TRUE(n == 0 || n == 3);
    holding += n == 3;
  }
  EXPECT_EQ(holding, 1);
}

TEST(AssignSharesTest, MoreProcessesThanFilesLeavesEmptyShares) {
  std::vector<uint64_t> bytes = {4, 4};
  std::vector<std::optional<int32_t>> rank(2);
  auto shares = AssignShares(bytes, rank, 4);
  ASSERT_EQ(shares.size(), 4u);
  EXPECT_EQ(shares[0], std::vector<uint32_t>{0});
  EXPECT_EQ(shares[1], std::vector<uint32_t>{1});
  EXPECT_TRUE(shares[2].empty());
  EXPECT_TRUE(shares[3].empty());
  EXPECT_EQ(AssignShares({}, {}, 3).size(), 3u);
}

TEST(AssignSharesTest, SameInputSameShares) {
  std::vector<uint64_t> bytes = {3, 3, 3, 3, 3, 3, 3};
  std::vector<std::optional<int32_t>> rank = {0, 1, 2, 0, 1, 2, std::nullopt};
  EXPECT_EQ(AssignShares(bytes, rank, 3), AssignShares(bytes, rank, 3));
  // Ties go to the lowest process, groups in order of their first file: the
  // three ranks' pairs one each, then file 6 (no rank) to process 0.
  auto shares = AssignShares(bytes, rank, 3);
  EXPECT_EQ(shares[0], (std::vector<uint32_t>{0, 3, 6}));
  EXPECT_EQ(shares[1], (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ(shares[2], (std::vector<uint32_t>{2, 5}));
}

}  // namespace
}  // namespace laggard
