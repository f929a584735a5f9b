#include "confirm/run.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/process.h"
#include "base/stats/robust_stats.h"
#include "confirm/read_back.h"

namespace laggard::confirm {

namespace {

std::string Verdict(double ratio) {
  return ratio < kConfirmedBelow                                 ? "confirmed"
         : ratio >= kRefutedFrom && ratio <= 1 / kConfirmedBelow ? "refuted"
                                                                 : "inconclusive";
}

}  // namespace

GemmJudgement JudgeGpuGemm(const std::vector<GemmResult>& host_lines, int32_t gpu,
                           const std::vector<int32_t>& other_suspects,
                           const std::vector<GemmResult>& control_lines) {
  std::string device = fmt::format("gpu:{}", gpu);
  auto mine = std::find_if(host_lines.begin(), host_lines.end(),
                           [&](const GemmResult& g) { return g.device == device; });
  if (mine == host_lines.end()) {
    return {"inconclusive", fmt::format("GPU {} was not timed (the test's output says why)", gpu)};
  }
  auto same_model = [&](const GemmResult& g) {
    return !mine->model || !g.model || *g.model == *mine->model;
  };
  std::vector<double> host_peers, control;
  std::vector<double> peer_mhz;
  for (const GemmResult& g : host_lines) {
    if (g.device == device || !same_model(g)) continue;
    bool suspect = std::any_of(other_suspects.begin(), other_suspects.end(),
                               [&](int32_t o) { return g.device == fmt::format("gpu:{}", o); });
    if (suspect) continue;
    host_peers.push_back(g.gflops);
    if (g.sm_mhz) peer_mhz.push_back(*g.sm_mhz);
  }
  for (const GemmResult& g : control_lines) {
    if (!same_model(g)) continue;
    control.push_back(g.gflops);
    if (g.sm_mhz) peer_mhz.push_back(*g.sm_mhz);
  }
  std::vector<double> peers = host_peers;
  peers.insert(peers.end(), control.begin(), control.end());
  if (peers.empty()) {
    return {"inconclusive",
            fmt::format("GPU {} GEMM {:.1f} TFLOP/s {}, but no peer of the same model was timed",
                        gpu, mine->gflops / 1e3, mine->dtype)};
  }
  GemmJudgement j;
  // The host's other GPUs slow against the control: the host is, and the
  // suspect is measured against the control alone.
  // Two control GPUs at least: one card alone says nothing of its host.
  const double control_median = laggard::Median(control).value_or(0);
  double host_ratio = !host_peers.empty() && control.size() >= 2
                          ? laggard::Median(host_peers).value_or(0) / control_median
                          : 1.0;
  j.host_wide = host_ratio < kConfirmedBelow;
  double peer = j.host_wide ? control_median : laggard::Median(peers).value_or(0);
  size_t count = j.host_wide ? control.size() : peers.size();
  double ratio = peer > 0 ? mine->gflops / peer : 0;
  j.verdict = Verdict(ratio);
  j.figures = fmt::format("GPU {} GEMM {:.2f}x {} ({:.1f} vs {:.1f} TFLOP/s {}, {} peer{})", gpu,
                          ratio, j.host_wide ? "the control's" : "its peers'", mine->gflops / 1e3,
                          peer / 1e3, mine->dtype, count, count == 1 ? "" : "s");
  if (!mine->throttle.empty()) j.figures += "; throttled while timed: " + mine->throttle;
  if (mine->sm_mhz && !peer_mhz.empty()) {
    j.figures += fmt::format("; SM clock {:.0f} MHz (peers {:.0f})", *mine->sm_mhz,
                             laggard::Median(peer_mhz).value_or(0));
  }
  if (ratio > 1 / kConfirmedBelow) {
    j.figures += ": its peers are the slow ones, so they cannot clear it";
  }
  if (j.host_wide) {
    j.figures += fmt::format(
        "; the host's other GPUs run at {:.2f}x the control too: the host as a whole (power, "
        "cooling) is slow",
        host_ratio);
  }
  return j;
}

void JudgeGemm(const PlannedTest& t, TestRun& run) {
  if (run.gemm.empty()) return;
  if (t.gpu) {
    // Its own figure only: the read-back judges it with its controls and
    // without the GPUs other culprits name (JudgeGpuGemms), once.
    for (const GemmResult& g : run.gemm) {
      if (g.device == fmt::format("gpu:{}", *t.gpu)) {
        run.figures = fmt::format("{}GPU {} GEMM {:.1f} TFLOP/s {}", t.control ? "control " : "",
                                  *t.gpu, g.gflops / 1e3, g.dtype);
      }
    }
    return;
  }
  auto cores = std::find(t.argv.begin(), t.argv.end(), "--cores");
  if (cores == t.argv.end() || cores + 1 == t.argv.end() || run.gemm.size() < 2) {
    auto slowest = std::min_element(
        run.gemm.begin(), run.gemm.end(),
        [](const GemmResult& a, const GemmResult& b) { return a.gflops < b.gflops; });
    std::vector<double> rates;
    for (const GemmResult& g : run.gemm) rates.push_back(g.gflops);
    std::sort(rates.begin(), rates.end());
    double median = rates[rates.size() / 2];
    run.verdict = "inconclusive";
    run.figures = fmt::format(
        "slowest core {} at {:.2f}x the cores' median ({:.1f} of {:.1f} GFLOP/s); which core the "
        "suspect ran on is not known",
        slowest->device, median > 0 ? slowest->gflops / median : 0, slowest->gflops, median);
    return;
  }
  std::string suspect = "cpu:" + cores[1].substr(0, cores[1].find(','));
  const GemmResult* mine = nullptr;
  std::vector<double> peers;
  for (const GemmResult& g : run.gemm) {
    if (g.device == suspect) {
      mine = &g;
    } else {
      peers.push_back(g.gflops);
    }
  }
  if (mine == nullptr || peers.empty()) return;
  std::sort(peers.begin(), peers.end());
  double peer = peers[peers.size() / 2];
  double ratio = peer > 0 ? mine->gflops / peer : 0;
  run.verdict = Verdict(ratio);
  run.figures = fmt::format("suspect core {} GEMM {:.2f}x its peer's ({:.1f} vs {:.1f} GFLOP/s)",
                            mine->device, ratio, mine->gflops, peer);
  if (ratio > 1 / kConfirmedBelow) {
    run.figures += ": the peer's core is the slow one, so it cannot clear the suspect";
  }
}

TestRun RunTest(const PlannedTest& t, size_t index, Launcher l, const std::string& here,
                const std::string& out_dir) {
  TestRun run;
  run.argv = LaunchArgv(t, l);
  if (!Reaches(t, l, here)) {
    run.state = "not run";
    for (const std::string& h : t.hosts) {
      if (h != here && h != "localhost" && h != "127.0.0.1") {
        run.output = fmt::format(
            "runs on {}, not on this machine ({}): use a launcher that reaches it (mpirun, srun, "
            "ssh)",
            h, here);
        break;
      }
    }
    return run;
  }
  CommandResult r = RunCommand(run.argv, t.time_limit_s, 1 << 20);
  run.ran = true;
  run.output = r.output;
  // Whether the command ran to its end, not what it found.
  if (!r.exit_code) {
    run.state = r.output.find("killed after") != std::string::npos ? "killed" : "could not run";
  } else {
    run.state = *r.exit_code == 0 ? "ran" : fmt::format("exited {}", *r.exit_code);
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  std::string file = fmt::format("{}/test-{}.txt", out_dir, index + 1);
  std::ofstream saved(file);
  saved << ShellText(run.argv) << "\n" << r.output;
  saved.close();
  if (saved) run.file = file;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (auto g = ParseGemmLine(line)) run.gemm.push_back(*g);
  }
  if (t.kind == TestKind::kCompute) JudgeGemm(t, run);
  if (!t.argv.empty() && t.argv[0] == "ibstat" && !run.file.empty()) {
    std::string why;
    run.ports = IbstatPortsOf(run.file, why);
    if (run.ports.empty()) run.figures = why;
  }
  if (t.kind == TestKind::kCommunication && !run.file.empty()) {
    std::string why;
    run.busbw = BusBandwidthOf(run.file, why);
    if (run.busbw.empty()) run.figures = why;
  }
  return run;
}

}  // namespace laggard::confirm
