// `laggard history` (the fleet report of recorded verdicts), `laggard history
// drain` (the scheduler commands for chronic offenders), the recording that
// `laggard diagnose --record` and `watch --record` do, and the fleet series
// `watch --listen` serves (docs/history.md).
//
// Called from RunLaggard(), Diagnose() and Watch() on the main thread.

#ifndef LAGGARD_CLI_HISTORY_H_
#define LAGGARD_CLI_HISTORY_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "analysis/common/finding.h"
#include "analysis/common/rank_map.h"
#include "base/status.h"
#include "history/fleet_report.h"
#include "model/run.h"
#include "verdict/verdict.h"

namespace CLI {
class App;
}

namespace laggard {

// diagnose's --record, --history, --job-id.
struct RecordFlags {
  bool record = false;
  std::string history;  // "" for history::DefaultHistoryPath()
  std::string job_id;   // "" for the first input's absolute path (diagnose)
};
void AddRecordFlags(CLI::App* cmd, RecordFlags& flags);

// Records a diagnosis when --record was given; prints one line on `err`,
// its errors after `who` ("laggard diagnose --record"). false when it could
// not be recorded (the message says why).
bool RecordVerdict(const RecordFlags& flags, const std::string& first_path, const Run& run,
                   const RankMap& ranks, const Verdict& verdict,
                   std::span<const Finding* const> findings, std::string_view who,
                   std::ostream& err);

// The fleet history at `path` as Prometheus text: per part that was ever
// the culprit and per cause, laggard_culprit_jobs_total{host, gpu_uuid,
// part, cause} = the recorded jobs it was the culprit in. An error when the
// store cannot be read.
StatusOr<std::string> CulpritJobsMetrics(const std::string& path);
// Its HELP and TYPE lines: the series of an empty fleet.
inline constexpr std::string_view kCulpritJobsHeader =
    "# HELP laggard_culprit_jobs_total Recorded jobs in which a part was the culprit, by cause "
    "(the fleet history).\n# TYPE laggard_culprit_jobs_total counter\n";
// The history path given, else history::DefaultHistoryPath().
std::string PathOr(const std::string& given);

struct HistoryOptions {
  std::string history;  // "" for the default path
  std::string since;    // "30d", "12h", "2w", or a date "2026-11-01"; "" for all
  std::string host;
  std::string gpu;
  bool json = false;
  std::string html;  // --html FILE: the page (history_html.h), beside the text
  history::ReportOptions report;
  // drain
  std::string scheduler = "slurm";
  bool apply = false;
  double command_timeout_s = 60;
};

// Adds `history` and its `drain` subcommand to `app`; returns them.
struct HistoryCommands {
  CLI::App* history = nullptr;
  CLI::App* drain = nullptr;
};
HistoryCommands AddHistoryCommands(CLI::App& app, HistoryOptions& options);

int History(const HistoryOptions& options, bool drain, std::ostream& out, std::ostream& err);

// --since TEXT as Unix seconds, counted back from `now_s`.
StatusOr<int64_t> ParseSince(std::string_view text, int64_t now_s);

}  // namespace laggard

#endif  // LAGGARD_CLI_HISTORY_H_
