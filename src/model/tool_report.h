// What another tool's own straggler check printed about the job's ranks,
// read from the job's logs: Megatron-LM's StragglerDetector reports the
// smallest and largest value of each metric over all ranks, with the rank
// that had it, once per logging interval (megatron/core/utils.py,
// StragglerDetector.report()). analysis/tool_reports/ sums the reports up;
// the verdict cites them beside laggard's own evidence.

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

}  // namespace laggard

#endif  // LAGGARD_MODEL_TOOL_REPORT_H_
