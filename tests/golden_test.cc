// Golden tests: each directory under tests/golden/ is one case.
//
//   cmd        the arguments after `laggard` (split on blanks), run in-process
//              with the case directory as the working directory
//   cwd        optional: "corpus" runs in ../shared instead, so paths read
//              corpus/...; the case is skipped when that folder is absent
//   expected   the expected stdout (usually the JSON report)
//   exit_code  optional expected exit status (default 0)
//
// Rebaseline after an intended change: scripts/rebaseline.sh (sets
// LAGGARD_REBASELINE=1 and runs these tests), then read the diff.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/text.h"
#include "cli/app.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> Cases() {
  std::vector<std::string> out;
  fs::path root = fs::path(LAGGARD_SOURCE_DIR) / "tests" / "golden";
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && fs::exists(e.path() / "cmd")) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, OutputMatchesExpected) {
  fs::path dir = fs::path(LAGGARD_SOURCE_DIR) / "tests" / "golden" / GetParam();
  fs::path cwd = dir;
  if (fs::exists(dir / "cwd") && Trim(Slurp(dir / "cwd")) == "corpus") {
    fs::path corpus = LAGGARD_CORPUS_DIR;
    if (!fs::exists(corpus)) GTEST_SKIP() << "shared corpus not found at " << corpus << "; skipping";
    cwd = corpus.parent_path();
  }
  std::vector<std::string> args = {"laggard"};
  std::istringstream cmd(Slurp(dir / "cmd"));
  for (std::string a; cmd >> a;) args.push_back(a);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());

  fs::path old = fs::current_path();
  fs::current_path(cwd);
  std::ostringstream out, err;
  int rc = RunLaggard(static_cast<int>(argv.size()), argv.data(), out, err);
  fs::current_path(old);

  int want_rc = fs::exists(dir / "exit_code") ? std::stoi(Slurp(dir / "exit_code")) : 0;
  if (getenv("LAGGARD_REBASELINE") != nullptr) {
    std::ofstream(dir / "expected", std::ios::binary) << out.str();
    if (rc != 0) std::ofstream(dir / "exit_code") << rc << "\n";
    else fs::remove(dir / "exit_code");
    GTEST_SKIP() << "rebaselined " << GetParam();
  }
  EXPECT_EQ(rc, want_rc) << err.str();
  std::string expected = Slurp(dir / "expected");
  EXPECT_EQ(out.str(), expected) << "golden mismatch in " << dir
                                 << "; if intended, run scripts/rebaseline.sh and read the diff";
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& c : n) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace laggard
