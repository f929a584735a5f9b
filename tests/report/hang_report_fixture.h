// Hand-built stopped jobs for the report tests of hang evidence (merged
// trace, HTML Hang section): a 4-rank default group, Flight Recorder dumps
// with wall-clock times, and watchdog lines, diagnosed by the hang
// detector.

#ifndef LAGGARD_TESTS_REPORT_HANG_REPORT_FIXTURE_H_
#define LAGGARD_TESTS_REPORT_HANG_REPORT_FIXTURE_H_

#include <string>
#include <vector>

#include "analysis/hangs/hang_detector.h"
#include "report_fixture.h"

namespace laggard::testing_util {

inline constexpr TimeNs kHangT0 = 1'764'000'000'000'000'000;  // ns, an absolute instant
inline constexpr TimeNs Sec(double s) { return kHangT0 + static_cast<TimeNs>(s * 1e9); }

inline CollectiveRecord Entry(int64_t seq, double started_s, std::optional<double> completed_s,
                              const std::string& pg = "0") {
  CollectiveRecord e;
  e.record_id = seq;
  e.pg_id = pg;
  e.collective_seq = seq;
  e.op = "nccl:all_reduce";
  e.created_ns = Sec(started_s - 0.05);
  e.started_ns = Sec(started_s);
  if (completed_s) e.completed_ns = Sec(*completed_s);
  e.state = completed_s ? CollectiveState::kCompleted : CollectiveState::kStarted;
  e.input_sizes = {{1024}};
  e.output_sizes = {{1024}};
  return e;
}

inline FlightRecorderDump FrDump(int32_t rank, int64_t enqueued, int64_t completed,
                                 std::vector<CollectiveRecord> entries) {
  FlightRecorderDump d;
  d.rank = rank;
  d.version = "2.10";
  d.status.push_back({"0", enqueued, enqueued, completed});
  d.entries = std::move(entries);
  return d;
}

struct HangDiagnosed {
  HangDiagnosed() = default;
  HangDiagnosed(const HangDiagnosed&) = delete;  // `hang` refers into d

  Diagnosed d;
  HangAnalysis& hang = d.analyses.hang;  // the hang detector's output, as reports read it
  ReportInput input() const { return d.input(); }
};

// Ranks 0 and 1 completed all_reduce #5 and wait in #6 (started at 11.2 s
// and 11.4 s, never completed); rank 2 completed #5 and never enqueued #6
// (its dump says so: hang.host_stopped);
// rank 3, a member, said nothing. Rank 0's watchdog line is dated
// (15.0 s); rank 1's carries only glog's yearless time.
inline void NotJoinedHang(HangDiagnosed& h, const std::string& pg_desc = "default_pg") {
  Run& run = h.d.run;
  run.hang.groups.push_back(ProcessGroupInfo{"0", pg_desc, {0, 1, 2, 3}, 4, false, {}});
  CollectiveRecord last0 = Entry(6, 11.2, std::nullopt);
  last0.frames = {{"all_reduce", "distributed_c10d.py", 2501}, {"train_step", "train.py", 77}};
  run.hang.dumps.push_back(FrDump(0, 6, 5, {Entry(5, 10.1, 10.3), last0}));
  run.hang.dumps.push_back(FrDump(1, 6, 5, {Entry(5, 10.15, 10.3), Entry(6, 11.4, std::nullopt)}));
  run.hang.dumps.push_back(FrDump(2, 5, 5, {Entry(5, 10.05, 10.3)}));
  HangEvent dated;
  dated.kind = HangEventKind::kWatchdogTimeout;
  dated.rank = 0;
  dated.pg_id = "0";
  dated.seq = 6;
  dated.op = "ALLREDUCE";
  dated.time_ns = Sec(15.0);
  dated.text = "[rank0]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6)";
  run.hang.events.push_back(dated);
  HangEvent yearless = dated;
  yearless.rank = 1;
  yearless.time_ns.reset();
  yearless.yearless_time_ns = 12'345'000'000'000;
  run.hang.events.push_back(yearless);
  Diagnose(h.d);
  h.hang = AnalyzeHang(run);
}

}  // namespace laggard::testing_util

#endif  // LAGGARD_TESTS_REPORT_HANG_REPORT_FIXTURE_H_
