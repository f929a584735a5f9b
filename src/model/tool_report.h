// What another tool's own straggler check printed about the job's ranks,
// read from the job's logs:
//   - Megatron-LM's StragglerDetector reports the smallest and largest value
//     of each metric over all ranks, with the rank that had it, once per
//     logging interval (megatron/core/utils.py, StragglerDetector.report());
//   - NVIDIA Resiliency Extension's straggler detection (NVRx, through the
//     NeMo / Megatron-Bridge callbacks) prints per-rank GPU performance
//     scores, 0..1, 1 the best, and warnings naming the ranks under its
//     threshold.
// analysis/tool_reports/ sums the reports up; the verdict cites them beside
// laggard's own evidence.

#ifndef LAGGARD_MODEL_TOOL_REPORT_H_
#define LAGGARD_MODEL_TOOL_REPORT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/source.h"

namespace laggard {

// The metrics of a StragglerDetector report, in the order it prints them.
// Serialized by position: append only.
enum class ToolMetric : uint8_t {
  kRoundTripMs,  // MnRtt/MxRtt: time in the timed ops per iteration, ms
  kPowerW,       // MnPwr/MxPwr: GPU power, W (printed in mW with a "W")
  kTempC,        // MnTmp/MxTmp: GPU temperature, C
  kUtilPct,      // MnUtl/MxUtl: GPU utilisation, %
  kClockMhz,     // MnClk/MxClk: SM clock, MHz
  kDataMs,       // MnDRtt/MxDRtt: the slowest get_batch of the interval, ms
  kTflops,       // MnEtpt/MxEtpt: estimated throughput, TFLOP/s
  kCount,
};
inline constexpr size_t kToolMetricCount = static_cast<size_t>(ToolMetric::kCount);

// A value and the rank it was measured on.
struct RankValue {
  double value = 0;
  int32_t rank = 0;
  friend bool operator==(const RankValue&, const RankValue&) = default;
};

// The smallest and largest value of one metric over the ranks; unset when
// the report did not give it.
struct ToolExtremes {
  std::optional<RankValue> min;
  std::optional<RankValue> max;
};

// One report: one logging interval.
struct ToolReport {
  // The wall-clock time the report printed, as printed (local time of the
  // job's rank 0, zone unknown); "" when none.
  std::string when;
  std::array<ToolExtremes, kToolMetricCount> metrics;
  // `--straggler-minmax-count N`: the N lowest and the N highest estimated
  // throughputs with their ranks, each list ascending.
  std::vector<RankValue> lowest_tflops;
  std::vector<RankValue> highest_tflops;
  SourceRef src;

  const ToolExtremes& metric(ToolMetric m) const { return metrics[static_cast<size_t>(m)]; }
  ToolExtremes& metric(ToolMetric m) { return metrics[static_cast<size_t>(m)]; }
};

// One rank's NVRx score: its kernels' speed against a reference, 0..1
// (0.5: twice as slow); NaN when NVRx printed "nan".
struct RankScore {
  int32_t rank = 0;
  double score = 0;
  std::string node;  // Node=: the rank's host ("" when "<unk>" or not printed)
};

// One NVRx report (one report interval, printed on rank 0).
struct NvrxReport {
  // "GPU relative performance": against the fastest rank, kernel by kernel;
  // "GPU individual performance": against the rank's own best interval. As
  // printed, worst first; with many ranks only the worst and best few.
  std::vector<RankScore> relative;
  std::vector<RankScore> individual;
  // Ranks scored ("Worst performing 5/512 ranks": 512), or the ranks listed
  // when all are; 0 when the section is absent.
  int32_t relative_ranks = 0;
  int32_t individual_ranks = 0;
  // "STRAGGLER DETECTION WARNING ... Affected ranks": NVRx's own verdict.
  std::vector<int32_t> flagged_relative;
  std::vector<int32_t> flagged_individual;
  SourceRef src;
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_TOOL_REPORT_H_
