#include "cli/confirm.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/fake_gpu.h"
#include "agent/nvml.h"
#include "base/process.h"
#include "cli/app.h"
#include "confirm/bisect.h"
#include "confirm/gpu_gemm.h"
#include "confirm/read_back.h"
#include "model/time.h"

namespace laggard {
namespace {

using confirm::Confirmation;
using confirm::ConfirmInput;
using confirm::ConfirmPlan;
using confirm::GemmResult;
using confirm::Launcher;
using confirm::PlannedTest;
using confirm::TestRun;
using Json = nlohmann::ordered_json;

std::string SelfPath() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("laggard") : p.string();
}

// "0:0,1:1" -> {0: 0, 1: 1}.
StatusOr<std::map<int32_t, int>> ParseRankCores(const std::string& text) {
  std::map<int32_t, int> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t colon = item.find(':');
    int rank = -1, core = -1;
    bool ok = colon != std::string::npos;
    if (ok) {
      auto [p1, e1] = std::from_chars(item.data(), item.data() + colon, rank);
      auto [p2, e2] = std::from_chars(item.data() + colon + 1, item.data() + item.size(), core);
      ok = e1 == std::errc() && e2 == std::errc() && p1 == item.data() + colon &&
           p2 == item.data() + item.size() && rank >= 0 && core >= 0;
    }
    if (!ok) {
      return Status::Error(
          fmt::format("--rank-cores '{}': give RANK:CORE pairs, e.g. 0:0,1:1", text));
    }
    if (!out.emplace(rank, core).second) {
      return Status::Error(fmt::format("--rank-cores '{}': rank {} is given twice", text, rank));
    }
  }
  return out;
}

Json ConfirmationJson(const ConfirmInput& in, const std::vector<Confirmation>& confirmations) {
  Json out = Json::array();
  for (const Confirmation& c : confirmations) {
    Json pairs = Json::array();
    for (const confirm::PairFigure& p : c.pairs) {
      pairs.push_back({{"a", p.a},
                       {"b", p.b},
                       {"busbw_gbps", p.gbps},
                       {"test", p.test + 1},
                       {"role", confirm::PairRoleName(p.role)},
                       {"control", p.role == confirm::PairRole::kControl}});
    }
    out.push_back({{"culprit", c.culprit},
                   {"name", confirm::CulpritName(in.culprits[c.culprit])},
                   {"verdict", c.verdict},
                   {"locus", c.locus.empty() ? Json(nullptr) : Json(c.locus)},
                   {"figures", c.figures},
                   {"host", c.host.empty() ? Json(nullptr) : Json(c.host)},
                   {"size_bytes", c.size_bytes > 0 ? Json(c.size_bytes) : Json(nullptr)},
                   {"pairs", std::move(pairs)}});
  }
  return out;
}

// `confirmations`: the read-back of `runs` (empty when nothing ran).
// `ran_now`: the tests ran in this call (then confirmed_at is now; outputs
// read back with --results say nothing of when they ran).
Json PlanJson(const ConfirmInput& in, const ConfirmPlan& plan, const std::vector<TestRun>& runs,
              Launcher launcher, const std::vector<Confirmation>& confirmations, bool ran_now) {
  Json j;
  j["schema"] = "laggard.confirm/1";
  j["verdict"] = {{"status", in.status}, {"summary", in.summary}};
  auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  j["job"] = {{"first_time", opt(in.first_time)}, {"last_time", opt(in.last_time)}};
  if (!confirmations.empty() && ran_now) {
    j["confirmed_at"] = FormatTimestamp(agent::SystemClock().Now());
  }
  Json culprits = Json::array();
  for (const confirm::ReportCulprit& c : in.culprits) {
    culprits.push_back({{"name", confirm::CulpritName(c)},
                        {"host", opt(c.host)},
                        {"rank", opt(c.rank)},
                        {"gpu", opt(c.gpu)},
                        {"nic", opt(c.nic)},
                        {"switch", opt(c.switch_name)},
                        {"cause_class", c.cause_class},
                        {"confidence", c.confidence}});
  }
  j["culprits"] = std::move(culprits);
  Json tests = Json::array();
  for (size_t i = 0; i < plan.tests.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    std::vector<std::string> argv = confirm::LaunchArgv(t, launcher);
    Json x = {
        {"id", i + 1},
        {"culprit", t.culprit},
        {"kind", confirm::TestKindName(t.kind)},
        {"control", t.control},
        {"role", t.kind == confirm::TestKind::kCommunication ? Json(confirm::PairRoleName(t.role))
                                                             : Json(nullptr)},
        {"hosts", t.hosts},
        {"gpu", t.gpu ? Json(*t.gpu) : Json(nullptr)},
        {"argv", argv},
        {"command", ShellText(argv)},
        {"time_limit_s", t.time_limit_s},
        {"why", t.why}};
    if (i < runs.size() && !runs[i].state.empty()) {
      const TestRun& r = runs[i];
      std::string first = r.output.substr(0, r.output.find('\n'));
      x["run"] = {{"state", r.state},
                  {"reason", r.state == "ran" || first.empty() ? Json(nullptr) : Json(first)},
                  {"output_file", r.file.empty() ? Json(nullptr) : Json(r.file)},
                  {"verdict", r.verdict.empty() ? Json(nullptr) : Json(r.verdict)},
                  {"figures", r.figures.empty() ? Json(nullptr) : Json(r.figures)},
                  {"busbw_gbps", r.LargestBusbw() ? Json(*r.LargestBusbw()) : Json(nullptr)},
                  {"note", r.note.empty() ? Json(nullptr) : Json(r.note)}};
    }
    tests.push_back(std::move(x));
  }
  j["tests"] = std::move(tests);
  j["confirmation"] = ConfirmationJson(in, confirmations);
  j["notes"] = plan.notes;
  return j;
}

void PrintPlan(const ConfirmInput& in, const ConfirmPlan& plan, const std::vector<TestRun>& runs,
               Launcher launcher, bool ran, const std::vector<Confirmation>& confirmations,
               std::ostream& out) {
  std::string how =
      ran && launcher == Launcher::kPrint ? std::string(", read back from files")
      : ran ? fmt::format(", run with {}", confirm::LauncherName(launcher))
      : launcher == Launcher::kPrint
          ? ", printed only (--launcher local|mpirun|srun|ssh runs them)"
          : fmt::format(", as {} would run them (dry run)", confirm::LauncherName(launcher));
  out << fmt::format(
      "{} to confirm ({}): {} test{}{}\n",
      in.culprits.size() == 1 ? "1 culprit" : fmt::format("{} culprits", in.culprits.size()),
      in.summary, plan.tests.size(), plan.tests.size() == 1 ? "" : "s", how);
  for (size_t i = 0; i < plan.tests.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    std::string where = t.hosts.empty() ? "here" : fmt::format("on {}", fmt::join(t.hosts, " + "));
    out << fmt::format("  [{}] {} {}{}, {}: {}\n", i + 1, confirm::TestKindName(t.kind),
                       confirm::CulpritName(in.culprits[t.culprit]), t.control ? " (control)" : "",
                       where, t.why);
    out << fmt::format("      {}\n", ShellText(confirm::LaunchArgv(t, launcher)));
    const TestRun& r = runs[i];
    if (r.state.empty()) continue;
    out << fmt::format("      -> {}{}\n", r.state, r.file.empty() ? "" : " (" + r.file + ")");
    if (!r.verdict.empty()) out << fmt::format("      {}: {}\n", r.verdict, r.figures);
    if (auto bw = r.LargestBusbw()) out << fmt::format("      bus bandwidth {:.2f} GB/s\n", *bw);
    if (!r.note.empty()) out << fmt::format("      {}\n", r.note);
    if (!r.ran || r.state != "ran") {
      std::string first = r.output.substr(0, r.output.find('\n'));
      if (!first.empty()) out << fmt::format("      {}\n", first);
    } else if (!r.LargestBusbw() && r.verdict.empty() && !r.figures.empty()) {
      out << fmt::format("      {}\n", r.figures);
    }
  }
  for (const std::string& n : plan.notes) out << "note: " << n << "\n";
  if (!ran) return;
  for (const Confirmation& c : confirmations) {
    out << fmt::format("{}: {}{} — {}\n", confirm::CulpritName(in.culprits[c.culprit]), c.verdict,
                       c.locus.empty() ? "" : fmt::format(" ({})", c.locus), c.figures);
  }
}

}  // namespace

void AddConfirmFlags(CLI::App* cmd, ConfirmOptions& o) {
  cmd->add_option("report", o.report, "the JSON report of `laggard diagnose --json`");
  cmd->add_option("--suspect", o.suspect,
                  "instead of a report: HOST (its network), HOST:GPU (that GPU), or all (the "
                  "hosts' network, bisected) to confirm");
  cmd->add_option("--hosts", o.hosts,
                  "with --suspect: the hosts to pair it with, one per line, optionally with its "
                  "switch (HOST SWITCH; simulate's switch-map.csv reads as it is)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--launcher", o.launcher,
                  "print: show the tests (default); local: run this machine's; mpirun, srun, ssh: "
                  "run each on its hosts")
      ->check(CLI::IsMember({"print", "local", "mpirun", "srun", "ssh"}))
      ->capture_default_str();
  cmd->add_flag("--dry-run", o.dry_run, "show the launcher's command lines; run nothing");
  cmd->add_option("--results", o.results,
                  "read the tests' outputs from this folder (run earlier, by hand or by "
                  "nccl-tests-cluster) instead of running them")
      ->check(CLI::ExistingPath);
  cmd->add_option("--out", o.out_dir,
                  "where each test's output and confirmation.json are written when tests run "
                  "(laggard diagnose RUN_DIR OUT folds it into the verdict)")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.out_given = true; });
  cmd->add_option("--rank-cores", o.rank_cores,
                  "CPU jobs: the core each rank ran on, RANK:CORE,... (e.g. 0:0,1:1)");
  cmd->add_option("--dcgm-level", o.plan.dcgm_level,
                  "dcgmi diag -r LEVEL (1 quick, 2 medium, 3-4 long: up to an hour or two)")
      ->check(CLI::Range(1, 4))
      ->capture_default_str();
  cmd->add_option("--gpus-per-node", o.plan.gpus_per_node,
                  "processes per host for nccl-tests (default: the report's ranks on the host)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--nccl-tests", o.plan.nccl_tests_dir,
                  "folder of the nccl-tests binaries (default: on PATH)");
  cmd->add_option(
      "--laggard", o.plan.laggard,
      "the laggard binary the GEMM tests run (default: this one with --launcher local)");
  cmd->add_flag("--json", o.json, "print the plan (and results) as JSON");
}

void AddGemmFlags(CLI::App* cmd, GemmFlags& f) {
  cmd->add_option("--cores", f.cores, "cores to time, e.g. 0-3,6 (default: every allowed core)");
  cmd->add_option("--gpus", f.gpus,
                  "time GPUs instead (cuBLAS): 'all' or nvidia-smi indices, e.g. 0,3");
  cmd->add_option("--n", f.n, "matrix size n, n x n (default 512 on CPUs, 8192 on GPUs)")
      ->check(CLI::Range(16, 32768));
  cmd->add_option("--seconds", f.seconds, "time per core (default 1), or for all GPUs (3)")
      ->check(CLI::Range(0.01, 600.0));
  cmd->add_option("--dtype", f.dtype, "GPUs: bf16, fp16 or fp32 (fp32 without TF32)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}))
      ->capture_default_str();
  cmd->add_option(
      "--cudart-lib", f.cudart_lib,
      "GPUs: the CUDA runtime to load (default libcudart.so.13, .12, .11.0, then libcudart.so)");
  cmd->add_option("--cublas-lib", f.cublas_lib,
                  "GPUs: cuBLAS to load (default libcublas.so.13, .12, .11, then libcublas.so)");
  cmd->add_option("--nvml-lib", f.nvml_lib, "GPUs: NVML, for clocks and temperature meanwhile")
      ->capture_default_str();
  cmd->add_option("--fake-gpus", f.fake_gpus, "GPUs: NVML scripted by SCRIPT.json (tests)");
}

namespace {

int GpuGemm(const GemmFlags& f, std::ostream& out, std::ostream& err) {
  if (!f.cores.empty()) {
    err << "laggard gemm: give --cores or --gpus, not both\n";
    return kExitNoInput;
  }
  std::optional<std::vector<int>> gpus;
  if (f.gpus != "all") {
    auto parsed = confirm::ParseCoreList(f.gpus);
    if (!parsed.ok()) {
      err << "laggard gemm: --gpus '" << f.gpus << "': give all or indices such as 0,3\n";
      return kExitNoInput;
    }
    gpus = *parsed;
  }
  auto cuda = confirm::Cuda::Load(f.cudart_lib, f.cublas_lib);
  if (!cuda.ok()) {
    err << "laggard gemm: " << cuda.status().message() << "\n";
    return kExitNoInput;
  }
  agent::SystemClock clock;
  auto opened = agent::OpenGpuBackend(f.fake_gpus, f.nvml_lib, clock);
  if (!opened.ok()) {
    err << "laggard gemm: " << opened.status().message() << "\n";
    return kExitNoInput;
  }
  std::unique_ptr<agent::GpuBackend> nvml = std::move(opened->backend);
  if (!nvml)
    err << "laggard gemm: no clocks or temperature (" << opened->note
        << "); GPUs numbered in PCI order\n";
  confirm::GpuGemmOptions o;
  o.dtype = f.dtype;
  if (f.n) o.n = *f.n;
  if (f.seconds) o.seconds = *f.seconds;
  auto run = confirm::RunGpuGemm(**cuda, nvml.get(), gpus, o);
  if (!run.ok()) {
    err << "laggard gemm: " << run.status().message() << "\n";
    return kExitNoInput;
  }
  for (const GemmResult& r : run->results) out << confirm::GemmLine(r) << "\n";
  for (const confirm::GpuGemmFailure& failure : run->failures) {
    err << "laggard gemm: " << failure.device << ": " << failure.what << "\n";
  }
  int rc = run->results.empty()    ? kExitNoInput
           : run->failures.empty() ? kExitOk
                                   : kExitStrictFailure;  // some GPUs not timed
  if (run->stuck) {
    // A thread is inside the driver for good: unloading CUDA under it, or
    // waiting for it, would hang or crash the process.
    out.flush();
    err.flush();
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  return rc;
}

}  // namespace

int Gemm(const GemmFlags& f, std::ostream& out, std::ostream& err) {
  if (!f.gpus.empty()) return GpuGemm(f, out, err);
  auto blas = confirm::Blas::Load();
  if (!blas.ok()) {
    err << "laggard gemm: " << blas.status().message() << "\n";
    return kExitNoInput;
  }
  std::vector<int> cores = confirm::AllowedCores();
  if (!f.cores.empty()) {
    auto parsed = confirm::ParseCoreList(f.cores);
    if (!parsed.ok()) {
      err << "laggard gemm: --cores " << parsed.status().message() << "\n";
      return kExitNoInput;
    }
    cores = *parsed;
  }
  confirm::GemmOptions options;
  if (f.n) {
    if (*f.n > 8192) {
      err << "laggard gemm: --n " << *f.n << ": at most 8192 on CPUs\n";
      return kExitNoInput;
    }
    options.n = *f.n;
  }
  if (f.seconds) options.seconds = *f.seconds;
  auto results = confirm::RunCpuGemm(**blas, cores, options);
  if (!results.ok()) {
    err << "laggard gemm: " << results.status().message() << "\n";
    return kExitNoInput;
  }
  for (const GemmResult& r : *results) out << confirm::GemmLine(r) << "\n";
  return kExitOk;
}

namespace {

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

// The report, or the suspect named by hand with its hosts.
StatusOr<ConfirmInput> ConfirmInputOf(const ConfirmOptions& o) {
  if (o.report.empty() == o.suspect.empty()) {
    return Status::Error(
        "give a report (laggard diagnose --json) or --suspect HOST[:GPU], not both");
  }
  if (!o.suspect.empty()) {
    std::string hosts;
    if (!o.hosts.empty()) {
      auto text = ReadText(o.hosts);
      if (!text) return Status::Error(fmt::format("cannot read {}", o.hosts));
      hosts = std::move(*text);
    }
    return confirm::SuspectInput(o.suspect, hosts, o.hosts,
                                 o.plan.gpus_per_node > 0 ? o.plan.gpus_per_node : 8);
  }
  auto text = ReadText(o.report);
  if (!text) return Status::Error(fmt::format("cannot read {}", o.report));
  return confirm::ReadReport(*text, o.report);
}

// A bisection grows a round at a time: each round's tests run (or are read
// back from --results) once the last round's results decide its halves.
void ExtendBisections(const ConfirmInput& in, const confirm::PlanOptions& options,
                      Launcher launcher, const ConfirmOptions& o, ConfirmPlan& plan,
                      std::vector<TestRun>& runs, std::ostream& err) {
  std::string here = LocalHostName();
  for (size_t ci = 0; ci < in.culprits.size(); ++ci) {
    if (!confirm::Bisects(in.culprits[ci])) continue;
    for (int round = 0; round < 64; ++round) {
      confirm::BisectState st = confirm::BisectNext(in, plan, runs, ci, options);
      if (st.next.empty()) break;
      size_t first = plan.tests.size();
      for (PlannedTest& t : st.next) plan.tests.push_back(std::move(t));
      runs.resize(plan.tests.size());
      bool any = false;
      if (!o.results.empty()) {
        auto read = confirm::ReadResults(plan, o.results);
        if (!read.ok()) break;
        for (size_t i = first; i < plan.tests.size(); ++i) {
          runs[i] = (*read)[i];
          any |= runs[i].ran;
        }
      } else {
        for (size_t i = first; i < plan.tests.size(); ++i) {
          if (!o.json) err << fmt::format("running bisection test {}\n", i + 1);
          runs[i] = confirm::RunTest(plan.tests[i], i, launcher, here, o.out_dir);
          any |= runs[i].ran;
        }
      }
      if (!any) break;  // the next round is what to run
    }
  }
}

}  // namespace

int Confirm(const ConfirmOptions& o, std::ostream& out, std::ostream& err) {
  auto in = ConfirmInputOf(o);
  if (!in.ok()) {
    err << "laggard confirm: " << in.status().message() << "\n";
    return kExitNoInput;
  }
  confirm::PlanOptions plan_options = o.plan;
  if (!o.rank_cores.empty()) {
    auto cores = ParseRankCores(o.rank_cores);
    if (!cores.ok()) {
      err << "laggard confirm: " << cores.status().message() << "\n";
      return kExitNoInput;
    }
    plan_options.rank_cores = *cores;
  }
  Launcher launcher = confirm::ParseLauncher(o.launcher).value_or(Launcher::kPrint);
  bool runs_tests = launcher != Launcher::kPrint && !o.dry_run;
  if (launcher == Launcher::kLocal && plan_options.laggard == "laggard") {
    plan_options.laggard = SelfPath();
  }
  if (in->culprits.empty()) {
    std::string why =
        fmt::format("nothing to confirm: the verdict names no culprit ({})", in->status);
    if (o.json) {
      out << PlanJson(*in, ConfirmPlan{{}, {why}}, {}, launcher, {}, false).dump(2) << "\n";
    } else {
      out << why << "\n";
    }
    return kExitOk;
  }
  ConfirmPlan plan = confirm::PlanConfirm(*in, plan_options);
  std::vector<TestRun> runs(plan.tests.size());
  if (!o.results.empty()) {
    if (launcher != Launcher::kPrint) {
      err << "laggard confirm: --results reads outputs already there; it takes no --launcher\n";
      return kExitNoInput;
    }
    auto read = confirm::ReadResults(plan, o.results);
    if (!read.ok()) {
      err << "laggard confirm: " << read.status().message() << "\n";
      return kExitNoInput;
    }
    runs = std::move(*read);
    runs_tests = true;
  } else if (runs_tests) {
    std::string here = LocalHostName();
    for (size_t i = 0; i < plan.tests.size(); ++i) {
      if (!o.json) err << fmt::format("running test {} of {}\n", i + 1, plan.tests.size());
      runs[i] = confirm::RunTest(plan.tests[i], i, launcher, here, o.out_dir);
    }
  }
  if (runs_tests) ExtendBisections(*in, plan_options, launcher, o, plan, runs, err);
  // What `laggard diagnose RUN_DIR OUT_DIR` folds into the verdict.
  // Read back once, for the saved document, --json and the text alike.
  bool ran = std::any_of(runs.begin(), runs.end(), [](const TestRun& r) { return r.ran; });
  std::vector<Confirmation> confirmations;
  if (ran) confirmations = confirm::ReadBack(*in, plan, runs);
  bool save = runs_tests && (o.results.empty() || o.out_given);
  if (save || o.json) {
    std::string doc =
        PlanJson(*in, plan, runs, launcher, confirmations, o.results.empty()).dump(2) + "\n";
    if (save) {
      std::error_code ec;
      std::filesystem::create_directories(o.out_dir, ec);
      std::ofstream saved(o.out_dir + "/confirmation.json");
      saved << doc;
      if (!saved) {
        err << fmt::format("laggard confirm: cannot write {}/confirmation.json\n", o.out_dir);
      }
    }
    if (o.json) {
      out << doc;
      return kExitOk;
    }
  }
  PrintPlan(*in, plan, runs, launcher, runs_tests, confirmations, out);
  return kExitOk;
}

}  // namespace laggard
