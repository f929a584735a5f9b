// When laggard runs itself again with glibc's huge-page tunable (cli/huge_pages.h).

#include "cli/huge_pages.h"

#include <gtest/gtest.h>

#include <vector>

namespace laggard {
namespace {

constexpr std::string_view kMadvise = "always [madvise] never\n";
constexpr std::string_view kExe = "/work/build/release/src/laggard";

TEST(HugePagesTest, AddsTheTunableWhenTheKernelWantsMadvise) {
  EXPECT_EQ(HugePageTunables(std::nullopt, kMadvise, std::nullopt, kExe), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables("glibc.malloc.arena_max=2", kMadvise, std::nullopt, kExe),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables("", kMadvise, std::nullopt, kExe), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables(std::nullopt, kMadvise, "1", "laggard"), "glibc.malloc.hugetlb=1");
}

TEST(HugePagesTest, LeavesTheProcessAloneOtherwise) {
  // Already set (by the user, or by the first start: no loop).
  EXPECT_FALSE(HugePageTunables("glibc.malloc.hugetlb=0", kMadvise, std::nullopt, kExe));
  EXPECT_FALSE(HugePageTunables("glibc.malloc.hugetlb=1", kMadvise, std::nullopt, kExe));
  // THP always (nothing to ask for), never (ignored), or no such file.
  EXPECT_FALSE(HugePageTunables(std::nullopt, "[always] madvise never", std::nullopt, kExe));
  EXPECT_FALSE(HugePageTunables(std::nullopt, "always madvise [never]", std::nullopt, kExe));
  EXPECT_FALSE(HugePageTunables(std::nullopt, "", std::nullopt, kExe));
  EXPECT_FALSE(HugePageTunables(std::nullopt, kMadvise, "0", kExe));
  // Not laggard's own binary: valgrind's tool, a test program.
  EXPECT_FALSE(HugePageTunables(std::nullopt, kMadvise, std::nullopt,
                                "/usr/libexec/valgrind/memcheck-amd64-linux"));
  EXPECT_FALSE(HugePageTunables(std::nullopt, kMadvise, std::nullopt, "/x/laggard_tests/../gdb"));
}

TEST(HugePagesTest, OnlyCommandsThatReadDataStartTwice) {
  auto reads = [](std::vector<const char*> args) {
    args.insert(args.begin(), "laggard");
    args.push_back(nullptr);
    return ReadsData(args.data());
  };
  EXPECT_TRUE(reads({"diagnose", "run/"}));
  EXPECT_TRUE(reads({"inspect", "a.json"}));
  EXPECT_TRUE(reads({"demo"}));
  EXPECT_TRUE(reads({"--help", "watch"}));  // usage of a data command: harmless either way
  EXPECT_FALSE(reads({}));
  EXPECT_FALSE(reads({"--version"}));
  EXPECT_FALSE(reads({"--help"}));
  EXPECT_FALSE(reads({"formats"}));
  EXPECT_FALSE(reads({"no-such-command"}));
}

}  // namespace
}  // namespace laggard
