#include "cli/watch.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/analyze_run.h"
#include "base/text.h"
#include "cli/app.h"
#include "cli/diagnose.h"
#include "history/job_record.h"
#include "history/store.h"
#include "ingest/common/prometheus_text.h"
#include "ingest/prometheus/prometheus_source.h"
#include "net/http.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

std::atomic<bool> g_stop{false};

// How often --listen reads the fleet history again (a store of 10^6 jobs
// takes about a second).
constexpr DurationNs kFleetMetricsEveryNs = 300'000'000'000;
extern "C" void OnStopSignal(int) { g_stop = true; }

TimeNs NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Live stall alerts (analysis/hangs/stall_detector.h): one laggard_rank_stalled
// sample per stalled rank, and whether the whole job stopped.
std::string StallMetrics(const StallAnalysis& stall, const Run& run) {
  std::string s;
  s += "# HELP laggard_rank_stalled A rank that stopped reporting steps while other ranks, "
       "ahead of it, wait (value 1; only stalled ranks are listed).\n";
  s += "# TYPE laggard_rank_stalled gauge\n";
  for (const StalledRank& r : stall.stalled) {
    const StepSeries* series = run.FindRank(r.rank);
    std::string host = series && series->info.host ? *series->info.host : "";
    s += prom::FormatSample("laggard_rank_stalled",
                            {{"rank", std::to_string(r.rank)}, {"host", host}}, 1) +
         "\n";
  }
  s += "# HELP laggard_job_stalled 1 while every rank has stopped reporting steps at one step "
       "(a hang whose rank the steps do not tell, or the end of the job).\n";
  s += "# TYPE laggard_job_stalled gauge\n";
  s += fmt::format("laggard_job_stalled {}\n", stall.job_stalled ? 1 : 0);
  return s;
}

// The verdict as Prometheus text exposition.
std::string VerdictMetrics(const Verdict& v, uint64_t evaluations, uint64_t errors, TimeNs at) {
  std::string s;
  s += "# HELP laggard_straggler A culprit of the current verdict (value: confidence 0..1).\n";
  s += "# TYPE laggard_straggler gauge\n";
  for (const Culprit& c : v.culprits) {
    std::vector<prom::Label> labels = {
        {"rank", c.entity.rank ? std::to_string(*c.entity.rank) : ""},
        {"host", c.entity.host.value_or("")},
        {"gpu", c.entity.gpu ? std::to_string(*c.entity.gpu) : ""},
        {"cause_class", std::string(CauseClassName(c.cause_class))},
        {"cause", c.cause.value_or("")}};
    s += prom::FormatSample("laggard_straggler", labels, c.confidence) + "\n";
  }
  s += "# HELP laggard_verdict_status The current verdict's status (1 for the active one).\n";
  s += "# TYPE laggard_verdict_status gauge\n";
  for (VerdictStatus st :
       {VerdictStatus::kStraggler, VerdictStatus::kNoStraggler, VerdictStatus::kInconclusive,
        VerdictStatus::kJobWide, VerdictStatus::kCommBound, VerdictStatus::kHang}) {
    s += fmt::format("laggard_verdict_status{{status=\"{}\"}} {}\n", VerdictStatusName(st),
                     st == v.status ? 1 : 0);
  }
  s += "# HELP laggard_throughput_lost Estimated share of job throughput the culprits cost.\n";
  s += "# TYPE laggard_throughput_lost gauge\n";
  s += fmt::format("laggard_throughput_lost {}\n", v.throughput_lost.value_or(0));
  s += "# HELP laggard_watch_evaluations_total Windows evaluated.\n";
  s += "# TYPE laggard_watch_evaluations_total counter\n";
  s += fmt::format("laggard_watch_evaluations_total {}\n", evaluations);
  s += "# HELP laggard_watch_errors_total Evaluations that failed (Prometheus unreachable...).\n";
  s += "# TYPE laggard_watch_errors_total counter\n";
  s += fmt::format("laggard_watch_errors_total {}\n", errors);
  s += "# HELP laggard_watch_last_evaluation_timestamp_seconds Unix time of the last evaluation.\n";
  s += "# TYPE laggard_watch_last_evaluation_timestamp_seconds gauge\n";
  s += fmt::format("laggard_watch_last_evaluation_timestamp_seconds {:.3f}\n", ToSeconds(at));
  return s;
}

std::string JsonLine(const Verdict& v, const Run& run, const StallAnalysis& stall, TimeNs at) {
  nlohmann::ordered_json j;
  j["time"] = FormatTimestamp(at);
  j["status"] = VerdictStatusName(v.status);
  j["summary"] = v.summary;
  nlohmann::ordered_json culprits = nlohmann::ordered_json::array();
  for (const Culprit& c : v.culprits) {
    nlohmann::ordered_json x;
    x["rank"] = c.entity.rank ? nlohmann::ordered_json(*c.entity.rank) : nullptr;
    x["host"] = c.entity.host ? nlohmann::ordered_json(*c.entity.host) : nullptr;
    x["gpu"] = c.entity.gpu ? nlohmann::ordered_json(*c.entity.gpu) : nullptr;
    x["cause_class"] = CauseClassName(c.cause_class);
    x["cause"] = c.cause ? nlohmann::ordered_json(*c.cause) : nullptr;
    x["confidence"] = c.confidence;
    culprits.push_back(std::move(x));
  }
  j["culprits"] = std::move(culprits);
  nlohmann::ordered_json stalled = nlohmann::ordered_json::array();
  for (const StalledRank& r : stall.stalled) {
    stalled.push_back({{"rank", r.rank},
                       {"last_step", r.last_step},
                       {"silent_s", ToSeconds(r.silent_ns)},
                       {"steps_behind", r.steps_behind}});
  }
  j["stalled"] = std::move(stalled);
  j["job_stalled"] = stall.job_stalled;
  j["ranks"] = run.ranks.size();
  j["gpus"] = run.hardware.gpus.size();
  j["next_steps"] = v.next_steps;
  return j.dump();
}

// The fleet history's series for --listen, read again every
// kFleetMetricsEveryNs: a store not written yet is an empty fleet, an error
// is printed when it differs from the last one, and the last good series
// stay served meanwhile.
class FleetSeries {
 public:
  explicit FleetSeries(std::string path) : path_(std::move(path)) {}

  // The series to serve now, read again when due; nullopt when unchanged.
  std::optional<std::string> Refresh(TimeNs now, std::ostream& err) {
    if (path_.empty() || (read_at_ && now - *read_at_ < kFleetMetricsEveryNs)) return std::nullopt;
    read_at_ = now;
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) return std::string(kCulpritJobsHeader);
    auto read = CulpritJobsMetrics(path_);
    if (!read.ok()) {
      if (read.status().message() != last_error_) {
        err << fmt::format("laggard watch: {}\n", read.status().message());
        last_error_ = read.status().message();
      }
      return std::nullopt;
    }
    last_error_.clear();
    return *read;
  }

 private:
  std::string path_;  // "" for none
  std::optional<TimeNs> read_at_;
  std::string last_error_;
};

// --record at stop: the kept window's verdict again (the analyses are pure)
// into the history. false when it could not be recorded.
bool RecordKept(const WatchOptions& o, const std::optional<Run>& kept,
                const AnalysisOptions& analysis, std::ostream& err) {
  if (!kept) {
    err << "laggard watch --record: no window was read; nothing recorded\n";
    return false;
  }
  Analyses a = AnalyzeRun(*kept, analysis);
  Verdict v = DecideVerdict(*kept, a);
  std::vector<const Finding*> findings = a.AllFindings();
  return RecordVerdict(o.record, o.record.job_id, *kept, a.ranks, v, findings,
                       "laggard watch --record", err);
}

// Flags that would do nothing, and a store --record could not write.
bool UsageOk(const WatchOptions& o, std::ostream& err) {
  if (!o.fail_on.empty() && !o.once) {
    err << "laggard watch: --fail-on needs --once (one evaluation, one exit code)\n";
    return false;
  }
  if (o.record.record && o.record.job_id.empty()) {
    err << "laggard watch: --record needs --job-id (the id of the job watched, e.g. "
           "\"$SLURM_JOB_ID\")\n";
    return false;
  }
  if (!o.record.record && !o.record.job_id.empty()) {
    err << "laggard watch: --job-id names the job --record records; give --record too\n";
    return false;
  }
  if (!o.record.record && o.listen.empty() && !o.record.history.empty()) {
    err << "laggard watch: --history is the store of --record, or of --listen's "
           "laggard_culprit_jobs_total; give one of them\n";
    return false;
  }
  if (o.record.record) {
    // Found out now, not when the job ends: the store must be writable.
    auto store = history::HistoryStore::Open(PathOr(o.record.history),
                                             history::HistoryStore::Mode::kReadWrite);
    if (!store.ok()) {
      err << "laggard watch --record: " << store.status().message() << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace

void AddWatchFlags(CLI::App* cmd, WatchOptions& o) {
  cmd->add_option("--prometheus", o.prometheus, "Prometheus server, http://HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--window", o.window_s, "seconds of history each evaluation reads")
      ->check(CLI::Range(10.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--interval", o.interval_s, "seconds between evaluations")
      ->check(CLI::Range(0.5, 3600.0))
      ->capture_default_str();
  cmd->add_option("--resolution", o.resolution_s, "query step in seconds (the scrape interval)")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  cmd->add_option("--selector", o.selector, "extra label matchers, e.g. job=\"train\"");
  cmd->add_flag("--once", o.once, "evaluate one window and exit");
  cmd->add_flag("--json", o.json, "one JSON line per evaluation instead of text");
  cmd->add_option("--listen", o.listen,
                  "serve the verdict as Prometheus metrics on HOST:PORT (e.g. 127.0.0.1:9402)");
  cmd->add_option("--duration", o.duration_s, "stop after this many seconds (0: until interrupted)")
      ->check(CLI::Range(0.0, 1e9));
  CLI::Option* gpus_per_node =
      cmd->add_option("--gpus-per-node", o.gpus_per_node,
                      "place ranks as node_index x G + local_rank when steps name no GPU "
                      "(node_index from the host name's number)")
          ->check(CLI::Range(1, 1024));
  cmd->add_flag("--record", o.record.record,
                "when watch stops, record the job (--job-id) in the fleet history");
  cmd->add_option("--history", o.record.history,
                  "the fleet history store of --record, and of --listen's "
                  "laggard_culprit_jobs_total (default with --record: "
                  "$XDG_DATA_HOME/laggard/history.db)");
  cmd->add_option("--job-id", o.record.job_id, "the id of the job watched, for --record");
  cmd->add_option("--first-node", o.first_node,
                  "with --gpus-per-node: the number in the host name of the job's first node")
      ->check(CLI::Range(0, 999'999'999))
      ->needs(gpus_per_node);
}

int Watch(const WatchOptions& o, std::ostream& out, std::ostream& err) {
  if (!UsageOk(o, err)) return kExitNoInput;
  g_stop = false;
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);

  std::mutex mu;
  std::string metrics = VerdictMetrics(Verdict(), 0, 0, NowNs());
  std::string fleet;  // the history's series, with --listen and --history
  // Every evaluation reads Prometheus through the HTTP module: without it,
  // stop now rather than print the same error every interval.
  if (Status module = net::OpenHttpModule(); !module.ok()) {
    err << fmt::format("laggard watch: {}\n", module.message());
    return kExitNoInput;
  }
  std::optional<net::HttpServer> server;
  if (!o.listen.empty()) {
    std::string host;
    int port = 0;
    if (!ParseHostPort(o.listen, host, port) || port == 0) {
      err << "laggard watch: --listen needs HOST:PORT\n";
      return kExitNoInput;
    }
    server.emplace(2);
    server->Get("/metrics", [&] {
      std::lock_guard<std::mutex> lock(mu);
      return net::HttpResponse{200, "text/plain; version=0.0.4", metrics + fleet};
    });
    server->Get("/healthz", [] { return net::HttpResponse{200, "text/plain", "ok\n"}; });
    if (Status listening = server->Listen(o.listen); !listening.ok()) {
      err << fmt::format("laggard watch: {}\n", listening.message());
      return kExitNoInput;
    }
    server->Start();
  }

  PrometheusQuery q;
  q.url = o.prometheus;
  q.selector = o.selector;
  q.step_ns = static_cast<DurationNs>(o.resolution_s * 1e9);
  AnalysisOptions analysis;
  analysis.gpus_per_node = o.gpus_per_node;
  analysis.first_node = o.first_node;
  uint64_t evaluations = 0, errors = 0;
  std::string last_summary;
  // What --record records: the last window whose verdict decided, else the
  // last one, with the options it was read with.
  std::optional<Run> kept;
  AnalysisOptions kept_analysis;
  bool kept_decided = false;
  int rc = kExitOk;
  TimeNs started = NowNs();
  // --listen serves the store --history names, or the one --record writes.
  FleetSeries fleet_series(!server                     ? ""
                           : !o.record.history.empty() ? o.record.history
                           : o.record.record           ? PathOr("")
                                                       : "");
  while (!g_stop) {
    if (auto read = fleet_series.Refresh(NowNs(), err)) {
      std::lock_guard<std::mutex> lock(mu);
      fleet = std::move(*read);
    }
    TimeNs now = NowNs();
    q.end_ns = now;
    q.start_ns = now - static_cast<DurationNs>(o.window_s * 1e9);
    analysis.live_now_ns = now;
    auto run = LoadFromPrometheus(q);
    ++evaluations;
    if (!run.ok()) {
      ++errors;
      err << fmt::format("laggard watch: {}\n", run.status().message());
      if (o.once) {
        rc = kExitNoInput;
        break;
      }
    } else {
      Analyses a = AnalyzeRun(*run, analysis);
      Verdict v = DecideVerdict(*run, a);
      if (o.json) {
        out << JsonLine(v, *run, a.stall, now) << "\n";
      } else if (v.summary != last_summary || o.once) {
        out << fmt::format("[{}] {}\n", FormatTimestamp(now), v.summary);
        if (o.once) {
          for (const std::string& s : v.next_steps) out << "  next: " << s << "\n";
        }
      }
      out.flush();
      last_summary = v.summary;
      if (o.once && FailsOn(o.fail_on, v.status)) rc = kExitFailOn;
      {
        std::lock_guard<std::mutex> lock(mu);
        metrics = VerdictMetrics(v, evaluations, errors, now) + StallMetrics(a.stall, *run);
      }
      bool decided = history::DecidesParts(VerdictStatusName(v.status));
      if (o.record.record && (decided || !kept_decided)) {
        kept = std::move(*run);
        kept_analysis = analysis;
        kept_decided = decided;
      }
    }
    if (o.once) break;
    TimeNs wake = now + static_cast<DurationNs>(o.interval_s * 1e9);
    while (!g_stop && NowNs() < wake) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (o.duration_s > 0 && NowNs() - started >= static_cast<DurationNs>(o.duration_s * 1e9)) break;
  }
  if (server) server->Stop();
  // As diagnose: an output not written comes before --fail-on.
  if (o.record.record && !RecordKept(o, kept, kept_analysis, err)) {
    return rc == kExitNoInput ? rc : kExitOutputFailed;
  }
  return rc;
}

}  // namespace laggard
