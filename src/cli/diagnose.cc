#include "cli/diagnose.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "analysis/analyze_run.h"
#include "base/text.h"
#include "confirm/fold.h"
#include "report/report.h"

namespace laggard {
namespace {

// Prints "reading files 12/40, 1.2 MB" on a tty once reading takes longer
// than Terminal::progress_after, over itself with '\r'. Clear() blanks it
// with spaces (no escape sequence, so TERM=dumb is served too); call it
// before anything else is printed. Update() may be called from the ingest
// threads.
class Progress {
 public:
  Progress(std::ostream& err, bool enabled, std::chrono::milliseconds after)
      : err_(err), enabled_(enabled), after_(after), start_(Clock::now()) {}
  ~Progress() { Clear(); }

  void Update(size_t done, size_t total, uint64_t bytes) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto now = Clock::now();
    if (now - start_ < after_ || (shown_ > 0 && now - last_ < std::chrono::milliseconds(200))) {
      return;
    }
    last_ = now;
    std::string line = fmt::format("reading files {}/{}, {:.1f} MB", done, total,
                                   static_cast<double>(bytes) / 1e6);
    // Pad over a longer line shown before.
    size_t width = std::max(line.size(), shown_);
    err_ << "\r" << fmt::format("{:<{}}", line, width) << std::flush;
    shown_ = width;
  }

  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    if (shown_ == 0) return;
    err_ << "\r" << std::string(shown_, ' ') << "\r" << std::flush;
    shown_ = 0;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& err_;
  bool enabled_;
  std::chrono::milliseconds after_;
  Clock::time_point start_, last_;
  size_t shown_ = 0;  // width of the line on screen, 0 for none
  std::mutex mu_;
};

// One report output: the flag that asked for it and where it goes.
struct Output {
  std::string_view flag;
  const std::string& path;
  std::function<void(std::ostream&)> render;
};

// A path as the file system will resolve it, for comparing two paths that
// may be spelt differently ("./a.json", "dir/../a.json").
std::filesystem::path Resolved(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return std::filesystem::path(path).lexically_normal();
  std::filesystem::path canon = std::filesystem::weakly_canonical(abs, ec);
  return ec ? abs.lexically_normal() : canon;
}

// Usage errors of the outputs, found before anything is read: two outputs
// to one path (stdout included), an output that is one of the paths given
// as input. Empty when the outputs are fine.
std::string CheckOutputs(const std::vector<Output>& outputs,
                         const std::vector<std::string>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Output& a = outputs[i];
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      const Output& b = outputs[j];
      bool same =
          a.path == "-" || b.path == "-" ? a.path == b.path : Resolved(a.path) == Resolved(b.path);
      if (same) {
        return fmt::format("{} and {} both write to {}; give each its own path", a.flag, b.flag,
                           a.path == "-" ? "stdout ('-')" : a.path);
      }
    }
    if (a.path == "-") continue;
    for (const std::string& in : inputs) {
      if (Resolved(in) == Resolved(a.path)) {
        return fmt::format("{} {}: that is an input; refusing to overwrite it", a.flag, a.path);
      }
    }
  }
  return "";
}

// The file ingest read at `path` (a file found in an input directory), or
// nullptr. Files no reader took are not inputs: an old report may be
// overwritten.
const InputFileInfo* ReadInputAt(const Run& run, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  for (const InputFileInfo& f : run.files) {
    if (f.format.empty()) continue;
    if (std::filesystem::equivalent(f.path, path, ec)) return &f;
  }
  return nullptr;
}

// Writes `o` to its file. False, with the reason on `err`, when it was not
// written whole.
bool WriteOutput(const Output& o, const Run& run, std::ostream& err) {
  if (const InputFileInfo* in = ReadInputAt(run, o.path)) {
    err << fmt::format("laggard: {} {}: that is an input (read as {}); refusing to overwrite it\n",
                       o.flag, o.path, in->format);
    return false;
  }
  std::ofstream f(o.path, std::ios::binary);
  if (f) o.render(f);
  f.close();
  if (!f) {
    std::error_code ec;
    bool is_dir = std::filesystem::is_directory(o.path, ec);
    err << fmt::format("laggard: {} {}: cannot write{}\n", o.flag, o.path,
                       is_dir ? " (a directory)" : "");
    return false;
  }
  return true;
}

std::string Plural(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// One stderr line on what --mpi did: the shares and what was gathered.
std::string MpiSummaryLine(const MpiIngestReport& r) {
  std::string shares;
  uint64_t files = 0;
  for (int p = 0; p < r.processes; ++p) {
    files += r.share_files[p];
    shares += fmt::format("{}{:.1f}", p == 0 ? "" : " / ", r.share_bytes[p] / 1e6);
  }
  return fmt::format(
      "laggard: --mpi: {} read {} (shares of {} MB); process 0 read its share in {:.2f} s and "
      "gathered {:.2f} MB from the others in {:.2f} s more",
      Plural(r.processes, "process", "processes"), Plural(files, "file", "files"), shares, r.read_s,
      r.bytes_gathered / 1e6, r.gather_s);
}

// "--job N" beyond the jobs found: the message; "" when it is fine.
std::string CheckJobFlag(std::optional<int32_t> job, const JobSplit& split) {
  if (!job || static_cast<size_t>(*job) <= std::max<size_t>(split.jobs.size(), 1)) return "";
  return split.several() ? fmt::format("--job {}: these files hold {} jobs (1 to {})", *job,
                                       split.jobs.size(), split.jobs.size())
                         : fmt::format("--job {}: these files hold one job", *job);
}

// One stderr line when the files hold several jobs: which one is diagnosed.
std::string JobsLine(const JobSplit& split) {
  const JobInfo& j = split.jobs[split.chosen];
  return fmt::format(
      "laggard: these files hold {} jobs; diagnosing job {} ({}{}){}; --job N for another "
      "(the report lists them)",
      split.jobs.size(), split.chosen + 1, split.chosen_by_flag ? "--job, " : "the largest, ",
      j.what,
      split.unplaced > 0
          ? fmt::format("; {} left out as unplaced", Plural(split.unplaced, "file", "files"))
          : "");
}

}  // namespace

bool ColourWanted(std::string_view mode, bool tty, const Terminal& terminal) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  return tty && !terminal.no_color && !terminal.dumb;
}

void AddFailOnFlag(CLI::App* cmd, std::vector<std::string>& fail_on) {
  cmd->add_option("--fail-on", fail_on,
                  "exit 4 when the verdict is one of: straggler, job-wide, communication-bound, "
                  "inconclusive, hang (comma-separated or repeated; for CI, cron, Slurm epilogs)")
      ->delimiter(',')
      ->check(
          CLI::IsMember({"straggler", "job-wide", "communication-bound", "inconclusive", "hang"}));
}

bool FailsOn(const std::vector<std::string>& fail_on, VerdictStatus status) {
  std::string_view name = status == VerdictStatus::kStraggler      ? "straggler"
                          : status == VerdictStatus::kJobWide      ? "job-wide"
                          : status == VerdictStatus::kCommBound    ? "communication-bound"
                          : status == VerdictStatus::kInconclusive ? "inconclusive"
                          : status == VerdictStatus::kHang         ? "hang"
                                                                   : "";
  return !name.empty() && std::find(fail_on.begin(), fail_on.end(), name) != fail_on.end();
}

StatusOr<ParallelLayout> ParseLayoutFlag(std::string_view text) {
  ParallelLayout l;
  bool any = false;
  for (std::string_view part : Split(text, ',')) {
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      return Status::Error(fmt::format("'{}' is not key=value (e.g. dp=2,pp=4,tp=1)", part));
    }
    std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "order") {
      if (value != "tp-dp-pp" && value != "tp-cp-dp-pp" && value != "tp-cp-ep-dp-pp") {
        return Status::Error(fmt::format(
            "order '{}': only Megatron's default (tp-cp-dp-pp, tp fastest) is supported", value));
      }
      continue;
    }
    int32_t* slot = key == "dp"    ? &l.dp
                    : key == "pp"  ? &l.pp
                    : key == "tp"  ? &l.tp
                    : key == "vpp" ? &l.vpp
                                   : nullptr;
    std::optional<int64_t> n = ParseInt<int64_t>(value);
    if (key == "cp") {
      if (n != 1) return Status::Error("cp other than 1 is not supported yet");
      continue;
    }
    if (slot == nullptr)
      return Status::Error(fmt::format("unknown size '{}' (dp, pp, tp, vpp)", key));
    if (!n || *n < 1 || *n > kMaxRank) {
      return Status::Error(fmt::format("{}={}: a size from 1 to {}", key, value, kMaxRank));
    }
    *slot = static_cast<int32_t>(*n);
    any = true;
  }
  if (!any) return Status::Error("no size given (e.g. dp=2,pp=4,tp=1)");
  if (l.world() > kMaxRank) return Status::Error(fmt::format("{} ranks is too many", l.world()));
  return l;
}

void AddDiagnoseFlags(CLI::App* cmd, DiagnoseOptions& o) {
  cmd->add_option("paths", o.paths, "files or directories (walked recursively)")->required();
  cmd->add_option("--json", o.json_out, "write the JSON report to FILE ('-' for stdout)");
  cmd->add_option("--html", o.html_out,
                  "write a self-contained HTML report with charts to FILE ('-' for stdout)");
  cmd->add_option("--trace", o.trace_out,
                  "write a merged Chrome/Perfetto trace (steps, collectives, GPU metrics, findings "
                  "of every rank on one timeline) to FILE ('-' for stdout)");
  cmd->add_flag("--strict", o.strict, "exit 1 when any bad record was found");
  AddFailOnFlag(cmd, o.fail_on);
  cmd->add_flag("-q,--quiet", o.quiet, "print only the verdict line");
  cmd->add_option("--color", o.color,
                  "colour output: auto (a terminal, unless NO_COLOR or TERM=dumb), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  AddIngestFlags(cmd, o.input);
  cmd->add_flag("--mpi", o.mpi,
                "spread the reading over the processes of an MPI job (mpirun -n P laggard "
                "diagnose --mpi ..., or srun): each reads a share of the files, process 0 "
                "merges them and writes the reports, the same as one process would");
  cmd->add_option("--mpi-timeout", o.mpi_timeout_s,
                  "with --mpi: seconds a process waits for another before it aborts the job")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  CLI::Option* gpus_per_node =
      cmd->add_option("--gpus-per-node", o.gpus_per_node,
                      "place ranks as node_index x G + local_rank to join GPU metrics with ranks "
                      "that name no host/GPU; node_index from the host name's number (node-07), "
                      "counted from --first-node or from what the inputs show")
          ->check(CLI::Range(1, 1024));
  cmd->add_option("--first-node", o.first_node,
                  "with --gpus-per-node: the number in the host name of the job's first node "
                  "(rank 0's), e.g. 0 for node-00, 1 for node-01")
      ->check(CLI::Range(0, 999'999'999))
      ->needs(gpus_per_node);
  cmd->add_option("--layout", o.layout,
                  "parallel layout of the run (and of op timelines that do not state it): "
                  "dp=D,pp=P,tp=T[,vpp=V] (ranks in Megatron order: tp fastest, then dp, then "
                  "pp); without it, a Megatron launch log's layout line or Kineto process groups "
                  "named TENSOR/PIPELINE/DATA_PARALLEL_GROUP or mesh_<dim> give it");
  cmd->add_option("--job", o.input.ingest.job,
                  "when the files hold several jobs (listed first in the report), diagnose the "
                  "N-th; default: the largest (the most ranks, then files, then bytes)")
      ->check(CLI::Range(1, 1'000'000));
  AddRecordFlags(cmd, o.record);
  cmd->add_option("--warmup", o.detector.warmup_steps,
                  "steps at the start of each rank to ignore (0 to 1000000)")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--threshold", o.detector.flag_threshold,
                  "flag a rank this much slower than its peers (0.05 = 5%)")
      ->check(CLI::Range(0.001, 10.0))
      ->capture_default_str();
}

namespace {

// The run's paths, and the confirmations (laggard confirm --out) among the
// paths given: folded into the verdict, not read as the job's data.
struct SplitPaths {
  std::vector<std::string> paths;
  std::vector<std::string> inputs;  // every path given, and the confirmation.json files
  std::vector<confirm::ConfirmationEntry> confirmed;
  size_t folders = 0;
};

StatusOr<SplitPaths> SplitConfirmations(const std::vector<std::string>& given) {
  SplitPaths out;
  out.inputs = given;
  std::set<std::string> seen;  // a confirmation given twice folds once
  for (const std::string& p : given) {
    if (!confirm::IsConfirmation(p)) {
      out.paths.push_back(p);
      continue;
    }
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(p, ec);
    if (!seen.insert(ec ? p : canonical.string()).second) continue;
    std::error_code dir_ec;
    out.inputs.push_back(std::filesystem::is_directory(p, dir_ec) ? p + "/confirmation.json" : p);
    auto entries = confirm::ReadConfirmation(p);
    if (!entries.ok()) return entries.status();
    out.confirmed.insert(out.confirmed.end(), entries->begin(), entries->end());
    ++out.folders;
  }
  if (out.paths.empty()) {
    return Status::Error(
        "only confirmations given; give the run's folder too (diagnose RUN_DIR CONFIRM_DIR)");
  }
  return out;
}

// Folds the confirmations of this run's job (`span`); another job's are
// said and left out. Returns every confirmation as the report lists it.
std::vector<ConfirmationLine> FoldInto(const SplitPaths& split, const WallSpan& span,
                                       Verdict& verdict, bool quiet, std::ostream& err) {
  std::vector<ConfirmationLine> lines;
  if (split.folders == 0) return lines;
  std::vector<confirm::ConfirmationEntry> ours;
  for (const confirm::ConfirmationEntry& e : split.confirmed) {
    std::string why = confirm::OfAnotherJob(e, span);
    lines.push_back({e.name, e.verdict, e.locus, e.figures, e.confirmed_host.value_or(""), why});
    if (why.empty()) {
      ours.push_back(e);
    } else if (!quiet) {
      err << fmt::format("laggard: the confirmation of {} is not folded: {}\n", e.name, why);
    }
  }
  size_t folded = confirm::FoldConfirmation(ours, verdict);
  if (quiet) return lines;
  err << fmt::format("laggard: {} of {} confirmation{} matched the verdict's culprits\n", folded,
                     split.confirmed.size(), split.confirmed.size() == 1 ? "" : "s");
  return lines;
}

}  // namespace

int Diagnose(const DiagnoseOptions& o, std::ostream& out, std::ostream& err,
             const Terminal& terminal) {
  // Filled once the run is analysed; the outputs render from it.
  std::optional<ReportInput> in;
  std::vector<Output> outputs;
  if (!o.json_out.empty()) {
    outputs.push_back({"--json", o.json_out, [&](std::ostream& s) { s << RenderJson(*in); }});
  }
  if (!o.html_out.empty()) {
    outputs.push_back({"--html", o.html_out, [&](std::ostream& s) { s << RenderHtml(*in); }});
  }
  if (!o.trace_out.empty()) {
    outputs.push_back({"--trace", o.trace_out, [&](std::ostream& s) { WriteMergedTrace(*in, s); }});
  }
  auto split = SplitConfirmations(o.paths);
  if (!split.ok()) {
    err << "laggard diagnose: " << split.status().message() << "\n";
    return kExitNoInput;
  }
  const std::vector<std::string>& paths = split->paths;
  // Outputs checked against every path given, confirmations' files included.
  if (std::string bad = CheckOutputs(outputs, split->inputs); !bad.empty()) {
    err << "laggard diagnose: " << bad << "\n";
    return kExitNoInput;
  }

  // Under mpirun a process's stdout and stderr are ptys that mpirun copies
  // to wherever its own go (a file, a pipe): they say nothing of a terminal,
  // so --mpi writes no colour and no progress unless asked (--color always).
  const bool stdout_tty = terminal.stdout_is_tty && !o.mpi;
  Progress progress(err, terminal.stderr_is_tty && !o.mpi, terminal.progress_after);
  auto update = [&](size_t d, size_t t, uint64_t b) { progress.Update(d, t, b); };
  StatusOr<Run> run = Status::Error("");
  IngestFlags input = o.input;
  input.ingest.split_jobs = true;
  if (o.mpi) {
    MpiIngestReport report;
    auto gathered = IngestWithFlagsOverMpi(paths, input, o.mpi_timeout_s, update, &report);
    progress.Clear();
    if (!gathered.ok()) {
      err << "laggard: " << gathered.status().message() << "\n";
      return kExitNoInput;
    }
    if (!gathered->has_value()) return kExitOk;  // not process 0: it reports
    if (!o.quiet) err << MpiSummaryLine(report) << "\n";
    run = std::move(**gathered);
  } else {
    run = IngestWithFlags(paths, input, update);
    progress.Clear();
  }
  if (!run.ok()) {
    err << "laggard: " << run.status().message() << "\n";
    return kExitNoInput;
  }
  if (std::string bad = CheckJobFlag(o.input.ingest.job, run->jobs); !bad.empty()) {
    err << "laggard diagnose: " << bad << "\n";
    return kExitNoInput;
  }
  if (run->jobs.several() && !o.quiet) err << JobsLine(run->jobs) << "\n";
  AnalysisOptions analysis;
  if (!o.layout.empty()) {
    auto layout = ParseLayoutFlag(o.layout);
    if (!layout.ok()) {
      err << "laggard diagnose: --layout: " << layout.status().message() << "\n";
      return kExitNoInput;
    }
    analysis.layout = layout.value();
  }
  analysis.steps = o.detector;
  analysis.gpus_per_node = o.gpus_per_node;
  analysis.first_node = o.first_node;
  Analyses a = AnalyzeRun(*run, analysis);
  Verdict verdict = DecideVerdict(*run, a);
  std::vector<ConfirmationLine> lines = FoldInto(*split, JobWallSpan(*run), verdict, o.quiet, err);
  in.emplace(ReportInput{*run, a, verdict, std::move(lines)});

  bool to_stdout = false;
  bool outputs_ok = true;
  for (const Output& output : outputs) {
    if (output.path == "-") {
      output.render(out);
      to_stdout = true;
    } else {
      outputs_ok &= WriteOutput(output, *run, err);
    }
  }
  if (!to_stdout) {
    TextOptions text;
    text.quiet = o.quiet;
    text.color = ColourWanted(o.color, stdout_tty, terminal);
    RenderText(*in, text, out);
  }
  if (run->NothingUsable()) {
    err << fmt::format(
        "laggard: no usable step times, traces, op timelines, GPU metrics, network data, hang "
        "evidence or StragglerDetector reports in {} ({} skipped); see data quality above\n",
        Plural(run->files.size(), "file", "files"),
        std::count_if(run->files.begin(), run->files.end(),
                      [](const InputFileInfo& f) { return f.format.empty(); }));
    return kExitNoInput;
  }
  if (o.record.record) {
    std::vector<const Finding*> findings = in->analyses.AllFindings();
    outputs_ok &= RecordVerdict(o.record, paths.front(), *run, a.ranks, verdict, findings,
                                "laggard diagnose --record", err);
  }
  if (!outputs_ok) return kExitOutputFailed;
  if (o.strict && run->diagnostics.TotalOfKind(DiagKind::kBadRecord) > 0) {
    err << fmt::format(
        "laggard: --strict: {}\n",
        Plural(run->diagnostics.TotalOfKind(DiagKind::kBadRecord), "bad record", "bad records"));
    return kExitStrictFailure;
  }
  if (FailsOn(o.fail_on, verdict.status)) {
    err << fmt::format("laggard: --fail-on: the verdict is {}\n",
                       VerdictStatusName(verdict.status));
    return kExitFailOn;
  }
  return kExitOk;
}

}  // namespace laggard
