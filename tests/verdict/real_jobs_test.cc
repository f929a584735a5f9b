// Verdicts on the files real PyTorch DDP jobs wrote (tests/data/realjobs/,
// kept runs of bench/realjobs: Debian's torch 1.13, gloo, CPU, on a 2-vCPU
// host): each directory is diagnosed as `laggard diagnose DIR` would, and
// its verdict checked against the job's injected fault. The simulator wrote
// none of these files; see tests/data/realjobs/README.md for how each was
// made and why it is here.

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analyze_run.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

const std::string kData = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/realjobs/";

struct Expected {
  std::string dir;
  VerdictStatus status;
  // The culprits' ranks and cause classes, in order; empty: none with a rank.
  std::vector<std::pair<int32_t, CauseClass>> culprits;
  // The first culprit's pattern, when checked.
  std::optional<Pattern> pattern = std::nullopt;
};

void PrintTo(const Expected& e, std::ostream* os) { *os << e.dir; }

Verdict Diagnose(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name != "truth.json" && name != "README.md") paths.push_back(entry.path().string());
  }
  auto readers = MakeDefaultTextReaders(std::nullopt);
  EXPECT_TRUE(readers.ok()) << readers.status().message();
  TraceReaderSet trace_readers = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 2;
  auto run = Ingest(paths, readers->readers, options, trace_readers.readers);
  EXPECT_TRUE(run.ok()) << run.status().message();
  if (!run.ok()) return Verdict();
  return DecideVerdict(*run, AnalyzeRun(*run, AnalysisOptions()));
}

class RealJobTest : public ::testing::TestWithParam<Expected> {};

TEST_P(RealJobTest, VerdictNamesTheInjectedFault) {
  const Expected& e = GetParam();
  Verdict v = Diagnose(kData + e.dir);
  EXPECT_EQ(VerdictStatusName(v.status), VerdictStatusName(e.status)) << v.summary;
  std::vector<std::pair<int32_t, CauseClass>> got;
  for (const Culprit& c : v.culprits) {
    if (c.entity.rank) got.emplace_back(*c.entity.rank, c.cause_class);
  }
  ASSERT_EQ(got.size(), e.culprits.size()) << v.summary;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, e.culprits[i].first) << v.summary;
    EXPECT_EQ(CauseClassName(got[i].second), CauseClassName(e.culprits[i].second)) << v.summary;
  }
  if (e.pattern) {
    ASSERT_TRUE(v.culprits.at(0).pattern.has_value()) << v.summary;
    EXPECT_EQ(PatternName(*v.culprits.at(0).pattern), PatternName(*e.pattern)) << v.summary;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runs, RealJobTest,
    ::testing::Values(
        // Rank 1's CPU ops run 1.06x as long as rank 0's and it is last at
        // 9 of 10 collectives: the host's noise, not a fault.
        Expected{"w2_healthy", VerdictStatus::kNoStraggler, {}},
        // 4 healthy ranks on 2 vCPUs: per-step compute spreads by ~20%
        // between ranks, which is not variable work.
        Expected{"w4_healthy", VerdictStatus::kNoStraggler, {}},
        Expected{"w2_compute_1.2", VerdictStatus::kStraggler, {{1, CauseClass::kComputeSlow}}},
        Expected{"w2_data_stall_15ms", VerdictStatus::kStraggler, {{0, CauseClass::kHostStall}}},
        // Rank 1 sleeps 250 ms before every 5th step's forward.
        Expected{"w2_periodic_250ms",
                 VerdictStatus::kStraggler,
                 {{1, CauseClass::kHostStall}},
                 Pattern::kPeriodic},
        // Rank 3 of 4 sleeps 15 ms before forward; 4 ranks share 2 vCPUs,
        // so the others take its core meanwhile and it is last at only 4
        // of 10 collectives, but it idles 31% of its profile (others <= 4%).
        Expected{"w4_host_stall_15ms", VerdictStatus::kStraggler, {{3, CauseClass::kHostStall}}},
        // A 100 Mbit/s link on rank 1 of 2: every transfer crosses it.
        Expected{"w2_comm_100mbit", VerdictStatus::kCommBound, {}},
        // Rank 1 computes 1.5x, rank 3 stalls 50 ms before forward: rank 3
        // arrives last, rank 1 hides behind it.
        Expected{"w4_two_faults",
                 VerdictStatus::kStraggler,
                 {{3, CauseClass::kHostStall}, {1, CauseClass::kComputeSlow}}}),
    [](const ::testing::TestParamInfo<Expected>& param) {
      std::string name = param.param.dir;
      for (char& ch : name) {
        if (ch == '.') ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace laggard
