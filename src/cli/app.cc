#include "cli/app.h"

#include <signal.h>
#include <unistd.h>
#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "agent/agent.h"
#include "agent/fake_gpu.h"
#include "base/process.h"
#include "cli/confirm.h"
#include "cli/diagnose.h"
#include "cli/formats.h"
#include "cli/history.h"
#include "cli/inspect.h"
#include "cli/watch.h"
#include "report/report.h"
#include "simulator/pipeline/pipeline_sim.h"
#include "simulator/run_writer.h"
#include "simulator/writers/kineto_traces.h"
#include "simulator/writers/step_logs.h"

namespace laggard {
namespace {

int Demo(const std::string& dir, std::ostream& out, std::ostream& err, const Terminal& terminal) {
  // 8 nodes x 8 GPUs (docs/simulator.md): GPU 5 of node-01 overheats and
  // throttles from step 60, and node-05's first InfiniBand port trained at
  // half its rate. Every input format is written: end-to-end step logs (equal
  // on all ranks, as synchronous training prints them), torch.profiler
  // traces, nvidia-smi, ibstat / ethtool, nccl-tests, NCCL_DEBUG, topology.
  sim::ClusterScenario sc;
  sc.nodes = 8;
  sc.gpus_per_node = 8;
  sc.steps = 200;
  sc.seed = 7;
  for (const char* spec : {"thermal@node-01:5:0.2,onset=60", "nic_degraded@node-05:mlx5_0"}) {
    auto fault = sim::ParseFaultSpec(spec);
    if (!fault.ok()) {
      err << "laggard demo: " << fault.status().message() << "\n";
      return kExitNoInput;
    }
    sc.faults.push_back(*fault);
  }
  Status st = sim::ResolveScenario(&sc);
  if (!st.ok()) {
    err << "laggard demo: " << st.message() << "\n";
    return kExitNoInput;
  }
  std::string run_dir = dir + "/run";
  std::error_code ec;
  std::filesystem::remove_all(run_dir, ec);
  sim::RunOutputOptions outputs;
  outputs.trace_steps = 3;
  outputs.gzip_traces = true;
  auto summary = sim::WriteClusterRun(sc, outputs, run_dir);
  if (!summary.ok()) {
    err << "laggard demo: " << summary.status().message() << "\n";
    return kExitNoInput;
  }
  out << fmt::format("laggard demo: {}\n  {} files ({:.1f} MB) in {}, truth in {}/truth.json\n\n",
                     summary->headline, summary->files, summary->bytes / 1e6, run_dir, run_dir);
  DiagnoseOptions o;
  o.paths = {run_dir};
  o.json_out = dir + "/report.json";
  o.html_out = dir + "/report.html";
  o.trace_out = dir + "/trace.json";
  int rc = Diagnose(o, out, err, terminal);
  out << fmt::format(
      "\nJSON report:  {}\nHTML report:  {} (open in a browser, works offline)\nmerged trace: {} "
      "(open in ui.perfetto.dev or chrome://tracing)\n",
      o.json_out, o.html_out, o.trace_out);
  return rc;
}

struct AgentFlags {
  std::string listen = "127.0.0.1:9400";
  std::string interval = "1s";
  std::string udp = "127.0.0.1:9401";
  std::optional<std::string> unix_path;
  std::vector<std::string> tail;
  std::optional<std::string> log_dir;
  uint64_t log_max_mb = 64;
  int log_files = 5;
  std::string sysfs_root = "/";
  std::optional<std::string> fake_gpus;
  std::string nvml_lib = agent::kNvmlLibrary;
  std::optional<std::string> host;
  std::optional<std::string> job;
  std::string rank_ttl = "10m";
  int http_threads = 8;
  std::string cpu_probe = "200us";
  std::string proc_scan = "5s";
};

void AddAgentFlags(CLI::App* cmd, AgentFlags& f) {
  cmd->add_option("--listen", f.listen, "HOST:PORT for /metrics and /healthz (port 0: any)")
      ->capture_default_str();
  cmd->add_option("--interval", f.interval, "sampling interval, 100ms (10 Hz) to 1h")
      ->capture_default_str();
  cmd->add_option("--udp", f.udp, "HOST:PORT for step datagrams, or 'off'")->capture_default_str();
  cmd->add_option("--unix", f.unix_path, "path of a Unix datagram socket for step reports");
  cmd->add_option("--tail", f.tail, "log file to follow for step lines (repeatable)");
  cmd->add_option(
      "--log-dir", f.log_dir,
      "write rolling JSONL logs (steps.jsonl, hardware.jsonl) here for `laggard diagnose`");
  cmd->add_option("--log-max-mb", f.log_max_mb, "size of one log file before rotation, MB")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--log-files", f.log_files, "files kept per log, the current one included")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--sysfs-root", f.sysfs_root,
                  "directory holding sys/ (e.g. /host in a container), or 'off'")
      ->capture_default_str();
  cmd->add_option("--fake-gpus", f.fake_gpus, "scripted GPUs from SCRIPT.json instead of NVML");
  cmd->add_option("--nvml-lib", f.nvml_lib, "NVML library to load")->capture_default_str();
  cmd->add_option("--host", f.host, "host label (default: the host name)");
  cmd->add_option("--job", f.job, "job label on every series");
  cmd->add_option("--rank-ttl", f.rank_ttl, "forget a rank silent this long")
      ->capture_default_str();
  cmd->add_option("--cpu-probe", f.cpu_probe,
                  "time per round of the per-core CPU speed probe, 0 to 100ms (0: none)")
      ->capture_default_str();
  cmd->add_option("--proc-scan", f.proc_scan,
                  "how often to log the host's busy processes (hardware.jsonl host_proc), 1s to "
                  "1h (0: never)")
      ->capture_default_str();
  cmd->add_option("--http-threads", f.http_threads, "HTTP worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
}

// Runs the agent until SIGTERM or SIGINT. The signals are blocked in every
// thread and taken by sigtimedwait() here, so no handler runs inside a lock.
int RunAgentCommand(const AgentFlags& f, std::ostream& out, std::ostream& err) {
  agent::AgentOptions o;
  o.listen = f.listen;
  // A duration flag in [lo, hi], or 0 where `zero` allows it; else a
  // message naming the flag and its range, and the exit.
  auto duration = [&](std::string_view flag, const std::string& text, DurationNs lo, DurationNs hi,
                      bool zero, std::string_view range, DurationNs& into) {
    std::optional<DurationNs> v = agent::ParseDurationFlag(text);
    if (v && ((zero && *v == 0) || (*v >= lo && *v <= hi))) {
      into = *v;
      return true;
    }
    err << "laggard agent: " << flag << " must be " << range << ", got '" << text << "'\n";
    return false;
  };
  constexpr DurationNs kMs = 1'000'000, kS = 1'000 * kMs, kH = 3'600 * kS;
  if (!duration("--interval", f.interval, 100 * kMs, kH, false, "between 100ms and 1h",
                o.interval_ns) ||
      !duration("--rank-ttl", f.rank_ttl, 1, INT64_MAX, false, "a duration above 0",
                o.rank_ttl_ns) ||
      !duration("--cpu-probe", f.cpu_probe, 0, 100 * kMs, true, "between 0 and 100ms",
                o.cpu_probe_ns) ||
      !duration("--proc-scan", f.proc_scan, kS, kH, true, "0 or between 1s and 1h", o.proc_scan_ns))
    return kExitNoInput;
  if (f.udp != "off") o.intake.udp = f.udp;
  o.intake.unix_path = f.unix_path;
  o.intake.tail_files = f.tail;
  o.log_dir = f.log_dir;
  o.log_max_bytes = f.log_max_mb << 20;
  o.log_files = f.log_files;
  if (f.sysfs_root != "off") o.sysfs_root = f.sysfs_root;
  else o.sysfs_root.reset();
  o.job = f.job;
  o.http_threads = f.http_threads;
  o.version = std::string(kLaggardVersion);
  if (f.host) {
    o.host = *f.host;
  } else {
    o.host = LocalHostName("unknown");
  }

  agent::SystemClock clock;
  auto gpus = agent::OpenGpuBackend(f.fake_gpus, f.nvml_lib, clock);
  if (!gpus.ok()) {
    err << "laggard agent: " << gpus.status().message() << "\n";
    return kExitNoInput;
  }
  std::unique_ptr<agent::GpuBackend> backend = std::move(gpus->backend);
  const std::string note = gpus->note;
  if (!backend) err << "laggard agent: no GPU metrics: " << note << "\n";

  // A scraper that hangs up mid-response must not kill the agent.
  signal(SIGPIPE, SIG_IGN);
  // Block the stop signals before any thread starts, so they all inherit it.
  sigset_t stop_signals, old_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
  int rc = kExitOk;
  {
    agent::Agent a(o, std::move(backend), note, clock);
    if (Status st = a.Open(); !st.ok()) {
      err << "laggard agent: " << st.message() << "\n";
      rc = kExitNoInput;
    } else {
      a.Start();
      std::string listen_host = f.listen.substr(0, f.listen.rfind(':'));
      out << fmt::format("laggard agent: serving http://{}:{}/metrics", listen_host, a.http_port());
      if (o.intake.udp)
        out << fmt::format("; steps on udp {}:{}",
                           o.intake.udp->substr(0, o.intake.udp->rfind(':')), a.udp_port());
      if (o.intake.unix_path) out << "; steps on unix " << *o.intake.unix_path;
      if (o.log_dir) out << "; logging to " << *o.log_dir;
      out << "\n" << std::flush;
      while (true) {
        timespec wait{1, 0};
        int sig = sigtimedwait(&stop_signals, nullptr, &wait);
        if (sig == SIGTERM || sig == SIGINT) break;
      }
      a.Stop();
      out << "laggard agent: stopped, logs flushed\n" << std::flush;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return rc;
}

struct SimulateArgs {
  std::string out_dir;
  std::string scenario_file;
  std::vector<std::string> faults;
  int nodes = 8, gpus_per_node = 8, steps = 200;
  uint64_t seed = 1;
  double compute_ms = 0, jitter = 0, bucket_mib = 0, warmup_s = 0, clock_offset_ms = 0;
  int collectives = 0, nodes_per_switch = 0, pipeline_stages = 0;
  int64_t start_time_s = 0;
  std::string step_format = "article", step_timing = "end-to-end";
  bool no_traces = false, gzip_traces = false, no_hardware = false, no_network = false,
       no_nccl_tests = false, all_pair_tests = false, no_nccl_debug = false, step_logs_only = false,
       no_effects = false, quiet = false;
  int trace_steps = 5, trace_first_step = -1, threads = 0;
  std::string layout;  // given: a 3D-parallel job (pipeline_sim.h) instead of the cluster
  int microbatches = 8;
  std::vector<std::string> group_tests;  // --group-tests node-00..node-07
  std::string trace_ranks;               // "0-1023": only these ranks write a trace
};

// `laggard simulate --layout dp=D,pp=P,tp=T`: a Megatron job's op timeline
// (timeline.json.gz) and its what-if truth, instead of the cluster.
int SimulatePipelineJob(CLI::App* cmd, const SimulateArgs& a, std::ostream& out,
                        std::ostream& err) {
  auto given = [&](const char* name) { return cmd->count(name) > 0; };
  for (const char* cluster_only : {"--scenario",         "--nodes",           "--gpus-per-node",
                                   "--compute-ms",       "--collectives",     "--bucket-mib",
                                   "--warmup-s",         "--clock-offset-ms", "--start-time",
                                   "--nodes-per-switch", "--pipeline-stages", "--step-format",
                                   "--step-timing",      "--no-traces",       "--trace-steps",
                                   "--trace-first-step", "--gzip-traces",     "--no-hardware",
                                   "--no-network",       "--no-nccl-tests",   "--no-nccl-debug",
                                   "--all-pair-tests",   "--step-logs-only",  "--no-effects",
                                   "--trace-ranks",      "--group-tests"}) {
    if (given(cluster_only)) {
      err << "laggard simulate: " << cluster_only
          << " is a cluster option; --layout simulates a 3D-parallel job (options: --layout, "
             "--microbatches, --steps, --seed, --jitter, --fault)\n";
      return kExitNoInput;
    }
  }
  auto layout = sim::ParsePipelineLayout(a.layout);
  if (!layout.ok()) {
    err << "laggard simulate: " << layout.status().message() << "\n";
    return kExitNoInput;
  }
  sim::PipelineScenario sc;
  sc.layout = *layout;
  sc.microbatches = a.microbatches;
  sc.steps = given("--steps") ? a.steps : 32;
  sc.seed = a.seed;
  if (given("--jitter")) sc.costs.compute_cv = a.jitter;
  if (a.faults.size() > 1) {
    err << "laggard simulate: --layout takes one --fault (or none)\n";
    return kExitNoInput;
  }
  if (!a.faults.empty()) {
    auto f = sim::ParsePipelineFault(a.faults.front());
    if (!f.ok()) {
      err << "laggard simulate: " << f.status().message() << "\n";
      return kExitNoInput;
    }
    sc.fault = std::move(f.value());
  }
  auto summary = sim::WritePipelineRun(sc, a.out_dir);
  if (!summary.ok()) {
    err << "laggard simulate: " << summary.status().message() << "\n";
    return kExitNoInput;
  }
  if (!a.quiet) {
    const sim::PipelineResult& r = summary->result;
    const sim::PipelineFault& f = r.scenario.fault;
    out << fmt::format(
        "laggard simulate: dp {} x pp {} x tp {} ({} workers), 1F1B, {} microbatches, {} steps, "
        "seed {}\n"
        "  fault:     {} (class {})\n"
        "  mean step: {:.4f} s (ideal {:.4f} s): what-if slowdown {:.4f}\n"
        "  wrote {}/timeline.json.gz ({} events, {:.1f} MB) in {:.2f} s\n"
        "  truth:     {}/truth.json\n",
        sc.layout.dp, sc.layout.pp, sc.layout.tp, sc.layout.world(), sc.microbatches, sc.steps,
        sc.seed, f.kind == sim::PipelineFaultKind::kNone ? "none (healthy control)" : f.spec,
        sim::PipelineFaultClassName(f.kind), r.mean_actual_us / 1e6, r.mean_ideal_us / 1e6,
        r.slowdown, a.out_dir, r.events, static_cast<double>(summary->bytes) / 1e6, summary->wall_s,
        a.out_dir);
  }
  return kExitOk;
}

// Applies the options the user gave over the scenario file's values.
int Simulate(CLI::App* cmd, const SimulateArgs& a, std::ostream& out, std::ostream& err) {
  if (cmd->count("--layout") > 0) return SimulatePipelineJob(cmd, a, out, err);
  if (cmd->count("--microbatches") > 0) {
    err << "laggard simulate: --microbatches needs --layout (a 3D-parallel job)\n";
    return kExitNoInput;
  }
  sim::ClusterScenario sc;
  sim::RunOutputOptions oo;
  if (!a.scenario_file.empty()) {
    std::ifstream in(a.scenario_file, std::ios::binary);
    if (!in) {
      err << "laggard simulate: " << a.scenario_file << ": cannot read\n";
      return kExitNoInput;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (Status st = sim::ParseScenarioJson(text, &sc, &oo); !st.ok()) {
      err << "laggard simulate: " << a.scenario_file << ": " << st.message() << "\n";
      return kExitNoInput;
    }
  }
  auto given = [&](const char* name) { return cmd->count(name) > 0; };
  if (given("--nodes") || a.scenario_file.empty()) sc.nodes = a.nodes;
  if (given("--gpus-per-node") || a.scenario_file.empty()) sc.gpus_per_node = a.gpus_per_node;
  if (given("--steps") || a.scenario_file.empty()) sc.steps = a.steps;
  if (given("--seed") || a.scenario_file.empty()) sc.seed = a.seed;
  if (given("--compute-ms")) sc.compute_ms = a.compute_ms;
  if (given("--jitter")) sc.jitter = a.jitter;
  if (given("--collectives")) sc.collectives_per_step = a.collectives;
  if (given("--bucket-mib")) sc.bucket_bytes = static_cast<int64_t>(a.bucket_mib * (1 << 20));
  if (given("--warmup-s")) sc.warmup_s = a.warmup_s;
  if (given("--clock-offset-ms")) sc.max_clock_offset_ms = a.clock_offset_ms;
  if (given("--start-time")) sc.start_time_s = a.start_time_s;
  if (given("--nodes-per-switch")) sc.nodes_per_switch = a.nodes_per_switch;
  if (given("--pipeline-stages")) sc.pipeline_stages = a.pipeline_stages;
  for (const std::string& spec : a.faults) {
    auto f = sim::ParseFaultSpec(spec);
    if (!f.ok()) {
      err << "laggard simulate: " << f.status().message() << "\n";
      return kExitNoInput;
    }
    sc.faults.push_back(std::move(f.value()));
  }
  if (given("--step-format") || a.scenario_file.empty()) {
    if (a.step_format == "article") oo.step_format = sim::StepLogFormat::kArticle;
    else if (a.step_format == "csv") oo.step_format = sim::StepLogFormat::kCsv;
    else if (a.step_format == "jsonl") oo.step_format = sim::StepLogFormat::kJsonl;
    else oo.step_format.reset();
  }
  if (given("--step-timing") || a.scenario_file.empty()) {
    oo.step_timing = a.step_timing == "compute" ? sim::StepTiming::kCompute
                     : a.step_timing == "both"  ? sim::StepTiming::kBoth
                                                : sim::StepTiming::kEndToEnd;
  }
  if (a.no_traces || a.step_logs_only) oo.traces = false;
  if (given("--trace-steps")) oo.trace_steps = a.trace_steps;
  if (given("--trace-first-step")) oo.trace_first_step = a.trace_first_step;
  if (given("--trace-ranks")) {
    auto ranks = sim::ParseRankList(a.trace_ranks, sc.nodes * sc.gpus_per_node);
    if (!ranks.ok()) {
      err << "laggard simulate: --trace-ranks: " << ranks.status().message() << "\n";
      return kExitNoInput;
    }
    oo.trace_ranks = std::move(ranks.value());
  }
  if (a.gzip_traces) oo.gzip_traces = true;
  if (a.no_hardware || a.step_logs_only) oo.hardware = false;
  if (a.no_network || a.step_logs_only) oo.network = false;
  if (a.no_nccl_tests || a.step_logs_only) oo.nccl_tests = false;
  oo.all_pair_tests = a.all_pair_tests;
  for (const std::string& g : a.group_tests) {
    auto nodes = sim::ParseNodeSet(g);
    if (!nodes.ok()) {
      err << "laggard simulate: --group-tests " << nodes.status().message() << "\n";
      return kExitNoInput;
    }
    if (nodes->back() >= sc.nodes) {
      err << fmt::format(
          "laggard simulate: --group-tests '{}': node {} is past the last node ({})\n", g,
          nodes->back(), sc.nodes - 1);
      return kExitNoInput;
    }
    if (std::find(oo.group_tests.begin(), oo.group_tests.end(), *nodes) == oo.group_tests.end()) {
      oo.group_tests.push_back(*nodes);  // a set given twice is one file
    }
  }
  if (!oo.group_tests.empty() && !oo.nccl_tests) {
    err << "laggard simulate: --group-tests writes nccl-tests outputs; --no-nccl-tests and "
           "--step-logs-only write none\n";
    return kExitNoInput;
  }
  if (a.no_nccl_debug || a.step_logs_only) oo.nccl_debug = false;
  if (a.no_effects) oo.measure_effects = false;
  oo.threads = a.threads;

  auto summary = sim::WriteClusterRun(sc, oo, a.out_dir);
  if (!summary.ok()) {
    err << "laggard simulate: " << summary.status().message() << "\n";
    return kExitNoInput;
  }
  if (!a.quiet) {
    double increase = summary->healthy_mean_step_s > 0
                          ? summary->mean_step_s / summary->healthy_mean_step_s - 1
                          : 0;
    out << fmt::format(
        "laggard simulate: {} ranks ({} nodes x {} GPUs), {} steps, seed {}\n"
        "  faults:    {}\n"
        "  mean step: {:.4f} s (healthy {:.4f} s, {:+.1f}%)\n"
        "  wrote {} files, {:.1f} MB to {} in {:.2f} s (physics {:.2f} s)\n"
        "  truth:     {}/truth.json\n",
        sc.nodes * sc.gpus_per_node, sc.nodes, sc.gpus_per_node, sc.steps, sc.seed,
        summary->headline, summary->mean_step_s, summary->healthy_mean_step_s, 100 * increase,
        summary->files, static_cast<double>(summary->bytes) / 1e6, a.out_dir,
        summary->simulate_s + summary->write_s, summary->simulate_s, a.out_dir);
  }
  return kExitOk;
}

void AddSimulateFlags(CLI::App* cmd, SimulateArgs& a) {
  cmd->add_option("-o,--out", a.out_dir, "directory to write the run into")->required();
  cmd->add_option("--scenario", a.scenario_file,
                  "scenario file (JSON); options given here override it");
  cmd->add_option(
      "--fault", a.faults,
      "KIND[@TARGET][:SEVERITY][,onset=S][,end=S][,period=N][,duration=N][,cause=gc|checkpoint], "
      "e.g. thermal@node-01:5:0.2, nic_degraded@node-03:mlx5_2, "
      "shared_switch_congestion@node-04..node-07:0.5,period=40 (repeatable)");
  cmd->add_option("--nodes", a.nodes, "nodes")->capture_default_str();
  cmd->add_option("--gpus-per-node", a.gpus_per_node, "GPUs (ranks) per node")
      ->capture_default_str();
  cmd->add_option("--steps", a.steps, "training steps")->capture_default_str();
  cmd->add_option("--seed", a.seed, "random seed")->capture_default_str();
  cmd->add_option("--compute-ms", a.compute_ms, "GPU compute per step at full clock (default 750)");
  cmd->add_option("--jitter", a.jitter,
                  "relative standard deviation of compute per step (default 0.015)");
  cmd->add_option("--collectives", a.collectives,
                  "all-reduces (gradient buckets) per step (default 4)");
  cmd->add_option("--bucket-mib", a.bucket_mib, "bytes of one gradient bucket, MiB (default 4096)");
  cmd->add_option("--warmup-s", a.warmup_s, "extra time of the first step (default 2)");
  cmd->add_option("--clock-offset-ms", a.clock_offset_ms, "largest host clock offset (default 5)");
  cmd->add_option("--start-time", a.start_time_s, "job start, Unix seconds (default 1764000000)");
  cmd->add_option("--nodes-per-switch", a.nodes_per_switch, "nodes per leaf switch (default 4)");
  cmd->add_option("--pipeline-stages", a.pipeline_stages,
                  "pipeline stages for pipeline_stage_imbalance (default 4)");
  cmd->add_option("--step-format", a.step_format, "step logs: article, csv, jsonl or none")
      ->check(CLI::IsMember({"article", "csv", "jsonl", "none"}))
      ->capture_default_str();
  cmd->add_option("--step-timing", a.step_timing,
                  "end-to-end (equal on all ranks, as real loops print), compute (without "
                  "collective time) or both (end-to-end with a compute column; csv / jsonl)")
      ->check(CLI::IsMember({"end-to-end", "compute", "both"}))
      ->capture_default_str();
  cmd->add_flag("--no-traces", a.no_traces, "no profiler traces");
  cmd->add_option("--trace-steps", a.trace_steps, "profiled steps per rank")->capture_default_str();
  cmd->add_option("--trace-first-step", a.trace_first_step,
                  "first profiled step (default: the last ones but one)");
  cmd->add_option("--trace-ranks", a.trace_ranks,
                  "only these ranks write a trace, e.g. 0-1023 or 0-7,64-71 (default: all)");
  cmd->add_flag("--gzip-traces", a.gzip_traces, "write traces as .json.gz");
  cmd->add_flag("--no-hardware", a.no_hardware, "no nvidia-smi files");
  cmd->add_flag("--no-network", a.no_network, "no ibstat, ethtool or switch map");
  cmd->add_flag("--no-nccl-tests", a.no_nccl_tests, "no nccl-tests output");
  cmd->add_option("--group-tests", a.group_tests,
                  "further nccl-tests runs, one per set of nodes: node-00..node-07 or "
                  "node-01+node-05 (repeatable)");
  cmd->add_flag("--all-pair-tests", a.all_pair_tests,
                "two-node nccl-tests for every node pair (default: every pair up to 8 nodes, "
                "neighbours beyond)");
  cmd->add_flag("--no-nccl-debug", a.no_nccl_debug, "no NCCL_DEBUG log");
  cmd->add_flag("--step-logs-only", a.step_logs_only,
                "only step logs and truth.json (for scale runs)");
  cmd->add_flag("--no-effects", a.no_effects,
                "skip the healthy control run (truth.json has no measured effects)");
  cmd->add_option("--threads", a.threads, "writer threads (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--layout", a.layout,
                  "dp=D,pp=P,tp=T: simulate a 3D-parallel Megatron job (1F1B) and write its op "
                  "timeline (timeline.json.gz) instead of a cluster");
  cmd->add_option("--microbatches", a.microbatches, "microbatches per step with --layout (>= pp)")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", a.quiet, "print nothing on success");
}

constexpr std::string_view kExitCodesHelp =
    "Exit codes:\n"
    "  0  the command ran (a diagnosis with or without findings)\n"
    "  1  --strict, and bad records were found\n"
    "  2  no usable input, or bad usage\n"
    "  3  an output (--json, --html, --trace) was not written; the verdict was printed\n"
    "  4  --fail-on: the verdict is one it names\n"
    "  (when several apply: 2, then 3, then 1, then 4)\n";

std::string MainFooter() {
  return fmt::format(
      "\nExamples:\n"
      "  laggard demo                                  simulate a faulty cluster, diagnose it\n"
      "  laggard diagnose run/                         step logs, traces, nvidia-smi, ... in run/\n"
      "  laggard diagnose run/ --html report.html --json report.json\n"
      "  laggard diagnose run/ --quiet --fail-on straggler    for CI, cron, a Slurm epilog\n"
      "  laggard inspect run/                          what each file gave, no diagnosis\n"
      "  laggard watch --prometheus http://127.0.0.1:9090 --once\n"
      "  laggard simulate --fault thermal@node-01:5 -o run/\n"
      "\n"
      "Inputs are recognised by content: `laggard formats` lists the formats.\n"
      "`laggard COMMAND --help` shows a command's options.\n\n{}",
      kExitCodesHelp);
}

std::string DiagnoseFooter() {
  return fmt::format(
      "\nExamples:\n"
      "  laggard diagnose run/\n"
      "  laggard diagnose run/ --gpus-per-node 8\n"
      "      run/logs/rank-*.log, run/node-07/nvidia-smi.csv (suspect), run/node-00/... (healthy)\n"
      "  laggard diagnose run/ --json - | jq .verdict\n"
      "  laggard diagnose run/ --quiet --fail-on straggler,inconclusive\n"
      "\n"
      "`laggard formats` lists the input formats; `laggard inspect` shows what each file gave.\n"
      "Colour: --color auto colours a terminal unless NO_COLOR is set or TERM=dumb.\n\n{}",
      kExitCodesHelp);
}

// The fault kinds with their class and default severity, and the syntax of
// a target (docs/simulator.md has the table of what each kind changes).
std::string SimulateFooter() {
  std::string s = "\nFault kinds (KIND: cause class, default severity):\n";
  for (sim::FaultKind k : sim::AllFaultKinds()) {
    s += fmt::format("  {:<26} {}, {:g}\n", sim::FaultKindName(k), sim::CauseClassWord(k),
                     sim::DefaultSeverity(k));
  }
  s += "\nTARGET: all | rank13 (r13) | a host node-01 (or 1) | a GPU node-01:5 (1:5) | a NIC\n"
       "  node-01:mlx5_2 | nodes node-04..node-07, 4..7, node-01+node-05 | a stage stage2.\n"
       "  Omitted: drawn from the seed and written to truth.json.\n"
       "SEVERITY: a fraction with a point (0.2) or a percentage (20%); a bare integer is a\n"
       "  GPU index. onset/end: first and last step present; period/duration: present\n"
       "  `duration` steps of every `period`. What each kind changes: docs/simulator.md.\n"
       "\nExample: laggard simulate --nodes 4 --fault thermal@node-01:5:0.2,onset=60 "
       "--fault nic_degraded@node-03:mlx5_2 -o run/\n";
  s += "\n3D-parallel jobs (--layout dp=D,pp=P,tp=T; writes timeline.json.gz and truth.json):\n"
       "  --fault KIND[@KEY=N[,KEY=N...]][:FACTOR][,onset=S][,end=S], one at most:\n";
  for (auto k : {sim::PipelineFaultKind::kSlowWorker, sim::PipelineFaultKind::kHeavyStage,
                 sim::PipelineFaultKind::kSeqlen, sim::PipelineFaultKind::kSlowLink}) {
    s += fmt::format("  {:<26} {}, {:g}\n", sim::PipelineFaultKindName(k),
                     sim::PipelineFaultClassName(k), sim::DefaultPipelineFactor(k));
  }
  s += "  slow_worker@dp=1,pp=2,tp=0:1.3  heavy_stage@pp=3:1.25  seqlen:0.15 (the cv)\n"
       "  slow_link@dp=0,pp=1:3 (the link of replica 0 between stages 1 and 2)\n"
       "  slow_link@pp=2:3 (stage 2's data-parallel group). Omitted keys: drawn from the seed.\n"
       "Example: laggard simulate --layout dp=2,pp=4,tp=1 --microbatches 8 --steps 32 "
       "--fault heavy_stage@pp=3:1.25 -o job/\n";
  return s;
}

}  // namespace

Terminal TerminalOfProcess() {
  Terminal t;
  t.stdout_is_tty = isatty(STDOUT_FILENO) == 1;
  t.stderr_is_tty = isatty(STDERR_FILENO) == 1;
  const char* no_color = std::getenv("NO_COLOR");
  t.no_color = no_color != nullptr && no_color[0] != '\0';
  const char* term = std::getenv("TERM");
  t.dumb = term != nullptr && std::string_view(term) == "dumb";
  return t;
}

int RunLaggard(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
               const Terminal& terminal) {
  // Named here, so usage says "laggard", not the path the binary was run by.
  CLI::App app{"laggard: find the rank, GPU or node that holds back a training job, and say why",
               "laggard"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string(kLaggardVersion));
  app.footer(MainFooter());

  DiagnoseOptions diag;
  CLI::App* diagnose = app.add_subcommand("diagnose", "diagnose a run from its files");
  AddDiagnoseFlags(diagnose, diag);
  diagnose->footer(DiagnoseFooter());

  InspectOptions inspect_opts;
  CLI::App* inspect = app.add_subcommand(
      "inspect", "show what each input file gave (format, records, data quality), no diagnosis");
  AddInspectFlags(inspect, inspect_opts);

  CLI::App* formats = app.add_subcommand("formats", "list the input formats laggard recognises");

  std::string demo_dir = "laggard-demo";
  CLI::App* demo = app.add_subcommand("demo", "simulate a cluster with a fault and diagnose it");
  demo->add_option("-o,--out", demo_dir, "where to write the simulated run and the reports")
      ->capture_default_str();

  WatchOptions watch_opts;
  CLI::App* watch = app.add_subcommand(
      "watch", "diagnose live from Prometheus (laggard agents, dcgm-exporter), window by window");
  AddWatchFlags(watch, watch_opts);
  AddFailOnFlag(watch, watch_opts.fail_on);
  AgentFlags agent_flags;
  CLI::App* agent_cmd = app.add_subcommand(
      "agent",
      "per-node agent: GPU (NVML), link (sysfs) and step metrics on /metrics, rolling logs");
  AddAgentFlags(agent_cmd, agent_flags);
  SimulateArgs sim_args;
  CLI::App* simulate = app.add_subcommand(
      "simulate",
      "write a simulated run directory (real tool formats, injected faults, truth.json)");
  AddSimulateFlags(simulate, sim_args);
  simulate->footer(SimulateFooter());
  HistoryOptions history_opts;
  HistoryCommands history_cmds = AddHistoryCommands(app, history_opts);
  ConfirmOptions confirm_opts;
  CLI::App* confirm_cmd = app.add_subcommand(
      "confirm", "plan, run and read back the tests that confirm or refute a report's culprits");
  AddConfirmFlags(confirm_cmd, confirm_opts);
  GemmFlags gemm_flags;
  CLI::App* gemm_cmd = app.add_subcommand(
      "gemm", "time a GEMM on each CPU core (OpenBLAS) or GPU (--gpus, cuBLAS): GFLOP/s each");
  AddGemmFlags(gemm_cmd, gemm_flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // A first word that is no command: say so, rather than "not expected".
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      err << fmt::format(
          "laggard: unknown command '{}'; the commands are diagnose, inspect, "
          "formats, demo, watch, agent, simulate, history, confirm, gemm (laggard --help)\n",
          argv[1]);
      return kExitNoInput;
    }
    return app.exit(e, out, err) == 0 ? kExitOk : kExitNoInput;
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e, out, err);
    return rc == 0 ? kExitOk : kExitNoInput;
  }
  if (*diagnose) return Diagnose(diag, out, err, terminal);
  if (*inspect) return Inspect(inspect_opts, out, err);
  if (*formats) return PrintFormats(out);
  if (*demo) return Demo(demo_dir, out, err, terminal);
  if (*watch) return Watch(watch_opts, out, err);
  if (*agent_cmd) return RunAgentCommand(agent_flags, out, err);
  if (*simulate) return Simulate(simulate, sim_args, out, err);
  if (*confirm_cmd) return Confirm(confirm_opts, out, err);
  if (*gemm_cmd) return Gemm(gemm_flags, out, err);
  if (*history_cmds.history) {
    return History(history_opts, history_cmds.drain->parsed(), out, err);
  }
  // A bare `laggard`: what it can do, and a non-zero exit (nothing ran).
  err << app.help();
  return kExitNoInput;
}

}  // namespace laggard
