#include "confirm/run.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/process.h"
#include "confirm/read_back.h"

namespace laggard::confirm {

void JudgeGemm(const PlannedTest& t, TestRun& run) {
  if (run.gemm.empty()) return;
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
  run.verdict = ratio < kConfirmedBelow                                 ? "confirmed"
                : ratio >= kRefutedFrom && ratio <= 1 / kConfirmedBelow ? "refuted"
                                                                        : "inconclusive";
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
