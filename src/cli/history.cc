#include "cli/history.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/common/rank_map.h"
#include "cli/app.h"
#include "history/drain.h"
#include "history/history_html.h"
#include "history/store.h"
#include "ingest/common/prometheus_text.h"
#include "model/time.h"

namespace laggard {
namespace {

using history::FleetReport;
using history::HistoryStore;
using history::Offender;
using history::Standing;
using Json = nlohmann::ordered_json;

int64_t NowS() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Day(int64_t s) { return FormatDate(s * 1'000'000'000); }

// --job-id, else the first input's absolute path, with the job's number
// when the files hold several. $SLURM_JOB_ID is not taken on its own: it
// names the allocation diagnose runs in, which is the run's only in an
// epilog (give --job-id "$SLURM_JOB_ID" there).
std::string JobIdOf(const RecordFlags& f, const std::string& first_path, const Run& run) {
  if (!f.job_id.empty()) return f.job_id;
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(first_path, ec);
  std::string id = ec ? first_path : p.string();
  if (run.jobs.several()) id += fmt::format("#job{}", run.jobs.chosen + 1);
  return id;
}

// The offenders of `host` or of the GPU `gpu` (UUID, serial or part key).
void KeepOffendersOf(const std::string& host, const std::string& gpu, FleetReport& r) {
  if (host.empty() && gpu.empty()) return;
  std::erase_if(r.offenders, [&](const Offender& o) {
    const history::PartRecord& p = o.part;
    if (!host.empty() && p.host != host) return true;
    if (!gpu.empty()) {
      return p.kind != history::PartKind::kGpu || o.node ||
             (p.uuid != gpu && p.serial != gpu && p.key != gpu);
    }
    return false;
  });
  r.rank_fixed.clear();
}

std::string Causes(const Offender& o) {
  std::string out;
  for (const auto& [cause, n] : o.causes)
    out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", cause, n);
  return out;
}

void TextOffender(const Offender& o, std::ostream& out) {
  out << fmt::format("  {}: culprit in {} of its last {} jobs ({} of {} in all): {}\n", o.Name(),
                     o.culprit_last, o.jobs_last, o.culprit_all, o.jobs_all, Causes(o));
  if (!o.ranks.empty() && !o.node) {
    out << fmt::format(
        "      as rank {}{}\n", RankRangesText(o.ranks),
        o.ranks.size() > 1 ? ": the same part under different ranks (hardware-fixed)" : "");
  }
  if (o.periodic) out << fmt::format("      periodic: {}\n", *o.periodic);
  if (o.weak()) {
    out << fmt::format("      weaker evidence: known by {}, not by a serial or UUID\n",
                       o.part.identity == history::Identity::kRank ? "rank number" : "place");
  }
  if (o.unsure_all > 0) {
    out << fmt::format("      not counted: {} undecided or low-confidence {}\n", o.unsure_all,
                       o.unsure_all == 1 ? "job" : "jobs");
  }
}

void RenderText(const std::string& path, const FleetReport& r, const HistoryOptions& ho,
                std::ostream& out) {
  const history::ReportOptions& ro = ho.report;
  if (r.jobs == 0) {
    out << fmt::format("history {}: no recorded jobs match\n", path);
    return;
  }
  out << fmt::format("history {}: {} {} from {} to {}: {} without a straggler, {} undecided\n",
                     path, r.jobs, r.jobs == 1 ? "job" : "jobs", Day(r.first_s), Day(r.last_s),
                     r.healthy_jobs, r.undecided_jobs);
  if (!ho.host.empty() || !ho.gpu.empty()) {
    out << fmt::format("only the parts of {} {} (each judged on all its jobs)\n",
                       ho.host.empty() ? "GPU" : "host", ho.host.empty() ? ho.gpu : ho.host);
  }
  const char* titles[] = {"chronic", "recurring", "transient"};
  for (Standing s : {Standing::kChronic, Standing::kRecurring, Standing::kTransient}) {
    size_t n = std::count_if(r.offenders.begin(), r.offenders.end(),
                             [&](const Offender& o) { return o.standing == s; });
    if (s == Standing::kChronic) {
      out << fmt::format("{} (culprit in >= {} and >= {:.0f}% of its last {} jobs): {}\n",
                         titles[0], ro.chronic_min_jobs, ro.chronic_share * 100, ro.last_jobs,
                         n == 0 ? "none" : std::to_string(n));
    } else {
      out << fmt::format("{}: {}\n", titles[static_cast<int>(s)],
                         n == 0 ? "none" : std::to_string(n));
    }
    size_t shown = 0;
    for (const Offender& o : r.offenders) {
      if (o.standing != s) continue;
      if (s == Standing::kTransient && shown == 10) {
        out << fmt::format("  ... and {} more (--json lists all)\n", n - shown);
        break;
      }
      TextOffender(o, out);
      ++shown;
    }
  }
  for (const history::RankFixed& f : r.rank_fixed) {
    std::string why =
        f.imbalance_jobs * 2 > f.culprit_jobs
            ? fmt::format("{} of them for doing more work per step (imbalance)", f.imbalance_jobs)
            : fmt::format("on {} different parts", f.parts.size());
    out << fmt::format(
        "rank-fixed: rank {} was the culprit in {} jobs, {}: look at the code or the data that "
        "rank gets (its shard, its pipeline stage), not at one card; nothing to drain\n",
        f.rank, f.culprit_jobs, why);
  }
  if (r.weak_jobs > 0) {
    out << fmt::format(
        "{} of the jobs name a GPU or rank culprit only by place or rank number (no GPU serial or "
        "UUID in their inputs): add nvidia-smi -q or DCGM output to key them by the card\n",
        r.weak_jobs);
  }
}

Json OffenderJson(const Offender& o) {
  const history::PartRecord& p = o.part;
  auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  Json j;
  j["key"] = p.key;
  j["name"] = o.Name();
  j["kind"] = o.node ? "node" : std::string(history::PartKindName(p.kind));
  j["identity"] = history::IdentityName(p.identity);
  j["host"] = opt(p.host);
  j["gpu"] = opt(p.gpu);
  j["uuid"] = opt(p.uuid);
  j["serial"] = opt(p.serial);
  j["nic"] = opt(p.nic);
  j["switch"] = opt(p.switch_name);
  j["standing"] = history::StandingName(o.standing);
  j["culprit_last"] = o.culprit_last;
  j["jobs_last"] = o.jobs_last;
  j["culprit_all"] = o.culprit_all;
  j["jobs_all"] = o.jobs_all;
  j["unsure"] = o.unsure_all;
  j["causes"] = o.causes;
  j["ranks"] = o.ranks;
  j["periodic"] = opt(o.periodic);
  j["weak_identity"] = o.weak();
  j["culprit_jobs"] = o.culprit_jobs;
  return j;
}

Json ReportJson(const std::string& path, const FleetReport& r, const history::ReportOptions& ro) {
  Json j;
  j["schema"] = "laggard.history/1";
  j["history"] = path;
  j["jobs"] = r.jobs;
  j["jobs_without_straggler"] = r.healthy_jobs;
  j["jobs_undecided"] = r.undecided_jobs;
  j["first"] = r.jobs ? Json(Day(r.first_s)) : Json(nullptr);
  j["last"] = r.jobs ? Json(Day(r.last_s)) : Json(nullptr);
  j["thresholds"] = {{"last_jobs", ro.last_jobs},
                     {"chronic_min_jobs", ro.chronic_min_jobs},
                     {"chronic_share", ro.chronic_share},
                     {"min_confidence", ro.min_confidence}};
  Json offenders = Json::array();
  for (const Offender& o : r.offenders) offenders.push_back(OffenderJson(o));
  j["offenders"] = std::move(offenders);
  Json fixed = Json::array();
  for (const history::RankFixed& f : r.rank_fixed) {
    fixed.push_back({{"rank", f.rank},
                     {"culprit_jobs", f.culprit_jobs},
                     {"imbalance_jobs", f.imbalance_jobs},
                     {"parts", f.parts}});
  }
  j["rank_fixed"] = std::move(fixed);
  j["jobs_with_weak_identity"] = r.weak_jobs;
  return j;
}

int Drain(HistoryStore& store, const FleetReport& report, const HistoryOptions& o,
          std::ostream& out, std::ostream& err) {
  auto scheduler = history::ParseScheduler(o.scheduler);
  if (!scheduler) {
    err << fmt::format("laggard history drain: --scheduler {}: slurm or kubernetes\n", o.scheduler);
    return kExitNoInput;
  }
  history::DrainPlan plan = history::PlanDrain(report, *scheduler);
  if (plan.commands.empty()) {
    out << "no chronic offender with a host: nothing to drain\n";
  } else {
    out << fmt::format("{} ({} {}):\n",
                       o.apply ? "draining" : "dry run, nothing is run (--apply runs these)",
                       plan.commands.size(), plan.commands.size() == 1 ? "node" : "nodes");
  }
  bool failed = false;
  for (const history::DrainCommand& c : plan.commands) {
    for (const auto& argv : c.argvs) {
      out << "  " << ShellText(argv) << "\n";
      if (!o.apply) continue;
      CommandResult res = RunCommand(argv, o.command_timeout_s);
      history::ActionRecord a;
      a.at_s = NowS();
      a.host = c.host;
      a.command = ShellText(argv);
      a.reason = c.reason;
      a.applied = true;
      a.exit_code = res.exit_code;
      a.output = res.output;
      bool ok = res.exit_code && *res.exit_code == 0;
      failed |= !ok;
      out << fmt::format(
          "    -> {}{}\n",
          ok              ? "done"
          : res.exit_code ? fmt::format("exit {}", *res.exit_code)
                          : "not run",
          res.output.empty() ? "" : ": " + res.output.substr(0, res.output.find('\n')));
      if (Status s = store.RecordAction(a); !s.ok()) {
        err << "laggard history drain: " << s.message() << "\n";
        failed = true;
      }
    }
  }
  for (const std::string& line : plan.not_drained) out << "not drained: " << line << "\n";
  return failed ? kExitOutputFailed : kExitOk;
}

}  // namespace

std::string PathOr(const std::string& given) {
  return given.empty() ? history::DefaultHistoryPath() : given;
}

void AddRecordFlags(CLI::App* cmd, RecordFlags& f) {
  cmd->add_flag("--record", f.record,
                "append the verdict to the fleet history (laggard history reads it)");
  cmd->add_option("--history", f.history,
                  "the history store: a file (default $XDG_DATA_HOME/laggard/history.db) or a "
                  "postgresql:// URI");
  cmd->add_option("--job-id", f.job_id,
                  "the job's id in the history (default: the first path; in a Slurm epilog give "
                  "\"$SLURM_JOB_ID\")");
}

bool RecordVerdict(const RecordFlags& flags, const std::string& first_path, const Run& run,
                   const RankMap& ranks, const Verdict& verdict,
                   std::span<const Finding* const> findings, std::string_view who,
                   std::ostream& err) {
  std::string path = PathOr(flags.history);
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadWrite);
  if (!store.ok()) {
    err << who << ": " << store.status().message() << "\n";
    return false;
  }
  history::JobRecord rec =
      history::RecordOfJob(run, ranks, verdict, findings, JobIdOf(flags, first_path, run), NowS());
  auto added = store->Record(rec);
  if (!added.ok()) {
    err << who << ": " << added.status().message() << "\n";
    return false;
  }
  size_t culprits = std::count_if(rec.parts.begin(), rec.parts.end(),
                                  [](const history::PartRecord& p) { return p.culprit; });
  if (*added) {
    err << fmt::format("recorded job {} to {}: {} parts, {} culprit{}\n", rec.job_id,
                       store->display(), rec.parts.size(), culprits, culprits == 1 ? "" : "s");
  } else {
    err << fmt::format(
        "job {} is already in {}: the first record is kept (--job-id names another)\n", rec.job_id,
        store->display());
  }
  return true;
}

StatusOr<std::string> CulpritJobsMetrics(const std::string& path) {
  auto store = HistoryStore::Open(path, HistoryStore::Mode::kReadOnly);
  if (!store.ok()) return store.status();
  history::FleetTally tally({});
  if (Status s = store->Scan({}, tally); !s.ok()) return s;
  FleetReport report = tally.Finish();
  std::string out(kCulpritJobsHeader);
  for (const Offender& o : report.offenders) {
    if (o.node) continue;  // its parts are listed
    for (const auto& [cause, jobs] : o.causes) {
      out += prom::FormatSample("laggard_culprit_jobs_total",
                                {{"host", o.part.host.value_or("")},
                                 {"gpu_uuid", o.part.uuid.value_or("")},
                                 {"part", o.part.key},
                                 {"cause", cause}},
                                jobs) +
             "\n";
    }
  }
  return out;
}

StatusOr<int64_t> ParseSince(std::string_view text, int64_t now_s) {
  if (text.size() >= 2) {
    char unit = text.back();
    std::string_view digits = text.substr(0, text.size() - 1);
    int64_t per = unit == 'm'   ? 60
                  : unit == 'h' ? 3600
                  : unit == 'd' ? 86400
                  : unit == 'w' ? 604800
                                : 0;
    bool all_digits =
        !digits.empty() && digits.size() <= 9 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (per > 0 && all_digits) return now_s - std::stoll(std::string(digits)) * per;
  }
  std::string t(text);
  if (t.size() == 10) t += "T00:00:00Z";
  if (auto ns = ParseTimestamp(t)) return *ns / 1'000'000'000;
  return Status::Error(fmt::format(
      "--since {}: give a span back from now (90m, 12h, 30d, 2w) or a date (2026-11-01)", text));
}

HistoryCommands AddHistoryCommands(CLI::App& app, HistoryOptions& o) {
  HistoryCommands c;
  c.history = app.add_subcommand(
      "history", "repeat offenders across recorded jobs: chronic, transient, periodic, rank-fixed");
  c.history->fallthrough();
  c.history->add_option("--history", o.history,
                        "the history store: a file (default $XDG_DATA_HOME/laggard/history.db) or "
                        "a postgresql:// URI");
  c.history->add_option("--since", o.since, "only jobs since: 30d, 12h, 2w, or 2026-11-01");
  c.history->add_option("--host", o.host, "only this host's parts (judged on all their jobs)");
  c.history->add_option("--gpu", o.gpu, "only this GPU (UUID or serial; judged on all its jobs)");
  c.history->add_flag("--json", o.json, "print the report as JSON");
  c.history->add_option("--html", o.html,
                        "also write a self-contained page: offenders and a hosts x jobs grid");
  c.history->add_option("--last-jobs", o.report.last_jobs, "n: judge each part on its last n jobs")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  c.history
      ->add_option("--min-jobs", o.report.chronic_min_jobs,
                   "chronic: culprit in at least this many of them")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  c.history
      ->add_option("--min-share", o.report.chronic_share,
                   "chronic: and in at least this share of them")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  c.history
      ->add_option("--min-confidence", o.report.min_confidence,
                   "count a culprit only at this confidence or above")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  c.drain = c.history->add_subcommand(
      "drain", "print (or --apply) the scheduler commands that drain chronic offenders' nodes");
  c.drain->add_option("--scheduler", o.scheduler, "slurm or kubernetes")->capture_default_str();
  c.drain->add_flag("--apply", o.apply, "run the commands and record what was done");
  return c;
}

int History(const HistoryOptions& o, bool drain, std::ostream& out, std::ostream& err) {
  const char* who = drain ? "laggard history drain" : "laggard history";
  std::string path = PathOr(o.history);
  history::LoadFilter filter;
  if (!o.since.empty()) {
    auto since = ParseSince(o.since, NowS());
    if (!since.ok()) {
      err << who << ": " << since.status().message() << "\n";
      return kExitNoInput;
    }
    filter.since_s = *since;
  }
  auto store = HistoryStore::Open(
      path, drain && o.apply ? HistoryStore::Mode::kWriteExisting : HistoryStore::Mode::kReadOnly);
  if (!store.ok()) {
    err << who << ": " << store.status().message() << "\n";
    return kExitNoInput;
  }
  // Every part is judged on all its jobs; --host and --gpu then pick whose
  // standing is shown (and drained), never which jobs count.
  history::FleetTally tally(o.report);
  if (Status s = store->Scan(filter, tally); !s.ok()) {
    err << who << ": " << s.message() << "\n";
    return kExitNoInput;
  }
  FleetReport report = tally.Finish();
  KeepOffendersOf(o.host, o.gpu, report);
  if (drain) return Drain(*store, report, o, out, err);
  if (!o.html.empty()) {
    std::error_code ec;
    if (std::filesystem::equivalent(o.html, path, ec)) {
      err << fmt::format("laggard history: --html {} is the history store itself; not written\n",
                         o.html);
      return kExitNoInput;
    }
    // The grid draws the last jobs only.
    filter.last = history::kMaxGridJobs;
    auto jobs = store->Load(filter);
    if (!jobs.ok()) {
      err << who << ": " << jobs.status().message() << "\n";
      return kExitNoInput;
    }
    std::ofstream page(o.html, std::ios::binary);
    history::RenderHistoryHtml(store->display(), *jobs, report, o.report, page);
    page.close();
    if (!page) {
      err << fmt::format("laggard history: cannot write {}\n", o.html);
      return kExitOutputFailed;
    }
  }
  if (o.json) {
    out << ReportJson(store->display(), report, o.report).dump(2) << "\n";
  } else {
    RenderText(store->display(), report, o, out);
  }
  return kExitOk;
}

}  // namespace laggard
