// `laggard watch`: the live diagnosis. Every --interval it reads the last
// --window of laggard agent (and dcgm-exporter) series from Prometheus
// (ingest/prometheus/prometheus_source.h), runs the same detectors and verdict as
// `laggard diagnose`, plus the live stall detector with the window's end as
// now (analysis/hangs/stall_detector.h), and prints the verdict when it changes
// (--json: one JSON line per evaluation, for alerting). --once evaluates one
// window and exits (cron / CI). --listen serves the verdict as Prometheus
// metrics (laggard_straggler{rank,host,gpu,cause_class,cause},
// laggard_rank_stalled{rank,host}, laggard_job_stalled) for alert rules and
// Grafana, and with --history the fleet history's laggard_culprit_jobs_total.
// --record --job-id records the job watched in the fleet history when watch
// stops; docs/watch.md.

#ifndef LAGGARD_CLI_WATCH_H_
#define LAGGARD_CLI_WATCH_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/history.h"

namespace CLI {
class App;
}

namespace laggard {

struct WatchOptions {
  std::string prometheus = "http://127.0.0.1:9090";
  double window_s = 300;
  double interval_s = 5;
  double resolution_s = 1;
  std::string selector;  // extra label matchers, e.g. job="train"
  bool once = false;
  bool json = false;
  std::string listen;     // host:port for the verdict metrics, "" = off
  double duration_s = 0;  // stop after this long (0 = until SIGINT/SIGTERM)
  std::optional<int32_t> gpus_per_node;
  std::optional<int32_t> first_node;  // with gpus_per_node (analysis/common/rank_map.h)
  // With --once: verdict statuses that exit kExitFailOn (cli/diagnose.h).
  std::vector<std::string> fail_on;
  // --record: when watch stops, the job (--job-id, required) goes to the
  // fleet history with the last evaluation whose verdict decided (a
  // straggler, none, or a hang), else the last one.
  RecordFlags record;
};

// Every flag but --fail-on, which RunLaggard() adds (AddFailOnFlag).
void AddWatchFlags(CLI::App* cmd, WatchOptions& options);
int Watch(const WatchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace laggard

#endif  // LAGGARD_CLI_WATCH_H_
