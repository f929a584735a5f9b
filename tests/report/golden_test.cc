// Golden tests: each directory under tests/golden/ is one case.
//
//   cmd        the arguments after `laggard` (split on blanks), run in-process
//              with the case directory as the working directory
//   cwd        optional: "corpus" runs in ../shared instead, so paths read
//              corpus/...; the case is skipped when that folder is absent.
//              With an `input/` folder beside it, the case runs in a fresh
//              temporary directory holding the links corpus/ and input/
//              instead, so `cmd` can name both (the inspect_* cases)
//   simulate   optional: the arguments of `laggard simulate` without -o (split
//              on blanks). The test first simulates that run in-process into
//              a fresh temporary directory, as `sim/` under it, and runs `cmd`
//              there with the token $SIM replaced by `sim`, so the report's
//              paths read sim/node-00/... whatever the temporary directory.
//              Not combined with `cwd`.
//   expected   the expected stdout (usually the JSON report)
//   extract    optional: an element id; only the text of that element of
//              stdout (`<template id="laggard-hang">...</template>` of an
//              HTML report) is compared, so a case checks one section of a
//              page without the embedded Chart.js
//   exit_code  optional expected exit status (default 0)
//
// A golden records what laggard says today, not the truth: a simulated case
// whose verdict is wrong still passes as long as nothing changed. Accuracy
// against the simulator's truth.json is bench/accuracy's job
// (docs/accuracy.md); see tests/golden/README.md.
//
// Rebaseline after an intended change: scripts/rebaseline.sh (sets
// LAGGARD_REBASELINE=1 and runs these tests), then read the diff.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/text.h"
#include "cli/app.h"
#include "test_paths.h"

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
    if (e.is_directory() && fs::exists(e.path() / "cmd"))
      out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Splits a case file on blanks, as a shell would without quotes.
std::vector<std::string> Words(const fs::path& p) {
  std::vector<std::string> out;
  std::istringstream in(Slurp(p));
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The text inside the element `id` of an HTML page (between its start tag
// and the end tag of that name), plus a newline; "" when absent.
std::string ElementText(const std::string& html, const std::string& id) {
  size_t at = html.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  size_t open = html.rfind('<', at);
  size_t name_end = html.find_first_of(" >", open);
  size_t body = html.find('>', at);
  if (open == std::string::npos || body == std::string::npos) return "";
  std::string close = "</" + html.substr(open + 1, name_end - open - 1) + ">";
  size_t end = html.find(close, body);
  if (end == std::string::npos) return "";
  return html.substr(body + 1, end - body - 1) + "\n";
}

int RunArgs(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<const char*> argv = {"laggard"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return RunLaggard(static_cast<int>(argv.size()), argv.data(), out, err);
}

// A fresh directory under the system temp dir, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "laggard-golden-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, OutputMatchesExpected) {
  fs::path dir = fs::path(LAGGARD_SOURCE_DIR) / "tests" / "golden" / GetParam();
  fs::path cwd = dir;
  bool in_corpus = false;
  bool simulated = fs::exists(dir / "simulate");
  if (fs::exists(dir / "cwd") && Trim(Slurp(dir / "cwd")) == "corpus") {
    ASSERT_FALSE(simulated) << dir << ": `simulate` and `cwd` do not combine";
    fs::path corpus = LAGGARD_CORPUS_DIR;
    if (!fs::exists(corpus))
      GTEST_SKIP() << "shared corpus not found at " << corpus << "; skipping";
    cwd = corpus.parent_path();
    in_corpus = true;
  }
  ScratchDir scratch;
  // remove_all() in ~ScratchDir removes these links, never what they point to.
  if (in_corpus && fs::exists(dir / "input")) {
    ASSERT_FALSE(scratch.path().empty()) << "cannot create a temporary directory";
    fs::create_directory_symlink(fs::path(LAGGARD_CORPUS_DIR), scratch.path() / "corpus");
    fs::create_directory_symlink(dir / "input", scratch.path() / "input");
    cwd = scratch.path();
  }
  std::vector<std::string> args = Words(dir / "cmd");
  if (simulated) {
    ASSERT_FALSE(scratch.path().empty()) << "cannot create a temporary directory";
    std::vector<std::string> sim_args = {"simulate"};
    for (const auto& a : Words(dir / "simulate")) sim_args.push_back(a);
    sim_args.insert(sim_args.end(), {"--quiet", "-o", (scratch.path() / "sim").string()});
    std::ostringstream sim_out, sim_err;
    ASSERT_EQ(RunArgs(sim_args, sim_out, sim_err), 0)
        << "laggard simulate failed: " << sim_err.str();
    cwd = scratch.path();
    for (std::string& a : args) {
      for (size_t at = a.find("$SIM"); at != std::string::npos; at = a.find("$SIM", at + 3))
        a.replace(at, 4, "sim");
    }
  }

  fs::path old = fs::current_path();
  fs::current_path(cwd);
  std::ostringstream out, err;
  int rc = RunArgs(args, out, err);
  fs::current_path(old);

  int want_rc = fs::exists(dir / "exit_code") ? std::stoi(Slurp(dir / "exit_code")) : 0;
  std::string got = out.str();
  if (fs::exists(dir / "extract")) {
    std::string id(Trim(Slurp(dir / "extract")));
    got = ElementText(got, id);
    EXPECT_FALSE(got.empty()) << "no element id=\"" << id << "\" in the output of " << dir;
  }
  if (getenv("LAGGARD_REBASELINE") != nullptr) {
    std::ofstream(dir / "expected", std::ios::binary) << got;
    if (rc != 0) std::ofstream(dir / "exit_code") << rc << "\n";
    else fs::remove(dir / "exit_code");
    GTEST_SKIP() << "rebaselined " << GetParam();
  }
  EXPECT_EQ(rc, want_rc) << err.str();
  std::string expected = Slurp(dir / "expected");
  EXPECT_EQ(got, expected) << "golden mismatch in " << dir
                           << "; if intended, run scripts/rebaseline.sh and read the diff";
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace laggard
