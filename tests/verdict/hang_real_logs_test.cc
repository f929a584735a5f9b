// The answer a careful reader derives from each real hang log of
// tests/data/hangs/ (lines copied from public issue threads; the README
// there says where each comes from and why the answer is what it is),
// asserted on laggard's verdict: the finding that decides, the ranks it
// blames, and the traps: a reporter that is not a culprit, ranks that said
// nothing, stops of different days, hosts of different jobs. The goldens
// hang_log_* hold the whole text report of the same files.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "analysis/analyze_run.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "test_paths.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

const std::string kHangs = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/hangs/";

struct LogAnswer {
  std::string file;
  VerdictStatus status;
  FindingCode code;                                // the hang detector's first (deciding) finding
  std::vector<int32_t> ranks;                      // the ranks it blames; empty: none
  std::optional<std::string> host = std::nullopt;  // the entity's host, when one is named
  size_t stops = 1;
};

void PrintTo(const LogAnswer& a, std::ostream* os) { *os << a.file; }

class HangRealLogTest : public ::testing::TestWithParam<LogAnswer> {};

TEST_P(HangRealLogTest, VerdictIsTheCarefulReadersAnswer) {
  const LogAnswer& want = GetParam();
  auto readers = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(readers.ok()) << readers.status().message();
  auto run = Ingest({kHangs + want.file}, readers->readers, IngestOptions());
  ASSERT_TRUE(run.ok()) << run.status().message();
  Analyses a = AnalyzeRun(*run, AnalysisOptions());
  Verdict v = DecideVerdict(*run, a);
  EXPECT_EQ(VerdictStatusName(v.status), VerdictStatusName(want.status)) << v.summary;
  ASSERT_TRUE(a.hang.hang) << v.summary;
  ASSERT_FALSE(a.hang.findings.empty()) << v.summary;
  const Finding& f = a.hang.findings.front();
  EXPECT_EQ(Describe(f.code).name, Describe(want.code).name) << f.message;
  EXPECT_EQ(f.ranks, want.ranks) << f.message;
  if (want.ranks.empty()) {
    EXPECT_FALSE(f.entity.rank.has_value()) << f.message;
  }
  EXPECT_EQ(f.entity.host, want.host) << f.message;
  EXPECT_EQ(a.hang.episodes, want.stops) << f.message;
}

INSTANTIATE_TEST_SUITE_P(
    Logs, HangRealLogTest,
    ::testing::Values(
        // Lines of four unrelated torch 1.x jobs: "[Rank M]" is a rank of a
        // group the lines do not name, and they have no time: nobody to blame.
        LogAnswer{"torch1_watchdog.log",
                  VerdictStatus::kInconclusive,
                  FindingCode::kHangInconclusive,
                  {}},
        // Four stops on four days; the latest (Dec 06 18:44) is rank 4 of
        // PG 1 alone timing out at #7753: who did not join cannot be told.
        // Mixed with the earlier stops it read as a desync.
        LogAnswer{"torch2_watchdog_pg.log",
                  VerdictStatus::kInconclusive,
                  FindingCode::kHangInconclusive,
                  {},
                  std::nullopt,
                  4},
        // Five stops; the latest (Sep 09) is rank 3 alone in default_pg.
        LogAnswer{"torch2_pg_guid.log",
                  VerdictStatus::kInconclusive,
                  FindingCode::kHangInconclusive,
                  {},
                  std::nullopt,
                  5},
        // Ranks 1 and 7 both time out in blocking wait at #2521: they are the
        // ones waiting, not the ones missing; the others said nothing.
        LogAnswer{
            "blocking_wait.log", VerdictStatus::kInconclusive, FindingCode::kHangInconclusive, {}},
        // The trap: "[0] Timeout at collective" is rank 0 reporting its own
        // timeout; the report blames rank 7, which never joined #183.
        LogAnswer{"desync_report.log", VerdictStatus::kHang, FindingCode::kHangNotJoined, {7}},
        // Three jobs' collective checks, each naming both sides of a pair
        // (1 vs 0, 1 vs 0, 1 vs 2) at one sequence number.
        LogAnswer{
            "collective_mismatch.log", VerdictStatus::kHang, FindingCode::kHangDesync, {0, 1, 2}},
        // gloo errors of five unrelated jobs, none with a rank.
        LogAnswer{"gloo.log", VerdictStatus::kInconclusive, FindingCode::kHangInconclusive, {}},
        // NET/IB and socket errors on four hosts of different jobs: the
        // network, but no one host's link.
        LogAnswer{"nccl_transport.log", VerdictStatus::kHang, FindingCode::kHangTransportError, {}},
        // torchrun's exits: -6 is the watchdog's own abort after a timeout;
        // the exit 1 names only local rank 0 of a host it does not give.
        LogAnswer{"torchrun_failure.log",
                  VerdictStatus::kInconclusive,
                  FindingCode::kHangInconclusive,
                  {}},
        // Rank 0's lines, cut by the pager: the rest of the log may name others.
        LogAnswer{
            "pager_cut.log", VerdictStatus::kInconclusive, FindingCode::kHangInconclusive, {}},
        // Rank 0's steps, then its timeout at #1580: one rank's own log.
        LogAnswer{
            "mixed_steps.log", VerdictStatus::kInconclusive, FindingCode::kHangInconclusive, {}},
        // Rank 4's IB completion error 12 (retry exceeded) from peer
        // 10.216.210.236 on kp-ddp-worker-0, then its watchdog timeout.
        LogAnswer{"mixed_nccl_debug.log",
                  VerdictStatus::kHang,
                  FindingCode::kHangTransportError,
                  {4},
                  "kp-ddp-worker-0"}),
    [](const ::testing::TestParamInfo<LogAnswer>& p) {
      std::string name = p.param.file.substr(0, p.param.file.find('.'));
      return name;
    });

}  // namespace
}  // namespace laggard
