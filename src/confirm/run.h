// Running a plan's tests and judging each one's output: the GEMM of a CPU
// job's suspect core against its peer's, or of a suspect GPU against its
// peers' (the culprit's compute), the bus
// bandwidth of a communication test (read back by read_back.h).
//
// RunTest() blocks the calling thread until the test ends or is killed.

#ifndef LAGGARD_CONFIRM_RUN_H_
#define LAGGARD_CONFIRM_RUN_H_

#include <optional>
#include <string>
#include <vector>

#include "confirm/cpu_gemm.h"
#include "confirm/launch.h"
#include "confirm/plan.h"

namespace laggard::confirm {

// A suspect core's GEMM against its peers': "confirmed" below
// kConfirmedBelow of the peers' median, "refuted" at kRefutedFrom or more,
// else "inconclusive". Two cores of one host differ by a few percent at
// rest; a core shared with a busy neighbour runs at half or less.
inline constexpr double kConfirmedBelow = 0.85;
inline constexpr double kRefutedFrom = 0.95;

// A bus bandwidth at one message size of an nccl-tests table.
struct SizeBandwidth {
  int64_t size_bytes = 0;
  double gbps = 0;
};

// One InfiniBand port as `ibstat` printed it.
struct PortReading {
  std::string name;   // "mlx5_3 port 1"
  std::string state;  // "Active", "Down", ... ("" when not printed)
  std::optional<double> rate_gbps;
  std::string kind;  // link layer and CA type: "InfiniBand MT4129"
};

// The outcome of one test.
struct TestRun {
  bool ran = false;
  std::string state;              // "ran", "exited N", "killed", "could not run", "not run"
  std::vector<std::string> argv;  // what ran (or would have)
  std::string file;               // its output, saved
  std::string output;
  std::vector<GemmResult> gemm;
  std::vector<SizeBandwidth> busbw;  // a communication test's, per size, ascending (read_back.h)
  std::vector<int> procs;            // processes per host, in the test's host order, when read
  std::string note;                  // what the read-back says of it ("ran with 4+4 processes ...")
  std::vector<PortReading> ports;    // an ibstat test's (read_back.h)
  std::string verdict;               // "confirmed" | "refuted" | "inconclusive" | ""
  std::string figures;

  // The bus bandwidth at its largest size, when it has one.
  std::optional<double> LargestBusbw() const {
    return busbw.empty() ? std::nullopt : std::optional<double>(busbw.back().gbps);
  }
};

// Runs test `index` of a plan with launcher `l` from this machine (`here`),
// within its time limit, no shell; its command line and output saved to
// out_dir/test-N.txt. A test the launcher does not reach is "not run", with
// why as its output.
TestRun RunTest(const PlannedTest& t, size_t index, Launcher l, const std::string& here,
                const std::string& out_dir);

// A GEMM test of --cores SUSPECT,PEER: the suspect core's rate against the
// peer's; without that pair, the slowest core against the median
// (inconclusive: which core the suspect ran on is not known). A GPU test
// (t.gpu) gets its GPU's figure and no verdict: the read-back judges it
// with its controls.
void JudgeGemm(const PlannedTest& t, TestRun& run);

struct GemmJudgement {
  std::string verdict;  // as TestRun::verdict
  std::string figures;
  bool host_wide = false;  // the host's other GPUs are as slow against the control
};

// Suspect GPU `gpu`'s GEMM (in `host_lines`, timed with its host's other
// GPUs) against its peers of the same model: the host's GPUs but
// `other_suspects` (GPUs any culprit names), and `control_lines` (the
// healthy GPUs of another host, timed all at once);
// the thresholds above. The figures add what NVML saw while it ran
// (throttle reasons, SM clock). When the host's peers are themselves slow
// against two control GPUs or more, the whole host is (host_wide), and the
// suspect is measured against the control alone.
GemmJudgement JudgeGpuGemm(const std::vector<GemmResult>& host_lines, int32_t gpu,
                           const std::vector<int32_t>& other_suspects,
                           const std::vector<GemmResult>& control_lines);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_RUN_H_
